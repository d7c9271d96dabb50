//! The binary against an in-process server on 127.0.0.1: rows, per-second records, errors,
//! the connection cap, bad plans and interruption.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::server::{start_closing, Behaviour, Closing, Server};
use common::{plan, read_output, run, spawn, wait, wait_for_output, Dir};
use feedbench_load::draws;
use feedbench_load::stream::Reason;

const DEADLINE: Duration = Duration::from_secs(30);

#[test]
fn a_constant_rate_follows_the_schedule_and_the_draws() {
    let server = Server::start(Behaviour::default());
    let dir = Dir::new("constant");
    let plan = plan(&server.url(), 200.0, 2.0);
    let (_, _, out) = run(&plan, &dir, DEADLINE);
    let rows = &out.rows;
    assert!(rows.len().abs_diff(400) <= 4, "{} rows", rows.len());
    assert_eq!(out.end.requests, rows.len() as u64);
    assert_eq!(out.end.requests + out.end.dropped, 400);
    assert_eq!((out.end.errors, out.end.reason), (0, Reason::Completed));
    // One record per second, every scheduled iteration accounted for.
    assert_eq!(out.seconds.iter().map(|s| s.t).collect::<Vec<_>>(), [0, 1]);
    for s in &out.seconds {
        assert_eq!(s.scheduled, 200, "{s:?}");
        assert_eq!(s.started + s.dropped_cap + s.dropped_late, 200, "{s:?}");
        assert!(s.connections >= 1 && s.in_flight >= 1, "{s:?}");
    }
    // Iteration n is scheduled at n / 200 s and sends draws::request(plan, n).
    let mut by_n = BTreeMap::new();
    for row in rows {
        let offset_ns = row.scheduled_ns - out.start_ns;
        let n = (offset_ns as f64 / 5e6).round() as u64;
        assert!(offset_ns.abs_diff(n * 5_000_000) <= 1, "{row:?}");
        assert!(by_n.insert(n, row).is_none(), "iteration {n} twice");
        let drawn = draws::request(&plan, n);
        assert_eq!(row.route, plan.routes[drawn.route].name);
        assert_eq!(row.method, plan.routes[drawn.route].method);
        assert_eq!((row.status, row.error.as_str()), (200, ""));
        assert!(row.start_ns >= row.scheduled_ns && row.end_ns >= row.start_ns);
        assert!(row.duration_ms * 1e6 <= (row.end_ns - row.start_ns) as f64 + 1e3);
    }
    // The server got exactly the drawn requests.
    let mut want: Vec<(String, String, String)> = by_n
        .keys()
        .map(|&n| {
            let d = draws::request(&plan, n);
            let method = plan.routes[d.route].method.clone();
            (method, d.path, d.body.unwrap_or_default())
        })
        .collect();
    let seen = server.seen();
    let mut got: Vec<(String, String, String)> = seen
        .iter()
        .map(|s| (s.method.clone(), s.path.clone(), s.body.clone()))
        .collect();
    want.sort();
    got.sort();
    assert_eq!(got, want);
    for s in &seen {
        let json = (s.method == "POST").then(|| "application/json".to_string());
        assert_eq!(s.content_type, json);
        assert!(s
            .user_agent
            .as_deref()
            .unwrap_or("")
            .starts_with("feedbench-load/"));
    }
}

#[test]
fn a_slow_server_gives_timeouts() {
    let server = Server::start(Behaviour {
        delay: Duration::from_secs(5),
        ..Behaviour::default()
    });
    let dir = Dir::new("timeout");
    let mut plan = plan(&server.url(), 10.0, 1.0);
    plan.timeout_ms = 200;
    let (_, _, out) = run(&plan, &dir, DEADLINE);
    assert_eq!(out.rows.len(), 10);
    for row in &out.rows {
        assert_eq!(
            (row.status, row.error.as_str()),
            (0, "1050 request timeout")
        );
        assert!((150.0..1000.0).contains(&row.duration_ms), "{row:?}");
    }
    assert_eq!(out.end.errors, 10);
}

