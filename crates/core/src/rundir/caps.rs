//! The caps each container of a run actually ran under, read back from the engine when the
//! run was deployed and again before its teardown (run.json's `caps`): what the validity
//! check `caps-changed` compares, and what shows two runs of one comparison ran alike.

use serde::{Deserialize, Serialize};

/// A container's caps as the engine reports them (its HostConfig); 0 or empty: not set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caps {
    /// `--cpus`, in billionths of a CPU.
    pub nano_cpus: i64,
    /// The CFS quota and period in µs (`--cpu-quota`, `--cpu-period`), when set that way.
    pub cpu_quota_us: i64,
    pub cpu_period_us: i64,
    /// The CPUs the container may run on (`--cpuset-cpus`), e.g. `0-1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cpuset_cpus: String,
    pub memory_bytes: i64,
    pub memory_swap_bytes: i64,
}

impl Caps {
    /// The same caps: CPUs, cpuset and memory. Against the planned caps (which set no
    /// cpuset), whether these are as planned.
    pub fn same_as(&self, other: &Caps) -> bool {
        self.cpus() == other.cpus()
            && self.cpuset_cpus == other.cpuset_cpus
            && self.memory_bytes == other.memory_bytes
    }

    /// The CPUs the container may use per second: `--cpus`, else quota over period; `None`
    /// when neither is set.
    pub fn cpus(&self) -> Option<f64> {
        if self.nano_cpus > 0 {
            Some(self.nano_cpus as f64 / 1e9)
        } else if self.cpu_quota_us > 0 && self.cpu_period_us > 0 {
            Some(self.cpu_quota_us as f64 / self.cpu_period_us as f64)
        } else {
            None
        }
    }
}

impl std::fmt::Display for Caps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.cpus() {
            Some(c) => write!(f, "{c} CPUs")?,
            None => write!(f, "no CPU cap")?,
        }
        if self.cpu_quota_us > 0 {
            write!(
                f,
                " (quota {} µs per {} µs)",
                self.cpu_quota_us, self.cpu_period_us
            )?;
        }
        if !self.cpuset_cpus.is_empty() {
            write!(f, ", cpuset {}", self.cpuset_cpus)?;
        }
        match self.memory_bytes {
            m if m > 0 => write!(f, ", {} MiB", m as f64 / (1024.0 * 1024.0)),
            _ => write!(f, ", no memory cap"),
        }
    }
}

/// One container's caps as its run's topology asked for them (`planned`: `--cpus` and
/// memory only), read back at deploy and, when it could still be read, before the teardown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadCaps {
    pub container: String,
    pub role: String,
    pub planned: Caps,
    pub deploy: Caps,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub teardown: Option<Caps>,
}
