//! The analysis settings: how the report judges what the runs recorded. They are
//! pre-registered with the rest of the plan (they enter the plan hash) but do not change
//! what a run does (they are not in any run hash).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::plan::units::{Duration, Percent};

/// How the report analyses the runs; every setting has a default.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Analysis {
    /// The recovery rule after a fault (docs/analysis.md, "Recovery (the seeds' rule)").
    #[serde(default)]
    pub recovery: Recovery,
}

fn default_window() -> Duration {
    Duration::from_secs(10)
}
fn default_step() -> Duration {
    Duration { millis: 100 }
}
fn default_hold() -> Duration {
    Duration::from_secs(10)
}
fn default_throughput_tolerance() -> Percent {
    Percent { percent: 5.0 }
}
fn default_latency_tolerance() -> Percent {
    Percent { percent: 10.0 }
}

/// The recovery rule: the first instant `t` (on a grid of `step` from the origin) from which
/// every window of length `window` starting at `t + j·step`, for `j = 0 … hold/step`, is
/// within control.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Recovery {
    /// The length of each leading window, above 0s.
    #[serde(default = "default_window")]
    pub window: Duration,
    /// The grid step of the candidate instants and of the windows, above 0s and at most
    /// `window`.
    #[serde(default = "default_step")]
    pub step: Duration,
    /// How long every leading window must stay within control: a whole multiple of `step`
    /// (0s asks for the one window at the candidate instant).
    #[serde(default = "default_hold")]
    pub hold: Duration,
    /// A window's throughput is within control when |throughput − control| is at most this
    /// share of the control's, from 0% (exactly the control's) to 100%.
    #[serde(default = "default_throughput_tolerance")]
    pub throughput_tolerance: Percent,
    /// A window's p95 and p99 are within control when at most (1 + this) times the
    /// control's, from 0% (at most the control's) to 100%.
    #[serde(default = "default_latency_tolerance")]
    pub latency_tolerance: Percent,
}

impl Default for Recovery {
    fn default() -> Self {
        Recovery {
            window: default_window(),
            step: default_step(),
            hold: default_hold(),
            throughput_tolerance: default_throughput_tolerance(),
            latency_tolerance: default_latency_tolerance(),
        }
    }
}

const NANOS_PER_MILLI: i128 = 1_000_000;

impl Recovery {
    /// `window` in nanoseconds.
    pub fn window_ns(&self) -> i128 {
        i128::from(self.window.millis) * NANOS_PER_MILLI
    }

    /// `step` in nanoseconds.
    pub fn step_ns(&self) -> i128 {
        i128::from(self.step.millis) * NANOS_PER_MILLI
    }

    /// `hold` in nanoseconds.
    pub fn hold_ns(&self) -> i128 {
        i128::from(self.hold.millis) * NANOS_PER_MILLI
    }

    /// `throughput-tolerance` as a fraction (5% → 0.05).
    pub fn throughput_fraction(&self) -> f64 {
        self.throughput_tolerance.fraction()
    }

    /// `latency-tolerance` as a fraction (10% → 0.1).
    pub fn latency_fraction(&self) -> f64 {
        self.latency_tolerance.fraction()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_the_documented_ones_in_nanoseconds_and_fractions() {
        let r = Analysis::default().recovery;
        assert_eq!(r.window_ns(), 10_000_000_000);
        assert_eq!(r.step_ns(), 100_000_000);
        assert_eq!(r.hold_ns(), 10_000_000_000);
        assert_eq!(r.throughput_fraction(), 0.05);
        assert_eq!(r.latency_fraction(), 0.1);
    }
}
