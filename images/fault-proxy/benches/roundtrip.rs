//! Round-trip benchmark: direct vs fault-proxy vs HAProxy (TCP mode) on loopback.
//!
//! Run with `images/fault-proxy/bench.sh` (or `cargo bench -p
//! feedbench-fault-proxy --bench roundtrip`). The forwarder under test is
//! pinned to CPU `BENCH_PROXY_CPU` (default 0) with taskset; this process
//! (load client and echo server) to `BENCH_CLIENT_CPU` (default 1). Only
//! 127.0.0.1 is used. Prints a Markdown table.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream as StdStream;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const MSG: usize = 64;

struct Settings {
    secs: f64,
    conns: usize,
    rate: u64,
    samples: usize,
    proxy_cpu: String,
    client_cpu: String,
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A forwarder process pinned to one CPU, killed (by its own pid) on drop.
struct Forwarder {
    child: Child,
    addr: String,
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn cpu_seconds(pid: u32, ticks: f64) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields after the command: state is index 0, utime 11, stime 12.
    let get = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (get(11) + get(12)) / ticks
}

fn start_fault_proxy(cpu: &str, upstream: &str) -> Forwarder {
    let mut child = Command::new("taskset")
        .args([
            "-c",
            cpu,
            env!("CARGO_BIN_EXE_fault-proxy"),
            "-host",
            "127.0.0.1",
            "-port",
            "0",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn fault-proxy under taskset");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(addr) = line.split("API listening on ").nth(1) {
                let _ = tx.send(addr.trim().to_string());
            }
        }
    });
    let api = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("fault-proxy API address");
    let body = format!(r#"{{"name":"bench","listen":"127.0.0.1:0","upstream":"{upstream}"}}"#);
    let mut s = StdStream::connect(&api).unwrap();
    write!(
        s,
        "POST /proxies HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut resp = String::new();
    std::io::Read::read_to_string(&mut s, &mut resp).unwrap();
    let json = resp.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    let v: serde_json::Value = serde_json::from_str(json).expect("proxy JSON");
    let addr = v["listen"].as_str().expect("listen").to_string();
    Forwarder { child, addr }
}

/// HAProxy in TCP mode, listening on a socket this process binds (a port the system picks)
/// and hands over as its stdin: `bind fd@0`, so the port is never free in between.
fn start_haproxy(cpu: &str, upstream: &str) -> Option<Forwarder> {
    Command::new("haproxy").arg("-v").output().ok()?;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").ok()?;
    let port = listener.local_addr().ok()?.port();
    let dir =
        std::env::temp_dir().join(format!("fault-proxy-bench-haproxy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let cfg = dir.join("haproxy.cfg");
    std::fs::write(
        &cfg,
        format!(
            "global\n  nbthread 1\n  maxconn 4000\n\ndefaults\n  mode tcp\n  timeout connect 5s\n  \
             timeout client 1m\n  timeout server 1m\n\nlisten bench\n  bind fd@0\n  \
             server echo {upstream}\n"
        ),
    )
    .ok()?;
    let child = Command::new("taskset")
        .args(["-c", cpu, "haproxy", "-db", "-f"])
        .arg(&cfg)
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(listener)))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let addr = format!("127.0.0.1:{port}");
    let start = Instant::now();
    while StdStream::connect(&addr).is_err() {
        if start.elapsed() > Duration::from_secs(5) {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(Forwarder { child, addr })
}

async fn echo_server(listener: TcpListener) {
    loop {
        let Ok((mut s, _)) = listener.accept().await else {
            continue;
        };
        tokio::spawn(async move {
            let _ = s.set_nodelay(true);
            let mut buf = [0u8; 4096];
            loop {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        if s.write_all(&buf[..n]).await.is_err() {
                            return;
                        }
                    }
                }
            }
        });
    }
}

async fn connect(addr: &str) -> TcpStream {
    let s = TcpStream::connect(addr).await.expect("connect");
    s.set_nodelay(true).unwrap();
    s
}

async fn one_round_trip(s: &mut TcpStream, buf: &mut [u8; MSG]) {
    s.write_all(&[42u8; MSG]).await.expect("write");
    s.read_exact(buf).await.expect("read");
}

/// p50 and p99 in microseconds of sequential round trips on one connection.
async fn latency(addr: &str, samples: usize) -> (f64, f64) {
    let mut s = connect(addr).await;
    let mut buf = [0u8; MSG];
    for _ in 0..samples / 10 {
        one_round_trip(&mut s, &mut buf).await;
    }
    let mut times = Vec::with_capacity(samples);
    for _ in 0..samples {
        let t = Instant::now();
        one_round_trip(&mut s, &mut buf).await;
        times.push(t.elapsed().as_secs_f64() * 1e6);
    }
    times.sort_by(f64::total_cmp);
    (times[samples / 2], times[samples * 99 / 100])
}

/// Round trips per second with `conns` closed-loop connections; with `rate`
/// set, each connection is paced so the total is about `rate` per second.
async fn load(addr: &str, conns: usize, secs: f64, rate: Option<u64>) -> f64 {
    let done = Arc::new(AtomicU64::new(0));
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut tasks = Vec::new();
    for _ in 0..conns {
        let mut s = connect(addr).await;
        let done = Arc::clone(&done);
        tasks.push(tokio::spawn(async move {
            let mut buf = [0u8; MSG];
            let mut tick = rate.map(|r| {
                let mut i = tokio::time::interval(Duration::from_secs_f64(conns as f64 / r as f64));
                i.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                i
            });
            while Instant::now() < end {
                if let Some(t) = tick.as_mut() {
                    t.tick().await;
                }
                one_round_trip(&mut s, &mut buf).await;
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    let start = Instant::now();
    for t in tasks {
        t.await.unwrap();
    }
    done.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64()
}

struct Row {
    name: String,
    p50: f64,
    p99: f64,
    max_rps: f64,
    max_cpu: Option<f64>,
    paced_rps: f64,
    paced_cpu: Option<f64>,
}

async fn measure(name: &str, addr: &str, pid: Option<u32>, set: &Settings, ticks: f64) -> Row {
    let (p50, p99) = latency(addr, set.samples).await;
    let cpu = || pid.map(|p| cpu_seconds(p, ticks));
    let (c0, t0) = (cpu(), Instant::now());
    let max_rps = load(addr, set.conns, set.secs, None).await;
    let max_cpu = cpu()
        .zip(c0)
        .map(|(a, b)| (a - b) / t0.elapsed().as_secs_f64());
    let (c0, t0) = (cpu(), Instant::now());
    let paced_rps = load(addr, 10, set.secs, Some(set.rate)).await;
    let paced_cpu = cpu()
        .zip(c0)
        .map(|(a, b)| (a - b) / t0.elapsed().as_secs_f64());
    Row {
        name: name.into(),
        p50,
        p99,
        max_rps,
        max_cpu,
        paced_rps,
        paced_cpu,
    }
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --all-targets` does not, and
    // this pins CPUs and runs for a while, so it only runs when benchmarking.
    if !std::env::args().any(|a| a == "--bench") {
        println!("roundtrip: benchmark only; run it with cargo bench or bench.sh");
        return;
    }
    let set = Settings {
        secs: env_or("BENCH_SECS", 3.0),
        conns: env_or("BENCH_CONNS", 32),
        rate: env_or("BENCH_RATE", 5000),
        samples: env_or("BENCH_SAMPLES", 20000),
        proxy_cpu: env_or("BENCH_PROXY_CPU", "0".to_string()),
        client_cpu: env_or("BENCH_CLIENT_CPU", "1".to_string()),
    };
    // Pin this process (client and echo server) away from the forwarder.
    let pinned = Command::new("taskset")
        .args([
            "-a",
            "-p",
            "-c",
            &set.client_cpu,
            &std::process::id().to_string(),
        ])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let ticks: f64 = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0);

    let echo_std = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    echo_std.set_nonblocking(true).unwrap();
    let echo = echo_std.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async { echo_server(TcpListener::from_std(echo_std).unwrap()).await });
    });

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut rows = Vec::new();
    rows.push(rt.block_on(measure("direct", &echo, None, &set, ticks)));
    {
        let fp = start_fault_proxy(&set.proxy_cpu, &echo);
        rows.push(rt.block_on(measure(
            "fault-proxy",
            &fp.addr,
            Some(fp.child.id()),
            &set,
            ticks,
        )));
    }
    match start_haproxy(&set.proxy_cpu, &echo) {
        Some(hp) => rows.push(rt.block_on(measure(
            "haproxy (tcp)",
            &hp.addr,
            Some(hp.child.id()),
            &set,
            ticks,
        ))),
        None => println!("haproxy not available: its row is missing (apt-get install haproxy)"),
    }

    println!(
        "\n{}-byte round trips on 127.0.0.1; forwarder pinned to CPU {}, client+echo to CPU {} (pinned: {pinned}); \
         latency from {} sequential round trips on one connection; max load {} connections closed-loop for {} s; \
         paced load {} round trips/s on 10 connections for {} s.\n",
        MSG, set.proxy_cpu, set.client_cpu, set.samples, set.conns, set.secs, set.rate, set.secs
    );
    println!("| path | p50 µs | p99 µs | added p50 µs | added p99 µs | max round trips/s | forwarder CPU at max | forwarder round trips/s per CPU | paced round trips/s | CPU-s per 1,000 round trips (paced) |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let (d50, d99) = (rows[0].p50, rows[0].p99);
    for r in &rows {
        let fmt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("-".to_string(), f);
        println!(
            "| {} | {:.1} | {:.1} | {:+.1} | {:+.1} | {:.0} | {} | {} | {:.0} | {} |",
            r.name,
            r.p50,
            r.p99,
            r.p50 - d50,
            r.p99 - d99,
            r.max_rps,
            fmt(r.max_cpu, &|c| format!("{:.0}%", c * 100.0)),
            fmt(r.max_cpu, &|c| format!("{:.0}", r.max_rps / c.max(1e-9))),
            r.paced_rps,
            fmt(r.paced_cpu, &|c| format!(
                "{:.4}",
                c / (r.paced_rps / 1000.0)
            )),
        );
    }
}
