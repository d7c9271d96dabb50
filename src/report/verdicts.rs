//! report.md's "Hypotheses" section: each hypothesis's verdict with every number it used
//! and the runs they came from, and the registered check beside an amended one.

use std::fmt::Write as _;

use feedbench_core::report::rows::number;
use feedbench_core::report::verdicts::compared::{Compared, Form};
use feedbench_core::report::verdicts::hypotheses::{
    HypothesisVerdict, AMENDED, AS_REGISTERED, REMOVED,
};
use feedbench_core::report::verdicts::{
    interval::Interval, show, CallValue, Evaluation, NOT_SUPPORTED, SUPPORTED, UNDECIDED,
};
use feedbench_core::report::StudyReport;

fn range(unit: &str, i: Interval) -> String {
    if i.lo == i.hi {
        show(unit, i.lo)
    } else if i.hi.is_infinite() && i.lo.is_finite() {
        format!("at least {}", show(unit, i.lo))
    } else {
        format!("[{}, {}]", show(unit, i.lo), show(unit, i.hi))
    }
}

fn call_line(out: &mut String, c: &CallValue) {
    let runs = c
        .rows
        .iter()
        .map(|(run, v, unit, note)| {
            let v = v.map_or_else(|| "empty".to_string(), |v| format!("{} {unit}", number(v)));
            if note.is_empty() {
                format!("`{run}` {v}")
            } else {
                format!("`{run}` {v} ({note})")
            }
        })
        .collect::<Vec<_>>()
        .join(", ");
    let value = c
        .value
        .map_or_else(|| "–".to_string(), |v| range(c.unit, v));
    let _ = write!(out, "  - `{}` = {value}", c.text);
    if c.n > 0 {
        let _ = write!(out, " ({} of {}: {runs})", c.stat, c.n);
    }
    if let Some(i) = c.interval {
        let label = match c.confidence {
            Some(p) => format!(
                "{} % order-statistic interval",
                number((p * 1e3).round() / 10.0)
            ),
            None => "bootstrap interval (nominal 95 %)".to_string(),
        };
        let _ = write!(out, "; {label} {}", range(c.unit, i));
    }
    for p in &c.problems {
        let _ = write!(out, "; {p}");
    }
    out.push('\n');
}

fn verdict(e: &Evaluation) -> String {
    match e.interval {
        Some(i) => format!("**{}**; across the intervals: **{i}**", e.verdict),
        None => format!("**{}**", e.verdict),
    }
}

/// A comparison of two arms read through its interval: which, against what, and how it
/// came out.
fn compared_line(out: &mut String, e: &Evaluation, c: &Compared) {
    let unit = e
        .calls
        .iter()
        .find(|x| x.start >= c.start && x.end <= c.end)
        .map_or("", |x| x.unit);
    let (what, i, bound) = match c.form {
        Form::Ratio => (
            "ratio",
            format!("[{}, {}]", show("", c.interval.lo), show("", c.interval.hi)),
            show("", c.bound),
        ),
        Form::Difference => (
            "difference",
            format!(
                "[{}, {}]",
                show(unit, c.interval.lo),
                show(unit, c.interval.hi)
            ),
            show(unit, c.bound),
        ),
    };
    let _ = writeln!(
        out,
        "  - across the intervals, `{}` reads the two arms' comparison: the {what}'s {} % interval {i} ({}of the shift between the arms; never against the medians), against {bound}: **{}**",
        c.text,
        number((c.interval.confidence * 1e3).round() / 10.0),
        if c.paired { "paired by round, " } else { "" },
        match c.verdict {
            Some(true) => SUPPORTED,
            Some(false) => NOT_SUPPORTED,
            None => UNDECIDED,
        }
    );
}

fn evaluation(out: &mut String, label: &str, e: &Evaluation) {
    let _ = writeln!(out, "- {label} `{}`: {}", e.check, verdict(e));
    for c in &e.calls {
        call_line(out, c);
    }
    for c in &e.compared {
        compared_line(out, e, c);
    }
    for (text, why) in &e.fallbacks {
        let _ = writeln!(
            out,
            "  - across the intervals, `{text}` is left to interval arithmetic over its calls' intervals: {why}"
        );
    }
    for r in e.reasons.iter().filter(|r| !r.starts_with('`')) {
        let _ = writeln!(out, "  - {r}");
    }
}

fn one(out: &mut String, h: &HypothesisVerdict) {
    let _ = writeln!(out, "**{}** ({}). {}\n", h.id, h.standing, h.text);
    match &h.check {
        Some(e) => evaluation(out, "Check", e),
        None if h.standing == REMOVED => {}
        None => {
            let _ = writeln!(out, "- No check: the plan states this hypothesis in words only, so no verdict is computed.");
        }
    }
    if h.standing == AMENDED || h.standing == REMOVED {
        match (&h.registered_check, &h.registered) {
            (Some(_), Some(e)) => evaluation(out, "Registered check", e),
            _ => {
                let _ = writeln!(out, "- Registered with no check.");
            }
        }
    }
    out.push('\n');
}

/// The section, when the plan states hypotheses.
pub fn section(out: &mut String, report: &StudyReport) {
    if report.hypotheses.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Hypotheses\n");
    let _ = writeln!(out, "Each check is evaluated from metrics.csv as docs/analysis.md (\"Hypotheses' verdicts\") defines; a hypothesis amended after registration is shown with its registered check beside it.\n");
    let _ = writeln!(
        out,
        "| hypothesis | verdict | across the intervals | registered check |"
    );
    let _ = writeln!(out, "|---|---|---|---|");
    for h in &report.hypotheses {
        let (v, i) = h.check.as_ref().map_or(("no check", "–"), |e| {
            (e.verdict, e.interval.unwrap_or("–"))
        });
        let reg = match (&h.registered_check, &h.registered) {
            (_, Some(e)) => e.verdict.to_string(),
            (None, None) if h.standing == AS_REGISTERED => "the same".into(),
            _ => "none".into(),
        };
        let _ = writeln!(out, "| {} ({}) | {v} | {i} | {reg} |", h.id, h.standing);
    }
    out.push('\n');
    for h in &report.hypotheses {
        one(out, h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use feedbench_core::report::verdicts::compared::NOT_EXACT;

    #[test]
    fn a_comparison_left_to_interval_arithmetic_says_why() {
        let check = "saturation(a) >= 2 * saturation(b)";
        let e = Evaluation {
            which: "current".into(),
            check: check.into(),
            verdict: SUPPORTED,
            interval: Some(UNDECIDED),
            reasons: Vec::new(),
            calls: Vec::new(),
            compared: Vec::new(),
            fallbacks: vec![(check.into(), NOT_EXACT)],
        };
        let mut out = String::new();
        evaluation(&mut out, "Check", &e);
        assert!(
            out.contains(&format!(
                "  - across the intervals, `{check}` is left to interval arithmetic over its \
                 calls' intervals: {NOT_EXACT}\n"
            )),
            "{out}"
        );
    }
}
