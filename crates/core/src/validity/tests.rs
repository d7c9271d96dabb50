//! The checks together: their order, the reason they give, and `assess` on files.

use std::collections::BTreeMap;

use super::*;
use crate::rundir::samples::SampleStatus;
use crate::spec::load::Stage;
use crate::spec::topology::{ContainerSpec, Readiness, Role};

const S: i128 = 1_000_000_000;
const T0: i128 = 1_700_000_000 * S;

fn ev(check: &str, role: &str) -> Evidence {
    Evidence {
        check: check.into(),
        role: role.into(),
        container: None,
        figure: String::new(),
        value: 1.0,
        threshold: 0.0,
        unit: "%".into(),
    }
}

#[test]
fn the_reason_names_the_first_evidence() {
    assert_eq!(
        reason(&[ev("cpu", "fault-proxy"), ev("oom", "balancer")]),
        "fault-proxy-cpu"
    );
    assert_eq!(
        reason(&[ev("dropped-iterations", "load-generator")]),
        "load-generator-dropped-iterations"
    );
    assert_eq!(reason(&[ev("Odd check/..", " x ")]), "x-odd-check");
    assert_eq!(reason(&[]), "unspecified");
}

fn schedule() -> Schedule {
    Schedule {
        start_rate: 10.0,
        stages: vec![Stage {
            duration_s: 30.0,
            target: 10.0,
        }],
    }
}

fn sample(name: &str, role: &str, t: i128, cpu: f64) -> Sample {
    Sample {
        unix_ns: T0 + t * S,
        offset_s: t as f64,
        container: name.into(),
        role: role.into(),
        status: SampleStatus::Ok,
        cpu_usage_s: Some(cpu),
        cpu_periods: Some(0),
        cpu_throttled_periods: Some(0),
        oom_kills: Some(0),
        detail: String::new(),
    }
}

fn on_time() -> Vec<i128> {
    (0..300).map(|i| T0 + i * S / 10).collect()
}

/// requests.csv with one request at each of `on_time`'s starts.
fn write_requests_on_time(dir: &std::path::Path) {
    use std::fmt::Write as _;
    let mut requests = String::from("start_ns,end_ns,route,method,status,duration_ms,error\n");
    for t in on_time() {
        writeln!(requests, "{t},{},r,GET,200,1.0,", t + 1000).unwrap();
    }
    std::fs::write(dir.join("requests.csv"), requests).unwrap();
}

/// The requests' start times as the executor reads them.
fn request_starts(dir: &std::path::Path) -> Vec<i128> {
    read_request_starts(&dir.join("requests.csv")).unwrap()
}

/// A load summary whose scenario started at `T0`.
fn started_at_t0() -> LoadSummary {
    LoadSummary {
        scenario_start_ns: Some(T0 as u64),
        ..Default::default()
    }
}

/// events.csv with a fault on `subject` applied at 12 s and cleared at 18 s.
fn fault_from_12_to_18_s(subject: &str) -> String {
    format!(
        "wall_ns,t_s,event,subject,detail\n{},12,fault-applied,{subject},\n{},18,fault-cleared,{subject},\n",
        T0 + 12 * S,
        T0 + 18 * S
    )
}

