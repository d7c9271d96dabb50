//! The database links probed through the fault proxy once a second (`links.csv`; see
//! docs/results.md, "links.csv"): each probe opens a connection to the proxy's listener, as
//! the contender does, asks PostgreSQL the protocol's first question and times its one-byte
//! answer. A link's round trip before its fault against during it shows whether an added
//! latency reached the traffic, and a cut link's refused connections that the cut did
//! (`validity::link`). The one writer of the row and the one reader of the file are here.

use std::fmt::Write as _;
use std::path::Path;

use super::samples::text;
use super::table::{ReadError, Table};
use super::LINKS_CSV;

/// The columns of links.csv.
pub const LINKS_HEADER: &str = "unix_ns,offset_s,tick,link,outcome,round_trip_s,detail";

/// How one probe ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The answer came: `round_trip_s` is from the connect's start to the answer's byte.
    Ok,
    /// The connection was refused (nothing listened: a link taken down).
    Refused,
    /// The connection was reset, or closed before the answer.
    Closed,
    /// No answer within the probe's time.
    Timeout,
    /// Anything else (`detail` says what).
    Error,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Refused => "refused",
            Outcome::Closed => "closed",
            Outcome::Timeout => "timeout",
            Outcome::Error => "error",
        }
    }

    fn parse(s: &str) -> Option<Outcome> {
        [
            Outcome::Ok,
            Outcome::Refused,
            Outcome::Closed,
            Outcome::Timeout,
            Outcome::Error,
        ]
        .into_iter()
        .find(|o| o.as_str() == s)
    }
}

/// One probe of one link.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkRow {
    /// When the probe started, unix ns on the coordinator's clock.
    pub unix_ns: i128,
    pub offset_s: f64,
    pub tick: u64,
    /// The link's name in the plan (`topology.links`).
    pub link: String,
    pub outcome: Outcome,
    /// With `Ok` only.
    pub round_trip_ns: Option<u64>,
    pub detail: String,
}

impl LinkRow {
    /// Appends the row's CSV line, with its newline.
    pub fn write_csv(&self, out: &mut String) {
        let _ = write!(out, "{},{:.6},{},", self.unix_ns, self.offset_s, self.tick);
        text(out, &self.link);
        let _ = write!(out, ",{},", self.outcome.as_str());
        if let Some(ns) = self.round_trip_ns {
            let _ = write!(out, "{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000);
        }
        out.push(',');
        text(out, &self.detail);
        out.push('\n');
    }
}

/// What the probes of the faulted link showed (run.json's `link`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LinkFigures {
    pub link: String,
    /// The latency the fault added, ms; absent for a cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_ms: Option<f64>,
    /// Probes made before the fault and how many were answered, and their median round trip.
    pub probes_before: usize,
    pub answered_before: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_ms: Option<f64>,
    /// The same while the fault was on (`validity::link` bounds the span).
    pub probes_during: usize,
    pub answered_during: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub during_ms: Option<f64>,
    /// `during_ms − before_ms`: the round trip the fault added, as measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added_ms: Option<f64>,
}

/// links.csv's rows, in file order; `None` where the run has no such file (its links were
/// not probed).
pub fn read(dir: &Path) -> Result<Option<Vec<LinkRow>>, ReadError> {
    let mut t = match Table::open(dir, LINKS_CSV) {
        Ok(t) => t,
        Err(e) if e.is_missing() => return Ok(None),
        Err(e) => return Err(e),
    };
    let cols = [
        t.column("unix_ns")?,
        t.column("offset_s")?,
        t.column("tick")?,
        t.column("link")?,
        t.column("outcome")?,
        t.column("round_trip_s")?,
        t.column("detail")?,
    ];
    let mut out = Vec::new();
    t.each(|rec, c| {
        let outcome_text = c.text(rec, cols[4]);
        let outcome = Outcome::parse(outcome_text).ok_or_else(|| {
            c.bad(
                "outcome",
                outcome_text,
                "one of ok, refused, closed, timeout, error",
            )
        })?;
        let round_trip = c.opt_non_negative(rec, cols[5], "round_trip_s", "a time of 0 or more")?;
        if round_trip.is_some() != (outcome == Outcome::Ok) {
            return Err(c.bad(
                "round_trip_s",
                c.text(rec, cols[5]),
                "a time with outcome ok, and empty with any other",
            ));
        }
        let tick = c.int(rec, cols[2], "tick")?;
        out.push(LinkRow {
            unix_ns: c.int(rec, cols[0], "unix_ns")?,
            offset_s: c.num(rec, cols[1], "offset_s")?,
            tick: u64::try_from(tick)
                .map_err(|_| c.bad("tick", c.text(rec, cols[2]), "a count of 0 or more"))?,
            link: c.text(rec, cols[3]).to_string(),
            outcome,
            round_trip_ns: round_trip.map(|s| (s * 1e9).round() as u64),
            detail: c.text(rec, cols[6]).to_string(),
        });
        Ok(())
    })?;
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(tick: u64, outcome: Outcome, round_trip_ns: Option<u64>) -> LinkRow {
        LinkRow {
            unix_ns: 1_700_000_000_000_000_000 + i128::from(tick) * 1_000_000_000,
            offset_s: tick as f64,
            tick,
            link: "db".into(),
            outcome,
            round_trip_ns,
            detail: if outcome == Outcome::Ok {
                String::new()
            } else {
                "connect: Connection refused (os error 111), at once".into()
            },
        }
    }

    #[test]
    fn rows_write_under_the_header_and_read_back_and_damage_is_named() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path()).unwrap().is_none());
        let rows = vec![
            row(0, Outcome::Ok, Some(1_250_000)),
            row(1, Outcome::Refused, None),
        ];
        let mut text = format!("{LINKS_HEADER}\n");
        for r in &rows {
            r.write_csv(&mut text);
        }
        assert!(text.contains(",db,ok,0.001250000,\n"), "{text}");
        assert!(
            text.contains(",db,refused,,\"connect: Connection refused"),
            "{text}"
        );
        std::fs::write(dir.path().join(LINKS_CSV), &text).unwrap();
        assert_eq!(read(dir.path()).unwrap().unwrap(), rows);

        for (from, to, says) in [
            (
                ",db,ok,",
                ",db,fine,",
                "line 2, column `outcome`: `fine` is not one of ok",
            ),
            (
                ",ok,0.001250000,",
                ",ok,,",
                "line 2, column `round_trip_s`: `` is not a time with outcome ok",
            ),
            (
                ",refused,,",
                ",refused,0.5,",
                "line 3, column `round_trip_s`: `0.5` is not a time with outcome ok",
            ),
            (
                "0.001250000",
                "-0.001250000",
                "line 2, column `round_trip_s`: `-0.001250000` is not a time of 0 or more",
            ),
        ] {
            assert_eq!(text.matches(from).count(), 1, "{from}");
            std::fs::write(dir.path().join(LINKS_CSV), text.replacen(from, to, 1)).unwrap();
            let e = read(dir.path()).unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        }
    }
}
