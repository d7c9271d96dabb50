//! End to end with PostgreSQL: a throwaway server (initdb and pg_ctl in a temp
//! dir, as `nobody` when run as root) on a unix socket, which a TCP listener of
//! this process (on a port the system picks, held to the end) forwards to, and
//! psql through the proxy in front of that. The test needs PostgreSQL on the
//! host, so it is `#[ignore]`d: `-- --include-ignored` runs it (scripts/test
//! does), and it fails, saying what is missing, when PostgreSQL is not there.

mod common;

use std::net::{Shutdown, TcpListener};
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::FaultProxy;

const NOBODY: u32 = 65534;

/// The port in the name of PostgreSQL's unix socket (`.s.PGSQL.5432`); no TCP port is bound.
const SOCKET_PORT: u16 = 5432;

/// The newest /usr/lib/postgresql/<version>/bin holding initdb, if any.
fn pg_bin_dir() -> Option<PathBuf> {
    let mut dirs: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    dirs.sort();
    dirs.pop().map(|(_, bin)| bin)
}

/// Listens on 127.0.0.1, on a port the system picks, and forwards every connection to the
/// unix socket at `socket`, for as long as the test process lives. Returns the port.
fn forward_to_unix(socket: PathBuf) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let (Ok(client), Ok(server)) = (client, UnixStream::connect(&socket)) else {
                continue;
            };
            let _ = client.set_nodelay(true);
            let (Ok(mut client_in), Ok(mut server_in)) = (client.try_clone(), server.try_clone())
            else {
                continue;
            };
            let (mut client_out, mut server_out) = (client, server);
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut client_in, &mut server_out);
                let _ = server_out.shutdown(Shutdown::Both);
                let _ = client_in.shutdown(Shutdown::Both);
            });
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut server_in, &mut client_out);
                let _ = client_out.shutdown(Shutdown::Both);
                let _ = server_in.shutdown(Shutdown::Both);
            });
        }
    });
    port
}

/// A PostgreSQL server in a temp dir, stopped (by its pid file) on drop. It listens on a
/// unix socket in `dir` only; `port` is a TCP forwarder to that socket.
struct Postgres {
    bin: PathBuf,
    dir: PathBuf,
    uid: Option<u32>,
    port: u16,
}

impl Postgres {
    fn command(&self, tool: &str) -> Command {
        let mut cmd = Command::new(self.bin.join(tool));
        if let Some(uid) = self.uid {
            cmd.uid(uid).gid(uid);
        }
        cmd.current_dir(&self.dir).stdin(Stdio::null());
        cmd
    }

