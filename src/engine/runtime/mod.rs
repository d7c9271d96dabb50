//! The runtime: the one module that talks to the Docker engine about containers and
//! networks. One error variant per operation, naming what it acted on; 404 and 409 are
//! handled deliberately so that redeploys, resumes and cleanups are idempotent.

mod clean;
mod connect;
mod host;
mod inflight;
mod publish;
mod state;
mod stats;
mod volumes;

pub use connect::local_client;
pub use state::EngineState;
pub use stats::ApiReading;

use std::collections::HashMap;
use std::net::IpAddr;

use bollard::container::{
    Config, CreateContainerOptions, KillContainerOptions, LogOutput, LogsOptions,
    RemoveContainerOptions, StartContainerOptions, UploadToContainerOptions, WaitContainerOptions,
};
use bollard::errors::Error as DockerError;
use bollard::exec::{CreateExecOptions, StartExecResults};
use bollard::models::{EndpointSettings, HostConfig};
use bollard::network::CreateNetworkOptions;
use bollard::Docker;
use futures_util::StreamExt;

use crate::spec::topology::{Attach, ContainerSpec, FileSpec, LABEL_STUDY};

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("cannot reach the Docker engine: {0}")]
    Connect(#[source] DockerError),
    #[error("cannot reach engine `{}` at {}: {}", .0.engine, .0.endpoint, .0.reason)]
    Engine(Box<Unreachable>),
    #[error("cannot read the engine's facts: {0}")]
    Info(#[source] DockerError),
    #[error("cannot create network `{name}`: {source}")]
    CreateNetwork { name: String, source: DockerError },
    #[error("network `{name}` exists but does not belong to study `{study}`; remove it or rename the study")]
    ForeignNetwork { name: String, study: String },
    #[error("cannot create container `{name}` from image `{image}`: {source}")]
    CreateContainer {
        name: String,
        image: String,
        source: Box<DockerError>,
    },
    #[error("image `{image}` for container `{name}` is not in the engine; build it with `feedbench images build` (images cannot be pulled here)")]
    MissingImage { name: String, image: String },
    #[error("cannot copy files into container `{name}`: {source}")]
    Upload { name: String, source: DockerError },
    #[error("cannot start container `{name}`: {source}")]
    Start { name: String, source: DockerError },
    #[error("cannot inspect container `{name}`: {source}")]
    Inspect { name: String, source: DockerError },
    #[error("cannot inspect image `{image}`: {source}")]
    InspectImage { image: String, source: DockerError },
    #[error("cannot attach container `{name}` to network `{network}`: {source}")]
    Join {
        name: String,
        network: String,
        source: Box<DockerError>,
    },
    #[error("cannot read the host's boot id with a container of `{image}`: {said}")]
    BootId { image: String, said: String },
    #[error("cannot read the host's processor with a container of `{image}` (it must have `sh` and `cat`): {said}")]
    HostCpu { image: String, said: String },
    #[error("container `{name}` does not publish port {port}")]
    NotPublished { name: String, port: u16 },
    #[error("container `{name}` has no address on network `{network}`")]
    NoAddress { name: String, network: String },
    #[error("cannot run {argv:?} in container `{name}`: {source}")]
    Exec {
        name: String,
        argv: Vec<String>,
        source: Box<DockerError>,
    },
    #[error("cannot wait for container `{name}` to exit: {source}")]
    Wait { name: String, source: DockerError },
    #[error("cannot read the logs of container `{name}`: {source}")]
    Logs { name: String, source: DockerError },
    #[error("cannot send {signal} to container `{name}`: {source}")]
    Kill {
        name: String,
        signal: String,
        source: Box<DockerError>,
    },
    #[error("cannot {what} container `{name}`: {source}")]
    Freezer {
        name: String,
        what: &'static str,
        source: DockerError,
    },
    #[error("cannot remove container `{name}`: {source}")]
    RemoveContainer { name: String, source: DockerError },
    #[error("cannot remove network `{name}`: {source}")]
    RemoveNetwork { name: String, source: DockerError },
    #[error("cannot remove volume `{name}`: {source}")]
    RemoveVolume { name: String, source: DockerError },
    #[error("cannot create volume `{name}`: {source}")]
    CreateVolume { name: String, source: DockerError },
    #[error("cannot inspect volume `{name}`: {source}")]
    InspectVolume { name: String, source: DockerError },
    #[error("cannot copy `{path}` out of container `{name}`: {source}")]
    Download {
        name: String,
        path: String,
        source: Box<DockerError>,
    },
    #[error("cannot list what carries feedbench's labels: {0}")]
    List(#[source] DockerError),
}

/// An engine of the engines file that could not be reached, and why. This one and the
/// engine's errors beside two names are boxed in `RuntimeError`, which every deploy, run and
/// study error carries: bollard's error grew with its TLS client.
#[derive(Debug)]
pub struct Unreachable {
    pub engine: String,
    pub endpoint: String,
    pub reason: String,
}

fn status(e: &DockerError) -> Option<u16> {
    match e {
        DockerError::DockerResponseServerError { status_code, .. } => Some(*status_code),
        _ => None,
    }
}

/// Facts about the engine's host that decide caps and go into run records.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineFacts {
    /// The engine's own id (`docker info`'s `ID`): what tells two engines apart, whatever
    /// address reaches them.
    pub id: String,
    pub cores: f64,
    pub memory_bytes: i64,
    pub engine_version: String,
    pub kernel: String,
    pub cgroup_version: String,
    /// Where the engine keeps layers, container writes, logs and volumes
    /// (`DockerRootDir`), as it names it; `None` when it names none.
    pub data_root: Option<String>,
}

pub use clean::{Found, Scope};
pub use feedbench_core::rundir::caps::Caps;

/// What a cleanup removed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Removed {
    pub containers: Vec<String>,
    pub networks: Vec<String>,
    pub volumes: Vec<String>,
}

