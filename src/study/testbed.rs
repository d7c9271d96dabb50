//! The engine as the study runner sees it: where runs and gates are carried out. The real
//! testbed is Docker (`DockerTestbed`: the runtime, `run::gate`, `run::execute`); tests of
//! the runner's policy use a fake. The seam is at the level of a whole run: how a run is
//! deployed, loaded and measured is the executor's, and is tested against the real engine.

use std::collections::BTreeMap;
use std::path::Path;

use crate::engine::placement::Placement;
use crate::engine::runtime::Runtime;
use crate::engine::runtime::{RuntimeError, Scope};
use crate::ledger::manifest::{Cpu, EngineHost, Host, Image};
use crate::plan::{LoadedPlan, RunSpec};
use crate::run::execute::{execute, ExecuteError, Saturations};
use crate::run::gate::{run_gate, GateError, GateOutcome};
use crate::rundir::events::{RunEvent, Stamp};
use crate::rundir::record::RunRecord;
use crate::spec::topology::{Instance, RunTopology};

/// Receives a run's (or a gate's) events as they happen: the run's id, when, what.
pub type Observer<'a> = &'a mut dyn FnMut(&str, Stamp, &RunEvent);

#[derive(Debug, thiserror::Error)]
pub enum TestbedError {
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    #[error(transparent)]
    Gate(#[from] GateError),
    #[error(transparent)]
    Execute(#[from] ExecuteError),
    /// A testbed other than Docker failed, in its own words.
    #[error("{0}")]
    Other(String),
}

/// Where a study's runs are carried out.
#[allow(async_fn_in_trait)]
pub trait Testbed {
    /// The facts of the system engine's host, for every manifest.
    async fn host(&self) -> Result<Host, TestbedError>;
    /// Every engine the runs use (the system's first) and its host's facts.
    async fn engines(&self) -> Result<Vec<EngineHost>, TestbedError> {
        Ok(vec![EngineHost {
            name: crate::engine::placement::LOCAL.to_string(),
            host: self.host().await?,
        }])
    }
    /// Removes every container, network and volume of the study `instance`; returns how
    /// many containers.
    async fn reap(&self, instance: &Instance) -> Result<usize, TestbedError>;
    /// The image of each container of `topo`, with its id as the engine has it now.
    async fn images(&self, topo: &RunTopology) -> Vec<Image>;
    /// Deploys `run`'s topology and runs its contender's gate against it.
    async fn gate(
        &self,
        loaded: &LoadedPlan,
        run: &RunSpec,
        instance: &Instance,
        observer: Observer<'_>,
    ) -> Result<GateOutcome, TestbedError>;
    /// Executes one run, deployed as `topo`, into `dir` (which must not exist).
    #[allow(clippy::too_many_arguments)]
    async fn execute(
        &self,
        loaded: &LoadedPlan,
        run: &RunSpec,
        topo: &RunTopology,
        measured: &Saturations,
        dir: &Path,
        observer: Observer<'_>,
    ) -> Result<RunRecord, TestbedError>;
}

/// Docker engines, through the one runtime module: the system engine, and the load
/// generator's own when the plan places it apart.
pub struct DockerTestbed {
    pub placement: Placement,
    /// Each engine's processor, by the engine's name, read once as the study begins.
    cpus: BTreeMap<String, Cpu>,
}

impl DockerTestbed {
    /// The testbed of `placement`, each of its engines' processor read by a throwaway
    /// container of `image` (the load generator's, which every engine of it holds) of the
    /// study's `instance`. A processor that cannot be read is not recorded, and said in the
    /// warnings returned: the runs go on, their manifests without it.
    pub async fn new(
        placement: Placement,
        image: &str,
        (study, instance): (&str, &Instance),
    ) -> (Self, Vec<String>) {
        let (mut cpus, mut warnings) = (BTreeMap::new(), Vec::new());
        for (name, rt) in placement.engines() {
            match rt.cpu(image, study, instance).await {
                Ok(cpu) => {
                    cpus.insert(name.to_string(), cpu);
                }
                Err(e) => warnings.push(format!(
                    "engine `{name}`: the host's processor is not recorded in the manifests: {e}"
                )),
            }
        }
        (DockerTestbed { placement, cpus }, warnings)
    }
}

impl Testbed for DockerTestbed {
    async fn host(&self) -> Result<Host, TestbedError> {
        let system = &self.placement.system_name;
        host_of(&self.placement.system, self.cpus.get(system)).await
    }

    /// Every engine of the placement: a killed coordinator may have left containers on
    /// each.
    async fn engines(&self) -> Result<Vec<EngineHost>, TestbedError> {
        let mut out = Vec::new();
        for (name, rt) in self.placement.engines() {
            out.push(EngineHost {
                name: name.to_string(),
                host: host_of(rt, self.cpus.get(name)).await?,
            });
        }
        Ok(out)
    }

    async fn reap(&self, instance: &Instance) -> Result<usize, TestbedError> {
        let mut n = 0;
        for (_, rt) in self.placement.engines() {
            n += rt.clean(&Scope::instance(instance)).await?.containers.len();
        }
        Ok(n)
    }

    async fn images(&self, topo: &RunTopology) -> Vec<Image> {
        let mut out = Vec::new();
        for c in &topo.containers {
            out.push(Image {
                role: c.role.key(),
                container: c.name.clone(),
                image: c.image.clone(),
                image_id: self.placement.of(c.role).image_id(&c.image).await,
                engine: Some(self.placement.name_of(c.role).to_string()),
            });
        }
        out
    }

    async fn gate(
        &self,
        loaded: &LoadedPlan,
        run: &RunSpec,
        instance: &Instance,
        observer: Observer<'_>,
    ) -> Result<GateOutcome, TestbedError> {
        Ok(run_gate(&self.placement.system, loaded, run, instance, observer).await?)
    }

    async fn execute(
        &self,
        loaded: &LoadedPlan,
        run: &RunSpec,
        topo: &RunTopology,
        measured: &Saturations,
        dir: &Path,
        observer: Observer<'_>,
    ) -> Result<RunRecord, TestbedError> {
        Ok(execute(&self.placement, loaded, run, topo, measured, dir, observer).await?)
    }
}

/// An engine's host as a manifest records it, with its processor as read.
async fn host_of(rt: &Runtime, cpu: Option<&Cpu>) -> Result<Host, TestbedError> {
    let facts = rt.facts().await?;
    Ok(Host {
        cores: facts.cores,
        memory_bytes: facts.memory_bytes,
        kernel: facts.kernel,
        cgroup_version: facts.cgroup_version,
        engine_version: facts.engine_version,
        cpu: cpu.cloned(),
    })
}
