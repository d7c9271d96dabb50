//! The report's figures and the twin's (twin/recompute.py, pandas, written from the docs
//! alone) on run directories with known answers (twin/tests/gen.py writes them): both agree
//! on every row, both find the answers the directories were built to have, and a raw value
//! edited afterwards makes them disagree.

use crate::common;

use std::process::Command;

use common::repo;
use common::report::{generated, python};
use feedbench_core::report::rows::{self, Row};
use feedbench_core::report::run;
use feedbench_core::rundir::record::RunRecord;

fn value(rows: &[Row], run: &str, metric: &str, definition: &str) -> (Option<f64>, String) {
    let r = rows
        .iter()
        .find(|r| {
            r.key.run == run
                && r.metric == metric
                && r.definition == definition
                && r.step_rate.is_none()
                && r.container.is_empty()
        })
        .unwrap_or_else(|| panic!("no {metric} ({definition}) for {run}"));
    (r.value, r.note.clone())
}

#[test]
#[ignore = "needs Python with pandas (twin/requirements.txt)"]
fn both_implementations_agree_and_find_the_known_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = generated(tmp.path());
    let ours = common::report::analysed(&dirs);
    common::report::assert_the_twin_agrees(&dirs, &ours);
    assert!(ours.len() > 500, "{} rows", ours.len());
    // Every rate's time base is the monitors' clock: in the generated baseline replica-1's
    // wall clock runs 1 % fast, and its CPU is 50 % of its cap (49.5 % over the wall clock)
    // in both implementations.
    let cpu = ours
        .iter()
        .find(|r| {
            r.key.run == "feed-rs.indexed/baseline/r1"
                && r.metric == "cpu_mean_pct_of_cap"
                && r.definition == "measured"
                && r.container == "feedbench-replica-1"
                && r.step_rate.is_none()
        })
        .and_then(|r| r.value);
    assert!(cpu.is_some_and(|v| (v - 50.0).abs() < 1e-9), "{cpu:?}");
    // The replicas' working set, summed per tick: replica-1 140 + 2t MB, replica-2 120 MB
    // (none at tick 12), over ticks 2 to 21.
    let replicas = |metric: &str| {
        ours.iter()
            .find(|r| {
                r.key.run == "feed-rs.indexed/baseline/r1"
                    && r.metric == metric
                    && r.definition == "measured"
                    && r.container == "replicas"
                    && r.step_rate.is_none()
            })
            .and_then(|r| r.value)
    };
    // Route by route: every tenth request is a post answered 404, the rest the feed.
    let baseline = "feed-rs.indexed/baseline/r1";
    for (definition, metric, want) in [
        ("route:feed", "requests", 180.0),
        ("route:post", "requests", 20.0),
        ("route:post", "status_4xx_share", 1.0),
        ("route:post", "latency_p99", 200.0),
        ("route:feed", "latency_p99", 171.0),
        ("", "status_2xx_share", 0.86),
        // post declares 99.5 % of its answers 4xx, feed none
        ("route:post", "expected_4xx_share", 0.995),
        ("route:feed", "expected_4xx_share", 0.0),
    ] {
        assert_eq!(
            value(&ours, baseline, metric, definition).0,
            Some(want),
            "{definition} {metric}"
        );
    }
    assert_eq!(replicas("memory_working_set_peak"), Some(302_000_000.0));
    // Served answers over the replicas' 3.35 core-seconds: 172 × 200 and 19.9 of the post
    // route's 20 404s (its declared share); feed's 3 undeclared 404s and 5 failed are not.
    let efficiency = replicas("requests_per_core_second").unwrap();
    assert!(
        (efficiency - (172.0 + 19.9) / 3.35).abs() < 1e-9,
        "{efficiency}"
    );
    assert_eq!(replicas("memory_working_set_mean"), Some(271_000_000.0));

    let ramp = "feed-rs.indexed/ramp/r1";
    for (definition, saturation) in [
        ("objective-windows", 30.0),
        ("p99-only", 30.0),
        ("every-second", 10.0),
        ("throughput-knee", 40.0),
    ] {
        assert_eq!(
            value(&ours, ramp, "saturation", definition).0,
            Some(saturation),
            "{definition}"
        );
    }
    // No step breached the error bound: the last step, not reached.
    assert_eq!(
        value(&ours, ramp, "saturation", "errors-only"),
        (Some(50.0), "not reached".to_string())
    );
    // A 3 s stall inside the 80/s step is a transient: 100/s met the objective again, and
    // the knee is at 160/s, confirmed at 180/s.
    let stalled = "feed-rs.indexed/stalled-ramp/r1";
    for (metric, want) in [
        ("saturation", 140.0),
        ("sustained_breach", 160.0),
        ("saturation_before_first_breach", 60.0),
        ("first_breach", 80.0),
        ("transient_steps", 1.0),
    ] {
        assert_eq!(
            value(&ours, stalled, metric, "objective-windows"),
            (Some(want), String::new()),
            "{metric}"
        );
    }
    let kill = "feed-rs.indexed/baseline+replica-kill/r1";
    assert_eq!(value(&ours, kill, "time_to_recover", "clear").0, Some(12.0));
    assert_eq!(
        value(&ours, kill, "time_to_recover", "restart").0,
        Some(10.0)
    );
    // The killed replica's own DOWN, not a bystander's a second earlier.
    assert_eq!(
        value(&ours, kill, "detect_balancer_down", ""),
        (Some(2.5), String::new())
    );
    assert_eq!(value(&ours, kill, "detect_failed_request", "").0, Some(1.5));
    // Causal: judged on what had finished by each instant, the open requests at their age;
    // by whole durations bucketed by start it was 0.2 s.
    assert_eq!(
        value(&ours, kill, "detect_objective_window", "").0,
        Some(0.7)
    );
    // A native load generator's rows (r3 has `scheduled_ns`, request j sent 2·j ms late):
    // the latency from the schedule charges the lateness; k6's rows (r1) have none.
    let native = "feed-rs.indexed/baseline/r3";
    assert_eq!(
        value(&ours, native, "latency_from_schedule_max", "").0,
        Some(10.0 * 20.0 + 1.0 + 18.0)
    );
    assert_eq!(value(&ours, native, "latency_max", "").0, Some(201.0));
    assert!(!ours
        .iter()
        .any(|r| r.key.run.ends_with("/r1") && r.metric.starts_with("latency_from_schedule")));
    // A link cut whose replica the balancer marks DOWN and then UP again: no restart.
    let cut = "feed-rs.indexed/baseline+db-cut/r1";
    // A link fault reads any replica's first DOWN: the bystander's.
    assert_eq!(
        value(&ours, cut, "detect_balancer_down", ""),
        (Some(1.0), String::new())
    );
    assert_eq!(value(&ours, cut, "time_to_recover", "clear").0, Some(12.0));
    assert_eq!(
        value(&ours, cut, "time_to_recover", "restart"),
        (None, "not applicable".to_string())
    );
    // The service back through the other replica 8 s before the killed one: recovery from
    // the restart is signed, from the clear unchanged.
    let late = "feed-rs.indexed/baseline+late-restart/r1";
    assert_eq!(
        value(&ours, late, "time_to_recover", "restart").0,
        Some(-8.0)
    );
    assert_eq!(value(&ours, late, "time_to_recover", "clear").0, Some(12.0));
    // The killed replica's first readiness, 305 ms after the probe's first attempt; none for a cut.
    let ready = value(&ours, kill, "time_to_ready", "").0.unwrap();
    assert!((ready - 0.305).abs() < 1e-9, "{ready}");
    assert_eq!(
        value(&ours, cut, "time_to_ready", ""),
        (None, "not applicable".to_string())
    );
    // report.md names the server whose DOWN it read: the kill's target, the link cut's
    // first replica marked DOWN (the bystander).
    let seen_down = |run: &str| {
        let d = dirs.iter().find(|d| {
            let r = RunRecord::read(d).unwrap();
            r.run_id == run
        });
        let d = d.unwrap_or_else(|| panic!("no directory for {run}"));
        run::analyse(d, &RunRecord::read(d).unwrap())
            .unwrap()
            .seen_down
    };
    assert_eq!(seen_down(kill).as_deref(), Some("replica-1"));
    assert_eq!(seen_down(cut).as_deref(), Some("replica-2"));
    // The verdict over windows: the constant run's 20 s phase is one 60 s window, breached by
    // its 2.5 % failed; the kill's 125 s phase holds 12 full 10 s windows, one breached.
    for (run, windows, breached) in [("feed-rs.indexed/baseline/r1", 1.0, 1.0), (kill, 12.0, 1.0)] {
        assert_eq!(value(&ours, run, "objective_windows", "").0, Some(windows));
        assert_eq!(
            value(&ours, run, "objective_windows_breached", "").0,
            Some(breached)
        );
    }
}