#[test]
fn check_runs_every_check_in_order_and_warns_on_missing_containers() {
    let s = schedule();
    let containers = [
        PathContainer {
            name: "lg".into(),
            role: "load-generator".into(),
            cpus: Some(1.0),
        },
        PathContainer {
            name: "fp".into(),
            role: "fault-proxy".into(),
            cpus: Some(0.1),
        },
    ];
    let run = Run {
        window: Window {
            start_ns: T0 + 5 * S,
            end_ns: T0 + 30 * S,
        },
        scenario_start_ns: T0,
        schedule: &s,
        containers: &containers,
        // feedbench-load: 30 starts of the first second later than max-lag.
        drops: Some(Drops {
            per_second: &[30],
            late_per_second: Some(&[30]),
        }),
        fault: None,
    };
    // The fault proxy runs at its full cap; a replica's rows are not the measurement path;
    // an unlisted balancer is picked up from its role; the load generator has no rows.
    let mut samples: Vec<Sample> = (0..31)
        .map(|t| sample("fp", "fault-proxy", t, t as f64 * 0.1))
        .collect();
    samples.extend((0..31).map(|t| sample("r1", "replica-1", t, t as f64 * 4.0)));
    samples.extend((0..31).map(|t| sample("b", "balancer", t, t as f64 * 4.0)));
    samples[3].oom_kills = Some(1);
    let data = Data {
        samples,
        request_starts: on_time(),
        events: Vec::new(),
        host: HostRows::Absent,
    };
    let limits = Limits::from_guards(&Guards::default());
    assert_eq!(limits.arrival_tolerance_pct, ARRIVAL_TOLERANCE_PCT);
    let out = check(&run, &data, &limits);
    let found: Vec<(&str, &str)> = out
        .evidence
        .iter()
        .map(|e| (e.check.as_str(), e.role.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            ("cpu", "fault-proxy"),
            ("dropped-iterations", "load-generator"),
            ("oom", "fault-proxy")
        ]
    );
    assert_eq!(out.evidence[1].container.as_deref(), Some("lg"));
    assert_eq!(reason(&out.evidence), "fault-proxy-cpu");
    assert_eq!(out.warnings.len(), 2, "{:?}", out.warnings);
    assert!(out.warnings[0].contains("host-interference not evaluated: the run has no host.csv"));
    assert!(out.warnings[1].contains("load-generator (lg)"));
}

fn spec(name: &str, role: Role, nano_cpus: i64) -> ContainerSpec {
    ContainerSpec {
        name: name.into(),
        role,
        image: "img".into(),
        env: Vec::new(),
        cmd: None,
        nano_cpus,
        memory_bytes: 1 << 30,
        labels: BTreeMap::new(),
        files: Vec::new(),
        mounts: Vec::new(),
        stage: 0,
        readiness: Readiness::NotStarted,
        attach: Default::default(),
    }
}

fn topology() -> RunTopology {
    RunTopology {
        study: "s".into(),
        run_id: "r".into(),
        network: "n".into(),
        labels: BTreeMap::new(),
        containers: vec![
            spec("db", Role::Database, 1_000_000_000),
            spec("lg", Role::LoadGenerator, 500_000_000),
            spec("bal", Role::Balancer, 0),
        ],
        proxies: Vec::new(),
        total_cpus: 1.5,
        haproxy_cfg: String::new(),
        balancer_check: Default::default(),
    }
}

fn script() -> LoadScript {
    LoadScript {
        generator: crate::plan::model::LoadGeneratorKind::K6,
        script: String::new(),
        kind: "constant",
        executor: "constant-arrival-rate",
        measured_start_s: 5.0,
        duration_s: 30.0,
        scheduled_arrivals: 300.0,
        pre_allocated_vus: 1,
        max_vus: 1,
        request_timeout_s: 1.0,
        schedule: schedule(),
    }
}

#[test]
fn path_containers_carry_their_caps() {
    let c = path_containers(&topology());
    assert_eq!(
        c,
        [
            PathContainer {
                name: "lg".into(),
                role: "load-generator".into(),
                cpus: Some(0.5)
            },
            PathContainer {
                name: "bal".into(),
                role: "balancer".into(),
                cpus: None
            },
        ]
    );
}