/// How many passes `clean` makes at most, and the pause between two: about ten seconds for
/// the engine to finish what a killed feedbench had asked of it.
const CLEAN_PASSES: usize = 20;
const CLEAN_PAUSE: std::time::Duration = std::time::Duration::from_millis(500);

#[derive(Clone)]
pub struct Runtime {
    docker: Docker,
    /// The ssh tunnel an `ssh://` engine is reached through, kept open while any clone of
    /// the runtime is.
    _tunnel: Option<std::sync::Arc<connect::Tunnel>>,
    /// Making requests not yet answered, which `clean` waits for.
    inflight: inflight::InFlight,
}

impl Runtime {
    /// Connects to the engine named by `DOCKER_HOST`, or the local socket, with API 1.41
    /// negotiated down for older engines.
    pub async fn connect() -> Result<Self, RuntimeError> {
        let docker = connect::local_client(connect::TIMEOUT_S)
            .await
            .map_err(RuntimeError::Connect)?;
        docker.ping().await.map_err(RuntimeError::Connect)?;
        Ok(Runtime {
            docker,
            _tunnel: None,
            inflight: Default::default(),
        })
    }

    /// The engine client itself, for tests and benchmarks that set up containers no plan
    /// describes. feedbench's own modules go through the methods of `Runtime`.
    pub fn docker(&self) -> &Docker {
        &self.docker
    }

    pub async fn facts(&self) -> Result<EngineFacts, RuntimeError> {
        let info = self.docker.info().await.map_err(RuntimeError::Info)?;
        Ok(EngineFacts {
            id: info.id.unwrap_or_default(),
            cores: info.ncpu.unwrap_or(0) as f64,
            memory_bytes: info.mem_total.unwrap_or(0),
            engine_version: info.server_version.unwrap_or_default(),
            kernel: info.kernel_version.unwrap_or_default(),
            cgroup_version: info
                .cgroup_version
                .map(|v| v.to_string())
                .unwrap_or_default(),
            data_root: info.docker_root_dir.filter(|r| !r.is_empty()),
        })
    }