#[test]
#[ignore = "needs Python with pandas (twin/requirements.txt)"]
fn windows_judged_by_schedule_count_dropped_and_late_starts_in_both_implementations() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = common::report::generated_schedule(tmp.path());
    let ours = common::report::analysed(&dirs);
    common::report::assert_the_twin_agrees(&dirs, &ours);
    let windows = |run: &str| {
        let run = format!("feed-rs.indexed/{run}/r1");
        let v = |metric: &str| value(&ours, &run, metric, "").0;
        (
            v("objective_windows"),
            v("objective_windows_breached"),
            v("latency_p99"),
            v("duration_p99"),
        )
    };
    // Every request sent was answered in 20 ms: duration_ms's p99 meets the 500 ms bound in
    // each run, and only the starts the windows judged by schedule see break one window.
    // A 4 s stall of the generator: 400 starts dropped in the second window.
    let (three, one, fast) = (Some(3.0), Some(1.0), Some(20.0));
    assert_eq!(windows("stall"), (three, one, fast, fast));
    // 2 % of the first window's starts dropped break its 1 % bound; judged by start (as a
    // run.json without a rule is), the same requests meet it.
    assert_eq!(windows("drops"), (three, one, fast, fast));
    assert_eq!(windows("drops-by-start"), (three, Some(0.0), fast, fast));
    // The last window's requests started 600 ms after their schedule and were answered in
    // 20 ms: 620 ms from the schedule, over the bound, and the latency a check reads.
    assert_eq!(windows("late"), (three, one, Some(620.0), fast));
    // A check's failed() reads failed_share: by schedule it counts the dropped starts, as
    // the windows do (every request sent was answered with 200 here); by start, none.
    let v = |run: &str, metric: &str| {
        value(&ours, &format!("feed-rs.indexed/{run}/r1"), metric, "")
            .0
            .unwrap()
    };
    for run in ["stall", "drops"] {
        let (sent, dropped) = (v(run, "requests"), v(run, "dropped_iterations"));
        assert!(dropped > 0.0, "{run}");
        assert_eq!(v(run, "failed_share"), dropped / (sent + dropped), "{run}");
    }
    assert_eq!(v("drops-by-start", "failed_share"), 0.0);
    assert_eq!(v("late", "failed_share"), 0.0);
    assert_eq!(
        value(
            &ours,
            "feed-rs.indexed/late/r1",
            "latency_from_schedule_p99",
            ""
        )
        .0,
        Some(620.0)
    );
}

