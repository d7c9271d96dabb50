//! The topology of one run as data: its network, every container with its caps, labels,
//! environment and files, the fault proxy's proxies, and the rendered balancer config. Pure:
//! the runtime turns it into containers.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::plan::expand::run_slug;
use crate::plan::expand::{resolve_contenders, ResolvedContender};
use crate::plan::model::{Cap, HealthCheck, Plan, ServiceKind};
use crate::plan::validate::total_cpus;
use crate::plan::{LoadedPlan, RunSpec};
pub use crate::spec::instance::{Instance, LABEL_INSTANCE};

pub const LABEL_STUDY: &str = "feedbench.study";
pub const LABEL_RUN: &str = "feedbench.run";
pub const LABEL_ROLE: &str = "feedbench.role";

/// The balancer's traffic and stats ports inside the run's network.
pub const BALANCER_PORT: u16 = 8080;
pub const STATS_PORT: u16 = 8404;
/// The fault proxy's API port (Toxiproxy's).
pub const FAULT_PROXY_API_PORT: u16 = 8474;
const HAPROXY_CFG: &str = "/usr/local/etc/haproxy/haproxy.cfg";

#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    #[error("run `{0}` names a contender the plan does not declare")]
    UnknownContender(String),
    #[error("cannot read `{path}` for service `{service}`: {reason}")]
    InitScript {
        service: String,
        path: String,
        reason: String,
    },
    #[error("service `{service}` is {kind} but the run's caps have no `{role}` (the plan's validation refuses this)")]
    MissingCap {
        service: String,
        kind: &'static str,
        role: &'static str,
    },
    #[error("cannot render {what}: {source}")]
    Render {
        what: String,
        #[source]
        source: minijinja::Error,
    },
}

/// What a container is in the run; its label value and, for replicas, its number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    Database,
    ObjectStore,
    FaultProxy,
    Replica(u32),
    Balancer,
    LoadGenerator,
    /// The CPU-steal fault's stress-ng container (only in runs with that fault).
    CoTenant,
    /// A contender's gate, run once against its deployed topology before its first run.
    Gate,
}

impl Role {
    /// The container's host name in the run's network, and its label value.
    pub fn key(self) -> String {
        match self {
            Role::Database => "database".into(),
            Role::ObjectStore => "object-store".into(),
            Role::FaultProxy => "fault-proxy".into(),
            Role::Replica(i) => format!("replica-{i}"),
            Role::Balancer => "balancer".into(),
            Role::LoadGenerator => "load-generator".into(),
            Role::CoTenant => "co-tenant".into(),
            Role::Gate => "gate".into(),
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Role::Database => "database",
            Role::ObjectStore => "object-store",
            Role::FaultProxy => "fault-proxy",
            Role::Replica(_) => "replica",
            Role::Balancer => "balancer",
            Role::LoadGenerator => "load-generator",
            Role::CoTenant => "co-tenant",
            Role::Gate => "gate",
        }
    }
}

/// How the deployer knows a container is ready.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Readiness {
    /// A command run in the container exits 0.
    Command(Vec<String>),
    /// A TCP connection to the port succeeds.
    Tcp(u16),
    /// `GET path` on the port answers 200.
    Http { port: u16, path: String },
    /// The balancer's stats show every server UP.
    AllServersUp { port: u16, servers: Vec<String> },
    /// Created but not started (the load generator starts with the load).
    NotStarted,
}

/// A file placed in the container before it starts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileSpec {
    pub path: String,
    #[serde(skip)]
    pub contents: Vec<u8>,
    pub sha256: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContainerSpec {
    pub name: String,
    pub role: Role,
    pub image: String,
    pub env: Vec<(String, String)>,
    /// Overrides the image's command; `None` keeps it.
    pub cmd: Option<Vec<String>>,
    pub nano_cpus: i64,
    pub memory_bytes: i64,
    pub labels: BTreeMap<String, String>,
    pub files: Vec<FileSpec>,
    /// Named volumes mounted into it (a database started from its seeded snapshot).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mounts: Vec<Mount>,
    /// Containers in a lower stage are ready before a higher stage starts; within a stage
    /// they start together.
    pub stage: u8,
    pub readiness: Readiness,
    /// How it is attached to networks: the run's network (`Run`), unless the run is placed
    /// apart (`spec::placement`).
    #[serde(default, skip_serializing_if = "Attach::is_run")]
    pub attach: Attach,
}