    /// Creates the run's private network, or reuses it if this study already made it. The
    /// network is internal: containers reach each other and nothing outside.
    pub async fn ensure_network(
        &self,
        name: &str,
        labels: &HashMap<String, String>,
    ) -> Result<(), RuntimeError> {
        self.ensure_bridge(name, labels, true).await
    }

    /// A run's bridge network, internal or (an edge network, `spec::placement`) not.
    async fn ensure_bridge(
        &self,
        name: &str,
        labels: &HashMap<String, String>,
        internal: bool,
    ) -> Result<(), RuntimeError> {
        let study = labels.get(LABEL_STUDY).cloned().unwrap_or_default();
        match self.docker.inspect_network::<String>(name, None).await {
            Ok(n) => {
                let owner = n.labels.as_ref().and_then(|l| l.get(LABEL_STUDY));
                return if owner == Some(&study) {
                    Ok(())
                } else {
                    Err(RuntimeError::ForeignNetwork {
                        name: name.into(),
                        study,
                    })
                };
            }
            Err(e) if status(&e) == Some(404) => {}
            Err(source) => {
                return Err(RuntimeError::CreateNetwork {
                    name: name.into(),
                    source,
                })
            }
        }
        let options = CreateNetworkOptions {
            name: name.to_string(),
            driver: "bridge".to_string(),
            internal,
            labels: labels.clone(),
            ..Default::default()
        };
        let docker = self.docker.clone();
        let request = async move { docker.create_network(options).await };
        match self.inflight.answered(request).await {
            Ok(_) => Ok(()),
            // Created concurrently by another call for the same run: fine.
            Err(e) if status(&e) == Some(409) => Ok(()),
            Err(source) => Err(RuntimeError::CreateNetwork {
                name: name.into(),
                source,
            }),
        }
    }

