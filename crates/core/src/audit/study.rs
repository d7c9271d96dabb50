//! What a study directory holds, read once: the journal, every run directory in `runs/` and
//! in the areas runs are moved to, each directory's manifest checked against its files, and
//! whether each directory the journal names is there; and the pilot areas under `pilots/`,
//! which are not the study's runs (`pilots`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::pilots::PilotAreas;
use crate::ledger::files::{fail, FileError};
use crate::ledger::journal::{self, Event, Journal};
use crate::ledger::layout::RUNS;
use crate::ledger::manifest::{self, Manifest, Mismatch};

/// A run directory as found on disk.
#[derive(Debug, Clone)]
pub struct RunDir {
    /// Relative to the study directory, e.g. `runs/svc_ramp_r1`, `_superseded/svc_ramp_r1`.
    pub dir: String,
    /// Ok(None): the directory has no manifest. Err: the manifest does not read.
    pub manifest: Result<Option<Manifest>, String>,
    /// The files that no longer match the manifest.
    pub mismatches: Vec<Mismatch>,
}

/// A study directory, read.
#[derive(Debug, Clone)]
pub struct StudyFiles {
    pub dir: PathBuf,
    pub journal: Journal,
    /// Run directories found, sorted by path.
    pub run_dirs: Vec<RunDir>,
    /// Every directory the journal names, and whether it is there.
    pub journal_dirs: BTreeMap<String, bool>,
    /// The study's pilot areas, read apart from its runs.
    pub pilots: PilotAreas,
}

/// Whether a top-level entry of the study directory holds run directories: `runs/` and the
/// areas runs are moved aside to, which all start with `_`.
fn is_area(name: &str) -> bool {
    name == RUNS || name.starts_with('_')
}

fn subdirs(dir: &Path) -> Result<Vec<String>, FileError> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).map_err(fail("list", dir))? {
        let e = e.map_err(fail("list", dir))?;
        if e.file_type().map_err(fail("stat", &e.path()))?.is_dir() {
            out.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    out.sort();
    Ok(out)
}

/// The directories journal events name (relative to the study directory).
pub fn dirs_named(event: &Event) -> Option<&str> {
    match event {
        Event::RunStarted { dir, .. }
        | Event::RunFinished { dir, .. }
        | Event::RunAborted { dir, .. }
        | Event::RunInterrupted { dir, .. }
        | Event::RunInvalidated { dir, .. }
        | Event::RunSupersededByDependency { dir, .. } => Some(dir),
        Event::RunSuperseded { dir, .. } => dir.as_deref(),
        _ => None,
    }
}

impl StudyFiles {
    /// Reads the study directory `dir` (which must exist).
    pub fn read(dir: &Path) -> Result<StudyFiles, FileError> {
        let journal = journal::read(&dir.join(journal::FILE))?;
        let mut run_dirs = Vec::new();
        for area in subdirs(dir)?.into_iter().filter(|a| is_area(a)) {
            for name in subdirs(&dir.join(&area))? {
                let rel = format!("{area}/{name}");
                let path = dir.join(&area).join(&name);
                let manifest = Manifest::read(&path).map_err(|e| e.to_string());
                let mismatches = match &manifest {
                    Ok(Some(m)) => manifest::verify(&path, m)?,
                    _ => Vec::new(),
                };
                run_dirs.push(RunDir {
                    dir: rel,
                    manifest,
                    mismatches,
                });
            }
        }
        let journal_dirs = journal
            .events()
            .filter_map(dirs_named)
            .map(|d| (d.to_string(), dir.join(d).is_dir()))
            .collect();
        Ok(StudyFiles {
            dir: dir.to_path_buf(),
            journal,
            run_dirs,
            journal_dirs,
            pilots: PilotAreas::read(dir),
        })
    }
}
