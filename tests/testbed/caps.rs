//! Caps read back: a replica whose CPU cap changes while its run runs (`docker update`, once
//! the run measures) sets the run aside as `replica-1-caps-changed`, the evidence naming the
//! container and both caps; run.json keeps every container's caps at start and before
//! teardown (tests/plans/docker/caps.yaml).

use crate::common::{self, report::text};
use crate::run::{container_of, following, json_run, run_json};

use std::process::Command;

const PLAN: &str = "tests/plans/docker/caps.yaml";
const STUDY: &str = "test-caps";

pub fn a_replica_whose_cpu_cap_changes_while_the_run_runs_sets_the_run_aside_naming_both() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let engine = rt.block_on(common::engine());
    rt.block_on(common::plan_images(PLAN));
    let results = tempfile::tempdir().unwrap();
    let mut updated = false;
    let out = following(json_run(PLAN, results.path()), |v| {
        if !updated && v["event"] == "phase" && v["phase"] == "measure" {
            let out = Command::new("docker")
                .args(["update", "--cpus", "0.6"])
                .arg(container_of(STUDY, "replica"))
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", text(&out));
            updated = true;
        }
    });
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(updated, "the run never measured: {stderr}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");

    let dir = results
        .path()
        .join(STUDY)
        .join("_invalid_replica-1-caps-changed/queue_steady_r1");
    assert!(
        dir.is_dir(),
        "not set aside as replica-1-caps-changed: {stderr}"
    );
    let record = run_json(&dir);
    let first = &record["validity_evidence"][0];
    eprintln!("{first:#}");
    assert_eq!(first["check"], "caps-changed", "{record:#}");
    assert!(
        first["container"]
            .as_str()
            .is_some_and(|c| c.ends_with("-replica-1")),
        "{first}"
    );
    let figure = first["figure"].as_str().unwrap();
    assert!(
        figure.contains("deployed with 1 CPUs, 128 MiB, at teardown 0.6 CPUs, 128 MiB"),
        "{figure}"
    );
    // Every container's caps, read at the start and before the teardown; only the
    // replica's changed.
    let caps = record["caps"].as_array().unwrap();
    let mut roles: Vec<&str> = caps.iter().filter_map(|c| c["role"].as_str()).collect();
    roles.sort();
    assert_eq!(
        roles,
        ["balancer", "fault-proxy", "load-generator", "replica-1"],
        "{caps:#?}"
    );
    for c in caps {
        let changed = c["deploy"] != c["teardown"];
        assert!(c["teardown"].is_object(), "{c}");
        assert_eq!(changed, c["role"] == "replica-1", "{c}");
    }
    assert_eq!(
        rt.block_on(common::leftovers(&engine, STUDY)),
        (vec![], vec![])
    );
}
