//! The container sampler's own cost: ten idle containers sampled at 1 Hz for a minute by
//! the cgroup-file source and by the engine-API one-shot source, in one run, after an idle
//! phase without any sampler. For each phase: this process's CPU time (utime + stime from
//! /proc/self/stat), and the engine's (the processes the host check counts as the engine's,
//! `rundir::host::ENGINE_PROCESSES`, from their /proc/<pid>/stat). Run with
//! `cargo bench --bench sampler`; FEEDBENCH_BENCH_SECONDS sets each phase's length (60 by
//! default), FEEDBENCH_BENCH_ROUNDS how many times the three phases run, interleaved (2 by
//! default). Containers carry `feedbench.study=bench-sampler` and are removed afterwards.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use bollard::container::{Config, CreateContainerOptions};
use bollard::models::HostConfig;
use feedbench::engine::runtime::Runtime;
use feedbench::run::monitor::{self, MonitorOptions, Source, Target};
use feedbench_core::rundir::host::{parse_pid_stat, ENGINE_PROCESSES};

const STUDY: &str = "bench-sampler";
const NETWORK: &str = "fb-bench-sampler";
const IMAGE: &str = "feedbench/base:bookworm";
const CONTAINERS: usize = 10;
/// USER_HZ: the unit of utime and stime in /proc/<pid>/stat.
const TICKS_PER_S: f64 = 100.0;

/// utime + stime of a process, in seconds (the host check's own parser).
fn cpu_seconds(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(parse_pid_stat(&stat).ok()?.cpu_ticks as f64 / TICKS_PER_S)
}

/// The engine's processes, by pid: those the host check counts as the engine's
/// (`rundir::host::ENGINE_PROCESSES`).
fn engine_pids() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| {
            let pid = e.file_name().to_string_lossy().into_owned();
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let comm = parse_pid_stat(&stat).ok()?.comm;
            ENGINE_PROCESSES.contains(&comm.as_str()).then_some(pid)
        })
        .collect()
}

/// CPU seconds of this process and of the engine (the same engine processes throughout).
fn snapshot(engine: &[String]) -> (f64, HashMap<String, f64>) {
    let me = cpu_seconds("self").unwrap_or(0.0);
    (
        me,
        engine
            .iter()
            .filter_map(|p| Some((p.clone(), cpu_seconds(p)?)))
            .collect(),
    )
}

struct Phase {
    name: &'static str,
    wall: f64,
    me: f64,
    engine: f64,
    rows: u64,
    max_lateness_s: f64,
}

async fn phase(
    rt: &Runtime,
    name: &'static str,
    source: Option<Source>,
    targets: &[Target],
    secs: u64,
) -> Result<Phase> {
    let engine = engine_pids();
    let dir = tempfile::tempdir()?;
    let (me0, en0) = snapshot(&engine);
    let t0 = Instant::now();
    let handle = match source {
        Some(source) => Some(
            monitor::start_with(
                rt,
                targets.to_vec(),
                None,
                dir.path(),
                MonitorOptions {
                    source,
                    period: Duration::from_secs(1),
                    ..Default::default()
                },
            )
            .await?,
        ),
        None => None,
    };
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let summary = match handle {
        Some(h) => Some(h.stop().await?),
        None => None,
    };
    let wall = t0.elapsed().as_secs_f64();
    let (me1, en1) = snapshot(&engine);
    let engine_cpu = en1
        .iter()
        .map(|(p, v)| v - en0.get(p).copied().unwrap_or(*v))
        .sum();
    Ok(Phase {
        name,
        wall,
        me: me1 - me0,
        engine: engine_cpu,
        rows: summary.as_ref().map_or(0, |s| {
            s.containers.iter().map(|c| c.ok + c.down + c.error).sum()
        }),
        max_lateness_s: summary.as_ref().map_or(0.0, |s| s.max_lateness_s),
    })
}

async fn setup(rt: &Runtime) -> Result<Vec<Target>> {
    let labels: HashMap<String, String> =
        [("feedbench.study".to_string(), STUDY.to_string())].into();
    rt.ensure_network(NETWORK, &labels).await?;
    let mut targets = Vec::new();
    for i in 0..CONTAINERS {
        let name = format!("fb-bench-sampler-{i}");
        let mut l = labels.clone();
        l.insert("feedbench.role".into(), "replica".into());
        let config = Config {
            image: Some(IMAGE.to_string()),
            cmd: Some(vec!["sleep".into(), "infinity".into()]),
            labels: Some(l),
            host_config: Some(HostConfig {
                nano_cpus: Some(100_000_000),
                memory: Some(32 << 20),
                network_mode: Some(NETWORK.to_string()),
                ..Default::default()
            }),
            ..Default::default()
        };
        rt.docker()
            .create_container(
                Some(CreateContainerOptions {
                    name: name.clone(),
                    platform: None,
                }),
                config,
            )
            .await
            .with_context(|| format!("creating {name}"))?;
        rt.start(&name).await?;
        targets.push(Target {
            name,
            role: "replica".into(),
        });
    }
    Ok(targets)
}

/// The three phases, `rounds` times over, interleaved so that a change in the host's other
/// load falls on every phase alike.
async fn measure(rt: &Runtime, secs: u64, rounds: u64) -> Result<Vec<Phase>> {
    let targets = setup(rt).await?;
    let mut phases = Vec::new();
    for _ in 0..rounds {
        phases.push(phase(rt, "no sampler (baseline)", None, &targets, secs).await?);
        phases.push(phase(rt, "cgroup files", Some(Source::Cgroup), &targets, secs).await?);
        phases.push(
            phase(
                rt,
                "engine API, one-shot",
                Some(Source::EngineApi),
                &targets,
                secs,
            )
            .await?,
        );
    }
    Ok(phases)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    // `cargo bench` passes `--bench`; nothing else is read from the command line.
    let env = |k: &str, default: u64| {
        std::env::var(k)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default)
    };
    let (secs, rounds) = (
        env("FEEDBENCH_BENCH_SECONDS", 60),
        env("FEEDBENCH_BENCH_ROUNDS", 2),
    );
    let rt = Runtime::connect()
        .await
        .context("the benchmark needs the Docker engine")?;
    if rt.docker().inspect_image(IMAGE).await.is_err() {
        bail!("image {IMAGE} is missing: build it with `feedbench images build`");
    }
    let facts = rt.facts().await?;
    rt.clean(&feedbench::engine::runtime::Scope::study(STUDY))
        .await?;
    let result = measure(&rt, secs, rounds).await;
    rt.clean(&feedbench::engine::runtime::Scope::study(STUDY))
        .await?;
    let phases = result?;
    println!(
        "host: {} cores, kernel {}, engine {}, cgroup v{}; {CONTAINERS} containers, {secs} s per phase, {rounds} round(s)",
        facts.cores, facts.kernel, facts.engine_version, facts.cgroup_version
    );
    if engine_pids().is_empty() {
        println!("(the engine's processes are not visible from here: engine CPU reads 0)");
    }
    println!("| phase | wall s | rows | sampler CPU s | % of one core | engine CPU s | engine % of one core | max lateness ms |");
    println!("|---|---|---|---|---|---|---|---|");
    for p in &phases {
        println!(
            "| {} | {:.1} | {} | {:.2} | {:.2}% | {:.2} | {:.2}% | {:.1} |",
            p.name,
            p.wall,
            p.rows,
            p.me,
            100.0 * p.me / p.wall,
            p.engine,
            100.0 * p.engine / p.wall,
            1000.0 * p.max_lateness_s
        );
    }
    Ok(())
}
