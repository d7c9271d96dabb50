//! The report's reader: a run directory's CSVs, streamed once, into the few columns the
//! figures need. Columns are found by name; a missing file makes the run not analysable
//! (with the file named); a damaged row is an error naming the file, the line and the
//! column, never a silently skipped row.

use std::path::{Path, PathBuf};

use crate::rundir::host::HostSample;
use crate::rundir::{
    CONTAINERS_CSV, EVENTS_CSV, HEALTH_CSV, HOST_CSV, READINESS_CSV, REQUESTS_CSV,
};

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("`{0}` is missing")]
    Missing(PathBuf),
    #[error("cannot read `{path}`: {message}")]
    Io { path: PathBuf, message: String },
    #[error("`{path}` has no `{column}` column (is it feedbench's {file}?)")]
    NoColumn {
        path: PathBuf,
        column: &'static str,
        file: &'static str,
    },
    #[error("`{path}` line {line}, column `{column}`: `{value}` is not {expected}")]
    Bad {
        path: PathBuf,
        line: u64,
        column: &'static str,
        value: String,
        expected: &'static str,
    },
}

impl ReadError {
    /// A file is missing (the run is not analysable), rather than damaged.
    pub fn is_missing(&self) -> bool {
        matches!(self, ReadError::Missing(_))
    }
}

/// A request, as the figures need it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Req {
    pub start_ns: i128,
    pub end_ns: i128,
    pub status: u16,
    pub duration_ms: f64,
    /// When the open model scheduled it: requests.csv's `scheduled_ns`, which a native load
    /// generator writes; `None` without the column (k6).
    pub scheduled_ns: Option<i128>,
    /// Its route: an index into `Requests::routes`.
    pub route: u16,
}

/// requests.csv as the report reads it: the requests, sorted by start, and the routes they
/// name, each once (in the order first seen; empty without a `route` column).
#[derive(Debug, Clone, Default)]
pub struct Requests {
    pub reqs: Vec<Req>,
    pub routes: Vec<String>,
}

/// The routes of a file, each named once, as `Req::route` indexes them.
#[derive(Debug, Default)]
pub struct RouteNames(Vec<String>);

impl RouteNames {
    /// The index of `name`, added when new; `None` past 65,536 routes.
    pub fn id(&mut self, name: &[u8]) -> Option<u16> {
        if let Some(i) = self.0.iter().position(|n| n.as_bytes() == name) {
            return u16::try_from(i).ok();
        }
        let i = u16::try_from(self.0.len()).ok()?;
        self.0.push(String::from_utf8_lossy(name).into_owned());
        Some(i)
    }

    pub fn into_names(self) -> Vec<String> {
        self.0
    }
}

impl Req {
    /// No response (status 0), or a 5xx: what the objective counts.
    pub fn failed(&self) -> bool {
        self.status == 0 || self.status >= 500
    }
}

/// A containers.csv row, as the figures need it.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub unix_ns: i128,
    /// The monitors' monotonic clock at the read, in seconds: every rate's time base.
    pub offset_s: f64,
    pub tick: u64,
    pub container: String,
    pub role: String,
    pub ok: bool,
    pub cpu_usage_s: Option<f64>,
    pub memory_bytes: Option<f64>,
    pub memory_rss_bytes: Option<f64>,
    /// Absent in a containers.csv written before it was recorded.
    pub memory_working_set_bytes: Option<f64>,
}

/// An events.csv row.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub wall_ns: i128,
    pub event: String,
}

/// A health.csv row.
#[derive(Debug, Clone, PartialEq)]
pub struct Health {
    pub wall_ns: i128,
    /// As HAProxy logs it: `backend/server`.
    pub server: String,
    pub state: String,
}

struct Table {
    path: PathBuf,
    reader: csv::Reader<std::io::BufReader<std::fs::File>>,
    header: csv::ByteRecord,
    file: &'static str,
}

