//! A restarted replica's readiness probe: started on the fault proxy, inside the run's
//! network, as the replica is started again; read back into readiness.csv once the load
//! has ended (docs/results.md). A fault proxy without probes (Toxiproxy itself) gives a
//! warning and no file: the run's `time_to_ready` is then not recorded.

use std::path::Path;
use std::time::Duration;

use super::execute::write;
use crate::engine::fault_proxy::{FaultProxy, ProbeSpec};
use crate::rundir;
use crate::rundir::readiness::{render, ReadinessRow};
use crate::rundir::record::RunRecord;
use crate::spec::topology::{Readiness, Role, RunTopology};

/// How often the replica is asked, and how long one answer may take.
const INTERVAL: Duration = Duration::from_millis(100);
const TIMEOUT: Duration = Duration::from_secs(1);

/// A probe started, or why none could be.
pub(super) struct ReadinessProbe {
    server: String,
    started: Result<(), String>,
}

impl ReadinessProbe {
    /// Starts probing the replica `role` for `observe` (the fault's observe window).
    pub(super) async fn start(
        fp: Option<&FaultProxy>,
        topo: &RunTopology,
        role: Role,
        observe: Duration,
    ) -> ReadinessProbe {
        let server = role.key();
        let started = match (fp, topo.container(role)) {
            (None, _) => Err("the fault proxy has no address".to_string()),
            (_, None) => Err(format!("the run has no {server}")),
            (Some(fp), Some(c)) => match &c.readiness {
                Readiness::Http { port, path } => fp
                    .start_probe(&ProbeSpec {
                        name: &server,
                        host: &c.name,
                        port: *port,
                        path,
                        interval: INTERVAL,
                        timeout: TIMEOUT,
                        for_: observe,
                    })
                    .await
                    .map_err(|e| e.to_string()),
                _ => Err(format!("{server} has no HTTP readiness path")),
            },
        };
        ReadinessProbe { server, started }
    }

    /// Its attempts, read back from the fault proxy.
    pub(super) async fn attempts(
        &self,
        fp: Option<&FaultProxy>,
    ) -> Result<Vec<ReadinessRow>, String> {
        self.started.clone()?;
        let fp = fp.ok_or("the fault proxy has no address")?;
        let (_, rows) = fp
            .probe(&self.server, &self.server)
            .await
            .map_err(|e| e.to_string())?;
        Ok(rows)
    }
}

/// readiness.csv written from the attempts, or a warning saying why there is none.
pub(super) fn keep(
    dir: &Path,
    attempts: Result<Vec<ReadinessRow>, String>,
    record: &mut RunRecord,
) {
    let written = attempts.and_then(|rows| {
        let text = render(&rows).map_err(|e| e.to_string())?;
        write(dir, rundir::READINESS_CSV, text.as_bytes()).map_err(|e| e.to_string())
    });
    if let Err(e) = written {
        record.warnings.push(format!(
            "no readiness probe of the restarted replica ({e}): its time_to_ready is not recorded"
        ));
    }
}
