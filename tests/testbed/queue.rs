//! A server that queues without bound, its capacity known by construction (50/s:
//! tests/fixtures/queue-server), ramped across it with k6 and with feedbench-load: the run
//! stands, its saturation is the step below that capacity, and the starts dropped past the
//! knee (every slot of max-in-flight busy) are the server's failures in their windows, live
//! and offline. Then a feedbench-load capped far below its rate: its windows breach through
//! its own late and dropped starts, its checks set the run aside, and the report names it
//! with both kinds of drop (tests/plans/docker/queue-*.yaml, starved-generator.yaml).

use crate::common::{self, report::text};
use crate::run::{csv, feedbench, run_json, run_plan_on_a_quiet_host};

use std::path::Path;

/// The report and its recomputation by the twin agree; report.md is handed back.
fn verified_report(plan: &str, results: &Path, study: &str) -> String {
    let out = feedbench(&["report", "--verify"], plan, results);
    assert!(out.status.success(), "{}", text(&out));
    std::fs::read_to_string(results.join(study).join("report/report.md")).unwrap()
}

/// The ramp's run (20, 40, 60 and 80/s against a capacity of 50/s), as the plan says.
fn assert_ramp_stands_at_capacity_with_its_drops_its_failures(dir: &Path, generator: &str) {
    let record = run_json(dir);
    let saturation = &record["saturation"];
    assert_eq!(saturation["rate"], 40.0, "{generator}: {saturation:#}");
    assert_eq!(
        saturation["first_breach"], 60.0,
        "{generator}: {saturation:#}"
    );
    assert_eq!(record["frame"]["judged_by"], "by-schedule");
    // It stands: whatever the generator dropped, its own checks passed.
    assert!(
        record["validity_evidence"]
            .as_array()
            .is_none_or(|e| e.is_empty()),
        "{generator}: {:#}",
        record["validity_evidence"]
    );
    let steps = saturation["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 4, "{generator}: {saturation:#}");
    let mut dropped = 0;
    for step in steps {
        let (rate, n, d) = (
            step["rate"].as_f64().unwrap(),
            step["requests"].as_u64().unwrap(),
            step["dropped"].as_u64().unwrap(),
        );
        let failed = step["error_rate"].as_f64().unwrap() * (n + d) as f64;
        if rate < 50.0 {
            assert_eq!((d, step["met"].as_bool()), (0, Some(true)), "{step}");
        } else {
            assert_eq!(step["met"], false, "{generator}: {step}");
            // Every drop is a failed request of its window: at least that many failed.
            assert!(failed.round() as u64 >= d, "{generator}: {step}");
        }
        dropped += d;
    }
    // Drops happened past the knee (the queue outgrew the 30 in flight), and none of them
    // fell outside a step.
    let finished = csv(&dir.join("events.csv"))
        .into_iter()
        .find(|e| e["event"] == "load-finished")
        .unwrap();
    let total: u64 = finished["detail"]
        .rsplit("dropped ")
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{finished:?}"));
    assert!(dropped > 0 && dropped <= total, "{dropped} of {total}");
    // The live judge saw the same: both steps past the capacity breached.
    let judged: Vec<String> = csv(&dir.join("events.csv"))
        .into_iter()
        .filter(|e| e["event"] == "window-judged")
        .map(|e| format!("{} {}", e["subject"], e["detail"]))
        .collect();
    assert_eq!(judged.len(), 4, "{judged:?}");
    for (j, verdict) in judged.iter().zip(["met", "met", "breached", "breached"]) {
        assert!(
            j.split(' ').nth(2) == Some(&format!("{verdict}:")),
            "{judged:?}"
        );
    }
}

pub fn a_server_that_queues_saturates_at_its_capacity_and_its_backpressure_is_its_failures() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let engine = rt.block_on(common::engine());
    let results = tempfile::tempdir().unwrap();
    for (plan, study, generator) in [
        ("tests/plans/docker/queue-k6.yaml", "test-queue-k6", "k6"),
        (
            "tests/plans/docker/queue-native.yaml",
            "test-queue-native",
            "native",
        ),
    ] {
        rt.block_on(common::plan_images(plan));
        let out = run_plan_on_a_quiet_host(plan, results.path());
        assert!(out.status.success(), "{generator}: {}", text(&out));
        let dir = results.path().join(study).join("runs/queue_ramp_r1");
        assert_ramp_stands_at_capacity_with_its_drops_its_failures(&dir, generator);
        let report = verified_report(plan, results.path(), study);
        assert!(report.contains("judged by schedule"), "{report}");
        assert_eq!(
            rt.block_on(common::leftovers(&engine, study)),
            (vec![], vec![])
        );
    }
}

pub fn a_load_generator_capped_far_below_its_rate_breaches_and_is_set_aside() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let engine = rt.block_on(common::engine());
    let results = tempfile::tempdir().unwrap();
    let (plan, study) = (
        "tests/plans/docker/starved-generator.yaml",
        "test-starved-generator",
    );
    rt.block_on(common::plan_images(plan));
    let out = run_plan_on_a_quiet_host(plan, results.path());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("did not complete valid: queue.starved/flood/r1"),
        "{}",
        text(&out)
    );
    let study_dir = results.path().join(study);
    // The same load from a generator with room stands and meets the objective: the server
    // was never what failed.
    let roomy = run_json(&study_dir.join("runs/queue.roomy_flood_r1"));
    assert_eq!(roomy["measured"]["windows"]["breached"], 0, "{roomy:#}");
    // The starved one: set aside by its own CPU check, into a directory named for it.
    let aside = std::fs::read_dir(&study_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with("_invalid_load-generator"))
        .unwrap_or_else(|| panic!("no run set aside in {}", study_dir.display()));
    let dir = study_dir.join(&aside).join("queue.starved_flood_r1");
    let record = run_json(&dir);
    // Its windows breached, offline and live.
    assert!(
        record["measured"]["windows"]["breached"].as_u64() >= Some(1),
        "{:#}",
        record["measured"]
    );
    let live = csv(&dir.join("events.csv"))
        .into_iter()
        .filter(|e| e["event"] == "window-judged")
        .filter(|e| e["detail"].starts_with("breached"))
        .count();
    assert!(live >= 1, "no window judged breached live");
    // The evidence counts the starts it dropped itself, late and at the cap, and names its
    // CPU check.
    let evidence = record["validity_evidence"].to_string();
    assert!(evidence.contains("share of its 0.01-CPU cap"), "{evidence}");
    let drops = record["validity_evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["check"] == "dropped-iterations")
        .unwrap_or_else(|| panic!("{evidence}"));
    let late: u64 = drops["figure"]
        .as_str()
        .unwrap()
        .split(": ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{drops}"));
    assert!(late > 0, "no start dropped late: {drops}");
    // The report stands on the roomy run and names the starved one with that evidence.
    let report = verified_report(plan, results.path(), study);
    let line = report
        .lines()
        .find(|l| l.contains("`queue.starved/flood/r1` | invalid"))
        .unwrap_or_else(|| panic!("{report}"));
    assert!(line.contains("later than max-lag"), "{line}");
    assert!(line.contains("invalid | load-generator-"), "{line}");
    assert_eq!(
        rt.block_on(common::leftovers(&engine, study)),
        (vec![], vec![])
    );
}