impl Table {
    fn open(dir: &Path, file: &'static str) -> Result<Table, ReadError> {
        let path = dir.join(file);
        let f = match crate::confine::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(ReadError::Missing(path))
            }
            Err(e) => {
                return Err(ReadError::Io {
                    path,
                    message: e.to_string(),
                })
            }
        };
        let mut reader = csv::ReaderBuilder::new()
            .buffer_capacity(1 << 16)
            .from_reader(std::io::BufReader::with_capacity(1 << 16, f));
        let header = reader
            .byte_headers()
            .map_err(|e| ReadError::Io {
                path: path.clone(),
                message: e.to_string(),
            })?
            .clone();
        Ok(Table {
            path,
            reader,
            header,
            file,
        })
    }

    fn column(&self, name: &'static str) -> Result<usize, ReadError> {
        self.optional(name).ok_or_else(|| ReadError::NoColumn {
            path: self.path.clone(),
            column: name,
            file: self.file,
        })
    }

    fn optional(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name.as_bytes())
    }

    /// Calls `row` for every record, with its line.
    fn each(
        &mut self,
        mut row: impl FnMut(&csv::ByteRecord, &Cell<'_>) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        let mut rec = csv::ByteRecord::new();
        loop {
            match self.reader.read_byte_record(&mut rec) {
                Ok(true) => {}
                Ok(false) => return Ok(()),
                Err(e) => {
                    return Err(ReadError::Io {
                        path: self.path.clone(),
                        message: e.to_string(),
                    })
                }
            }
            let cell = Cell {
                path: &self.path,
                line: rec.position().map_or(0, |p| p.line()),
            };
            row(&rec, &cell)?;
        }
    }
}

/// Parses one field, naming the place when it does not.
struct Cell<'a> {
    path: &'a Path,
    line: u64,
}

impl Cell<'_> {
    fn text<'r>(&self, rec: &'r csv::ByteRecord, i: usize) -> &'r str {
        rec.get(i)
            .and_then(|b| std::str::from_utf8(b).ok())
            .unwrap_or("")
    }

    fn bad(&self, column: &'static str, value: &str, expected: &'static str) -> ReadError {
        ReadError::Bad {
            path: self.path.to_path_buf(),
            line: self.line,
            column,
            value: value.to_string(),
            expected,
        }
    }

    fn int(
        &self,
        rec: &csv::ByteRecord,
        i: usize,
        column: &'static str,
    ) -> Result<i128, ReadError> {
        let t = self.text(rec, i);
        t.parse().map_err(|_| self.bad(column, t, "an integer"))
    }

    fn num(&self, rec: &csv::ByteRecord, i: usize, column: &'static str) -> Result<f64, ReadError> {
        let t = self.text(rec, i);
        t.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| self.bad(column, t, "a number"))
    }

    /// An empty field is `None`.
    fn opt_num(
        &self,
        rec: &csv::ByteRecord,
        i: Option<usize>,
        column: &'static str,
    ) -> Result<Option<f64>, ReadError> {
        match i {
            Some(i) if !self.text(rec, i).is_empty() => self.num(rec, i, column).map(Some),
            _ => Ok(None),
        }
    }
}

