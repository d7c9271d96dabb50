//! feedbench-load: the formats of the open-model HTTP load generator, and what it computes
//! from them.
//!
//! This library is pure (serde, serde_json, csv, thiserror): feedbench's core crate uses it
//! with `default-features = false` to write the plan and read the output, while the
//! `feedbench-load` binary (feature `generator`, the default) adds the runtime and HTTP
//! client that run the plan.
//!
//! - [`plan`]: the input, a JSON [`plan::LoadPlan`] (routes, weights, ID ranges, schedule).
//! - [`draws`]: which request iteration n sends, identical to the k6 script's draws.
//! - [`arrivals`]: when iteration n starts under the piecewise-linear schedule.
//! - [`stream`]: the output, CSV rows and `#` records, its writer and line parser.

pub mod arrivals;
mod decimal;
pub mod draws;
pub mod plan;
pub mod stream;
