//! A 5 s freeze of the only replica at 300/s (`freeze-replica`: the cgroup freezer), driven
//! by feedbench-load and by k6: the open model keeps its schedule while the service stands
//! still. Every request scheduled (k6: started) in the freeze is in requests.csv, failed or
//! answered no earlier than the thaw, or is a start the generator counted as dropped in the
//! freeze's seconds: none is left out and none is recorded as fast. feedbench-load drops
//! next to none (a start later than its max-lag); k6, whose maxVUs cover the freeze but
//! which allocates VUs past its pre-allocated ones only as the freeze holds them, drops
//! some (tests/plans/docker/freeze-*.yaml).

use std::path::Path;

use crate::common::{self, report::text};
use crate::run::{csv, event_ns, feedbench, run_json, run_plan_on_a_quiet_host};

const RATE: f64 = 300.0;

/// The run's requests placed in the freeze `[frozen, thawed)`: by `scheduled_ns` where the
/// generator records it (feedbench-load), else by `start_ns`. Each one failed or ended no
/// earlier than the thaw; with the starts the generator dropped in the freeze's seconds,
/// their count is the schedule's within `tolerance`. The dropped starts are handed back.
fn assert_freeze_requests(dir: &Path, generator: &str, tolerance: f64) -> u64 {
    let (frozen, thawed) = (
        event_ns(dir, "fault-applied"),
        event_ns(dir, "fault-cleared"),
    );
    let span_s = (thawed - frozen) as f64 / 1e9;
    assert!(
        (4.5..6.0).contains(&span_s),
        "{generator}: froze {span_s} s"
    );
    let rows = csv(&dir.join("requests.csv"));
    let placed_at = |r: &std::collections::BTreeMap<String, String>| -> i128 {
        let key = match r.get("scheduled_ns") {
            Some(s) if !s.is_empty() => "scheduled_ns",
            _ => "start_ns",
        };
        r[key].parse().unwrap()
    };
    let mut n = 0usize;
    let mut failed = 0usize;
    for r in rows
        .iter()
        .filter(|r| (frozen..thawed).contains(&placed_at(r)))
    {
        n += 1;
        let end: i128 = r["end_ns"].parse().unwrap();
        let ok = r["status"].starts_with('2') && r["error"].is_empty();
        if !ok {
            failed += 1;
        } else {
            // Answered: not before the service could answer, so its latency from where it
            // was placed is the rest of the freeze at least.
            assert!(
                end >= thawed - 50_000_000,
                "{generator}: a request placed {:.3} s into the freeze was answered {:.3} s \
                 before the thaw: {r:?}",
                (placed_at(r) - frozen) as f64 / 1e9,
                (thawed - end) as f64 / 1e9
            );
        }
    }
    // What the generator could not start (k6: no free VU yet; it allocates VUs past its
    // pre-allocated ones while the freeze holds them) is counted, second by second, all in
    // the freeze's seconds: scheduled = placed + dropped.
    let load = &run_json(dir)["load"];
    let t0: i128 = load["scenario_start_ns"].as_i64().unwrap().into();
    let mut dropped = 0u64;
    for (t, d) in load["dropped_per_second"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        let d = d.as_u64().unwrap();
        let second = t0 + t as i128 * 1_000_000_000;
        let in_freeze = second + 1_000_000_000 > frozen && second < thawed;
        assert!(
            d == 0 || in_freeze,
            "{generator}: {d} dropped in second {t}: {load}"
        );
        dropped += if in_freeze { d } else { 0 };
    }
    let expected = RATE * span_s;
    eprintln!(
        "{generator}: {n} requests placed in the {span_s:.2} s freeze and {dropped} dropped \
         ({expected:.0} scheduled), {failed} failed"
    );
    let accounted = (n as u64 + dropped) as f64;
    assert!(
        (accounted - expected).abs() <= expected * tolerance,
        "{generator}: {n} requests placed in the freeze and {dropped} dropped, {expected:.0} scheduled"
    );
    // Most of the freeze is failures (the timeout, then the balancer's 503 once it marks the
    // only server DOWN): the stall is in the figures.
    assert!(failed * 2 > n, "{generator}: {failed} of {n} failed");
    dropped
}

pub fn a_frozen_replica_s_requests_are_all_recorded_late_or_failed_by_either_generator() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let engine = rt.block_on(common::engine());
    let results = tempfile::tempdir().unwrap();
    // feedbench-load places each request at its scheduled instant: the schedule's count,
    // but for the edges (a drop in the freeze's first or last second counts whole). k6's starts are its VUs' own, on time within
    // a few per cent on this host.
    for (plan, study, generator, tolerance) in [
        (
            "tests/plans/docker/freeze-native.yaml",
            "test-freeze-native",
            "native",
            0.005,
        ),
        (
            "tests/plans/docker/freeze-k6.yaml",
            "test-freeze-k6",
            "k6",
            0.05,
        ),
    ] {
        rt.block_on(common::plan_images(plan));
        let out = run_plan_on_a_quiet_host(plan, results.path());
        assert!(out.status.success(), "{generator}: {}", text(&out));
        let dir = results
            .path()
            .join(study)
            .join("runs/queue_steady_freeze_r1");
        let record = run_json(&dir);
        assert_eq!(
            record["frame"]["fault_window"]["injection"], "freeze-replica",
            "{record:#}"
        );
        // The freeze was shown to take effect (the replica's CPU counter stood still), and
        // the run stands.
        assert!(
            record["validity_evidence"]
                .as_array()
                .is_none_or(|e| e.is_empty()),
            "{generator}: {record:#}"
        );
        assert!(
            !record["warnings"].to_string().contains("fault-not-applied"),
            "{generator}: {record:#}"
        );
        let dropped = assert_freeze_requests(&dir, generator, tolerance);
        // feedbench-load opens a connection for each start as it comes: it drops only what
        // it started later than its max-lag, within the dropped-iterations guard's 1 %.
        assert!(
            generator == "k6" || dropped as f64 <= RATE * 5.0 * 0.01,
            "{generator}: {dropped} dropped"
        );
        // The balancer saw the frozen replica: DOWN in the freeze, UP after the thaw.
        let health = csv(&dir.join("health.csv"));
        let frozen = event_ns(&dir, "fault-applied");
        let thawed = event_ns(&dir, "fault-cleared");
        let down = health
            .iter()
            .find(|h| h["state"] == "DOWN" && h["wall_ns"].parse::<i128>().unwrap() >= frozen);
        let down_ns: i128 = down.unwrap_or_else(|| panic!("{generator}: no DOWN row: {health:?}"))
            ["wall_ns"]
            .parse()
            .unwrap();
        assert!(down_ns < thawed, "{generator}: DOWN only after the thaw");
        assert!(
            health
                .iter()
                .any(|h| h["state"] == "UP" && h["wall_ns"].parse::<i128>().unwrap() > thawed),
            "{generator}: never UP after the thaw"
        );
        let out = feedbench(&["report", "--verify"], plan, results.path());
        assert!(out.status.success(), "{generator}: {}", text(&out));
        let md =
            std::fs::read_to_string(results.path().join(study).join("report/report.md")).unwrap();
        assert!(md.contains("freeze (freeze-replica)"), "{md}");
        assert_eq!(
            rt.block_on(common::leftovers(&engine, study)),
            (vec![], vec![])
        );
    }
}
