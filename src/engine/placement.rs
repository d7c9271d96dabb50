//! Where a run's containers go: every role on the system engine, and the load generator on
//! an engine of its own when the plan places it apart (`spec::placement`). Deploying,
//! sampling, following, tearing down and reaping ask this which engine a container is on.

use std::net::IpAddr;

use super::runtime::Runtime;
use super::topology::{Role, RunTopology};

/// The engines of one run, by the names the engines file gives them.
#[derive(Clone)]
pub struct Placement {
    pub system: Runtime,
    pub system_name: String,
    pub apart: Option<Apart>,
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

    /// The topology as placed: unchanged on one engine; published and host-networked
    /// where the load generator runs apart.
    pub fn topology(&self, topology: &RunTopology) -> RunTopology {
        match &self.apart {
            Some(a) => feedbench_core::spec::placement::apart(topology, a.address),
            None => topology.clone(),
        }
    }
}
