//! The plan's registration in git, read with the `git` command (argv only, never a shell):
//! HEAD's commit, the plan file's path in the repository, and whether the file as it is on
//! disk equals the committed one.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("cannot run git: {0}")]
    Spawn(#[source] std::io::Error),
    #[error("`git {args}` failed in `{dir}`: {stderr}")]
    Failed {
        args: String,
        dir: PathBuf,
        stderr: String,
    },
}

/// The plan's registration in git, as far as it can be told.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Git {
    /// HEAD's commit, when the plan file is in a git working tree.
    pub commit: Option<String>,
    /// The plan file's path in the repository.
    pub path: Option<String>,
    /// The plan file as run equals the file at `commit` (no uncommitted change).
    pub clean: Option<bool>,
}

/// Runs git in `dir`; Ok(None) when `dir` is not in a work tree.
pub fn git(dir: &Path, args: &[&str]) -> Result<Option<String>, GitError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .output()
        .map_err(GitError::Spawn)?;
    if out.status.success() {
        return Ok(Some(String::from_utf8_lossy(&out.stdout).into_owned()));
    }
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    if stderr.contains("not a git repository") {
        return Ok(None);
    }
    Err(GitError::Failed {
        args: args.join(" "),
        dir: dir.to_path_buf(),
        stderr,
    })
}

/// The repository's top directory and the plan's path in it; None outside a work tree.
pub fn locate(plan: &Path) -> Result<Option<(PathBuf, String)>, GitError> {
    let abs = std::fs::canonicalize(plan).unwrap_or_else(|_| plan.to_path_buf());
    let dir = abs.parent().unwrap_or(Path::new("."));
    let Some(top) = git(dir, &["rev-parse", "--show-toplevel"])? else {
        return Ok(None);
    };
    let top = PathBuf::from(top.trim());
    let top = std::fs::canonicalize(&top).unwrap_or(top);
    let rel = abs
        .strip_prefix(&top)
        .unwrap_or(&abs)
        .to_string_lossy()
        .replace('\\', "/");
    Ok(Some((top, rel)))
}

/// Where the plan stands in git: HEAD's commit, its path, and whether the file on disk is
/// the committed one (false for an untracked file or one with uncommitted changes).
pub fn registration(plan: &Path) -> Result<Git, GitError> {
    let Some((top, rel)) = locate(plan)? else {
        return Ok(Git {
            commit: None,
            path: None,
            clean: None,
        });
    };
    let commit = git(&top, &["rev-parse", "--verify", "-q", "HEAD"])
        .ok()
        .flatten()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    let tracked = git(&top, &["ls-files", "--error-unmatch", "--", &rel])
        .ok()
        .flatten()
        .is_some();
    let clean = if commit.is_some() && tracked {
        // Staged or unstaged changes against HEAD both count.
        git(&top, &["status", "--porcelain", "--", &rel])?.map(|s| s.trim().is_empty())
    } else {
        Some(false)
    };
    Ok(Git {
        commit,
        path: Some(rel),
        clean,
    })
}

/// A commit, as the audit names it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Commit {
    pub hash: String,
    /// The committer date, ISO 8601.
    pub date: String,
    /// The first line of the message.
    pub subject: String,
}

const COMMIT_FORMAT: &str = "--format=%H%x1f%cI%x1f%s";

fn commits(out: &str) -> Vec<Commit> {
    out.lines()
        .filter_map(|l| {
            let mut f = l.splitn(3, '\x1f');
            Some(Commit {
                hash: f.next()?.to_string(),
                date: f.next()?.to_string(),
                subject: f.next().unwrap_or_default().to_string(),
            })
        })
        .collect()
}