/// requests.csv, sorted by start: the fast path when the file holds no quote
/// (`report::scan`), else the general CSV reader.
pub fn requests(dir: &Path) -> Result<Requests, ReadError> {
    let path = dir.join(REQUESTS_CSV);
    let bytes = match crate::confine::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(ReadError::Missing(path)),
        Err(e) => {
            return Err(ReadError::Io {
                path,
                message: e.to_string(),
            })
        }
    };
    if let Some(fast) = super::scan::requests(&path, &bytes) {
        let mut out = fast?;
        out.reqs.sort_unstable_by_key(|r| r.start_ns);
        return Ok(out);
    }
    drop(bytes);
    let mut t = Table::open(dir, REQUESTS_CSV)?;
    let (s, e, st, d) = (
        t.column("start_ns")?,
        t.column("end_ns")?,
        t.column("status")?,
        t.column("duration_ms")?,
    );
    let sched = t.column(crate::rundir::requests::SCHEDULED_COLUMN).ok();
    let route = t.column("route").ok();
    let mut names = RouteNames::default();
    let mut out = Vec::new();
    t.each(|rec, c| {
        let status = c.text(rec, st);
        let route = match route {
            Some(i) => {
                let name = c.text(rec, i);
                names
                    .id(name.as_bytes())
                    .ok_or_else(|| c.bad("route", name, "one of at most 65,536 routes"))?
            }
            None => 0,
        };
        out.push(Req {
            start_ns: c.int(rec, s, "start_ns")?,
            end_ns: c.int(rec, e, "end_ns")?,
            status: status
                .parse()
                .map_err(|_| c.bad("status", status, "an HTTP status (0 to 999)"))?,
            duration_ms: c.num(rec, d, "duration_ms")?,
            scheduled_ns: match sched {
                Some(i) => Some(c.int(rec, i, "scheduled_ns")?),
                None => None,
            },
            route,
        });
        Ok(())
    })?;
    out.sort_unstable_by_key(|r| r.start_ns);
    Ok(Requests {
        reqs: out,
        routes: names.into_names(),
    })
}

/// containers.csv, in file order.
pub fn samples(dir: &Path) -> Result<Vec<Sample>, ReadError> {
    let mut t = Table::open(dir, CONTAINERS_CSV)?;
    let (u, offset, tick, name, role, status) = (
        t.column("unix_ns")?,
        t.column("offset_s")?,
        t.column("tick")?,
        t.column("container")?,
        t.column("role")?,
        t.column("status")?,
    );
    let (cpu, mem, rss, ws) = (
        t.optional("cpu_usage_s"),
        t.optional("memory_bytes"),
        t.optional("memory_rss_bytes"),
        t.optional("memory_working_set_bytes"),
    );
    let mut out = Vec::new();
    t.each(|rec, c| {
        let tick_text = c.text(rec, tick);
        out.push(Sample {
            unix_ns: c.int(rec, u, "unix_ns")?,
            offset_s: c.num(rec, offset, "offset_s")?,
            tick: tick_text
                .parse()
                .map_err(|_| c.bad("tick", tick_text, "a whole number"))?,
            container: c.text(rec, name).to_string(),
            role: c.text(rec, role).to_string(),
            ok: c.text(rec, status) == "ok",
            cpu_usage_s: c.opt_num(rec, cpu, "cpu_usage_s")?,
            memory_bytes: c.opt_num(rec, mem, "memory_bytes")?,
            memory_rss_bytes: c.opt_num(rec, rss, "memory_rss_bytes")?,
            memory_working_set_bytes: c.opt_num(rec, ws, "memory_working_set_bytes")?,
        });
        Ok(())
    })?;
    Ok(out)
}

