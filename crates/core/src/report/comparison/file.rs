//! comparisons.csv: the report's family of comparisons, one per line, as the twin writes
//! it too; and the check of the twin's file against ours (docs/results.md).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{Comparison, Finding};
use crate::report::rows::{number, Difference};

/// comparisons.csv's columns.
pub const COLUMNS: [&str; 28] = [
    "metric",
    "definition",
    "container",
    "profile",
    "fault",
    "a",
    "b",
    "n_a",
    "n_b",
    "paired",
    "median_a",
    "median_b",
    "difference_low",
    "difference_high",
    "difference_confidence",
    "ratio_low",
    "ratio_high",
    "ratio_confidence",
    "p",
    "p_min",
    "p_adjusted",
    "finding",
    "higher",
    "n",
    "needed",
    "level",
    "why",
    "family",
];

/// A comparison's cells, in [`COLUMNS`]' order.
fn cells(c: &Comparison) -> Vec<String> {
    let opt = |v: Option<f64>| v.map(number).unwrap_or_default();
    let (finding, higher, n, needed, level, why) = match &c.finding {
        Finding::Higher { higher } => ("higher", higher.clone(), None, None, None, ""),
        Finding::NotShown => ("not-shown", String::new(), None, None, None, ""),
        Finding::CannotBeShown { n, needed, level } => (
            "cannot-be-shown",
            String::new(),
            Some(*n),
            Some(*needed),
            Some(*level),
            "",
        ),
        Finding::NotTestable { why } => (
            "not-testable",
            String::new(),
            None,
            None,
            None,
            why.as_str(),
        ),
    };
    let mut out = vec![
        c.metric.clone(),
        c.definition.clone(),
        c.container.clone(),
        c.profile.clone(),
        c.fault.clone(),
        c.a.clone(),
        c.b.clone(),
        c.n_a.to_string(),
        c.n_b.to_string(),
        u8::from(c.paired).to_string(),
        opt(c.median_a),
        opt(c.median_b),
    ];
    for i in [c.difference, c.ratio] {
        out.extend([
            opt(i.map(|i| i.lo)),
            opt(i.map(|i| i.hi)),
            opt(i.map(|i| i.confidence)),
        ]);
    }
    out.extend([opt(c.p), opt(c.p_min), opt(c.adjusted)]);
    out.extend([
        finding.to_string(),
        higher,
        n.map(|n| n.to_string()).unwrap_or_default(),
        needed.map(|n| n.to_string()).unwrap_or_default(),
        opt(level),
        why.to_string(),
        c.family.cell().to_string(),
    ]);
    out
}

/// A cell as CSV writes it: quoted when it holds a comma, a quote or a line break.
fn quoted(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The whole of comparisons.csv.
pub fn render(family: &[Comparison]) -> String {
    let mut out = COLUMNS.join(",");
    out.push('\n');
    for c in family {
        let line: Vec<String> = cells(c).iter().map(|s| quoted(s)).collect();
        let _ = writeln!(out, "{}", line.join(","));
    }
    out
}

/// The columns that are numbers (compared within metrics.csv's tolerance), the rest as text.
fn numeric(column: &str) -> bool {
    !matches!(
        column,
        "metric"
            | "definition"
            | "container"
            | "profile"
            | "fault"
            | "a"
            | "b"
            | "finding"
            | "higher"
            | "why"
            | "family"
    )
}

/// Reads a comparisons.csv (ours as written, or the twin's) into its lines by
/// `(metric, definition, container, profile, fault, a, b)`.
fn lines(file: &str, text: &str) -> Result<BTreeMap<String, BTreeMap<String, String>>, String> {
    let mut reader = csv::ReaderBuilder::new().from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| format!("`{file}`: {e}"))?
        .iter()
        .map(str::to_owned)
        .collect();
    if header != COLUMNS {
        return Err(format!(
            "`{file}`: its header is not comparisons.csv's: {header:?}"
        ));
    }
    let mut out = BTreeMap::new();
    for (i, record) in reader.records().enumerate() {
        let record = record.map_err(|e| format!("`{file}` line {}: {e}", i + 2))?;
        let row: BTreeMap<String, String> = COLUMNS
            .iter()
            .zip(record.iter())
            .map(|(c, v)| (c.to_string(), v.to_string()))
            .collect();
        let key = COLUMNS[..7]
            .iter()
            .map(|c| row[*c].as_str())
            .collect::<Vec<_>>()
            .join(" ");
        out.insert(key, row);
    }
    Ok(out)
}

/// Every comparison on one side only, or whose cells differ (numbers beyond metrics.csv's
/// tolerance, text at all).
pub fn compare(ours: &str, theirs: &str) -> Result<Vec<Difference>, String> {
    let (ours, theirs) = (lines("ours", ours)?, lines("the twin's", theirs)?);
    let mut out = Vec::new();
    for key in ours
        .keys()
        .chain(theirs.keys().filter(|k| !ours.contains_key(*k)))
    {
        let (Some(a), Some(b)) = (ours.get(key), theirs.get(key)) else {
            out.push(Difference {
                row: format!("comparison {key}"),
                ours: if ours.contains_key(key) {
                    "present"
                } else {
                    "(none)"
                }
                .into(),
                theirs: if theirs.contains_key(key) {
                    "present"
                } else {
                    "(none)"
                }
                .into(),
            });
            continue;
        };
        for c in COLUMNS {
            let (x, y) = (&a[c], &b[c]);
            let same = match (numeric(c), x.parse::<f64>(), y.parse::<f64>()) {
                (true, Ok(x), Ok(y)) => crate::report::rows::agree("", x, y),
                _ => x == y,
            };
            if !same {
                out.push(Difference {
                    row: format!("comparison {key}: {c}"),
                    ours: x.clone(),
                    theirs: y.clone(),
                });
            }
        }
    }
    Ok(out)
}
