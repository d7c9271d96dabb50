//! The smoke study with feedbench-load as its load generator (`kind: native`), end to end on
//! the real engine: every run completes valid, its raw data carries the native generator's
//! plan, stream and `scheduled_ns`, the schedule was kept, and the report agrees with its
//! pandas twin.

use crate::common;

use std::path::Path;
use std::process::Command;

const PLAN: &str = "tests/plans/docker/smoke-native.yaml";

fn feedbench(args: &[&str], results: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_feedbench"))
        .current_dir(common::repo())
        .args(args)
        .arg("--results")
        .arg(results)
        .output()
        .unwrap()
}

/// The commit that last changed the plan or any of its inputs: the fixture's registration.
fn registered() -> String {
    let out = Command::new("git")
        .current_dir(common::repo())
        .args([
            "log",
            "-1",
            "--format=%H",
            "--",
            PLAN,
            "contenders",
            "images",
            "Cargo.lock",
        ])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

pub fn the_smoke_study_runs_end_to_end_with_the_native_load_generator() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let engine = rt.block_on(common::engine());
    rt.block_on(common::plan_images(PLAN));
    let results = tempfile::tempdir().unwrap();
    let out = feedbench(&["run", PLAN, "--no-build"], results.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");

    let runs = results.path().join("smoke-native/runs");
    for name in [
        "feed-rs_ramp_r1",
        "feed-rs_baseline_db-latency_r1",
        "feed-rs_baseline_replica-kill_r1",
    ] {
        let dir = runs.join(name);
        let record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap();
        assert_eq!(record["execution"]["execution"], "completed", "{name}");
        assert_eq!(
            record["validity_evidence"],
            serde_json::json!([]),
            "{name}: {record}"
        );
        let load = &record["load"];
        assert_eq!(load["generator"], "native", "{name}");
        assert_eq!(load["ended"], "completed", "{name}");
        assert_eq!(load["dropped_iterations"], 0, "{name}");
        // The open model kept: the scheduled number of requests, within 2 %.
        let scheduled = record["scheduled_arrivals"].as_f64().unwrap();
        let sent = load["requests"].as_f64().unwrap();
        if !name.contains("ramp") {
            assert!(
                (sent - scheduled).abs() <= 0.02 * scheduled,
                "{name}: {sent} of {scheduled}"
            );
        }
        // Every start within a few ms of its schedule (the bound is 250 ms).
        let lags: Vec<f64> = load["max_lag_ms_per_second"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert!(!lags.is_empty(), "{name}: no per-second record");
        let worst = lags.iter().copied().fold(0.0, f64::max);
        eprintln!("{name}: {sent} requests of {scheduled:.0} scheduled, worst lag {worst:.1} ms");
        assert!(worst < 100.0, "{name}: a start lagged {worst} ms");
        for f in [
            "load.json",
            "load-stream.csv.gz",
            "requests.csv",
            "containers.csv",
        ] {
            assert!(dir.join(f).is_file(), "{name} has no {f}");
        }
        assert!(!dir.join("load.js").exists() && !dir.join("k6.csv.gz").exists());
        let csv = std::fs::read_to_string(dir.join("requests.csv")).unwrap();
        assert!(
            csv.starts_with("start_ns,end_ns,route,method,status,duration_ms,error,scheduled_ns\n")
        );
    }

    let report = Command::new(env!("CARGO_BIN_EXE_feedbench"))
        .current_dir(common::repo())
        .args(["report", PLAN, "--verify", "--registered", &registered()])
        .arg("--results")
        .arg(results.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&report.stderr);
    assert!(report.status.success(), "{err}");
    assert!(err.contains("agrees"), "{err}");
    let md = std::fs::read_to_string(results.path().join("smoke-native/report/report.md")).unwrap();
    assert!(md.contains("H1"), "{md}");
    let left = rt.block_on(common::leftovers(&engine, "smoke-native"));
    assert_eq!(left, (vec![], vec![]));
}