/// host.csv, in file order; `None` when the run has none (its engine was not on the host
/// that ran feedbench, or it was recorded before host samples). A row that is not `ok`
/// keeps only its time. A negative CPU time or load average is an error naming its place,
/// as in the twin. The one reader of host.csv: the report's figures and the validity
/// checks' host-interference read it here.
pub fn host(dir: &Path) -> Result<Option<Vec<HostSample>>, ReadError> {
    let mut t = match Table::open(dir, HOST_CSV) {
        Ok(t) => t,
        Err(e) if e.is_missing() => return Ok(None),
        Err(e) => return Err(e),
    };
    let (u, status, cpus) = (
        t.column("unix_ns")?,
        t.column("status")?,
        t.column("logical_cpus")?,
    );
    const PARTS: [&str; 7] = [
        "interval_s",
        "busy_s",
        "iowait_s",
        "steal_s",
        "study_s",
        "feedbench_s",
        "engine_s",
    ];
    let mut cols = [0usize; 7];
    for (c, name) in cols.iter_mut().zip(PARTS) {
        *c = t.column(name)?;
    }
    let load1 = t.column("load1")?;
    let mut out = Vec::new();
    t.each(|rec, c| {
        let cpus_text = c.text(rec, cpus);
        let mut ns = [None; 7];
        for ((v, i), name) in ns.iter_mut().zip(cols).zip(PARTS) {
            *v = match c.opt_num(rec, Some(i), name)? {
                Some(s) if s >= 0.0 => Some((s * 1e9).round() as u64),
                Some(_) => return Err(c.bad(name, c.text(rec, i), "a CPU time of 0 or more")),
                None => None,
            };
        }
        let ok = c.text(rec, status) == "ok";
        out.push(HostSample {
            unix_ns: c.int(rec, u, "unix_ns")?,
            interval_ns: ns[0].filter(|_| ok),
            logical_cpus: cpus_text
                .parse()
                .map_err(|_| c.bad("logical_cpus", cpus_text, "a whole number"))?,
            busy_ns: ns[1],
            iowait_ns: ns[2],
            steal_ns: ns[3],
            study_ns: ns[4],
            feedbench_ns: ns[5],
            engine_ns: ns[6],
            load1: match c.opt_num(rec, Some(load1), "load1")? {
                Some(l) if l < 0.0 => return Err(c.bad("load1", c.text(rec, load1), "0 or more")),
                l => l,
            },
        });
        Ok(())
    })?;
    Ok(Some(out))
}

/// events.csv, in file order.
pub fn events(dir: &Path) -> Result<Vec<Event>, ReadError> {
    let mut t = Table::open(dir, EVENTS_CSV)?;
    let (w, e) = (t.column("wall_ns")?, t.column("event")?);
    let mut out = Vec::new();
    t.each(|rec, c| {
        out.push(Event {
            wall_ns: c.int(rec, w, "wall_ns")?,
            event: c.text(rec, e).to_string(),
        });
        Ok(())
    })?;
    Ok(out)
}

/// A readiness probe's attempt, as `time_to_ready` needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadyAttempt {
    pub start_ns: i128,
    pub end_ns: i128,
    pub status: u16,
}

/// readiness.csv, in file order; `None` without the file (no replica was restarted, the
/// fault proxy could not probe, or the run was recorded before replicas were probed).
pub fn readiness(dir: &Path) -> Result<Option<Vec<ReadyAttempt>>, ReadError> {
    let mut t = match Table::open(dir, READINESS_CSV) {
        Ok(t) => t,
        Err(ReadError::Missing(_)) => return Ok(None),
        Err(e) => return Err(e),
    };
    let (a, b, s) = (
        t.column("start_ns")?,
        t.column("end_ns")?,
        t.column("status")?,
    );
    let mut out = Vec::new();
    t.each(|rec, c| {
        let status = c.int(rec, s, "status")?;
        let (start_ns, end_ns) = (c.int(rec, a, "start_ns")?, c.int(rec, b, "end_ns")?);
        if end_ns < start_ns {
            return Err(c.bad("end_ns", c.text(rec, b), "an instant not before start_ns"));
        }
        out.push(ReadyAttempt {
            start_ns,
            end_ns,
            status: u16::try_from(status)
                .map_err(|_| c.bad("status", c.text(rec, s), "an HTTP status (0 to 65535)"))?,
        });
        Ok(())
    })?;
    Ok(Some(out))
}