/// How a container is attached to networks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Attach {
    /// The run's internal network alone, under its role's name.
    #[default]
    Run,
    /// The run's network and an edge network (not internal) on which `ports` are
    /// published at `host_ip` of its engine's host: what a load generator on another engine
    /// reaches, and what a coordinator reaches of a system on another engine.
    Published {
        network: String,
        host_ip: String,
        ports: Vec<u16>,
    },
    /// Its engine's host network: a load generator on an engine of its own, which reaches
    /// the system under test at the address the balancer is published on.
    Host,
}

impl Attach {
    pub fn is_run(&self) -> bool {
        *self == Attach::Run
    }
}

/// A named volume at a path in a container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mount {
    pub volume: String,
    pub target: String,
    pub read_only: bool,
}

/// A Toxiproxy proxy: the fault proxy listens and forwards to a service.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProxySpec {
    pub name: String,
    pub listen: String,
    pub upstream: String,
    pub enabled: bool,
    /// The service the link forwards to and the port the proxy listens on: what `upstream`
    /// and `listen` spell for the proxy's API, kept as values for the coordinator.
    #[serde(skip)]
    pub service: Role,
    #[serde(skip)]
    pub listen_port: u16,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunTopology {
    pub study: String,
    pub run_id: String,
    pub network: String,
    pub labels: BTreeMap<String, String>,
    pub containers: Vec<ContainerSpec>,
    pub proxies: Vec<ProxySpec>,
    /// Cores the run's caps reserve.
    pub total_cpus: f64,
    #[serde(skip)]
    pub haproxy_cfg: String,
    /// The balancer's health check (in `haproxy_cfg`): how soon it can take a server out.
    #[serde(skip)]
    pub balancer_check: HealthCheck,
}

impl RunTopology {
    pub fn container(&self, role: Role) -> Option<&ContainerSpec> {
        self.containers.iter().find(|c| c.role == role)
    }

    /// The links to the database and the port the fault proxy listens on for each: the
    /// links a run probes (`rundir::links`).
    pub fn database_links(&self) -> Vec<(&str, u16)> {
        self.proxies
            .iter()
            .filter(|p| p.service == Role::Database)
            .map(|p| (p.name.as_str(), p.listen_port))
            .collect()
    }

    /// Whether the run's caps fit a host of `cores`. `Ok(Some(warning))` when they do not
    /// but the plan allows oversubscription (`allowed`): the warning belongs in the run's
    /// record.
    pub fn fits(&self, cores: f64, allowed: bool) -> Result<Option<String>, Oversubscribed> {
        if self.total_cpus <= cores {
            return Ok(None);
        }
        if allowed {
            Ok(Some(format!(
                "oversubscribed: the caps sum to {} cores on a host with {cores}; runs compete for CPU",
                self.total_cpus
            )))
        } else {
            Err(Oversubscribed {
                run: self.run_id.clone(),
                total: self.total_cpus,
                cores,
            })
        }
    }
}

/// A run whose caps sum to more cores than the engine's host has, where the plan does not
/// allow it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("the caps of run `{run}` sum to {total} cores but the engine's host has {cores}; lower the caps or set `caps.allow-oversubscription: true`")]
pub struct Oversubscribed {
    pub run: String,
    pub total: f64,
    pub cores: f64,
}

/// The prefix every container and the network of a run share: `fb-<study>-<instance>-<run>`.
pub fn run_prefix(study: &str, instance: &Instance, run_id: &str) -> String {
    format!("fb-{study}-{instance}-{}", run_slug(run_id))
}

fn sha256(bytes: &[u8]) -> String {
    crate::plan::hash::sha256_hex(bytes)
}

fn caps(c: Cap) -> (i64, i64) {
    ((c.cpus * 1e9).round() as i64, c.memory.bytes as i64)
}

/// Reads a file named in the plan (relative to the plan's directory).
pub type ReadFile<'a> = &'a dyn Fn(&str) -> Result<Vec<u8>, String>;

/// A run's topology with the plan's files (init scripts and the like) read relative to the
/// plan's directory: what every caller outside tests wants.
pub fn of_loaded(
    loaded: &LoadedPlan,
    run: &RunSpec,
    instance: &Instance,
) -> Result<RunTopology, TopologyError> {
    let read = |rel: &str| std::fs::read(loaded.base_dir.join(rel)).map_err(|e| e.to_string());
    topology(&loaded.plan, run, instance, &read)
}