#[test]
#[ignore = "needs Python with pandas (twin/requirements.txt)"]
fn a_raw_value_edited_afterwards_is_caught() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = generated(tmp.path());
    let before = common::report::analysed(&dirs);
    // A request of the kill run's control (20 s into the measured phase, after 10 s of
    // warm-up at 100/s) takes 4 s: the run's slowest, so its max latency changes.
    let kill = dirs
        .iter()
        .find(|d| d.to_string_lossy().contains("replica-kill"))
        .unwrap();
    let path = kill.join("requests.csv");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let cols: Vec<&str> = lines[3000].split(',').collect();
    let mut edited: Vec<String> = cols.iter().map(|s| s.to_string()).collect();
    edited[5] = "4000".into();
    lines[3000] = edited.join(",");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let theirs = common::report::twin()
        .recompute(&dirs, None, &[], false)
        .unwrap()
        .rows;
    let d = rows::compare(&before, &theirs);
    assert!(
        d.iter().any(|d| d.row.contains("latency_max")),
        "the edit shows in the figures: {d:#?}"
    );
}

#[test]
#[ignore = "needs Python with pandas (twin/requirements.txt)"]
fn the_twin_own_tests_pass() {
    let out = Command::new(python())
        .args(["-m", "unittest", "discover", "-s"])
        .arg(repo().join("twin/tests"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
#[ignore = "needs Python with pandas (twin/requirements.txt)"]
fn a_declared_4xx_share_out_of_range_leaves_the_run_out_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = generated(tmp.path());
    let d = &dirs[0];
    let path = d.join("run.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["frame"]["expected_4xx"]["post"] = 1.5.into();
    std::fs::write(&path, v.to_string()).unwrap();
    let record = RunRecord::read(d).unwrap();
    let e = run::analyse(d, &record).unwrap_err().to_string();
    assert_eq!(
        e,
        "its run.json's frame.expected_4xx.post is 1.5, not a ratio from 0 to 1"
    );
}
