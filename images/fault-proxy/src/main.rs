//! fault-proxy: a lean TCP fault proxy that speaks Toxiproxy's HTTP API.

mod api;
mod chain;
mod cli;
mod collection;
mod error;
mod link;
mod probe;
mod proxy;
mod pump;
mod toxic;

use std::process::ExitCode;
use std::sync::Arc;

use thiserror::Error;
use tokio::net::TcpListener;

use crate::cli::{Command, Options};
use crate::collection::Collection;

/// Why the server could not run.
#[derive(Debug, Error)]
enum MainError {
    #[error("{0}")]
    Cli(#[from] cli::CliError),
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: String,
        source: std::io::Error,
    },
    #[error("cannot read config {path}: {source}")]
    Config {
        path: String,
        source: std::io::Error,
    },
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fault-proxy: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), MainError> {
    let opts = match cli::parse(std::env::args().skip(1), |k| std::env::var(k).ok())? {
        Command::Help => {
            print!("{}", cli::USAGE);
            return Ok(());
        }
        Command::Version => {
            println!("fault-proxy {}", api::VERSION);
            return Ok(());
        }
        Command::Run(opts) => opts,
    };
    if let Some(seed) = opts.seed {
        fastrand::seed(seed);
    }
    let runtime = match opts.threads {
        1 => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        n => {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            if n > 1 {
                builder.worker_threads(n);
            }
            builder.enable_all().build()
        }
    }
    .map_err(MainError::Runtime)?;
    runtime.block_on(serve(opts))
}

async fn serve(opts: Options) -> Result<(), MainError> {
    let proxies = Arc::new(Collection::default());
    if let Some(path) = &opts.config {
        let text = std::fs::read(path).map_err(|source| MainError::Config {
            path: path.display().to_string(),
            source,
        })?;
        // Like toxiproxy-server, a bad config is reported and the server runs on.
        match proxies.populate(&text).await {
            (views, None) => eprintln!("populated {} proxies from {}", views.len(), path.display()),
            (_, Some(e)) => eprintln!("failed to populate proxies from {}: {e}", path.display()),
        }
    }
    let addr = format!("{}:{}", opts.host, opts.port);
    let listener = TcpListener::bind((opts.host.as_str(), opts.port))
        .await
        .map_err(|source| MainError::Listen {
            addr: addr.clone(),
            source,
        })?;
    let bound = listener.local_addr().map_or(addr, |a| a.to_string());
    eprintln!("fault-proxy {} API listening on {bound}", api::VERSION);
    tokio::select! {
        () = api::serve(listener, proxies, Arc::new(probe::Probes::default())) => {}
        () = shutdown_signal() => eprintln!("fault-proxy: shutting down"),
    }
    Ok(())
}

/// Resolves on SIGINT or SIGTERM (PID 1 in a container ignores SIGTERM
/// unless it handles it).
async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
