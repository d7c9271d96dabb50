//! report.md's comparisons of arms: one sentence per pair and figure, never a bare winner
//! and never "no difference" (docs/analysis.md, "Comparisons").

use std::fmt::Write as _;

use feedbench_core::report::comparison::{
    exact::ShiftInterval, Comparison, Family, Finding, ALPHA,
};
use feedbench_core::report::rows::number;

/// A figure rounded for reading: 3 significant digits or so.
fn short(v: f64) -> String {
    let digits = if v.abs() >= 100.0 {
        1
    } else if v.abs() >= 1.0 {
        2
    } else {
        4
    };
    let f = 10f64.powi(digits);
    number((v * f).round() / f)
}

fn percent(p: f64) -> String {
    format!("{} %", short(p * 100.0))
}

fn interval(what: &str, point: Option<f64>, i: Option<ShiftInterval>) -> Option<String> {
    let i = i?;
    let point = point.map_or_else(String::new, |p| format!(" {}", short(p)));
    Some(format!(
        "{what}{point} [{}, {}] ({})",
        short(i.lo),
        short(i.hi),
        percent(i.confidence)
    ))
}

/// The figures a comparison rests on: the ratio and difference of medians with their
/// intervals, the test and its p-values.
fn evidence(c: &Comparison) -> String {
    let ratio = c
        .median_a
        .zip(c.median_b)
        .and_then(|(a, b)| (b != 0.0).then(|| a / b));
    let difference = c.median_a.zip(c.median_b).map(|(a, b)| a - b);
    let mut parts: Vec<String> = [
        interval("ratio", ratio, c.ratio),
        interval("difference", difference, c.difference),
    ]
    .into_iter()
    .flatten()
    .collect();
    if let (Some(p), Some(adjusted)) = (c.p, c.adjusted) {
        parts.push(format!(
            "p = {}, Holm-adjusted {} ({}, {} and {} repetitions)",
            short(p),
            short(adjusted),
            if c.paired {
                "exact signed-rank test, paired by round"
            } else {
                "exact rank-sum test"
            },
            c.n_a,
            c.n_b
        ));
    }
    parts.join("; ")
}

/// One comparison in words.
pub fn sentence(c: &Comparison) -> String {
    let figure = if c.fault.is_empty() {
        format!("{} on {}", c.metric, c.profile)
    } else {
        format!("{} on {}+{}", c.metric, c.profile, c.fault)
    };
    let finding = match &c.finding {
        Finding::Higher { higher } => {
            let lower = if *higher == c.a { &c.b } else { &c.a };
            format!("{higher} higher than {lower}")
        }
        Finding::NotShown => format!("{} against {}: no difference shown, none ruled out", c.a, c.b),
        Finding::CannotBeShown { n, needed, level } => format!(
            "{} against {}: cannot be shown with n = {n} (the exact test's smallest p, {}, is above the level {} Holm held it to); {needed} repetitions each could",
            c.a,
            c.b,
            short(c.p_min.unwrap_or(1.0)),
            short(*level)
        ),
        Finding::NotTestable { why } => format!("{} against {}: not testable ({why})", c.a, c.b),
    };
    let evidence = evidence(c);
    if evidence.is_empty() {
        format!("- {figure}: {finding}")
    } else {
        format!("- {figure}: {finding}: {evidence}")
    }
}

/// The section's comparisons, with what they are and how each family is held: the pairs
/// the hypotheses' checks compare first, then the exploratory rest.
pub fn section(out: &mut String, comparisons: &[Comparison]) {
    if comparisons.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "Comparisons of arms on each headline figure (comparisons.csv has every figure), in two families each Holm-adjusted to a family-wise {}: the pairs a hypothesis's check compares, registered before the runs, and the exploratory rest. A difference is claimed only where the adjusted p is within it; otherwise none is shown and none ruled out. Intervals are of the shift between arms, each with its exact coverage (docs/analysis.md, \"Comparisons\").\n",
        percent(ALPHA)
    );
    for (family, title) in [
        (Family::Hypotheses, "The hypotheses' comparisons"),
        (Family::Exploratory, "Exploratory comparisons"),
    ] {
        let members: Vec<&Comparison> = comparisons.iter().filter(|c| c.family == family).collect();
        if members.is_empty() {
            continue;
        }
        let tested = members.iter().filter(|c| c.p.is_some()).count();
        let _ = writeln!(out, "{title} ({tested} tested in the family):\n");
        for c in members {
            let _ = writeln!(out, "{}", sentence(c));
        }
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use feedbench_core::report::comparison::of_rows;
    use feedbench_core::report::rows::{Row, RunKey};

    fn row(variant: &str, rep: u32, v: f64) -> Row {
        Row {
            key: RunKey {
                run: format!("x.{variant}/ramp/r{rep}"),
                contender: "x".into(),
                variant: variant.into(),
                profile: "ramp".into(),
                fault: String::new(),
                repetition: rep,
            },
            step_rate: None,
            second: None,
            container: String::new(),
            definition: String::new(),
            metric: "latency_p99".into(),
            value: Some(v),
            unit: "ms".into(),
            note: String::new(),
        }
    }

    #[test]
    fn three_repetitions_read_as_what_they_cannot_show() {
        let rows: Vec<Row> = (1..=3)
            .flat_map(|r| [row("a", r, 100.0 + r as f64), row("b", r, 10.0 + r as f64)])
            .collect();
        let mut out = String::new();
        section(&mut out, &of_rows(&rows, false, &Default::default()));
        eprintln!("{out}");
        assert!(
            out.contains("x.a against x.b: cannot be shown with n = 3"),
            "{out}"
        );
        assert!(out.contains("4 repetitions each could"), "{out}");
        assert!(out.contains("ratio 8.5 [7.77, 9.36] (90 %)"), "{out}");
        assert!(!out.contains("no difference:"), "{out}");
        // Seven repetitions each, every a above every b: found.
        let rows: Vec<Row> = (1..=7)
            .flat_map(|r| [row("a", r, 100.0 + r as f64), row("b", r, 10.0 + r as f64)])
            .collect();
        let c = &of_rows(&rows, false, &Default::default())[0];
        assert!(
            sentence(c).starts_with("- latency_p99 on ramp: x.a higher than x.b: ratio"),
            "{}",
            sentence(c)
        );
    }
}
