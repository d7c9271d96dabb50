//! The plan's registration in git, read with the `git` command (argv only, never a shell):
//! HEAD's commit, the plan file's path in the repository, and whether the file as it is on
//! disk equals the committed one.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::ledger::manifest::Git;

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
    fn outside_a_repository_nothing_is_known() {
        let d = tempfile::tempdir().unwrap();
        let plan = d.path().join("p.yaml");
        std::fs::write(&plan, "a: 1\n").unwrap();
        let g = registration(&plan).unwrap();
        assert_eq!((g.commit, g.path, g.clean), (None, None, None));
    }
}
