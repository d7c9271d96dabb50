//! Readiness probes, feedbench's extension beside Toxiproxy's API: from inside the run's
//! network, one server's readiness path asked every interval until it answers 200 or the
//! probe's time is up, each attempt kept with its unix instants for the client to read.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::error::ApiError;

/// What to probe, as `POST /feedbench/probes` takes it.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeSpec {
    pub name: String,
    pub host: String,
    pub port: u16,
    /// The path asked with GET, e.g. `/readyz`.
    pub path: String,
    /// From one attempt's start to the next's (an attempt that takes longer delays the next).
    pub interval_ms: u64,
    /// How long one attempt may take before it counts as no answer; its connection must be
    /// made within `interval_ms`.
    pub timeout_ms: u64,
    /// How long the probe goes on without a 200.
    pub for_ms: u64,
}

/// One attempt: when it started and ended (unix ns), the status (0 for no answer) and why
/// there was none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Attempt {
    pub start_ns: u64,
    pub end_ns: u64,
    pub status: u16,
    pub error: String,
}

#[derive(Debug)]
struct State {
    spec: ProbeSpec,
    attempts: Vec<Attempt>,
    running: bool,
}

/// The probes by name.
#[derive(Debug, Default)]
pub struct Probes(Mutex<HashMap<String, Arc<Mutex<State>>>>);

/// Attempts kept per probe at most: an interval of 1 ms for an hour stays bounded.
const MAX_ATTEMPTS: usize = 100_000;
/// Bytes of an answer read to find its status line.
const MAX_STATUS_LINE: usize = 1024;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Probes {
    /// Starts the probe `body` describes; its name must be new.
    pub fn start(&self, body: &[u8]) -> Result<serde_json::Value, ApiError> {
        let spec: ProbeSpec =
            serde_json::from_slice(body).map_err(|e| ApiError::BadRequestBody(e.to_string()))?;
        for (field, empty) in [
            ("name", spec.name.is_empty()),
            ("host", spec.host.is_empty()),
            ("path", !spec.path.starts_with('/')),
            ("interval_ms", spec.interval_ms == 0),
            ("timeout_ms", spec.timeout_ms == 0),
        ] {
            if empty {
                return Err(ApiError::MissingField(field.into()));
            }
        }
        let state = Arc::new(Mutex::new(State {
            spec: spec.clone(),
            attempts: Vec::new(),
            running: true,
        }));
        {
            let mut all = lock(&self.0);
            if all.contains_key(&spec.name) {
                return Err(ApiError::ProbeAlreadyExists);
            }
            all.insert(spec.name.clone(), Arc::clone(&state));
        }
        let view = serde_json::json!({"name": spec.name, "running": true, "attempts": []});
        tokio::spawn(run(state, spec));
        Ok(view)
    }

    /// The probe's attempts so far, and whether it is still running.
    pub fn view(&self, name: &str) -> Result<serde_json::Value, ApiError> {
        let state = lock(&self.0)
            .get(name)
            .cloned()
            .ok_or(ApiError::ProbeNotFound)?;
        let s = lock(&state);
        Ok(serde_json::json!({
            "name": s.spec.name,
            "running": s.running,
            "attempts": s.attempts,
        }))
    }
}

fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Asks until a 200, the probe's time is up, or the attempts are as many as are kept.
async fn run(state: Arc<Mutex<State>>, spec: ProbeSpec) {
    let until = Instant::now() + Duration::from_millis(spec.for_ms);
    loop {
        let started = Instant::now();
        let start_ns = unix_ns();
        let asked = tokio::time::timeout(
            Duration::from_millis(spec.timeout_ms),
            ask(
                &spec.host,
                spec.port,
                &spec.path,
                Duration::from_millis(spec.interval_ms),
            ),
        )
        .await;
        let (status, error) = match asked {
            Ok(Ok(status)) => (status, String::new()),
            Ok(Err(e)) => (0, e.to_string()),
            Err(_) => (0, format!("no answer within {} ms", spec.timeout_ms)),
        };
        let done = {
            let mut s = lock(&state);
            s.attempts.push(Attempt {
                start_ns,
                end_ns: unix_ns(),
                status,
                error,
            });
            status == 200 || Instant::now() >= until || s.attempts.len() >= MAX_ATTEMPTS
        };
        if done {
            break;
        }
        tokio::time::sleep_until((started + Duration::from_millis(spec.interval_ms)).into()).await;
    }
    lock(&state).running = false;
}

/// One GET of `path`: the answer's status code. The connection must be made within
/// `connect_within`: a container still starting can leave a connection unanswered for
/// seconds, and the next attempt is the one that finds it up, at the probe's resolution.
async fn ask(host: &str, port: u16, path: &str, connect_within: Duration) -> std::io::Result<u16> {
    let mut stream = tokio::time::timeout(connect_within, TcpStream::connect((host, port)))
        .await
        .map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no connection within {} ms", connect_within.as_millis()),
            )
        })??;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut head = Vec::new();
    let mut buf = [0u8; 256];
    while !head.windows(2).any(|w| w == b"\r\n") && head.len() < MAX_STATUS_LINE {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    status_of(&head).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "the answer has no HTTP status line",
        )
    })
}

/// The status code of an HTTP/1 status line (`HTTP/1.1 200 OK`).
fn status_of(head: &[u8]) -> Option<u16> {
    let line = head.split(|b| *b == b'\r').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut parts = line.split(' ');
    parts.next()?.strip_prefix("HTTP/1.")?;
    let code = parts.next()?;
    (code.len() == 3).then(|| code.parse().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_are_read() {
        assert_eq!(status_of(b"HTTP/1.1 200 OK\r\n"), Some(200));
        assert_eq!(
            status_of(b"HTTP/1.0 503 Service Unavailable\r\nx"),
            Some(503)
        );
        assert_eq!(status_of(b"SSH-2.0-OpenSSH\r\n"), None);
        assert_eq!(status_of(b"HTTP/1.1 20"), None);
    }
}
