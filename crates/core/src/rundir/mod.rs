//! The run directory, `results/<study>/runs/<run>/`: the one module that names its files
//! and owns the typed rows written to them. Writers (the executor, the monitors, settle)
//! and readers (validity, status, the audit) go through these names; docs/results.md
//! describes every file.

pub mod events;
pub mod requests;
pub mod samples;

/// One sample per container per second (`samples::ContainerRow`).
pub const CONTAINERS_CSV: &str = "containers.csv";
/// One row per HAProxy server per second (`samples::BalancerRow`).
pub const BALANCER_CSV: &str = "balancer.csv";
