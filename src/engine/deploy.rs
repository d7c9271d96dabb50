//! Deploying a run's topology: network, containers in stages, readiness with a deadline,
//! and teardown that always runs. On a readiness failure every container's log is saved and
//! the error names the role that failed and why.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures_util::future::join_all;

use super::balancer;
use super::fault_proxy::FaultProxy;
use super::http::request;
use super::placement::Placement;
use super::runtime::{Runtime, RuntimeError};
use crate::spec::topology::{
    Attach, ContainerSpec, Readiness, Role, RunTopology, FAULT_PROXY_API_PORT,
};
use feedbench_core::spec::placement::extra_networks;
use feedbench_core::spec::seed;

#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    #[error(transparent)]
    Seed(#[from] super::seed::SeedError),
    #[error(transparent)]
    Oversubscribed(#[from] crate::spec::topology::Oversubscribed),
    #[error("the {role} (`{container}`) was not ready: {reason}{}", .logs.as_ref().map(|p| format!("; container logs are in {}", p.display())).unwrap_or_default())]
    NotReady {
        role: String,
        container: String,
        reason: String,
        logs: Option<PathBuf>,
    },
}

/// A deployed run: where each container is.
#[derive(Debug, Clone)]
pub struct Deployed {
    pub addresses: HashMap<Role, IpAddr>,
    /// Where the coordinator reaches a role's port when the run's network is out of its
    /// reach (`Placement::control`): published at the system engine's address.
    pub published: HashMap<(Role, u16), SocketAddr>,
    pub ready_after: Duration,
    /// The snapshot the database started from, when it did.
    pub snapshot: Option<seed::Snapshot>,
}

impl Deployed {
    /// Where the coordinator reaches `role`'s `port`: where it is published for the
    /// coordinator, else the container's address on the run's network.
    pub fn addr(&self, role: Role, port: u16) -> Option<SocketAddr> {
        if let Some(at) = self.published.get(&(role, port)) {
            return Some(*at);
        }
        self.addresses
            .get(&role)
            .map(|ip| SocketAddr::new(*ip, port))
    }
}

const POLL: Duration = Duration::from_millis(100);

/// How a database seeded by init scripts starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seeding {
    /// From a copy of its seeded snapshot (`engine::seed`), seeded once per digest.
    Snapshot,
    /// Running its init scripts, as the image does on an empty data directory.
    Scripts,
}

/// Deploys `topology` and waits until every started container is ready, within `deadline`;
/// its database starts from its seeded snapshot.
pub async fn deploy(
    rt: &Runtime,
    topology: &RunTopology,
    deadline: Duration,
    logs_dir: Option<&Path>,
) -> Result<Deployed, DeployError> {
    deploy_with(rt, topology, deadline, logs_dir, Seeding::Snapshot).await
}

/// [`deploy`], choosing how the database is seeded.
pub async fn deploy_with(
    rt: &Runtime,
    topology: &RunTopology,
    deadline: Duration,
    logs_dir: Option<&Path>,
    seeding: Seeding,
) -> Result<Deployed, DeployError> {
    let placement = Placement::one(rt.clone());
    deploy_placed(&placement, topology, deadline, logs_dir, seeding).await
}

