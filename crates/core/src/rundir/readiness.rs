//! `readiness.csv`: a restarted replica's readiness probe, every attempt the fault proxy made
//! from inside the run's network (its `GET` of the contender's readiness path every 100 ms,
//! from the replica's start until its first 200 or the observe window's end). The one
//! writer of the file and the one reader are here.

use std::path::Path;

use super::table::{ReadError, Table};
use super::READINESS_CSV;

/// The header line, with its newline.
pub const HEADER: &str = "start_ns,end_ns,server,status,error\n";

/// One attempt.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReadinessRow {
    /// Unix ns at which the attempt started (on the fault proxy's clock, the host's).
    pub start_ns: i128,
    /// Unix ns at which its answer came, or it gave up.
    pub end_ns: i128,
    /// The replica asked, by its role (`replica-1`).
    pub server: String,
    /// The HTTP status; 0 when no answer came.
    pub status: u16,
    /// Why no answer came (empty with one).
    pub error: String,
}

/// The whole file: the header and one line per attempt, fields quoted where needed.
pub fn render(rows: &[ReadinessRow]) -> Result<String, csv::Error> {
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(HEADER.as_bytes().to_vec());
    for r in rows {
        w.serialize(r)?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| csv::Error::from(e.into_error()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// A readiness probe's attempt, as `time_to_ready` and the balancer's validity check read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadyAttempt {
    pub start_ns: i128,
    pub end_ns: i128,
    /// The replica asked, by its role.
    pub server: String,
    pub status: u16,
    /// Why no answer came (empty with one).
    pub error: String,
}

/// The fault proxy's words for an attempt it gave up on (images/fault-proxy/src/probe.rs:
/// `no connection within N ms`, `no answer within N ms`).
const GAVE_UP: &str = " within ";

impl ReadyAttempt {
    /// Answered as HAProxy's `option httpchk` passes a check: 2xx or 3xx.
    pub fn passes_a_check(&self) -> bool {
        (200..400).contains(&self.status)
    }

    /// Failed as HAProxy's check would fail too: answered outside 2xx and 3xx, or refused or
    /// reset. An attempt the probe gave up on is neither: HAProxy's check waits `inter`, the
    /// probe less.
    pub fn fails_a_check(&self) -> bool {
        let gave_up = self.status == 0 && self.error.contains(GAVE_UP);
        !(self.passes_a_check() || gave_up)
    }
}

/// How long `server` was known to fail its balancer's checks after its probe's first attempt,
/// on the probe's own clock: to the start of the last attempt failing a check (the latest
/// instant it is known unready: it may have failed at once) before the first passing one.
/// `None` without such an attempt.
pub fn booting_ns(attempts: &[ReadyAttempt], server: &str) -> Option<i128> {
    let of_server = || attempts.iter().filter(|a| a.server == server);
    let origin = of_server().map(|a| a.start_ns).min()?;
    let passed = of_server()
        .filter(|a| a.passes_a_check())
        .map(|a| a.start_ns)
        .min()
        .unwrap_or(i128::MAX);
    of_server()
        .filter(|a| a.fails_a_check() && a.start_ns < passed)
        .map(|a| a.start_ns.saturating_sub(origin))
        .max()
}

/// readiness.csv, in file order; `None` without the file (no replica was restarted, the
/// fault proxy could not probe, or the run was recorded before replicas were probed).
/// Instants are unix ns within an i64, as the probe writes them.
pub fn read(dir: &Path) -> Result<Option<Vec<ReadyAttempt>>, ReadError> {
    let mut t = match Table::open(dir, READINESS_CSV) {
        Ok(t) => t,
        Err(ReadError::Missing(_)) => return Ok(None),
        Err(e) => return Err(e),
    };
    let (a, b, v, s, e) = (
        t.column("start_ns")?,
        t.column("end_ns")?,
        t.column("server")?,
        t.column("status")?,
        t.column("error")?,
    );
    let mut out = Vec::new();
    t.each(|rec, c| {
        let status = c.int(rec, s, "status")?;
        let instant = |i: usize, name: &'static str| {
            let ns = c.int(rec, i, name)?;
            match i64::try_from(ns) {
                Ok(_) => Ok(ns),
                Err(_) => Err(c.bad(name, c.text(rec, i), "unix ns within an i64")),
            }
        };
        let (start_ns, end_ns) = (instant(a, "start_ns")?, instant(b, "end_ns")?);
        if end_ns < start_ns {
            return Err(c.bad("end_ns", c.text(rec, b), "an instant not before start_ns"));
        }
        out.push(ReadyAttempt {
            start_ns,
            end_ns,
            server: c.text(rec, v).to_string(),
            status: u16::try_from(status)
                .map_err(|_| c.bad("status", c.text(rec, s), "an HTTP status (0 to 65535)"))?,
            error: c.text(rec, e).to_string(),
        });
        Ok(())
    })?;
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_render_under_the_header_and_read_back() {
        let rows = vec![
            ReadinessRow {
                start_ns: 5,
                end_ns: 7,
                server: "replica-1".into(),
                status: 0,
                error: "connect: refused, at once".into(),
            },
            ReadinessRow {
                start_ns: 105,
                end_ns: 108,
                server: "replica-1".into(),
                status: 200,
                error: String::new(),
            },
        ];
        let text = render(&rows).unwrap();
        assert_eq!(
            text,
            "start_ns,end_ns,server,status,error\n5,7,replica-1,0,\"connect: refused, at once\"\n105,108,replica-1,200,\n"
        );
        let back: Vec<ReadinessRow> = csv::Reader::from_reader(text.as_bytes())
            .deserialize()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(back, rows);
    }

    #[test]
    fn the_reader_takes_what_is_written_and_names_damage() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path()).unwrap().is_none());
        let path = dir.path().join(READINESS_CSV);
        let row = |start: &str, end: &str| {
            format!("{HEADER}{start},{end},replica-1,0,\"no answer within 100 ms\"\n")
        };
        std::fs::write(&path, row("5", "7")).unwrap();
        let attempts = read(dir.path()).unwrap().unwrap();
        assert_eq!(attempts[0].error, "no answer within 100 ms");
        assert!(!attempts[0].fails_a_check() && !attempts[0].passes_a_check());
        for (start, end, column) in [
            ("5", "4", "end_ns"),
            ("99999999999999999999", "99999999999999999999", "start_ns"),
        ] {
            std::fs::write(&path, row(start, end)).unwrap();
            let e = read(dir.path()).unwrap_err().to_string();
            assert!(e.contains("readiness.csv") && e.contains(column), "{e}");
        }
    }
}
