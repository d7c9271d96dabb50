//! feed-rs: the feed contract (contenders/CONTRACT.md) as a small Rust service.
//!
//! Configured by environment only; see `config.rs`. The process serves HTTP/1.1 on
//! `LISTEN_PORT` (0: a port the system picks, named on stderr as `listening on port N`)
//! until SIGTERM (or SIGINT), then drains as the contract says and exits 0.

mod config;
mod db;
mod feed;
mod http;
mod pool;
mod visibility;

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper::StatusCode;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::Mutex;
use tokio::time::{sleep_until, timeout_at, Instant};
use tokio_postgres::Client;

use crate::config::Config;
use crate::db::Statements;
use crate::feed::Cache;
use crate::pool::Pool;

/// A readiness probe's time limit, and how long its answer is reused.
const PROBE_TIMEOUT: Duration = Duration::from_millis(200);
const PROBE_REUSE: Duration = Duration::from_secs(1);
/// The contract's limit from SIGTERM to exit, less a margin.
const EXIT_WITHIN: Duration = Duration::from_millis(9_500);

/// The service's shared state.
pub struct App {
    pub config: Config,
    pub pool: Arc<Pool>,
    pub statements: Statements,
    pub cache: Option<Cache>,
    draining: AtomicBool,
    probe: Mutex<Probe>,
}

/// The last readiness probe, on a connection of its own so a busy pool does not fail it.
#[derive(Default)]
struct Probe {
    at: Option<(Instant, bool)>,
    client: Option<Client>,
}

impl App {
    /// `GET /readyz`.
    async fn readiness(&self) -> http::Reply {
        let not_ready = |reason: &str| {
            let body = format!(r#"{{"status":"not_ready","reason":"{reason}"}}"#);
            http_reply(StatusCode::SERVICE_UNAVAILABLE, body)
        };
        if self.draining.load(Ordering::SeqCst) {
            return not_ready("draining");
        }
        let mut probe = self.probe.lock().await;
        let ok = match probe.at {
            Some((at, ok)) if at.elapsed() <= PROBE_REUSE => ok,
            _ => {
                let ok = self.probe_once(&mut probe.client).await;
                probe.at = Some((Instant::now(), ok));
                ok
            }
        };
        if ok {
            http_reply(StatusCode::OK, r#"{"status":"ready"}"#.into())
        } else {
            not_ready("database_unreachable")
        }
    }

    /// `SELECT 1` within the probe timeout; a connection that failed it is dropped.
    async fn probe_once(&self, slot: &mut Option<Client>) -> bool {
        let deadline = Instant::now() + PROBE_TIMEOUT;
        let attempt = async {
            let client = match slot.take().filter(|c| !c.is_closed()) {
                Some(client) => client,
                None => self.pool.connect(deadline).await.ok()?,
            };
            client.simple_query("SELECT 1").await.ok()?;
            Some(client)
        };
        match timeout_at(deadline, attempt).await {
            Ok(Some(client)) => {
                *slot = Some(client);
                true
            }
            _ => false,
        }
    }
}

fn http_reply(status: StatusCode, body: String) -> http::Reply {
    let mut reply = hyper::Response::new(http_body_util::Full::new(body.into()));
    *reply.status_mut() = status;
    reply.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    reply
}

fn main() {
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(message) => {
            eprintln!("feed-rs: {message}");
            std::process::exit(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("feed-rs: cannot start the runtime: {e}");
            std::process::exit(1);
        }
    };
    let code = runtime.block_on(async {
        match run(config).await {
            Ok(()) => 0,
            Err(message) => {
                eprintln!("feed-rs: {message}");
                1
            }
        }
    });
    // Connections still open past the drain limit are dropped with the runtime.
    runtime.shutdown_timeout(Duration::from_millis(100));
    std::process::exit(code);
}

async fn run(config: Config) -> Result<(), String> {
    let pool = Pool::new(
        &config.database_url,
        config.pool_size,
        config.pool_wait,
        config.connect_timeout,
    )?;
    let app = Arc::new(App {
        statements: Statements::new(config.mutant),
        cache: config.cache.then(Cache::default),
        pool,
        draining: AtomicBool::new(false),
        probe: Mutex::new(Probe::default()),
        config,
    });
    let listener = TcpListener::bind(("0.0.0.0", app.config.listen_port))
        .await
        .map_err(|e| format!("cannot listen on port {}: {e}", app.config.listen_port))?;
    let mut term = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| e.to_string())?;
    // The bound port: with LISTEN_PORT=0 the system picks one, and this line names it.
    let port = listener
        .local_addr()
        .map_or(app.config.listen_port, |a| a.port());
    eprintln!(
        "feed-rs: listening on port {port} (mutant {:?}, cache {})",
        app.config.mutant, app.config.cache
    );

    let graceful = GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new());
    let signalled = tokio::select! {
        _ = term.recv() => Instant::now(),
        _ = int.recv() => Instant::now(),
        never = accept_loop(&listener, &app, &builder, &graceful) => match never {},
    };

    // Draining: readiness fails at once, serving goes on for the grace period.
    app.draining.store(true, Ordering::SeqCst);
    eprintln!("feed-rs: draining");
    let exit_by = signalled + EXIT_WITHIN;
    let stop_accepting = (signalled + app.config.drain_grace).min(exit_by);
    tokio::select! {
        () = sleep_until(stop_accepting) => {}
        never = accept_loop(&listener, &app, &builder, &graceful) => match never {},
    }
    drop(listener);
    // In-flight requests finish; idle keep-alive connections close.
    if timeout_at(exit_by, graceful.shutdown()).await.is_err() {
        eprintln!("feed-rs: drain limit reached with requests still in flight");
    }
    eprintln!("feed-rs: stopped");
    Ok(())
}

/// Accepts connections and serves each on a task of its own, watched for the drain.
async fn accept_loop(
    listener: &TcpListener,
    app: &Arc<App>,
    builder: &hyper::server::conn::http1::Builder,
    graceful: &GracefulShutdown,
) -> Infallible {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                // Out of descriptors or similar: back off briefly rather than spin.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let service = service_fn(move |request| {
            let app = app.clone();
            async move { http::serve(&app, request).await }
        });
        let connection = graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            let _ = connection.await;
        });
    }
}
