//! The seeds' findings about faults as checks (tests/plans/valid/findings.yaml) on runs with
//! known answers (twin/tests/gen.py --findings): the 503s of a cut database answered at once,
//! a killed replica's p99 at the connect timeout until the balancer marks it DOWN, a slow
//! object store felt by the uploads alone, a restarted replica's first readiness. feedbench's rows and the twin's agree, each check
//! gives the verdict and the values the runs were built to give, and the twin reaches the
//! same verdicts from the same rows.

use crate::common;

use std::collections::BTreeMap;

use common::repo;
use common::report::generated_findings;
use feedbench_core::plan::{load_str, validate::Context};
use feedbench_core::report::rows::{self, Row};
use feedbench_core::report::verdicts::{twin, Evaluation, Resolved, Standing};

const PLAN: &str = "tests/plans/valid/findings.yaml";

/// Each hypothesis's evaluation from `rows`, with the checks resolved.
fn judged(rows: &[Row]) -> (Vec<(String, Evaluation)>, Vec<Resolved>) {
    let text = std::fs::read_to_string(repo().join(PLAN)).unwrap();
    let ctx = Context {
        host_cores: None,
        exists: None,
    };
    let plan = load_str(PLAN, &text, &ctx).unwrap().plan;
    let runs = feedbench_core::plan::expand(&plan);
    let mut standing = Standing::default();
    for r in &runs {
        standing.containers.insert(r.id.as_str(), BTreeMap::new());
    }
    common::report::judge_all(&plan, &standing, rows)
}

#[test]
#[ignore = "needs Python with pandas (twin/requirements.txt)"]
fn the_seeds_findings_are_checks_with_known_answers_in_both_implementations() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = generated_findings(tmp.path());
    assert_eq!(dirs.len(), 3, "{dirs:?}");
    let ours = common::report::analysed(&dirs);
    common::report::assert_the_twin_agrees(&dirs, &ours);

    let (judged, resolved) = judged(&ours);
    let verdicts: Vec<(&str, &str)> = judged
        .iter()
        .map(|(h, e)| (h.as_str(), e.verdict))
        .collect();
    assert_eq!(
        verdicts,
        [
            ("H1", "supported"),
            ("H2", "supported"),
            ("H3", "supported"),
            ("H4", "not supported"),
            ("H5", "supported"),
            ("H6", "supported"),
        ],
        "{judged:#?}"
    );
    // The values the runs were built to have, in seconds and per second.
    let values: Vec<Vec<f64>> = judged
        .iter()
        .map(|(_, e)| e.calls.iter().map(|c| c.value.unwrap().lo).collect())
        .collect();
    // The cut's 503s all took 20 ms.
    assert_eq!(values[0], [0.02]);
    // Every request took 1 s until replica-1 was marked DOWN.
    assert_eq!(values[1], [1.0]);
    // The uploads' 170 ms against the feed's 10 ms, during the fault and over the phase.
    assert_eq!(values[2], [0.17, 0.01, 0.01, 0.01]);
    // No 5xx after the cut was cleared: none at all in the observe window.
    assert_eq!(values[4], [0.0]);
    // The restarted replica's first 200 ended 305 ms after the probe's first attempt.
    assert!((values[5][0] - 0.305).abs() < 1e-9, "{:?}", values[5]);

    let metrics = tmp.path().join("metrics.csv");
    std::fs::write(&metrics, rows::render(&ours)).unwrap();
    let theirs = common::report::twin()
        .recompute(&[], Some(&metrics), &resolved, false)
        .unwrap();
    let ours: Vec<(&str, &Evaluation)> = judged.iter().map(|(h, e)| (h.as_str(), e)).collect();
    assert_eq!(twin::compare(&ours, &theirs.verdicts), []);
}
