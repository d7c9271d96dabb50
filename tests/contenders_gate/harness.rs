//! The shared harness of the contender tests: a throwaway PostgreSQL on 127.0.0.1, databases
//! cloned from seeded templates, contenders started from an argv + env, the gate suite
//! (`contenders/gate/gate.py`), a small HTTP client, and a database link that can be cut
//! (the workspace's `fault-proxy` when it is built, else a TCP forwarder of our own).
//!
//! A contender is only its start command: `Contender { name, argv, env }`, reached at
//! `LISTEN_PORT` with `DATABASE_URL` set (CONTRACT.md, Operations). `contenders()` lists
//! feed-py and, when its binary is built, feed-rs; `FEEDBENCH_CONTENDERS=feed-py,feed-rs`
//! narrows the list.
//!
//! Prerequisites (PostgreSQL 15 under /usr/lib/postgresql/15/bin, Debian's /usr/bin/python3
//! with aiohttp and asyncpg): outside CI a missing one skips a test with a printed reason;
//! with CI=true it fails the test.

#![allow(dead_code)]

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
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

pub fn in_ci() -> bool {
    matches!(std::env::var("CI").as_deref(), Ok("true") | Ok("1"))
}

/// Outside CI: print why the test does nothing. Under CI=true: fail.
pub fn skip_or_fail(reason: &str) {
    if in_ci() {
        panic!("CI=true and {reason}");
    }
    eprintln!("SKIPPED: {reason}");
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

/// The cluster when the prerequisites hold; `None` (after printing why) when the test should
/// be skipped. Panics under CI=true.
pub fn setup() -> Option<&'static Cluster> {
    match prerequisites() {
        Ok(()) => Some(cluster()),
        Err(reason) => {
            skip_or_fail(&reason);
            None
        }
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
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

pub struct Cluster {
    pub port: u16,
    dir: PathBuf,
    templates: Mutex<HashSet<String>>,
    counter: AtomicUsize,
}

static CLUSTER: OnceLock<Cluster> = OnceLock::new();

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
        let port = free_port();
        let postgres: Vec<String> = [
            format!("{PG_BIN}/postgres"),
            "-D".into(),
            data.display().to_string(),
            "-p".into(),
            port.to_string(),
            "-c".into(),
            "listen_addresses=127.0.0.1".into(),
            "-c".into(),
            "unix_socket_directories=".into(),
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
        let cluster = Cluster {
            port,
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
                return Err(format!("PostgreSQL did not come up on port {port}:\n{log}"));
            }
            thread::sleep(Duration::from_millis(100));
        }
        eprintln!(
            "PostgreSQL 15 on 127.0.0.1:{port}, data in {}",
            cluster.dir.display()
        );
        Ok(cluster)
    }

    pub fn log_dir(&self) -> PathBuf {
        self.dir.join("logs")
    }

    fn psql_cmd(&self, db: &str) -> Command {
        let mut cmd = Command::new(format!("{PG_BIN}/psql"));
        cmd.args([
            "-h",
            "127.0.0.1",
            "-p",
            &self.port.to_string(),
            "-U",
            "postgres",
            "-d",
            db,
        ])
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

/// A contender is its start command. `required`: it must start (feed-py always; feed-rs
/// under CI=true); otherwise a contender that cannot start is skipped with a note.
#[derive(Clone, Debug)]
pub struct Contender {
    pub name: String,
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    pub required: bool,
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
        required: true,
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

/// feed-rs, when its binary builds: `cargo build -p feed-rs` once per test process (cargo
/// releases the build lock while tests run), or the binary in FEEDBENCH_FEED_RS_BIN.
pub fn feed_rs() -> Option<Contender> {
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
        Ok(bin) => Some(Contender {
            name: "feed-rs".into(),
            argv: vec![bin.display().to_string()],
            env: vec![],
            required: in_ci(),
        }),
        Err(e) if in_ci() => panic!("CI=true and feed-rs does not build: {e}"),
        Err(e) => {
            eprintln!("note: testing without feed-rs: {e}");
            None
        }
    }
}

/// The contenders under test: feed-py, and feed-rs when built; FEEDBENCH_CONTENDERS narrows.
pub fn contenders() -> Vec<Contender> {
    let mut all = vec![feed_py()];
    let wanted = std::env::var("FEEDBENCH_CONTENDERS").ok();
    let wanted = |name: &str| {
        wanted
            .as_deref()
            .is_none_or(|w| w.split(',').any(|x| x.trim() == name))
    };
    if wanted("feed-rs") {
        all.extend(feed_rs());
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

impl Contender {
    /// Starts the contender on a free port against `database_url`, with `env` over the
    /// defaults, and waits until it is live and ready.
    pub fn start(&self, database_url: &str, env: &[(&str, &str)]) -> Result<Service, String> {
        let port = free_port();
        let log = cluster()
            .log_dir()
            .join(format!("{}-{port}.log", self.name));
        let file = std::fs::File::create(&log).unwrap();
        let mut cmd = wrapped(&self.argv, None, "KILL");
        cmd.envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("LISTEN_PORT", port.to_string())
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
            port,
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
            if let Ok(r) = svc.get("/readyz") {
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

    /// `start`, or `None` after printing why when this contender may be skipped.
    pub fn start_or_skip(&self, database_url: &str, env: &[(&str, &str)]) -> Option<Service> {
        match self.start(database_url, env) {
            Ok(svc) => Some(svc),
            Err(e) if self.required => panic!("{e}"),
            Err(e) => {
                eprintln!("SKIPPED {}: it cannot start: {e}", self.name);
                None
            }
        }
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
        let api = free_port();
        let argv = vec![
            bin.display().to_string(),
            "-host".into(),
            "127.0.0.1".into(),
            "-port".into(),
            api.to_string(),
        ];
        let child = wrapped(&argv, None, "KILL")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let listen = free_port();
        let until = Instant::now() + Duration::from_secs(10);
        let create = format!(
            r#"{{"name":"{LINK_NAME}","listen":"127.0.0.1:{listen}","upstream":"127.0.0.1:{upstream}"}}"#
        );
        loop {
            if let Ok(r) = http(
                api,
                "POST",
                "/proxies",
                Some(&create),
                Duration::from_secs(5),
            ) {
                assert_eq!(r.status, 201, "creating the proxy: {r:?}");
                break;
            }
            assert!(Instant::now() < until, "fault-proxy did not start");
            thread::sleep(Duration::from_millis(50));
        }
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

/// A TCP forwarder on 127.0.0.1 whose link can be cut: disabled, it closes its listener
/// (new connections are refused) and every open connection, as Toxiproxy does.
pub struct Forwarder {
    pub port: u16,
    enabled: Arc<AtomicBool>,
    listening: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<TcpStream>>>,
}

impl Forwarder {
    pub fn start(upstream: u16) -> Forwarder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let f = Forwarder {
            port,
            enabled: Arc::new(AtomicBool::new(true)),
            listening: Arc::new(AtomicBool::new(true)),
            stop: Arc::new(AtomicBool::new(false)),
            conns: Arc::new(Mutex::new(Vec::new())),
        };
        let (enabled, listening, stop, conns) = (
            f.enabled.clone(),
            f.listening.clone(),
            f.stop.clone(),
            f.conns.clone(),
        );
        thread::spawn(move || {
            let mut listener = Some(listener);
            while !stop.load(Ordering::SeqCst) {
                let on = enabled.load(Ordering::SeqCst);
                if !on && listener.is_some() {
                    listener = None;
                } else if on && listener.is_none() {
                    listener = TcpListener::bind(("127.0.0.1", port)).ok();
                }
                listening.store(listener.is_some(), Ordering::SeqCst);
                let Some(l) = &listener else {
                    thread::sleep(Duration::from_millis(2));
                    continue;
                };
                l.set_nonblocking(true).unwrap();
                match l.accept() {
                    Ok((client, _)) => {
                        client.set_nonblocking(false).unwrap();
                        let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                            continue;
                        };
                        let mut held = conns.lock().unwrap();
                        held.push(client.try_clone().unwrap());
                        held.push(server.try_clone().unwrap());
                        for (mut from, mut to) in [
                            (client.try_clone().unwrap(), server.try_clone().unwrap()),
                            (server, client),
                        ] {
                            thread::spawn(move || {
                                let _ = std::io::copy(&mut from, &mut to);
                                let _ = to.shutdown(Shutdown::Both);
                                let _ = from.shutdown(Shutdown::Both);
                            });
                        }
                    }
                    Err(_) => thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        f
    }

    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::SeqCst);
        if !on {
            for s in self.conns.lock().unwrap().drain(..) {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
        let until = Instant::now() + Duration::from_secs(5);
        while self.listening.load(Ordering::SeqCst) != on {
            assert!(Instant::now() < until, "the forwarder did not switch");
            thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for s in self.conns.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}
