//! The locally built infrastructure images, against the real Docker engine: builds (or finds)
//! them, starts each and checks its role. Every container and network carries the label
//! `feedbench.study=test-images` and is removed afterwards, also when a check fails.
//! The test needs the Docker engine, so it is tier 2's: `-- --ignored`
//! runs it (scripts/test does), and it fails when the engine is unavailable.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use bollard::container::{
    Config, CreateContainerOptions, ListContainersOptions, LogOutput, LogsOptions,
    RemoveContainerOptions, StopContainerOptions, UploadToContainerOptions, WaitContainerOptions,
};
use bollard::exec::{CreateExecOptions, StartExecResults};
use bollard::models::HostConfig;
use bollard::network::{CreateNetworkOptions, ListNetworksOptions};
use bollard::Docker;
use feedbench::images::{build_all, builtin_recipes, BuildOptions};
use futures_util::{FutureExt, StreamExt};

const STUDY: &str = "test-images";
const PG: &str = "feedbench/postgres:15";
const HAPROXY: &str = "feedbench/haproxy:2.6";
const K6: &str = "feedbench/k6:1.1.0";
const STRESS: &str = "feedbench/stress:0.15";
const FAULT_PROXY: &str = "feedbench/fault-proxy:latest";
const BASE: &str = "feedbench/base:bookworm";

fn repo_root() -> PathBuf {
    std::env::var_os("FEEDBENCH_REPO_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
pub async fn infrastructure_images_play_their_roles() {
    let docker = feedbench::images::connect().await.unwrap_or_else(|e| {
        panic!("this test needs the Docker engine, which is unavailable ({e}); install and start Docker (dockerd)")
    });
    cleanup(&docker).await;

    let root = repo_root();
    let started = Instant::now();
    let built = build_all(&builtin_recipes(&root), &BuildOptions::for_repo(&root))
        .await
        .unwrap_or_else(|e| panic!("building the images failed: {e}"));
    eprintln!(
        "images ready in {:.1} s: {:?}",
        started.elapsed().as_secs_f64(),
        built
            .iter()
            .map(|b| (&b.image, b.action))
            .collect::<Vec<_>>()
    );

    let outcome = AssertUnwindSafe(check_all(&docker)).catch_unwind().await;
    cleanup(&docker).await;
    let left = containers_with_label(&docker).await;
    match outcome {
        Ok(failures) if failures.is_empty() => {}
        Ok(failures) => panic!(
            "{} role check(s) failed:\n{}",
            failures.len(),
            failures.join("\n\n")
        ),
        Err(panic) => std::panic::resume_unwind(panic),
    }
    assert!(left.is_empty(), "containers left behind: {left:?}");
}

/// Run every role check, even after one fails; the failures, each naming its role.
async fn check_all(docker: &Docker) -> Vec<String> {
    let net = match create_network(docker).await {
        Ok(n) => n,
        Err(e) => return vec![format!("network: {e:#}")],
    };
    let mut failures = Vec::new();
    let checks: Vec<(&str, Result<()>)> = vec![
        ("postgres", check_postgres(docker, &net).await),
        ("haproxy", check_haproxy(docker, &net).await),
        ("k6", check_k6(docker, &net).await),
        ("stress", check_stress(docker, &net).await),
        ("fault-proxy", check_fault_proxy(docker, &net).await),
    ];
    for (role, result) in checks {
        match result {
            Ok(()) => eprintln!("ok: {role}"),
            Err(e) => failures.push(format!("{role}: {e:#}")),
        }
    }
    failures
}

fn name(role: &str) -> String {
    format!("fb-{STUDY}-{}-{role}", std::process::id())
}

fn labels(role: &str) -> HashMap<String, String> {
    HashMap::from([
        ("feedbench.study".to_string(), STUDY.to_string()),
        ("feedbench.role".to_string(), role.to_string()),
    ])
}

async fn create_network(docker: &Docker) -> Result<String> {
    let name = name("net");
    docker
        .create_network(CreateNetworkOptions {
            name: name.clone(),
            driver: "bridge".to_string(),
            // Internal: the role checks talk among the test's containers and nowhere else.
            internal: true,
            labels: labels("network"),
            ..Default::default()
        })
        .await
        .context("create network")?;
    Ok(name)
}

/// A container spec: image, role, command, env, CPU cap.
struct Spec<'a> {
    image: &'a str,
    role: &'a str,
    cmd: Option<Vec<&'a str>>,
    env: Vec<String>,
    nano_cpus: Option<i64>,
    user: Option<&'a str>,
}

impl<'a> Spec<'a> {
    fn new(image: &'a str, role: &'a str) -> Self {
        Spec {
            image,
            role,
            cmd: None,
            env: Vec::new(),
            nano_cpus: None,
            user: None,
        }
    }
}

/// Create (not start) a container on `net`; its name is also its host name there.
async fn create(docker: &Docker, net: &str, spec: Spec<'_>) -> Result<String> {
    let name = name(spec.role);
    let config = Config {
        image: Some(spec.image.to_string()),
        cmd: spec.cmd.map(|c| c.into_iter().map(String::from).collect()),
        env: Some(spec.env),
        user: spec.user.map(String::from),
        labels: Some(labels(spec.role)),
        host_config: Some(HostConfig {
            network_mode: Some(net.to_string()),
            nano_cpus: spec.nano_cpus,
            ..Default::default()
        }),
        ..Default::default()
    };
    docker
        .create_container(
            Some(CreateContainerOptions {
                name: name.clone(),
                platform: None,
            }),
            config,
        )
        .await
        .with_context(|| format!("create container {name} from {}", spec.image))?;
    Ok(name)
}

async fn start(docker: &Docker, id: &str) -> Result<()> {
    docker
        .start_container::<String>(id, None)
        .await
        .with_context(|| format!("start {id}"))
}

/// Put files (name, mode, content) into a directory of a created container.
async fn upload(docker: &Docker, id: &str, dir: &str, files: &[(&str, u32, &str)]) -> Result<()> {
    let mut builder = tar::Builder::new(Vec::new());
    for (file, mode, content) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(content.len() as u64);
        header.set_mode(*mode);
        header.set_mtime(1_704_067_200);
        builder.append_data(&mut header, file, content.as_bytes())?;
    }
    let tar = builder.into_inner()?;
    docker
        .upload_to_container(
            id,
            Some(UploadToContainerOptions {
                path: dir.to_string(),
                ..Default::default()
            }),
            tar.into(),
        )
        .await
        .with_context(|| format!("upload to {id}:{dir}"))
}

