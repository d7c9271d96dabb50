//! The plan's history since its registration: every committed version of the plan file
//! (and the working-tree file when it differs), each with its plan hash, its document as
//! JSON and its expanded runs, and the differences between versions in plan terms.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::AuditError;
use crate::git::{self, Commit};
use crate::inputs::tree::{GitTree, Tree, WorkingTree};
use crate::inputs::{InputFile, Inputs};
use crate::plan::hash::{canonical_json, plan_hash, to_json};
use crate::plan::validate::Context;
use crate::plan::{expand, load_str, yaml, LoadError, Plan, RunSpec};

/// Where a version of the plan comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "rev", rename_all = "kebab-case")]
pub enum Rev {
    Commit(Commit),
    /// The file on disk, with changes not committed.
    WorkingTree,
}

impl Rev {
    pub fn committed(&self) -> bool {
        matches!(self, Rev::Commit(_))
    }

    /// `commit 1a2b3c4d5e6f` or `the working tree`.
    pub fn label(&self) -> String {
        match self {
            Rev::Commit(c) => format!("commit {}", short(&c.hash)),
            Rev::WorkingTree => "the working tree".into(),
        }
    }
}

/// At most the first 12 characters of a hash, cut at a character boundary (the hash may
/// come from a file a person or a crash damaged): the one helper, `files::short`.
pub use crate::files::short;

/// One version of the plan file.
#[derive(Debug, Clone)]
pub struct PlanVersion {
    pub rev: Rev,
    /// None: the text has no canonical form (not YAML, or numbers JSON cannot carry).
    pub plan_hash: Option<String>,
    /// The document as JSON, what plan hashes are taken of and diffs are made of.
    pub document: Option<Value>,
    /// The study's name, when the version loads as a plan.
    pub study: Option<String>,
    /// The runs it expands to; empty when it does not load.
    pub runs: Vec<RunSpec>,
    /// Why it does not load as a plan, when it does not.
    pub error: Option<String>,
    /// The plan, when it loads.
    pub plan: Option<Box<Plan>>,
    /// The digest of its inputs as this version's tree holds them (`inputs::Inputs::digest`);
    /// None when they were not read.
    pub inputs_digest: Option<String>,
    /// Its input files, as read.
    pub inputs: Vec<InputFile>,
}

impl PlanVersion {
    /// Reads one version from its text; `file` names it in messages. Its runs are hashed
    /// with its inputs as `tree` holds them; without a tree, with the plan alone.
    pub fn from_text(rev: Rev, file: &str, text: &str) -> PlanVersion {
        PlanVersion::with_inputs(rev, file, text, None)
    }

    /// [`PlanVersion::from_text`], with the inputs read from `tree`.
    pub fn with_inputs(rev: Rev, file: &str, text: &str, tree: Option<&dyn Tree>) -> PlanVersion {
        let document = yaml::parse(text).ok().and_then(|n| to_json(&n).ok());
        let ctx = Context {
            host_cores: None,
            exists: None,
        };
        match load_str(file, text, &ctx) {
            Ok(loaded) => {
                let read = tree.map(|t| Inputs::read(&loaded.plan, t));
                let (inputs, error) = match read {
                    Some(Ok(i)) => (Some(i), None),
                    Some(Err(e)) => (None, Some(format!("its inputs cannot be read: {e}"))),
                    None => (None, None),
                };
                PlanVersion {
                    rev,
                    plan_hash: Some(loaded.plan_hash.clone()),
                    document,
                    study: Some(loaded.plan.study.name.to_string()),
                    runs: match &inputs {
                        Some(i) => crate::inputs::expand(&loaded.plan, i),
                        None => expand(&loaded.plan),
                    },
                    error,
                    plan: Some(Box::new(loaded.plan)),
                    inputs_digest: inputs.as_ref().map(Inputs::digest),
                    inputs: inputs.map(|i| i.files).unwrap_or_default(),
                }
            }
            Err(e) => {
                let hash = yaml::parse(text).ok().and_then(|n| plan_hash(&n).ok());
                let error = match &e {
                    LoadError::Invalid { diagnostics, .. } => diagnostics
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("; "),
                    LoadError::Read { .. } => e.to_string(),
                };
                PlanVersion {
                    rev,
                    plan_hash: hash,
                    document,
                    study: None,
                    runs: Vec::new(),
                    error: Some(error),
                    plan: None,
                    inputs_digest: None,
                    inputs: Vec::new(),
                }
            }
        }
    }

    /// The hash of `run` in this version, when it has the run.
    pub fn run_hash(&self, run: &str) -> Option<&str> {
        self.runs
            .iter()
            .find(|r| r.id == run)
            .map(|r| r.run_hash.as_str())
    }
}

/// Every version of the plan from its registration on, oldest first: the registration
/// commit, each later commit that touched the file, then the working-tree file when its
/// text differs from HEAD's.
#[derive(Debug, Clone)]
pub struct History {
    /// The plan file's path in its repository.
    pub plan_file: String,
    pub versions: Vec<PlanVersion>,
}

