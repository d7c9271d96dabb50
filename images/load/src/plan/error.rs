//! Why a plan cannot be read or run: one-line sentences that say how to fix it.

use std::path::{Path, PathBuf};

use thiserror::Error;

use super::FORMAT_VERSION;

/// A plan that cannot be read, or that the generator cannot run.
#[derive(Debug, Error)]
pub enum PlanError {
    #[error("cannot read the load plan {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Not the plan's JSON shape; `path` is empty when parsed from text.
    #[error("{}{line}:{column}: {message}", file_prefix(path))]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        /// serde_json's message, which names the field.
        message: String,
    },
    #[error("format_version {found} is not supported: this feedbench-load reads format_version {FORMAT_VERSION} (use feedbench and its load image from the same release)")]
    Version { found: u32 },
    #[error("base_url `{url}` {reason}: write it as http://host[:port]")]
    BaseUrl { url: String, reason: &'static str },
    #[error("the plan has no routes: give at least one")]
    NoRoutes,
    #[error("cumulative_weights has {weights} entries for {routes} routes: give one per route")]
    WeightCount { weights: usize, routes: usize },
    #[error("cumulative_weights[{index}] is {value}: the entries must be finite, at least 0 and never decreasing")]
    Weight { index: usize, value: f64 },
    #[error("total_weight is {value}: it must be a finite number above 0")]
    TotalWeight { value: f64 },
    #[error("the schedule has no stages: give at least one")]
    NoStages,
    /// A rate or duration of the schedule (`what` names it, e.g. `schedule.stages[2].target`).
    #[error("{what} is {value}: it must be a finite number, at least 0")]
    Schedule { what: String, value: f64 },
    #[error("route `{route}`: method `{method}` is not an upper-case HTTP method such as GET, POST, PUT or DELETE")]
    Method { route: String, method: String },
    #[error("route `{route}`: its path must start with a text segment beginning with `/`")]
    Path { route: String },
    #[error("route `{route}` uses id `{id}`, for which ids has no range: add one, e.g. \"{id}\": [1, 1000]")]
    UnknownId { route: String, id: String },
    #[error("ids.{name} is [{min}, {max}]: min must not be above max")]
    IdRange { name: String, min: u64, max: u64 },
    #[error("ids.{name} ends at {max}, above 9007199254740991 (2^53 - 1), the largest id the draws give exactly: lower it")]
    IdTooLarge { name: String, max: u64 },
    #[error("max_connections is 0: allow at least 1 connection")]
    MaxConnections,
    #[error("timeout_ms is 0: give each request at least 1 ms")]
    Timeout,
}

fn file_prefix(path: &Path) -> String {
    if path.as_os_str().is_empty() {
        String::new()
    } else {
        format!("{}:", path.display())
    }
}

impl PlanError {
    pub(super) fn from_json(e: &serde_json::Error) -> PlanError {
        // serde_json's Display ends with " at line L column C", which Parse puts in front.
        let text = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let message = text.strip_suffix(&suffix).unwrap_or(&text).to_string();
        PlanError::Parse {
            path: PathBuf::new(),
            line: e.line(),
            column: e.column(),
            message,
        }
    }

    /// Names the file in a parse error.
    pub(super) fn in_file(self, file: &Path) -> PlanError {
        match self {
            PlanError::Parse {
                line,
                column,
                message,
                ..
            } => PlanError::Parse {
                path: file.to_path_buf(),
                line,
                column,
                message,
            },
            other => other,
        }
    }
}