#[test]
fn assess_reads_the_run_directory() {
    use std::fmt::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let mut containers = format!("{}\n", crate::rundir::samples::CONTAINERS_HEADER);
    for t in 0..31 {
        for name in ["lg", "bal"] {
            let role = if name == "lg" {
                "load-generator"
            } else {
                "balancer"
            };
            let cpu = if t < 10 { 0.0 } else { (t - 10) as f64 * 0.5 };
            writeln!(
                containers,
                "{},{t}.0,{t},{name},{role},cgroup,ok,{cpu},,,{},0,0,1,1,1,,0,0,0,",
                T0 + t * S,
                t * 10
            )
            .unwrap();
        }
    }
    std::fs::write(dir.path().join("containers.csv"), containers).unwrap();
    // A quiet host: a quarter of a core outside the study, of two.
    let mut host = format!("{}\n", crate::rundir::host::HOST_HEADER);
    for t in 0..40 {
        writeln!(
            host,
            "{},{t}.0,{t},ok,1.0,2,0.75,0,0,0.4,0.05,0.05,1.5,",
            T0 + t * S
        )
        .unwrap();
    }
    std::fs::write(dir.path().join("host.csv"), host).unwrap();
    write_requests_on_time(dir.path());
    std::fs::write(
        dir.path().join("events.csv"),
        "wall_ns,t_s,event,subject,detail\n",
    )
    .unwrap();
    let load = started_at_t0();
    let (topo, script, guards) = (topology(), script(), Guards::default());
    let facts = |load, checked_until_ns| Facts {
        topo: &topo,
        script: &script,
        load,
        guards: &guards,
        fault: None,
        checked_until_ns,
    };
    let starts = || request_starts(dir.path());
    let out = assess(dir.path(), &facts(Some(&load), None), starts()).unwrap();
    // The load generator used its whole 0.5-CPU cap from t = 10 s on.
    assert_eq!(out.evidence.len(), 1, "{out:?}");
    assert_eq!(
        (out.evidence[0].check.as_str(), out.evidence[0].value),
        ("cpu", 100.0)
    );
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    let host = out.host.as_ref().unwrap();
    assert!((host.outside_cores - 0.25).abs() < 1e-9, "{host:?}");
    assert!((host.interference_pct - 12.5).abs() < 1e-9);
    // A damaged host.csv costs the host's check alone: the rest is judged, with a warning.
    let quiet = std::fs::read_to_string(dir.path().join("host.csv")).unwrap();
    std::fs::write(
        dir.path().join("host.csv"),
        quiet.replacen(",0.75,", ",x,", 1),
    )
    .unwrap();
    let damaged = assess(dir.path(), &facts(Some(&load), None), starts()).unwrap();
    assert_eq!(damaged.evidence, out.evidence);
    assert!(damaged.host.is_none());
    assert!(
        damaged.warnings.len() == 1
            && damaged.warnings[0].contains("host-interference not evaluated: `")
            && damaged.warnings[0].contains("host.csv` line 2, column `busy_s`: `x` is not"),
        "{:?}",
        damaged.warnings
    );
    // A negative CPU time is damage too, named where it is, never a figure read as missing.
    std::fs::write(
        dir.path().join("host.csv"),
        quiet.replacen(",0,0,0.4,", ",0,-0.5,0.4,", 1),
    )
    .unwrap();
    let negative = assess(dir.path(), &facts(Some(&load), None), starts()).unwrap();
    assert!(negative.host.is_none());
    assert!(
        negative.warnings.len() == 1
            && negative.warnings[0].contains("line 2, column `steal_s`: `-0.5` is not"),
        "{:?}",
        negative.warnings
    );
    std::fs::write(dir.path().join("host.csv"), quiet).unwrap();
    // A ramp stopped at its knee whose first breach ended at t = 10 s is judged up to
    // there: the load generator was idle until then.
    let stopped = assess(dir.path(), &facts(Some(&load), Some(T0 + 10 * S)), starts()).unwrap();
    assert!(stopped.evidence.is_empty(), "{stopped:?}");

    // A freeze of replica 1 from 12 s to 18 s whose replica went on at a quarter of a core:
    // the effect is judged from the same files, by the same call.
    let mut frozen = std::fs::read_to_string(dir.path().join("containers.csv")).unwrap();
    for t in 10..20 {
        let cpu = t as f64 * 0.25;
        writeln!(
            frozen,
            "{},{t}.0,{t},rep,replica-1,cgroup,ok,{cpu},,,0,0,0,1,1,1,,0,0,0,",
            T0 + t * S
        )
        .unwrap();
    }
    std::fs::write(dir.path().join("containers.csv"), frozen).unwrap();
    std::fs::write(
        dir.path().join("events.csv"),
        fault_from_12_to_18_s("replica-1"),
    )
    .unwrap();
    let mut with_replica = topology();
    with_replica
        .containers
        .push(spec("rep", Role::Replica(1), 500_000_000));
    let freeze = crate::plan::model::Injection::FreezeReplica { replica: 1 };
    let frozen_facts = |load| Facts {
        topo: &with_replica,
        fault: Some(&freeze),
        ..facts(load, None)
    };
    let out = assess(dir.path(), &frozen_facts(Some(&load)), starts()).unwrap();
    let checks: Vec<(&str, &str)> = out
        .evidence
        .iter()
        .map(|e| (e.check.as_str(), e.role.as_str()))
        .collect();
    assert_eq!(
        checks,
        [
            ("cpu", "load-generator"),
            ("fault-not-applied", "replica-1")
        ]
    );
    assert!((out.evidence[1].value - 0.25).abs() < 1e-9, "{out:?}");

    // A fault on a replica the topology lacks cannot be judged, and says so.
    let missing = crate::plan::model::Injection::FreezeReplica { replica: 9 };
    let unjudged = Facts {
        fault: Some(&missing),
        ..facts(Some(&load), None)
    };
    let out = assess(dir.path(), &unjudged, starts()).unwrap();
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("freeze-replica fault not evaluated")),
        "{out:?}"
    );
    let no_start = LoadSummary::default();
    let out = assess(dir.path(), &frozen_facts(Some(&no_start)), starts()).unwrap();
    assert_eq!(
        out.evidence.len(),
        1,
        "the fault is judged without a window: {out:?}"
    );
    assert_eq!(out.evidence[0].check, "fault-not-applied");
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("not assessed") && w.contains("scenario start")),
        "{out:?}"
    );
    std::fs::remove_file(dir.path().join("events.csv")).unwrap();
    let e = assess(dir.path(), &facts(Some(&load), None), starts());
    assert!(matches!(e, Err(ValidityError::Open { .. })));
}