#[test]
fn http_errors_get_k6_codes() {
    let server = Server::start(Behaviour {
        status: 404,
        ..Behaviour::default()
    });
    let dir = Dir::new("status");
    let (_, _, out) = run(&plan(&server.url(), 20.0, 0.5), &dir, DEADLINE);
    assert_eq!(out.rows.len(), 10);
    assert!(out
        .rows
        .iter()
        .all(|r| r.status == 404 && r.error == "1404"));
    assert_eq!(out.end.errors, 10);
}

#[test]
fn the_connection_cap_drops_starts() {
    let server = Server::start(Behaviour {
        delay: Duration::from_millis(500),
        ..Behaviour::default()
    });
    let dir = Dir::new("cap");
    let mut plan = plan(&server.url(), 20.0, 1.0);
    plan.max_connections = 2;
    let (_, _, out) = run(&plan, &dir, DEADLINE);
    let dropped_cap: u64 = out.seconds.iter().map(|s| s.dropped_cap).sum();
    // Two connections, each busy 0.5 s: about 4 of the 20 starts get one.
    assert!(dropped_cap >= 10, "{:?}", out.seconds);
    assert_eq!(out.end.dropped, dropped_cap);
    assert_eq!(out.rows.len() as u64 + dropped_cap, 20);
    assert!(out
        .seconds
        .iter()
        .all(|s| s.connections <= 2 && s.in_flight <= 2));
    assert!(out.rows.iter().all(|r| r.status == 200));
}

#[test]
fn a_refused_target_gives_dial_errors() {
    let dir = Dir::new("refused");
    let (_, _, out) = run(&plan("http://127.0.0.1:1", 10.0, 1.0), &dir, DEADLINE);
    assert_eq!(out.rows.len(), 10);
    for row in &out.rows {
        assert_eq!(
            (row.status, row.error.as_str()),
            (0, "1212 dial: connection refused")
        );
        assert_eq!(row.duration_ms, 0.0);
    }
    assert_eq!(out.end.reason, Reason::Completed);
}

#[test]
fn closed_keep_alive_connections_are_not_errors() {
    for closing in [Closing::AfterResponse, Closing::OnSecondRequest] {
        let addr = start_closing(closing);
        let dir = Dir::new("closing");
        let mut plan = plan(&format!("http://{addr}"), 20.0, 1.0);
        // GETs only: the raw server reads no bodies.
        plan.routes.truncate(1);
        plan.cumulative_weights.truncate(1);
        plan.total_weight = plan.cumulative_weights[0];
        let (_, _, out) = run(&plan, &dir, DEADLINE);
        assert_eq!(out.rows.len(), 20, "{closing:?}");
        for row in &out.rows {
            assert_eq!((row.status, row.error.as_str()), (200, ""), "{closing:?}");
        }
    }
}

/// Runs the binary on a plan file's text; returns the exit code and stderr.
fn refused_plan(name: &str, text: &str) -> (Option<i32>, String) {
    let dir = Dir::new(name);
    let file = dir.path("plan.json");
    std::fs::write(&file, text).expect("write plan");
    let mut child = spawn(&file, &dir.path("out.csv"));
    let (status, stderr) = wait(&mut child, DEADLINE);
    (
        status.code(),
        stderr.replace(&file.display().to_string(), "PLAN"),
    )
}

#[test]
fn a_bad_plan_exits_2_naming_file_line_and_column() {
    let mut json = plan("http://127.0.0.1:1", 1.0, 1.0).to_json();
    json = json.replacen("\"seed\": 7", "\"seed\": \"seven\"", 1);
    let (code, stderr) = refused_plan("bad-type", &json);
    assert_eq!(code, Some(2));
    assert!(stderr.starts_with("feedbench-load: PLAN:3:"), "{stderr}");
    assert!(
        stderr.contains("invalid type: string \"seven\""),
        "{stderr}"
    );

    let mut bad = plan("https://127.0.0.1:1", 1.0, 1.0);
    bad.max_connections = 1;
    let (code, stderr) = refused_plan("https", &bad.to_json());
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("PLAN: base_url `https://127.0.0.1:1` uses https"),
        "{stderr}"
    );

    let unknown = plan("http://no-such-host.invalid:80", 1.0, 1.0).to_json();
    let (code, stderr) = refused_plan("resolve", &unknown);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("cannot resolve no-such-host.invalid (from base_url in PLAN)"),
        "{stderr}"
    );
}