/// Run a command inside a running container: exit code and combined output.
async fn exec(docker: &Docker, id: &str, cmd: &[&str]) -> Result<(i64, String)> {
    let created = docker
        .create_exec(
            id,
            CreateExecOptions {
                cmd: Some(cmd.iter().map(|s| s.to_string()).collect()),
                attach_stdout: Some(true),
                attach_stderr: Some(true),
                ..Default::default()
            },
        )
        .await?;
    let mut text = String::new();
    if let StartExecResults::Attached { mut output, .. } =
        docker.start_exec(&created.id, None).await?
    {
        while let Some(chunk) = output.next().await {
            text.push_str(&String::from_utf8_lossy(&chunk?.into_bytes()));
        }
    }
    let code = docker
        .inspect_exec(&created.id)
        .await?
        .exit_code
        .unwrap_or(-1);
    Ok((code, text))
}

/// Poll `cmd` inside the container until it exits 0; its output.
async fn exec_until_ok(
    docker: &Docker,
    id: &str,
    cmd: &[&str],
    timeout: Duration,
) -> Result<String> {
    let deadline = Instant::now() + timeout;
    loop {
        let (code, out) = exec(docker, id, cmd).await?;
        if code == 0 {
            return Ok(out);
        }
        if Instant::now() > deadline {
            bail!(
                "`{}` still exits {code} after {timeout:?}: {out}\nlogs:\n{}",
                cmd.join(" "),
                logs(docker, id).await
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn logs(docker: &Docker, id: &str) -> String {
    let mut stream = docker.logs::<String>(
        id,
        Some(LogsOptions {
            stdout: true,
            stderr: true,
            tail: "60".to_string(),
            ..Default::default()
        }),
    );
    let mut text = String::new();
    while let Some(Ok(chunk)) = stream.next().await {
        match chunk {
            LogOutput::StdOut { message }
            | LogOutput::StdErr { message }
            | LogOutput::Console { message } => text.push_str(&String::from_utf8_lossy(&message)),
            _ => {}
        }
    }
    text
}

/// Wait for a container to exit (bounded); its exit code.
async fn wait_exit(docker: &Docker, id: &str, timeout: Duration) -> Result<i64> {
    let mut stream = docker.wait_container(id, None::<WaitContainerOptions<String>>);
    match tokio::time::timeout(timeout, stream.next()).await {
        Err(_) => bail!(
            "{id} still running after {timeout:?}; logs:\n{}",
            logs(docker, id).await
        ),
        Ok(Some(Ok(r))) => Ok(r.status_code),
        // bollard reports a non-zero exit as an error carrying the code
        Ok(Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. }))) => Ok(code),
        Ok(Some(Err(e))) => Err(e.into()),
        Ok(None) => bail!("wait on {id} ended without a status"),
    }
}

/// Run a one-shot container to completion; its exit code and logs.
async fn run_once(docker: &Docker, net: &str, spec: Spec<'_>) -> Result<(i64, String)> {
    let id = create(docker, net, spec).await?;
    start(docker, &id).await?;
    let code = wait_exit(docker, &id, Duration::from_secs(90)).await?;
    Ok((code, logs(docker, &id).await))
}

async fn check_postgres(docker: &Docker, net: &str) -> Result<()> {
    let mut spec = Spec::new(PG, "postgres");
    spec.env = vec![
        "POSTGRES_DB=benchdb".into(),
        "POSTGRES_USER=bench".into(),
        "POSTGRES_PASSWORD=s3cret".into(),
    ];
    let db = create(docker, net, spec).await?;
    let init = "CREATE TABLE items (id int PRIMARY KEY, name text);\nINSERT INTO items VALUES (1, 'a'), (2, 'b');\n";
    upload(
        docker,
        &db,
        "/docker-entrypoint-initdb.d",
        &[("01-items.sql", 0o644, init)],
    )
    .await?;
    start(docker, &db).await?;
    // the temporary init server listens on the socket only: TCP answers once the real one runs
    exec_until_ok(
        docker,
        &db,
        &["pg_isready", "-h", "127.0.0.1", "-p", "5432", "-U", "bench"],
        Duration::from_secs(90),
    )
    .await?;
    let (_, who) = exec(docker, &db, &["id", "-un"]).await?;
    if who.trim() != "postgres" {
        bail!("the server runs as {who:?}, not postgres");
    }
    // a client in another container, over the network, with the password
    let mut client = Spec::new(PG, "postgres-client");
    client.cmd = Some(vec![
        "psql",
        "-h",
        &db,
        "-U",
        "bench",
        "-d",
        "benchdb",
        "-tAc",
        "SELECT count(*) FROM items",
    ]);
    client.env = vec!["PGPASSWORD=s3cret".into()];
    let (code, out) = run_once(docker, net, client).await?;
    if code != 0 || out.trim() != "2" {
        bail!("psql over the network exited {code}: {out:?}");
    }
    // stops cleanly on the image's stop signal
    docker
        .stop_container(&db, Some(StopContainerOptions { t: 20 }))
        .await?;
    let state = docker
        .inspect_container(&db, None)
        .await?
        .state
        .context("no state")?;
    let log = logs(docker, &db).await;
    if state.exit_code != Some(0) || !log.contains("database system is shut down") {
        bail!("unclean stop (exit {:?}):\n{log}", state.exit_code);
    }
    Ok(())
}

async fn check_haproxy(docker: &Docker, net: &str) -> Result<()> {
    let cfg = "global\n    log stdout format raw local0\n\ndefaults\n    mode http\n    timeout connect 5s\n    timeout client 30s\n    timeout server 30s\n\nfrontend stats\n    bind :8404\n    stats enable\n    stats uri /stats\n    stats refresh 10s\n";
    let lb = create(docker, net, Spec::new(HAPROXY, "haproxy")).await?;
    upload(
        docker,
        &lb,
        "/usr/local/etc/haproxy",
        &[("haproxy.cfg", 0o644, cfg)],
    )
    .await?;
    start(docker, &lb).await?;
    let url = format!("http://{lb}:8404/stats;csv");
    let mut curl = Spec::new(BASE, "haproxy-client");
    curl.cmd = Some(vec![
        "curl",
        "-fsS",
        "--retry",
        "20",
        "--retry-connrefused",
        "--retry-delay",
        "1",
        &url,
    ]);
    let (code, out) = run_once(docker, net, curl).await?;
    if code != 0 || !out.contains("stats,FRONTEND") {
        bail!(
            "stats page from a second container: exit {code}: {out}\nhaproxy logs:\n{}",
            logs(docker, &lb).await
        );
    }
    let (_, who) = exec(docker, &lb, &["id", "-un"]).await?;
    if who.trim() != "haproxy" {
        bail!("haproxy runs as {who:?}");
    }
    Ok(())
}

async fn check_k6(docker: &Docker, net: &str) -> Result<()> {
    let mut server = Spec::new(BASE, "k6-target");
    server.cmd = Some(vec![
        "python3",
        "-m",
        "http.server",
        "8000",
        "--bind",
        "0.0.0.0",
        "--directory",
        "/etc",
    ]);
    server.user = Some("nobody");
    let target = create(docker, net, server).await?;
    start(docker, &target).await?;
    exec_until_ok(
        docker,
        &target,
        &[
            "curl",
            "-fsS",
            "-o",
            "/dev/null",
            "http://127.0.0.1:8000/hostname",
        ],
        Duration::from_secs(30),
    )
    .await?;
    let script = r#"import http from 'k6/http';
import { check } from 'k6';
export const options = {
  scenarios: {
    open: { executor: 'constant-arrival-rate', rate: 20, timeUnit: '1s', duration: '2s',
            preAllocatedVUs: 5, maxVUs: 20 },
  },
  thresholds: { checks: ['rate==1'], http_reqs: ['count>=30'] },
};
export default function () {
  const r = http.get(`http://${__ENV.TARGET}/hostname`);
  check(r, { 'status is 200': (x) => x.status === 200 });
}
"#;
    let mut k6 = Spec::new(K6, "k6");
    k6.cmd = Some(vec![
        "run",
        "--no-color",
        "--no-usage-report",
        "/home/k6/script.js",
    ]);
    k6.env = vec![format!("TARGET={target}:8000")];
    let id = create(docker, net, k6).await?;
    upload(docker, &id, "/home/k6", &[("script.js", 0o644, script)]).await?;
    start(docker, &id).await?;
    let code = wait_exit(docker, &id, Duration::from_secs(90)).await?;
    let out = logs(docker, &id).await;
    if code != 0 || !out.contains("http_reqs") {
        bail!("k6 exited {code}:\n{out}");
    }
    Ok(())
}

/// Cumulative CPU time of a container's cgroup, in microseconds (cgroup v1 or v2).
fn cgroup_cpu_usec(pid: i64) -> Result<u64> {
    let text =
        std::fs::read_to_string(format!("/proc/{pid}/cgroup")).context("read /proc/PID/cgroup")?;
    if std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
        let path = text
            .lines()
            .find_map(|l| l.strip_prefix("0::"))
            .context("no v2 cgroup line")?;
        let stat = std::fs::read_to_string(format!("/sys/fs/cgroup{path}/cpu.stat"))?;
        let usec = stat
            .lines()
            .find_map(|l| l.strip_prefix("usage_usec "))
            .context("no usage_usec")?
            .trim()
            .parse()?;
        return Ok(usec);
    }
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (
            parts.next(),
            parts.next().unwrap_or(""),
            parts.next().unwrap_or(""),
        );
        if controllers.split(',').any(|c| c == "cpuacct") {
            for mount in ["cpuacct", "cpu,cpuacct", "cpuacct,cpu"] {
                let file = format!("/sys/fs/cgroup/{mount}{path}/cpuacct.usage");
                if let Ok(ns) = std::fs::read_to_string(&file) {
                    return Ok(ns.trim().parse::<u64>()? / 1000);
                }
            }
        }
    }
    Err(anyhow!("no cpuacct cgroup found for pid {pid}:\n{text}"))
}