/// health.csv, in file order.
pub fn health(dir: &Path) -> Result<Vec<Health>, ReadError> {
    let mut t = Table::open(dir, HEALTH_CSV)?;
    let (w, v, s) = (
        t.column("wall_ns")?,
        t.column("server")?,
        t.column("state")?,
    );
    let mut out = Vec::new();
    t.each(|rec, c| {
        out.push(Health {
            wall_ns: c.int(rec, w, "wall_ns")?,
            server: c.text(rec, v).to_string(),
            state: c.text(rec, s).to_string(),
        });
        Ok(())
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_reads_back_what_the_monitor_writes_and_names_a_negative_load() {
        use crate::rundir::host::{HostRow, HOST_HEADER};
        let dir = tempfile::tempdir().unwrap();
        let s = 1_000_000_000;
        let ok = HostRow {
            unix_ns: 1_700_000_000_000_000_000,
            tick: 1,
            ok: true,
            interval_ns: Some(s),
            logical_cpus: 2,
            busy_ns: Some(s / 2),
            iowait_ns: Some(0),
            steal_ns: Some(s / 100),
            study_ns: Some(s / 4),
            feedbench_ns: Some(s / 50),
            engine_ns: Some(s / 50),
            load1: Some(1.25),
            ..HostRow::default()
        };
        let failed = HostRow {
            tick: 2,
            ok: false,
            interval_ns: Some(s),
            logical_cpus: 2,
            detail: "cannot read /proc/stat".into(),
            ..HostRow::default()
        };
        let mut text = format!("{HOST_HEADER}\n");
        ok.write_csv(&mut text);
        failed.write_csv(&mut text);
        std::fs::write(dir.path().join(HOST_CSV), &text).unwrap();
        let rows = host(dir.path()).unwrap().unwrap();
        assert_eq!(rows.len(), 2);
        let r = &rows[0];
        assert_eq!(
            (r.interval_ns, r.busy_ns, r.steal_ns, r.study_ns, r.load1),
            (Some(s), Some(s / 2), Some(s / 100), Some(s / 4), Some(1.25))
        );
        // A row that is not `ok` keeps its time, and no interval to make a figure of.
        assert_eq!((rows[1].interval_ns, rows[1].busy_ns), (None, None));

        std::fs::write(
            dir.path().join(HOST_CSV),
            text.replacen(",1.25,", ",-1.25,", 1),
        )
        .unwrap();
        let e = host(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("line 2, column `load1`: `-1.25` is not 0 or more"),
            "{e}"
        );
        assert!(host(tempfile::tempdir().unwrap().path()).unwrap().is_none());
    }

    #[test]
    fn requests_read_by_column_name_and_sorted_by_start() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(REQUESTS_CSV),
            "end_ns,start_ns,route,method,status,duration_ms,error\n30,20,a,GET,200,1.5,\n15,10,a,GET,0,0,\"1212 dial, refused\"\n",
        )
        .unwrap();
        let read = requests(dir.path()).unwrap();
        let r = &read.reqs;
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].start_ns, r[0].status), (10, 0));
        assert!(r[0].failed() && !r[1].failed());
        assert_eq!(read.routes, ["a"]);
        assert_eq!((r[0].route, r[1].route), (0, 0));
    }

    #[test]
    fn a_damaged_row_names_file_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(REQUESTS_CSV),
            "start_ns,end_ns,route,method,status,duration_ms,error\n1,2,a,GET,200,1,\n1,2,a,GET,200,fast,\n",
        )
        .unwrap();
        let e = requests(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("requests.csv") && e.contains("line 3") && e.contains("duration_ms"),
            "{e}"
        );
        let e = samples(dir.path()).unwrap_err();
        assert!(
            e.is_missing() && e.to_string().contains("containers.csv"),
            "{e}"
        );
    }

    #[test]
    fn samples_without_the_rss_column_read_with_none() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(CONTAINERS_CSV),
            "unix_ns,offset_s,tick,container,role,source,status,cpu_usage_s,memory_bytes,detail\n5,0.1,0,c,replica-1,cgroup,ok,1.25,4096,\n6,1.1,1,c,replica-1,cgroup,down,,,exited\n",
        )
        .unwrap();
        let s = samples(dir.path()).unwrap();
        assert_eq!(s[0].cpu_usage_s, Some(1.25));
        assert_eq!(s[0].memory_rss_bytes, None);
        assert_eq!(s[0].memory_working_set_bytes, None);
        assert!(!s[1].ok && s[1].cpu_usage_s.is_none());
    }
}
