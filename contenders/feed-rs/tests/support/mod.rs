//! Test support: a throwaway PostgreSQL seeded with the contract's schema, the service under
//! test started by argv and env, a tiny HTTP/1.1 client, and a TCP forwarder that can cut
//! the database link. No port is chosen by closing a listener and binding its number again:
//! PostgreSQL listens on a unix socket only, reached over TCP through a forwarder whose
//! listener this process holds; the service binds port 0 and names its port on stderr.
//! Every TCP listener is on loopback, except the service's own (it binds all interfaces).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// The scale the tests seed (small enough to load in seconds).
pub const PGOPTIONS: &str = "-c feed.profiles=1000 -c feed.posts=20000";

/// A running PostgreSQL; it stops when the test process exits (a watchdog shell sees to it).
/// It listens on a unix socket in `dir` only; `port` is a TCP forwarder to that socket.
pub struct Postgres {
    pub port: u16,
    bin: PathBuf,
    dir: PathBuf,
    copies: AtomicUsize,
    front: Forwarder,
}

/// The port in the name of PostgreSQL's unix socket (`.s.PGSQL.5432`); no TCP port is bound.
const SOCKET_PORT: u16 = 5432;

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

/// The shared PostgreSQL. A test that calls this is `#[ignore]`d (it needs PostgreSQL on
/// the host, run with `-- --include-ignored`); when PostgreSQL is missing or does not start,
/// it fails, saying why and how to get it.
pub fn postgres() -> &'static Postgres {
    static PG: OnceLock<Result<Postgres, String>> = OnceLock::new();
    match PG.get_or_init(start_postgres) {
        Ok(pg) => pg,
        Err(reason) => panic!("this test needs PostgreSQL on the host: {reason}"),
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
    // The watchdog stops the server once this test process is gone.
    let script = format!(
        "'{postgres}' -D '{data}' -p {SOCKET_PORT} -c listen_addresses='' \
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
    let front = Forwarder::to_unix(dir.join(format!(".s.PGSQL.{SOCKET_PORT}")));
    let pg = Postgres {
        port: front.port,
        bin,
        dir,
        copies: AtomicUsize::new(0),
        front,
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
        cmd.arg("-h")
            .arg(&self.dir)
            .args(["-p", &SOCKET_PORT.to_string(), "-U", "feed", "-d", db])
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
    /// Starts the binary with `env` (plus `LISTEN_PORT=0`: it binds a port the system picks
    /// and names it on stderr) and waits until `/healthz` answers on that port.
    pub fn start(env: &[(&str, &str)]) -> Service {
        Service::start_with(
            env.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    fn start_with(env: Vec<(String, String)>) -> Service {
        let log = std::env::temp_dir().join(format!(
            "feed-rs-test-{}-{}.log",
            std::process::id(),
            LOGS.fetch_add(1, Ordering::SeqCst)
        ));
        let stderr = std::fs::File::create(&log).expect("log file");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_feed-rs"));
        cmd.env_clear()
            .env("LISTEN_PORT", "0")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        let child = cmd.spawn().expect("start feed-rs");
        let mut service = Service {
            port: 0,
            child,
            log,
            env,
        };
        let started = Instant::now();
        loop {
            if service.port == 0 {
                service.port = listening_port(&service.log()).unwrap_or(0);
            }
            if let Ok(Some(status)) = service.child.try_wait() {
                panic!("feed-rs exited with {status} before serving");
            }
            if service.port == 0 {
                // Not listening yet.
            } else if let Ok(r) = try_request(service.port, "GET", "/healthz", None) {
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

    /// Kills the process and starts it again with the same environment (on a port the
    /// system picks, like the first time; `port` is the new one).
    pub fn restart(mut self) -> Service {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let env = std::mem::take(&mut self.env);
        drop(self);
        Service::start_with(env)
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

    /// Polls `/readyz` until it answers 200, as an orchestrator's readiness probe would, and
    /// returns that reply. Readiness is a `SELECT 1` on a connection of its own within
    /// 200 ms, remembered for a second: on a busy machine the very first probe (which opens
    /// that connection) may miss its 200 ms, which says nothing about what a test checks next.
    pub fn await_ready(&self) -> Reply {
        let started = Instant::now();
        loop {
            let r = self.get("/readyz");
            if r.status == 200 {
                return r;
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "not ready within 10 s: {} {}",
                r.status,
                r.text()
            );
            thread::sleep(Duration::from_millis(50));
        }
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

/// The port in feed-rs's `feed-rs: listening on port N` line, once it is logged.
fn listening_port(log: &str) -> Option<u16> {
    log.lines()
        .find_map(|l| l.strip_prefix("feed-rs: listening on port "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .filter(|&port| port != 0)
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

/// A TCP forwarder from a loopback port to PostgreSQL that can cut the link and restore it.
///
/// Its listener is bound once, to a port the system picks, and kept until the forwarder is
/// dropped, so no other process can take the port while the link is cut. Cut, it closes
/// every forwarded connection and closes each new one as soon as it is accepted, before
/// forwarding a byte: a client cannot reach the database and learns so within a round trip
/// (an end of stream where a refused connect would give an error). Restored, it forwards
/// new connections again.
pub struct Forwarder {
    pub port: u16,
    up: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    streams: Arc<Closers>,
    acceptor: Option<JoinHandle<()>>,
}

/// Where a forwarder connects: a TCP port on 127.0.0.1, or a unix socket.
#[derive(Clone)]
enum Upstream {
    Tcp(u16),
    Unix(PathBuf),
}

impl Forwarder {
    /// A forwarder to `target`, a TCP port on 127.0.0.1; the link starts up.
    pub fn start(target: u16) -> Forwarder {
        Forwarder::spawn(Upstream::Tcp(target))
    }

    /// A forwarder to the unix socket at `path`; the link starts up.
    fn to_unix(path: PathBuf) -> Forwarder {
        Forwarder::spawn(Upstream::Unix(path))
    }

    fn spawn(upstream: Upstream) -> Forwarder {
        let listener = TcpListener::bind("127.0.0.1:0").expect("forwarder bind");
        let port = listener.local_addr().expect("forwarder address").port();
        let up = Arc::new(AtomicBool::new(true));
        let stop = Arc::new(AtomicBool::new(false));
        let streams: Arc<Closers> = Arc::default();
        let acceptor = {
            let (up, stop, streams) = (up.clone(), stop.clone(), streams.clone());
            thread::spawn(move || {
                for client in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    // Cut: an accepted connection is dropped (closed) at once.
                    let Ok(client) = client else { continue };
                    if !up.load(Ordering::SeqCst) {
                        continue;
                    }
                    let _ = client.set_nodelay(true);
                    match &upstream {
                        Upstream::Tcp(target) => {
                            if let Ok(server) = TcpStream::connect(("127.0.0.1", *target)) {
                                let _ = server.set_nodelay(true);
                                pipe(client, server, &up, &streams);
                            }
                        }
                        Upstream::Unix(path) => {
                            if let Ok(server) = UnixStream::connect(path) {
                                pipe(client, server, &up, &streams);
                            }
                        }
                    }
                }
            })
        };
        Forwarder {
            port,
            up,
            stop,
            streams,
            acceptor: Some(acceptor),
        }
    }

    /// Opens the link again: new connections are forwarded.
    pub fn restore(&mut self) {
        self.up.store(true, Ordering::SeqCst);
    }

    /// Cuts the link: open connections are closed, new ones are closed once accepted.
    pub fn cut(&mut self) {
        self.up.store(false, Ordering::SeqCst);
        // A connection registers only while the link is up (under this lock), so none
        // forwarded before the cut outlives it.
        for close in self.streams.lock().unwrap().drain(..) {
            close();
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

/// Copies bytes both ways between `client` and `server` on two threads, and registers both
/// for closing by `cut` — unless the link was cut meanwhile: then both are closed now.
fn pipe<S: Sock>(client: TcpStream, server: S, up: &AtomicBool, streams: &Closers) {
    let (Ok(c1), Ok(c2), Ok(s1), Ok(s2)) = (client.dup(), client.dup(), server.dup(), server.dup())
    else {
        return;
    };
    {
        let mut all = streams.lock().unwrap();
        if !up.load(Ordering::SeqCst) {
            client.close();
            server.close();
            return;
        }
        all.push(Box::new(move || c1.close()));
        all.push(Box::new(move || s1.close()));
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
        self.cut();
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the acceptor, which sees `stop` and ends, closing the listener.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}
