//! Load profiles (always an open model: arrivals do not wait for responses) and the
//! workload's route mix.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::plan::units::{Duration, Name, Percent, Rate};

/// A load profile. Every kind has a warm-up whose requests are sent but not evaluated.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(
    deny_unknown_fields,
    rename_all = "kebab-case",
    rename_all_fields = "kebab-case"
)]
pub enum Profile {
    /// Steps of rising arrival rate, to find the rate at which the objective breaks.
    StepRamp {
        /// First step's rate.
        start: Rate,
        /// Rate added at each step (arrivals per second).
        step: f64,
        /// How long each step lasts.
        // Named explicitly: schemars does not read `rename_all_fields`.
        #[serde(rename = "step-duration")]
        step_duration: Duration,
        /// The last step's rate is at most this.
        max: Rate,
        /// Stop the load at the first sustained breach (a step that breaks the objective
        /// and the `confirm-steps` after it that break it too), judged while the ramp runs.
        #[serde(default = "yes", rename = "stop-on-breach")]
        stop_on_breach: bool,
        /// How many steps after a breach must break the objective too for it to be
        /// sustained (default 1; 0: every breach is); with `stop-on-breach` the load stops
        /// there. Left out of the run hash when not written.
        #[serde(
            default,
            rename = "confirm-steps",
            skip_serializing_if = "Option::is_none"
        )]
        confirm_steps: Option<u32>,
        /// The named workload (`workloads`) this profile sends; the study's `workload`
        /// when left out, and then out of the run hash.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        workload: Option<Name>,
        #[serde(default)]
        warmup: Duration,
    },
    /// One rate for a duration.
    Constant {
        rate: Rate,
        duration: Duration,
        /// The named workload (`workloads`) this profile sends; the study's `workload`
        /// when left out, and then out of the run hash.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        workload: Option<Name>,
        #[serde(default)]
        warmup: Duration,
    },
    /// A day's curve compressed into `period`: the rate moves between `trough` and `peak`
    /// shares of `base` along a cosine.
    Diurnal {
        base: Rate,
        period: Duration,
        peak: Percent,
        trough: Percent,
        #[serde(default = "one")]
        cycles: u32,
        /// The named workload (`workloads`) this profile sends; the study's `workload`
        /// when left out, and then out of the run hash.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        workload: Option<Name>,
        #[serde(default)]
        warmup: Duration,
    },
    /// A long constant load, to find leaks and drift.
    Soak {
        rate: Rate,
        duration: Duration,
        /// The named workload (`workloads`) this profile sends; the study's `workload`
        /// when left out, and then out of the run hash.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        workload: Option<Name>,
        #[serde(default)]
        warmup: Duration,
    },
}

fn yes() -> bool {
    true
}
fn one() -> u32 {
    1
}

impl Profile {
    pub fn kind(&self) -> &'static str {
        match self {
            Profile::StepRamp { .. } => "step-ramp",
            Profile::Constant { .. } => "constant",
            Profile::Diurnal { .. } => "diurnal",
            Profile::Soak { .. } => "soak",
        }
    }

    pub fn warmup(&self) -> Duration {
        match self {
            Profile::StepRamp { warmup, .. }
            | Profile::Constant { warmup, .. }
            | Profile::Diurnal { warmup, .. }
            | Profile::Soak { warmup, .. } => *warmup,
        }
    }

    /// The named workload this profile sends, if it names one.
    pub fn workload(&self) -> Option<&Name> {
        match self {
            Profile::StepRamp { workload, .. }
            | Profile::Constant { workload, .. }
            | Profile::Diurnal { workload, .. }
            | Profile::Soak { workload, .. } => workload.as_ref(),
        }
    }

    /// Whether the load stops at the knee, and after how many confirming steps: `Some(n)`
    /// for a step ramp with `stop-on-breach`, `None` otherwise.
    pub fn stops_at_knee(&self) -> Option<u32> {
        match self {
            Profile::StepRamp {
                stop_on_breach: true,
                ..
            } => self.confirm_steps(),
            _ => None,
        }
    }

    /// How many steps after a breach must break the objective too for it to be sustained:
    /// `Some(n)` for a step ramp (default 1), `None` otherwise.
    pub fn confirm_steps(&self) -> Option<u32> {
        match self {
            Profile::StepRamp { confirm_steps, .. } => Some(confirm_steps.unwrap_or(1)),
            _ => None,
        }
    }

    /// Every rate in the profile, with its field name.
    pub fn rates(&self) -> Vec<(&'static str, &Rate)> {
        match self {
            Profile::StepRamp { start, max, .. } => vec![("start", start), ("max", max)],
            Profile::Constant { rate, .. } | Profile::Soak { rate, .. } => vec![("rate", rate)],
            Profile::Diurnal { base, .. } => vec![("base", base)],
        }
    }

    /// Step count of a ramp whose rates are known.
    pub fn ramp_steps(start: f64, step: f64, max: f64) -> u64 {
        if step <= 0.0 || max < start {
            return 1;
        }
        ((max - start) / step + 1e-9).floor() as u64 + 1
    }
}

/// The requests sent: a weighted mix of routes, with IDs drawn from ranges.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Workload {
    /// Routes by name. A path may contain `{id-name}` placeholders from `ids`.
    pub routes: IndexMap<Name, Route>,
    /// ID ranges placeholders draw from, uniformly.
    #[serde(default)]
    pub ids: IndexMap<Name, IdRange>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    Get,
    Post,
    Put,
    Delete,
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Route {
    #[serde(default = "get")]
    pub method: Method,
    /// The path, e.g. "/feed?viewer={viewer}".
    pub path: String,
    /// Relative weight in the mix.
    pub weight: u32,
    /// A JSON body template for writes; may contain placeholders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The links this route's requests cross (so a fault's effect can be checked).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub touches: Vec<Name>,
    /// The share of this route's requests whose right answer is a 4xx (e.g. a post the
    /// anonymous viewer may not see), derived from the seed data. The report flags a route
    /// whose 4xx share is over it by more than a point, and counts these 4xx as served work.
    /// Absent: none is expected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_4xx: Option<Percent>,
}

fn get() -> Method {
    Method::Get
}

/// An inclusive range of IDs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct IdRange {
    pub min: u64,
    pub max: u64,
}
