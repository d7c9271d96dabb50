//! Helpers for audit tests: a git repository in a temporary directory holding a committed
//! plan, and `feedbench audit` run in it. A test over a real run's results uses the same
//! helpers: make the repository, run the study in it, then audit.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value as Json;

/// A git repository in a temporary directory, deleted on drop.
pub struct Repo {
    pub dir: tempfile::TempDir,
}

impl Repo {
    /// An empty repository with an author configured.
    pub fn new() -> Repo {
        let r = Repo {
            dir: tempfile::tempdir().unwrap(),
        };
        r.git(&["init", "-q"]);
        r.git(&["config", "user.email", "audit@example.invalid"]);
        r.git(&["config", "user.name", "audit"]);
        r.git(&["config", "commit.gpgsign", "false"]);
        r
    }

    /// A repository with `plan` (a file of this project, e.g. `tests/plans/valid/minimal.yaml`)
    /// copied to `rel` and committed: the plan's registration.
    pub fn with_plan(plan: &str, rel: &str) -> Repo {
        let r = Repo::new();
        let text = std::fs::read_to_string(super::repo().join(plan)).unwrap();
        r.write(rel, &text);
        r.commit("register the plan");
        r
    }

    /// Copies the project's directories `dirs` (e.g. `contenders`, `images`) into the
    /// repository, to be committed with the plan: a plan's relative paths (build contexts,
    /// init scripts) resolve as they do in the project, and its inputs are registered with it.
    pub fn copy_project_dirs(&self, dirs: &[&str]) {
        for d in dirs {
            let out = Command::new("cp")
                .arg("-R")
                .arg(super::repo().join(d))
                .arg(self.path(d))
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }

    /// A repository holding the project's `contenders/` and `images/` and the plan
    /// `experiments/<name>` copied from the project, committed together: a registered study.
    pub fn with_project_plan(name: &str) -> Repo {
        let repo = Repo::new();
        repo.copy_project_dirs(&["contenders", "images"]);
        let rel = format!("experiments/{name}");
        let text = std::fs::read_to_string(super::repo().join(&rel)).unwrap();
        repo.write(&rel, &text);
        repo.commit("register the plan");
        repo
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .arg("-C")
            .arg(self.dir.path())
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn write(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    /// Commits every change; returns the commit's hash.
    pub fn commit(&self, message: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-qm", message]);
        self.git(&["rev-parse", "HEAD"]).trim().to_string()
    }
}

/// What `feedbench audit` did.
pub struct Audit {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Audit {
    pub fn json(&self) -> Json {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", self.stdout, self.stderr))
    }

    /// (kind, subject) of every undeclared item of a JSON report.
    pub fn undeclared(&self) -> Vec<(String, String)> {
        self.json()["deviations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["standing"] == "undeclared")
            .map(|i| {
                (
                    i["kind"].as_str().unwrap().to_string(),
                    i["subject"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }
}

/// Runs `feedbench audit <args…>` in `dir`.
pub fn audit(dir: &Path, args: &[&str]) -> Audit {
    let out = assert_cmd::Command::cargo_bin("feedbench")
        .unwrap()
        .current_dir(dir)
        .arg("audit")
        .args(args)
        .output()
        .unwrap();
    let a = Audit {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(!a.stderr.contains("panicked"), "{}", a.stderr);
    a
}
