//! The shared harness of the contender tests: a throwaway PostgreSQL reached on 127.0.0.1,
//! databases cloned from seeded templates, contenders started from an argv + env, the gate
//! suite (`contenders/gate/gate.py`), a small HTTP client, and a database link that can be cut
//! (the workspace's `fault-proxy` when it is built, else a TCP forwarder of our own).
//!
//! A contender is only its start command: `Contender { name, argv, env }`, started with
//! `LISTEN_PORT=0` (it binds a port the system picks and names it on stderr, `listening on
//! port N`) and `DATABASE_URL` set (CONTRACT.md, Operations). `contenders()` lists feed-py and
//! feed-rs (built by `cargo build -p feed-rs`); `FEEDBENCH_CONTENDERS=feed-py,feed-rs` narrows
//! the list.
//!
//! No port is chosen by binding port 0, closing the listener and binding its number again:
//! PostgreSQL listens on a unix socket only, behind a TCP forwarder whose listener this
//! process holds; contenders and the fault proxy bind port 0 themselves and report the port.
//!
//! Prerequisites (PostgreSQL 15 under /usr/lib/postgresql/15/bin, Debian's /usr/bin/python3
//! with aiohttp and asyncpg): every test is tier 2's, run with
//! `-- --ignored` (scripts/test does), and fails, saying what is missing, without them.

#![allow(dead_code)]

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

pub const PG_BIN: &str = "/usr/lib/postgresql/15/bin";
pub const PYTHON: &str = "/usr/bin/python3";

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Whether the tests can run here; `Err` says what is missing and how to get it.
pub fn prerequisites() -> Result<(), String> {
    for bin in ["initdb", "postgres", "psql"] {
        if !Path::new(PG_BIN).join(bin).exists() {
            return Err(format!(
                "{PG_BIN}/{bin} is missing (apt-get install postgresql)"
            ));
        }
    }
    let ok = Command::new(PYTHON)
        .args(["-c", "import aiohttp, asyncpg"])
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        return Err(format!("{PYTHON} cannot import aiohttp and asyncpg (apt-get install python3-aiohttp python3-asyncpg)"));
    }
    Ok(())
}

/// The cluster. Panics, saying what is missing and how to get it, when the prerequisites do
/// not hold.
///
/// The tests' checks are timed (a drain within its grace, a 503 within 100 ms of a cut, a
/// connection within CONNECT_TIMEOUT_MS), and on a 2-core host a test seeding or scanning the
/// production schema beside them starved a contender for seconds (in-flight requests answered
/// 503 after 5.8 s, a listener closed 5.7 s after SIGTERM instead of 0.3 s): they run one at a
/// time, as every test of this binary does (main.rs).
pub fn setup() -> &'static Cluster {
    if let Err(reason) = prerequisites() {
        panic!("this test needs PostgreSQL 15 and python3-aiohttp/asyncpg on the host: {reason}");
    }
    cluster()
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

fn id_of(flag: &str, user: &str) -> Option<String> {
    let out = Command::new("id").args([flag, user]).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// `argv` wrapped in `setpriv`: as an unprivileged user when we are root (PostgreSQL refuses
/// to run as root), and with a parent-death signal so nothing outlives the test process.
fn wrapped(argv: &[String], as_user: Option<(&str, &str)>, death_signal: &str) -> Command {
    let mut cmd = Command::new("setpriv");
    if let Some((uid, gid)) = as_user {
        cmd.arg(format!("--reuid={uid}"))
            .arg(format!("--regid={gid}"))
            .arg("--clear-groups");
    }
    cmd.arg(format!("--pdeathsig={death_signal}"))
        .arg("--")
        .args(argv);
    cmd
}

// --- PostgreSQL -------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
pub struct Scale {
    pub profiles: u32,
    pub posts: u32,
}

/// Small enough to seed in well under a second; every visibility case occurs many times.
pub const SMALL: Scale = Scale {
    profiles: 1000,
    posts: 20000,
};
/// The seed's defaults (CONTRACT.md): the production-like size.
pub const FULL: Scale = Scale {
    profiles: 10000,
    posts: 200000,
};

/// PostgreSQL, listening on a unix socket in `dir` only; `port` is a TCP forwarder to it.
pub struct Cluster {
    pub port: u16,
    front: Forwarder,
    dir: PathBuf,
    templates: Mutex<HashSet<String>>,
    counter: AtomicUsize,
}

static CLUSTER: OnceLock<Cluster> = OnceLock::new();

/// The port in the name of PostgreSQL's unix socket (`.s.PGSQL.5432`); no TCP port is bound.
const SOCKET_PORT: u16 = 5432;

pub fn cluster() -> &'static Cluster {
    CLUSTER
        .get_or_init(|| Cluster::start().unwrap_or_else(|e| panic!("cannot start PostgreSQL: {e}")))
}

