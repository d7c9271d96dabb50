//! Faults: what is injected, when, for how long, and how long recovery is watched.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::plan::units::{Duration, Name};

/// A fault, paired with a profile in the matrix. Times count from the end of the profile's
/// warm-up: `at` the fault is applied, `duration` later it is cleared, and `observe` is
/// the recovery window after that.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Fault {
    /// Offset into the profile's measured phase.
    pub at: Duration,
    /// How long the fault lasts: for a kill or stop, how long the replica stays down.
    pub duration: Duration,
    /// The recovery window after the fault is cleared.
    pub observe: Duration,
    /// What is done.
    pub inject: Injection,
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(
    deny_unknown_fields,
    rename_all = "kebab-case",
    rename_all_fields = "kebab-case"
)]
pub enum Injection {
    /// SIGKILL one replica; restart it after `duration`.
    KillReplica {
        /// Which replica, counting from 1.
        #[serde(default = "one")]
        replica: u32,
    },
    /// SIGTERM one replica, wait up to `grace` for it to exit, restart it after `duration`.
    StopReplica {
        #[serde(default = "one")]
        replica: u32,
        #[serde(default = "default_grace")]
        grace: Duration,
    },
    /// Freeze one replica's processes (the cgroup freezer, as `docker pause`) for `duration`,
    /// then thaw them: a stop-the-world pause. The process is not restarted; it resumes
    /// where it stopped.
    FreezeReplica {
        #[serde(default = "one")]
        replica: u32,
    },
    /// A co-tenant burns `cores` on the replicas' CPUs for `duration`.
    CpuSteal { cores: f64 },
    /// Added latency on a link (Toxiproxy `latency` toxic, both directions' replies).
    LinkLatency {
        link: Name,
        latency: Duration,
        #[serde(default)]
        jitter: Duration,
    },
    /// The link is down (proxy disabled, connections dropped) for `duration`.
    LinkDown { link: Name },
    /// Any other Toxiproxy toxic on a link.
    Toxic {
        link: Name,
        #[serde(rename = "type")]
        toxic_type: ToxicType,
        #[serde(default)]
        stream: Stream,
        /// Probability (0 to 1) that the toxic applies to a connection.
        #[serde(default = "full")]
        toxicity: f64,
        /// The toxic's attributes, as Toxiproxy names them.
        #[serde(default)]
        attributes: IndexMap<String, u64>,
    },
}

fn one() -> u32 {
    1
}
fn full() -> f64 {
    1.0
}
fn default_grace() -> Duration {
    Duration::from_secs(10)
}

impl Injection {
    pub fn kind(&self) -> &'static str {
        match self {
            Injection::KillReplica { .. } => "kill-replica",
            Injection::StopReplica { .. } => "stop-replica",
            Injection::FreezeReplica { .. } => "freeze-replica",
            Injection::CpuSteal { .. } => "cpu-steal",
            Injection::LinkLatency { .. } => "link-latency",
            Injection::LinkDown { .. } => "link-down",
            Injection::Toxic { .. } => "toxic",
        }
    }

    pub fn link(&self) -> Option<&Name> {
        match self {
            Injection::LinkLatency { link, .. }
            | Injection::LinkDown { link }
            | Injection::Toxic { link, .. } => Some(link),
            _ => None,
        }
    }

    /// The replica the fault is aimed at, if one.
    pub fn replica(&self) -> Option<u32> {
        match self {
            Injection::KillReplica { replica }
            | Injection::StopReplica { replica, .. }
            | Injection::FreezeReplica { replica } => Some(*replica),
            _ => None,
        }
    }

    /// Whether the fault ends by starting its replica again (a kill or a stop): the faults
    /// with a restart, whose readiness is probed. A frozen replica is thawed, not started.
    pub fn restarts_replica(&self) -> bool {
        matches!(
            self,
            Injection::KillReplica { .. } | Injection::StopReplica { .. }
        )
    }
}

/// Toxiproxy's toxic types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToxicType {
    Latency,
    Bandwidth,
    SlowClose,
    Timeout,
    ResetPeer,
    Slicer,
    LimitData,
}

impl ToxicType {
    /// The attributes Toxiproxy defines for this toxic.
    pub fn attributes(self) -> &'static [&'static str] {
        match self {
            ToxicType::Latency => &["latency", "jitter"],
            ToxicType::Bandwidth => &["rate"],
            ToxicType::SlowClose => &["delay"],
            ToxicType::Timeout => &["timeout"],
            ToxicType::ResetPeer => &["timeout"],
            ToxicType::Slicer => &["average_size", "size_variation", "delay"],
            ToxicType::LimitData => &["bytes"],
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stream {
    Upstream,
    #[default]
    Downstream,
}
