//! The study loop: after the session refused what it must, it records what resuming and
//! amending find, then takes the selected runs in plan order. Every contender's gate runs
//! before any run (a failure excludes it and the study goes on); a run that takes a
//! figure from another waits for it, or is skipped when that run will not stand; each run
//! is executed on the testbed, settled and journalled; an interrupt settles the run under
//! way as interrupted and stops. The loop itself is `dispatch`'s, the same for one group of
//! engines (one testbed) as for several.

use std::collections::BTreeMap;
use std::path::Path;

use super::dependencies::remember;
use super::interrupt::Interrupt;
use super::reporter::StudyEvent;
use super::session::Session;
use super::testbed::Testbed;
use super::StudyError;
use crate::ledger::journal::Event;
use crate::ledger::manifest::Git;
use crate::ledger::state::Ledger;
use crate::plan::model::Profile;
use crate::plan::{LoadedPlan, RunSpec};
use crate::run::execute::Saturations;
use crate::run::settle::{self, StudyContext};
use crate::rundir::events::{RunEvent, Stamp};
use crate::rundir::record::RunRecord;
use crate::spec::topology::{of_loaded, Instance, RunTopology};
use feedbench_core::inputs::{self, Inputs};

/// What a person asked `feedbench run` to do.
#[derive(Debug, Clone, Copy)]
pub struct StudyRequest<'a> {
    pub loaded: &'a LoadedPlan,
    /// Every planned run, in plan order.
    pub runs: &'a [RunSpec],
    /// The runs to consider (all, or those `--only` picked), in plan order.
    pub selected: &'a [RunSpec],
    /// Where study directories go (`results/`).
    pub results: &'a Path,
    /// The study's directory when it is not `results/<study>/`: a pilot's area.
    pub dir: Option<&'a Path>,
    /// The plan's registration in git.
    pub registration: &'a Git,
    pub resume: bool,
    /// A declared plan change, with its reason (implies resume).
    pub amend: Option<&'a str>,
    pub allow_uncommitted: bool,
    /// The plan's inputs as read now; `runs` are hashed with them.
    pub inputs: &'a Inputs,
    /// Input files (plan paths) that differ from their commit or are not committed.
    pub uncommitted_inputs: &'a [String],
}

impl StudyRequest<'_> {
    fn resuming(&self) -> bool {
        self.resume || self.amend.is_some()
    }
}

/// Runs the study `session` holds on `testbeds` (one per group of engines, the first the
/// one contenders' gates run on), until every selected run is settled, waits for a run
/// that did not complete, or `interrupt` is raised.
pub async fn run_study<T: Testbed>(
    session: &mut Session<'_>,
    request: &StudyRequest<'_>,
    testbeds: &[T],
    interrupt: &mut Interrupt,
) -> Result<(), StudyError> {
    if testbeds.is_empty() {
        return Err(StudyError::Refused("no group of engines to run on".into()));
    }
    let ctxs = contexts(session, request, testbeds).await?;
    // Caps that do not fit the host are the plan's problem: refused before anything is
    // recorded (an amendment, a gate, a run). A run may go to any group: the smallest
    // host counts.
    let cores = ctxs.iter().map(|c| c.host.cores).fold(f64::MAX, f64::min);
    let mut topologies = preflight(request, &session.ledger, &session.instance, cores)?;
    session.start_writing()?;
    if request.resuming() {
        recover(session, testbeds).await?;
    }
    record_inputs(session, request, &ctxs[0])?;
    let to_do = to_do(session, request);
    session.log(Event::StudyStarted {
        plan_file: ctxs[0].plan_file.clone(),
        plan_hash: request.loaded.plan_hash.clone(),
        feedbench_version: settle::feedbench_version(),
        git_commit: ctxs[0].git.commit.clone(),
        git_clean: ctxs[0].git.clean,
        resume: request.resuming(),
        runs_planned: request.runs.len(),
        runs_to_do: to_do.iter().map(|r| r.id.clone()).collect(),
    })?;
    session.declare_neighbours()?;
    if to_do.is_empty() {
        session.report(StudyEvent::NothingToDo {
            selected: request.selected.len(),
        });
        return Ok(());
    }
    super::dispatch::study_loop(
        session,
        request,
        testbeds,
        interrupt,
        &ctxs,
        &to_do,
        &mut topologies,
    )
    .await
}