async fn check_stress(docker: &Docker, net: &str) -> Result<()> {
    let mut spec = Spec::new(STRESS, "stress");
    spec.cmd = Some(vec!["--cpu", "2", "--timeout", "30s", "--metrics-brief"]);
    spec.nano_cpus = Some(500_000_000);
    let id = create(docker, net, spec).await?;
    start(docker, &id).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let pid = docker
        .inspect_container(&id, None)
        .await?
        .state
        .and_then(|s| s.pid)
        .context("no pid")?;
    let (u0, i0, t0) = (cgroup_cpu_usec(pid)?, host_idle_usec()?, Instant::now());
    tokio::time::sleep(Duration::from_secs(4)).await;
    let (u1, i1, t1) = (cgroup_cpu_usec(pid)?, host_idle_usec()?, Instant::now());
    let wall = (t1 - t0).as_micros() as f64;
    let cores = (u1 - u0) as f64 / wall;
    let idle = (i1 - i0) as f64 / wall;
    eprintln!("stress-ng capped at 0.5 CPU used {cores:.3} cores (host idle {idle:.2} cores)");
    // the cap holds; and the share is used unless the host had no idle CPU to give
    let starved = cores < 0.4 && idle < 0.5 - cores + 0.1;
    if cores > 0.6 || (cores < 0.4 && !starved) {
        bail!(
            "stress-ng with a 0.5 CPU cap used {cores:.3} cores (host idle {idle:.2}); logs:\n{}",
            logs(docker, &id).await
        );
    }
    if starved {
        eprintln!("note: the host was saturated, so only the cap (not the share) was checked");
    }
    Ok(())
}