impl History {
    pub fn registration(&self) -> &PlanVersion {
        &self.versions[0]
    }

    /// The last committed version (HEAD's, as far as the plan file goes).
    pub fn head(&self) -> &PlanVersion {
        self.versions
            .iter()
            .rev()
            .find(|v| v.rev.committed())
            .unwrap_or(&self.versions[0])
    }

    /// The plan as it is now: the working tree's when it differs, else HEAD's.
    pub fn current(&self) -> &PlanVersion {
        self.versions.last().unwrap_or(&self.versions[0])
    }

    pub fn committed(&self) -> impl Iterator<Item = &PlanVersion> {
        self.versions.iter().filter(|v| v.rev.committed())
    }

    /// Whether some committed version has this plan hash.
    pub fn committed_hash(&self, plan_hash: &str) -> bool {
        self.committed()
            .any(|v| v.plan_hash.as_deref() == Some(plan_hash))
    }

    /// Whether some committed version plans this run with this hash.
    pub fn committed_run(&self, run: &str, run_hash: &str) -> bool {
        self.committed().any(|v| v.run_hash(run) == Some(run_hash))
    }

    /// The study's name: the newest version that loads names it.
    pub fn study(&self) -> Option<&str> {
        self.versions.iter().rev().find_map(|v| v.study.as_deref())
    }

    /// Reads the history from git. `plan` is the file as the user named it; `registered`
    /// overrides the registration commit (by default the first commit of the file).
    pub fn from_git(plan: &Path, registered: Option<&str>) -> Result<History, AuditError> {
        let file = plan.display().to_string();
        let text = std::fs::read_to_string(plan).map_err(|source| AuditError::PlanUnreadable {
            file: file.clone(),
            source,
        })?;
        let (top, rel) =
            git::locate(plan)?.ok_or_else(|| AuditError::NotInGit { file: file.clone() })?;
        let registration = match registered {
            Some(rev) => {
                let c = git::resolve(&top, rev)?.ok_or_else(|| AuditError::NoSuchRev {
                    rev: rev.to_string(),
                    repo: top.clone(),
                })?;
                if !git::is_ancestor_of_head(&top, &c.hash)? {
                    return Err(AuditError::NotAncestor {
                        rev: rev.to_string(),
                        repo: top.clone(),
                    });
                }
                c
            }
            None => git::first_commit(&top, &rel)?
                .ok_or_else(|| AuditError::NeverCommitted { file: file.clone() })?,
        };
        // The commits that touched the plan, then those that touched any input some
        // version of it names: an edit to an init script is a change of the plan's runs.
        let mut paths = vec![rel.clone()];
        for c in std::iter::once(registration.clone()).chain(git::commits_touching(
            &top,
            &[rel.as_str()],
            &registration.hash,
        )?) {
            if let Some(t) = git::show(&top, &c.hash, &rel)? {
                let tree = GitTree::new(&top, &c.hash, &rel);
                let v = PlanVersion::with_inputs(Rev::Commit(c), &rel, &t, Some(&tree));
                paths.extend(
                    v.inputs
                        .iter()
                        .filter_map(|f| repo_path(&top, &rel, &f.path)),
                );
            }
        }
        if let Ok(loaded) = load_str(
            &file,
            &text,
            &Context {
                host_cores: None,
                exists: None,
            },
        ) {
            if let Ok(i) = Inputs::read(&loaded.plan, &WorkingTree::new(plan_dir(plan))) {
                paths.extend(
                    i.files
                        .iter()
                        .filter_map(|f| repo_path(&top, &rel, &f.path)),
                );
            }
        }
        paths.sort();
        paths.dedup();
        let path_refs: Vec<&str> = paths.iter().map(String::as_str).collect();
        let mut commits = vec![registration.clone()];
        commits.extend(git::commits_touching(&top, &path_refs, &registration.hash)?);
        let mut versions = Vec::new();
        let mut last_text = None;
        for (i, c) in commits.into_iter().enumerate() {
            let name = format!("{rel}@{}", short(&c.hash));
            match git::show(&top, &c.hash, &rel)? {
                Some(t) => {
                    let tree = GitTree::new(&top, &c.hash, &rel);
                    versions.push(PlanVersion::with_inputs(
                        Rev::Commit(c),
                        &name,
                        &t,
                        Some(&tree),
                    ));
                    last_text = Some(t);
                }
                None if i == 0 => {
                    return Err(AuditError::NotInCommit {
                        file: rel,
                        rev: registered.unwrap_or(&c.hash).to_string(),
                    })
                }
                None => {
                    versions.push(PlanVersion {
                        rev: Rev::Commit(c),
                        plan_hash: None,
                        document: None,
                        study: None,
                        runs: Vec::new(),
                        error: Some("the commit deletes the plan file".into()),
                        plan: None,
                        inputs_digest: None,
                        inputs: Vec::new(),
                    });
                    last_text = None;
                }
            }
        }
        // The working tree is a version of its own when the plan's text or its inputs differ
        // from the last commit's.
        let working = WorkingTree::new(plan_dir(plan));
        let now = PlanVersion::with_inputs(Rev::WorkingTree, &file, &text, Some(&working));
        let last = versions.iter().rev().find(|v| v.rev.committed());
        let same_inputs = last.is_some_and(|l| l.inputs_digest == now.inputs_digest);
        if last_text.as_deref() != Some(text.as_str()) || !same_inputs {
            versions.push(now);
        }
        Ok(History {
            plan_file: rel,
            versions,
        })
    }
}

