//! Why the generator cannot run, with the exit status each reason gives.

use std::path::PathBuf;

use feedbench_load::plan::PlanError;
use thiserror::Error;

use super::cli::CliError;

/// A reason to stop before (or, for Write, while) running the schedule.
#[derive(Debug, Error)]
pub enum Error {
    #[error("{0}")]
    Cli(#[from] CliError),
    /// Reading or parsing: the message names the file already.
    #[error("{0}")]
    Plan(PlanError),
    #[error("{}: {source}", path.display())]
    Check { path: PathBuf, source: PlanError },
    #[error("cannot resolve {host} (from base_url in {})", path.display())]
    Resolve { host: String, path: PathBuf },
    #[error("cannot create the output file {}: {source}", path.display())]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write the output file {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
    #[error("cannot listen for SIGINT and SIGTERM: {0}")]
    Signal(std::io::Error),
    #[error("the timer failed: {0}")]
    Timer(std::io::Error),
}

impl Error {
    /// 2 for what stops the run before it starts (a usage error, too); 1 for a failure
    /// while it runs.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Write { .. } | Error::Timer(_) => 1,
            _ => 2,
        }
    }
}
