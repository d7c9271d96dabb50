//! A person's decision about one run, recorded in the study's journal like feedbench's own:
//! `invalidate` sets a completed valid run aside (to `_invalid_by-person/`), `skip` records
//! that a run that has not run will not be. Refused, with what to do instead, for a run in
//! any other state, a study with no journal, or a plan changed since the study last ran.
//! Every standing result that took a figure from the run set aside (a baseline's rate from
//! its ramp), directly or through another, is superseded with it: moved to `_superseded/`
//! and journalled as `run-superseded-by-dependency`, never silently kept.

use std::path::{Path, PathBuf};

use super::StudyError;
use crate::ledger::journal::{self, Event, Writer};
use crate::ledger::state::{Ledger, RunState};
use crate::ledger::Decider;
use crate::plan::{LoadedPlan, RunSpec};
use crate::rundir::layout;
use feedbench_core::files;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Invalidate,
    Skip,
}

/// A standing result that took a figure from the run decided about: its spec, attempt,
/// directory as journalled, and that directory checked to lie in the study's.
type Dependent<'a> = (&'a RunSpec, u32, String, PathBuf);

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
    let study_dir = crate::rundir::layout::study_dir(results, &study);
    let no_journal = || {
        StudyError::Refused(format!(
            "`{}` holds no journal of study `{study}`: nothing has run there (is --results right?)",
            study_dir.display()
        ))
    };
    if !study_dir.join(journal::FILE).exists() {
        return Err(no_journal());
    }
    let _lock = crate::lock::lock_study(&study_dir, &study)?;
    let path = study_dir.join(journal::FILE);
    let j = journal::read(&path)?;
    if j.entries.is_empty() {
        return Err(no_journal());
    }
    undamaged(&j, &path)?;
    // Opened before anything moves: a journal that cannot take the decision stops it.
    let mut w = Writer::open(&path)?;
    let ledger = Ledger::fold(j.events());
    plan_unchanged(&ledger, loaded, runs, &path, &study)?;
    let state = ledger
        .status(runs)
        .into_iter()
        .find(|s| s.run == spec.id)
        .map(|s| s.state)
        .unwrap_or(RunState::NotRun);
    let at = Place {
        study_dir: &study_dir,
        journal: &path,
    };
    let (event, to_supersede) = match (decision, state) {
        (Decision::Invalidate, RunState::CompletedValid { attempt, dir, .. }) => {
            // Every directory is checked before anything moves: the run's own, then its
            // dependents'.
            let from = own_dir(&at, spec, &dir)?;
            let to_supersede = dependents_checked(&at, &ledger, runs, spec)?;
            (invalidate(&at, spec, attempt, &from, reason)?, to_supersede)
        }
        (Decision::Skip, RunState::NotRun) => {
            let event = Event::RunSkipped {
                run: spec.id.clone(),
                run_hash: spec.run_hash.clone(),
                reason: reason.to_string(),
                by: Decider::Person,
            };
            (event, dependents_checked(&at, &ledger, runs, spec)?)
        }
        (decision, s) => return Err(refused(decision, spec, &s)),
    };
    w.append(event.clone())?;
    let mut events = vec![event];
    for dependent in to_supersede {
        let e = supersede(&study_dir, dependent, spec, reason)?;
        w.append(e.clone())?;
        events.push(e);
    }
    Ok(events)
}

/// The study's directory and its journal's path, which refusals name.
struct Place<'a> {
    study_dir: &'a Path,
    journal: &'a Path,
}

/// A line that does not parse may be the run's own: deciding from the rest could move the
/// wrong directory or record a decision about a run whose state is unknown. (A torn last
/// line is a crash's, which the writer terminates and declares.) So could lines out of the
/// order they were written in.
fn undamaged(j: &journal::Journal, path: &Path) -> Result<(), StudyError> {
    let torn = j.torn.as_ref().map(|t| t.line);
    match j
        .undeclared_bad()
        .into_iter()
        .find(|b| Some(b.line) != torn)
    {
        Some(bad) => Err(StudyError::Refused(format!(
            "{}; the journal is damaged, so no decision is recorded; `feedbench audit` lists \
             what else is wrong; restore the line from a copy",
            bad.at(path.display())
        ))),
        // Lines out of their order could make the fold read a run's state wrong.
        None => match j.disorder().next() {
            None => Ok(()),
            Some(b) => Err(StudyError::Refused(format!(
                "{}; the journal's order is not proven, so no decision is recorded; \
                 `feedbench audit` lists what else is wrong; restore the journal from a copy",
                b.at(path.display())
            ))),
        },
    }
}

