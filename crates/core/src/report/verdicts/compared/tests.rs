//! The comparison forms a check is read through, and their verdicts from the two arms'
//! values.

use super::*;
use crate::plan::check::parse::parse;
use crate::report::verdicts::interval::Interval;

fn found(src: &str) -> Vec<(String, Form, f64, CmpOp)> {
    let mut out = Vec::new();
    atoms(&parse(src).unwrap(), &mut out);
    out.into_iter()
        .map(|a| (src[a.a.start..a.a.end].to_string(), a.form, a.bound, a.op))
        .collect()
}

#[test]
fn the_forms_are_found_either_way_round_and_nothing_else() {
    let r = "saturation(x.a) >= 5 * saturation(x.b) and saturation(y.a) >= saturation(y.b) * 5";
    assert_eq!(
        found(r),
        [
            ("saturation(x.a)".into(), Form::Ratio, 5.0, CmpOp::Ge),
            ("saturation(y.a)".into(), Form::Ratio, 5.0, CmpOp::Ge),
        ]
    );
    // Bare: a difference against 0, which zeros among the values do not stop.
    assert_eq!(
        found("failed(x.a) < failed(x.b)"),
        [("failed(x.a)".into(), Form::Difference, 0.0, CmpOp::Lt)]
    );
    // Mirrored: `k · b < a` is `a > k · b`.
    assert_eq!(
        found("5 * p99(x.b) < p99(x.a)"),
        [("p99(x.a)".into(), Form::Ratio, 5.0, CmpOp::Gt)]
    );
    assert_eq!(
        found("p99(x.a) <= p99(x.b) + 50ms"),
        [("p99(x.a)".into(), Form::Difference, 0.05, CmpOp::Le)]
    );
    assert_eq!(
        found("not (p99(x.a) <= p99(x.b) - 2ms)"),
        [("p99(x.a)".into(), Form::Difference, -0.002, CmpOp::Le)]
    );
    // Interval arithmetic stays: a literal bound, a scale with a unit, a sum of two calls,
    // an equality, a constant minus a call.
    for other in [
        "p99(x.a) < 5ms",
        "p99(x.a) < 2ms * p99(x.b)",
        "p99(x.a) < p99(x.b) + p99(x.c)",
        "p99(x.a) == p99(x.b)",
        "p99(x.a) < 5ms - p99(x.b)",
    ] {
        assert_eq!(found(other), [], "{other}");
    }
}

/// A median call over `values` (base units), repetitions 1, 2, …, spanning `start..end`.
fn call(start: usize, end: usize, values: &[f64]) -> CallValue {
    CallValue {
        start,
        end,
        text: String::new(),
        stat: "median".into(),
        unit: "s",
        n: values.len(),
        value: crate::report::summary::median(values).map(Interval::point),
        interval: None,
        confidence: None,
        rows: Vec::new(),
        problems: Vec::new(),
        exact: Some(
            values
                .iter()
                .enumerate()
                .map(|(i, v)| (i as u32 + 1, *v))
                .collect(),
        ),
    }
}

#[test]
fn a_ratio_and_a_difference_are_decided_by_their_interval() {
    let src = "p99(x.a) >= 2 * p99(x.b)";
    let mut atoms_found = Vec::new();
    atoms(&parse(src).unwrap(), &mut atoms_found);
    let [atom] = atoms_found.try_into().unwrap();
    // a is 3× b in every round, round effects shared: paired, the ratio is exactly 3.
    let b = [1.0, 2.0, 1.5, 1.2, 1.8];
    let a: Vec<f64> = b.iter().map(|x| 3.0 * x).collect();
    let calls = [
        call(atom.a.start, atom.a.end, &a),
        call(atom.b.start, atom.b.end, &b),
    ];
    let c = read(src, &atom, &calls, true).unwrap();
    assert!(c.paired && c.interval.lo == c.interval.hi, "{c:?}");
    assert!((c.interval.lo - 3.0).abs() < 1e-12);
    assert_eq!((c.verdict, c.interval.confidence), (Some(true), 0.9375));
    // Unpaired, the round effects stay in: the ratio's interval reaches below 2.
    let c = read(src, &atom, &calls, false).unwrap();
    assert!(
        !c.paired && c.interval.lo < 2.0 && c.interval.hi > 2.0,
        "{c:?}"
    );
    assert_eq!(c.verdict, None);
    // A bound among the values: interval arithmetic decides.
    let mut bounded = calls.clone();
    bounded[1].exact = None;
    assert_eq!(read(src, &atom, &bounded, true), Err(NOT_EXACT));
    // A mean is not a median: no shift interval speaks for it.
    let mut means = calls.clone();
    means[0].stat = "mean".into();
    assert_eq!(read(src, &atom, &means, true), Err(NOT_MEDIANS));
    // A zero among the values: no ratio.
    let mut zero = calls.clone();
    zero[1] = call(atom.b.start, atom.b.end, &[0.0, 2.0, 1.5, 1.2, 1.8]);
    assert_eq!(read(src, &atom, &zero, true), Err(NOT_POSITIVE));
    // A difference: a − b is 40–60 ms in every round, against + 50 ms.
    let src = "p99(x.a) <= p99(x.b) + 50ms";
    let mut atoms_found = Vec::new();
    atoms(&parse(src).unwrap(), &mut atoms_found);
    let [atom] = atoms_found.try_into().unwrap();
    let b = [0.1, 0.2, 0.3, 0.4, 0.5];
    let a: Vec<f64> = b
        .iter()
        .zip([0.04, 0.05, 0.06, 0.045, 0.055])
        .map(|(x, d)| x + d)
        .collect();
    let calls = [
        call(atom.a.start, atom.a.end, &a),
        call(atom.b.start, atom.b.end, &b),
    ];
    let c = read(src, &atom, &calls, true).unwrap();
    assert_eq!(c.form, Form::Difference);
    assert!(c.interval.lo < 0.05 && c.interval.hi > 0.05, "{c:?}");
    assert_eq!(c.verdict, None);
}