impl Cluster {
    fn start() -> Result<Cluster, String> {
        let tmp = std::env::temp_dir();
        // Remove the clusters of test processes that are gone.
        if let Ok(entries) = std::fs::read_dir(&tmp) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().to_string();
                if let Some(pid) = name.strip_prefix("feedbench-contenders-pg-") {
                    if !Path::new("/proc").join(pid).exists() {
                        let _ = std::fs::remove_dir_all(e.path());
                    }
                }
            }
        }
        let dir = tmp.join(format!("feedbench-contenders-pg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("logs")).map_err(|e| e.to_string())?;
        let user = if is_root() {
            let uid = id_of("-u", "postgres").unwrap_or_else(|| "65534".into());
            let gid = id_of("-g", "postgres").unwrap_or_else(|| "65534".into());
            let st = Command::new("chown")
                .arg(format!("{uid}:{gid}"))
                .arg(&dir)
                .status()
                .map_err(|e| e.to_string())?;
            if !st.success() {
                return Err("chown of the cluster directory failed".into());
            }
            Some((uid, gid))
        } else {
            None
        };
        let as_user = user.as_ref().map(|(u, g)| (u.as_str(), g.as_str()));
        let data = dir.join("data");
        let initdb: Vec<String> = vec![
            format!("{PG_BIN}/initdb"),
            "-D".into(),
            data.display().to_string(),
            "-U".into(),
            "postgres".into(),
            "--auth=trust".into(),
            "--encoding=UTF8".into(),
            "--locale=C".into(),
            "--no-sync".into(),
        ];
        let out = wrapped(&initdb, as_user, "KILL")
            .output()
            .map_err(|e| format!("initdb: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "initdb failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let postgres: Vec<String> = [
            format!("{PG_BIN}/postgres"),
            "-D".into(),
            data.display().to_string(),
            "-p".into(),
            SOCKET_PORT.to_string(),
            "-c".into(),
            "listen_addresses=".into(),
            "-c".into(),
            format!("unix_socket_directories={}", dir.display()),
            "-c".into(),
            "fsync=off".into(),
            "-c".into(),
            "synchronous_commit=off".into(),
            "-c".into(),
            "full_page_writes=off".into(),
            "-c".into(),
            "max_connections=300".into(),
        ]
        .into();
        let log = std::fs::File::create(dir.join("postgres.log")).map_err(|e| e.to_string())?;
        let mut cmd = wrapped(&postgres, as_user, "INT");
        cmd.stdout(log.try_clone().unwrap())
            .stderr(log)
            .stdin(Stdio::null());
        // The parent-death signal fires when the *thread* that spawned the server ends, so a
        // thread that lives as long as the test process spawns it and keeps it.
        let (tx, rx) = std::sync::mpsc::channel();
        thread::Builder::new()
            .name("postgres".into())
            .spawn(move || {
                let child = cmd.spawn();
                let ok = child.is_ok();
                let _ = tx.send(child.map(|_| ()).map_err(|e| e.to_string()));
                if ok {
                    loop {
                        thread::park();
                    }
                }
            })
            .unwrap();
        rx.recv().unwrap().map_err(|e| format!("postgres: {e}"))?;
        let front = Forwarder::to_unix(dir.join(format!(".s.PGSQL.{SOCKET_PORT}")));
        let port = front.port;
        let cluster = Cluster {
            port,
            front,
            dir,
            templates: Mutex::new(HashSet::new()),
            counter: AtomicUsize::new(0),
        };
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            if cluster.psql("postgres", "SELECT 1").is_ok() {
                break;
            }
            if Instant::now() > until {
                let log =
                    std::fs::read_to_string(cluster.dir.join("postgres.log")).unwrap_or_default();
                return Err(format!("PostgreSQL did not come up:\n{log}"));
            }
            thread::sleep(Duration::from_millis(100));
        }
        eprintln!(
            "PostgreSQL 15 on a unix socket, forwarded from 127.0.0.1:{port}, data in {}",
            cluster.dir.display()
        );
        Ok(cluster)
    }

    pub fn log_dir(&self) -> PathBuf {
        self.dir.join("logs")
    }

    fn psql_cmd(&self, db: &str) -> Command {
        let mut cmd = Command::new(format!("{PG_BIN}/psql"));
        cmd.arg("-h")
            .arg(&self.dir)
            .args(["-p", &SOCKET_PORT.to_string(), "-U", "postgres", "-d", db])
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
            .env_remove("PGOPTIONS")
            .stdin(Stdio::null());
        cmd
    }

    /// Runs SQL in a database; the unaligned, tuples-only output.
    pub fn psql(&self, db: &str, sql: &str) -> Result<String, String> {
        let out = self
            .psql_cmd(db)
            .args(["-c", sql])
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).to_string())
        }
    }

    fn template(&self, variant: &str, scale: Scale) -> String {
        let name = format!("tpl_{variant}_{}_{}", scale.profiles, scale.posts);
        let mut done = self.templates.lock().unwrap_or_else(|e| e.into_inner());
        if done.contains(&name) {
            return name;
        }
        let schema = repo().join("contenders/schema");
        self.psql("postgres", &format!("DROP DATABASE IF EXISTS {name}"))
            .unwrap();
        self.psql("postgres", &format!("CREATE DATABASE {name}"))
            .unwrap();
        let started = Instant::now();
        let out = self
            .psql_cmd(&name)
            .env(
                "PGOPTIONS",
                format!(
                    "-c feed.profiles={} -c feed.posts={}",
                    scale.profiles, scale.posts
                ),
            )
            .arg("-f")
            .arg(schema.join("schema.sql"))
            .arg("-f")
            .arg(schema.join(format!("{variant}.sql")))
            .arg("-f")
            .arg(schema.join("seed.sql"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "loading the {variant} schema and seed failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!("seeded {name} in {:.1} s", started.elapsed().as_secs_f64());
        done.insert(name.clone());
        name
    }

    /// A fresh database: schema, the index variant (`production` or `indexed`) and the seed
    /// at `scale`, cloned from a template seeded once per process. Dropped on drop.
    pub fn database(&'static self, variant: &str, scale: Scale) -> Database {
        let template = self.template(variant, scale);
        let name = format!(
            "t{}_{}",
            self.counter.fetch_add(1, Ordering::SeqCst),
            variant
        );
        let _guard = self.templates.lock().unwrap_or_else(|e| e.into_inner());
        self.psql(
            "postgres",
            &format!("CREATE DATABASE {name} TEMPLATE {template}"),
        )
        .unwrap();
        Database {
            cluster: self,
            name,
        }
    }
}

pub struct Database {
    pub cluster: &'static Cluster,
    pub name: String,
}

impl Database {
    pub fn url(&self) -> String {
        self.url_via(self.cluster.port)
    }

    /// The URL through a proxy listening on `port` in front of the cluster.
    pub fn url_via(&self, port: u16) -> String {
        format!("postgres://postgres@127.0.0.1:{port}/{}", self.name)
    }

    pub fn psql(&self, sql: &str) -> String {
        self.cluster
            .psql(&self.name, sql)
            .unwrap_or_else(|e| panic!("psql {sql}: {e}"))
    }

    /// A session holding `LOCK TABLE posts IN ACCESS EXCLUSIVE MODE` until dropped or released.
    pub fn lock_posts(&self) -> PostsLock {
        let mut child = self
            .cluster
            .psql_cmd(&self.name)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.as_mut().unwrap();
        stdin
            .write_all(b"BEGIN;\nLOCK TABLE posts IN ACCESS EXCLUSIVE MODE;\n\\echo locked\n")
            .unwrap();
        stdin.flush().unwrap();
        let mut buf = [0u8; 7];
        child.stdout.as_mut().unwrap().read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"locked\n");
        PostsLock { child: Some(child) }
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        let _ = self.cluster.psql(
            "postgres",
            &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        );
    }
}

