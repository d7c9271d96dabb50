//! The monitors' errors: each names what it acted on.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    #[error("cannot create the output directory `{}`: {source}", path.display())]
    OutputDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write `{}`: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Engine(#[from] crate::engine::runtime::RuntimeError),
    #[error("cannot read this host's cgroups: {0}")]
    Layout(String),
    #[error("no cgroup counters for running container `{name}` on this host ({reason}); is the engine remote? use the engine-API source")]
    NoCgroup { name: String, reason: String },
    #[error("the {task} monitor stopped abnormally: {reason}")]
    Task { task: &'static str, reason: String },
}