/// Deploys a topology as placed (`Placement::topology`): each container on its role's
/// engine, the run's networks on the system's. Containers of a stage start together; a
/// stage starts when the one before is ready.
pub async fn deploy_placed(
    placement: &Placement,
    topology: &RunTopology,
    deadline: Duration,
    logs_dir: Option<&Path>,
    seeding: Seeding,
) -> Result<Deployed, DeployError> {
    let rt = &placement.system;
    let started = Instant::now();
    let until = started + deadline;
    let labels = topology.labels.clone().into_iter().collect();
    rt.ensure_network(&topology.network, &labels).await?;
    for edge in extra_networks(topology) {
        rt.ensure_edge_network(&edge, &labels).await?;
    }
    let prepared = match seeding {
        Seeding::Snapshot => super::seed::prepare(rt, topology, until).await?,
        Seeding::Scripts => None,
    };
    let specs: Vec<ContainerSpec> = topology
        .containers
        .iter()
        .map(|c| {
            let mut c = c.clone();
            if let Some((_, data_dir)) = prepared.as_ref().filter(|_| seed::seedable(&c)) {
                seed::mount_copy(&mut c, data_dir);
            }
            c
        })
        .collect();
    for r in join_all(
        specs
            .iter()
            .map(|c| placement.of(c.role).create(c, &topology.network)),
    )
    .await
    {
        r?;
    }
    let mut addresses = HashMap::new();
    let mut published = HashMap::new();
    let last_stage = topology
        .containers
        .iter()
        .map(|c| c.stage)
        .max()
        .unwrap_or(0);
    for stage in 0..=last_stage {
        let members: Vec<&ContainerSpec> = topology
            .containers
            .iter()
            .filter(|c| c.stage == stage && c.readiness != Readiness::NotStarted)
            .collect();
        for r in join_all(members.iter().map(|c| placement.of(c.role).start(&c.name))).await {
            r?;
        }
        let results = join_all(members.iter().map(|c| async {
            let on = placement.of(c.role);
            let ip = wait_address(on, c, &topology.network, until).await?;
            // Published for the coordinator: read back once the container runs.
            let mut at = HashMap::new();
            if let (Some(_), Attach::Published { ports, .. }) = (placement.control, &c.attach) {
                for port in ports {
                    let a = on
                        .published(&c.name, *port)
                        .await
                        .map_err(|e| (c.name.clone(), e.to_string()))?;
                    at.insert(*port, a);
                }
            }
            wait_ready(on, c, ip, &at, until).await?;
            Ok::<_, (String, String)>((c.role, ip, at))
        }))
        .await;
        for r in results {
            match r {
                Ok((role, ip, at)) => {
                    addresses.insert(role, ip);
                    published.extend(at.into_iter().map(|(port, a)| ((role, port), a)));
                }
                Err((container, reason)) => {
                    return Err(not_ready(placement, topology, &container, reason, logs_dir).await)
                }
            }
        }
        // The fault proxy is up: create the links before any replica tries to use them.
        let api = published
            .get(&(Role::FaultProxy, FAULT_PROXY_API_PORT))
            .copied()
            .or_else(|| {
                addresses
                    .get(&Role::FaultProxy)
                    .map(|ip| SocketAddr::new(*ip, FAULT_PROXY_API_PORT))
            });
        if let Some(addr) = api.filter(|_| stage == 0) {
            let fp = FaultProxy { addr };
            let name = topology
                .container(Role::FaultProxy)
                .map(|c| c.name.clone())
                .unwrap_or_default();
            if let Err(e) = fp.populate(&topology.proxies).await {
                return Err(not_ready(placement, topology, &name, e.to_string(), logs_dir).await);
            }
        }
    }
    Ok(Deployed {
        addresses,
        published,
        ready_after: started.elapsed(),
        snapshot: prepared.map(|p| p.0),
    })
}

async fn wait_address(
    rt: &Runtime,
    c: &ContainerSpec,
    network: &str,
    until: Instant,
) -> Result<IpAddr, (String, String)> {
    loop {
        match rt.address(&c.name, network).await {
            Ok(ip) => return Ok(ip),
            Err(e) if Instant::now() >= until => return Err((c.name.clone(), e.to_string())),
            Err(_) => tokio::time::sleep(POLL).await,
        }
    }
}

/// Polls a container's readiness until it holds, the container exits, or time runs out: on
/// its port where `published` has it for the coordinator, else at `ip` on the run's network.
async fn wait_ready(
    rt: &Runtime,
    c: &ContainerSpec,
    ip: IpAddr,
    published: &HashMap<u16, SocketAddr>,
    until: Instant,
) -> Result<(), (String, String)> {
    let fail = |reason: String| (c.name.clone(), reason);
    let at = |port: u16| {
        published
            .get(&port)
            .copied()
            .unwrap_or(SocketAddr::new(ip, port))
    };
    loop {
        let outcome: Result<(), String> = match &c.readiness {
            Readiness::NotStarted => return Ok(()),
            Readiness::Command(argv) => match rt.exec(&c.name, argv).await {
                Ok((0, _)) => Ok(()),
                Ok((code, out)) => Err(format!(
                    "`{}` exited {code}: {}",
                    argv.join(" "),
                    out.trim()
                )),
                Err(e) => Err(e.to_string()),
            },
            Readiness::Tcp(port) => tokio::net::TcpStream::connect(at(*port))
                .await
                .map(|_| ())
                .map_err(|e| format!("TCP {}: {e}", at(*port))),
            Readiness::Http { port, path } => {
                match request(at(*port), "GET", path, None, Duration::from_secs(2)).await {
                    Ok(r) if r.status == 200 => Ok(()),
                    Ok(r) => Err(format!("GET {path} answered {}", r.status)),
                    Err(e) => Err(e.to_string()),
                }
            }
            Readiness::AllServersUp { port, servers } => {
                match balancer::stats(at(*port), Duration::from_secs(2)).await {
                    Ok(rows) => {
                        let down: Vec<String> = servers
                            .iter()
                            .filter(|s| !rows.iter().any(|r| &r.server == *s && r.status == "UP"))
                            .map(|s| {
                                let st = rows
                                    .iter()
                                    .find(|r| &r.server == s)
                                    .map(|r| format!("{} {}", r.status, r.check_status));
                                format!("{s} ({})", st.unwrap_or_else(|| "absent".into()))
                            })
                            .collect();
                        if down.is_empty() {
                            Ok(())
                        } else {
                            Err(format!("servers not UP: {}", down.join(", ")))
                        }
                    }
                    Err(e) => Err(e),
                }
            }
        };
        let last = match outcome {
            Ok(()) => return Ok(()),
            Err(reason) => reason,
        };
        match rt.state(&c.name).await {
            Ok((false, why)) => {
                return Err(fail(format!(
                    "the container stopped ({why}); last check: {last}"
                )))
            }
            Ok((true, _)) => {}
            Err(e) => return Err(fail(e.to_string())),
        }
        if Instant::now() >= until {
            return Err(fail(format!(
                "not ready before the deadline; last check: {last}"
            )));
        }
        tokio::time::sleep(POLL).await;
    }
}

