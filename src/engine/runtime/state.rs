//! What the monitors ask the engine about a container: its id, main process and state, for
//! finding its counters and for explaining a gap.

use bollard::errors::Error as DockerError;

use super::{Runtime, RuntimeError};

/// A container as the engine sees it now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineState {
    pub id: String,
    /// Host PID of the main process; 0 when not running.
    pub pid: i64,
    pub running: bool,
    /// The engine saw an OOM kill in the container's current (or last) life.
    pub oom_killed: bool,
    /// `status exited, exit code 137, killed out of memory`, or `no such container`.
    pub detail: String,
}

impl Runtime {
    /// Inspects `name`; a container that does not exist is not running rather than an error.
    pub async fn container_state(&self, name: &str) -> Result<EngineState, RuntimeError> {
        inspect(self, name)
            .await
            .map_err(|source| RuntimeError::Inspect {
                name: name.to_string(),
                source,
            })
    }
}

async fn inspect(rt: &Runtime, name: &str) -> Result<EngineState, DockerError> {
    match rt.docker.inspect_container(name, None).await {
        Ok(c) => {
            let s = c.state.unwrap_or_default();
            let running = s.running.unwrap_or(false);
            let oom_killed = s.oom_killed.unwrap_or(false);
            let detail = format!(
                "status {}, exit code {}{}",
                s.status.map(|x| x.to_string()).unwrap_or_default(),
                s.exit_code.unwrap_or(0),
                if oom_killed {
                    ", killed out of memory"
                } else {
                    ""
                }
            );
            Ok(EngineState {
                id: c.id.unwrap_or_default(),
                pid: s.pid.unwrap_or(0),
                running,
                oom_killed,
                detail,
            })
        }
        Err(DockerError::DockerResponseServerError {
            status_code: 404, ..
        }) => Ok(EngineState {
            detail: "no such container".into(),
            ..Default::default()
        }),
        Err(e) => Err(e),
    }
}
