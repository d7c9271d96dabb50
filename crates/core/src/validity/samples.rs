//! The parsed inputs of the checks: containers.csv rows as far as validity needs them, and
//! the measurement-path containers of a run with their CPU caps.

use crate::rundir::samples::SampleStatus;
use crate::spec::topology::{Role, RunTopology};

/// The roles on the measurement path: what carries the load and the faults, not the
/// system under test.
pub const MEASUREMENT_ROLES: [&str; 3] = ["load-generator", "fault-proxy", "balancer"];

/// One row of containers.csv (the columns validity reads).
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Wall-clock time of the read, unix ns.
    pub unix_ns: i128,
    /// Monotonic seconds since the monitors started.
    pub offset_s: f64,
    pub container: String,
    pub role: String,
    pub status: SampleStatus,
    pub cpu_usage_s: Option<f64>,
    pub cpu_periods: Option<u64>,
    pub cpu_throttled_periods: Option<u64>,
    pub oom_kills: Option<u64>,
    pub detail: String,
}

/// A measurement-path container: its name, role key and CPU cap (`None`: uncapped).
#[derive(Debug, Clone, PartialEq)]
pub struct PathContainer {
    pub name: String,
    pub role: String,
    pub cpus: Option<f64>,
}

/// The measurement-path containers of a run's topology, with their caps.
pub fn path_containers(topo: &RunTopology) -> Vec<PathContainer> {
    topo.containers
        .iter()
        .filter(|c| {
            matches!(
                c.role,
                Role::LoadGenerator | Role::FaultProxy | Role::Balancer
            )
        })
        .map(|c| PathContainer {
            name: c.name.clone(),
            role: c.role.key(),
            cpus: (c.nano_cpus > 0).then(|| c.nano_cpus as f64 / 1e9),
        })
        .collect()
}

/// The listed containers, plus any measurement-path container the samples show that the
/// list lacks (uncapped, as nothing says otherwise).
pub fn with_sampled(listed: &[PathContainer], samples: &[Sample]) -> Vec<PathContainer> {
    let mut all = listed.to_vec();
    for s in samples {
        if MEASUREMENT_ROLES.contains(&s.role.as_str())
            && !all.iter().any(|c| c.name == s.container)
        {
            all.push(PathContainer {
                name: s.container.clone(),
                role: s.role.clone(),
                cpus: None,
            });
        }
    }
    all
}

/// Every row of one container, in the order of their reads.
pub fn rows_of<'a>(samples: &'a [Sample], container: &str) -> Vec<&'a Sample> {
    let mut rows: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.container == container)
        .collect();
    rows.sort_by(|a, b| a.offset_s.total_cmp(&b.offset_s));
    rows
}