/// One context per group: a run's manifest names the engines it ran on.
async fn contexts<T: Testbed>(
    session: &Session<'_>,
    request: &StudyRequest<'_>,
    testbeds: &[T],
) -> Result<Vec<StudyContext>, StudyError> {
    let mut ctxs = Vec::new();
    for t in testbeds {
        ctxs.push(StudyContext {
            study: session.study.clone(),
            instance: session.instance.clone(),
            plan_file: session.plan_file.clone(),
            plan_hash: request.loaded.plan_hash.clone(),
            git: request.registration.clone(),
            host: t.host().await?,
            engines: t.engines().await?,
            inputs: request.inputs.clone(),
        });
    }
    Ok(ctxs)
}

/// On a resume: whatever an earlier, killed invocation left running is reaped first, on
/// every engine of every group; runs it left open are settled; an amendment a crash cut
/// short is finished before anything else.
async fn recover<T: Testbed>(session: &mut Session<'_>, testbeds: &[T]) -> Result<(), StudyError> {
    let mut containers = 0;
    for t in testbeds {
        containers += t.reap(&session.instance).await?;
    }
    if containers > 0 {
        session.report(StudyEvent::Reaped { containers });
    }
    session.recover_open_runs()?;
    session.supersede_pending()?;
    Ok(())
}

/// Journals a declared amendment, the inputs when they differ from those recorded, and a
/// plan or inputs not committed.
fn record_inputs(
    session: &mut Session<'_>,
    request: &StudyRequest<'_>,
    ctx: &StudyContext,
) -> Result<(), StudyError> {
    let recorded_inputs = session.ledger.inputs.clone();
    if let (Some(c), Some(reason)) = (session.change.clone(), request.amend) {
        let files_changed = recorded_inputs
            .as_ref()
            .map(|(_, files)| inputs::changed(files, &request.inputs.files))
            .unwrap_or_default();
        session.log(Event::PlanAmended {
            reason: reason.to_string(),
            old_plan_hash: c.old_plan_hash,
            new_plan_hash: c.new_plan_hash,
            git_commit: ctx.git.commit.clone(),
            changes: c.changes,
            old_inputs_digest: recorded_inputs.as_ref().map(|(d, _)| d.clone()),
            new_inputs_digest: Some(request.inputs.digest()),
            files_changed: files_changed.into_iter().map(|f| f.path).collect(),
        })?;
        session.supersede_pending()?;
    }
    if recorded_inputs.as_ref().map(|(_, f)| f) != Some(&request.inputs.files) {
        session.log(Event::InputsRead {
            digest: request.inputs.digest(),
            files: request.inputs.files.clone(),
        })?;
    }
    if ctx.git.clean != Some(true) || !request.uncommitted_inputs.is_empty() {
        session.log(Event::UncommittedPlan {
            plan_file: ctx.plan_file.clone(),
            plan_hash: request.loaded.plan_hash.clone(),
            git_commit: ctx.git.commit.clone(),
            files: request.uncommitted_inputs.to_vec(),
        })?;
    }
    Ok(())
}

/// The selected runs the journal has not settled, in plan order.
fn to_do<'a>(session: &Session<'_>, request: &StudyRequest<'a>) -> Vec<&'a RunSpec> {
    let status = session.ledger.status(request.runs);
    request
        .selected
        .iter()
        .filter(|r| {
            status
                .iter()
                .find(|s| s.run == r.id)
                .is_some_and(|s| !s.state.settled())
        })
        .collect()
}

