//! Settling a run in the study's ledger once it ended: its manifest, where its directory
//! belongs (`runs/`, or moved aside to `_invalid_<reason>/`, `_aborted/`, `_interrupted/`),
//! and the journal event that says so, in that order, so that a crash between two steps
//! leaves a run the next resume finds open and records as interrupted.

use std::path::Path;

use crate::ledger::journal::{Event, Writer};
use crate::ledger::manifest::{
    self, EngineHost, Execution as Axis, Git, Host, Image, Manifest, Outcome, Validity,
};
use crate::ledger::Decider;
use crate::plan::RunSpec;
use crate::rundir::layout::{self, ABORTED, INTERRUPTED};
use crate::rundir::record::{Ending, RunRecord};
use feedbench_core::files;

#[derive(Debug, thiserror::Error)]
pub enum SettleError {
    #[error(transparent)]
    Manifest(#[from] manifest::ManifestError),
    #[error(transparent)]
    File(#[from] files::FileError),
}

/// What every manifest of one `feedbench run` shares.
#[derive(Debug, Clone)]
pub struct StudyContext {
    pub study: String,
    /// The study's instance on the engines: what its containers carry and its reaps remove.
    pub instance: crate::spec::topology::Instance,
    pub plan_file: String,
    pub plan_hash: String,
    pub git: Git,
    pub host: Host,
    /// Every engine the runs use and its host's facts.
    pub engines: Vec<EngineHost>,
    /// The plan's inputs as read when the study started.
    pub inputs: feedbench_core::inputs::Inputs,
}

pub fn feedbench_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

fn manifest(
    ctx: &StudyContext,
    run: &RunSpec,
    attempt: u32,
    images: Vec<Image>,
    record: Option<&RunRecord>,
    outcome: Outcome,
) -> Manifest {
    Manifest {
        format_version: manifest::FORMAT_VERSION,
        study: ctx.study.clone(),
        plan_file: ctx.plan_file.clone(),
        plan_hash: ctx.plan_hash.clone(),
        run_id: run.id.clone(),
        run_hash: run.run_hash.clone(),
        attempt,
        feedbench_version: feedbench_version(),
        git: ctx.git.clone(),
        host: ctx.host.clone(),
        engines: ctx.engines.clone(),
        images,
        seed_digest: record.and_then(|r| r.seed.as_ref().map(|s| s.digest.clone())),
        inputs: ctx.inputs.files_of(&run.inputs),
        caps: record.map_or_else(Vec::new, |r| r.caps.clone()),
        started_wall_ns: record.map_or(String::new(), |r| r.started_wall_ns.to_string()),
        ended_wall_ns: record.map_or(String::new(), |r| r.ended_wall_ns.to_string()),
        outcome,
        files: Default::default(),
    }
}

/// Puts a run sealed from [`unsealed`] where its outcome says, and journals it; the study
/// loop seals off the thread that drives the runs under way, then calls this.
pub fn place_sealed(
    study_dir: &Path,
    journal: &mut Writer,
    sealed: &Manifest,
    dir: &Path,
) -> Result<Event, SettleError> {
    place(study_dir, journal, sealed, dir, true)
}

/// The manifest of a run that `execute` returned, not sealed yet (`Manifest::seal` digests
/// the run directory, the slow part of settling).
pub fn unsealed(
    ctx: &StudyContext,
    run: &RunSpec,
    attempt: u32,
    record: &RunRecord,
    images: Vec<Image>,
    objective: Option<&str>,
) -> Manifest {
    let cleanup = if record.cleanup_ok { "ok" } else { "failed" }.to_string();
    let (axis, detail) = match &record.execution {
        Ending::Completed => (Axis::Completed, None),
        Ending::Aborted {
            guard,
            figure,
            threshold,
            unit,
            detail,
        } => (
            Axis::Aborted,
            Some(format!(
                "guard {guard}: {figure} {unit} against {threshold} {unit} ({detail})"
            )),
        ),
        Ending::Failed { reason } => (Axis::Aborted, Some(format!("failed: {reason}"))),
    };
    let validity = if axis == Axis::Completed && !record.validity.is_empty() {
        Validity::Invalid {
            reason: crate::validity::reason(&record.validity),
            evidence: record.validity.clone(),
        }
    } else {
        Validity::Valid
    };
    let outcome = Outcome {
        execution: axis,
        execution_detail: detail.clone(),
        cleanup,
        validity: validity.clone(),
        objective: objective.map(str::to_string),
    };
    manifest(ctx, run, attempt, images, Some(record), outcome)
}

/// Puts a sealed run where its outcome says (moving it when `move_it`, else taking `dir` as
/// where it already is) and journals it. Shared by `place_sealed` and by `recover`, which finishes
/// what a crash between sealing and journalling left undone.
fn place(
    study_dir: &Path,
    journal: &mut Writer,
    m: &Manifest,
    dir: &Path,
    move_it: bool,
) -> Result<Event, SettleError> {
    let rel = |p: &Path| layout::relative(study_dir, p);
    let to = |area: &str| -> Result<std::path::PathBuf, SettleError> {
        if move_it {
            Ok(files::move_dir(
                dir,
                &layout::aside(study_dir, area, &m.run_id),
            )?)
        } else {
            Ok(dir.to_path_buf())
        }
    };
    let (run, run_hash, attempt) = (m.run_id.clone(), m.run_hash.clone(), m.attempt);
    let event = match (m.outcome.execution, &m.outcome.validity) {
        (Axis::Completed, Validity::Valid) => Event::RunFinished {
            run,
            run_hash,
            attempt,
            dir: rel(dir),
            objective: m.outcome.objective.clone(),
            cleanup_ok: m.outcome.cleanup == "ok",
        },
        (Axis::Completed, Validity::Invalid { reason, evidence }) => Event::RunInvalidated {
            run,
            run_hash,
            attempt,
            dir: rel(&to(&layout::invalid_area(reason))?),
            reason: reason.clone(),
            by: Decider::Feedbench,
            evidence: evidence.clone(),
        },
        (Axis::Interrupted, _) => Event::RunInterrupted {
            run,
            run_hash,
            attempt,
            dir: rel(&to(INTERRUPTED)?),
            found: "a directory sealed as interrupted".into(),
        },
        (Axis::Aborted, _) => Event::RunAborted {
            run,
            run_hash,
            attempt,
            dir: rel(&to(ABORTED)?),
            reason: m.outcome.execution_detail.clone().unwrap_or_default(),
        },
    };
    journal.append(event.clone())?;
    Ok(event)
}

/// A sealed directory of this attempt that a crash left moved but not journalled: in one of
/// the study's areas (`_invalid_*`, `_aborted`, …) under the run's slug, or `slug.N`.
pub fn find_moved(
    study_dir: &Path,
    run: &str,
    run_hash: &str,
    attempt: u32,
) -> Option<std::path::PathBuf> {
    let slug = crate::plan::expand::run_slug(run);
    let areas = std::fs::read_dir(study_dir).ok()?;
    for area in areas.flatten() {
        let name = area.file_name().to_string_lossy().into_owned();
        if !name.starts_with('_') {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(area.path()) else {
            continue;
        };
        for e in entries.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if !crate::rundir::layout::is_copy_of(&n, &slug) {
                continue;
            }
            if let Ok(Some(m)) = Manifest::read(&e.path()) {
                if m.run_id == run && m.run_hash == run_hash && m.attempt == attempt {
                    return Some(e.path());
                }
            }
        }
    }
    None
}

/// Settles a run the journal shows started and not settled: from its manifest when the
/// crash came after sealing (in place, or already moved aside), else as interrupted.
pub fn recover(
    study_dir: &Path,
    journal: &mut Writer,
    run: &str,
    run_hash: &str,
    attempt: u32,
    dir: &Path,
) -> Result<Event, SettleError> {
    let ours = |m: &Manifest| m.run_id == run && m.run_hash == run_hash && m.attempt == attempt;
    if dir.exists() {
        if let Ok(Some(m)) = Manifest::read(dir) {
            if ours(&m) {
                return place(study_dir, journal, &m, dir, true);
            }
        }
    } else if let Some(found) = find_moved(study_dir, run, run_hash, attempt) {
        if let Ok(Some(m)) = Manifest::read(&found) {
            return place(study_dir, journal, &m, &found, false);
        }
    }
    interrupted(study_dir, journal, run, run_hash, attempt, dir)
}

/// Records a run `execute` could not carry out (an error, not a guard): its directory, if
/// any, moves to `_aborted/` unsealed, and the journal says why.
pub fn aborted(
    study_dir: &Path,
    journal: &mut Writer,
    run: &RunSpec,
    attempt: u32,
    dir: &Path,
    reason: &str,
) -> Result<Event, SettleError> {
    let moved = if dir.exists() {
        files::move_dir(dir, &layout::aside(study_dir, ABORTED, &run.id))?
    } else {
        dir.to_path_buf()
    };
    let event = Event::RunAborted {
        run: run.id.clone(),
        run_hash: run.run_hash.clone(),
        attempt,
        dir: layout::relative(study_dir, &moved),
        reason: format!("failed: {reason}"),
    };
    journal.append(event.clone())?;
    Ok(event)
}

/// What an interrupted run's directory held, in words.
pub fn describe(dir: &Path) -> String {
    if !dir.exists() {
        return "no directory".into();
    }
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let has_manifest = names.iter().any(|n| n == manifest::FILE);
    format!(
        "{}; {}",
        if names.is_empty() {
            "an empty directory".to_string()
        } else {
            names.join(", ")
        },
        if has_manifest {
            "sealed"
        } else {
            "no manifest"
        }
    )
}

/// Records a run that started and did not end (this process was interrupted, or an
/// earlier one died): its directory moves to `_interrupted/`, the journal says what it held.
pub fn interrupted(
    study_dir: &Path,
    journal: &mut Writer,
    run: &str,
    run_hash: &str,
    attempt: u32,
    dir: &Path,
) -> Result<Event, SettleError> {
    let found = describe(dir);
    let moved = if dir.exists() {
        layout::relative(
            study_dir,
            &files::move_dir(dir, &layout::aside(study_dir, INTERRUPTED, run))?,
        )
    } else {
        layout::relative(study_dir, dir)
    };
    let event = Event::RunInterrupted {
        run: run.to_string(),
        run_hash: run_hash.to_string(),
        attempt,
        dir: moved,
        found,
    };
    journal.append(event.clone())?;
    Ok(event)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::journal;

    fn sealed(study: &Path, area_dir: &Path, validity: Validity) -> Manifest {
        let mut m = crate::ledger::manifest::sample_for_tests();
        m.run_id = "a/b/r1".into();
        m.run_hash = "rh".into();
        m.attempt = 2;
        m.outcome.validity = validity;
        std::fs::create_dir_all(area_dir).unwrap();
        std::fs::write(area_dir.join("requests.csv"), "start_ns\n").unwrap();
        let _ = study;
        m.seal(area_dir).unwrap()
    }

    fn invalid() -> Validity {
        Validity::Invalid {
            reason: "fault-proxy-cpu".into(),
            evidence: Vec::new(),
        }
    }

    #[test]
    fn a_run_sealed_but_not_moved_is_settled_from_its_manifest() {
        let d = tempfile::tempdir().unwrap();
        let study = d.path();
        let dir = study.join("runs/a_b_r1");
        sealed(study, &dir, invalid());
        let mut w = Writer::open(&study.join(journal::FILE)).unwrap();
        let e = recover(study, &mut w, "a/b/r1", "rh", 2, &dir).unwrap();
        assert!(
            matches!(&e, Event::RunInvalidated { dir, attempt: 2, .. } if dir == "_invalid_fault-proxy-cpu/a_b_r1"),
            "{e:?}"
        );
        assert!(!dir.exists());
        assert!(study
            .join("_invalid_fault-proxy-cpu/a_b_r1/manifest.json")
            .exists());
    }

    #[test]
    fn a_run_moved_but_not_journalled_is_found_where_it_went() {
        let d = tempfile::tempdir().unwrap();
        let study = d.path();
        sealed(
            study,
            &study.join("_invalid_fault-proxy-cpu/a_b_r1.2"),
            invalid(),
        );
        let mut w = Writer::open(&study.join(journal::FILE)).unwrap();
        let e = recover(study, &mut w, "a/b/r1", "rh", 2, &study.join("runs/a_b_r1")).unwrap();
        assert!(
            matches!(&e, Event::RunInvalidated { dir, .. } if dir == "_invalid_fault-proxy-cpu/a_b_r1.2"),
            "{e:?}"
        );
        // Another attempt's directory is never taken for this one.
        let e = recover(study, &mut w, "a/b/r1", "rh", 3, &study.join("runs/a_b_r1")).unwrap();
        assert!(
            matches!(&e, Event::RunInterrupted { found, .. } if found == "no directory"),
            "{e:?}"
        );
    }

    #[test]
    fn an_unsealed_directory_is_interrupted_and_moved_aside() {
        let d = tempfile::tempdir().unwrap();
        let study = d.path();
        let dir = study.join("runs/a_b_r1");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("events.csv"), "x\n").unwrap();
        let mut w = Writer::open(&study.join(journal::FILE)).unwrap();
        let e = recover(study, &mut w, "a/b/r1", "rh", 1, &dir).unwrap();
        assert!(
            matches!(&e, Event::RunInterrupted { dir, found, .. }
                if dir == "_interrupted/a_b_r1" && found == "events.csv; no manifest"),
            "{e:?}"
        );
        assert_eq!(
            journal::read(&study.join(journal::FILE))
                .unwrap()
                .entries
                .len(),
            1
        );
    }
}
