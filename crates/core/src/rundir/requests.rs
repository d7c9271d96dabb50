//! requests.csv: k6's raw samples (CSV, nanosecond timestamps, gzipped or not) turned,
//! streaming, into one row per request, plus the load summary (docs/results.md).
//! feedbench-load writes its rows itself (`rundir::native`), each with `scheduled_ns`.
//!
//! k6 stamps every sample of a request with the moment it ended. The request's start is
//! that end minus `http_req_blocked` (getting a connection: pool wait, connect, TLS)
//! minus `http_req_duration` (sending, waiting, receiving): the two are consecutive
//! spans of k6's request trace, from asking for a connection to the last byte.

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};

use serde::{Deserialize, Serialize};

/// requests.csv's columns, in order.
pub const COLUMNS: [&str; 7] = [
    "start_ns",
    "end_ns",
    "route",
    "method",
    "status",
    "duration_ms",
    "error",
];

/// The column a native load generator adds after `COLUMNS`: the instant the open model
/// scheduled the request (unix ns), from which its lag and a latency free of coordinated
/// omission follow.
pub const SCHEDULED_COLUMN: &str = "scheduled_ns";

/// The gauge the load script sets once, to the k6 scenario's start (unix ms).
pub const SCENARIO_START_METRIC: &str = "feedbench_scenario_start_ms";

/// One request: a row of requests.csv.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// Unix ns at which the request started (asked for a connection).
    pub start_ns: u64,
    /// Unix ns at which k6 had the whole response (or gave up).
    pub end_ns: u64,
    pub route: String,
    pub method: String,
    /// HTTP status; 0 when no response came.
    pub status: u16,
    /// k6's http_req_duration: from the request's first byte sent to the response's last
    /// byte received (connection set-up excluded).
    pub duration_ms: f64,
    /// k6's error code and message (`1500`, `1212 dial: connection refused`); empty when k6
    /// reported none. feedbench-load writes the same codes.
    pub error: String,
    /// Native runs only: unix ns at which the open model scheduled the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled_ns: Option<u64>,
}

impl Request {
    /// This row as `rule` judges it against the objective.
    pub fn judged(
        &self,
        rule: crate::analysis::judging::Rule,
    ) -> crate::analysis::saturation::Request {
        rule.judge(
            i128::from(self.start_ns),
            i128::from(self.end_ns),
            self.duration_ms,
            self.scheduled_ns.map(i128::from),
            self.status,
        )
    }
}