    fn start(bin: PathBuf) -> Postgres {
        let root = std::fs::metadata("/proc/self")
            .map(|m| m.uid() == 0)
            .unwrap_or(false);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir =
            std::env::temp_dir().join(format!("fault-proxy-pg-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let uid = root.then_some(NOBODY);
        if let Some(uid) = uid {
            std::os::unix::fs::chown(&dir, Some(uid), Some(uid)).unwrap();
        }
        let port = forward_to_unix(dir.join(format!(".s.PGSQL.{SOCKET_PORT}")));
        let pg = Postgres {
            bin,
            dir,
            uid,
            port,
        };
        let data = pg.dir.join("data");
        let out = pg
            .command("initdb")
            .args([
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
                "-D",
            ])
            .arg(&data)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let opts = format!(
            "-p {SOCKET_PORT} -k {} -c listen_addresses='' -c fsync=off -c shared_buffers=16MB -c max_connections=20",
            pg.dir.display()
        );
        let out = pg
            .command("pg_ctl")
            .args(["start", "-w", "-t", "60", "-D"])
            .arg(&data)
            .args(["-l"])
            .arg(pg.dir.join("log"))
            .args(["-o", &opts])
            .output()
            .unwrap();
        let log = std::fs::read_to_string(pg.dir.join("log")).unwrap_or_default();
        assert!(
            out.status.success(),
            "pg_ctl start failed: {}\n{log}",
            String::from_utf8_lossy(&out.stderr)
        );
        pg
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = self
            .command("pg_ctl")
            .args(["stop", "-m", "immediate", "-w", "-D"])
            .arg(self.dir.join("data"))
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs a psql script against `addr` and returns its output.
fn psql(bin: &Path, addr: &str, script: &str) -> Output {
    let (host, port) = addr.rsplit_once(':').unwrap();
    let mut child = Command::new(bin.join("psql"))
        .args([
            "-X",
            "-q",
            "-A",
            "-t",
            "-v",
            "ON_ERROR_STOP=1",
            "-U",
            "postgres",
            "-d",
            "postgres",
        ])
        .args(["-h", host, "-p", port])
        .env("PGCONNECT_TIMEOUT", "5")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// Median query time in ms that psql's \timing reports for `n` `select 1`.
fn median_query_ms(bin: &Path, addr: &str, n: usize) -> f64 {
    let script = format!("\\timing on\n{}", "select 1;\n".repeat(n));
    let out = psql(bin, addr, &script);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "psql failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut times: Vec<f64> = stdout
        .lines()
        .filter_map(|l| {
            l.strip_prefix("Time: ")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .collect();
    assert_eq!(times.len(), n, "{stdout}");
    times.sort_by(f64::total_cmp);
    times[n / 2]
}

#[test]
#[ignore = "needs PostgreSQL on the host (apt-get install postgresql)"]
fn postgres_through_the_proxy() {
    let bin = pg_bin_dir().expect(
        "this test needs PostgreSQL on the host: no /usr/lib/postgresql/*/bin/initdb \
         (apt-get install postgresql)",
    );
    let pg = Postgres::start(bin.clone());
    let fp = FaultProxy::start();
    let listen = fp.create("postgres", &format!("127.0.0.1:{}", pg.port));

    let base = median_query_ms(&bin, &listen, 21);
    assert!(base < 50.0, "select 1 through the proxy took {base} ms");

    // A 100 ms latency toxic adds 100 ms to each round trip.
    fp.toxic(
        "postgres",
        r#"{"type":"latency","attributes":{"latency":100}}"#,
    );
    let slow = median_query_ms(&bin, &listen, 9);
    println!("select 1: {base:.3} ms without toxic, {slow:.3} ms with 100 ms latency");
    assert!(
        slow >= base + 99.0 && slow < base + 150.0,
        "{slow} ms vs {base} ms"
    );
    fp.call(
        "DELETE",
        "/proxies/postgres/toxics/latency_downstream",
        None,
    );

    // An open session loses its connection within 1 s of disabling.
    let session = {
        let bin = bin.clone();
        let listen = listen.clone();
        std::thread::spawn(move || {
            let start = Instant::now();
            let out = psql(&bin, &listen, "select 1;\nselect pg_sleep(5);\nselect 1;\n");
            (out, start.elapsed())
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    let disabled_at = Instant::now();
    let (status, _) = fp.call("POST", "/proxies/postgres", Some(r#"{"enabled":false}"#));
    assert_eq!(status, 200);
    let (out, _) = session.join().unwrap();
    let dropped_after = disabled_at.elapsed();
    assert!(!out.status.success(), "session survived the disable");
    assert!(
        dropped_after < Duration::from_secs(1),
        "session dropped after {dropped_after:?}"
    );

    // New connections fail fast while disabled.
    let start = Instant::now();
    let out = psql(&bin, &listen, "select 1;\n");
    let took = start.elapsed();
    assert!(!out.status.success(), "connected while disabled");
    assert!(
        took < Duration::from_secs(1),
        "connection error took {took:?}"
    );
    println!(
        "disabled: session dropped after {dropped_after:?}, new connection refused after {took:?}: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );

    // Re-enabled, it works again.
    fp.call("POST", "/proxies/postgres", Some(r#"{"enabled":true}"#));
    let again = median_query_ms(&bin, &listen, 5);
    assert!(again < 50.0, "{again} ms after re-enabling");
}
