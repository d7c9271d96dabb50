//! checks.json (what the twin is given) and the twin's verdicts.json, read back and compared
//! with the report's own verdicts: the verdicts and interval verdicts exactly, each
//! evaluable call's `n`, value and interval within metrics.csv's tolerance.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::compared::{Compared, Form};
use super::{Evaluation, Resolved, FORMAT_VERSION, NOT_SUPPORTED, SUPPORTED, UNDECIDED};
use crate::report::rows::{agree, Difference};

/// checks.json's file name in the twin's scratch directory.
pub const CHECKS_JSON: &str = "checks.json";
/// The twin's output.
pub const VERDICTS_JSON: &str = "verdicts.json";

#[derive(Serialize)]
struct ChecksFile<'a> {
    format_version: u32,
    checks: &'a [Resolved],
}

/// checks.json's text.
pub fn checks_json(checks: &[Resolved]) -> String {
    serde_json::to_string_pretty(&ChecksFile {
        format_version: FORMAT_VERSION,
        checks,
    })
    .unwrap_or_default()
}

#[derive(Debug, Deserialize)]
pub struct VerdictsFile {
    pub format_version: u32,
    pub verdicts: Vec<Theirs>,
}

/// One check's verdict as the twin has it.
#[derive(Debug, Deserialize)]
pub struct Theirs {
    pub hypothesis: String,
    pub which: String,
    pub verdict: String,
    pub interval: Option<String>,
    pub calls: Vec<TheirCall>,
    /// The comparisons of two arms read through their comparison's interval.
    pub compared: Vec<TheirCompared>,
}

/// A comparison of two arms as the twin read it.
#[derive(Debug, Deserialize)]
pub struct TheirCompared {
    pub start: usize,
    pub end: usize,
    pub form: String,
    pub paired: bool,
    pub low: f64,
    pub high: f64,
    pub confidence: f64,
    pub verdict: String,
}

#[derive(Debug, Deserialize)]
pub struct TheirCall {
    pub start: usize,
    pub end: usize,
    pub evaluable: bool,
    pub n: usize,
    pub low: Value,
    pub high: Value,
    pub ci_low: Value,
    pub ci_high: Value,
    /// A median interval's exact coverage; null for a mean's bootstrap or no interval.
    pub confidence: Value,
}

#[derive(Debug, thiserror::Error)]
pub enum TwinFileError {
    #[error("`{file}`: {message}")]
    Invalid { file: String, message: String },
}

/// Reads the twin's verdicts.json.
pub fn read(file: &str, text: &str) -> Result<Vec<Theirs>, TwinFileError> {
    let bad = |message: String| TwinFileError::Invalid {
        file: file.to_string(),
        message,
    };
    let f: VerdictsFile =
        serde_json::from_str(text).map_err(|e| bad(format!("line {}: {e}", e.line())))?;
    if f.format_version != FORMAT_VERSION {
        return Err(bad(format!(
            "format_version {} (this feedbench reads {FORMAT_VERSION})",
            f.format_version
        )));
    }
    Ok(f.verdicts)
}

/// An end as the twin writes it: a number, `"+inf"`, `"-inf"`, or null.
fn end(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) if s == "+inf" => Some(f64::INFINITY),
        Value::String(s) if s == "-inf" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

fn same(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) if x.is_infinite() || y.is_infinite() => x == y,
        (Some(x), Some(y)) => agree("", x, y),
        (None, None) => true,
        _ => false,
    }
}

fn shown(v: Option<f64>) -> String {
    v.map_or("none".into(), |v| v.to_string())
}

/// A comparison's verdict as verdicts.json writes it.
fn verdict_of(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => SUPPORTED,
        Some(false) => NOT_SUPPORTED,
        None => UNDECIDED,
    }
}

