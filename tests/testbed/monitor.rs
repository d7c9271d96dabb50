//! The monitors against the real Docker engine: a CPU-capped stress-ng container, two idle
//! ones (one killed and restarted mid-way) and an HAProxy, sampled for about nine seconds by
//! the cgroup source and the engine-API source at once; and the working set of a stress-ng
//! worker that touched 64 MiB against the same worker touching 4 KiB. Every container and the network
//! carry `feedbench.study=test-monitor` and are removed afterwards, also when a check fails.
//! The test needs the Docker engine and the images, so it is tier 2's: `-- --ignored`
//! runs it (scripts/test does), and it fails when the engine or an image is missing.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::time::Duration;

use bollard::container::{Config, CreateContainerOptions, UploadToContainerOptions};
use bollard::models::HostConfig;
use feedbench::engine::runtime::Runtime;
use feedbench::run::monitor::{self, MonitorOptions, MonitorSummary, Source, Target};
use futures_util::FutureExt;

const STUDY: &str = "test-monitor";
const NETWORK: &str = "fb-test-monitor";
const STRESS: &str = "feedbench/stress:0.15";
const BASE: &str = "feedbench/base:bookworm";
const HAPROXY: &str = "feedbench/haproxy:2.6";
const STRESSED: &str = "fb-test-monitor-stress";
const IDLE: &str = "fb-test-monitor-idle";
const VICTIM: &str = "fb-test-monitor-victim";
const BALANCER: &str = "fb-test-monitor-balancer";
const CAP: f64 = 0.3;
const SECONDS: u64 = 9;