#[test]
fn an_unwritable_output_exits_2() {
    let dir = Dir::new("unwritable");
    let file = dir.path("load.json");
    std::fs::write(&file, plan("http://127.0.0.1:1", 1.0, 1.0).to_json()).expect("plan");
    let out = dir.path("missing-dir/load.csv");
    let mut child = spawn(&file, &out);
    let (status, stderr) = wait(&mut child, DEADLINE);
    assert_eq!(status.code(), Some(2));
    assert!(stderr.contains("cannot create the output file"), "{stderr}");
    assert!(stderr.contains("missing-dir/load.csv"), "{stderr}");
}

#[test]
fn sigint_ends_the_run_as_interrupted() {
    let server = Server::start(Behaviour::default());
    let dir = Dir::new("sigint");
    let (file, out) = (dir.path("load.json"), dir.path("load.csv"));
    std::fs::write(&file, plan(&server.url(), 50.0, 60.0).to_json()).expect("plan");
    let mut child = spawn(&file, &out);
    // Once a second has been written, the run is under way.
    wait_for_output(&out, DEADLINE, |text| text.contains("#second t=0 "));
    let pid = i32::try_from(child.id()).expect("pid");
    // SAFETY: kill only sends a signal to the child started above.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let (status, stderr) = wait(&mut child, DEADLINE);
    assert!(status.success(), "{status}: {stderr}");
    let output = read_output(&out);
    assert_eq!(output.end.reason, Reason::Interrupted);
    assert!(output.rows.len() >= 50, "{}", output.rows.len());
    assert!(output.seconds.len() >= 2 && output.seconds.len() < 60);
    let started: u64 = output.seconds.iter().map(|s| s.started).sum();
    assert_eq!(started, output.end.requests);
}

#[test]
fn help_and_version() {
    let run = |arg: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_feedbench-load"))
            .arg(arg)
            .output()
            .expect("run")
    };
    let help = run("--help");
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("--plan FILE"));
    let version = run("--version");
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("feedbench-load "));
    let wrong = run("--bogus");
    assert_eq!(wrong.status.code(), Some(2));
}

#[test]
fn a_schedule_it_cannot_keep_is_reported_second_by_second() {
    let server = Server::start(Behaviour::default());
    let dir = Dir::new("late");
    let (file, out) = (dir.path("load.json"), dir.path("load.csv"));
    let mut p = plan(&server.url(), 50.0, 4.0);
    p.max_lag_ms = 100;
    std::fs::write(&file, p.to_json()).expect("plan");
    let mut child = spawn(&file, &out);
    wait_for_output(&out, DEADLINE, |text| text.contains("#second t=0 "));
    let pid = i32::try_from(child.id()).expect("pid");
    // The generator is held stopped for 800 ms, as a CPU cap or a busy host would hold it:
    // the ~40 starts scheduled meanwhile are all later than max-lag when it runs again.
    // SAFETY: kill only sends signals to the child started above.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(unsafe { libc::kill(pid, libc::SIGCONT) }, 0);
    let (status, stderr) = wait(&mut child, DEADLINE);
    assert!(status.success(), "{status}: {stderr}");
    let output = read_output(&out);
    let late: u64 = output.seconds.iter().map(|s| s.dropped_late).sum();
    assert!(late >= 25, "{:?}", output.seconds);
    // Never hidden: each late start is counted in its own second, with that second's lag.
    let worst = output
        .seconds
        .iter()
        .map(|s| s.max_lag_ms)
        .fold(0.0, f64::max);
    assert!(worst >= 100.0, "{:?}", output.seconds);
    for s in &output.seconds {
        assert_eq!(
            s.started + s.dropped_cap + s.dropped_late,
            s.scheduled,
            "{s:?}"
        );
    }
    assert_eq!(output.end.dropped, late);
    assert_eq!(output.rows.len() as u64 + late, 200);
    assert!(output
        .rows
        .iter()
        .all(|r| r.start_ns - r.scheduled_ns <= 100_000_000));
    assert_eq!(output.end.reason, Reason::Completed);
}
