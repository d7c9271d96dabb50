//! Reaching an engine the engines file names, by its transport: its unix socket; its TCP
//! endpoint with TLS (bollard's rustls client, the client certificate and CA of
//! `DOCKER_CERT_PATH`'s layout); or its remote socket forwarded over ssh by OpenSSH, the
//! client whose keys, agent and known hosts the user already trusts (as the docker CLI
//! reaches `ssh://` engines through `ssh` too).

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bollard::Docker;
use feedbench_core::engines::{Endpoint, Engine};

use super::{Runtime, RuntimeError};
use crate::images::API_VERSION;

/// Seconds a request to an engine may take.
pub(super) const TIMEOUT_S: u64 = 120;

/// How long ssh may take to log in and bind the forwarded socket.
const TUNNEL_DEADLINE: Duration = Duration::from_secs(20);

/// An ssh process forwarding a local socket to an engine's remote one. Dropped, it ends the
/// process and removes the socket; the process also ends with feedbench (a parent-death
/// signal), so a coordinator killed with SIGKILL leaves no tunnel behind.
pub(super) struct Tunnel {
    child: Child,
    socket: PathBuf,
    log: PathBuf,
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.socket);
        let _ = std::fs::remove_file(&self.log);
        // The directory goes with its last tunnel (another engine's may still be in it).
        if let Some(dir) = self.socket.parent() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// The local engine's client, as `DOCKER_HOST` names it (a `unix://` or `tcp://` address),
/// else `/var/run/docker.sock`, with API 1.41 negotiated down for older engines; a request
/// is given up after `timeout_s`. The one place `DOCKER_HOST` is read: the runtime's client
/// and the image builder's (`images::connect`, whose builds take longer) are both made here.
pub async fn local_client(timeout_s: u64) -> Result<Docker, bollard::errors::Error> {
    let host = std::env::var("DOCKER_HOST").unwrap_or_default();
    let docker = if let Some(rest) = host.strip_prefix("tcp://") {
        Docker::connect_with_http(&format!("http://{rest}"), timeout_s, &API_VERSION)
    } else if host.starts_with("unix://") {
        Docker::connect_with_unix(&host, timeout_s, &API_VERSION)
    } else {
        Docker::connect_with_unix("unix:///var/run/docker.sock", timeout_s, &API_VERSION)
    }?;
    docker.negotiate_version().await
}

impl Runtime {
    /// Connects to `engine` by its endpoint, negotiates the API version and pings it. Each
    /// error names the engine and its endpoint.
    pub async fn connect_to(engine: &Engine) -> Result<Self, RuntimeError> {
        let failed = |reason: String| {
            RuntimeError::Engine(Box::new(super::Unreachable {
                engine: engine.name.clone(),
                endpoint: endpoint_text(&engine.endpoint),
                reason,
            }))
        };
        let (docker, tunnel) = match &engine.endpoint {
            Endpoint::Unix { path } => (
                Docker::connect_with_unix(
                    &format!("unix://{}", path.display()),
                    TIMEOUT_S,
                    &API_VERSION,
                ),
                None,
            ),
            Endpoint::Tcp { host, port, tls } => {
                for file in [&tls.ca, &tls.cert, &tls.key] {
                    if !file.is_file() {
                        return Err(failed(format!(
                            "`{}` is not a readable file",
                            file.display()
                        )));
                    }
                }
                (
                    Docker::connect_with_ssl(
                        &format!("{host}:{port}"),
                        &tls.key,
                        &tls.cert,
                        &tls.ca,
                        TIMEOUT_S,
                        &API_VERSION,
                    ),
                    None,
                )
            }
            Endpoint::Ssh {
                user,
                host,
                port,
                socket,
                ssh_config,
            } => {
                let to = SshTarget {
                    user: user.as_deref(),
                    host,
                    port: *port,
                    config: ssh_config.as_deref(),
                };
                let tunnel = Tunnel::open(&engine.name, &to, socket)
                    .await
                    .map_err(failed)?;
                let local = format!("unix://{}", tunnel.socket.display());
                (
                    Docker::connect_with_unix(&local, TIMEOUT_S, &API_VERSION),
                    Some(Arc::new(tunnel)),
                )
            }
        };
        let docker = docker.map_err(|e| failed(causes(&e)))?;
        let docker = docker
            .negotiate_version()
            .await
            .map_err(|e| failed(causes(&e)))?;
        docker.ping().await.map_err(|e| failed(causes(&e)))?;
        Ok(Runtime {
            docker,
            _tunnel: tunnel,
            inflight: Default::default(),
        })
    }
}

