//! A run's manifest, `manifest.json`: what defined the run, where and with what it ran, how
//! it ended on each axis, and the sha256 of every other file in its directory. It is written
//! last and atomically: a run directory with a manifest is complete, one without is not.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::evidence::Evidence;
use crate::files::{digest_tree, write_atomic, FileDigest, FileError};

pub const FORMAT_VERSION: u32 = 1;
pub const FILE: &str = crate::rundir::MANIFEST_JSON;

pub use crate::engines::cpu::Cpu;
pub use crate::git::Git;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Host {
    pub cores: f64,
    pub memory_bytes: i64,
    pub kernel: String,
    pub cgroup_version: String,
    pub engine_version: String,
    /// The processor, as the host states it (`engines::cpu`); absent from manifests written
    /// before it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<Cpu>,
}

/// A container of the run and the image it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Image {
    pub role: String,
    pub container: String,
    pub image: String,
    /// The engine's image ID (`sha256:…`) at deploy.
    pub image_id: Option<String>,
    /// The engine it ran on, by the engines file's name (`local` without one). Absent from
    /// manifests written before runs were placed on several engines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
}

/// An engine a run used and the facts of its host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineHost {
    pub name: String,
    pub host: Host,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Execution {
    Completed,
    Interrupted,
    Aborted,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "validity", rename_all = "kebab-case")]
pub enum Validity {
    Valid,
    Invalid {
        reason: String,
        evidence: Vec<Evidence>,
    },
}

/// How the run ended, one axis at a time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub execution: Execution,
    /// Why a run was aborted: the guard and its figure, or the failure.
    pub execution_detail: Option<String>,
    /// `ok` or `failed`.
    pub cleanup: String,
    pub validity: Validity,
    /// `met`, `breached`, or None when the run has no verdict (no measured requests).
    pub objective: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format_version: u32,
    pub study: String,
    pub plan_file: String,
    pub plan_hash: String,
    pub run_id: String,
    pub run_hash: String,
    pub attempt: u32,
    pub feedbench_version: String,
    pub git: Git,
    /// The system engine's host.
    pub host: Host,
    /// Every engine the run used (the system's first) and its host's facts; absent from
    /// manifests written before runs were placed on several engines.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub engines: Vec<EngineHost>,
    pub images: Vec<Image>,
    /// The seeding digest of the snapshot the run's database started from
    /// (`spec::seed::digest`); absent when it ran its init scripts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed_digest: Option<String>,
    /// Every input file the run depends on (`crate::inputs`): path, role, sha256, bytes.
    /// Absent from manifests written before inputs were recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<crate::inputs::InputFile>,
    /// Every container's caps, planned and read back (run.json's `caps`); absent from
    /// manifests written before caps were read back, and for runs never deployed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caps: Vec<crate::rundir::caps::ReadCaps>,
    pub started_wall_ns: String,
    pub ended_wall_ns: String,
    pub outcome: Outcome,
    /// Every other file of the directory, by relative path.
    pub files: BTreeMap<String, FileDigest>,
}

#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error(transparent)]
    File(#[from] FileError),
    #[error("`{path}` is not a manifest: {error}")]
    Parse { path: String, error: String },
}

impl Manifest {
    /// Hashes the directory's files into the manifest and writes it, atomically, last.
    pub fn seal(mut self, dir: &Path) -> Result<Manifest, ManifestError> {
        self.files = digest_tree(dir, &[FILE])?;
        let json = serde_json::to_vec_pretty(&self).expect("manifests serialise");
        write_atomic(&dir.join(FILE), &json)?;
        Ok(self)
    }

    /// Reads `dir/manifest.json`; Ok(None) when there is none.
    pub fn read(dir: &Path) -> Result<Option<Manifest>, ManifestError> {
        let path = dir.join(FILE);
        let bytes = match crate::confine::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(FileError {
                    action: "read",
                    path,
                    source,
                }
                .into())
            }
        };
        let m: Manifest = serde_json::from_slice(&bytes).map_err(|e| ManifestError::Parse {
            path: path.display().to_string(),
            error: e.to_string(),
        })?;
        if m.format_version != FORMAT_VERSION {
            return Err(ManifestError::Parse {
                path: path.display().to_string(),
                error: format!(
                    "format_version {}; this feedbench reads {FORMAT_VERSION} (use the feedbench that wrote it)",
                    m.format_version
                ),
            });
        }
        Ok(Some(m))
    }
}

