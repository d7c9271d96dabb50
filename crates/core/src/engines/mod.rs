//! The engines file (`--engines FILE`): the Docker engines a study may use and the groups a
//! run is placed on. Machines are named outside the plan (they are where a study runs, not
//! its method); where roles go is the plan's `placement`, checked here against the groups.
//!
//! ```yaml
//! format_version: 1
//! engines:
//!   here:   {endpoint: "unix:///var/run/docker.sock", address: 10.99.0.1}
//!   second: {endpoint: "tcp://10.99.0.2:2376", address: 10.99.0.2, tls: {cert-path: certs}}
//! groups:
//!   - {system: here, load-generator: second}
//! ```
//!
//! Without a file feedbench uses the local engine alone (`Engines::local`). Every problem is
//! a diagnostic at file:line:column and field path, like a plan's.

pub mod cpu;
pub mod facts;

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::Deserialize;

use crate::plan::de::suggest;
use crate::plan::diagnostic::{Diagnostic, Severity};
use crate::plan::load::typed;
use crate::plan::model::{Apartness, Placement};
use crate::plan::units::Name;
use crate::plan::yaml::{join_key, Mark, Positions};

/// The engines file's format version this feedbench reads.
pub const FORMAT_VERSION: u32 = 1;

/// The local engine's socket, the name it has when no engines file is given.
pub const LOCAL_SOCKET: &str = "/var/run/docker.sock";
pub const LOCAL_NAME: &str = "local";

/// The engines a study may use, in file order, and the groups a run is placed on.
#[derive(Debug, Clone, PartialEq)]
pub struct Engines {
    pub engines: Vec<Engine>,
    pub groups: Vec<Group>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Engine {
    pub name: String,
    pub endpoint: Endpoint,
    /// Where the other engines reach the ports this one publishes.
    pub address: IpAddr,
    /// Where the engines file writes its endpoint, for what is found when it is reached;
    /// `None` for the local engine used without a file.
    pub site: Option<Site>,
    /// Where it writes its address.
    pub address_site: Option<Site>,
}

/// A field of the engines file and where it stands.
#[derive(Debug, Clone, PartialEq)]
pub struct Site {
    pub file: String,
    pub mark: Mark,
    /// The field path, e.g. `engines.second.endpoint`.
    pub path: String,
}

impl Site {
    /// An error at this field.
    pub fn error(&self, message: impl Into<String>, hint: Option<String>) -> Diagnostic {
        Diagnostic::new(Severity::Error, &self.file, self.mark, &self.path, message).with_hint(hint)
    }
}

/// How the engine's API is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum Endpoint {
    Unix {
        path: PathBuf,
    },
    /// Always with TLS: the API over plain TCP is root on the engine's machine.
    Tcp {
        host: String,
        port: u16,
        tls: TlsFiles,
    },
    /// The engine's unix socket on the remote machine (`socket`), forwarded by OpenSSH,
    /// which reads `ssh_config` (`ssh-config`, passed with `-F`) where one is named.
    Ssh {
        user: Option<String>,
        host: String,
        port: Option<u16>,
        socket: String,
        ssh_config: Option<PathBuf>,
    },
}

/// A client certificate, its key and the CA that signed the engine's certificate, named as
/// `DOCKER_CERT_PATH` names them (`ca.pem`, `cert.pem`, `key.pem` in one directory).
#[derive(Debug, Clone, PartialEq)]
pub struct TlsFiles {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// The engines one run uses: indexes into `Engines::engines`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Group {
    /// Replicas, balancer, database, fault proxy and co-tenant.
    pub system: usize,
    /// The load generator's engine: `system` where the group names none.
    pub load_generator: usize,
}

impl Engines {
    /// The local engine alone, in one group: what feedbench uses without `--engines`.
    pub fn local() -> Self {
        Engines {
            engines: vec![Engine {
                name: LOCAL_NAME.to_string(),
                endpoint: Endpoint::Unix {
                    path: PathBuf::from(LOCAL_SOCKET),
                },
                address: IpAddr::from([127, 0, 0, 1]),
                site: None,
                address_site: None,
            }],
            groups: vec![Group {
                system: 0,
                load_generator: 0,
            }],
        }
    }

    /// The group's engines by name: (system, load generator).
    pub fn names(&self, group: &Group) -> (&str, &str) {
        (
            &self.engines[group.system].name,
            &self.engines[group.load_generator].name,
        )
    }
}