/// The error and each of its causes, once: the client's own words ("client error
/// (Connect)") say little without the cause under them ("Connection refused").
fn causes(e: &dyn std::error::Error) -> String {
    let mut said = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let c = cause.to_string();
        if !said.contains(&c) {
            said.push_str(": ");
            said.push_str(&c);
        }
        source = cause.source();
    }
    said
}

/// The endpoint as the engines file writes it.
fn endpoint_text(endpoint: &Endpoint) -> String {
    match endpoint {
        Endpoint::Unix { path } => format!("unix://{}", path.display()),
        Endpoint::Tcp { host, port, .. } => format!("tcp://{host}:{port}"),
        Endpoint::Ssh {
            user, host, port, ..
        } => {
            let user = user.as_deref().map(|u| format!("{u}@")).unwrap_or_default();
            let port = port.map(|p| format!(":{p}")).unwrap_or_default();
            format!("ssh://{user}{host}{port}")
        }
    }
}

/// Where ssh logs in.
struct SshTarget<'a> {
    user: Option<&'a str>,
    host: &'a str,
    port: Option<u16>,
    config: Option<&'a Path>,
}

impl Tunnel {
    /// Starts `ssh -L LOCAL:REMOTE` in batch mode (no password prompt: keys or an agent) and
    /// waits until the local socket is bound, or ssh has exited with its reason.
    async fn open(name: &str, to: &SshTarget<'_>, remote: &str) -> Result<Tunnel, String> {
        let dir = std::env::temp_dir().join(format!("feedbench-ssh-{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create `{}`: {e}", dir.display()))?;
        let socket = dir.join(format!("{name}.sock"));
        let _ = std::fs::remove_file(&socket);
        // ssh's words go to a file, read when it fails: a pipe nobody reads once the tunnel
        // is up could fill, or, closed, end ssh with SIGPIPE.
        let log_path = dir.join(format!("{name}.ssh.log"));
        let log = std::fs::File::create(&log_path)
            .map_err(|e| format!("cannot create `{}`: {e}", log_path.display()))?;
        let mut cmd = Command::new("ssh");
        cmd.args([
            "-nNT",
            "-o",
            "BatchMode=yes",
            "-o",
            "ExitOnForwardFailure=yes",
        ])
        .args(["-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=5"]);
        if let Some(config) = to.config {
            cmd.arg("-F").arg(config);
        }
        if let Some(p) = to.port {
            cmd.arg("-p").arg(p.to_string());
        }
        cmd.arg("-L")
            .arg(format!("{}:{remote}", socket.display()))
            .arg(match to.user {
                Some(u) => format!("{u}@{}", to.host),
                None => to.host.to_string(),
            })
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        // The signal is sent when the thread that spawned ssh ends: the tunnel is opened from
        // the command's top-level future, on the main thread, which lives as long as feedbench.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start `ssh` (install OpenSSH's client): {e}"))?;
        let mut tunnel = Tunnel {
            child,
            socket,
            log: log_path.clone(),
        };
        let started = Instant::now();
        loop {
            if let Some(status) = tunnel.child.try_wait().map_err(|e| e.to_string())? {
                let said = std::fs::read_to_string(&log_path).unwrap_or_default();
                return Err(format!("ssh exited ({status}): {}", said.trim()));
            }
            if is_socket(&tunnel.socket) {
                return Ok(tunnel);
            }
            if started.elapsed() > TUNNEL_DEADLINE {
                return Err(format!(
                    "ssh did not bind the forwarded socket within {} s",
                    TUNNEL_DEADLINE.as_secs()
                ));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn is_socket(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_socket())
}