/// A resolved check whose calls read `figures` (arm, profile), in order of appearance.
fn resolved(check: &str, figures: &[(&str, &str)]) -> Resolved {
    use crate::plan::check::Dim;
    use crate::report::verdicts::{Call, Figure};
    let spans = parse(check).unwrap().call_spans();
    let calls = spans
        .iter()
        .zip(figures)
        .map(|(s, (arm, profile))| Call {
            start: s.start,
            end: s.end,
            stat: "median".into(),
            dim: Dim::Time,
            rows: Vec::new(),
            figure: Some(Figure {
                metric: "latency_p99".into(),
                profile: profile.to_string(),
                arm: arm.to_string(),
                ..Default::default()
            }),
            not_standing: Vec::new(),
        })
        .collect();
    Resolved {
        hypothesis: "H1".into(),
        which: "current".into(),
        check: check.into(),
        unresolved: None,
        registered: true,
        calls,
    }
}

#[test]
fn the_pairs_a_check_compares_are_registered_in_byte_order() {
    let r = resolved(
        "p99(x.b) <= p99(x.a) + 5ms and p99(x.a) < 20ms and p99(x.c) < p99(x.a, profile: other)",
        &[
            ("x.b", "ramp"),
            ("x.a", "ramp"),
            ("x.a", "ramp"),
            ("x.c", "ramp"),
            ("x.a", "other"),
        ],
    );
    let mut added = r.clone();
    added.registered = false;
    assert!(
        registered_pairs(&[added]).is_empty(),
        "an added check registers nothing"
    );
    let pairs = registered_pairs(&[r]);
    let found: Vec<_> = pairs
        .iter()
        .map(|p| (p.a.as_str(), p.b.as_str(), p.profile.as_str()))
        .collect();
    // The literal bound registers nothing, nor two calls on different profiles.
    assert_eq!(found, [("x.a", "x.b", "ramp")]);
}

/// The one atom of `src`, and its two calls over `a` and `b`.
fn setup(src: &str, a: &[f64], b: &[f64]) -> (Atom, [CallValue; 2]) {
    let mut found = Vec::new();
    atoms(&parse(src).unwrap(), &mut found);
    let [atom] = found.try_into().unwrap();
    let calls = [
        call(atom.a.start, atom.a.end, a),
        call(atom.b.start, atom.b.end, b),
    ];
    (atom, calls)
}

#[test]
fn an_exact_multiple_is_the_bound_not_the_last_bit_beyond_it() {
    // a = 3·b in every round: ln and exp give 3.0000000000000004, which is 3.
    let b = [10.0, 20.0, 15.0, 12.0, 18.0];
    let a: Vec<f64> = b.iter().map(|x| 3.0 * x).collect();
    let src = "saturation(x.a) <= 3 * saturation(x.b)";
    let (atom, calls) = setup(src, &a, &b);
    let c = read(src, &atom, &calls, true).unwrap();
    assert_eq!(
        (c.interval.lo, c.interval.hi, c.verdict),
        (3.0, 3.0, Some(true))
    );
}

#[test]
fn the_interval_never_claims_against_the_medians() {
    // Seven rounds whose ratios centre above 1 while the medians are 1.610 against 1.612:
    // the check on the medians says no, so the interval's yes is undecided.
    let a = [1.562, 2.987, 1.286, 1.61, 1.755, 1.508, 2.39];
    let b = [1.045, 1.98, 1.041, 1.612, 1.694, 1.393, 1.7];
    let src = "p99(x.a) > 1 * p99(x.b)";
    let (atom, calls) = setup(src, &a, &b);
    let c = read(src, &atom, &calls, true).unwrap();
    assert!(c.interval.lo > 1.0, "{c:?}");
    assert_eq!(c.verdict, None);
}