/// What the load generator did, from the same output.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LoadSummary {
    /// Requests written to requests.csv.
    pub requests: u64,
    /// Of those, requests with an error (a non-empty `error`).
    pub errors: u64,
    /// Iterations the schedule started but k6 could not run (no free VU): k6's
    /// `dropped_iterations`.
    pub dropped_iterations: u64,
    /// Dropped iterations per second since the scenario's start (index = whole seconds).
    pub dropped_per_second: Vec<u64>,
    /// Highest `vus` (VUs busy) and `vus_max` (VUs allocated) k6 reported.
    pub max_vus: u64,
    pub max_vus_max: u64,
    /// The k6 scenario's start (unix ns, millisecond precision): t = 0 of the schedule.
    pub scenario_start_ns: Option<u64>,
    pub first_start_ns: Option<u64>,
    pub last_end_ns: Option<u64>,
    /// Requests whose samples were incomplete (not written); 0 unless k6 was cut off.
    pub incomplete: u64,
    /// Why the input ended early (a truncated file, say); rows before that are kept.
    pub truncated: Option<String>,
    /// `native` when feedbench-load ran the load; absent for k6 (and every older record).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generator: Option<String>,
    /// Native only: of `dropped_per_second`, the starts dropped because they were later than
    /// the plan's `max-lag` (the rest found the connection cap reached).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub late_per_second: Vec<u64>,
    /// Native only: each second's largest lag of a start behind its scheduled instant (ms).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub max_lag_ms_per_second: Vec<f64>,
    /// Native only: how the generator said it ended (`completed` or `interrupted`); absent
    /// when its output has no end record (it was killed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum RequestsError {
    #[error("cannot read k6's output: {0}")]
    Read(#[source] csv::Error),
    #[error("a row of requests.csv: {0}")]
    Row(#[source] csv::Error),
    #[error("cannot write requests.csv: {0}")]
    Write(#[source] csv::Error),
    #[error("k6's output has no `{0}` column (is it k6's CSV output?)")]
    MissingColumn(&'static str),
    #[error("line {line}: timestamp {value} is not in unix nanoseconds (is K6_CSV_TIME_FORMAT=unix_nano set?)")]
    NotNanoseconds { line: u64, value: String },
    #[error("line {line} of feedbench-load's output: {message}")]
    Stream { line: u64, message: String },
    #[error("line {line}: `{value}` in column {column} is not a number")]
    BadNumber {
        line: u64,
        column: &'static str,
        value: String,
    },
}

/// Column positions in k6's header (which depends on the script's `systemTags`).
struct Columns {
    metric: usize,
    time: usize,
    value: usize,
    error: Option<usize>,
    error_code: Option<usize>,
    method: Option<usize>,
    name: Option<usize>,
    status: Option<usize>,
    extra_tags: Option<usize>,
}

impl Columns {
    fn of(header: &csv::StringRecord) -> Result<Columns, RequestsError> {
        let find = |n: &str| header.iter().position(|h| h == n);
        let need = |n: &'static str| find(n).ok_or(RequestsError::MissingColumn(n));
        Ok(Columns {
            metric: need("metric_name")?,
            time: need("timestamp")?,
            value: need("metric_value")?,
            error: find("error"),
            error_code: find("error_code"),
            method: find("method"),
            name: find("name"),
            status: find("status"),
            extra_tags: find("extra_tags"),
        })
    }
}

/// A request whose samples are still being read.
struct Partial {
    request: Request,
    duration_ms: Option<f64>,
    blocked_ms: Option<f64>,
}

fn field(rec: &csv::StringRecord, i: Option<usize>) -> &str {
    i.and_then(|i| rec.get(i)).unwrap_or("")
}

fn line(rec: &csv::StringRecord) -> u64 {
    rec.position().map_or(0, |p| p.line())
}

fn number(rec: &csv::StringRecord, i: usize, column: &'static str) -> Result<f64, RequestsError> {
    let text = rec.get(i).unwrap_or("");
    text.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| RequestsError::BadNumber {
            line: line(rec),
            column,
            value: text.into(),
        })
}

/// Unix nanoseconds; anything below 1e15 (1970-01-12 in ns, year 33658 in s) is a
/// timestamp in another unit.
fn timestamp(rec: &csv::StringRecord, i: usize) -> Result<u64, RequestsError> {
    let text = rec.get(i).unwrap_or("");
    match text.parse::<u64>() {
        Ok(ns) if ns >= 1_000_000_000_000_000 => Ok(ns),
        _ => Err(RequestsError::NotNanoseconds {
            line: line(rec),
            value: text.into(),
        }),
    }
}

/// The route: the script's `route` tag, else k6's `name` tag.
fn route(rec: &csv::StringRecord, c: &Columns) -> String {
    let extra = field(rec, c.extra_tags);
    extra
        .split('&')
        .find_map(|kv| kv.strip_prefix("route="))
        .unwrap_or_else(|| field(rec, c.name))
        .to_string()
}

fn error(rec: &csv::StringRecord, c: &Columns) -> String {
    let (code, message) = (field(rec, c.error_code), field(rec, c.error));
    match (code.is_empty(), message.is_empty()) {
        (false, false) => format!("{code} {message}"),
        (false, true) => code.to_string(),
        _ => message.to_string(),
    }
}

/// Reads k6's output (gzip is detected) and writes requests.csv, one request per row in
/// k6's order (roughly by end, not by start). Holds only the requests being read, and
/// the dropped iterations' timestamps.
pub fn convert<R: Read, W: Write>(
    k6_output: R,
    requests_csv: W,
) -> Result<LoadSummary, RequestsError> {
    convert_with(k6_output, requests_csv, &mut |_| false)
}

/// What `convert_with` hands on as it reads.
#[derive(Debug, Clone, Copy)]
pub enum Seen<'a> {
    /// The k6 scenario's start (unix ns): t = 0 of the schedule.
    ScenarioStart(u64),
    /// A request, just written to requests.csv.
    Request(&'a Request),
    /// `count` starts the load generator dropped in `second` (whole seconds since the
    /// scenario's start), as the load summary's `dropped_per_second` counts them; told
    /// once the scenario's start is known.
    Dropped { second: u64, count: u64 },
}

/// A load generator's raw output as text: gunzipped when it starts with gzip's magic bytes
/// (a run directory's kept copy), as it is otherwise (the followed stream).
pub(crate) fn decompressed<'a, R: Read + 'a>(raw: R) -> Box<dyn BufRead + 'a> {
    let mut buffered = BufReader::new(raw);
    let gzipped = buffered
        .fill_buf()
        .map(|b| b.starts_with(&[0x1f, 0x8b]))
        .unwrap_or(false);
    if gzipped {
        Box::new(BufReader::new(flate2::read::MultiGzDecoder::new(buffered)))
    } else {
        Box::new(buffered)
    }
}

/// `convert`, calling `seen` with the scenario's start and each request as they are read;
/// when it returns true the rows written so far are flushed to `requests_csv` (a run
/// followed live flushes about once a second, so that a crash keeps what was measured).
pub fn convert_with<R: Read, W: Write>(
    k6_output: R,
    requests_csv: W,
    seen: &mut dyn FnMut(Seen<'_>) -> bool,
) -> Result<LoadSummary, RequestsError> {
    let input = decompressed(k6_output);
    let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(input);
    let columns = Columns::of(reader.headers().map_err(RequestsError::Read)?)?;
    let mut out = csv::Writer::from_writer(requests_csv);
    out.write_record(COLUMNS).map_err(RequestsError::Write)?;

    let mut summary = LoadSummary::default();
    let mut pending: HashMap<String, VecDeque<Partial>> = HashMap::new();
    let mut dropped_ns = Vec::new();
    let mut rec = csv::StringRecord::new();
    loop {
        match reader.read_record(&mut rec) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                summary.truncated = Some(e.to_string());
                break;
            }
        }
        let metric = rec.get(columns.metric).unwrap_or("");
        if !matches!(
            metric,
            "http_reqs" | "http_req_duration" | "http_req_blocked"
        ) {
            tally(metric, &rec, &columns, &mut summary, &mut dropped_ns, seen)?;
            continue;
        }
        let end_ns = timestamp(&rec, columns.time)?;
        // A request's samples share its end time and tags.
        let key = format!(
            "{end_ns},{}",
            rec.iter()
                .skip(columns.value + 1)
                .collect::<Vec<_>>()
                .join(",")
        );
        let queue = pending.entry(key.clone()).or_default();
        let value = number(&rec, columns.value, "metric_value")?;
        add_sample(metric, &rec, &columns, end_ns, value, queue)?;
        complete(queue, end_ns, &mut out, &mut summary, seen)?;
        if queue.is_empty() {
            pending.remove(&key);
        }
    }
    summary.incomplete = pending.values().map(|q| q.len() as u64).sum();
    summary.dropped_per_second = per_second(summary.scenario_start_ns, &dropped_ns);
    out.flush().map_err(|e| RequestsError::Write(e.into()))?;
    Ok(summary)
}

