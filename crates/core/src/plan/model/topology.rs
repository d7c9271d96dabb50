//! The topology a contender is deployed in, and the caps of every role in it.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::contender::BuildRecipe;
use crate::plan::units::{ByteSize, Duration, EnvName, EnvValue, ImageRef, Name};

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Topology {
    /// Replicas of each contender behind the balancer.
    pub replicas: u32,
    /// The services a contender depends on, by name.
    pub services: IndexMap<Name, Service>,
    /// Links from the contender to a service; each is routed through the fault proxy.
    pub links: IndexMap<Name, Link>,
    /// The balancer in front of the replicas (HAProxy).
    pub balancer: Balancer,
    /// The fault proxy on every link (Toxiproxy, or an image speaking its API).
    pub fault_proxy: Sidecar,
    /// The load generator: k6, or feedbench's own (`kind: native`).
    pub load_generator: LoadGenerator,
    /// The co-tenant that steals CPU in a `cpu-steal` fault (stress-ng).
    pub co_tenant: Sidecar,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ServiceKind {
    Database,
    ObjectStore,
}

impl ServiceKind {
    /// The role whose cap a service of this kind runs under.
    pub fn role(self) -> CappedRole {
        match self {
            ServiceKind::Database => CappedRole::Database,
            ServiceKind::ObjectStore => CappedRole::ObjectStore,
        }
    }

    /// "a database", "an object store".
    pub fn described(self) -> &'static str {
        match self {
            ServiceKind::Database => "a database",
            ServiceKind::ObjectStore => "an object store",
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Service {
    /// What the service is; it decides which caps apply.
    pub kind: ServiceKind,
    pub image: ImageRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<BuildRecipe>,
    /// The command the service runs (argv, never a shell string); by default the image's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// The port the service listens on.
    pub port: u16,
    #[serde(default)]
    pub env: IndexMap<EnvName, EnvValue>,
    /// Init scripts (paths relative to the plan file), mounted where the image runs them.
    #[serde(default)]
    pub init: Vec<String>,
    /// Where the image looks for init scripts.
    #[serde(default = "default_init_dir")]
    pub init_dir: String,
    /// A command run inside the container that exits 0 once the service takes requests.
    /// By default `pg_isready` on the service port for a database, and a TCP connection for
    /// an object store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_command: Option<Vec<String>>,
}

fn default_init_dir() -> String {
    "/docker-entrypoint-initdb.d".into()
}

/// A link from the contender to a service, through the fault proxy.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Link {
    /// The service the link leads to.
    pub service: Name,
    /// The service port; by default the service's `port`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// The port the fault proxy listens on for this link.
    pub listen: u16,
}

/// An infrastructure role's image and optional local build.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Sidecar {
    pub image: ImageRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<BuildRecipe>,
}

/// Which program drives the load. Both run the same open model from the same schedule and
/// seeded draws, and their output becomes the same requests.csv (docs/load-generator.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum LoadGeneratorKind {
    /// k6's arrival-rate executors, with a script feedbench renders.
    #[default]
    K6,
    /// `feedbench-load` (images/load): a lean open-model client that writes requests.csv's
    /// rows itself, each with its scheduled instant.
    Native,
}

impl LoadGeneratorKind {
    pub fn is_k6(&self) -> bool {
        *self == LoadGeneratorKind::K6
    }

    pub fn as_str(self) -> &'static str {
        match self {
            LoadGeneratorKind::K6 => "k6",
            LoadGeneratorKind::Native => "native",
        }
    }
}

/// The load generator's program and image. `kind` is in the run hash only when it is not
/// k6, so that every plan written before it existed keeps its runs' hashes.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct LoadGenerator {
    #[serde(default, skip_serializing_if = "LoadGeneratorKind::is_k6")]
    pub kind: LoadGeneratorKind,
    pub image: ImageRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<BuildRecipe>,
    /// Native only: a start later than this behind its scheduled instant is not sent, and
    /// is counted as dropped in its second (default 250ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_lag: Option<Duration>,
    /// The most requests the load generator holds in flight at once (k6's maxVUs,
    /// feedbench-load's open connections): a start that finds them all busy is dropped and
    /// counted, as the system under test's backpressure (default: enough for every request
    /// to take the whole timeout at the schedule's highest rate, so that none is dropped
    /// before a request times out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_in_flight: Option<u32>,
}

/// The native generator's default bound on a start's lag: two and a half CFS periods, so a
/// generator throttled by its CPU cap for one period still sends what it owes.
pub const DEFAULT_MAX_LAG: Duration = Duration { millis: 250 };