/// A difference between a manifest's file list and the directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Mismatch {
    Changed {
        file: String,
        recorded: String,
        now: String,
    },
    Missing {
        file: String,
    },
    Extra {
        file: String,
    },
    /// A symbolic link in the directory: feedbench never makes one, and never follows it.
    Link {
        file: String,
    },
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mismatch::Changed {
                file,
                recorded,
                now,
            } => write!(
                f,
                "`{file}` changed: sha256 {} recorded, {} now",
                crate::files::short(recorded),
                crate::files::short(now)
            ),
            Mismatch::Missing { file } => write!(f, "`{file}` is recorded but missing"),
            Mismatch::Extra { file } => write!(f, "`{file}` is not in the manifest"),
            Mismatch::Link { file } => {
                write!(f, "`{file}` is a symbolic link, which is never followed")
            }
        }
    }
}

/// Checks the directory against the manifest's digests.
pub fn verify(dir: &Path, manifest: &Manifest) -> Result<Vec<Mismatch>, FileError> {
    let now = digest_tree(dir, &[FILE])?;
    let mut out = Vec::new();
    for (file, d) in &manifest.files {
        match now.get(file) {
            None => out.push(Mismatch::Missing { file: file.clone() }),
            Some(n) if n.sha256 != d.sha256 => out.push(Mismatch::Changed {
                file: file.clone(),
                recorded: d.sha256.clone(),
                now: n.sha256.clone(),
            }),
            Some(_) => {}
        }
    }
    for file in now.keys() {
        if !manifest.files.contains_key(file) {
            out.push(Mismatch::Extra { file: file.clone() });
        }
    }
    for file in crate::files::links_under(dir)? {
        out.push(Mismatch::Link { file });
    }
    Ok(out)
}

/// A manifest with placeholder facts, for tests in this crate and the binary's.
#[doc(hidden)]
pub fn sample_for_tests() -> Manifest {
    Manifest {
        format_version: FORMAT_VERSION,
        study: "s".into(),
        plan_file: "p.yaml".into(),
        plan_hash: "ph".into(),
        run_id: "a/b/r1".into(),
        run_hash: "rh".into(),
        attempt: 1,
        feedbench_version: "0".into(),
        git: Git {
            commit: None,
            path: None,
            clean: None,
        },
        host: Host {
            cores: 2.0,
            memory_bytes: 1,
            kernel: "k".into(),
            cgroup_version: "2".into(),
            engine_version: "e".into(),
            cpu: None,
        },
        engines: Vec::new(),
        images: Vec::new(),
        seed_digest: None,
        inputs: Vec::new(),
        caps: Vec::new(),
        started_wall_ns: "1".into(),
        ended_wall_ns: "2".into(),
        outcome: Outcome {
            execution: Execution::Completed,
            execution_detail: None,
            cleanup: "ok".into(),
            validity: Validity::Valid,
            objective: Some("met".into()),
        },
        files: BTreeMap::new(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn sample() -> Manifest {
        sample_for_tests()
    }

    #[test]
    fn a_sealed_directory_verifies_until_one_byte_changes() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("requests.csv"), b"start_ns\n1\n").unwrap();
        let m = sample().seal(d.path()).unwrap();
        assert_eq!(m.files.len(), 1);
        let back = Manifest::read(d.path()).unwrap().unwrap();
        assert_eq!(back, m);
        assert!(verify(d.path(), &back).unwrap().is_empty());

        std::fs::write(d.path().join("requests.csv"), b"start_ns\n2\n").unwrap();
        std::fs::write(d.path().join("new.csv"), b"").unwrap();
        let bad = verify(d.path(), &back).unwrap();
        assert_eq!(bad.len(), 2);
        assert!(matches!(&bad[0], Mismatch::Changed { file, .. } if file == "requests.csv"));
        assert!(matches!(&bad[1], Mismatch::Extra { file } if file == "new.csv"));
        std::fs::remove_file(d.path().join("requests.csv")).unwrap();
        assert!(matches!(
            &verify(d.path(), &back).unwrap()[0],
            Mismatch::Missing { .. }
        ));
        // A link is named, never followed (tests/offline/hostile_study.rs).
        std::os::unix::fs::symlink("/etc/hostname", d.path().join("requests.csv")).unwrap();
        let bad = verify(d.path(), &back).unwrap();
        assert!(matches!(&bad[0], Mismatch::Missing { file } if file == "requests.csv"));
        assert!(matches!(bad.last(), Some(Mismatch::Link { file }) if file == "requests.csv"));
    }

    #[test]
    fn no_manifest_reads_as_none() {
        let d = tempfile::tempdir().unwrap();
        assert!(Manifest::read(d.path()).unwrap().is_none());
    }
}