/// A row that is not a request's sample: dropped iterations, VUs and the scenario's start
/// counted into `summary` (a dropped one's time kept); any other metric ignored.
fn tally(
    metric: &str,
    rec: &csv::StringRecord,
    columns: &Columns,
    summary: &mut LoadSummary,
    dropped_ns: &mut Vec<u64>,
    seen: &mut dyn FnMut(Seen<'_>) -> bool,
) -> Result<(), RequestsError> {
    match metric {
        "dropped_iterations" => {
            summary.dropped_iterations +=
                number(rec, columns.value, "metric_value")?.round() as u64;
            let ns = timestamp(rec, columns.time)?;
            dropped_ns.push(ns);
            if let Some(start) = summary.scenario_start_ns {
                seen(dropped(start, ns));
            }
        }
        "vus" => {
            let v = number(rec, columns.value, "metric_value")? as u64;
            summary.max_vus = summary.max_vus.max(v);
        }
        "vus_max" => {
            let v = number(rec, columns.value, "metric_value")? as u64;
            summary.max_vus_max = summary.max_vus_max.max(v);
        }
        SCENARIO_START_METRIC => {
            let ms = number(rec, columns.value, "metric_value")?;
            let ns = (ms.max(0.0) as u64).saturating_mul(1_000_000);
            let known = summary.scenario_start_ns.is_some();
            summary.scenario_start_ns = Some(ns);
            seen(Seen::ScenarioStart(ns));
            // The drops read before the start was known, now that they can be placed.
            for &at in dropped_ns.iter().filter(|_| !known) {
                seen(dropped(ns, at));
            }
        }
        _ => {}
    }
    Ok(())
}

/// One sample of a request (`http_reqs` opens it; its duration and blocked time fill the
/// oldest one of its key that lacks them).
fn add_sample(
    metric: &str,
    rec: &csv::StringRecord,
    columns: &Columns,
    end_ns: u64,
    value: f64,
    queue: &mut VecDeque<Partial>,
) -> Result<(), RequestsError> {
    match metric {
        "http_reqs" => {
            let status = field(rec, columns.status);
            let status = if status.is_empty() {
                0
            } else {
                status.parse().map_err(|_| RequestsError::BadNumber {
                    line: line(rec),
                    column: "status",
                    value: status.into(),
                })?
            };
            let request = Request {
                start_ns: end_ns,
                end_ns,
                route: route(rec, columns),
                method: field(rec, columns.method).to_string(),
                status,
                duration_ms: 0.0,
                error: error(rec, columns),
                scheduled_ns: None,
            };
            queue.push_back(Partial {
                request,
                duration_ms: None,
                blocked_ms: None,
            });
        }
        "http_req_duration" => {
            if let Some(p) = queue.iter_mut().find(|p| p.duration_ms.is_none()) {
                p.duration_ms = Some(value);
            }
        }
        _ => {
            if let Some(p) = queue.iter_mut().find(|p| p.blocked_ms.is_none()) {
                p.blocked_ms = Some(value);
            }
        }
    }
    Ok(())
}

/// Writes the requests at the front of `queue` whose samples are all in, in the order they
/// came; flushes when `seen` asks.
fn complete<W: Write>(
    queue: &mut VecDeque<Partial>,
    end_ns: u64,
    out: &mut csv::Writer<W>,
    summary: &mut LoadSummary,
    seen: &mut dyn FnMut(Seen<'_>) -> bool,
) -> Result<(), RequestsError> {
    while let Some(Partial {
        duration_ms: Some(d),
        blocked_ms: Some(b),
        ..
    }) = queue.front()
    {
        let (d, b) = (*d, *b);
        if let Some(mut p) = queue.pop_front() {
            p.request.duration_ms = d;
            p.request.start_ns = end_ns.saturating_sub(((b + d) * 1e6).round() as u64);
            write(out, &p.request, summary)?;
            if seen(Seen::Request(&p.request)) {
                out.flush().map_err(|e| RequestsError::Write(e.into()))?;
            }
        }
    }
    Ok(())
}

/// One dropped iteration at `ns`, in its second of the scenario started at `start`, as
/// [`per_second`] counts it.
fn dropped(start: u64, ns: u64) -> Seen<'static> {
    Seen::Dropped {
        second: ns.saturating_sub(start) / 1_000_000_000,
        count: 1,
    }
}

/// Dropped iterations per second of the scenario (none without its start).
fn per_second(start: Option<u64>, dropped_ns: &[u64]) -> Vec<u64> {
    let mut counts: Vec<u64> = Vec::new();
    let Some(start) = start else { return counts };
    for ns in dropped_ns {
        let second = (ns.saturating_sub(start) / 1_000_000_000) as usize;
        if counts.len() <= second {
            counts.resize(second + 1, 0);
        }
        counts[second] += 1;
    }
    counts
}

/// Writes one row: `COLUMNS`, then `scheduled_ns` where the request has it (a file holds
/// either kind of row only, as its header says).
pub(crate) fn write<W: Write>(
    out: &mut csv::Writer<W>,
    r: &Request,
    s: &mut LoadSummary,
) -> Result<(), RequestsError> {
    let fields = [
        r.start_ns.to_string(),
        r.end_ns.to_string(),
        r.route.clone(),
        r.method.clone(),
        r.status.to_string(),
        format!("{:.6}", r.duration_ms),
        r.error.clone(),
    ];
    match r.scheduled_ns {
        None => out.write_record(fields),
        Some(ns) => out.write_record(fields.into_iter().chain([ns.to_string()])),
    }
    .map_err(RequestsError::Write)?;
    s.requests += 1;
    if !r.error.is_empty() {
        s.errors += 1;
    }
    s.first_start_ns = Some(s.first_start_ns.map_or(r.start_ns, |f| f.min(r.start_ns)));
    s.last_end_ns = Some(s.last_end_ns.map_or(r.end_ns, |l| l.max(r.end_ns)));
    Ok(())
}

/// Converts the raw output of the load generator of `kind` (see `convert_with` and
/// `native::convert_with`).
pub fn convert_for<R: Read, W: Write>(
    kind: crate::plan::model::LoadGeneratorKind,
    raw: R,
    requests_csv: W,
    seen: &mut dyn FnMut(Seen<'_>) -> bool,
) -> Result<LoadSummary, RequestsError> {
    match kind {
        crate::plan::model::LoadGeneratorKind::K6 => convert_with(raw, requests_csv, seen),
        crate::plan::model::LoadGeneratorKind::Native => {
            super::native::convert_with(raw, requests_csv, seen)
        }
    }
}

/// Reads requests.csv back, row by row.
pub fn read<R: Read>(requests_csv: R) -> impl Iterator<Item = Result<Request, RequestsError>> {
    csv::Reader::from_reader(requests_csv)
        .into_deserialize()
        .map(|r| r.map_err(RequestsError::Row))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real k6 1.1.0 output (trimmed), plus a quoted error with a comma.
    const K6: &str = "\
metric_name,timestamp,metric_value,error,error_code,method,name,status,extra_tags,metadata
feedbench_scenario_start_ms,1796010650000000000,1796010650000.000000,,,,,,,
http_reqs,1796010650981096337,1.000000,,1500,POST,w,500,route=write,
http_req_duration,1796010650981096337,0.977739,,1500,POST,w,500,route=write,
http_req_blocked,1796010650981096337,0.267669,,1500,POST,w,500,route=write,
http_req_connecting,1796010650981096337,0.198807,,1500,POST,w,500,route=write,
http_req_failed,1796010650981096337,1.000000,,1500,POST,w,500,route=write,
iterations,1796010650981262195,1.000000,,,,,,,
http_reqs,1796010651379469754,1.000000,dial: connection refused,1212,GET,dead,0,route=dead,
http_req_duration,1796010651379469754,0.000000,dial: connection refused,1212,GET,dead,0,route=dead,
http_req_blocked,1796010651379469754,0.000000,dial: connection refused,1212,GET,dead,0,route=dead,
http_reqs,1796010651480781167,1.000000,,,GET,feed,200,route=feed,
http_req_duration,1796010651480781167,301.126809,,,GET,feed,200,route=feed,
http_req_blocked,1796010651480781167,0.250083,,,GET,feed,200,route=feed,
vus,1796010651595307883,3.000000,,,,,,,
vus_max,1796010651595307883,5.000000,,,,,,,
dropped_iterations,1796010651695416470,1.000000,,,,,,,
dropped_iterations,1796010652795825957,1.000000,,,,,,,
http_reqs,1796010656900000000,1.000000,\"request timeout, after 5s\",1050,GET,feed,0,route=feed,
http_req_duration,1796010656900000000,5000.000000,\"request timeout, after 5s\",1050,GET,feed,0,route=feed,
http_req_blocked,1796010656900000000,0.000000,\"request timeout, after 5s\",1050,GET,feed,0,route=feed,
vus,1796010652995307883,1.000000,,,,,,,
";

    fn run(input: &[u8]) -> (LoadSummary, Vec<Request>, String) {
        let mut out = Vec::new();
        let summary = convert(input, &mut out).expect("converts");
        let text = String::from_utf8(out.clone()).expect("utf-8");
        let rows = read(out.as_slice())
            .collect::<Result<Vec<_>, _>>()
            .expect("reads back");
        (summary, rows, text)
    }

    #[test]
    fn one_row_per_request_with_its_start() {
        let (s, rows, text) = run(K6.as_bytes());
        assert!(text.starts_with("start_ns,end_ns,route,method,status,duration_ms,error\n"));
        assert_eq!(rows.len(), 4);
        let w = &rows[0];
        assert_eq!(
            (
                w.route.as_str(),
                w.method.as_str(),
                w.status,
                w.error.as_str()
            ),
            ("write", "POST", 500, "1500")
        );
        assert_eq!(w.end_ns, 1796010650981096337);
        assert_eq!(
            w.end_ns - w.start_ns,
            1_245_408,
            "blocked + duration, in ns"
        );
        assert_eq!(w.duration_ms, 0.977739);
        assert_eq!(rows[1].error, "1212 dial: connection refused");
        assert_eq!(rows[1].start_ns, rows[1].end_ns);
        assert_eq!(
            (
                rows[2].route.as_str(),
                rows[2].status,
                rows[2].error.as_str()
            ),
            ("feed", 200, "")
        );
        assert_eq!(rows[3].error, "1050 request timeout, after 5s");
        assert_eq!(rows[3].end_ns - rows[3].start_ns, 5_000_000_000);
        assert_eq!((s.requests, s.errors, s.incomplete), (4, 3, 0));
        assert_eq!(
            (s.dropped_iterations, s.dropped_per_second.clone()),
            (2, vec![0, 1, 1])
        );
        assert_eq!((s.max_vus, s.max_vus_max), (3, 5));
        assert_eq!(s.scenario_start_ns, Some(1796010650000000000));
        assert_eq!(s.first_start_ns, Some(1796010650981096337 - 1_245_408));
        assert_eq!(s.last_end_ns, Some(1796010656900000000));
        assert_eq!(s.truncated, None);
    }

    /// The drops `convert_with` tells as it reads, per second.
    fn told(input: &str) -> (Vec<u64>, LoadSummary) {
        let mut told: Vec<u64> = Vec::new();
        let summary = convert_with(input.as_bytes(), Vec::new(), &mut |s| {
            if let Seen::Dropped { second, count } = s {
                let i = second as usize;
                told.resize(told.len().max(i + 1), 0);
                told[i] += count;
            }
            false
        })
        .expect("converts");
        (told, summary)
    }

    #[test]
    fn dropped_iterations_are_told_in_the_seconds_the_summary_counts_them() {
        let (drops, s) = told(K6);
        assert_eq!(drops, s.dropped_per_second);
        assert_eq!(drops, [0, 1, 1]);
        // A drop read before the scenario's start is told once the start is known.
        let start = "feedbench_scenario_start_ms,1796010650000000000,1796010650000.000000,,,,,,,\n";
        let late_start = K6.replacen(start, "", 1) + start;
        let (drops, s) = told(&late_start);
        assert_eq!(
            (drops.as_slice(), s.dropped_per_second.as_slice()),
            (&[0, 1, 1][..], &[0, 1, 1][..])
        );
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(bytes).expect("gzip");
        gz.finish().expect("gzip")
    }

    #[test]
    fn gzipped_output_is_read_the_same() {
        assert_eq!(run(&gzip(K6.as_bytes())).2, run(K6.as_bytes()).2);
    }

    #[test]
    fn a_truncated_file_keeps_its_rows_and_says_so() {
        let gz = gzip(K6.as_bytes());
        let mut out = Vec::new();
        let s = convert(&gz[..gz.len() - 12], &mut out).expect("converts");
        assert!(s.truncated.is_some(), "{s:?}");
        assert!(s.requests >= 1);
    }

    #[test]
    fn samples_of_one_request_are_matched_when_interleaved() {
        let interleaved = "\
metric_name,timestamp,metric_value,error,error_code,method,name,status,extra_tags,metadata
http_reqs,1796010650000000100,1,,,GET,a,200,route=a,
http_reqs,1796010650000000200,1,,,GET,b,200,route=b,
http_req_duration,1796010650000000200,2.0,,,GET,b,200,route=b,
http_req_duration,1796010650000000100,1.0,,,GET,a,200,route=a,
http_req_blocked,1796010650000000100,0,,,GET,a,200,route=a,
http_req_blocked,1796010650000000200,0,,,GET,b,200,route=b,
http_reqs,1796010650000000300,1,,,GET,c,200,route=c,
";
        let (s, rows, _) = run(interleaved.as_bytes());
        let got: Vec<(&str, u64)> = rows
            .iter()
            .map(|r| (r.route.as_str(), r.end_ns - r.start_ns))
            .collect();
        assert_eq!(got, vec![("a", 1_000_000), ("b", 2_000_000)]);
        assert_eq!(s.incomplete, 1);
    }

    #[test]
    fn mistakes_in_the_input_are_errors() {
        let seconds = "metric_name,timestamp,metric_value\nhttp_reqs,1796010650,1\n";
        assert!(matches!(
            convert(seconds.as_bytes(), Vec::new()),
            Err(RequestsError::NotNanoseconds { line: 2, .. })
        ));
        let no_value = "metric_name,timestamp\n";
        assert!(matches!(
            convert(no_value.as_bytes(), Vec::new()),
            Err(RequestsError::MissingColumn("metric_value"))
        ));
        let bad = "metric_name,timestamp,metric_value\nvus,1796010650000000000,many\n";
        assert!(matches!(
            convert(bad.as_bytes(), Vec::new()),
            Err(RequestsError::BadNumber { .. })
        ));
        assert!(convert(&b"\x1f\x8bnot gzip"[..], Vec::new()).is_err());
        assert!(convert(&b""[..], Vec::new()).is_err());
    }
}