pub struct PostsLock {
    child: Option<Child>,
}

impl PostsLock {
    pub fn release(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.stdin.as_mut().unwrap().write_all(b"ROLLBACK;\n");
            drop(child.stdin.take());
            let _ = child.wait();
        }
    }
}

impl Drop for PostsLock {
    fn drop(&mut self) {
        self.release();
    }
}

// --- contenders -------------------------------------------------------------------------------

/// A contender is its start command. Every contender listed must start: one that cannot
/// fails the test.
#[derive(Clone, Debug)]
pub struct Contender {
    pub name: String,
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
}

pub fn feed_py() -> Contender {
    Contender {
        name: "feed-py".into(),
        argv: vec![
            PYTHON.into(),
            repo()
                .join("contenders/feed-py/main.py")
                .display()
                .to_string(),
        ],
        env: vec![("PYTHONDONTWRITEBYTECODE".into(), "1".into())],
    }
}

/// The directory cargo puts this build's binaries in (`target/debug`).
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .and_then(|deps| deps.parent())
        .unwrap()
        .to_path_buf()
}

/// feed-rs: `cargo build -p feed-rs` once per test process (cargo releases the build lock
/// while tests run), or the binary in FEEDBENCH_FEED_RS_BIN. Panics when it does not build.
pub fn feed_rs() -> Contender {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let bin = BIN.get_or_init(|| {
        if let Ok(bin) = std::env::var("FEEDBENCH_FEED_RS_BIN") {
            return Ok(PathBuf::from(bin));
        }
        if !repo().join("contenders/feed-rs/Cargo.toml").exists() {
            return Err("contenders/feed-rs is absent".into());
        }
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let release = bin_dir().file_name().is_some_and(|n| n == "release");
        let out = Command::new(cargo)
            .args(["build", "--quiet", "-p", "feed-rs"])
            .args(release.then_some("--release"))
            .current_dir(repo())
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cargo build -p feed-rs: {e}"))?;
        let bin = bin_dir().join("feed-rs");
        if !out.status.success() || !bin.exists() {
            return Err(format!(
                "cargo build -p feed-rs failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(bin)
    });
    match bin {
        Ok(bin) => Contender {
            name: "feed-rs".into(),
            argv: vec![bin.display().to_string()],
            env: vec![],
        },
        Err(e) => panic!("feed-rs does not build: {e}"),
    }
}

/// The contenders under test: feed-py and feed-rs; FEEDBENCH_CONTENDERS narrows.
pub fn contenders() -> Vec<Contender> {
    let mut all = vec![feed_py()];
    let wanted = std::env::var("FEEDBENCH_CONTENDERS").ok();
    let wanted = |name: &str| {
        wanted
            .as_deref()
            .is_none_or(|w| w.split(',').any(|x| x.trim() == name))
    };
    if wanted("feed-rs") {
        all.push(feed_rs());
    }
    all.retain(|c| wanted(&c.name));
    all
}

pub struct Service {
    pub name: String,
    pub port: u16,
    child: Child,
    pub log: PathBuf,
}

static STARTS: AtomicUsize = AtomicUsize::new(0);

/// The port in a contender's `listening on port N` line, once it is logged.
fn listening_port(log: &str) -> Option<u16> {
    log.lines()
        .find_map(|l| l.split_once("listening on port ").map(|(_, rest)| rest))
        .and_then(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .filter(|&port| port != 0)
}

impl Contender {
    /// Starts the contender with `LISTEN_PORT=0` against `database_url`, with `env` over the
    /// defaults; reads the port it bound from its log and waits until it is live and ready.
    pub fn start(&self, database_url: &str, env: &[(&str, &str)]) -> Result<Service, String> {
        let log = cluster().log_dir().join(format!(
            "{}-{}.log",
            self.name,
            STARTS.fetch_add(1, Ordering::SeqCst)
        ));
        let file = std::fs::File::create(&log).unwrap();
        let mut cmd = wrapped(&self.argv, None, "KILL");
        cmd.envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("LISTEN_PORT", "0")
            .env("DATABASE_URL", database_url)
            .envs(env.iter().copied())
            .current_dir(repo())
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file);
        let child = cmd
            .spawn()
            .map_err(|e| format!("{}: cannot run {:?}: {e}", self.name, self.argv))?;
        let mut svc = Service {
            name: self.name.clone(),
            port: 0,
            child,
            log,
        };
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(Some(status)) = svc.child.try_wait() {
                return Err(format!(
                    "{} exited with {status} before serving:\n{}",
                    self.name,
                    svc.log_tail()
                ));
            }
            if svc.port == 0 {
                let text = std::fs::read_to_string(&svc.log).unwrap_or_default();
                svc.port = listening_port(&text).unwrap_or(0);
            }
            if svc.port == 0 {
                // Not listening yet.
            } else if let Ok(r) = svc.get("/readyz") {
                if r.status == 200 {
                    return Ok(svc);
                }
            }
            if Instant::now() > until {
                return Err(format!(
                    "{} was not ready within 20 s:\n{}",
                    self.name,
                    svc.log_tail()
                ));
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// `start`, panicking with the reason when the contender cannot start.
    pub fn start_or_fail(&self, database_url: &str, env: &[(&str, &str)]) -> Service {
        self.start(database_url, env)
            .unwrap_or_else(|e| panic!("{e}"))
    }
}

impl Service {
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn get(&self, path: &str) -> std::io::Result<Http> {
        http(self.port, "GET", path, None, Duration::from_secs(10))
    }

    pub fn sigterm(&self) {
        let st = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(st.success(), "kill -TERM {} failed", self.pid());
    }

    /// The exit status, if the process ends within `timeout`.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let until = Instant::now() + timeout;
        loop {
            if let Ok(Some(st)) = self.child.try_wait() {
                return Some(st);
            }
            if Instant::now() > until {
                return None;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// --- the gate -------------------------------------------------------------------------------

pub struct GateRun {
    pub passed: bool,
    pub output: String,
}

/// Runs `contenders/gate/gate.py` against a service and its database, with extra arguments.
pub fn run_gate(svc: &Service, db: &Database, args: &[&str]) -> GateRun {
    let out: Output = Command::new(PYTHON)
        .arg(repo().join("contenders/gate/gate.py"))
        .env("FEEDBENCH_TARGET", svc.url())
        .env("FEEDBENCH_DATABASE_URL", db.url())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let output = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!(
        "--- gate against {} ({}) {:?}\n{output}",
        svc.name, db.name, args
    );
    GateRun {
        passed: out.status.success(),
        output,
    }
}

// --- HTTP -------------------------------------------------------------------------------------

#[derive(Debug)]
pub struct Http {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub elapsed: Duration,
}

impl Http {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }

    pub fn error_code(&self) -> Option<String> {
        self.json()["error"]["code"].as_str().map(str::to_string)
    }
}

/// One HTTP/1.1 request on a fresh connection (`Connection: close`).
pub fn http(
    port: u16,
    method: &str,
    path: &str,
    body: Option<&str>,
    timeout: Duration,
) -> std::io::Result<Http> {
    let started = Instant::now();
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(timeout))?;
    s.set_nodelay(true)?;
    let body = body.unwrap_or("");
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes())?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let elapsed = started.elapsed();
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("bad response: {text:?}"),
            )
        })?;
    let headers = lines
        .filter_map(|l| {
            l.split_once(':')
                .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        })
        .collect();
    Ok(Http {
        status,
        headers,
        body: body.to_string(),
        elapsed,
    })
}

pub fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    xs[xs.len() / 2]
}

// --- a database link that can be cut ------------------------------------------------------------

/// The fault proxy between a contender and PostgreSQL: the workspace's `fault-proxy` (driven
/// through its Toxiproxy API, which the gate's link-cut check uses as well) when it is built,
/// else (or with FEEDBENCH_LINK=forwarder) `Forwarder`.
pub enum Link {
    FaultProxy { child: Child, api: u16, listen: u16 },
    Forwarder(Forwarder),
}

pub const LINK_NAME: &str = "db";

impl Link {
    pub fn start(upstream: u16) -> Link {
        let bin = bin_dir().join("fault-proxy");
        if std::env::var("FEEDBENCH_LINK").as_deref() == Ok("forwarder") {
            return Link::Forwarder(Forwarder::start(upstream));
        }
        if !bin.exists() {
            eprintln!(
                "note: {} is not built; using the test's own TCP forwarder",
                bin.display()
            );
            return Link::Forwarder(Forwarder::start(upstream));
        }
        // Port 0 for the API and for the proxy: fault-proxy binds them and reports the ports.
        let argv = vec![
            bin.display().to_string(),
            "-host".into(),
            "127.0.0.1".into(),
            "-port".into(),
            "0".into(),
        ];
        let mut child = wrapped(&argv, None, "KILL")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        thread::spawn(move || {
            // Reads every line, so the proxy never blocks on a full pipe.
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some((_, addr)) = line.split_once("API listening on ") {
                    let _ = tx.send(addr.trim().to_string());
                }
            }
        });
        let api_addr = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("fault-proxy did not start");
        let api: u16 = api_addr
            .rsplit_once(':')
            .and_then(|(_, port)| port.parse().ok())
            .unwrap_or_else(|| panic!("fault-proxy API address {api_addr:?}"));
        let create = format!(
            r#"{{"name":"{LINK_NAME}","listen":"127.0.0.1:0","upstream":"127.0.0.1:{upstream}"}}"#
        );
        let r = http(
            api,
            "POST",
            "/proxies",
            Some(&create),
            Duration::from_secs(5),
        )
        .expect("creating the proxy");
        assert_eq!(r.status, 201, "creating the proxy: {r:?}");
        let listen: u16 = r.json()["listen"]
            .as_str()
            .and_then(|addr| addr.rsplit_once(':'))
            .and_then(|(_, port)| port.parse().ok())
            .unwrap_or_else(|| panic!("the proxy's listen address: {r:?}"));
        Link::FaultProxy { child, api, listen }
    }

    pub fn port(&self) -> u16 {
        match self {
            Link::FaultProxy { listen, .. } => *listen,
            Link::Forwarder(f) => f.port,
        }
    }

    pub fn toxiproxy_url(&self) -> Option<String> {
        match self {
            Link::FaultProxy { api, .. } => Some(format!("http://127.0.0.1:{api}")),
            Link::Forwarder(_) => None,
        }
    }

    pub fn set_enabled(&self, enabled: bool) {
        match self {
            Link::FaultProxy { api, .. } => {
                let r = http(
                    *api,
                    "POST",
                    &format!("/proxies/{LINK_NAME}"),
                    Some(&format!(r#"{{"enabled":{enabled}}}"#)),
                    Duration::from_secs(5),
                )
                .unwrap();
                assert_eq!(r.status, 200, "{r:?}");
            }
            Link::Forwarder(f) => f.set_enabled(enabled),
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        if let Link::FaultProxy { child, .. } = self {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A TCP forwarder on 127.0.0.1 whose link can be cut.
///
/// Its listener is bound once, to a port the system picks, and kept until the forwarder is
/// dropped, so no other process can take the port while the link is cut. Disabled, it closes
/// every open connection and closes each new one as soon as it is accepted, before forwarding
/// a byte (a client learns within a round trip that the database cannot be reached, from an
/// end of stream where Toxiproxy's closed port gives a refused connect). Enabled, it forwards
/// new connections again.
pub struct Forwarder {
    pub port: u16,
    enabled: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    conns: Arc<Closers>,
}

/// Where a forwarder connects: a TCP port on 127.0.0.1, or a unix socket.
enum Upstream {
    Tcp(u16),
    Unix(PathBuf),
}

impl Forwarder {
    pub fn start(upstream: u16) -> Forwarder {
        Forwarder::spawn(Upstream::Tcp(upstream))
    }

    fn to_unix(path: PathBuf) -> Forwarder {
        Forwarder::spawn(Upstream::Unix(path))
    }

    fn spawn(upstream: Upstream) -> Forwarder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let f = Forwarder {
            port,
            enabled: Arc::new(AtomicBool::new(true)),
            stop: Arc::new(AtomicBool::new(false)),
            conns: Arc::default(),
        };
        let (enabled, stop, conns) = (f.enabled.clone(), f.stop.clone(), f.conns.clone());
        thread::spawn(move || {
            for client in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                // Disabled: an accepted connection is dropped (closed) at once.
                let Ok(client) = client else { continue };
                if !enabled.load(Ordering::SeqCst) {
                    continue;
                }
                let _ = client.set_nodelay(true);
                match &upstream {
                    Upstream::Tcp(port) => {
                        if let Ok(server) = TcpStream::connect(("127.0.0.1", *port)) {
                            let _ = server.set_nodelay(true);
                            pipe(client, server, &enabled, &conns);
                        }
                    }
                    Upstream::Unix(path) => {
                        if let Ok(server) = UnixStream::connect(path) {
                            pipe(client, server, &enabled, &conns);
                        }
                    }
                }
            }
        });
        f
    }

    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::SeqCst);
        if !on {
            // A connection registers only while enabled (under this lock), so none forwarded
            // before the cut outlives it.
            for close in self.conns.lock().unwrap().drain(..) {
                close();
            }
        }
    }
}

/// How to close each forwarded connection's two ends.
type Closers = Mutex<Vec<Box<dyn Fn() + Send>>>;

/// A stream the forwarder can pipe: cloned for the second direction, shut down to close.
trait Sock: Read + Write + Send + Sized + 'static {
    fn dup(&self) -> std::io::Result<Self>;
    fn close(&self);
}

impl Sock for TcpStream {
    fn dup(&self) -> std::io::Result<Self> {
        self.try_clone()
    }
    fn close(&self) {
        let _ = self.shutdown(Shutdown::Both);
    }
}

impl Sock for UnixStream {
    fn dup(&self) -> std::io::Result<Self> {
        self.try_clone()
    }
    fn close(&self) {
        let _ = self.shutdown(Shutdown::Both);
    }
}

/// Copies bytes both ways on two threads and registers both ends for closing by a cut,
/// unless the link was cut meanwhile: then both are closed now.
fn pipe<S: Sock>(client: TcpStream, server: S, enabled: &AtomicBool, conns: &Closers) {
    let (Ok(c1), Ok(c2), Ok(s1), Ok(s2)) = (client.dup(), client.dup(), server.dup(), server.dup())
    else {
        return;
    };
    {
        let mut held = conns.lock().unwrap();
        if !enabled.load(Ordering::SeqCst) {
            client.close();
            server.close();
            return;
        }
        held.push(Box::new(move || c1.close()));
        held.push(Box::new(move || s1.close()));
    }
    thread::spawn(move || copy_then_close(c2, server));
    thread::spawn(move || copy_then_close(s2, client));
}

fn copy_then_close<A: Sock, B: Sock>(mut from: A, mut to: B) {
    let _ = std::io::copy(&mut from, &mut to);
    to.close();
    from.close();
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.set_enabled(false);
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the acceptor, which sees `stop` and ends, closing the listener.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}
