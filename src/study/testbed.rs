//! The engine as the study runner sees it: where runs and gates are carried out. The real
//! testbed is Docker (`DockerTestbed`: the runtime, `run::gate`, `run::execute`); tests of
//! the runner's policy use a fake. The seam is at the level of a whole run: how a run is
//! deployed, loaded and measured is the executor's, and is tested against the real engine.

use std::path::Path;

use crate::engine::runtime::{Runtime, RuntimeError};
use crate::engine::topology::RunTopology;
use crate::ledger::manifest::{Host, Image};
use crate::plan::{LoadedPlan, RunSpec};
use crate::run::events::{RunEvent, Stamp};
use crate::run::execute::{execute, ExecuteError, Saturations};
use crate::run::gate::{run_gate, GateError, GateOutcome};
use crate::rundir::record::RunRecord;

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
    /// The facts of the host the runs land on, for every manifest.
    async fn host(&self) -> Result<Host, TestbedError>;
    /// Removes every container and network of `study`; returns how many containers.
    async fn reap(&self, study: &str) -> Result<usize, TestbedError>;
    /// The image of each container of `topo`, with its id as the engine has it now.
    async fn images(&self, topo: &RunTopology) -> Vec<Image>;
    /// Deploys `run`'s topology and runs its contender's gate against it.
    async fn gate(
        &self,
        loaded: &LoadedPlan,
        run: &RunSpec,
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

/// The Docker engine, through the one runtime module.
pub struct DockerTestbed {
    pub rt: Runtime,
}

impl Testbed for DockerTestbed {
    async fn host(&self) -> Result<Host, TestbedError> {
        let facts = self.rt.facts().await?;
        Ok(Host {
            cores: facts.cores,
            memory_bytes: facts.memory_bytes,
            kernel: facts.kernel,
            cgroup_version: facts.cgroup_version,
            engine_version: facts.engine_version,
        })
    }

    async fn reap(&self, study: &str) -> Result<usize, TestbedError> {
        Ok(self.rt.clean(Some(study)).await?.containers.len())
    }

    async fn images(&self, topo: &RunTopology) -> Vec<Image> {
        let mut out = Vec::new();
        for c in &topo.containers {
            out.push(Image {
                role: c.role.key(),
                container: c.name.clone(),
                image: c.image.clone(),
                image_id: self.rt.image_id(&c.image).await,
            });
        }
        out
    }

    async fn gate(
        &self,
        loaded: &LoadedPlan,
        run: &RunSpec,
        observer: Observer<'_>,
    ) -> Result<GateOutcome, TestbedError> {
        Ok(run_gate(&self.rt, loaded, run, observer).await?)
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
        Ok(execute(&self.rt, loaded, run, topo, measured, dir, observer).await?)
    }
}
