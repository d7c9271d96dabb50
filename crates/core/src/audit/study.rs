//! What a study directory holds, read once: the journal, every run directory in `runs/` and
//! in the areas runs are moved to, each directory's manifest checked against its files, and
//! whether each directory the journal names is there; and the pilot areas under `pilots/`,
//! which are not the study's runs (`pilots`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::pilots::PilotAreas;
use crate::files::{fail, FileError};
use crate::ledger::journal::{self, Event, Journal};
use crate::ledger::manifest::{self, Manifest, Mismatch};
use crate::rundir::layout::RUNS;

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
    /// Symbolic links where an area or a run directory would be (relative to the study
    /// directory), with where they point: never followed, and never made by feedbench.
    pub links: Vec<(String, String)>,
    /// The study's pilot areas, read apart from its runs.
    pub pilots: PilotAreas,
}

/// Whether a top-level entry of the study directory holds run directories: `runs/` and the
/// areas runs are moved aside to, which all start with `_`.
fn is_area(name: &str) -> bool {
    name == RUNS || name.starts_with('_')
}

/// The subdirectories of `dir` (links not followed), and the links among its entries.
fn subdirs(dir: &Path) -> Result<(Vec<String>, Vec<String>), FileError> {
    let (mut out, mut links) = (Vec::new(), Vec::new());
    for e in std::fs::read_dir(dir).map_err(fail("list", dir))? {
        let e = e.map_err(fail("list", dir))?;
        let kind = e.file_type().map_err(fail("stat", &e.path()))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if kind.is_dir() {
            out.push(name);
        } else if kind.is_symlink() {
            links.push(name);
        }
    }
    out.sort();
    links.sort();
    Ok((out, links))
}

/// Where the link at `path` points, for people.
fn target(path: &Path) -> String {
    std::fs::read_link(path).map_or_else(|_| "?".into(), |t| t.display().to_string())
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
        let (areas, top_links) = subdirs(dir)?;
        let mut links: Vec<(String, String)> = top_links
            .into_iter()
            .filter(|a| is_area(a))
            .map(|a| {
                let to = target(&dir.join(&a));
                (a, to)
            })
            .collect();
        for area in areas.into_iter().filter(|a| is_area(a)) {
            let (names, area_links) = subdirs(&dir.join(&area))?;
            for name in area_links {
                links.push((
                    format!("{area}/{name}"),
                    target(&dir.join(&area).join(&name)),
                ));
            }
            for name in names {
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
            .map(|d| {
                let there = crate::confine::inside(dir, d).is_ok_and(|p| p.is_dir());
                (d.to_string(), there)
            })
            .collect();
        Ok(StudyFiles {
            dir: dir.to_path_buf(),
            journal,
            run_dirs,
            journal_dirs,
            links,
            pilots: PilotAreas::read(dir),
        })
    }
}
