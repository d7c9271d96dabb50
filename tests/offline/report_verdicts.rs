//! Hypotheses' verdicts with known answers: tests/plans/valid/verdicts.yaml's checks on
//! synthetic metrics.csv rows give each verdict kind (supported, not supported, not
//! evaluable from a missing run and from a lower bound, undecided across the intervals),
//! and the twin, evaluating the same checks from the same rows by its own code, agrees.

use crate::common;

use std::collections::BTreeMap;

use common::repo;
use feedbench_core::plan::{load_str, validate::Context};
use feedbench_core::report::rows::{self, Row, RunKey};
use feedbench_core::report::verdicts::{twin, Evaluation, Standing};

const PLAN: &str = "tests/plans/valid/verdicts.yaml";
/// The run that does not stand.
const INVALID: &str = "slow/baseline+kill/r2";

fn row(
    run: &str,
    container: &str,
    definition: &str,
    metric: &str,
    value: f64,
    unit: &str,
    note: &str,
) -> Row {
    // `contender/profile[+fault]/rN`.
    let parts: Vec<&str> = run.split('/').collect();
    let (profile, fault) = parts[1].split_once('+').unwrap_or((parts[1], ""));
    let (contender, profile, fault) =
        (parts[0].to_string(), profile.to_string(), fault.to_string());
    let repetition = parts[2][1..].parse().unwrap();
    Row {
        key: RunKey {
            run: run.into(),
            contender,
            variant: String::new(),
            profile,
            fault,
            repetition,
        },
        step_rate: None,
        second: None,
        container: container.into(),
        definition: definition.into(),
        metric: metric.into(),
        value: Some(value),
        unit: unit.into(),
        note: note.into(),
    }
}

/// A run's container of a role, as its frame's caps would name it.
fn container(run: &str, role: &str) -> String {
    format!("fb-verdicts-{}-{role}", run.replace(['/', '+'], "_"))
}

/// Per repetition 1, 2, 3: the rows the checks read, and one they do not.
fn rows() -> Vec<Row> {
    let mut out = Vec::new();
    let reps = |v: [f64; 3]| v.into_iter().zip(1..=3);
    for (v, r) in reps([40.0, 40.0, 50.0]) {
        out.push(row(
            &format!("fast/ramp/r{r}"),
            "",
            "objective-windows",
            "saturation",
            v,
            "1/s",
            "",
        ));
        out.push(row(
            &format!("fast/ramp/r{r}"),
            "",
            "errors-only",
            "saturation",
            60.0,
            "1/s",
            "not reached",
        ));
    }
    // fast breaches at 50, 50 and 60/s; its database's rows at two steps each.
    for (v, r) in reps([50.0, 50.0, 60.0]) {
        let run = format!("fast/ramp/r{r}");
        out.push(row(
            &run,
            "",
            "objective-windows",
            "first_breach",
            v,
            "1/s",
            "",
        ));
        let db = container(&run, "database");
        for (step, cpu) in [(v - 10.0, 70.0), (v, 95.0)] {
            let mut x = row(
                &run,
                &db,
                "first-breach",
                "cpu_mean_pct_of_cap",
                cpu,
                "%",
                "",
            );
            x.step_rate = Some(step);
            out.push(x);
        }
    }
    // slow never breached: its `first-breach` rows are at the last step, and not read.
    for r in 1..=3 {
        let run = format!("slow/ramp/r{r}");
        let mut b = row(
            &run,
            "",
            "objective-windows",
            "first_breach",
            0.0,
            "1/s",
            "not reached",
        );
        b.value = None;
        out.push(b);
        let mut x = row(
            &run,
            &container(&run, "database"),
            "first-breach",
            "cpu_mean_pct_of_cap",
            99.0,
            "%",
            "",
        );
        x.step_rate = Some(60.0);
        out.push(x);
    }
    for (v, r) in reps([10.0, 20.0, 20.0]) {
        out.push(row(
            &format!("slow/ramp/r{r}"),
            "",
            "objective-windows",
            "saturation",
            v,
            "1/s",
            "",
        ));
        out.push(row(
            &format!("slow/ramp/r{r}"),
            "",
            "errors-only",
            "saturation",
            20.0,
            "1/s",
            "not reached",
        ));
    }
    for (v, r) in reps([120.0, 130.0, 140.0]) {
        out.push(row(
            &format!("fast/baseline/r{r}"),
            "",
            "",
            "latency_p99",
            v,
            "ms",
            "",
        ));
    }
    for (v, r) in reps([40.0, 50.0, 55.0]) {
        let run = format!("fast/baseline/r{r}");
        let one = container(&run, "replica-1");
        out.push(row(
            &run,
            &one,
            "measured",
            "cpu_mean_pct_of_cap",
            v,
            "%",
            "",
        ));
        // Another container's row, which no check reads.
        let two = container(&run, "replica-2");
        out.push(row(
            &run,
            &two,
            "measured",
            "cpu_mean_pct_of_cap",
            99.0,
            "%",
            "",
        ));
    }
    for (v, r) in reps([0.005, 0.008, 0.02]) {
        out.push(row(
            &format!("slow/baseline/r{r}"),
            "",
            "",
            "failed_share",
            v,
            "ratio",
            "",
        ));
    }
    for (v, r) in reps([200.0, 250.0, 400.0]) {
        out.push(row(
            &format!("slow/baseline/r{r}"),
            "",
            "",
            "latency_p99",
            v,
            "ms",
            "",
        ));
    }
    for (v, r) in [(3.0, 1), (4.0, 3)] {
        out.push(row(
            &format!("slow/baseline+kill/r{r}"),
            "",
            "restart",
            "time_to_recover",
            v,
            "s",
            "",
        ));
    }
    out
}

