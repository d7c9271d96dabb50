//! One request, as a task: connect if needed, send, read the whole response; then write its
//! row and hand the connection back if it can carry another.
//!
//! The scheduler aborts the task at its deadline (start + timeout): the row is then written
//! as the task is dropped, by [`InFlight`]'s `Drop`, with `1050 request timeout`.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use feedbench_load::plan::Route;
use feedbench_load::stream::{write_request, RowRef};

use super::conn::{Conn, Failure};
use super::http::{encode_request, valid_path};
use super::shared::{Ctx, Shared};

/// A started iteration.
pub struct Job {
    /// Its entry in `State::flights`.
    pub flight: u64,
    pub route: usize,
    pub path: String,
    pub body: Option<String>,
    pub scheduled_ns: u64,
    /// When the scheduler took the iteration (the row's start_ns).
    pub start: Instant,
    /// An idle connection to use; none to open one.
    pub conn: Option<Conn>,
}

/// A request in flight, which records its row exactly once: when it ends, or when its task
/// is dropped unfinished (aborted at its deadline).
struct InFlight {
    shared: Arc<Shared>,
    flight: u64,
    route: usize,
    scheduled_ns: u64,
    start: Instant,
    /// When the first byte went out, as ns after `start` plus 1; 0 while not sent. Atomic
    /// only so that the future holding a reference to it stays `Send`.
    sent: AtomicU64,
    recorded: bool,
}

impl InFlight {
    fn mark_sent(&self) {
        let ns = Instant::now()
            .saturating_duration_since(self.start)
            .as_nanos();
        let ns = u64::try_from(ns).unwrap_or(u64::MAX - 1);
        self.sent.store(ns + 1, Ordering::Relaxed);
    }

    fn unsent(&self) {
        self.sent.store(0, Ordering::Relaxed);
    }

    /// Writes the row, updates the counts, and keeps the connection if it is given.
    fn record(&mut self, result: Result<u16, Failure>, conn: Option<Conn>) {
        self.recorded = true;
        let end = Instant::now();
        let (status, failure) = match &result {
            Ok(status) => (*status, None),
            Err(failure) => (0, Some(error_text(failure))),
        };
        // k6's error_code for an HTTP error: 1000 + status, that is "1" and its digits.
        let mut code = [b'1', b'0', b'0', b'0'];
        let error: &str = match (&failure, status) {
            (Some(text), _) => text,
            (None, 400..=999) => {
                code[1..].copy_from_slice(&digits3(status));
                std::str::from_utf8(&code).unwrap_or("")
            }
            _ => "",
        };
        let duration_ms = match self.sent.load(Ordering::Relaxed) {
            0 => 0.0,
            ns => {
                let sent = self.start + Duration::from_nanos(ns - 1);
                end.saturating_duration_since(sent).as_secs_f64() * 1e3
            }
        };
        let ctx = &self.shared.ctx;
        let route = &ctx.plan.routes[self.route];
        let mut state = self.shared.state();
        if state.closed {
            // The output has ended; this is the runtime shutting down.
            return;
        }
        write_request(
            &mut state.out,
            &RowRef {
                start_ns: ctx.clock.unix_ns(self.start),
                end_ns: ctx.clock.unix_ns(end),
                route: &route.name,
                method: &route.method,
                status,
                duration_ms,
                error,
                scheduled_ns: self.scheduled_ns,
            },
        );
        state.flights.finished(self.flight);
        state.requests += 1;
        state.errors += u64::from(!error.is_empty());
        state.in_flight -= 1;
        if let Some(conn) = conn {
            state.idle.push(conn);
        }
        if state.in_flight == 0 {
            self.shared.drained.notify_one();
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if !self.recorded {
            // Dropped mid-request: its connection went with the task.
            self.record(Err(Failure::Timeout), None);
        }
    }
}

/// The row's error, k6-like: code, space, message.
fn error_text(failure: &Failure) -> Cow<'static, str> {
    match failure {
        Failure::Timeout => Cow::Borrowed("1050 request timeout"),
        Failure::Refused => Cow::Borrowed("1212 dial: connection refused"),
        Failure::Dial(m) => Cow::Owned(format!("1200 dial: {m}")),
        Failure::Other(m) => Cow::Owned(format!("1000 {m}")),
    }
}

fn digits3(status: u16) -> [u8; 3] {
    let d = |v: u16| b'0' + (v % 10) as u8;
    [d(status / 100), d(status / 10), d(status)]
}

/// Runs one request to its end and records it.
pub async fn run(shared: Arc<Shared>, job: Job) {
    let mut flight = InFlight {
        shared,
        flight: job.flight,
        route: job.route,
        scheduled_ns: job.scheduled_ns,
        start: job.start,
        sent: AtomicU64::new(0),
        recorded: false,
    };
    let mut conn = job.conn;
    let result = if valid_path(&job.path) {
        let body = job.body.as_deref().map(str::as_bytes);
        let ctx = &flight.shared.ctx;
        let route = &ctx.plan.routes[job.route];
        exchange(ctx, route, &job.path, body, &mut conn, &flight).await
    } else {
        Err(Failure::Other(
            "invalid request path (not visible ASCII after a /)".into(),
        ))
    };
    flight.record(result, conn);
}

/// Sends the request and reads the response to its end; returns the status. `conn` is
/// left holding the connection if it can carry another request.
async fn exchange(
    ctx: &Ctx,
    route: &Route,
    path: &str,
    body: Option<&[u8]>,
    conn: &mut Option<Conn>,
    flight: &InFlight,
) -> Result<u16, Failure> {
    let mut reused = conn.is_some();
    loop {
        if conn.is_none() {
            *conn = Some(Conn::open(ctx.addr).await?);
        }
        let c = conn.as_mut().expect("a connection");
        encode_request(&mut c.write, &route.method, path, &ctx.authority, body);
        flight.mark_sent();
        match c.exchange(route.method == "HEAD").await {
            Ok((status, keep_alive)) => {
                if !keep_alive {
                    *conn = None;
                }
                return Ok(status);
            }
            Err(e) => {
                *conn = None;
                // A kept-alive connection the server closed as we sent: no response came,
                // so the request goes once more on a new connection (as Go's client, hence
                // k6, does).
                if !(reused && e.before_response) {
                    return Err(e.failure);
                }
                reused = false;
                flight.unsent();
            }
        }
    }
}
