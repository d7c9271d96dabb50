//! A person's decision about one run, recorded in the study's journal like feedbench's own:
//! `invalidate` sets a completed valid run aside (to `_invalid_by-person/`), `skip` records
//! that a run that has not run will not be. Refused, with what to do instead, for a run in
//! any other state, a study with no journal, or a plan changed since the study last ran.
//! Every standing result that took a figure from the run set aside (a baseline's rate from
//! its ramp), directly or through another, is superseded with it: moved to `_superseded/`
//! and journalled as `run-superseded-by-dependency`, never silently kept.

use std::path::Path;

use super::StudyError;
use crate::ledger::journal::{self, Event, Writer};
use crate::ledger::layout;
use crate::ledger::state::{Ledger, RunState};
use crate::ledger::{files, Decider};
use crate::plan::{LoadedPlan, RunSpec};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Invalidate,
    Skip,
}

/// Records `decision` about `spec` (a run of `loaded`, whose runs are `runs`) with the
/// person's `reason`, in the study under `results`; returns the journal events: the
/// decision, then each dependent result it superseded.
pub fn decide(
    results: &Path,
    loaded: &LoadedPlan,
    runs: &[RunSpec],
    spec: &RunSpec,
    decision: Decision,
    reason: &str,
) -> Result<Vec<Event>, StudyError> {
    let study = loaded.plan.study.name.to_string();
    let study_dir = results.join(&study);
    if !study_dir.join(journal::FILE).exists() {
        return Err(StudyError::Refused(format!(
            "`{}` holds no journal of study `{study}`: nothing has run there (is --results right?)",
            study_dir.display()
        )));
    }
    let _lock = crate::run::lock::lock_study(&study_dir, &study)?;
    let path = study_dir.join(journal::FILE);
    let j = journal::read(&path)?;
    if j.entries.is_empty() {
        return Err(StudyError::Refused(format!(
            "`{}` holds no journal of study `{study}`: nothing has run there (is --results right?)",
            study_dir.display()
        )));
    }
    // A line that does not parse may be the run's own: deciding from the rest could move
    // the wrong directory or record a decision about a run whose state is unknown. (A torn
    // last line is a crash's, which the writer below terminates and declares.)
    if let Some(bad) = j
        .undeclared_bad()
        .into_iter()
        .find(|b| Some(b.line) != j.torn.as_ref().map(|t| t.line))
    {
        return Err(StudyError::Refused(format!(
            "`{}` line {} does not parse ({}): the journal is damaged, so no decision is recorded; \
             `feedbench audit` lists what else is wrong; restore the line from a copy",
            path.display(),
            bad.line,
            bad.error
        )));
    }
    // Opened before anything moves: a journal that cannot take the decision stops it.
    let mut w = Writer::open(&path)?;
    let ledger = Ledger::fold(j.events());
    if let Some(change) = ledger.plan_change(&loaded.plan_hash, runs) {
        // The plan's hash is the one recorded: the runs differ, not the plan file.
        if change.old_plan_hash == loaded.plan_hash {
            let named: Vec<String> = change
                .changes
                .iter()
                .take(3)
                .map(|c| format!("`{}`", c.run))
                .collect();
            return Err(StudyError::Refused(format!(
                "the journal `{}` records runs that `{}` does not define as it is now ({}): \
                 a newer feedbench defines them differently (`feedbench run --amend \"<reason>\"` \
                 declares that), or the journal was edited (`feedbench audit` names the lines)",
                path.display(),
                loaded.file,
                named.join(", ")
            )));
        }
        return Err(StudyError::Refused(format!(
            "`{}` changed since study `{study}` last ran; declare the change first (`feedbench run --amend \"<reason>\"`)",
            loaded.file
        )));
    }
    let state = ledger
        .status(runs)
        .into_iter()
        .find(|s| s.run == spec.id)
        .map(|s| s.state)
        .unwrap_or(RunState::NotRun);
    // The standing results that took a figure from this run, each directory checked before
    // anything moves: a journal naming one outside the study refuses the whole decision.
    let dependents_checked =
        || -> Result<Vec<(&RunSpec, u32, String, std::path::PathBuf)>, StudyError> {
            let mut out = Vec::new();
            let status_now = ledger.status(runs);
            for dependent in dependents(runs, &spec.id) {
                let Some(RunState::CompletedValid { attempt, dir, .. }) = status_now
                    .iter()
                    .find(|s| s.run == dependent.id)
                    .map(|s| s.state.clone())
                else {
                    continue;
                };
                let from = crate::confine::inside(&study_dir, &dir).map_err(|why| {
                StudyError::Refused(format!(
                    "the journal `{}` names `{dir}` as the directory of `{}`, which takes a figure from `{}`: {why}",
                    path.display(),
                    dependent.id,
                    spec.id
                ))
            })?;
                out.push((dependent, attempt, dir, from));
            }
            Ok(out)
        };
    let (event, to_supersede) = match (decision, state) {
        (Decision::Invalidate, RunState::CompletedValid { attempt, dir, .. }) => {
            // Never move anything from out of the study directory into it.
            let from = crate::confine::inside(&study_dir, &dir).map_err(|why| {
                StudyError::Refused(format!(
                    "the journal `{}` names `{dir}` as the directory of `{}`: {why}",
                    path.display(),
                    spec.id
                ))
            })?;
            if !from.is_dir() {
                return Err(StudyError::Refused(format!(
                    "the journal `{}` names `{dir}` as the directory of `{}`, and no such \
                     directory is there: nothing is moved; `feedbench audit` says what happened to it",
                    path.display(),
                    spec.id
                )));
            }
            let to_supersede = dependents_checked()?;
            let to = files::move_dir(
                &from,
                &layout::aside(&study_dir, &layout::invalid_area("by-person"), &spec.id),
            )?;
            let event = Event::RunInvalidated {
                run: spec.id.clone(),
                run_hash: spec.run_hash.clone(),
                attempt,
                dir: layout::relative(&study_dir, &to),
                reason: reason.to_string(),
                by: Decider::Person,
                evidence: Vec::new(),
            };
            (event, to_supersede)
        }
        (Decision::Skip, RunState::NotRun) => {
            let event = Event::RunSkipped {
                run: spec.id.clone(),
                run_hash: spec.run_hash.clone(),
                reason: reason.to_string(),
                by: Decider::Person,
            };
            (event, dependents_checked()?)
        }
        (Decision::Invalidate, s) => {
            return Err(StudyError::Refused(format!(
                "`{}` is {}; only a completed valid run can be invalidated{}",
                spec.id,
                s.label(),
                if matches!(s, RunState::NotRun) {
                    " (`feedbench skip` records a run that will not be run)"
                } else {
                    ""
                }
            )))
        }
        (Decision::Skip, s) => {
            return Err(StudyError::Refused(format!(
                "`{}` is {}; only a run that has not run can be skipped{}",
                spec.id,
                s.label(),
                if matches!(s, RunState::CompletedValid { .. }) {
                    " (`feedbench invalidate` sets a completed run aside)"
                } else {
                    ""
                }
            )))
        }
    };
    w.append(event.clone())?;
    let mut events = vec![event];
    for (dependent, attempt, dir, from) in to_supersede {
        // A directory that is gone stays named as the journal had it; the audit says so.
        let dir = if from.is_dir() {
            let to = files::move_dir(
                &from,
                &layout::aside(&study_dir, layout::SUPERSEDED, &dependent.id),
            )?;
            layout::relative(&study_dir, &to)
        } else {
            dir
        };
        let e = Event::RunSupersededByDependency {
            run: dependent.id.clone(),
            run_hash: dependent.run_hash.clone(),
            attempt,
            dir,
            dependency: spec.id.clone(),
            reason: reason.to_string(),
        };
        w.append(e.clone())?;
        events.push(e);
    }
    Ok(events)
}

/// The runs that take a figure from `run`, directly or through another, in plan order.
fn dependents<'a>(runs: &'a [RunSpec], run: &str) -> Vec<&'a RunSpec> {
    let mut set: Vec<&str> = vec![run];
    loop {
        let more: Vec<&str> = runs
            .iter()
            .filter(|r| !set.contains(&r.id.as_str()))
            .filter(|r| r.depends_on.iter().any(|d| set.contains(&d.as_str())))
            .map(|r| r.id.as_str())
            .collect();
        if more.is_empty() {
            break;
        }
        set.extend(more);
    }
    runs.iter()
        .filter(|r| r.id != run && set.contains(&r.id.as_str()))
        .collect()
}
