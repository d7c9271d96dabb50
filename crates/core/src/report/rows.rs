//! metrics.csv's tidy rows: one value per row with what it is about, written and read
//! back (the twin's rows are compared with the report's through this one type).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::rundir::samples::text as field;

/// metrics.csv's columns, in order.
pub const COLUMNS: [&str; 14] = [
    "run",
    "contender",
    "variant",
    "profile",
    "fault",
    "repetition",
    "step_rate",
    "second",
    "container",
    "definition",
    "metric",
    "value",
    "unit",
    "note",
];

/// Why a value is empty (docs/analysis.md, "Empty values").
pub const NONE: &str = "none";
pub const NOT_REACHED: &str = "not reached";
/// A ramp stopped at its knee before a definition breached: its saturation is a lower bound
/// cut short by the stop.
pub const CENSORED: &str = "censored at the stop";
/// A ramp whose first step already broke the definition: its saturation is below that
/// step's rate (an upper bound), which the row's value holds.
pub const BELOW_FIRST_STEP: &str = "below the first step";
pub const NOT_OBSERVED: &str = "not observed";
pub const NOT_RECOVERED: &str = "not recovered";
pub const NOT_APPLICABLE: &str = "not applicable";
/// A figure its run has no file for (recorded before it was measured, or the measuring
/// failed, which the run's warnings say).
pub const NOT_RECORDED: &str = "not recorded";

/// What a run's rows share.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunKey {
    pub run: String,
    pub contender: String,
    pub variant: String,
    pub profile: String,
    pub fault: String,
    pub repetition: u32,
}

/// One value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    #[serde(flatten)]
    pub key: RunKey,
    pub step_rate: Option<f64>,
    pub second: Option<u64>,
    pub container: String,
    pub definition: String,
    pub metric: String,
    pub value: Option<f64>,
    pub unit: String,
    /// Why `value` is empty; empty when it is not, unless the value is only a bound
    /// ([`Row::bound`]).
    pub note: String,
}

/// What a row's value is: the figure itself, or only a bound on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    Exact,
    /// A saturation not reached or censored at the stop: at least the value.
    AtLeast,
    /// A saturation below the first step: at most the value.
    AtMost,
}

/// A number as metrics.csv writes it: up to 9 decimals, trailing zeros removed.
pub fn number(v: f64) -> String {
    let mut s = format!("{v:.9}");
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
    if s == "-0" {
        s = "0".into();
    }
    s
}

impl Row {
    /// Whether the value is exact or a bound. Only a value kept beside a note is a bound
    /// (`Out::noted`); every other value's note is empty.
    pub fn bound(&self) -> Bound {
        match self.note.as_str() {
            "" => Bound::Exact,
            BELOW_FIRST_STEP => Bound::AtMost,
            _ => Bound::AtLeast,
        }
    }

    /// Appends the row's CSV line.
    pub fn write_csv(&self, out: &mut String) {
        let k = &self.key;
        for s in [&k.run, &k.contender, &k.variant, &k.profile, &k.fault] {
            field(out, s);
            out.push(',');
        }
        let _ = write!(out, "{},", k.repetition);
        if let Some(r) = self.step_rate {
            out.push_str(&number(r));
        }
        out.push(',');
        if let Some(s) = self.second {
            let _ = write!(out, "{s}");
        }
        out.push(',');
        for s in [&self.container, &self.definition, &self.metric] {
            field(out, s);
            out.push(',');
        }
        if let Some(v) = self.value {
            out.push_str(&number(v));
        }
        out.push(',');
        field(out, &self.unit);
        out.push(',');
        field(out, &self.note);
        out.push('\n');
    }

    /// The columns that say what the value is: every column but value, unit and note.
    pub fn identity(&self) -> String {
        let k = &self.key;
        format!(
            "{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}",
            k.run,
            k.contender,
            k.variant,
            k.profile,
            k.fault,
            k.repetition,
            self.step_rate.map(number).unwrap_or_default(),
            self.second.map(|s| s.to_string()).unwrap_or_default(),
            self.container,
            self.definition,
            self.metric
        )
    }
}

/// The whole of metrics.csv.
pub fn render(rows: &[Row]) -> String {
    let mut out = COLUMNS.join(",");
    out.push('\n');
    for r in rows {
        r.write_csv(&mut out);
    }
    out
}

#[derive(Debug, thiserror::Error)]
pub enum RowsError {
    #[error("cannot read `{path}`: {message}")]
    Read { path: PathBuf, message: String },
    #[error("`{path}` line {line}: {message}")]
    Bad {
        path: PathBuf,
        line: u64,
        message: String,
    },
}

impl RowsError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            RowsError::Read { path, .. } | RowsError::Bad { path, .. } => path,
        }
    }
}