/// The topology of one run of a validated plan: the contender's services (stage 0), the
/// fault proxy (0), its replicas (1), the balancer (2), the load generator (3) and, for a
/// CPU-steal run, the co-tenant (4, created, not started); every name and label carries
/// the study's `instance`.
pub fn topology(
    plan: &Plan,
    run: &RunSpec,
    instance: &Instance,
    read: ReadFile,
) -> Result<RunTopology, TopologyError> {
    let contender = resolve_contenders(plan)
        .into_iter()
        .find(|c| c.name == run.contender)
        .ok_or_else(|| TopologyError::UnknownContender(run.contender.clone()))?;
    let study = plan.study.name.to_string();
    let prefix = run_prefix(&study, instance, &run.id);
    let mut labels = BTreeMap::new();
    labels.insert(LABEL_STUDY.to_string(), study.clone());
    labels.insert(LABEL_INSTANCE.to_string(), instance.to_string());
    labels.insert(LABEL_RUN.to_string(), run.id.clone());
    let maker = Maker {
        prefix: &prefix,
        labels: &labels,
    };
    let t = &plan.topology;
    let mut containers = services(&contender, &maker, read)?;
    containers.push(maker.container(
        Role::FaultProxy,
        t.fault_proxy.image.as_str(),
        contender.caps.fault_proxy,
        0,
        Readiness::Http {
            port: FAULT_PROXY_API_PORT,
            path: "/version".into(),
        },
    ));
    let (replicas, servers) = replicas(plan, &contender, &maker)?;
    containers.extend(replicas);
    let haproxy_cfg = haproxy_config(plan, &contender, &run.id)?;
    let mut balancer = maker.container(
        Role::Balancer,
        t.balancer.image.as_str(),
        contender.caps.balancer,
        2,
        Readiness::AllServersUp {
            port: STATS_PORT,
            servers,
        },
    );
    balancer.files.push(FileSpec {
        path: HAPROXY_CFG.into(),
        sha256: sha256(haproxy_cfg.as_bytes()),
        contents: haproxy_cfg.clone().into_bytes(),
    });
    containers.push(balancer);
    let mut load = maker.container(
        Role::LoadGenerator,
        t.load_generator.image.as_str(),
        contender.caps.load_generator,
        3,
        Readiness::NotStarted,
    );
    load.cmd = Some(crate::spec::commands::args(t.load_generator.kind));
    load.env = crate::spec::commands::env(t.load_generator.kind);
    containers.push(load);
    containers.extend(co_tenant(plan, run, &maker));
    Ok(RunTopology {
        study,
        run_id: run.id.clone(),
        network: prefix.clone(),
        labels: labels.clone(),
        containers,
        proxies: proxies(plan, &contender),
        total_cpus: total_cpus(&contender),
        haproxy_cfg,
        balancer_check: plan.topology.balancer.check.clone(),
    })
}

/// Makes a run's containers: named `<prefix>-<role>`, labelled with the run's labels and
/// their role, capped.
struct Maker<'a> {
    prefix: &'a str,
    labels: &'a BTreeMap<String, String>,
}

impl Maker<'_> {
    fn container(
        &self,
        role: Role,
        image: &str,
        cap: Cap,
        stage: u8,
        readiness: Readiness,
    ) -> ContainerSpec {
        let (nano_cpus, memory_bytes) = caps(cap);
        let mut l = self.labels.clone();
        l.insert(LABEL_ROLE.to_string(), role.label().to_string());
        ContainerSpec {
            name: format!("{}-{}", self.prefix, role.key()),
            role,
            image: image.to_string(),
            env: Vec::new(),
            cmd: None,
            nano_cpus,
            memory_bytes,
            labels: l,
            files: Vec::new(),
            mounts: Vec::new(),
            stage,
            readiness,
            attach: Attach::Run,
        }
    }
}

