//! Where a run's containers go: every role on the system engine, and the load generator on
//! an engine of its own when the plan places it apart (`spec::placement`). Deploying,
//! sampling, following, tearing down and reaping ask this which engine a container is on.
//! A system engine other than the coordinator's is reached through ports published at its
//! stated address (`control`).

use std::net::IpAddr;

use super::runtime::Runtime;
use crate::spec::topology::{Role, RunTopology};

/// The engines of one run, by the names the engines file gives them.
#[derive(Clone)]
pub struct Placement {
    pub system: Runtime,
    pub system_name: String,
    pub apart: Option<Apart>,
    /// Set when the coordinator cannot reach the system engine's run networks (it is not
    /// the engine feedbench runs beside): the system engine's stated address, at which the
    /// ports the coordinator probes and polls are published (`spec::placement::controlled`).
    pub control: Option<IpAddr>,
    /// Why the CPU of the host feedbench runs on is not the run's alone to judge (its
    /// system engine is another's, or the study's groups run at once); `None` when it is.
    /// Then no host.csv is written (docs/results.md, "host.csv").
    pub host_shared: Option<String>,
}

/// The load generator's own engine.
#[derive(Clone)]
pub struct Apart {
    pub rt: Runtime,
    pub name: String,
    /// The system engine's stated address, at which the balancer's frontend is published.
    pub address: IpAddr,
}

/// The name a run's one engine has when no engines file names it.
pub const LOCAL: &str = feedbench_core::engines::LOCAL_NAME;

impl Placement {
    /// Every role on `rt`.
    pub fn one(rt: Runtime) -> Self {
        Placement {
            system: rt,
            system_name: LOCAL.to_string(),
            apart: None,
            control: None,
            host_shared: None,
        }
    }

    /// The engine a role's container runs on.
    pub fn of(&self, role: Role) -> &Runtime {
        match (&self.apart, role) {
            (Some(a), Role::LoadGenerator) => &a.rt,
            _ => &self.system,
        }
    }

    /// The name of the engine a role's container runs on.
    pub fn name_of(&self, role: Role) -> &str {
        match (&self.apart, role) {
            (Some(a), Role::LoadGenerator) => &a.name,
            _ => &self.system_name,
        }
    }

    /// Every engine of the run, the system's first.
    pub fn engines(&self) -> Vec<(&str, &Runtime)> {
        let mut out = vec![(self.system_name.as_str(), &self.system)];
        if let Some(a) = &self.apart {
            out.push((a.name.as_str(), &a.rt));
        }
        out
    }

    /// Whether a role's container is on an engine other than the coordinator's: sampled
    /// from its cgroup files only where this host has them, else through its engine's API.
    pub fn is_remote(&self, role: Role) -> bool {
        match role {
            Role::LoadGenerator if self.apart.is_some() => true,
            _ => self.control.is_some(),
        }
    }

    /// The topology as placed: unchanged on one engine; published and host-networked
    /// where the load generator runs apart; its probed ports published where the system
    /// engine is not the coordinator's.
    pub fn topology(&self, topology: &RunTopology) -> RunTopology {
        use feedbench_core::spec::placement::{apart, controlled};
        let placed = match &self.apart {
            Some(a) => apart(topology, a.address),
            None => topology.clone(),
        };
        match self.control {
            Some(address) => controlled(&placed, address),
            None => placed,
        }
    }
}