/// The commit `rev` names in the repository at `top`; None when it names none. A rev
/// starting with `-` is refused (None), so it can never be read as an option.
pub fn resolve(top: &Path, rev: &str) -> Result<Option<Commit>, GitError> {
    if rev.starts_with('-') || rev.is_empty() {
        return Ok(None);
    }
    let spec = format!("{rev}^{{commit}}");
    match git(top, &["rev-parse", "--verify", "-q", &spec]) {
        Ok(Some(hash)) => {
            let out = git(top, &["show", "-s", COMMIT_FORMAT, hash.trim()])?;
            Ok(out.and_then(|o| commits(&o).into_iter().next()))
        }
        Ok(None) | Err(GitError::Failed { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The first commit that added the file at `rel` (its registration); None when no commit
/// holds it (untracked, or a repository without commits).
pub fn first_commit(top: &Path, rel: &str) -> Result<Option<Commit>, GitError> {
    if resolve(top, "HEAD")?.is_none() {
        return Ok(None);
    }
    let out = git(top, &["log", "--reverse", COMMIT_FORMAT, "--", rel])?;
    Ok(out.and_then(|o| commits(&o).into_iter().next()))
}

/// The commits after `since`, up to HEAD, that touched any of the files or directories at
/// `rels`, oldest first.
pub fn commits_touching(top: &Path, rels: &[&str], since: &str) -> Result<Vec<Commit>, GitError> {
    let range = format!("{since}..HEAD");
    let mut args = vec!["log", "--reverse", COMMIT_FORMAT, &range, "--"];
    args.extend(rels);
    let out = git(top, &args)?;
    Ok(out.map(|o| commits(&o)).unwrap_or_default())
}

/// Of `rels` (files, paths in the repository at `top`), those that differ from HEAD or that
/// HEAD does not hold: what a registration does not cover.
pub fn uncommitted(top: &Path, rels: &[&str]) -> Result<Vec<String>, GitError> {
    if rels.is_empty() {
        return Ok(Vec::new());
    }
    let mut args = vec![
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--ignored=matching",
        "--",
    ];
    args.extend(rels);
    let out = git(top, &args)?.unwrap_or_default();
    let mut dirty: Vec<String> = out
        .split('\0')
        .filter(|e| e.len() > 3)
        .map(|e| e[3..].to_string())
        .filter(|p| rels.contains(&p.as_str()))
        .collect();
    dirty.sort();
    dirty.dedup();
    Ok(dirty)
}

/// Whether `ancestor` is HEAD or one of its ancestors.
pub fn is_ancestor_of_head(top: &Path, ancestor: &str) -> Result<bool, GitError> {
    match git(top, &["merge-base", "--is-ancestor", ancestor, "HEAD"]) {
        Ok(r) => Ok(r.is_some()),
        Err(GitError::Failed { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// The file at `rel` as commit `rev` holds it; None when the commit has no such file.
pub fn show(top: &Path, rev: &str, rel: &str) -> Result<Option<String>, GitError> {
    let spec = format!("{rev}:{rel}");
    if git(top, &["cat-file", "-e", &spec]).is_err() {
        return Ok(None);
    }
    git(top, &["cat-file", "blob", &spec])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn tells_committed_from_edited_from_untracked() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        run(r, &["init", "-q"]);
        run(r, &["config", "user.email", "t@example.invalid"]);
        run(r, &["config", "user.name", "t"]);
        std::fs::create_dir(r.join("experiments")).unwrap();
        let plan = r.join("experiments/p.yaml");
        std::fs::write(&plan, "a: 1\n").unwrap();
        let g = registration(&plan).unwrap();
        assert_eq!(g.clean, Some(false), "untracked");
        run(r, &["add", "."]);
        run(r, &["commit", "-qm", "register"]);
        let g = registration(&plan).unwrap();
        assert_eq!(g.clean, Some(true));
        assert_eq!(g.path.as_deref(), Some("experiments/p.yaml"));
        assert_eq!(g.commit.as_ref().map(String::len), Some(40));
        std::fs::write(&plan, "a: 2\n").unwrap();
        assert_eq!(registration(&plan).unwrap().clean, Some(false));
    }

    #[test]
    fn a_files_first_commit_later_commits_and_contents() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        run(r, &["init", "-q"]);
        run(r, &["config", "user.email", "t@example.invalid"]);
        run(r, &["config", "user.name", "t"]);
        assert_eq!(first_commit(r, "p.yaml").unwrap(), None, "no commits yet");
        std::fs::write(r.join("other"), "x").unwrap();
        run(r, &["add", "."]);
        run(r, &["commit", "-qm", "unrelated"]);
        assert_eq!(first_commit(r, "p.yaml").unwrap(), None, "never committed");
        std::fs::write(r.join("p.yaml"), "a: 1\n").unwrap();
        run(r, &["add", "."]);
        run(r, &["commit", "-qm", "register the plan"]);
        let reg = first_commit(r, "p.yaml").unwrap().unwrap();
        assert_eq!(reg.subject, "register the plan");
        assert_eq!(resolve(r, "HEAD").unwrap().as_ref(), Some(&reg));
        std::fs::write(r.join("other"), "y").unwrap();
        run(r, &["commit", "-qam", "unrelated again"]);
        std::fs::write(r.join("p.yaml"), "a: 2\n").unwrap();
        run(r, &["commit", "-qam", "edit the plan"]);
        let later = commits_touching(r, &["p.yaml"], &reg.hash).unwrap();
        assert_eq!(later.len(), 1);
        assert_eq!(later[0].subject, "edit the plan");
        assert_eq!(
            show(r, &reg.hash, "p.yaml").unwrap().as_deref(),
            Some("a: 1\n")
        );
        assert_eq!(
            show(r, &later[0].hash, "p.yaml").unwrap().as_deref(),
            Some("a: 2\n")
        );
        assert_eq!(show(r, &reg.hash, "nope.yaml").unwrap(), None);
        assert!(is_ancestor_of_head(r, &reg.hash).unwrap());
        assert_eq!(resolve(r, "no-such-rev").unwrap(), None);
        assert_eq!(resolve(r, "--all").unwrap(), None, "never an option");
    }

    #[test]
    fn outside_a_repository_nothing_is_known() {
        let d = tempfile::tempdir().unwrap();
        let plan = d.path().join("p.yaml");
        std::fs::write(&plan, "a: 1\n").unwrap();
        let g = registration(&plan).unwrap();
        assert_eq!((g.commit, g.path, g.clean), (None, None, None));
    }
}
