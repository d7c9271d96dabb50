//! requests.csv from feedbench-load's output stream (`feedbench_load::stream`, gzipped or
//! not): its request rows pass through with their `scheduled_ns`, and its per-second
//! records become the load summary's dropped starts, lags and concurrency, as k6's samples
//! do in `requests::convert_with`.
//!
//! The stream is read line by line while it grows. A line that cannot be read fails the
//! conversion with its number, except the very last one when it lacks its newline: the
//! generator was cut off mid-write, the rows before it are kept and `truncated` says so.

use std::io::{Read, Write};

use feedbench_load::stream::{self, Line};

use super::requests::{self, LoadSummary, Request, RequestsError, Seen, COLUMNS};

/// Reads feedbench-load's output and writes requests.csv (its columns plus
/// `scheduled_ns`), calling `seen` as `requests::convert_with` does.
pub fn convert_with<R: Read, W: Write>(
    raw: R,
    requests_csv: W,
    seen: &mut dyn FnMut(Seen<'_>) -> bool,
) -> Result<LoadSummary, RequestsError> {
    let mut input = requests::decompressed(raw);
    let mut out = csv::Writer::from_writer(requests_csv);
    out.write_record(COLUMNS.iter().chain([&requests::SCHEDULED_COLUMN]))
        .map_err(RequestsError::Write)?;
    let mut summary = LoadSummary {
        generator: Some("native".into()),
        ..LoadSummary::default()
    };
    let mut bytes = Vec::new();
    let mut line_no: u64 = 0;
    loop {
        bytes.clear();
        match input.read_until(b'\n', &mut bytes) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                summary.truncated = Some(format!("after line {line_no}: {e}"));
                break;
            }
        }
        line_no += 1;
        let complete = bytes.last() == Some(&b'\n');
        let parsed = std::str::from_utf8(&bytes)
            .map_err(|_| "the line is not UTF-8".to_string())
            .and_then(|text| {
                stream::parse_line(text.trim_end_matches(['\n', '\r'])).map_err(|e| e.to_string())
            });
        let line = match parsed {
            Ok(line) => line,
            Err(message) if !complete => {
                summary.truncated = Some(format!("line {line_no} is cut off: {message}"));
                break;
            }
            Err(message) => {
                return Err(RequestsError::Stream {
                    line: line_no,
                    message,
                })
            }
        };
        match line {
            Line::Start {
                scenario_start_ns, ..
            } => {
                summary.scenario_start_ns = Some(scenario_start_ns);
                seen(Seen::ScenarioStart(scenario_start_ns));
            }
            Line::Header => {}
            Line::Request(row) => {
                let request = Request {
                    start_ns: row.start_ns,
                    end_ns: row.end_ns,
                    route: row.route,
                    method: row.method,
                    status: row.status,
                    duration_ms: row.duration_ms,
                    error: row.error,
                    scheduled_ns: Some(row.scheduled_ns),
                };
                requests::write(&mut out, &request, &mut summary)?;
                if seen(Seen::Request(&request)) {
                    out.flush().map_err(|e| RequestsError::Write(e.into()))?;
                }
            }
            Line::Second(s) => {
                second(&mut summary, &s);
                let count = s.dropped_cap.saturating_add(s.dropped_late);
                if count > 0 {
                    seen(Seen::Dropped { second: s.t, count });
                }
            }
            Line::End(e) => summary.ended = Some(e.reason.as_str().to_string()),
        }
    }
    out.flush().map_err(|e| RequestsError::Write(e.into()))?;
    summary.dropped_iterations = summary.dropped_per_second.iter().sum();
    Ok(summary)
}

/// One `#second` record into the summary's per-second series (index = whole seconds since
/// the scenario's start, as k6's dropped iterations are binned).
fn second(summary: &mut LoadSummary, s: &stream::Second) {
    let t = usize::try_from(s.t).unwrap_or(usize::MAX);
    // A damaged record naming a second years away must not allocate for it.
    if t > 1_000_000 {
        return;
    }
    let dropped = s.dropped_cap.saturating_add(s.dropped_late);
    grow(&mut summary.dropped_per_second, t)[t] = dropped;
    grow(&mut summary.late_per_second, t)[t] = s.dropped_late;
    grow(&mut summary.max_lag_ms_per_second, t)[t] = s.max_lag_ms;
    summary.max_vus = summary.max_vus.max(s.in_flight);
    summary.max_vus_max = summary.max_vus_max.max(s.connections);
}

fn grow<T: Default + Clone>(v: &mut Vec<T>, index: usize) -> &mut Vec<T> {
    if v.len() <= index {
        v.resize(index + 1, T::default());
    }
    v
}

#[cfg(test)]
mod tests;