const HAPROXY_CFG: &str = "global\n    maxconn 64\n\
defaults\n    mode http\n    timeout connect 500ms\n    timeout client 5s\n    timeout server 5s\n\
frontend stats\n    bind :8404\n    stats enable\n    stats uri /stats\n\
backend replicas\n    default-server inter 300ms fall 1 rise 1\n    server replica-1 127.0.0.1:9 check\n";

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
pub async fn monitors_sample_every_container_every_second() {
    let rt = Runtime::connect().await.unwrap_or_else(|e| {
        panic!("this test needs the Docker engine, which is unavailable ({e}); install and start Docker (dockerd)")
    });
    for image in [STRESS, BASE, HAPROXY] {
        assert!(
            rt.docker().inspect_image(image).await.is_ok(),
            "this test needs image {image}, which is missing; build it with `feedbench images build`"
        );
    }
    rt.clean(&feedbench::engine::runtime::Scope::study(STUDY))
        .await
        .expect("cleaning up before");
    let outcome = AssertUnwindSafe(scenario(&rt)).catch_unwind().await;
    let removed = rt
        .clean(&feedbench::engine::runtime::Scope::study(STUDY))
        .await
        .expect("cleaning up after");
    eprintln!("removed {:?}", removed.containers);
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

fn labels(role: &str) -> HashMap<String, String> {
    [("feedbench.study", STUDY), ("feedbench.role", role)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

async fn create(rt: &Runtime, name: &str, image: &str, role: &str, cmd: &[&str], nano_cpus: i64) {
    create_capped(rt, name, image, role, cmd, (nano_cpus, 64 << 20)).await
}

async fn create_capped(
    rt: &Runtime,
    name: &str,
    image: &str,
    role: &str,
    cmd: &[&str],
    (nano_cpus, memory): (i64, i64),
) {
    let config = Config {
        image: Some(image.to_string()),
        cmd: Some(cmd.iter().map(|s| s.to_string()).collect()),
        labels: Some(labels(role)),
        host_config: Some(HostConfig {
            nano_cpus: Some(nano_cpus),
            memory: Some(memory),
            memory_swap: Some(memory),
            network_mode: Some(NETWORK.to_string()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let options = CreateContainerOptions {
        name: name.to_string(),
        platform: None,
    };
    rt.docker()
        .create_container(Some(options), config)
        .await
        .unwrap_or_else(|e| panic!("create {name}: {e}"));
}

async fn scenario(rt: &Runtime) {
    let net_labels: HashMap<String, String> =
        [("feedbench.study".to_string(), STUDY.to_string())].into();
    rt.ensure_network(NETWORK, &net_labels)
        .await
        .expect("network");
    let cap = (CAP * 1e9) as i64;
    create(
        rt,
        STRESSED,
        STRESS,
        "replica",
        &["--cpu", "1", "--timeout", "40s"],
        cap,
    )
    .await;
    create(rt, IDLE, BASE, "database", &["sleep", "60"], 500_000_000).await;
    create(
        rt,
        VICTIM,
        BASE,
        "fault-proxy",
        &["sleep", "60"],
        500_000_000,
    )
    .await;
    create(
        rt,
        BALANCER,
        HAPROXY,
        "balancer",
        &["haproxy", "-f", "/usr/local/etc/haproxy/haproxy.cfg"],
        500_000_000,
    )
    .await;
    upload_cfg(rt).await;
    for name in [STRESSED, IDLE, VICTIM, BALANCER] {
        rt.start(name)
            .await
            .unwrap_or_else(|e| panic!("start {name}: {e}"));
    }
    let balancer_ip: IpAddr = rt
        .address(BALANCER, NETWORK)
        .await
        .expect("balancer address");
    let stats = SocketAddr::new(balancer_ip, 8404);
    let targets: Vec<Target> = [
        (STRESSED, "replica"),
        (IDLE, "database"),
        (VICTIM, "fault-proxy"),
        (BALANCER, "balancer"),
    ]
    .into_iter()
    .map(|(n, r)| Target {
        name: n.into(),
        role: r.into(),
    })
    .collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let (cg_dir, api_dir) = (dir.path().join("cgroup"), dir.path().join("api"));
    let period = Duration::from_secs(1);
    let cgroup = monitor::start_with(
        rt,
        targets.clone(),
        Some(stats),
        &cg_dir,
        MonitorOptions {
            source: Source::Cgroup,
            period,
            ..Default::default()
        },
    )
    .await
    .expect("start the cgroup monitors");
    // Nothing listens on loopback port 1: every poll fails, and the samples must not wait.
    let dead = SocketAddr::from(([127, 0, 0, 1], 1));
    let api = monitor::start_with(
        rt,
        targets,
        Some(dead),
        &api_dir,
        MonitorOptions {
            source: Source::EngineApi,
            period,
            ..Default::default()
        },
    )
    .await
    .expect("start the engine-API monitors");

    tokio::time::sleep(Duration::from_millis(3200)).await;
    rt.kill(VICTIM, "SIGKILL").await.expect("kill the victim");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    rt.start(VICTIM).await.expect("restart the victim");
    let latest = cgroup.latest();
    tokio::time::sleep(Duration::from_millis((SECONDS * 1000).saturating_sub(5700))).await;
    let last = latest.borrow().clone();
    let cg = cgroup.stop().await.expect("stop the cgroup monitors");
    let ap = api.stop().await.expect("stop the engine-API monitors");
    eprintln!("cgroup summary: {cg:#?}\nengine-API summary: {ap:#?}");
    assert_eq!(
        last.rows.len(),
        4,
        "the watch holds the last row of every container"
    );

    check(&cg_dir, &cg, true);
    check(&api_dir, &ap, false);
    check_balancer(&cg_dir, &api_dir);
}

async fn upload_cfg(rt: &Runtime) {
    let mut builder = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.set_mode(0o644);
    h.set_size(HAPROXY_CFG.len() as u64);
    h.set_cksum();
    builder
        .append_data(
            &mut h,
            "usr/local/etc/haproxy/haproxy.cfg",
            HAPROXY_CFG.as_bytes(),
        )
        .expect("tar");
    let tar = builder.into_inner().expect("tar");
    let options = UploadToContainerOptions {
        path: "/".to_string(),
        ..Default::default()
    };
    rt.docker()
        .upload_to_container(BALANCER, Some(options), tar.into())
        .await
        .expect("upload haproxy.cfg");
}

/// A CSV file as rows of column → value.
fn read_csv(path: &Path) -> Vec<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .expect("header")
        .split(',')
        .map(str::to_string)
        .collect();
    lines
        .map(|l| header.iter().cloned().zip(split_csv(l)).collect())
        .collect()
}

/// Splits one CSV line, honouring quotes.
fn split_csv(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

fn num(row: &BTreeMap<String, String>, col: &str) -> f64 {
    row[col]
        .parse()
        .unwrap_or_else(|_| panic!("column {col} is `{}` in {row:?}", row[col]))
}

fn check(dir: &Path, summary: &MonitorSummary, cgroup: bool) {
    let rows = read_csv(&dir.join("containers.csv"));
    let ticks: u64 = rows
        .iter()
        .map(|r| num(r, "tick") as u64)
        .max()
        .unwrap_or(0)
        + 1;
    assert!(ticks >= SECONDS - 1, "{ticks} ticks in {SECONDS} s");
    let by = |name: &str| {
        rows.iter()
            .filter(|r| r["container"] == name)
            .collect::<Vec<_>>()
    };
    let label = if cgroup { "cgroup" } else { "engine-api" };

    for name in [STRESSED, IDLE, VICTIM, BALANCER] {
        let mine = by(name);
        let seconds: std::collections::BTreeSet<u64> =
            mine.iter().map(|r| num(r, "tick") as u64).collect();
        assert!(
            seconds.len() as f64 >= 0.95 * ticks as f64,
            "{label}: {name} has rows for {} of {ticks} seconds",
            seconds.len()
        );
        for r in mine.iter().filter(|r| r["status"] == "ok") {
            assert!(
                num(r, "memory_bytes") > 0.0,
                "{label}: {name} memory 0: {r:?}"
            );
            // Resident memory: filled, above zero for a running process, and within the
            // charge, which adds page cache to it; the working set between the two.
            let rss = num(r, "memory_rss_bytes");
            assert!(
                rss > 0.0 && rss <= num(r, "memory_bytes"),
                "{label}: {name} rss {rss} against memory {}: {r:?}",
                r["memory_bytes"]
            );
            assert_working_set_between(r, &format!("{label}: {name}"));
            assert_eq!(r["source"], label);
        }
        if let Some(r) = mine.iter().rev().find(|r| r["status"] == "ok") {
            eprintln!(
                "{label}: {name} memory_bytes {} memory_rss_bytes {}",
                r["memory_bytes"], r["memory_rss_bytes"]
            );
        }
        if name != VICTIM {
            let ok = mine.iter().filter(|r| r["status"] == "ok").count();
            assert!(
                ok as f64 >= 0.95 * ticks as f64,
                "{label}: {name} ok in {ok} of {ticks} seconds: {mine:?}"
            );
        }
    }

    let stressed: Vec<_> = by(STRESSED)
        .into_iter()
        .filter(|r| r["status"] == "ok")
        .collect();
    let (a, b) = (stressed[0], stressed[stressed.len() - 1]);
    let rate =
        (num(b, "cpu_usage_s") - num(a, "cpu_usage_s")) / (num(b, "offset_s") - num(a, "offset_s"));
    assert!(
        (rate - CAP).abs() <= 0.15 * CAP,
        "{label}: the stressed container ran at {rate:.3} cores, cap {CAP}"
    );
    assert!(
        num(b, "cpu_throttled_periods") > num(a, "cpu_throttled_periods"),
        "{label}: no throttling seen"
    );
    assert!(
        num(b, "cpu_throttled_s") > num(a, "cpu_throttled_s"),
        "{label}: no throttled time"
    );
    eprintln!("{label}: stressed container at {rate:.3} cores (cap {CAP})");

    // The victim: ok, then down while killed, then ok again once restarted.
    let statuses: Vec<&str> = by(VICTIM).iter().map(|r| r["status"].as_str()).collect();
    let first_down = statuses
        .iter()
        .position(|s| *s == "down")
        .unwrap_or_else(|| panic!("{label}: no gap: {statuses:?}"));
    assert!(
        statuses[..first_down].iter().all(|s| *s == "ok"),
        "{label}: {statuses:?}"
    );
    let resumed = statuses[first_down..]
        .iter()
        .position(|s| *s == "ok")
        .unwrap_or_else(|| panic!("{label}: never resumed: {statuses:?}"));
    assert!(
        resumed >= 2,
        "{label}: a 2.5 s kill leaves at least two down rows: {statuses:?}"
    );
    assert!(
        statuses[first_down + resumed..].iter().all(|s| *s == "ok"),
        "{label}: {statuses:?}"
    );
    let down_row = by(VICTIM)[first_down];
    assert!(
        down_row["detail"].contains("exit code 137"),
        "{label}: {down_row:?}"
    );

    let victim = summary
        .containers
        .iter()
        .find(|c| c.name == VICTIM)
        .expect("victim in summary");
    assert_eq!(victim.down as usize, resumed, "{label}: summary {victim:?}");
    // The engine answers a one-shot stats request at its next one-second collection cycle,
    // plus the collection itself: on a loaded CI host that took 0.58 s (reads 1.58 s after
    // their tick), so the bound is two cycles; a sampler that waited on itself or fell
    // behind would be seconds late and still fail. The cgroup source reads files, except
    // while the victim is down and at its restart: those reads ask the engine for the
    // container's state, and take as long as the engine does, so they get the engine's bound.
    let engine_bound = 2.0;
    let bound = if cgroup { 0.5 } else { engine_bound };
    let victim_rows = by(VICTIM);
    let asked_engine: Vec<(String, String)> = victim_rows
        .iter()
        .enumerate()
        .filter(|(i, r)| r["status"] != "ok" || (*i > 0 && victim_rows[i - 1]["status"] != "ok"))
        .map(|(_, r)| (r["container"].clone(), r["tick"].clone()))
        .collect();
    let late: Vec<String> = rows
        .iter()
        .filter(|r| {
            let allowed = if asked_engine.contains(&(r["container"].clone(), r["tick"].clone())) {
                engine_bound
            } else {
                bound
            };
            num(r, "offset_s") - num(r, "tick") > allowed
        })
        .map(|r| format!("{} tick {} at {}", r["container"], r["tick"], r["offset_s"]))
        .collect();
    assert!(late.is_empty(), "{label}: reads late: {late:?}");
    assert!(
        summary.max_lateness_s < engine_bound,
        "{label}: reads up to {} s late",
        summary.max_lateness_s
    );
    assert_eq!(summary.oom_kills_total, 0);
    if cgroup {
        assert!(rows
            .iter()
            .filter(|r| r["status"] == "ok")
            .all(|r| !r["oom_kills"].is_empty()));
        assert!(summary.layout.is_some());
    }
}

fn check_balancer(cg_dir: &Path, api_dir: &Path) {
    let rows = read_csv(&cg_dir.join("balancer.csv"));
    let servers: Vec<_> = rows.iter().filter(|r| r["server"] == "replica-1").collect();
    assert!(
        servers.len() as u64 >= SECONDS - 2,
        "{} server rows: {rows:?}",
        servers.len()
    );
    // Nothing listens on the server's port: the check fails and HAProxy marks it down.
    let last = servers[servers.len() - 1];
    assert!(last["status"].starts_with("DOWN"), "{last:?}");
    assert!(last["check_status"].starts_with("L4"), "{last:?}");
    let failed = read_csv(&api_dir.join("balancer.csv"));
    assert!(
        failed.len() as u64 >= SECONDS - 1,
        "{} failed polls",
        failed.len()
    );
    assert!(
        failed
            .iter()
            .all(|r| r["server"].is_empty() && !r["error"].is_empty()),
        "{failed:?}"
    );
}

/// The kernel charges a cgroup v1's usage in batches of up to 64 pages per CPU (the memory
/// cgroup's per-CPU stock), so `memory.usage_in_bytes`, which the working set is taken from,
/// may trail `memory.stat`'s `total_rss` by that much: 256 KiB a CPU.
fn charge_slack() -> f64 {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    (64 * 4096 * cpus) as f64
}

/// Anonymous RSS ≤ working set ≤ usage, the first up to the charge batching.
fn assert_working_set_between(r: &BTreeMap<String, String>, what: &str) {
    let (rss, ws, usage) = (
        num(r, "memory_rss_bytes"),
        num(r, "memory_working_set_bytes"),
        num(r, "memory_bytes"),
    );
    assert!(
        rss <= ws + charge_slack() && ws <= usage,
        "{what}: rss {rss}, working set {ws}, usage {usage}: {r:?}"
    );
}

const WS_SMALL: &str = "fb-test-monitor-ws-4k";
const WS_BIG: &str = "fb-test-monitor-ws-64m";
const MIB: f64 = 1024.0 * 1024.0;

/// Working-set memory on this host's cgroup version, by both sources: a stress-ng worker that
/// allocated and wrote every word of 64 MiB (then holds it: `--vm-hang 0`) reads 64 MiB
/// ± 10 % above the same worker holding 4 KiB, its idle working set (the program, its
/// libraries and its page cache are the same in both and cancel out). Each container is
/// read until its working set has held still (within 256 KiB) for three reads in a row.
#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
pub async fn the_working_set_counts_the_64_mib_a_container_touched() {
    let rt = Runtime::connect().await.unwrap_or_else(|e| {
        panic!("this test needs the Docker engine, which is unavailable ({e}); install and start Docker (dockerd)")
    });
    assert!(
        rt.docker().inspect_image(STRESS).await.is_ok(),
        "this test needs image {STRESS}, which is missing; build it with `feedbench images build`"
    );
    rt.clean(&feedbench::engine::runtime::Scope::study(STUDY))
        .await
        .expect("cleaning up before");
    let outcome = AssertUnwindSafe(working_set(&rt)).catch_unwind().await;
    rt.clean(&feedbench::engine::runtime::Scope::study(STUDY))
        .await
        .expect("cleaning up after");
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

async fn working_set(rt: &Runtime) {
    let net_labels: HashMap<String, String> =
        [("feedbench.study".to_string(), STUDY.to_string())].into();
    rt.ensure_network(NETWORK, &net_labels)
        .await
        .expect("network");
    for (name, bytes, role) in [(WS_SMALL, "4k", "database"), (WS_BIG, "64m", "replica")] {
        let cmd = [
            "--vm",
            "1",
            "--vm-bytes",
            bytes,
            "--vm-method",
            "write64",
            "--vm-hang",
            "0",
            "--timeout",
            "120s",
        ];
        create_capped(rt, name, STRESS, role, &cmd, (500_000_000, 256 << 20)).await;
        rt.start(name)
            .await
            .unwrap_or_else(|e| panic!("start {name}: {e}"));
    }
    let targets: Vec<Target> = [(WS_SMALL, "database"), (WS_BIG, "replica")]
        .into_iter()
        .map(|(n, r)| Target {
            name: n.into(),
            role: r.into(),
        })
        .collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let dead = SocketAddr::from(([127, 0, 0, 1], 1));
    for (source, label) in [
        (Source::Cgroup, "cgroup"),
        (Source::EngineApi, "engine-api"),
    ] {
        let out = dir.path().join(label);
        let monitors = monitor::start_with(
            rt,
            targets.clone(),
            Some(dead),
            &out,
            MonitorOptions {
                source,
                period: Duration::from_millis(500),
                ..Default::default()
            },
        )
        .await
        .expect("start the monitors");
        let settled = held_still(monitors.latest()).await;
        monitors.stop().await.expect("stop the monitors");
        let (small, big) = (settled[WS_SMALL], settled[WS_BIG]);
        let above = (big - small) / MIB;
        eprintln!("{label}: working set {:.2} MiB with 64 MiB touched, {:.2} MiB with 4 KiB: {above:.2} MiB above", big / MIB, small / MIB);
        assert!(
            (above - 64.0).abs() <= 6.4,
            "{label}: the 64 MiB worker's working set is {above:.2} MiB above the 4 KiB one's"
        );
        for r in read_csv(&out.join("containers.csv"))
            .iter()
            .filter(|r| r["status"] == "ok")
        {
            assert_working_set_between(r, label);
        }
    }
}

/// Each container's working set once it has held still for three reads in a row (within
/// 256 KiB); the reads of a minute at most.
async fn held_still(
    latest: tokio::sync::watch::Receiver<monitor::Latest>,
) -> BTreeMap<&'static str, f64> {
    let mut seen: BTreeMap<&'static str, Vec<(u64, f64)>> = BTreeMap::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    loop {
        tick.tick().await;
        for name in [WS_SMALL, WS_BIG] {
            let row = latest.borrow().rows.get(name).cloned();
            let Some(ws) = row
                .as_ref()
                .and_then(|r| r.counters.memory_working_set_bytes)
            else {
                continue;
            };
            let reads = seen.entry(name).or_default();
            let t = row.map_or(0, |r| r.tick);
            if reads.last().is_none_or(|l| l.0 != t) {
                reads.push((t, ws as f64));
            }
        }
        let still = |v: &Vec<(u64, f64)>| {
            v.len() >= 3 && {
                let last: Vec<f64> = v[v.len() - 3..].iter().map(|r| r.1).collect();
                let (lo, hi) = last
                    .iter()
                    .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(*x), b.max(*x)));
                hi - lo <= 256.0 * 1024.0
            }
        };
        if seen.len() == 2 && seen.values().all(still) {
            return seen
                .into_iter()
                .map(|(k, v)| (k, v[v.len() - 1].1))
                .collect();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the working sets never held still: {seen:?}"
        );
    }
}