    /// Creates a container from its spec on `network`. A container of the same name left by
    /// an earlier attempt is removed first, so a redeploy always starts from the spec.
    pub async fn create(&self, spec: &ContainerSpec, network: &str) -> Result<(), RuntimeError> {
        self.remove_container(&spec.name).await?;
        let alias = spec.role.key();
        let aliased = |network: &str| {
            HashMap::from([(
                network.to_string(),
                EndpointSettings {
                    aliases: Some(vec![alias.clone()]),
                    ..Default::default()
                },
            )])
        };
        // Created on one network; a published container joins the run's network next,
        // under its role's name, before it starts (the API before 1.44 takes one network
        // at create).
        let (network_mode, endpoints, hostname, published) = match &spec.attach {
            Attach::Run => (
                network.to_string(),
                aliased(network),
                Some(alias.clone()),
                None,
            ),
            Attach::Published {
                network: edge,
                host_ip,
                ports,
            } => (
                edge.clone(),
                HashMap::from([(edge.clone(), EndpointSettings::default())]),
                Some(alias.clone()),
                Some((host_ip.clone(), ports.clone())),
            ),
            // The host's own name and network: no alias, no hostname of its own.
            Attach::Host => ("host".to_string(), HashMap::new(), None, None),
        };
        let config = Config {
            image: Some(spec.image.clone()),
            hostname,
            env: Some(spec.env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
            cmd: spec.cmd.clone(),
            labels: Some(spec.labels.clone().into_iter().collect()),
            exposed_ports: published.as_ref().map(|(_, ports)| {
                ports
                    .iter()
                    .map(|port| (format!("{port}/tcp"), HashMap::new()))
                    .collect()
            }),
            host_config: Some(HostConfig {
                nano_cpus: Some(spec.nano_cpus),
                memory: Some(spec.memory_bytes),
                // Equal to memory: no swap, so the cap is a hard limit.
                memory_swap: Some(spec.memory_bytes),
                network_mode: Some(network_mode),
                privileged: Some(false),
                binds: binds(&spec.mounts),
                port_bindings: published
                    .as_ref()
                    .map(|(ip, ports)| publish::binding(ip, ports)),
                ..Default::default()
            }),
            networking_config: Some(bollard::container::NetworkingConfig {
                endpoints_config: endpoints,
            }),
            ..Default::default()
        };
        let options = CreateContainerOptions {
            name: spec.name.clone(),
            platform: None,
        };
        match self.create_container(options, config).await {
            Ok(()) => {}
            Err(e) if status(&e) == Some(404) => {
                return Err(RuntimeError::MissingImage {
                    name: spec.name.clone(),
                    image: spec.image.clone(),
                })
            }
            Err(source) => {
                return Err(RuntimeError::CreateContainer {
                    name: spec.name.clone(),
                    image: spec.image.clone(),
                    source: Box::new(source),
                })
            }
        }
        if published.is_some() {
            self.join(&spec.name, network, &alias).await?;
        }
        if !spec.files.is_empty() {
            self.upload(&spec.name, &spec.files).await?;
        }
        Ok(())
    }

    /// Creates a container, carried to the engine's answer even if the caller is dropped.
    async fn create_container(
        &self,
        options: CreateContainerOptions<String>,
        config: Config<String>,
    ) -> Result<(), DockerError> {
        let docker = self.docker.clone();
        let request = async move { docker.create_container(Some(options), config).await };
        self.inflight.answered(request).await.map(|_| ())
    }

    /// Copies files into a container (created or running) as one tar at `/`.
    pub async fn upload(&self, name: &str, files: &[FileSpec]) -> Result<(), RuntimeError> {
        let tar = files_tar(files);
        let options = UploadToContainerOptions {
            path: "/".to_string(),
            ..Default::default()
        };
        self.docker
            .upload_to_container(name, Some(options), tar.into())
            .await
            .map_err(|source| RuntimeError::Upload {
                name: name.into(),
                source,
            })
    }

    pub async fn start(&self, name: &str) -> Result<(), RuntimeError> {
        match self
            .docker
            .start_container(name, None::<StartContainerOptions<String>>)
            .await
        {
            Ok(()) => Ok(()),
            // 304: already running.
            Err(e) if status(&e) == Some(304) => Ok(()),
            Err(source) => Err(RuntimeError::Start {
                name: name.into(),
                source,
            }),
        }
    }

    /// The container's address on `network`, once it has one.
    pub async fn address(&self, name: &str, network: &str) -> Result<IpAddr, RuntimeError> {
        let c = self
            .docker
            .inspect_container(name, None)
            .await
            .map_err(|source| RuntimeError::Inspect {
                name: name.into(),
                source,
            })?;
        c.network_settings
            .and_then(|n| n.networks)
            .and_then(|n| n.get(network).cloned())
            .and_then(|e| e.ip_address)
            .and_then(|ip| ip.parse().ok())
            .ok_or_else(|| RuntimeError::NoAddress {
                name: name.into(),
                network: network.into(),
            })
    }

    /// Whether the container is running, and if it exited, how and why.
    pub async fn state(&self, name: &str) -> Result<(bool, String), RuntimeError> {
        let c = self
            .docker
            .inspect_container(name, None)
            .await
            .map_err(|source| RuntimeError::Inspect {
                name: name.into(),
                source,
            })?;
        let s = c.state.unwrap_or_default();
        let running = s.running.unwrap_or(false);
        let why = format!(
            "status {}, exit code {}{}{}",
            s.status.map(|x| x.to_string()).unwrap_or_default(),
            s.exit_code.unwrap_or(0),
            if s.oom_killed == Some(true) {
                ", killed out of memory"
            } else {
                ""
            },
            s.error
                .filter(|e| !e.is_empty())
                .map(|e| format!(", {e}"))
                .unwrap_or_default()
        );
        Ok((running, why))
    }

    /// The container's full id and the host PID of its main process (0 when not running);
    /// the monitors read its cgroup and network counters through them.
    pub async fn ids(&self, name: &str) -> Result<(String, i64), RuntimeError> {
        let c = self
            .docker
            .inspect_container(name, None)
            .await
            .map_err(|source| RuntimeError::Inspect {
                name: name.into(),
                source,
            })?;
        Ok((
            c.id.unwrap_or_default(),
            c.state.and_then(|s| s.pid).unwrap_or(0),
        ))
    }

    /// Whether the engine has the image `image`: false when it answers that it has none; an
    /// engine that does not answer is an error, not a missing image.
    pub async fn has_image(&self, image: &str) -> Result<bool, RuntimeError> {
        match self.docker.inspect_image(image).await {
            Ok(_) => Ok(true),
            Err(DockerError::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(false),
            Err(source) => Err(RuntimeError::InspectImage {
                image: image.to_string(),
                source,
            }),
        }
    }

    /// The engine's ID (`sha256:…`) of an image, by reference; None when it is not there.
    pub async fn image_id(&self, image: &str) -> Option<String> {
        self.docker
            .inspect_image(image)
            .await
            .ok()
            .and_then(|i| i.id)
    }

    /// The file at `path` in the container (running or stopped), from the engine's tar of it.
    pub async fn download(&self, name: &str, path: &str) -> Result<Vec<u8>, RuntimeError> {
        let fail = |source| RuntimeError::Download {
            name: name.into(),
            path: path.into(),
            source: Box::new(source),
        };
        let mut stream = self.docker.download_from_container(
            name,
            Some(bollard::container::DownloadFromContainerOptions {
                path: path.to_string(),
            }),
        );
        let mut tar_bytes = Vec::new();
        while let Some(chunk) = stream.next().await {
            tar_bytes.extend_from_slice(&chunk.map_err(fail)?);
        }
        let mut archive = tar::Archive::new(tar_bytes.as_slice());
        let mut out = Vec::new();
        if let Ok(mut entries) = archive.entries() {
            if let Some(Ok(mut entry)) = entries.next() {
                use std::io::Read;
                let _ = entry.read_to_end(&mut out);
            }
        }
        Ok(out)
    }

    pub async fn caps(&self, name: &str) -> Result<Caps, RuntimeError> {
        let c = self
            .docker
            .inspect_container(name, None)
            .await
            .map_err(|source| RuntimeError::Inspect {
                name: name.into(),
                source,
            })?;
        let h = c.host_config.unwrap_or_default();
        Ok(Caps {
            nano_cpus: h.nano_cpus.unwrap_or(0),
            cpu_quota_us: h.cpu_quota.unwrap_or(0),
            cpu_period_us: h.cpu_period.unwrap_or(0),
            cpuset_cpus: h.cpuset_cpus.unwrap_or_default(),
            memory_bytes: h.memory.unwrap_or(0),
            memory_swap_bytes: h.memory_swap.unwrap_or(0),
        })
    }

    /// Runs `argv` in a running container; returns its exit code and combined output.
    pub async fn exec(&self, name: &str, argv: &[String]) -> Result<(i64, String), RuntimeError> {
        let fail = |source| RuntimeError::Exec {
            name: name.into(),
            argv: argv.to_vec(),
            source: Box::new(source),
        };
        let exec = self
            .docker
            .create_exec(
                name,
                CreateExecOptions {
                    cmd: Some(argv.to_vec()),
                    attach_stdout: Some(true),
                    attach_stderr: Some(true),
                    ..Default::default()
                },
            )
            .await
            .map_err(fail)?;
        let mut output = String::new();
        if let StartExecResults::Attached {
            output: mut stream, ..
        } = self.docker.start_exec(&exec.id, None).await.map_err(fail)?
        {
            while let Some(chunk) = stream.next().await {
                output.push_str(&chunk.map_err(fail)?.to_string());
            }
        }
        let code = self
            .docker
            .inspect_exec(&exec.id)
            .await
            .map_err(fail)?
            .exit_code
            .unwrap_or(-1);
        Ok((code, output))
    }

    /// Starts `argv` in a running container and streams its standard output as it is
    /// written (standard error is dropped); the stream ends when the command does, or when
    /// the container stops.
    pub async fn exec_stream(
        &self,
        name: &str,
        argv: &[String],
    ) -> Result<
        impl futures_util::Stream<Item = Result<Vec<u8>, RuntimeError>> + Send + 'static,
        RuntimeError,
    > {
        let fail = {
            let (name, argv) = (name.to_string(), argv.to_vec());
            move |source| RuntimeError::Exec {
                name: name.clone(),
                argv: argv.clone(),
                source: Box::new(source),
            }
        };
        let exec = self
            .docker
            .create_exec(
                name,
                CreateExecOptions {
                    cmd: Some(argv.to_vec()),
                    attach_stdout: Some(true),
                    attach_stderr: Some(false),
                    ..Default::default()
                },
            )
            .await
            .map_err(fail.clone())?;
        let started = self
            .docker
            .start_exec(&exec.id, None)
            .await
            .map_err(fail.clone())?;
        let stream = match started {
            StartExecResults::Attached { output, .. } => output.boxed(),
            StartExecResults::Detached => futures_util::stream::empty().boxed(),
        };
        Ok(stream.filter_map(move |chunk| {
            let out = match chunk {
                Ok(LogOutput::StdOut { message } | LogOutput::Console { message }) => {
                    Some(Ok(message.to_vec()))
                }
                Ok(_) => None,
                Err(source) => Some(Err(fail(source))),
            };
            std::future::ready(out)
        }))
    }

    /// Everything the container wrote to stdout and stderr, each line with the engine's
    /// timestamp.
    pub async fn logs(&self, name: &str) -> Result<String, RuntimeError> {
        self.log_text(name, true).await
    }

    /// Everything the container wrote to stdout and stderr, as it wrote it.
    pub async fn output(&self, name: &str) -> Result<String, RuntimeError> {
        self.log_text(name, false).await
    }

    async fn log_text(&self, name: &str, timestamps: bool) -> Result<String, RuntimeError> {
        let mut stream = self.docker.logs(
            name,
            Some(LogsOptions::<String> {
                stdout: true,
                stderr: true,
                timestamps,
                ..Default::default()
            }),
        );
        let mut out = String::new();
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(
                    LogOutput::StdOut { message }
                    | LogOutput::StdErr { message }
                    | LogOutput::Console { message },
                ) => {
                    out.push_str(&String::from_utf8_lossy(&message));
                }
                Ok(_) => {}
                Err(source) => {
                    return Err(RuntimeError::Logs {
                        name: name.into(),
                        source,
                    })
                }
            }
        }
        Ok(out)
    }