#[test]
fn a_link_fault_is_judged_from_links_csv_after_the_measurement_path() {
    use crate::rundir::links::{LinkRow, Outcome, LINKS_HEADER};
    use std::fmt::Write as _;
    let dir = tempfile::tempdir().unwrap();
    // The load generator at its whole cap from t = 10 s: the measurement path's evidence.
    let mut containers = format!("{}\n", crate::rundir::samples::CONTAINERS_HEADER);
    for t in 0..31 {
        let cpu = if t < 10 { 0.0 } else { (t - 10) as f64 * 0.5 };
        writeln!(
            containers,
            "{},{t}.0,{t},lg,load-generator,cgroup,ok,{cpu},,,{},0,0,1,1,1,,0,0,0,",
            T0 + t * S,
            t * 10
        )
        .unwrap();
    }
    std::fs::write(dir.path().join("containers.csv"), containers).unwrap();
    write_requests_on_time(dir.path());
    let fault_events = fault_from_12_to_18_s("db");
    std::fs::write(dir.path().join("events.csv"), &fault_events).unwrap();
    // A proxy that took the +100 ms and applied none of it: 1 ms throughout.
    let mut links = format!("{LINKS_HEADER}\n");
    for t in 0..31 {
        LinkRow {
            unix_ns: T0 + t * S,
            offset_s: t as f64,
            tick: t as u64,
            link: "db".into(),
            outcome: Outcome::Ok,
            round_trip_ns: Some(1_000_000),
            detail: String::new(),
        }
        .write_csv(&mut links);
    }
    std::fs::write(dir.path().join("links.csv"), &links).unwrap();
    let mut topo = topology();
    topo.containers.push(spec("fp", Role::FaultProxy, 0));
    let latency = crate::plan::model::Injection::LinkLatency {
        link: serde_json::from_value(serde_json::json!("db")).unwrap(),
        latency: crate::plan::units::Duration { millis: 100 },
        jitter: crate::plan::units::Duration { millis: 0 },
    };
    let (script, guards) = (script(), Guards::default());
    let load = started_at_t0();
    let facts = Facts {
        topo: &topo,
        script: &script,
        load: Some(&load),
        guards: &guards,
        fault: Some(&latency),
        checked_until_ns: None,
    };
    let starts = || request_starts(dir.path());
    let out = assess(dir.path(), &facts, starts()).unwrap();
    let checks: Vec<(&str, &str)> = out
        .evidence
        .iter()
        .map(|e| (e.check.as_str(), e.role.as_str()))
        .collect();
    // The measurement path's first: it names where the run is set aside.
    assert_eq!(
        checks,
        [
            ("cpu", "load-generator"),
            ("fault-not-applied", "fault-proxy")
        ]
    );
    assert_eq!(out.evidence[1].container.as_deref(), Some("fp"));
    assert_eq!(out.link.as_ref().unwrap().added_ms, Some(0.0));

    // A refused action is the evidence by itself: the probes are not read.
    std::fs::write(
        dir.path().join("events.csv"),
        format!(
            "{fault_events}{},12,fault-apply-failed,db,refused\n",
            T0 + 12 * S
        ),
    )
    .unwrap();
    let out = assess(dir.path(), &facts, starts()).unwrap();
    let refused: Vec<&str> = out
        .evidence
        .iter()
        .filter(|e| e.check == "fault-not-applied")
        .map(|e| e.figure.as_str())
        .collect();
    assert_eq!(refused.len(), 1, "{out:?}");
    assert!(refused[0].contains("fault-apply-failed"), "{out:?}");
    assert!(out.link.is_none());

    // A damaged links.csv costs this check alone, with a warning naming the place.
    std::fs::write(dir.path().join("events.csv"), &fault_events).unwrap();
    std::fs::write(
        dir.path().join("links.csv"),
        links.replacen(",db,ok,", ",db,fine,", 1),
    )
    .unwrap();
    let out = assess(dir.path(), &facts, starts()).unwrap();
    assert_eq!(out.evidence.len(), 1, "{out:?}");
    assert!(
        out.warnings.iter().any(
            |w| w.contains("fault-not-applied of fault-proxy not evaluated")
                && w.contains("links.csv` line 2, column `outcome`")
        ),
        "{out:?}"
    );
}