/// Idle plus iowait time of all the host's CPUs, in microseconds (from /proc/stat).
fn host_idle_usec() -> Result<u64> {
    let stat = std::fs::read_to_string("/proc/stat")?;
    let cpu = stat.lines().next().context("empty /proc/stat")?;
    let fields: Vec<u64> = cpu
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    // USER_HZ is 100 on Linux: one tick is 10 ms
    let ticks = fields.get(3).copied().unwrap_or(0) + fields.get(4).copied().unwrap_or(0);
    Ok(ticks * 10_000)
}

async fn check_fault_proxy(docker: &Docker, net: &str) -> Result<()> {
    let fp = create(docker, net, Spec::new(FAULT_PROXY, "fault-proxy")).await?;
    start(docker, &fp).await?;
    let url = format!("http://{fp}:8474/version");
    let mut curl = Spec::new(BASE, "fault-proxy-client");
    curl.cmd = Some(vec![
        "curl",
        "-fsS",
        "--retry",
        "20",
        "--retry-connrefused",
        "--retry-delay",
        "1",
        &url,
    ]);
    let (code, out) = run_once(docker, net, curl).await?;
    if code != 0 || out.trim().is_empty() {
        bail!(
            "GET /version from a second container: exit {code}: {out}\nfault-proxy logs:\n{}",
            logs(docker, &fp).await
        );
    }
    Ok(())
}