/// Reads a metrics.csv (the report's or the twin's) back into rows.
pub fn read(path: &Path) -> Result<Vec<Row>, RowsError> {
    let read_err = |m: String| RowsError::Read {
        path: path.to_path_buf(),
        message: m,
    };
    // A link or a pipe where the report's metrics.csv should be is refused, not followed.
    let file = crate::confine::open(path).map_err(|e| read_err(e.to_string()))?;
    let mut reader = csv::Reader::from_reader(std::io::BufReader::new(file));
    let header = reader
        .headers()
        .map_err(|e| read_err(e.to_string()))?
        .clone();
    if header.iter().collect::<Vec<_>>() != COLUMNS {
        return Err(RowsError::Bad {
            path: path.to_path_buf(),
            line: 1,
            message: format!("the header is not `{}`", COLUMNS.join(",")),
        });
    }
    let mut out = Vec::new();
    for rec in reader.records() {
        let rec = rec.map_err(|e| read_err(e.to_string()))?;
        let line = rec.position().map_or(0, |p| p.line());
        let bad = |column: &str, v: &str| RowsError::Bad {
            path: path.to_path_buf(),
            line,
            message: format!("`{v}` in column `{column}` is not a number"),
        };
        let opt = |i: usize| -> Result<Option<f64>, RowsError> {
            let t = &rec[i];
            if t.is_empty() {
                Ok(None)
            } else {
                t.parse().map(Some).map_err(|_| bad(COLUMNS[i], t))
            }
        };
        out.push(Row {
            key: RunKey {
                run: rec[0].into(),
                contender: rec[1].into(),
                variant: rec[2].into(),
                profile: rec[3].into(),
                fault: rec[4].into(),
                repetition: rec[5].parse().map_err(|_| bad("repetition", &rec[5]))?,
            },
            step_rate: opt(6)?,
            second: opt(7)?.map(|s| s as u64),
            container: rec[8].into(),
            definition: rec[9].into(),
            metric: rec[10].into(),
            value: opt(11)?,
            unit: rec[12].into(),
            note: rec[13].into(),
        });
    }
    Ok(out)
}

/// One disagreement between two sets of rows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    pub row: String,
    pub ours: String,
    pub theirs: String,
}

fn shown(r: Option<&Row>) -> String {
    match r {
        None => "(no row)".into(),
        Some(r) => match (r.value, r.note.is_empty()) {
            (Some(v), true) => format!("{} {}", number(v), r.unit),
            (Some(v), false) => format!("{} {} ({})", number(v), r.unit, r.note),
            (None, _) => format!("(empty: {})", r.note),
        },
    }
}

/// Whether two values agree: counts exactly, everything else within 1e-6 relative or 1e-9
/// absolute.
pub fn agree(unit: &str, a: f64, b: f64) -> bool {
    if unit == "count" {
        return a == b;
    }
    let d = (a - b).abs();
    d <= 1e-9 || d <= 1e-6 * a.abs().max(b.abs())
}

/// Every row present on one side only, or whose value, unit or note differ.
pub fn compare(ours: &[Row], theirs: &[Row]) -> Vec<Difference> {
    let index = |rows: &[Row]| -> BTreeMap<String, Row> {
        rows.iter().map(|r| (r.identity(), r.clone())).collect()
    };
    let (a, b) = (index(ours), index(theirs));
    let mut out = Vec::new();
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    for k in keys {
        let (x, y) = (a.get(k), b.get(k));
        let same = match (x, y) {
            (Some(x), Some(y)) => {
                x.unit == y.unit
                    && x.note == y.note
                    && match (x.value, y.value) {
                        (Some(p), Some(q)) => agree(&x.unit, p, q),
                        (None, None) => true,
                        _ => false,
                    }
            }
            _ => false,
        };
        if !same {
            out.push(Difference {
                row: k.replace('|', " "),
                ours: shown(x),
                theirs: shown(y),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(metric: &str, value: Option<f64>, unit: &str, note: &str) -> Row {
        Row {
            key: RunKey {
                run: "s/ramp/r1".into(),
                contender: "s".into(),
                variant: String::new(),
                profile: "ramp".into(),
                fault: String::new(),
                repetition: 1,
            },
            step_rate: Some(10.0),
            second: None,
            container: String::new(),
            definition: "p99-only".into(),
            metric: metric.into(),
            value,
            unit: unit.into(),
            note: note.into(),
        }
    }

    #[test]
    fn numbers_keep_nine_decimals_without_trailing_zeros() {
        assert_eq!(number(12.0), "12");
        assert_eq!(number(0.25), "0.25");
        assert_eq!(number(std::f64::consts::PI), "3.141592654");
        assert_eq!(number(-0.0000000001), "0");
    }

    #[test]
    fn rows_read_back_as_written_and_compare_by_identity() {
        let dir = tempfile::tempdir().unwrap();
        let rows = vec![
            row("saturation", Some(30.0), "1/s", ""),
            row("first_breach", None, "1/s", NOT_REACHED),
        ];
        let path = dir.path().join("metrics.csv");
        std::fs::write(&path, render(&rows)).unwrap();
        let back = read(&path).unwrap();
        assert_eq!(back, rows);
        assert!(compare(&rows, &back).is_empty());
        let mut changed = back.clone();
        changed[0].value = Some(30.001);
        changed[1].note = NONE.into();
        let d = compare(&rows, &changed);
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d
            .iter()
            .any(|d| d.ours == "30 1/s" && d.theirs == "30.001 1/s"));
        assert_eq!(compare(&rows, &changed[..1]).len(), 2);
    }

    #[test]
    fn counts_agree_exactly_and_times_to_a_millionth() {
        assert!(agree("s", 12.0, 12.000001));
        assert!(!agree("s", 12.0, 12.0001));
        assert!(!agree("count", 3.0, 3.0000001));
        assert!(agree("ms", 0.0, 1e-10));
    }
}
