//! The report's reader: a run directory's CSVs, streamed once, into the few columns the
//! figures need. Columns are found by name; a missing file makes the run not analysable
//! (with the file named); a damaged row is an error naming the file, the line and the
//! column, never a silently skipped row.

use std::path::Path;

pub use crate::rundir::table::ReadError;
use crate::rundir::table::Table;
use crate::rundir::{CONTAINERS_CSV, EVENTS_CSV, REQUESTS_CSV};

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

/// One row of health.csv.
pub type Health = crate::rundir::health::HealthRow;

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

/// readiness.csv's attempts (`rundir::readiness`).
pub use crate::rundir::readiness::{read as readiness, ReadyAttempt};

/// health.csv, in file order (`rundir::health`).
pub fn health(dir: &Path) -> Result<Vec<Health>, ReadError> {
    crate::rundir::health::read(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

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