    /// Waits up to `timeout` for a started container to stop: its exit code, or `None` when
    /// it is still running then. The engine's wait is asked in slices well under the client's
    /// request timeout, and the exit code is read from the container's state.
    pub async fn wait_exit(
        &self,
        name: &str,
        timeout: std::time::Duration,
    ) -> Result<Option<i64>, RuntimeError> {
        use std::time::{Duration, Instant};
        let until = Instant::now() + timeout;
        loop {
            let slice = until
                .saturating_duration_since(Instant::now())
                .min(Duration::from_secs(60));
            let mut wait = self.docker.wait_container(
                name,
                Some(WaitContainerOptions {
                    condition: "not-running",
                }),
            );
            match tokio::time::timeout(slice, wait.next()).await {
                // An answer, with any exit code (bollard reports a non-zero one as an error).
                Ok(Some(Ok(_) | Err(DockerError::DockerContainerWaitError { .. }))) => {}
                Ok(Some(Err(source))) => {
                    return Err(RuntimeError::Wait {
                        name: name.into(),
                        source,
                    })
                }
                // No answer in the slice, or the stream closed without one: look at the state.
                Ok(None) => tokio::time::sleep(Duration::from_millis(100)).await,
                Err(_) => {}
            }
            let state = self
                .docker
                .inspect_container(name, None)
                .await
                .map_err(|source| RuntimeError::Inspect {
                    name: name.into(),
                    source,
                })?
                .state
                .unwrap_or_default();
            if state.running != Some(true) {
                return Ok(Some(state.exit_code.unwrap_or(-1)));
            }
            if Instant::now() >= until {
                return Ok(None);
            }
        }
    }