fn plan() -> feedbench_core::plan::model::Plan {
    let text = std::fs::read_to_string(repo().join(PLAN)).unwrap();
    let ctx = Context {
        host_cores: None,
        exists: None,
    };
    load_str(PLAN, &text, &ctx).unwrap().plan
}

fn judged() -> (
    Vec<(String, Evaluation)>,
    Vec<feedbench_core::report::verdicts::Resolved>,
) {
    let plan = plan();
    let runs = feedbench_core::plan::expand(&plan);
    let mut standing = Standing::default();
    let names: Vec<(String, String, String)> = runs
        .iter()
        .map(|r| {
            (
                container(&r.id, "replica-1"),
                container(&r.id, "replica-2"),
                container(&r.id, "database"),
            )
        })
        .collect();
    for (r, (one, two, db)) in runs.iter().zip(&names) {
        if r.id == INVALID {
            standing
                .not_standing
                .insert(r.id.as_str(), "invalid".into());
        } else {
            let roles = BTreeMap::from([
                ("replica-1", one.as_str()),
                ("replica-2", two.as_str()),
                ("database", db.as_str()),
            ]);
            standing.containers.insert(r.id.as_str(), roles);
        }
    }
    common::report::judge_all(&plan, &standing, &rows())
}

#[test]
fn each_verdict_kind_comes_where_the_rows_put_it() {
    let (judged, _) = judged();
    let got: Vec<(&str, &str, Option<&str>)> = judged
        .iter()
        .map(|(h, e)| (h.as_str(), e.verdict, e.interval))
        .collect();
    assert_eq!(
        got[..6],
        [
            // 40 ≥ 2 × 20, and the intervals [40, 50] and 2 × [10, 20] meet only at 40.
            ("H1", "supported", Some("supported")),
            ("H2", "not supported", Some("not supported")),
            // The median 0.8 % is under 1 %; the interval [0.5 %, 2 %] is not.
            ("H3", "supported", Some("undecided")),
            ("H4", "not evaluable", None),
            // At least 20/s says nothing of 30/s; at least 60/s does.
            ("H5", "not evaluable", Some("undecided")),
            ("H6", "supported", Some("supported")),
        ]
    );
    assert_eq!(got[6].1, "supported", "{:?}", judged[6].1);
    assert_eq!(got[7].1, "supported", "{:?}", judged[7].1);
    // The database at the first breach's step (95 %), never at the step below (70 %).
    assert_eq!(
        got[8],
        ("H9", "supported", Some("supported")),
        "{:?}",
        judged[8].1
    );
    let h9 = &judged[8].1.calls[0];
    assert_eq!(
        h9.value.map(|v| (v.lo, v.hi)),
        Some((95.0 * 0.01, 95.0 * 0.01))
    );
    // A ramp that never breached has no first breach to look at.
    assert_eq!(got[9].1, "not evaluable");
    assert!(
        judged[9].1.reasons[0].contains("`slow/ramp/r1` has no first breach (not reached)"),
        "{:?}",
        judged[9].1.reasons
    );
    // A ratio of two arms whose first call is a mean: no shift interval speaks for it, and
    // the evaluation says why.
    let h11 = &judged[10].1;
    assert!(h11.compared.is_empty(), "{h11:?}");
    assert_eq!(
        h11.fallbacks,
        [(
            "p99(fast, profile: baseline, stat: mean) <= 2 * p99(slow, profile: baseline)".into(),
            feedbench_core::report::verdicts::compared::NOT_MEDIANS
        )]
    );
    assert_eq!(judged[0].1.fallbacks, []);
    let h4 = &judged[3].1;
    assert!(
        h4.reasons
            .iter()
            .any(|r| r.contains("needs `slow/baseline+kill/r2: invalid`")),
        "{:?}",
        h4.reasons
    );
    let h5 = &judged[4].1;
    assert!(
        h5.reasons.iter().any(|r| r.contains("only a bound")),
        "{:?}",
        h5.reasons
    );
    // H7's three statistics of 200, 250 and 400 ms.
    let h7: Vec<(f64, f64)> = judged[6]
        .1
        .calls
        .iter()
        .map(|c| (c.value.unwrap().lo, c.value.unwrap().hi))
        .collect();
    assert_eq!(h7[0], (0.4, 0.4));
    assert_eq!(h7[1], (0.2, 0.2));
    assert!((h7[2].0 - 0.85 / 3.0).abs() < 1e-12, "{h7:?}");
}

#[test]
#[ignore = "needs Python with pandas (twin/requirements.txt)"]
fn the_twin_reaches_the_same_verdicts_from_the_same_rows() {
    let (judged, resolved) = judged();
    let dir = tempfile::tempdir().unwrap();
    let metrics = dir.path().join("metrics.csv");
    std::fs::write(&metrics, rows::render(&rows())).unwrap();
    // The plan's order pairs arms by round, as the report judged them.
    let paired = feedbench_core::report::comparison::paired_rounds(&plan().matrix.order);
    assert!(paired, "{PLAN} interleaves its arms");
    let theirs = common::report::twin()
        .recompute(&[], Some(&metrics), &resolved, paired)
        .unwrap();
    assert_eq!(theirs.verdicts.len(), judged.len());
    let ours: Vec<(&str, &Evaluation)> = judged.iter().map(|(h, e)| (h.as_str(), e)).collect();
    assert_eq!(twin::compare(&ours, &theirs.verdicts), []);

    // A verdict of the twin's changed is caught.
    let mut edited = theirs.verdicts;
    edited[2].interval = Some("supported".into());
    let d = twin::compare(&ours, &edited);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(
        d[0].row,
        "hypothesis H3 (current check): across the intervals"
    );
}
