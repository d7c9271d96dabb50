//! Test support: a throwaway PostgreSQL seeded with the contract's schema, the service under
//! test started by argv and env, a tiny HTTP/1.1 client, and a TCP forwarder that can cut
//! the database link. Everything listens on 127.0.0.1 only.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// The scale the tests seed (small enough to load in seconds).
pub const PGOPTIONS: &str = "-c feed.profiles=1000 -c feed.posts=20000";

/// A running PostgreSQL; it stops when the test process exits (a watchdog shell sees to it).
pub struct Postgres {
    pub port: u16,
    bin: PathBuf,
    dir: PathBuf,
    copies: AtomicUsize,
}

fn schema_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../schema")
}

fn find_bin() -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|bin| bin.join("initdb").exists() && bin.join("postgres").exists())
        .collect();
    candidates.sort();
    candidates.pop()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// A command run as the `postgres` user when the tests run as root (PostgreSQL refuses root).
fn as_pg_user(program: &Path, root: bool) -> Command {
    if root {
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", "postgres", "--"]).arg(program);
        cmd
    } else {
        Command::new(program)
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The shared PostgreSQL, or `None` (with the reason printed) when it is not installed and
/// this is not CI. Under `CI=true` a missing PostgreSQL fails the test.
pub fn postgres() -> Option<&'static Postgres> {
    static PG: OnceLock<Result<Postgres, String>> = OnceLock::new();
    match PG.get_or_init(start_postgres) {
        Ok(pg) => Some(pg),
        Err(reason) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("PostgreSQL is required under CI=true: {reason}")
        }
        Err(reason) => {
            eprintln!("SKIPPED: {reason}");
            None
        }
    }
}

