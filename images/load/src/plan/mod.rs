//! The load plan: the generator's input, a JSON file feedbench writes at `/feedbench/load.json`.
//!
//! It carries the same data as the k6 script's `PLAN`, so that both generators send the same
//! requests on the same schedule. [`LoadPlan::read`] parses it; [`LoadPlan::check`] refuses
//! what the generator cannot run.

mod check;
mod error;

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

pub use check::BaseUrl;
pub use error::PlanError;

/// The plan format this library reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// Everything the generator needs to run one scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadPlan {
    pub format_version: u32,
    /// Keys every draw (a u32, as the k6 script's PLAN.seed).
    pub seed: u32,
    /// e.g. "http://balancer:8080"; routes' paths are appended.
    pub base_url: String,
    /// Each request's timeout (connection set-up, sending and receiving together).
    pub timeout_ms: u64,
    pub routes: Vec<Route>,
    /// Route i is drawn when the pick (uniform in [0, total_weight)) is below entry i and
    /// not below an earlier one: the running sums of the routes' weights.
    pub cumulative_weights: Vec<f64>,
    pub total_weight: f64,
    /// ID ranges by name: [min, max], both inclusive.
    pub ids: BTreeMap<String, [u64; 2]>,
    pub schedule: Schedule,
    /// The cap on open connections (= requests in flight); a start that finds every
    /// connection busy and the cap reached is dropped.
    pub max_connections: u32,
    /// A start later than this behind its scheduled instant is dropped (not sent) and counted.
    pub max_lag_ms: u64,
}

/// One kind of request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    /// Names the route in the output's `route` column.
    pub name: String,
    /// GET, POST, PUT or DELETE (any upper-case method token is sent as is).
    pub method: String,
    /// The path template, appended to base_url; starts with a text segment holding `/`.
    pub path: Vec<Segment>,
    /// The JSON body template, sent with `Content-Type: application/json`; none for no body.
    pub body: Option<Vec<Segment>>,
}

/// A piece of a template: literal text, or an ID drawn from a named range.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Segment {
    /// Serialised as a JSON string.
    Text(String),
    /// Serialised as `{"id": "name"}`; one draw per name per iteration.
    Id { id: String },
}

/// The arrival rate over time, piecewise linear.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schedule {
    /// Arrivals per second at t = 0.
    pub start_rate: f64,
    pub stages: Vec<Stage>,
}

/// The rate moves linearly from the previous stage's target (or start_rate) to `target`
/// over `duration_s`; a stage of duration 0 is an instant jump.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stage {
    pub duration_s: f64,
    /// Arrivals per second at the stage's end.
    pub target: f64,
}

impl LoadPlan {
    /// Reads and parses a plan file (without checking it: see [`LoadPlan::check`]).
    pub fn read(path: impl AsRef<Path>) -> Result<LoadPlan, PlanError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| PlanError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        LoadPlan::parse(&text).map_err(|e| e.in_file(path))
    }

    /// Parses a plan from its JSON text; an error names the line and column.
    pub fn parse(text: &str) -> Result<LoadPlan, PlanError> {
        serde_json::from_str(text).map_err(|e| PlanError::from_json(&e))
    }

    /// The plan as pretty JSON, as feedbench writes it.
    pub fn to_json(&self) -> String {
        // A plan holds only strings, numbers and maps with string keys: it always serialises.
        serde_json::to_string_pretty(self).expect("a LoadPlan serialises")
    }
}

#[cfg(test)]
pub(crate) mod tests;
