//! Settling a run in the study's ledger once it ended: its manifest, where its directory
//! belongs (`runs/`, or moved aside to `_invalid_<reason>/`, `_aborted/`, `_interrupted/`),
//! and the journal event that says so, in that order, so that a crash between two steps
//! leaves a run the next resume finds open and records as interrupted.

use std::path::Path;

use crate::ledger::journal::{Event, Writer};
use crate::ledger::layout::{self, ABORTED, INTERRUPTED};
use crate::ledger::manifest::{
    self, Execution as Axis, Git, Host, Image, Manifest, Outcome, Validity,
};
use crate::ledger::{files, Decider};
use crate::plan::RunSpec;
use crate::run::execute::{Execution, RunRecord};

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
    pub plan_file: String,
    pub plan_hash: String,
    pub git: Git,
    pub host: Host,
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
        images,
        started_wall_ns: record.map_or(String::new(), |r| r.started_wall_ns.to_string()),
        ended_wall_ns: record.map_or(String::new(), |r| r.ended_wall_ns.to_string()),
        outcome,
        files: Default::default(),
    }
}

/// Seals a run that `execute` returned, moves it where it belongs, and journals it.
#[allow(clippy::too_many_arguments)]
pub fn settle(
    ctx: &StudyContext,
    study_dir: &Path,
    journal: &mut Writer,
    run: &RunSpec,
    attempt: u32,
    dir: &Path,
    record: &RunRecord,
    images: Vec<Image>,
    objective: Option<&str>,
) -> Result<Event, SettleError> {
    let cleanup = if record.cleanup_ok { "ok" } else { "failed" }.to_string();
    let (axis, detail) = match &record.execution {
        Execution::Completed => (Axis::Completed, None),
        Execution::Aborted {
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
        Execution::Failed { reason } => (Axis::Aborted, Some(format!("failed: {reason}"))),
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
    manifest(ctx, run, attempt, images, Some(record), outcome).seal(dir)?;
    let rel = |p: &Path| layout::relative(study_dir, p);
    let event = match (axis, validity) {
        (Axis::Completed, Validity::Valid) => Event::RunFinished {
            run: run.id.clone(),
            run_hash: run.run_hash.clone(),
            attempt,
            dir: rel(dir),
            objective: objective.map(str::to_string),
            cleanup_ok: record.cleanup_ok,
        },
        (Axis::Completed, Validity::Invalid { reason, evidence }) => {
            let to = files::move_dir(
                dir,
                &layout::aside(study_dir, &layout::invalid_area(&reason), &run.id),
            )?;
            Event::RunInvalidated {
                run: run.id.clone(),
                run_hash: run.run_hash.clone(),
                attempt,
                dir: rel(&to),
                reason,
                by: Decider::Feedbench,
                evidence,
            }
        }
        _ => {
            let to = files::move_dir(dir, &layout::aside(study_dir, ABORTED, &run.id))?;
            Event::RunAborted {
                run: run.id.clone(),
                run_hash: run.run_hash.clone(),
                attempt,
                dir: rel(&to),
                reason: detail.unwrap_or_default(),
            }
        }
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