/// The contender's services (a database, an object store), each with its readiness and
/// its init scripts as files, numbered in the plan's order.
fn services(
    contender: &ResolvedContender,
    maker: &Maker<'_>,
    read: ReadFile,
) -> Result<Vec<ContainerSpec>, TopologyError> {
    let mut containers = Vec::new();
    for (name, svc) in &contender.services {
        let cap = contender
            .caps
            .get(svc.kind.role())
            .ok_or_else(|| TopologyError::MissingCap {
                service: name.to_string(),
                kind: svc.kind.described(),
                role: svc.kind.role().key(),
            })?;
        let (role, ready) = match svc.kind {
            ServiceKind::Database => (
                Role::Database,
                Readiness::Command(svc.ready_command.clone().unwrap_or_else(|| {
                    ["pg_isready", "-h", "127.0.0.1", "-p", &svc.port.to_string()]
                        .map(String::from)
                        .to_vec()
                })),
            ),
            ServiceKind::ObjectStore => (
                Role::ObjectStore,
                svc.ready_command
                    .clone()
                    .map_or(Readiness::Tcp(svc.port), Readiness::Command),
            ),
        };
        let mut c = maker.container(role, svc.image.as_str(), cap, 0, ready);
        c.cmd = svc.command.clone();
        c.env = svc
            .env
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_str().to_string()))
            .collect();
        for (i, init) in svc.init.iter().enumerate() {
            let contents = read(init).map_err(|reason| TopologyError::InitScript {
                service: name.to_string(),
                path: init.clone(),
                reason,
            })?;
            let file = init.rsplit('/').next().unwrap_or(init);
            c.files.push(FileSpec {
                // Numbered so that the image runs them in the plan's order.
                path: format!("{}/{:02}-{file}", svc.init_dir.trim_end_matches('/'), i + 1),
                sha256: sha256(&contents),
                contents,
            });
        }
        containers.push(c);
    }
    Ok(containers)
}

/// One fault-proxy proxy per link, listening on the link's port and forwarding to its
/// service.
fn proxies(plan: &Plan, contender: &ResolvedContender) -> Vec<ProxySpec> {
    plan.topology
        .links
        .iter()
        .map(|(name, link)| {
            let svc = &contender.services[&link.service];
            let service = match svc.kind {
                ServiceKind::Database => Role::Database,
                ServiceKind::ObjectStore => Role::ObjectStore,
            };
            ProxySpec {
                name: name.to_string(),
                listen: format!("0.0.0.0:{}", link.listen),
                upstream: format!("{}:{}", service.key(), link.port.unwrap_or(svc.port)),
                enabled: true,
                service,
                listen_port: link.listen,
            }
        })
        .collect()
}

/// The contender's replicas, and their keys as the balancer's servers.
fn replicas(
    plan: &Plan,
    contender: &ResolvedContender,
    maker: &Maker<'_>,
) -> Result<(Vec<ContainerSpec>, Vec<String>), TopologyError> {
    let env = replica_env(plan, contender)?;
    let mut containers = Vec::new();
    let mut servers = Vec::new();
    for i in 1..=contender.replicas {
        let mut c = maker.container(
            Role::Replica(i),
            contender.image.as_str(),
            contender.caps.replica,
            1,
            Readiness::Http {
                port: contender.port,
                path: contender.readiness.to_string(),
            },
        );
        c.env = env.clone();
        c.cmd = contender.command.clone();
        servers.push(Role::Replica(i).key());
        containers.push(c);
    }
    Ok((containers, servers))
}

/// A CPU-steal run carries its co-tenant from the start (created, not started), so the
/// monitors sample it like every other container.
fn co_tenant(plan: &Plan, run: &RunSpec, maker: &Maker<'_>) -> Option<ContainerSpec> {
    let name = run.fault.as_ref()?;
    let (_, f) = plan.faults.iter().find(|(n, _)| n.as_str() == name)?;
    let crate::plan::model::Injection::CpuSteal { cores } = f.inject else {
        return None;
    };
    let cap = Cap {
        cpus: cores,
        memory: crate::plan::units::ByteSize { bytes: 64 << 20 },
    };
    let mut co = maker.container(
        Role::CoTenant,
        plan.topology.co_tenant.image.as_str(),
        cap,
        4,
        Readiness::NotStarted,
    );
    co.cmd = Some(crate::spec::commands::co_tenant_args(
        cores,
        std::time::Duration::from_millis(f.duration.millis),
    ));
    Some(co)
}

/// The gated deployment: `env` (the gate's `contender-env`) merged over every replica's
/// environment, a value of the same name replaced.
pub fn gated(topology: &mut RunTopology, env: &[(String, String)]) {
    for c in &mut topology.containers {
        if matches!(c.role, Role::Replica(_)) {
            for (k, v) in env {
                match c.env.iter_mut().find(|(name, _)| name == k) {
                    Some(slot) => slot.1 = v.clone(),
                    None => c.env.push((k.clone(), v.clone())),
                }
            }
        }
    }
}