fn study_filter() -> HashMap<String, Vec<String>> {
    HashMap::from([(
        "label".to_string(),
        vec![format!("feedbench.study={STUDY}")],
    )])
}

async fn containers_with_label(docker: &Docker) -> Vec<String> {
    let options = ListContainersOptions {
        all: true,
        filters: study_filter(),
        ..Default::default()
    };
    match docker.list_containers(Some(options)).await {
        Ok(list) => list.into_iter().filter_map(|c| c.id).collect(),
        Err(e) => vec![format!("<cannot list: {e}>")],
    }
}

/// Remove every container and network labelled `feedbench.study=test-images`.
async fn cleanup(docker: &Docker) {
    for id in containers_with_label(docker).await {
        let options = RemoveContainerOptions {
            force: true,
            v: true,
            ..Default::default()
        };
        if let Err(e) = docker.remove_container(&id, Some(options)).await {
            eprintln!("cleanup: cannot remove container {id}: {e}");
        }
    }
    let options = ListNetworksOptions {
        filters: study_filter(),
    };
    if let Ok(nets) = docker.list_networks(Some(options)).await {
        for net in nets.into_iter().filter_map(|n| n.id) {
            if let Err(e) = docker.remove_network(&net).await {
                eprintln!("cleanup: cannot remove network {net}: {e}");
            }
        }
    }
}
