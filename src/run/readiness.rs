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

    /// Its attempts, read back from the fault proxy, and whether it still ran.
    pub(super) async fn attempts(&self, fp: Option<&FaultProxy>) -> Attempts {
        self.started.clone()?;
        let fp = fp.ok_or("the fault proxy has no address")?;
        fp.probe(&self.server, &self.server)
            .await
            .map_err(|e| e.to_string())
    }
}

/// A probe's attempts and whether it was still running when read, or why there are none.
pub(super) type Attempts = Result<(bool, Vec<ReadinessRow>), String>;

/// readiness.csv written for a run whose fault restarts a replica: the probe's attempts, or
/// none when the replica was not started again while the load ran (the run ended inside
/// the fault's window); a warning says why a probe gave no file, or was still running.
pub(super) fn keep(dir: &Path, attempts: Option<Attempts>, record: &mut RunRecord) {
    let rows = match attempts {
        None => Ok(Vec::new()),
        Some(Ok((running, rows))) => {
            if running {
                record.warnings.push(
                    "the restarted replica's readiness probe was still running when read: its attempts so far are kept".into(),
                );
            }
            Ok(rows)
        }
        Some(Err(e)) => Err(e),
    };
    let written = rows.and_then(|rows| {
        let text = render(&rows).map_err(|e| e.to_string())?;
        write(dir, rundir::READINESS_CSV, text.as_bytes()).map_err(|e| e.to_string())
    });
    if let Err(e) = written {
        record.warnings.push(format!(
            "no readiness probe of the restarted replica ({e}): its time_to_ready is not recorded"
        ));
    }
}
