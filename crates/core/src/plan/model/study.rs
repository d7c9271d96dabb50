//! The study's identity, hypotheses, objective and guards.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::plan::units::{ByteSize, Date, Duration, Name, Percent};

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Study {
    /// The study's name; results go to results/<name>/.
    pub name: Name,
    /// The date the plan was registered (committed), YYYY-MM-DD.
    pub registered: Date,
    /// Hypotheses stated before any run.
    pub hypotheses: Vec<Hypothesis>,
    /// What a contender must meet at a given load.
    pub objective: Objective,
    /// Free notes: context, method, known limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Hypothesis {
    /// A short identifier, e.g. "H1".
    pub id: String,
    /// The hypothesis, stated so that data can refute it.
    pub text: String,
    /// The hypothesis as an expression over the report's metrics, e.g.
    /// `saturation(feed-rs.indexed) >= 5 * saturation(feed-rs.production)`; checked against
    /// the plan when the plan loads (docs/plan.md, "Hypotheses' checks").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
}

/// The service-level objective, a ceiling: over every evaluation window, p99 latency at most
/// `p99` and the share of failed requests at most `error-rate`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Objective {
    /// Ceiling on the 99th percentile latency, e.g. "500ms": met when the p99 is at most this.
    pub p99: Duration,
    /// Ceiling on the share of failed requests, e.g. "1%": met when the share is at most this.
    pub error_rate: Percent,
    /// The window over which both are evaluated, e.g. "60s".
    pub window: Duration,
}

fn default_memory_floor() -> ByteSize {
    ByteSize { bytes: 1536 << 20 }
}
fn default_disk_floor() -> ByteSize {
    ByteSize { bytes: 5 << 30 }
}
fn default_cpu_ceiling() -> Percent {
    Percent { percent: 80.0 }
}
fn default_throttle_ceiling() -> Percent {
    Percent { percent: 10.0 }
}
fn default_dropped() -> Percent {
    Percent { percent: 1.0 }
}
fn default_host_interference() -> Percent {
    Percent { percent: 20.0 }
}

/// Guards: the host conditions under which a run aborts, and the measurement-path limits
/// beyond which a run is invalid.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Guards {
    /// Abort when the host's available memory falls below this.
    #[serde(default = "default_memory_floor")]
    pub host_memory_floor: ByteSize,
    /// Abort when free disk space under results/ falls below this.
    #[serde(default = "default_disk_floor")]
    pub disk_floor: ByteSize,
    /// A run is invalid when the load generator, fault proxy or balancer use more than this
    /// share of their CPU cap (p95 over the measured window).
    #[serde(default = "default_cpu_ceiling")]
    pub measurement_cpu_ceiling: Percent,
    /// A run is invalid when a measurement-path container is throttled in more than this
    /// share of its CPU periods.
    #[serde(default = "default_throttle_ceiling")]
    pub measurement_throttle_ceiling: Percent,
    /// A run is invalid when the load generator dropped more than this share of the
    /// scheduled iterations.
    #[serde(default = "default_dropped")]
    pub dropped_iterations: Percent,
    /// A run is invalid when the CPU used on the host outside the study, plus the CPU the
    /// hypervisor stole, exceeds this share of the host's logical CPUs (mean over the
    /// measured window; docs/analysis.md, "Host interference").
    #[serde(default = "default_host_interference")]
    pub host_interference: Percent,
}

impl Default for Guards {
    fn default() -> Self {
        Guards {
            host_memory_floor: default_memory_floor(),
            disk_floor: default_disk_floor(),
            measurement_cpu_ceiling: default_cpu_ceiling(),
            measurement_throttle_ceiling: default_throttle_ceiling(),
            dropped_iterations: default_dropped(),
            host_interference: default_host_interference(),
        }
    }
}
