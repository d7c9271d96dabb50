//! `health.csv`: the balancer's server state changes, taken from HAProxy's own timestamped
//! log (the 1 Hz stats in balancer.csv only bound them to the second). One row per change.
//! The one writer of the file and the one reader are here.

use std::fmt::Write as _;
use std::path::Path;

use super::table::{ReadError, Table};
use super::HEALTH_CSV;

/// The header line, with its newline.
pub const HEADER: &str = "wall_ns,server,state\n";

/// One change of one server's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthRow {
    /// Unix ns, from the engine's timestamp on the log line.
    pub wall_ns: i128,
    /// The server's name in its backend, as HAProxy logs it after the `/`: the replica's
    /// role, `replica-1`.
    pub server: String,
    /// `UP` or `DOWN`.
    pub state: String,
}

/// A server's name without the `backend/` HAProxy may log before it: `replica-1` either way.
/// The one place that rule is spelled: the log parser writes names through it, and every
/// reader of a row (which a person may have written with the backend) compares through it.
pub fn server_name(logged: &str) -> &str {
    logged.rsplit('/').next().unwrap_or(logged)
}

impl HealthRow {
    /// This row's server, without a `backend/` before it.
    pub fn server_name(&self) -> &str {
        server_name(&self.server)
    }
}

/// The whole file: the header and one line per row. Server names are HAProxy identifiers
/// (no commas or quotes), so no field needs quoting.
pub fn render(rows: &[HealthRow]) -> String {
    let mut out = String::from(HEADER);
    for r in rows {
        let _ = writeln!(out, "{},{},{}", r.wall_ns, r.server, r.state);
    }
    out
}

/// health.csv, in file order; a state other than `UP` or `DOWN` is damage.
pub fn read(dir: &Path) -> Result<Vec<HealthRow>, ReadError> {
    let mut t = Table::open(dir, HEALTH_CSV)?;
    let (w, v, s) = (
        t.column("wall_ns")?,
        t.column("server")?,
        t.column("state")?,
    );
    let mut out = Vec::new();
    t.each(|rec, c| {
        let state = c.text(rec, s);
        if state != "UP" && state != "DOWN" {
            return Err(c.bad("state", state, "UP or DOWN"));
        }
        out.push(HealthRow {
            wall_ns: c.int(rec, w, "wall_ns")?,
            server: c.text(rec, v).to_string(),
            state: state.to_string(),
        });
        Ok(())
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_written_is_read_back_and_damage_is_named() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path()).unwrap_err().is_missing());
        let rows = vec![
            HealthRow {
                wall_ns: 5,
                server: "replica-1".into(),
                state: "DOWN".into(),
            },
            HealthRow {
                wall_ns: 9,
                server: "replica-1".into(),
                state: "UP".into(),
            },
        ];
        std::fs::write(dir.path().join(HEALTH_CSV), render(&rows)).unwrap();
        assert_eq!(read(dir.path()).unwrap(), rows);
        std::fs::write(
            dir.path().join(HEALTH_CSV),
            "wall_ns,server,state\n5,replica-1,MAINT\n",
        )
        .unwrap();
        let e = read(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("line 2, column `state`: `MAINT` is not UP or DOWN"),
            "{e}"
        );
    }

    #[test]
    fn rows_render_under_the_header() {
        let rows = [HealthRow {
            wall_ns: 5,
            server: "feed/r1".into(),
            state: "DOWN".into(),
        }];
        assert_eq!(render(&rows), "wall_ns,server,state\n5,feed/r1,DOWN\n");
    }
}