fn start_postgres() -> Result<Postgres, String> {
    let bin = find_bin()
        .ok_or("no PostgreSQL server under /usr/lib/postgresql (apt-get install postgresql)")?;
    let root = is_root();
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let dir = std::env::temp_dir().join(format!("feed-rs-pg-{}-{stamp}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    if root {
        let status = Command::new("chown").arg("postgres:").arg(&dir).status();
        if !matches!(status, Ok(s) if s.success()) {
            return Err("cannot chown the data directory to postgres".into());
        }
    }
    let data = dir.join("data");
    let out = as_pg_user(&bin.join("initdb"), root)
        .args([
            "-U",
            "feed",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
            "-D",
        ])
        .arg(&data)
        .output()
        .map_err(|e| format!("initdb: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let port = free_port();
    // The watchdog stops the server once this test process is gone.
    let script = format!(
        "'{postgres}' -D '{data}' -p {port} -c listen_addresses=127.0.0.1 \
         -c unix_socket_directories='{dir}' -c fsync=off -c synchronous_commit=off \
         -c full_page_writes=off -c max_connections=300 >'{dir}/postgres.log' 2>&1 & pg=$!; \
         while [ -d /proc/{parent} ] && kill -0 $pg 2>/dev/null; do sleep 1; done; \
         kill -INT $pg 2>/dev/null; wait $pg; rm -rf '{dir}'",
        postgres = bin.join("postgres").display(),
        data = data.display(),
        dir = dir.display(),
        parent = std::process::id(),
    );
    let mut watchdog = as_pg_user(Path::new("/bin/sh"), root);
    watchdog
        .arg("-c")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    watchdog.spawn().map_err(|e| format!("postgres: {e}"))?;
    let pg = Postgres {
        port,
        bin,
        dir,
        copies: AtomicUsize::new(0),
    };
    let started = Instant::now();
    while pg.try_psql("postgres", "SELECT 1").is_err() {
        if started.elapsed() > Duration::from_secs(30) {
            let log = std::fs::read_to_string(pg.dir.join("postgres.log")).unwrap_or_default();
            return Err(format!("postgres did not start: {log}"));
        }
        thread::sleep(Duration::from_millis(100));
    }
    pg.try_psql("postgres", "CREATE DATABASE feed")?;
    let mut load = pg.psql_command("feed");
    load.env("PGOPTIONS", PGOPTIONS);
    for file in ["schema.sql", "indexed.sql", "seed.sql"] {
        load.arg("-f").arg(schema_dir().join(file));
    }
    let out = load.output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "seeding failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    // The seeded database stays idle as a template; read-only tests share one copy of it.
    pg.try_psql(
        "postgres",
        &format!("CREATE DATABASE {SHARED} TEMPLATE feed"),
    )?;
    Ok(pg)
}

/// The shared read-only database (never written, never locked).
pub const SHARED: &str = "feed_shared";

impl Postgres {
    fn psql_command(&self, db: &str) -> Command {
        let mut cmd = Command::new(self.bin.join("psql"));
        cmd.args([
            "-h",
            "127.0.0.1",
            "-p",
            &self.port.to_string(),
            "-U",
            "feed",
            "-d",
            db,
        ])
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-At", "-F", "\t"])
        .env_remove("PGOPTIONS")
        .stdin(Stdio::null());
        cmd
    }

    fn try_psql(&self, db: &str, sql: &str) -> Result<String, String> {
        let out = self
            .psql_command(db)
            .arg("-c")
            .arg(sql)
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    /// Runs `sql` in database `db` and returns its rows, tab-separated.
    pub fn psql(&self, db: &str, sql: &str) -> String {
        self.try_psql(db, sql)
            .unwrap_or_else(|e| panic!("psql {sql:?}: {e}"))
    }

    /// Starts `psql` in the background on `db` running `sql` (e.g. a lock held for a while).
    pub fn psql_background(&self, db: &str, sql: &str) -> Child {
        self.psql_command(db)
            .arg("-c")
            .arg(sql)
            .stdout(Stdio::null())
            .spawn()
            .expect("psql")
    }

    /// A fresh copy of the seeded database, for a test that writes or locks.
    pub fn copy(&self) -> String {
        let name = format!("feed_copy_{}", self.copies.fetch_add(1, Ordering::SeqCst));
        // CREATE DATABASE ... TEMPLATE needs the template idle; retry while another copy runs.
        for _ in 0..100 {
            match self.try_psql("postgres", &format!("CREATE DATABASE {name} TEMPLATE feed")) {
                Ok(_) => return name,
                Err(e) if e.contains("being accessed") => thread::sleep(Duration::from_millis(100)),
                Err(e) => panic!("copy: {e}"),
            }
        }
        panic!("the template database stayed busy")
    }

    pub fn url(&self, db: &str) -> String {
        self.url_via(self.port, db)
    }

    pub fn url_via(&self, port: u16, db: &str) -> String {
        format!("postgres://feed:feed@127.0.0.1:{port}/{db}")
    }
}

/// The service under test; killed when dropped (its stderr is printed if the test failed).
pub struct Service {
    pub port: u16,
    child: Child,
    log: PathBuf,
    env: Vec<(String, String)>,
}

static LOGS: AtomicU64 = AtomicU64::new(0);

impl Service {
    /// Starts the binary with `env` (plus `LISTEN_PORT`) and waits until `/healthz` answers.
    pub fn start(env: &[(&str, &str)]) -> Service {
        Service::start_on(
            free_port(),
            env.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    fn start_on(port: u16, env: Vec<(String, String)>) -> Service {
        let log = std::env::temp_dir().join(format!(
            "feed-rs-test-{}-{}.log",
            std::process::id(),
            LOGS.fetch_add(1, Ordering::SeqCst)
        ));
        let stderr = std::fs::File::create(&log).expect("log file");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_feed-rs"));
        cmd.env_clear()
            .env("LISTEN_PORT", port.to_string())
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        let child = cmd.spawn().expect("start feed-rs");
        let service = Service {
            port,
            child,
            log,
            env,
        };
        let started = Instant::now();
        loop {
            if let Ok(r) = try_request(port, "GET", "/healthz", None) {
                if r.status == 200 {
                    return service;
                }
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "feed-rs did not start: {}",
                service.log()
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the process and starts it again on the same port with the same environment.
    pub fn restart(mut self) -> Service {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let (port, env) = (self.port, std::mem::take(&mut self.env));
        drop(self);
        Service::start_on(port, env)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn get(&self, path: &str) -> Reply {
        request(self.port, "GET", path, None)
    }

    pub fn send(&self, method: &str, path: &str, body: Option<&str>) -> Reply {
        request(self.port, method, path, body)
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
    }

    /// Waits for the process to exit, up to `limit`; its exit code.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<i32> {
        let started = Instant::now();
        while started.elapsed() < limit {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            thread::sleep(Duration::from_millis(10));
        }
        None
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if thread::panicking() {
            eprintln!(
                "--- feed-rs log ({}) ---\n{}",
                self.log.display(),
                self.log()
            );
        }
        let _ = std::fs::remove_file(&self.log);
    }
}

/// An HTTP response.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The error code of an error body.
    pub fn code(&self) -> String {
        self.json()["error"]["code"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    }
}

/// One HTTP/1.1 request on a fresh connection (`connection: close`).
pub fn try_request(
    port: u16,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> std::io::Result<Reply> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(20)))?;
    let body = body.unwrap_or("");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    parse_reply(&raw).ok_or_else(|| std::io::Error::other("malformed response"))
}

pub fn request(port: u16, method: &str, path: &str, body: Option<&str>) -> Reply {
    try_request(port, method, path, body).unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

fn parse_reply(raw: &[u8]) -> Option<Reply> {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..split]).ok()?;
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    if chunked {
        body = dechunk(&body)?;
    }
    Some(Reply {
        status,
        headers,
        body,
    })
}

fn dechunk(mut data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = data.windows(2).position(|w| w == b"\r\n")?;
        let size =
            usize::from_str_radix(std::str::from_utf8(&data[..line_end]).ok()?.trim(), 16).ok()?;
        data = &data[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(data.get(..size)?);
        data = data.get(size + 2..)?;
    }
}

/// A TCP forwarder from a loopback port to PostgreSQL that can cut the link (close its
/// listener so connections are refused, and close every forwarded connection) and restore it.
pub struct Forwarder {
    pub port: u16,
    target: u16,
    generation: Arc<AtomicU64>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
    acceptor: Option<JoinHandle<()>>,
}

impl Forwarder {
    pub fn start(target: u16) -> Forwarder {
        let mut f = Forwarder {
            port: free_port(),
            target,
            generation: Arc::new(AtomicU64::new(0)),
            streams: Arc::new(Mutex::new(Vec::new())),
            acceptor: None,
        };
        f.restore();
        f
    }

    /// Opens the link again on the same port.
    pub fn restore(&mut self) {
        let listener = TcpListener::bind(("127.0.0.1", self.port)).expect("forwarder bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let generation = self.generation.clone();
        let mine = generation.load(Ordering::SeqCst);
        let streams = self.streams.clone();
        let target = self.target;
        self.acceptor = Some(thread::spawn(move || {
            while generation.load(Ordering::SeqCst) == mine {
                match listener.accept() {
                    Ok((client, _)) => {
                        let _ = client.set_nonblocking(false);
                        let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
                            continue;
                        };
                        let _ = client.set_nodelay(true);
                        let _ = server.set_nodelay(true);
                        pipe(&client, &server, &streams);
                    }
                    Err(_) => thread::sleep(Duration::from_millis(2)),
                }
            }
        }));
    }

    /// Cuts the link: new connections are refused, open ones are closed.
    pub fn cut(&mut self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        for stream in self.streams.lock().unwrap().drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

fn pipe(client: &TcpStream, server: &TcpStream, streams: &Arc<Mutex<Vec<TcpStream>>>) {
    let (Ok(c1), Ok(c2), Ok(s1), Ok(s2)) = (
        client.try_clone(),
        client.try_clone(),
        server.try_clone(),
        server.try_clone(),
    ) else {
        return;
    };
    {
        let mut all = streams.lock().unwrap();
        all.push(c1);
        all.push(s1);
    }
    for (mut from, mut to) in [(c2, server.try_clone()), (s2, client.try_clone())]
        .into_iter()
        .filter_map(|(a, b)| b.ok().map(|b| (a, b)))
    {
        thread::spawn(move || {
            let _ = std::io::copy(&mut from, &mut to);
            let _ = to.shutdown(Shutdown::Both);
            let _ = from.shutdown(Shutdown::Both);
        });
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.cut();
    }
}