/// The gate's container on a deployed topology's network: the gate's argv in its image,
/// `FEEDBENCH_TARGET` pointing at the balancer, each of `contender_env` as
/// `FEEDBENCH_<NAME>` (so that the gate knows the settings the replicas were given), the
/// run's labels with role `gate`, and the load generator's caps (the gate is the client the
/// load generator would be, and the load generator is not started while a gate runs).
pub fn gate_container(
    topology: &RunTopology,
    image: &str,
    command: &[String],
    contender_env: &[(String, String)],
) -> ContainerSpec {
    let role = Role::Gate;
    let mut labels = topology.labels.clone();
    labels.insert(LABEL_ROLE.to_string(), role.label().to_string());
    let (nano_cpus, memory_bytes) = topology
        .container(Role::LoadGenerator)
        .map_or((1_000_000_000, 256 << 20), |c| {
            (c.nano_cpus, c.memory_bytes)
        });
    ContainerSpec {
        name: format!("{}-{}", topology.network, role.key()),
        role,
        image: image.to_string(),
        env: std::iter::once((
            "FEEDBENCH_TARGET".to_string(),
            format!("http://{}:{BALANCER_PORT}", Role::Balancer.key()),
        ))
        .chain(
            contender_env
                .iter()
                .map(|(k, v)| (format!("FEEDBENCH_{k}"), v.clone())),
        )
        .collect(),
        cmd: Some(command.to_vec()),
        nano_cpus,
        memory_bytes,
        labels,
        files: Vec::new(),
        mounts: Vec::new(),
        stage: u8::MAX,
        readiness: Readiness::NotStarted,
        attach: Attach::Run,
    }
}

/// The replicas' environment with link templates rendered: a link's host is the fault proxy.
fn replica_env(plan: &Plan, c: &ResolvedContender) -> Result<Vec<(String, String)>, TopologyError> {
    let links: BTreeMap<String, BTreeMap<&str, String>> = plan
        .topology
        .links
        .iter()
        .map(|(name, l)| {
            let mut m = BTreeMap::new();
            m.insert("host", Role::FaultProxy.key());
            m.insert("port", l.listen.to_string());
            (name.to_string(), m)
        })
        .collect();
    let env = minijinja::Environment::new();
    let ctx = minijinja::context! { links => links };
    c.env
        .iter()
        .map(|(k, v)| {
            let rendered =
                env.render_str(v.as_str(), &ctx)
                    .map_err(|source| TopologyError::Render {
                        what: format!("the environment value `{k}`"),
                        source,
                    })?;
            Ok((k.to_string(), rendered))
        })
        .collect()
}