    pub async fn kill(&self, name: &str, signal: &str) -> Result<(), RuntimeError> {
        let options = KillContainerOptions {
            signal: signal.to_string(),
        };
        match self.docker.kill_container(name, Some(options)).await {
            Ok(()) => Ok(()),
            Err(source) => Err(RuntimeError::Kill {
                name: name.into(),
                signal: signal.into(),
                source: Box::new(source),
            }),
        }
    }

    /// Freezes every process of a container (the cgroup freezer, `docker pause`): they hold
    /// their memory and sockets and run nothing until thawed.
    pub async fn freeze(&self, name: &str) -> Result<(), RuntimeError> {
        let done = self.docker.pause_container(name).await;
        done.map_err(|source| RuntimeError::Freezer {
            name: name.into(),
            what: "freeze",
            source,
        })
    }

    /// Thaws a frozen container (`docker unpause`).
    pub async fn thaw(&self, name: &str) -> Result<(), RuntimeError> {
        let done = self.docker.unpause_container(name).await;
        done.map_err(|source| RuntimeError::Freezer {
            name: name.into(),
            what: "thaw",
            source,
        })
    }

    /// Removes a container and its anonymous volumes; absent is fine.
    pub async fn remove_container(&self, name: &str) -> Result<(), RuntimeError> {
        let options = RemoveContainerOptions {
            force: true,
            v: true,
            ..Default::default()
        };
        match self.docker.remove_container(name, Some(options)).await {
            Ok(()) => Ok(()),
            Err(e) if matches!(status(&e), Some(404)) => Ok(()),
            // 409: removal already in progress.
            Err(e) if matches!(status(&e), Some(409)) => Ok(()),
            Err(source) => Err(RuntimeError::RemoveContainer {
                name: name.into(),
                source,
            }),
        }
    }