/// Our comparisons of two arms against the twin's, by span: the same ones, each with the
/// same form, pairing and verdict, its interval and coverage within tolerance.
fn compare_compared(
    name: &str,
    ours: &[Compared],
    theirs: &[TheirCompared],
    diff: &mut impl FnMut(String, String, String),
) {
    for t in theirs {
        if !ours.iter().any(|c| c.start == t.start && c.end == t.end) {
            let row = format!("{name}: comparison at {}..{}", t.start, t.end);
            diff(row, "(none)".into(), "read through its interval".into());
        }
    }
    for c in ours {
        let row = |what: &str| format!("{name}: `{}` {what}", c.text);
        let Some(t) = theirs.iter().find(|t| t.start == c.start && t.end == c.end) else {
            diff(
                row("comparison"),
                "read through its interval".into(),
                "(none)".into(),
            );
            continue;
        };
        let form = match c.form {
            Form::Ratio => "ratio",
            Form::Difference => "difference",
        };
        let texts = [
            ("form", form.to_string(), t.form.clone()),
            ("paired", c.paired.to_string(), t.paired.to_string()),
            ("verdict", verdict_of(c.verdict).into(), t.verdict.clone()),
        ];
        for (what, a, b) in texts {
            if a != b {
                diff(row(what), a, b);
            }
        }
        let i = c.interval;
        for (what, a, b) in [
            ("low", i.lo, t.low),
            ("high", i.hi, t.high),
            ("confidence", i.confidence, t.confidence),
        ] {
            if !same(Some(a), Some(b)) {
                diff(row(what), shown(Some(a)), shown(Some(b)));
            }
        }
    }
}

/// Every disagreement between our evaluations (each with its hypothesis) and the twin's.
pub fn compare(ours: &[(&str, &Evaluation)], theirs: &[Theirs]) -> Vec<Difference> {
    let mut out = Vec::new();
    let mut diff = |row: String, a: String, b: String| {
        out.push(Difference {
            row,
            ours: a,
            theirs: b,
        })
    };
    for (h, e) in ours {
        let Some(t) = theirs
            .iter()
            .find(|t| t.hypothesis == *h && t.which == e.which)
        else {
            diff(
                format!("hypothesis {h} ({} check)", e.which),
                e.verdict.into(),
                "(no verdict)".into(),
            );
            continue;
        };
        let name = format!("hypothesis {h} ({} check)", e.which);
        if t.verdict != e.verdict {
            diff(
                format!("{name}: verdict"),
                e.verdict.into(),
                t.verdict.clone(),
            );
        }
        if t.interval.as_deref() != e.interval {
            diff(
                format!("{name}: across the intervals"),
                e.interval.unwrap_or("none").into(),
                t.interval.clone().unwrap_or("none".into()),
            );
        }
        compare_compared(&name, &e.compared, &t.compared, &mut diff);
        for c in &e.calls {
            let Some(tc) = t
                .calls
                .iter()
                .find(|x| x.start == c.start && x.end == c.end)
            else {
                diff(
                    format!("{name}: `{}`", c.text),
                    "a call".into(),
                    "(none)".into(),
                );
                continue;
            };
            let evaluable = c.value.is_some();
            if tc.evaluable != evaluable {
                diff(
                    format!("{name}: `{}` evaluable", c.text),
                    evaluable.to_string(),
                    tc.evaluable.to_string(),
                );
                continue;
            }
            if !evaluable {
                continue;
            }
            let pairs = [
                ("n", Some(c.n as f64), Some(tc.n as f64)),
                ("low", c.value.map(|v| v.lo), end(&tc.low)),
                ("high", c.value.map(|v| v.hi), end(&tc.high)),
                ("ci_low", c.interval.map(|v| v.lo), end(&tc.ci_low)),
                ("ci_high", c.interval.map(|v| v.hi), end(&tc.ci_high)),
                ("confidence", c.confidence, end(&tc.confidence)),
            ];
            for (what, a, b) in pairs {
                if !same(a, b) {
                    diff(format!("{name}: `{}` {what}", c.text), shown(a), shown(b));
                }
            }
        }
    }
    for t in theirs {
        if !ours
            .iter()
            .any(|(h, e)| *h == t.hypothesis && e.which == t.which)
        {
            diff(
                format!("hypothesis {} ({} check)", t.hypothesis, t.which),
                "(no verdict)".into(),
                t.verdict.clone(),
            );
        }
    }
    out
}