/// What resolving an engines file may know of the world, passed in so the core stays pure.
pub struct Context<'a> {
    /// The directory relative paths (`tls.cert-path`) are read from: the file's own.
    pub base_dir: &'a Path,
    /// `DOCKER_CERT_PATH`, used by a `tcp://` engine whose `tls` names no `cert-path`.
    pub docker_cert_path: Option<&'a str>,
}

#[derive(Debug, thiserror::Error)]
pub enum EnginesError {
    #[error("{}", .diagnostics.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("\n"))]
    Invalid {
        file: String,
        diagnostics: Vec<Diagnostic>,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct Document {
    #[serde(rename = "format_version")]
    format_version: u32,
    engines: IndexMap<Name, EngineDoc>,
    #[serde(default)]
    groups: Vec<GroupDoc>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct EngineDoc {
    endpoint: String,
    address: String,
    #[serde(default)]
    tls: Option<TlsDoc>,
    /// For `ssh://`: the engine's socket on the remote machine.
    #[serde(default)]
    socket: Option<String>,
    /// For `ssh://`: an ssh_config file for ssh's `-F` (keys, known hosts, a jump host).
    #[serde(default)]
    ssh_config: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct TlsDoc {
    #[serde(default)]
    cert_path: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct GroupDoc {
    system: Name,
    #[serde(default)]
    load_generator: Option<Name>,
}

/// Problems found, each at a field path, placed at the end.
#[derive(Default)]
struct Problems(Vec<(String, String, Option<String>)>);

impl Problems {
    fn add(&mut self, path: String, message: impl Into<String>, hint: Option<String>) {
        self.0.push((path, message.into(), hint));
    }
}

/// Checks an engines file's text; `file` names it in diagnostics.
pub fn load_str(file: &str, source: &str, ctx: &Context) -> Result<Engines, EnginesError> {
    let (root, doc): (_, Document) = typed(file, source).map_err(|d| EnginesError::Invalid {
        file: file.to_string(),
        diagnostics: vec![d],
    })?;
    let mut problems = Problems::default();
    let positions = Positions::index(&root);
    let site = |path: String| Site {
        file: file.to_string(),
        mark: positions.value(&path),
        path,
    };
    let engines = resolve(&doc, ctx, &site, &mut problems);
    if problems.0.is_empty() {
        return Ok(engines);
    }
    Err(EnginesError::Invalid {
        file: file.to_string(),
        diagnostics: problems
            .0
            .into_iter()
            .map(|(path, message, hint)| {
                Diagnostic::new(Severity::Error, file, positions.value(&path), path, message)
                    .with_hint(hint)
            })
            .collect(),
    })
}

fn resolve(
    doc: &Document,
    ctx: &Context,
    site: &dyn Fn(String) -> Site,
    problems: &mut Problems,
) -> Engines {
    if doc.format_version != FORMAT_VERSION {
        problems.add(
            "format_version".into(),
            format!(
                "this feedbench reads engines files of format_version {FORMAT_VERSION}, not {}",
                doc.format_version
            ),
            None,
        );
    }
    if doc.engines.is_empty() {
        problems.add(
            "engines".into(),
            "the file names no engine",
            Some("name at least one: `engines: {here: {endpoint: \"unix:///var/run/docker.sock\", address: 127.0.0.1}}`".into()),
        );
    }
    let mut engines = Vec::new();
    for (name, e) in &doc.engines {
        let at = join_key("engines", name.as_str());
        let endpoint = endpoint(e, &at, ctx, problems);
        let address = match e.address.parse::<IpAddr>() {
            // A port published there would be on every address of the host, or on none.
            Ok(a)
                if a.is_unspecified()
                    || a.is_multicast()
                    || a == IpAddr::from([255, 255, 255, 255]) =>
            {
                problems.add(
                    join_key(&at, "address"),
                    format!("\"{a}\" is not one address of the engine's host"),
                    Some("name the one address at which the other engines reach this one, e.g. 10.99.0.2".into()),
                );
                None
            }
            Ok(a) => Some(a),
            Err(_) => {
                problems.add(
                    join_key(&at, "address"),
                    format!("expected an IP address, found \"{}\"", e.address),
                    Some("the address at which the other engines reach the ports this engine publishes, e.g. 10.99.0.2".into()),
                );
                None
            }
        };
        if let (Some(endpoint), Some(address)) = (endpoint, address) {
            engines.push(Engine {
                name: name.to_string(),
                endpoint,
                address,
                site: Some(site(join_key(&at, "endpoint"))),
                address_site: Some(site(join_key(&at, "address"))),
            });
        }
    }
    let groups = groups(doc, problems);
    Engines { engines, groups }
}

fn endpoint(e: &EngineDoc, at: &str, ctx: &Context, problems: &mut Problems) -> Option<Endpoint> {
    let path = join_key(at, "endpoint");
    let hint = || {
        Some("one of `unix:///path/to/docker.sock`, `tcp://HOST:PORT` (with `tls`), `ssh://[USER@]HOST[:PORT]`".to_string())
    };
    let Some((scheme, rest)) = e.endpoint.split_once("://") else {
        problems.add(
            path,
            format!("expected an endpoint URL, found \"{}\"", e.endpoint),
            hint(),
        );
        return None;
    };
    for (field, given) in [
        ("socket", e.socket.is_some()),
        ("ssh-config", e.ssh_config.is_some()),
    ] {
        if scheme != "ssh" && given {
            problems.add(
                join_key(at, field),
                format!("`{field}` is for `ssh://` endpoints; this one is `{scheme}://`"),
                Some(format!("remove `{field}`")),
            );
        }
    }
    if matches!(scheme, "unix" | "ssh") && e.tls.is_some() {
        problems.add(
            join_key(at, "tls"),
            format!("`tls` is for `tcp://` endpoints; this one is `{scheme}://`"),
            Some("remove `tls`".into()),
        );
    }
    match scheme {
        "unix" if rest.starts_with('/') => Some(Endpoint::Unix {
            path: PathBuf::from(rest),
        }),
        "unix" => {
            problems.add(
                path,
                format!("a unix socket's path must be absolute, found \"{rest}\""),
                None,
            );
            None
        }
        "tcp" => tcp_endpoint(e, at, rest, ctx, problems),
        "ssh" => ssh_endpoint(e, at, rest, ctx, problems),
        other => {
            problems.add(
                path,
                format!("unknown endpoint scheme `{other}://`"),
                hint(),
            );
            None
        }
    }
}

/// A `tcp://HOST:PORT` endpoint (`rest` after the scheme), which must have TLS files.
fn tcp_endpoint(
    e: &EngineDoc,
    at: &str,
    rest: &str,
    ctx: &Context,
    problems: &mut Problems,
) -> Option<Endpoint> {
    let path = join_key(at, "endpoint");
    let Some((host, port)) = host_port(rest).and_then(|(h, p)| Some((h, p?))) else {
        problems.add(
            path,
            format!("expected `tcp://HOST:PORT`, found \"{}\"", e.endpoint),
            None,
        );
        return None;
    };
    let dir = e
        .tls
        .as_ref()
        .map(|t| t.cert_path.as_deref().or(ctx.docker_cert_path));
    match dir {
        None => {
            problems.add(
                    path,
                    "a `tcp://` engine needs TLS: the engine API over plain TCP is root on its machine",
                    Some("add `tls: {cert-path: DIR}` (DIR holds ca.pem, cert.pem and key.pem, as DOCKER_CERT_PATH does), or use `ssh://`".into()),
                );
            None
        }
        Some(None) => {
            problems.add(
                    join_key(at, "tls"),
                    "`tls` names no `cert-path` and DOCKER_CERT_PATH is not set",
                    Some("add `cert-path: DIR` (DIR holds ca.pem, cert.pem and key.pem), or set DOCKER_CERT_PATH".into()),
                );
            None
        }
        Some(Some(dir)) => {
            let dir = ctx.base_dir.join(dir);
            Some(Endpoint::Tcp {
                host: host.to_string(),
                port,
                tls: TlsFiles {
                    ca: dir.join("ca.pem"),
                    cert: dir.join("cert.pem"),
                    key: dir.join("key.pem"),
                },
            })
        }
    }
}

/// An `ssh://[USER@]HOST[:PORT]` endpoint (`rest` after the scheme), with its remote socket.
fn ssh_endpoint(
    e: &EngineDoc,
    at: &str,
    rest: &str,
    ctx: &Context,
    problems: &mut Problems,
) -> Option<Endpoint> {
    let path = join_key(at, "endpoint");
    let (user, hostport) = match rest.split_once('@') {
        Some((user, hostport)) => (Some(user), hostport),
        None => (None, rest),
    };
    match (user, host_port(hostport)) {
        (Some(""), _) | (_, None) => {
            problems.add(
                path,
                format!(
                    "expected `ssh://[USER@]HOST[:PORT]`, found \"{}\"",
                    e.endpoint
                ),
                None,
            );
            None
        }
        (_, Some(_)) if !e.socket.as_deref().unwrap_or(LOCAL_SOCKET).starts_with('/') => {
            problems.add(
                join_key(at, "socket"),
                "the remote socket's path must be absolute",
                None,
            );
            None
        }
        (user, Some((host, port))) => Some(Endpoint::Ssh {
            user: user.map(str::to_string),
            host: host.to_string(),
            port,
            socket: e.socket.clone().unwrap_or_else(|| LOCAL_SOCKET.to_string()),
            ssh_config: e.ssh_config.as_ref().map(|c| ctx.base_dir.join(c)),
        }),
    }
}

/// `host` or `host:port`; `None` for an empty host, a port that is not a number, or a path.
fn host_port(text: &str) -> Option<(&str, Option<u16>)> {
    if text.is_empty() || text.contains('/') {
        return None;
    }
    match text.rsplit_once(':') {
        None => Some((text, None)),
        Some((host, port)) if !host.is_empty() => port.parse().ok().map(|p| (host, Some(p))),
        Some(_) => None,
    }
}

fn groups(doc: &Document, problems: &mut Problems) -> Vec<Group> {
    let names: Vec<&str> = doc.engines.keys().map(Name::as_str).collect();
    if doc.groups.is_empty() {
        if doc.engines.len() > 1 {
            problems.add(
                "groups".into(),
                format!(
                    "{} engines are named but no group: which engines does a run use?",
                    doc.engines.len()
                ),
                Some(format!(
                    "add `groups: [{{system: {}, load-generator: {}}}]`",
                    names[0], names[1]
                )),
            );
        }
        return vec![Group {
            system: 0,
            load_generator: 0,
        }];
    }
    let index = |name: &Name, at: String, problems: &mut Problems| {
        let found = names.iter().position(|n| *n == name.as_str());
        if found.is_none() {
            problems.add(
                at,
                format!("unknown engine `{name}`"),
                Some(suggest(name.as_str(), &names, "engine")),
            );
        }
        found
    };
    // Groups run at the same time, so an engine belongs to one group at most.
    let mut owner: IndexMap<usize, usize> = IndexMap::new();
    let mut out = Vec::new();
    for (i, g) in doc.groups.iter().enumerate() {
        let at = format!("groups[{i}]");
        let system = index(&g.system, join_key(&at, "system"), problems);
        let load = match &g.load_generator {
            Some(n) => index(n, join_key(&at, "load-generator"), problems),
            None => system,
        };
        let (Some(system), Some(load_generator)) = (system, load) else {
            continue;
        };
        for (engine, field) in [(system, "system"), (load_generator, "load-generator")] {
            match owner.get(&engine) {
                Some(&earlier) if earlier != i => problems.add(
                    join_key(&at, field),
                    format!(
                        "engine `{}` is in groups[{earlier}] already: groups run at the same time, so they share no engine",
                        names[engine]
                    ),
                    None,
                ),
                _ => {
                    owner.insert(engine, i);
                }
            }
        }
        out.push(Group {
            system,
            load_generator,
        });
    }
    out
}

/// The plan's placement against the groups: with the load generator `apart`, every group
/// must give it an engine of its own. Each problem names the group.
pub fn check_placement(engines: &Engines, placement: &Placement) -> Vec<String> {
    if placement.load_generator != Apartness::Apart {
        return Vec::new();
    }
    engines
        .groups
        .iter()
        .enumerate()
        .filter(|(_, g)| g.system == g.load_generator)
        .map(|(i, g)| {
            format!(
                "the plan places the load generator apart (`placement: {{load-generator: apart}}`), but group {i} runs it on `{}`, the engine of the system under test: name a `load-generator` engine for the group",
                engines.engines[g.system].name
            )
        })
        .collect()
}

#[cfg(test)]
mod tests;
