//! Test helpers: a running fault-proxy, a tiny HTTP client, echo servers.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

/// A fault-proxy process on a free loopback port, killed on drop.
pub struct FaultProxy {
    child: Child,
    /// The API address, `127.0.0.1:PORT`.
    pub api: String,
}

impl FaultProxy {
    /// Starts the binary built by cargo for these tests.
    pub fn start() -> FaultProxy {
        Self::start_with(&[])
    }

    /// Starts the binary with extra arguments.
    pub fn start_with(args: &[&str]) -> FaultProxy {
        let mut child = Command::new(env!("CARGO_BIN_EXE_fault-proxy"))
            .args(["-host", "127.0.0.1", "-port", "0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn fault-proxy");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if !sent {
                    if let Some(addr) = line.split("API listening on ").nth(1) {
                        let _ = tx.send(addr.trim().to_string());
                        sent = true;
                    }
                }
            }
        });
        let api = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("fault-proxy did not start");
        FaultProxy { child, api }
    }

    /// Sends an API request; returns the status and the parsed JSON body
    /// (`Value::Null` when empty, a string when not JSON).
    pub fn call(&self, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
        let (status, text) = http(&self.api, method, path, body, &[]);
        let value = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        (status, value)
    }

    /// Creates an enabled proxy to `upstream`; returns its listen address.
    pub fn create(&self, name: &str, upstream: &str) -> String {
        let body = format!(r#"{{"name":"{name}","listen":"127.0.0.1:0","upstream":"{upstream}"}}"#);
        let (status, v) = self.call("POST", "/proxies", Some(&body));
        assert_eq!(status, 201, "{v}");
        v["listen"].as_str().expect("listen").to_string()
    }

    /// Adds a toxic, asserting success.
    pub fn toxic(&self, proxy: &str, body: &str) -> Value {
        let (status, v) = self.call("POST", &format!("/proxies/{proxy}/toxics"), Some(body));
        assert_eq!(status, 200, "{v}");
        v
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A minimal HTTP/1.1 client: one request per connection.
pub fn http(
    addr: &str,
    method: &str,
    path: &str,
    body: Option<&str>,
    headers: &[(&str, &str)],
) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect api");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let body = body.unwrap_or("");
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    let status = resp
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("status line");
    let body = resp
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// A threaded TCP echo server on a free loopback port.
pub fn echo_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            thread::spawn(move || {
                let _ = conn.set_nodelay(true);
                let mut buf = [0u8; 65536];
                loop {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => {
                            let _ = conn.shutdown(Shutdown::Both);
                            return;
                        }
                        Ok(n) => {
                            if conn.write_all(&buf[..n]).is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    addr
}

/// A tiny HTTP server answering every request with `200 OK` and `hello`.
pub fn http_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            thread::spawn(move || {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let _ = conn.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
                );
            });
        }
    });
    addr
}

/// Connects with a read timeout.
pub fn connect(addr: &str) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect through proxy");
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

/// Sends `msg` and reads the same number of bytes back; returns the time.
pub fn round_trip(s: &mut TcpStream, msg: &[u8]) -> Duration {
    let start = Instant::now();
    s.write_all(msg).unwrap();
    let mut got = vec![0u8; msg.len()];
    s.read_exact(&mut got).unwrap();
    assert_eq!(got, msg);
    start.elapsed()
}

/// The median of `n` round trips of a small message.
pub fn median_rtt(s: &mut TcpStream, n: usize) -> Duration {
    let mut times: Vec<Duration> = (0..n).map(|_| round_trip(s, b"ping")).collect();
    times.sort();
    times[n / 2]
}

/// Whether the peer has closed or reset `s`, waiting at most `within`.
pub fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false
            }
            Err(_) => return true,
        }
    }
}
