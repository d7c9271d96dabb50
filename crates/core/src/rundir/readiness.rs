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

/// A readiness probe's attempt, as `time_to_ready` needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadyAttempt {
    pub start_ns: i128,
    pub end_ns: i128,
    pub status: u16,
}

/// readiness.csv, in file order; `None` without the file (no replica was restarted, the
/// fault proxy could not probe, or the run was recorded before replicas were probed).
pub fn read(dir: &Path) -> Result<Option<Vec<ReadyAttempt>>, ReadError> {
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
}
