//! A run that can no longer stand is stopped: a ramp whose balancer binds from its third step
//! (a busy loop started in its container once the second step is judged takes all of its
//! cap) is stopped by the supervisor's rule within two steps, and set aside with the
//! balancer's evidence (tests/plans/docker/binding.yaml).

use crate::common;
use crate::common::report::text;
use crate::run::{container_of, csv, following, json_run, run_json};

use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

const PLAN: &str = "tests/plans/docker/binding.yaml";
const STUDY: &str = "test-binding";
/// The plan's step duration.
const STEP_NS: i128 = 8_000_000_000;

fn now_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i128
}

/// Starts a busy loop in the balancer's container, in its cgroup: from then on the
/// container uses all of its cap, as a balancer the load outgrew does. Hands back when the
/// loop started. (It ends with the container, at teardown.)
fn bind_balancer() -> i128 {
    let out = Command::new("docker")
        .args(["exec", "-d"])
        .arg(container_of(STUDY, "balancer"))
        .args(["sh", "-c", "while :; do :; done"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    now_ns()
}

pub fn a_ramp_whose_balancer_binds_from_its_third_step_is_stopped_within_two_and_set_aside() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let engine = rt.block_on(common::engine());
    rt.block_on(common::plan_images(PLAN));
    let results = tempfile::tempdir().unwrap();
    // Once the second step (250/s) is judged, the third (300/s) is under way: bind there.
    let mut bound_ns = None;
    let out = following(json_run(PLAN, results.path()), |v| {
        let judged_second =
            v["event"] == "window-judged" && v["step_rate"].as_f64().is_some_and(|r| r >= 250.0);
        if bound_ns.is_none() && judged_second {
            bound_ns = Some(bind_balancer());
        }
    });
    let stderr = String::from_utf8_lossy(&out.stderr);
    let bound_ns = bound_ns.unwrap_or_else(|| panic!("the second step was never judged: {stderr}"));
    assert_eq!(out.status.code(), Some(1), "{stderr}");

    let study = results.path().join(STUDY);
    let dir = study.join("_invalid_balancer-cpu/queue_ramp_r1");
    assert!(dir.is_dir(), "not set aside as balancer-cpu: {stderr}");
    let stop = csv(&dir.join("events.csv"))
        .into_iter()
        .find(|e| e["event"] == "load-stopped")
        .unwrap_or_else(|| panic!("no load-stopped in {}", dir.display()));
    let at_ns: i128 = stop["subject"].parse().unwrap();
    eprintln!(
        "stopped {:.1} s after the busy loop began: {}",
        (at_ns - bound_ns) as f64 / 1e9,
        stop["detail"]
    );
    assert!(stop["detail"].contains("can no longer stand"), "{stop:?}");
    // Not before the balancer bound (it stood before), and within two steps of it.
    assert!(
        at_ns > bound_ns,
        "stopped before the busy loop began: {stop:?}"
    );
    assert!(
        at_ns - bound_ns <= 2 * STEP_NS,
        "stopped too late: {stop:?}"
    );

    // The evidence names the balancer's container, its cap and the ceiling; the load did
    // stop: far fewer requests than the seven steps schedule.
    let record = run_json(&dir);
    let first = &record["validity_evidence"][0];
    assert_eq!(first["check"], "cpu", "{record:#}");
    assert_eq!(first["role"], "balancer", "{record:#}");
    assert!(
        first["container"]
            .as_str()
            .is_some_and(|c| c.ends_with("-balancer")),
        "{first}"
    );
    assert!(
        first["figure"]
            .as_str()
            .is_some_and(|f| f.contains("every second over the ceiling")),
        "{first}"
    );
    assert!(first["value"].as_f64() > Some(80.0), "{first}");
    let sent = record["load"]["requests"].as_u64().unwrap();
    let scheduled = record["scheduled_arrivals"].as_f64().unwrap();
    eprintln!(
        "{sent} of {scheduled} scheduled sent; evidence: {:#}",
        record["validity_evidence"]
    );
    assert!(
        (sent as f64) < 0.9 * scheduled,
        "{sent} of {scheduled} sent"
    );
    assert_eq!(
        rt.block_on(common::leftovers(&engine, STUDY)),
        (vec![], vec![])
    );
}
