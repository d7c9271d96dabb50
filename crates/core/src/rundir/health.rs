//! `health.csv`: the balancer's server state changes, taken from HAProxy's own timestamped
//! log (the 1 Hz stats in balancer.csv only bound them to the second). One row per change.

use std::fmt::Write as _;

/// The header line, with its newline.
pub const HEADER: &str = "wall_ns,server,state\n";

/// One change of one server's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthRow {
    /// Unix ns, from the engine's timestamp on the log line.
    pub wall_ns: i128,
    /// `<backend>/<server>`, as HAProxy names it.
    pub server: String,
    /// `UP` or `DOWN`.
    pub state: String,
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

#[cfg(test)]
mod tests {
    use super::*;

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