/// HAProxy's configuration for a contender's replicas, from typed plan values only.
pub fn haproxy_config(
    plan: &Plan,
    c: &ResolvedContender,
    run_id: &str,
) -> Result<String, TopologyError> {
    let b = &plan.topology.balancer;
    let servers: Vec<BTreeMap<&str, String>> = (1..=c.replicas)
        .map(|i| {
            let mut m = BTreeMap::new();
            m.insert("name", Role::Replica(i).key());
            m.insert("host", Role::Replica(i).key());
            m.insert("port", c.port.to_string());
            m
        })
        .collect();
    let mut env = minijinja::Environment::new();
    env.set_keep_trailing_newline(true);
    let render = |e: minijinja::Error| TopologyError::Render {
        what: "the balancer configuration".into(),
        source: e,
    };
    env.add_template("balancer-config", super::BALANCER_TEMPLATE)
        .map_err(render)?;
    env.get_template("balancer-config")
        .and_then(|t| {
            t.render(minijinja::context! {
                run_id => run_id,
                connect_timeout_ms => b.connect_timeout.millis,
                retries => b.retries,
                redispatch => b.redispatch,
                listen_port => BALANCER_PORT,
                stats_port => STATS_PORT,
                readiness => c.readiness.as_str(),
                inter_ms => b.check.inter.millis,
                fall => b.check.fall,
                rise => b.check.rise,
                servers => servers,
            })
        })
        .map_err(render)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::validate::Context;

    #[test]
    fn caps_beyond_the_host_are_refused_unless_allowed() {
        let topo = |total| RunTopology {
            study: "s".into(),
            run_id: "c/p/r1".into(),
            network: "n".into(),
            labels: BTreeMap::new(),
            containers: vec![],
            proxies: vec![],
            total_cpus: total,
            haproxy_cfg: String::new(),
            balancer_check: Default::default(),
        };
        assert_eq!(topo(1.9).fits(2.0, false), Ok(None));
        assert_eq!(topo(2.0).fits(2.0, false), Ok(None));
        assert_eq!(
            topo(2.5).fits(2.0, false),
            Err(Oversubscribed {
                run: "c/p/r1".into(),
                total: 2.5,
                cores: 2.0
            })
        );
        assert!(topo(2.5)
            .fits(2.0, true)
            .unwrap()
            .unwrap()
            .contains("oversubscribed: the caps sum to 2.5 cores on a host with 2"));
    }

    fn smoke() -> (Plan, Vec<RunSpec>) {
        let text = include_str!("../../../../experiments/smoke.yaml");
        let ctx = Context {
            host_cores: None,
            exists: None,
        };
        let loaded =
            crate::plan::load_str("experiments/smoke.yaml", text, &ctx).expect("smoke plan loads");
        let runs = crate::plan::expand(&loaded.plan);
        (loaded.plan, runs)
    }

    fn read(path: &str) -> Result<Vec<u8>, String> {
        Ok(format!("-- contents of {path}\n").into_bytes())
    }

    #[test]
    fn caps_labels_names_and_links_follow_the_plan() {
        let (plan, runs) = smoke();
        let t = topology(&plan, &runs[0], &Instance::for_tests(), &read).unwrap();
        assert_eq!(t.network, "fb-smoke-abcdef01-feed-rs_ramp_r1");
        let replicas: Vec<&ContainerSpec> = t
            .containers
            .iter()
            .filter(|c| matches!(c.role, Role::Replica(_)))
            .collect();
        assert_eq!(replicas.len(), plan.topology.replicas as usize);
        for r in &replicas {
            assert_eq!(r.nano_cpus, (plan.caps.replica.cpus * 1e9) as i64);
            assert_eq!(r.memory_bytes, plan.caps.replica.memory.bytes as i64);
            assert!(r
                .env
                .iter()
                .any(|(k, v)| k == "DATABASE_URL"
                    && v == "postgres://feed:feed@fault-proxy:15432/feed"));
        }
        for c in &t.containers {
            assert_eq!(c.labels[LABEL_STUDY], "smoke");
            assert_eq!(c.labels[LABEL_RUN], "feed-rs/ramp/r1");
            assert_eq!(c.labels[LABEL_INSTANCE], "abcdef01");
            assert_eq!(c.labels[LABEL_ROLE], c.role.label());
            assert!(c.name.starts_with("fb-smoke-abcdef01-feed-rs_ramp_r1-"));
        }
        let db = t.container(Role::Database).unwrap();
        assert_eq!(db.nano_cpus, 500_000_000);
        let files: Vec<&str> = db.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            files,
            [
                "/docker-entrypoint-initdb.d/01-schema.sql",
                "/docker-entrypoint-initdb.d/02-indexed.sql",
                "/docker-entrypoint-initdb.d/03-seed.sql"
            ]
        );
        assert_eq!(
            t.proxies,
            vec![ProxySpec {
                name: "db".into(),
                listen: "0.0.0.0:15432".into(),
                upstream: "database:5432".into(),
                enabled: true,
                service: Role::Database,
                listen_port: 15432,
            }]
        );
        assert_eq!(t.database_links(), [("db", 15432)]);
        assert_eq!(
            t.container(Role::LoadGenerator).unwrap().readiness,
            Readiness::NotStarted
        );
    }

    #[test]
    fn haproxy_config_snapshot() {
        let (plan, runs) = smoke();
        let t = topology(&plan, &runs[0], &Instance::for_tests(), &read).unwrap();
        insta::assert_snapshot!(t.haproxy_cfg);
    }

    #[test]
    fn topology_snapshot() {
        let (plan, runs) = smoke();
        let t = topology(&plan, &runs[1], &Instance::for_tests(), &read).unwrap();
        insta::assert_json_snapshot!(t);
    }

    #[test]
    fn the_gate_container_joins_the_run_as_a_client_of_the_balancer() {
        let (plan, runs) = smoke();
        let t = topology(&plan, &runs[0], &Instance::for_tests(), &read).unwrap();
        let argv = vec!["python3".to_string(), "/gate/gate.py".to_string()];
        let g = gate_container(&t, "feedbench/gate:dev", &argv, &[]);
        assert_eq!(g.name, "fb-smoke-abcdef01-feed-rs_ramp_r1-gate");
        assert_eq!(g.role.key(), "gate");
        assert_eq!(g.labels[LABEL_STUDY], "smoke");
        assert_eq!(g.labels[LABEL_RUN], "feed-rs/ramp/r1");
        assert_eq!(g.labels[LABEL_ROLE], "gate");
        assert_eq!(
            g.env,
            vec![(
                "FEEDBENCH_TARGET".to_string(),
                "http://balancer:8080".to_string()
            )]
        );
        assert_eq!(g.cmd.as_deref(), Some(argv.as_slice()));
        assert_eq!(g.image, "feedbench/gate:dev");
        let load = t.container(Role::LoadGenerator).unwrap();
        assert_eq!(
            (g.nano_cpus, g.memory_bytes),
            (load.nano_cpus, load.memory_bytes)
        );
    }

    #[test]
    fn the_gated_deployment_gives_every_replica_and_the_gate_the_gates_settings() {
        let (plan, runs) = smoke();
        let mut t = topology(&plan, &runs[0], &Instance::for_tests(), &read).unwrap();
        let before = t.clone();
        let room = vec![
            ("SECTION_BUDGET_MS".to_string(), "5000".to_string()),
            ("POOL_SIZE".to_string(), "3".to_string()),
        ];
        gated(&mut t, &room);
        let replicas: Vec<_> = t
            .containers
            .iter()
            .filter(|c| matches!(c.role, Role::Replica(_)))
            .collect();
        assert!(!replicas.is_empty());
        for r in &replicas {
            let get = |k: &str| {
                r.env
                    .iter()
                    .filter(|(n, _)| n == k)
                    .map(|(_, v)| v.as_str())
                    .collect::<Vec<_>>()
            };
            assert_eq!(get("SECTION_BUDGET_MS"), ["5000"]);
            // Replaced where the contender sets it, never doubled.
            assert_eq!(get("POOL_SIZE"), ["3"]);
        }
        // Nothing but the replicas changes.
        for (a, b) in t.containers.iter().zip(&before.containers) {
            if !matches!(a.role, Role::Replica(_)) {
                assert_eq!(a.env, b.env, "{}", a.name);
            }
        }
        let g = gate_container(&t, "feedbench/gate:dev", &[], &room);
        assert_eq!(
            g.env[1..],
            [
                (
                    "FEEDBENCH_SECTION_BUDGET_MS".to_string(),
                    "5000".to_string()
                ),
                ("FEEDBENCH_POOL_SIZE".to_string(), "3".to_string())
            ]
        );
    }

    #[test]
    fn a_topology_without_services_deploys_no_database_and_needs_no_cap_for_one() {
        let text = include_str!("../../../../tests/plans/valid/static-web.yaml");
        let ctx = Context {
            host_cores: None,
            exists: None,
        };
        let loaded = crate::plan::load_str("tests/plans/valid/static-web.yaml", text, &ctx)
            .expect("the static-web plan loads");
        assert!(loaded.plan.caps.database.is_none());
        for run in crate::plan::expand(&loaded.plan) {
            let t = topology(&loaded.plan, &run, &Instance::for_tests(), &read).unwrap();
            let roles: Vec<&str> = t.containers.iter().map(|c| c.role.label()).collect();
            assert_eq!(
                roles,
                [
                    "fault-proxy",
                    "replica",
                    "replica",
                    "balancer",
                    "load-generator"
                ],
                "{}",
                run.id
            );
            assert!(t.proxies.is_empty());
            assert_eq!(t.total_cpus, 0.25 + 2.0 * 0.25 + 0.25 + 0.5);
        }
    }

    #[test]
    fn a_database_without_its_cap_is_an_error_not_a_borrowed_cap() {
        let (mut plan, runs) = smoke();
        plan.caps.database = None;
        let e = topology(&plan, &runs[0], &Instance::for_tests(), &read).unwrap_err();
        assert!(
            matches!(e, TopologyError::MissingCap { ref service, role: "database", .. } if service == "database"),
            "{e}"
        );
    }

    #[test]
    fn slugs_are_safe_names() {
        assert_eq!(
            run_slug("feed-rs.indexed/baseline+db-cut/r2"),
            "feed-rs.indexed_baseline_db-cut_r2"
        );
    }
}
