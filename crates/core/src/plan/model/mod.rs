//! The typed plan: everything a study pre-registers. Field names are the plan's YAML keys;
//! the doc comments become the JSON Schema's descriptions.

mod analysis;
mod contender;
mod fault;
mod matrix;
mod profile;
mod study;
mod topology;

pub use analysis::{Analysis, Recovery};
pub use contender::{
    BuildRecipe, CargoBinary, Contender, Gate, PypiBinary, ServiceOverride, Variant,
};
pub use fault::{Fault, Injection, Stream, ToxicType};
pub use matrix::{Matrix, MatrixEntry, Order};
pub use profile::{IdRange, Method, Profile, Route, Workload};
pub use study::{Guards, Hypothesis, Objective, Study};
pub use topology::{
    Apartness, Balancer, Cap, CappedRole, Caps, CapsOverride, HealthCheck, Link, LoadGenerator,
    LoadGeneratorKind, Placement, Service, ServiceKind, Sidecar, Topology, DEFAULT_MAX_LAG,
};

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::units::Name;

/// A study plan. Commit it before any run: that commit is the pre-registration.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
#[schemars(title = "feedbench plan")]
pub struct Plan {
    /// What is studied, why, and what counts as success.
    pub study: Study,
    /// The implementations of one service contract that are compared, by name.
    pub contenders: IndexMap<Name, Contender>,
    /// What each contender is deployed with: its services, links, balancer and proxies.
    pub topology: Topology,
    /// CPU and memory caps per role.
    pub caps: Caps,
    /// The requests the load generator sends, unless a profile names one of `workloads`.
    pub workload: Workload,
    /// Other route mixes, by name, that a profile may send instead (`workload: NAME` in the
    /// profile): e.g. a hot set of viewers whose pages a cache holds.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub workloads: IndexMap<Name, Workload>,
    /// Load profiles, by name.
    pub profiles: IndexMap<Name, Profile>,
    /// Faults, by name; each is injected at an offset into the profile it is paired with.
    #[serde(default)]
    pub faults: IndexMap<Name, Fault>,
    /// Conditions that abort or invalidate a run.
    #[serde(default)]
    pub guards: Guards,
    /// How the report analyses the runs (recovery after a fault); every setting defaults.
    #[serde(default)]
    pub analysis: Analysis,
    /// Which (profile, fault) pairs each contender runs, how often, in what order.
    pub matrix: Matrix,
    /// Where the roles run when feedbench drives several engines: the load generator with
    /// the system under test (the default) or apart from it.
    #[serde(default, skip_serializing_if = "Placement::is_default")]
    pub placement: Placement,
}

impl Plan {
    /// The workload a profile sends: the one it names in `workloads`, else the study's
    /// `workload`. A validated plan names only workloads it declares; a name it does not
    /// declare (only an unvalidated plan has one) falls back to the study's.
    pub fn workload_of(&self, profile: &Profile) -> &Workload {
        profile
            .workload()
            .and_then(|name| self.workloads.get(name))
            .unwrap_or(&self.workload)
    }
}
