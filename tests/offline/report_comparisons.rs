//! comparisons.csv computed twice: two arms of three repetitions each, written by
//! twin/tests/gen.py (production 1.5× slower), compared by the report and by the twin, cell
//! by cell, unpaired and paired by round.

use crate::common;

use feedbench_core::report::comparison::{self, file, Finding};

#[test]
#[ignore = "needs Python with pandas (twin/requirements.txt)"]
fn the_twin_compares_the_arms_as_the_report_does() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = common::report::generated_arms(tmp.path());
    let rows = common::report::analysed(&dirs);
    for paired in [false, true] {
        let ours = comparison::of_rows(&rows, paired, &Default::default());
        assert!(
            !ours.is_empty(),
            "two arms on the same profile are compared"
        );
        // Three repetitions cannot show even a 1.5× difference: the exact test's smallest
        // p is 0.1 unpaired and 0.25 paired.
        let latency = ours
            .iter()
            .find(|c| c.metric == "latency_p99")
            .expect("latency_p99 compared");
        assert!(
            matches!(latency.finding, Finding::CannotBeShown { n: 3, .. }),
            "{latency:?}"
        );
        assert_eq!(latency.paired, paired);
        let ratio = latency.ratio.expect("a ratio interval");
        assert!(
            ratio.lo < 1.0 / 1.3 && ratio.hi < 1.0,
            "indexed / production: {ratio:?}"
        );
        let theirs = common::report::twin()
            .recompute(&dirs, None, &[], paired)
            .unwrap()
            .comparisons
            .expect("the twin's comparisons.csv");
        let d = file::compare(&file::render(&ours), &theirs).unwrap();
        assert!(d.is_empty(), "paired {paired}: {d:#?}");
    }
}