/// A decision is recorded only about the plan the study ran: a changed plan, or runs the
/// plan now defines differently, is declared first.
fn plan_unchanged(
    ledger: &Ledger,
    loaded: &LoadedPlan,
    runs: &[RunSpec],
    path: &Path,
    study: &str,
) -> Result<(), StudyError> {
    let Some(change) = ledger.plan_change(&loaded.plan_hash, runs) else {
        return Ok(());
    };
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
    Err(StudyError::Refused(format!(
        "`{}` changed since study `{study}` last ran; declare the change first (`feedbench run --amend \"<reason>\"`)",
        loaded.file
    )))
}

/// The standing results that took a figure from `spec`, each directory checked before
/// anything moves: a journal naming one outside the study refuses the whole decision.
fn dependents_checked<'a>(
    at: &Place<'_>,
    ledger: &Ledger,
    runs: &'a [RunSpec],
    spec: &RunSpec,
) -> Result<Vec<Dependent<'a>>, StudyError> {
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
        let from = crate::confine::inside(at.study_dir, &dir).map_err(|why| {
            StudyError::Refused(format!(
                "the journal `{}` names `{dir}` as the directory of `{}`, which takes a figure from `{}`: {why}",
                at.journal.display(),
                dependent.id,
                spec.id
            ))
        })?;
        out.push((dependent, attempt, dir, from));
    }
    Ok(out)
}

/// A completed valid run's directory, as the journal names it: inside the study directory
/// (never moving anything from out of it into it), and there.
fn own_dir(at: &Place<'_>, spec: &RunSpec, dir: &str) -> Result<PathBuf, StudyError> {
    let from = crate::confine::inside(at.study_dir, dir).map_err(|why| {
        StudyError::Refused(format!(
            "the journal `{}` names `{dir}` as the directory of `{}`: {why}",
            at.journal.display(),
            spec.id
        ))
    })?;
    if !from.is_dir() {
        return Err(StudyError::Refused(format!(
            "the journal `{}` names `{dir}` as the directory of `{}`, and no such \
             directory is there: nothing is moved; `feedbench audit` says what happened to it",
            at.journal.display(),
            spec.id
        )));
    }
    Ok(from)
}

/// Sets a completed valid run's directory (`from`, checked by [`own_dir`]) aside; returns its
/// journal line.
fn invalidate(
    at: &Place<'_>,
    spec: &RunSpec,
    attempt: u32,
    from: &Path,
    reason: &str,
) -> Result<Event, StudyError> {
    let to = files::move_dir(
        from,
        &layout::aside(at.study_dir, &layout::invalid_area("by-person"), &spec.id),
    )?;
    Ok(Event::RunInvalidated {
        run: spec.id.clone(),
        run_hash: spec.run_hash.clone(),
        attempt,
        dir: layout::relative(at.study_dir, &to),
        reason: reason.to_string(),
        by: Decider::Person,
        evidence: Vec::new(),
    })
}

/// Why a decision does not apply to a run in state `s`, and what does.
fn refused(decision: Decision, spec: &RunSpec, s: &RunState) -> StudyError {
    let (only, instead) = match decision {
        Decision::Invalidate => (
            "only a completed valid run can be invalidated",
            matches!(s, RunState::NotRun)
                .then_some(" (`feedbench skip` records a run that will not be run)"),
        ),
        Decision::Skip => (
            "only a run that has not run can be skipped",
            matches!(s, RunState::CompletedValid { .. })
                .then_some(" (`feedbench invalidate` sets a completed run aside)"),
        ),
    };
    StudyError::Refused(format!(
        "`{}` is {}; {only}{}",
        spec.id,
        s.label(),
        instead.unwrap_or("")
    ))
}

/// Moves a dependent result to `_superseded/` and returns its journal line. A directory
/// that is gone stays named as the journal had it; the audit says so.
fn supersede(
    study_dir: &Path,
    (dependent, attempt, dir, from): Dependent<'_>,
    spec: &RunSpec,
    reason: &str,
) -> Result<Event, StudyError> {
    let dir = if from.is_dir() {
        let to = files::move_dir(
            &from,
            &layout::aside(study_dir, layout::SUPERSEDED, &dependent.id),
        )?;
        layout::relative(study_dir, &to)
    } else {
        dir
    };
    Ok(Event::RunSupersededByDependency {
        run: dependent.id.clone(),
        run_hash: dependent.run_hash.clone(),
        attempt,
        dir,
        dependency: spec.id.clone(),
        reason: reason.to_string(),
    })
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