#[test]
fn a_kill_is_judged_from_its_samples_then_from_the_balancer_taking_its_server_out() {
    use std::fmt::Write as _;
    let dir = tempfile::tempdir().unwrap();
    // The replica read down from 12 s to 17 s, ok otherwise.
    let mut containers = format!("{}\n", crate::rundir::samples::CONTAINERS_HEADER);
    for t in 0..31 {
        let status = if (12..18).contains(&t) { "down" } else { "ok" };
        writeln!(
            containers,
            "{},{t}.0,{t},rep,replica-1,cgroup,{status},{},,,0,0,0,1,1,1,,0,0,0,",
            T0 + t * S,
            t as f64 * 0.1
        )
        .unwrap();
    }
    std::fs::write(dir.path().join("containers.csv"), &containers).unwrap();
    write_requests_on_time(dir.path());
    std::fs::write(
        dir.path().join("events.csv"),
        fault_from_12_to_18_s("replica-1"),
    )
    .unwrap();
    let mut topo = topology();
    topo.containers
        .push(spec("rep", Role::Replica(1), 500_000_000));
    // Two failed checks a second apart: a kill of 6 s is long enough to be seen.
    topo.balancer_check.fall = 2;
    let kill = crate::plan::model::Injection::KillReplica { replica: 1 };
    let (script, guards) = (script(), Guards::default());
    let load = started_at_t0();
    let facts = Facts {
        topo: &topo,
        script: &script,
        load: Some(&load),
        guards: &guards,
        fault: Some(&kill),
        checked_until_ns: None,
    };
    let starts = || request_starts(dir.path());
    let judged = |health: Option<String>| {
        let path = dir.path().join("health.csv");
        match health {
            Some(h) => std::fs::write(&path, h).unwrap(),
            None => {
                let _ = std::fs::remove_file(&path);
            }
        }
        assess(dir.path(), &facts, starts()).unwrap()
    };
    let marked = format!("wall_ns,server,state\n{},replica-1,DOWN\n", T0 + 14 * S);
    let out = judged(Some(marked));
    assert!(out.evidence.is_empty(), "{out:?}");
    assert!(
        !out.warnings.iter().any(|w| w.contains("fault-not-applied")),
        "{out:?}"
    );
    // The balancer kept the dead server in: evidence, naming the balancer.
    let out = judged(Some("wall_ns,server,state\n".into()));
    let found: Vec<(&str, &str, Option<&str>)> = out
        .evidence
        .iter()
        .map(|e| (e.check.as_str(), e.role.as_str(), e.container.as_deref()))
        .collect();
    assert_eq!(found, [("fault-not-applied", "balancer", Some("bal"))]);
    // No health.csv: said, never passed.
    let out = judged(None);
    assert!(out.evidence.is_empty(), "{out:?}");
    assert!(
        out.warnings.iter().any(|w| w.starts_with(
            "validity: fault-not-applied of balancer (bal) for replica-1 not evaluated"
        ) && w.contains("health.csv` is missing")),
        "{out:?}"
    );
    // A replica started again at 18 s and refusing its probe for 1.5 s after: a DOWN at
    // 20 s, past the clear's 1 s slack, was marked while it failed its checks. A damaged
    // readiness.csv is said, and the span ends at the clear again, where no DOWN is: not
    // evaluated, never evidence.
    let mut events = fault_from_12_to_18_s("replica-1");
    writeln!(events, "{},18,replica-starting,replica-1,", T0 + 18 * S).unwrap();
    std::fs::write(dir.path().join("events.csv"), events).unwrap();
    let readiness = dir.path().join("readiness.csv");
    std::fs::write(
        &readiness,
        format!(
            "start_ns,end_ns,server,status,error\n{a},{a},replica-1,0,refused\n{b},{b},replica-1,0,refused\n{c},{c},replica-1,200,\n",
            a = T0 + 18 * S,
            b = T0 + 19 * S + S / 2,
            c = T0 + 19 * S + 6 * S / 10
        ),
    )
    .unwrap();
    let booting = format!("wall_ns,server,state\n{},replica-1,DOWN\n", T0 + 20 * S);
    let out = judged(Some(booting.clone()));
    assert!(out.evidence.is_empty(), "{out:?}");
    assert!(
        !out.warnings.iter().any(|w| w.contains("fault-not-applied")),
        "{out:?}"
    );
    std::fs::write(
        &readiness,
        "start_ns,end_ns,server,status,error\n1,x,replica-1,0,\n",
    )
    .unwrap();
    let out = judged(Some(booting));
    assert!(out.evidence.is_empty(), "{out:?}");
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("how long the replica booted is unknown")
                && w.contains("readiness.csv")),
        "{out:?}"
    );
    std::fs::remove_file(&readiness).unwrap();
    // A replica never down is the samples' evidence alone.
    std::fs::write(
        dir.path().join("containers.csv"),
        containers.replace(",down,", ",ok,"),
    )
    .unwrap();
    let out = judged(Some("wall_ns,server,state\n".into()));
    let roles: Vec<&str> = out.evidence.iter().map(|e| e.role.as_str()).collect();
    assert_eq!(roles, ["replica-1"], "{out:?}");
}