    /// Removes a network; absent is fine.
    pub async fn remove_network(&self, name: &str) -> Result<(), RuntimeError> {
        match self.docker.remove_network(name).await {
            Ok(()) => Ok(()),
            Err(e) if status(&e) == Some(404) => Ok(()),
            Err(source) => Err(RuntimeError::RemoveNetwork {
                name: name.into(),
                source,
            }),
        }
    }
}

/// The engine's `volume:target[:ro]` binds of named volumes; `None` for none.
fn binds(mounts: &[crate::spec::topology::Mount]) -> Option<Vec<String>> {
    (!mounts.is_empty()).then(|| {
        mounts
            .iter()
            .map(|m| {
                let mode = if m.read_only { ":ro" } else { "" };
                format!("{}:{}{mode}", m.volume, m.target)
            })
            .collect()
    })
}

/// A tar of the files, with their parent directories, readable by any user.
fn files_tar(files: &[FileSpec]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    let mut dirs = std::collections::BTreeSet::new();
    for f in files {
        let path = f.path.trim_start_matches('/');
        let mut parent = std::path::Path::new(path).parent();
        while let Some(p) = parent.filter(|p| !p.as_os_str().is_empty()) {
            dirs.insert(p.to_path_buf());
            parent = p.parent();
        }
    }
    for d in &dirs {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Directory);
        h.set_mode(0o755);
        h.set_size(0);
        h.set_cksum();
        // Writing into a Vec cannot fail.
        let _ = builder.append_data(&mut h, d, std::io::empty());
    }
    for f in files {
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o644);
        h.set_size(f.contents.len() as u64);
        h.set_cksum();
        let _ = builder.append_data(
            &mut h,
            f.path.trim_start_matches('/'),
            f.contents.as_slice(),
        );
    }
    builder.into_inner().unwrap_or_default()
}
