//! A fault judged by its effect on the link (tests/plans/docker/lying-proxy.yaml): a fault
//! proxy that accepts a +100 ms latency toxic and applies nothing (tests/fixtures/lying-proxy)
//! leaves the database link's round trip as it was, and the run is set aside as
//! `fault-not-applied` with the round trip the probes measured. The real proxy's added
//! delay, recorded and standing, is the smoke study's (`run::the_smoke_study_runs_…`).

use crate::common::{self, report::text};
use crate::run::{csv, run_json, run_plan_on_a_quiet_host};

const PLAN: &str = "tests/plans/docker/lying-proxy.yaml";
const STUDY: &str = "test-lying-proxy";

pub fn a_proxy_that_ignores_its_toxics_leaves_its_latency_run_set_aside_with_the_round_trip() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let engine = rt.block_on(common::engine());
    rt.block_on(common::plan_images(PLAN));
    let results = tempfile::tempdir().unwrap();
    let out = run_plan_on_a_quiet_host(PLAN, results.path());
    // The study ran to its end; a run set aside is a failure of the study (exit 1).
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let dir = results
        .path()
        .join(STUDY)
        .join("_invalid_fault-proxy-fault-not-applied/queue_steady_db-latency_r1");
    let record = run_json(&dir);
    // The proxy said yes: the fault was applied and cleared without a refusal.
    let events = csv(&dir.join("events.csv"));
    for e in ["fault-applied", "fault-cleared"] {
        assert!(events.iter().any(|r| r["event"] == e), "{e}: {events:?}");
    }
    assert!(!events.iter().any(|r| r["event"] == "fault-apply-failed"));
    let evidence = record["validity_evidence"].as_array().unwrap();
    let e = evidence
        .iter()
        .find(|e| e["check"] == "fault-not-applied")
        .unwrap_or_else(|| panic!("{record:#}"));
    assert_eq!(e["role"], "fault-proxy", "{e}");
    assert!(
        e["container"].as_str().unwrap().ends_with("-fault-proxy"),
        "{e}"
    );
    assert_eq!(
        (&e["threshold"], &e["unit"]),
        (&90.0.into(), &"ms".into()),
        "{e}"
    );
    // What the probes saw: the link answered on both sides of the fault, and as fast during
    // it as before (well under the 90 ms it would have gained).
    let link = &record["link"];
    eprintln!("db link through the lying proxy: {link}");
    let added = common::link_answered(&record);
    assert!(added < 50.0, "{link}");
    assert!(
        (e["value"].as_f64().unwrap() - added).abs() < 1e-9,
        "{e} {link}"
    );
    assert_eq!(
        rt.block_on(common::leftovers(&engine, STUDY)),
        (vec![], vec![])
    );
}