/// Every selected run still to do must fit the host's cores (unless the plan allows
/// oversubscription), and so must its contender's gate, which deploys the same topology.
/// Returns their topologies, by run id, for the loop to deploy.
fn preflight(
    request: &StudyRequest<'_>,
    ledger: &Ledger,
    instance: &Instance,
    cores: f64,
) -> Result<BTreeMap<String, RunTopology>, StudyError> {
    let loaded = request.loaded;
    let status = ledger.status(request.runs);
    let mut topologies = BTreeMap::new();
    for r in request.selected {
        if status.iter().any(|s| s.run == r.id && s.state.settled()) {
            continue;
        }
        let topo = of_loaded(loaded, r, instance)
            .map_err(|e| StudyError::Refused(format!("`{}`: run `{}`: {e}", loaded.file, r.id)))?;
        topo.fits(cores, loaded.plan.caps.allow_oversubscription).map_err(|e| {
            StudyError::Refused(format!(
                "`{}`: {e}. Lower the caps, or set `caps.allow-oversubscription: true` to run anyway (runs then compete for CPU)",
                loaded.file
            ))
        })?;
        topologies.insert(r.id.clone(), topo);
    }
    Ok(topologies)
}

/// What the loop left undone, for the study's exit.
#[derive(Default)]
pub(super) struct Left {
    pub not_valid: Vec<String>,
    pub waiting: Vec<String>,
    pub excluded: Vec<String>,
}

/// The objective's verdict on a run's measured phase, over its objective windows (a ramp's
/// is judged step by step).
pub(super) fn objective(
    loaded: &LoadedPlan,
    run: &RunSpec,
    record: &RunRecord,
) -> Option<&'static str> {
    let ramp = matches!(
        loaded.plan.profiles.get(run.profile.as_str()),
        Some(Profile::StepRamp { .. })
    );
    record
        .measured
        .as_ref()
        .and_then(|m| crate::analysis::objective::verdict(m.requests, m.windows, ramp))
}

/// After a run's journal line: the reporter told, a ramp that finished remembered for the
/// runs that take its rate, a run that does not stand counted.
pub(super) fn settled(
    session: &mut Session<'_>,
    event: &Event,
    run: &RunSpec,
    record: &RunRecord,
    measured: &mut Saturations,
    left: &mut Left,
) {
    session.note(event);
    match (event, &record.saturation) {
        (Event::RunFinished { .. }, Some(s)) => {
            if let Some(rate) = s.rate {
                remember(measured, run, rate, s.sustained_breach.is_some());
            }
        }
        (Event::RunFinished { .. }, None) => {}
        _ => left.not_valid.push(run.id.clone()),
    }
}

/// Shows one event of a run under way, with the study's progress at each progress event:
/// the time left in this run plus `later`, the estimate of what follows it.
pub(super) fn report_run_event(
    reporter: &mut dyn super::reporter::Reporter,
    id: &str,
    stamp: Stamp,
    event: &RunEvent,
    (study_started, later, upper_bound): (std::time::Instant, f64, bool),
) {
    if let RunEvent::Progress {
        elapsed_s, total_s, ..
    } = event
    {
        reporter.report(StudyEvent::StudyProgress {
            elapsed_s: study_started.elapsed().as_secs_f64(),
            left_s: (total_s - elapsed_s).max(0.0) + later,
            upper_bound,
        });
    }
    reporter.report(StudyEvent::Run {
        run: id,
        stamp,
        event,
    });
}

impl Left {
    pub(super) fn verdict(self) -> Result<(), StudyError> {
        let mut problems = Vec::new();
        if !self.not_valid.is_empty() {
            problems.push(format!(
                "{} run(s) did not complete valid: {}",
                self.not_valid.len(),
                self.not_valid.join(", ")
            ));
        }
        if !self.excluded.is_empty() {
            problems.push(format!(
                "{} run(s) not run because their contender failed its gate: {}",
                self.excluded.len(),
                self.excluded.join(", ")
            ));
        }
        if !self.waiting.is_empty() {
            problems.push(format!(
                "{} run(s) wait for runs that have not completed: {}",
                self.waiting.len(),
                self.waiting.join(", ")
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(StudyError::Unfinished(format!(
                "{}; see `feedbench status` and the journal",
                problems.join("; ")
            )))
        }
    }
}