impl LoadGenerator {
    pub fn max_lag(&self) -> Duration {
        self.max_lag.unwrap_or(DEFAULT_MAX_LAG)
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Balancer {
    pub image: ImageRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<BuildRecipe>,
    /// Health checks on each replica's readiness path.
    #[serde(default)]
    pub check: HealthCheck,
    /// Times a failed connection is retried (HAProxy `retries`).
    #[serde(default = "one")]
    pub retries: u32,
    /// Retry on another replica (HAProxy `option redispatch`).
    #[serde(default = "yes")]
    pub redispatch: bool,
    /// How long a connection to a replica may take (HAProxy `timeout connect`).
    #[serde(default = "default_connect_timeout")]
    pub connect_timeout: Duration,
}

fn one() -> u32 {
    1
}
fn yes() -> bool {
    true
}
fn default_connect_timeout() -> Duration {
    Duration::from_secs(1)
}

/// HAProxy's `inter`, `fall` and `rise`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct HealthCheck {
    #[serde(default = "default_inter")]
    pub inter: Duration,
    #[serde(default = "default_fall")]
    pub fall: u32,
    #[serde(default = "default_rise")]
    pub rise: u32,
}

fn default_inter() -> Duration {
    Duration { millis: 1000 }
}
fn default_fall() -> u32 {
    3
}
fn default_rise() -> u32 {
    2
}

impl Default for HealthCheck {
    fn default() -> Self {
        HealthCheck {
            inter: default_inter(),
            fall: default_fall(),
            rise: default_rise(),
        }
    }
}

/// A CPU and memory cap. Memory is a hard limit with no swap.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Cap {
    /// Cores, fractional (e.g. 0.5).
    pub cpus: f64,
    pub memory: ByteSize,
}

/// The roles that carry caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CappedRole {
    Replica,
    Database,
    ObjectStore,
    FaultProxy,
    Balancer,
    LoadGenerator,
}

impl CappedRole {
    pub fn key(self) -> &'static str {
        match self {
            CappedRole::Replica => "replica",
            CappedRole::Database => "database",
            CappedRole::ObjectStore => "object-store",
            CappedRole::FaultProxy => "fault-proxy",
            CappedRole::Balancer => "balancer",
            CappedRole::LoadGenerator => "load-generator",
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Caps {
    pub replica: Cap,
    /// Required when the topology declares a database; a topology without one needs none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database: Option<Cap>,
    /// Required when the topology declares an object store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_store: Option<Cap>,
    pub fault_proxy: Cap,
    pub balancer: Cap,
    pub load_generator: Cap,
    /// Allow the caps of one run to sum to more than the host's cores (recorded as a
    /// warning in every run).
    #[serde(default)]
    pub allow_oversubscription: bool,
}

impl Caps {
    pub fn get(&self, role: CappedRole) -> Option<Cap> {
        match role {
            CappedRole::Replica => Some(self.replica),
            CappedRole::Database => self.database,
            CappedRole::ObjectStore => self.object_store,
            CappedRole::FaultProxy => Some(self.fault_proxy),
            CappedRole::Balancer => Some(self.balancer),
            CappedRole::LoadGenerator => Some(self.load_generator),
        }
    }
}

/// Caps that differ for one contender or variant; roles left out keep the study's caps.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CapsOverride {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<Cap>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database: Option<Cap>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_store: Option<Cap>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault_proxy: Option<Cap>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub balancer: Option<Cap>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_generator: Option<Cap>,
}

impl CapsOverride {
    /// `self` over `base`.
    pub fn apply(&self, base: &Caps) -> Caps {
        Caps {
            replica: self.replica.unwrap_or(base.replica),
            database: self.database.or(base.database),
            object_store: self.object_store.or(base.object_store),
            fault_proxy: self.fault_proxy.unwrap_or(base.fault_proxy),
            balancer: self.balancer.unwrap_or(base.balancer),
            load_generator: self.load_generator.unwrap_or(base.load_generator),
            allow_oversubscription: base.allow_oversubscription,
        }
    }

    /// Every role this override sets, with its cap.
    pub fn entries(&self) -> Vec<(CappedRole, Cap)> {
        [
            (CappedRole::Replica, self.replica),
            (CappedRole::Database, self.database),
            (CappedRole::ObjectStore, self.object_store),
            (CappedRole::FaultProxy, self.fault_proxy),
            (CappedRole::Balancer, self.balancer),
            (CappedRole::LoadGenerator, self.load_generator),
        ]
        .into_iter()
        .filter_map(|(r, c)| c.map(|c| (r, c)))
        .collect()
    }
}

/// Where the roles of a run are placed when feedbench drives several engines (`--engines`):
/// method, so it is in the plan and in the run hash (where it differs from the default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Placement {
    /// `together` (the default): the load generator runs on the engine of the system under
    /// test; `apart`: never on it, on the load-generator engine of the run's engine group.
    #[serde(default)]
    pub load_generator: Apartness,
}

impl Placement {
    pub fn is_default(&self) -> bool {
        *self == Placement::default()
    }
}

/// Whether a role shares the engine of the system under test.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Apartness {
    #[default]
    Together,
    Apart,
}