/// The directory of the plan file as the user named it.
fn plan_dir(plan: &Path) -> &Path {
    match plan.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// An input's plan path as a path in the repository; None when it leads out of it.
fn repo_path(top: &Path, plan_rel: &str, path: &str) -> Option<String> {
    if path.starts_with("feedbench:") {
        return None;
    }
    let base = plan_rel.rsplit_once('/').map_or("", |(d, _)| d);
    crate::inputs::tree::in_repository(top, base, path)
}

/// One field that differs between two plan documents.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldChange {
    /// e.g. `caps.fault-proxy.cpus`, `matrix.runs[1].fault`.
    pub path: String,
    /// None: the field is new.
    pub old: Option<Value>,
    /// None: the field is gone.
    pub new: Option<Value>,
}

impl std::fmt::Display for FieldChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |v: &Option<Value>| v.as_ref().map_or("(absent)".into(), canonical_json);
        write!(
            f,
            "`{}`: {} → {}",
            self.path,
            show(&self.old),
            show(&self.new)
        )
    }
}

/// A plan document's hypotheses as it states them: `id → (text, check)`.
pub fn stated_hypotheses(doc: Option<&Value>) -> BTreeMap<String, (String, Option<String>)> {
    doc.and_then(|d| d.pointer("/study/hypotheses"))
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|h| {
                    let s = |k: &str| h.get(k).and_then(Value::as_str).map(String::from);
                    Some((s("id")?, (s("text").unwrap_or_default(), s("check"))))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The differences between two plan documents, field by field, in document order of keys
/// (sorted) and array indexes. Numbers compare by their canonical form, as the plan hash
/// does, so `1` and `1.0` are the same value.
pub fn diff(old: &Value, new: &Value) -> Vec<FieldChange> {
    let mut out = Vec::new();
    walk(old, new, String::new(), &mut out);
    out
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn walk(old: &Value, new: &Value, path: String, out: &mut Vec<FieldChange>) {
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let p = join(&path, k);
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => walk(x, y, p, out),
                    (x, y) => out.push(FieldChange {
                        path: p,
                        old: x.cloned(),
                        new: y.cloned(),
                    }),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for i in 0..a.len().max(b.len()) {
                let p = format!("{path}[{i}]");
                match (a.get(i), b.get(i)) {
                    (Some(x), Some(y)) => walk(x, y, p, out),
                    (x, y) => out.push(FieldChange {
                        path: p,
                        old: x.cloned(),
                        new: y.cloned(),
                    }),
                }
            }
        }
        (a, b) if canonical_json(a) != canonical_json(b) => out.push(FieldChange {
            path,
            old: Some(a.clone()),
            new: Some(b.clone()),
        }),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_hash_is_shortened_at_a_character_boundary_whatever_it_holds() {
        assert_eq!(short("0123456789abcdef"), "0123456789ab");
        assert_eq!(short("abc"), "abc");
        assert_eq!(short(""), "");
        // A multibyte character straddling byte 12 (a byte slice would panic there).
        assert_eq!(short("0123456789aé0123"), "0123456789aé");
        assert_eq!(short("ééééééééééééé"), "éééééééééééé");
    }

    #[test]
    fn diffs_name_the_field_path_and_both_values() {
        let a = json!({"caps": {"fault-proxy": {"cpus": 0.25, "memory": "64MiB"}},
                       "matrix": {"runs": [{"profile": "ramp"}, {"profile": "b", "fault": "x"}]}});
        let b = json!({"caps": {"fault-proxy": {"cpus": 0.5, "memory": "64MiB"}},
                       "matrix": {"runs": [{"profile": "ramp"}, {"profile": "b"}], "repetitions": 2}});
        let d = diff(&a, &b);
        let shown: Vec<String> = d.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "`caps.fault-proxy.cpus`: 0.25 → 0.5",
                "`matrix.repetitions`: (absent) → 2",
                "`matrix.runs[1].fault`: \"x\" → (absent)",
            ]
        );
        assert!(diff(&json!({"a": 1}), &json!({"a": 1.0})).is_empty());
    }

    #[test]
    fn a_version_that_does_not_load_keeps_its_hash_and_says_why() {
        let v = PlanVersion::from_text(Rev::WorkingTree, "p.yaml", "study: {name: x}\n");
        assert!(v.plan_hash.is_some());
        assert!(v.runs.is_empty());
        assert!(
            v.error.as_deref().unwrap().contains("p.yaml"),
            "{:?}",
            v.error
        );
        let v = PlanVersion::from_text(Rev::WorkingTree, "p.yaml", "a: [\n");
        assert!(v.plan_hash.is_none() && v.document.is_none());
    }
}