async fn not_ready(
    placement: &Placement,
    topology: &RunTopology,
    container: &str,
    reason: String,
    logs_dir: Option<&Path>,
) -> DeployError {
    let role = topology
        .containers
        .iter()
        .find(|c| c.name == container)
        .map(|c| c.role.key())
        .unwrap_or_else(|| container.to_string());
    let logs = match logs_dir {
        Some(dir) => save_logs_placed(placement, topology, dir)
            .await
            .ok()
            .map(|_| dir.to_path_buf()),
        None => None,
    };
    DeployError::NotReady {
        role,
        container: container.to_string(),
        reason,
        logs,
    }
}

/// Writes every container's log to `dir/<role>.log`.
pub async fn save_logs(rt: &Runtime, topology: &RunTopology, dir: &Path) -> std::io::Result<()> {
    save_logs_placed(&Placement::one(rt.clone()), topology, dir)
        .await
        .map(|_| ())
}

/// What [`save_logs_placed`] read: the roles whose logs the engine would not give, and the
/// balancer's log as written, which health transitions are parsed from.
#[derive(Debug, Default)]
pub struct SavedLogs {
    pub unread: Vec<Role>,
    pub balancer: Option<String>,
}

/// [`save_logs`], each log read from its container's engine. A log the engine would not give
/// is written as `(no log: why)` and its role named in `unread`, so that nothing is read
/// from such a file as if it were the container's (a balancer's log with no lines is no
/// health transition).
pub async fn save_logs_placed(
    placement: &Placement,
    topology: &RunTopology,
    dir: &Path,
) -> std::io::Result<SavedLogs> {
    std::fs::create_dir_all(dir)?;
    let mut saved = SavedLogs::default();
    for c in &topology.containers {
        let text = match placement.of(c.role).logs(&c.name).await {
            Ok(text) => text,
            Err(e) => {
                saved.unread.push(c.role);
                format!("(no log: {e})\n")
            }
        };
        std::fs::write(dir.join(format!("{}.log", c.role.key())), &text)?;
        if c.role == Role::Balancer && !saved.unread.contains(&Role::Balancer) {
            saved.balancer = Some(text);
        }
    }
    Ok(saved)
}

/// Removes the run's containers, network, and its database's copy of the snapshot. Every
/// removal is tried; the first error is returned after all were attempted.
pub async fn teardown(rt: &Runtime, topology: &RunTopology) -> Result<(), RuntimeError> {
    teardown_placed(&Placement::one(rt.clone()), topology).await
}

/// [`teardown`], each container removed from its engine, then the run's networks.
pub async fn teardown_placed(
    placement: &Placement,
    topology: &RunTopology,
) -> Result<(), RuntimeError> {
    let rt = &placement.system;
    let results = join_all(
        topology
            .containers
            .iter()
            .map(|c| placement.of(c.role).remove_container(&c.name)),
    )
    .await;
    let mut networks = vec![rt.remove_network(&topology.network).await];
    for edge in extra_networks(topology) {
        networks.push(rt.remove_network(&edge).await);
    }
    // The database's copy of its snapshot, if it had one (absent is fine).
    let volumes = join_all(
        topology
            .containers
            .iter()
            .filter(|c| seed::seedable(c))
            .map(|c| async move { rt.remove_volume(&seed::run_volume(&c.name)).await }),
    )
    .await;
    results.into_iter().chain(networks).chain(volumes).collect()
}
