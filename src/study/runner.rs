//! The study loop: after the session refused what it must, it records what resuming and
//! amending find, then takes the selected runs in plan order. A contender's gate runs
//! before its first run (a failure excludes it and the study goes on); a run that takes a
//! figure from another waits for it, or is skipped when that run will not stand; each run
//! is executed on the testbed, settled and journalled; an interrupt settles the run under
//! way as interrupted and stops. With several groups of engines (one testbed each), the
//! runs go to idle groups at the same time (`parallel`).

use std::collections::BTreeMap;
use std::path::Path;

use super::dependencies::{blocked_by, recorded, remember};
use super::gate::{gate, needs_gate};
use super::interrupt::Interrupt;
use super::reporter::StudyEvent;
use super::session::Session;
use super::testbed::Testbed;
use super::StudyError;
use crate::engine::deploy::check_caps;
use crate::engine::topology::{of_loaded, RunTopology};
use crate::ledger::journal::Event;
use crate::ledger::layout;
use crate::ledger::manifest::Git;
use crate::ledger::state::Ledger;
use crate::ledger::Decider;
use crate::plan::model::Profile;
use crate::plan::{LoadedPlan, RunSpec};
use crate::run::events::{RunEvent, Stamp};
use crate::run::execute::Saturations;
use crate::run::settle::{self, StudyContext};
use crate::rundir::record::RunRecord;
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
    let loaded = request.loaded;
    let Some(testbed) = testbeds.first() else {
        return Err(StudyError::Refused("no group of engines to run on".into()));
    };
    // One context per group: a run's manifest names the engines it ran on.
    let mut ctxs = Vec::new();
    for t in testbeds {
        ctxs.push(StudyContext {
            study: session.study.clone(),
            plan_file: session.plan_file.clone(),
            plan_hash: loaded.plan_hash.clone(),
            git: request.registration.clone(),
            host: t.host().await?,
            engines: t.engines().await?,
            inputs: request.inputs.clone(),
        });
    }
    let ctx = ctxs[0].clone();
    // Caps that do not fit the host are the plan's problem: refused before anything is
    // recorded (an amendment, a gate, a run). A run may go to any group: the smallest
    // host counts.
    let cores = ctxs.iter().map(|c| c.host.cores).fold(f64::MAX, f64::min);
    let mut topologies = preflight(request, &session.ledger, cores)?;
    session.start_writing()?;
    if request.resuming() {
        // Whatever an earlier, killed invocation left running is reaped first, on every
        // engine of every group.
        let mut containers = 0;
        for t in testbeds {
            containers += t.reap(&session.study).await?;
        }
        if containers > 0 {
            session.report(StudyEvent::Reaped { containers });
        }
        session.recover_open_runs()?;
        // An amendment a crash cut short is finished before anything else.
        session.supersede_pending()?;
    }
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
            plan_hash: loaded.plan_hash.clone(),
            git_commit: ctx.git.commit.clone(),
            files: request.uncommitted_inputs.to_vec(),
        })?;
    }
    let status = session.ledger.status(request.runs);
    let to_do: Vec<&RunSpec> = request
        .selected
        .iter()
        .filter(|r| {
            status
                .iter()
                .find(|s| s.run == r.id)
                .is_some_and(|s| !s.state.settled())
        })
        .collect();
    session.log(Event::StudyStarted {
        plan_file: ctx.plan_file.clone(),
        plan_hash: loaded.plan_hash.clone(),
        feedbench_version: settle::feedbench_version(),
        git_commit: ctx.git.commit.clone(),
        git_clean: ctx.git.clean,
        resume: request.resuming(),
        runs_planned: request.runs.len(),
        runs_to_do: to_do.iter().map(|r| r.id.clone()).collect(),
    })?;
    if to_do.is_empty() {
        session.report(StudyEvent::NothingToDo {
            selected: request.selected.len(),
        });
        return Ok(());
    }
    if testbeds.len() > 1 {
        return super::parallel::study_loop(
            session,
            request,
            testbeds,
            interrupt,
            &ctxs,
            &to_do,
            &mut topologies,
        )
        .await;
    }
    study_loop(
        session,
        request,
        testbed,
        interrupt,
        &ctx,
        &to_do,
        &mut topologies,
    )
    .await
}

/// Every selected run still to do must fit the host's cores (unless the plan allows
/// oversubscription), and so must its contender's gate, which deploys the same topology.
/// Returns their topologies, by run id, for the loop to deploy.
fn preflight(
    request: &StudyRequest<'_>,
    ledger: &Ledger,
    cores: f64,
) -> Result<BTreeMap<String, RunTopology>, StudyError> {
    let loaded = request.loaded;
    let status = ledger.status(request.runs);
    let mut topologies = BTreeMap::new();
    for r in request.selected {
        if status.iter().any(|s| s.run == r.id && s.state.settled()) {
            continue;
        }
        let topo = of_loaded(loaded, r)
            .map_err(|e| StudyError::Refused(format!("`{}`: run `{}`: {e}", loaded.file, r.id)))?;
        check_caps(&topo, cores, loaded.plan.caps.allow_oversubscription).map_err(|e| {
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

async fn study_loop<T: Testbed>(
    session: &mut Session<'_>,
    request: &StudyRequest<'_>,
    testbed: &T,
    interrupt: &mut Interrupt,
    ctx: &StudyContext,
    to_do: &[&RunSpec],
    topologies: &mut BTreeMap<String, RunTopology>,
) -> Result<(), StudyError> {
    let (loaded, runs) = (request.loaded, request.runs);
    let total = to_do.len();
    let allowance = loaded.plan.matrix.setup_allowance.as_secs_f64();
    let estimate = |r: &RunSpec| r.estimated_duration_s.unwrap_or(0.0) + allowance;
    let study_started = std::time::Instant::now();
    let mut measured = recorded(&session.dir, &session.ledger, runs)?;
    let mut left = Left::default();
    for (i, run) in to_do.iter().enumerate() {
        if interrupt.raised() {
            return Err(StudyError::Unfinished(format!(
                "interrupted between runs; nothing was running. `feedbench run --resume` carries on from `{}`",
                run.id
            )));
        }
        if needs_gate(loaded, &run.contender, &session.ledger) {
            gate(session, testbed, interrupt, request, run).await?;
        }
        if let Some(why) = session.ledger.excluded.get(&run.contender).cloned() {
            session.report(StudyEvent::Excluded {
                index: i + 1,
                total,
                run: &run.id,
                why: &why,
            });
            left.excluded.push(run.id.clone());
            continue;
        }
        match blocked_by(&session.ledger, runs, run) {
            Some((dep, Some(label))) => {
                session.log(Event::RunSkipped {
                    run: run.id.clone(),
                    run_hash: run.run_hash.clone(),
                    reason: format!("it takes a rate from `{dep}`, which is {label}"),
                    by: Decider::Feedbench,
                })?;
                left.not_valid.push(run.id.clone());
                continue;
            }
            Some((dep, None)) => {
                session.report(StudyEvent::Waiting {
                    index: i + 1,
                    total,
                    run: &run.id,
                    dependency: &dep,
                });
                left.waiting.push(run.id.clone());
                continue;
            }
            None => {}
        }
        let attempt = session.ledger.next_attempt(&run.id);
        let dir = layout::run_dir(&session.dir, &run.id);
        if dir.exists() {
            return Err(StudyError::Refused(format!(
                "`{}` exists but the journal has no run in it; feedbench never overwrites results. Move it away, then resume",
                dir.display()
            )));
        }
        session.report(StudyEvent::RunStarting {
            index: i + 1,
            total,
            run: &run.id,
            attempt,
            dir: &dir,
        });
        // Built once, by the preflight: its images are recorded from it and it is deployed.
        let topo = match topologies.remove(&run.id) {
            Some(t) => t,
            None => of_loaded(loaded, run).map_err(|e| {
                StudyError::Refused(format!("`{}`: run `{}`: {e}", loaded.file, run.id))
            })?,
        };
        let images = testbed.images(&topo).await;
        session.log(Event::RunStarted {
            run: run.id.clone(),
            run_hash: run.run_hash.clone(),
            attempt,
            dir: session.relative(&dir),
        })?;
        let later: f64 = to_do[i + 1..].iter().map(|r| estimate(r)).sum();
        let rest = &to_do[i..];
        let upper_bound = rest.iter().any(|r| r.may_stop_early(&loaded.plan))
            && rest.iter().all(|r| r.estimated_duration_s.is_some());
        let ended = execute_or_interrupt(
            session,
            testbed,
            interrupt,
            request,
            (run, &topo, &measured, &dir),
            (study_started, later, upper_bound),
        )
        .await;
        let record = match ended {
            Ended::Record(record) => *record,
            Ended::Failed(reason) => {
                // The run started and cannot be settled from a record: it is aborted, its
                // containers removed, its directory set aside with the reason.
                let _ = testbed.reap(&ctx.study).await;
                let event = settle::aborted(
                    &session.dir.clone(),
                    session.writer()?,
                    run,
                    attempt,
                    &dir,
                    &reason,
                )?;
                session.note(&event);
                return Err(StudyError::Unfinished(format!(
                    "`{}` could not be executed: {reason}",
                    run.id
                )));
            }
            Ended::Interrupted => {
                let removed = testbed.reap(&ctx.study).await?;
                let study_dir = session.dir.clone();
                let event = settle::interrupted(
                    &study_dir,
                    session.writer()?,
                    &run.id,
                    &run.run_hash,
                    attempt,
                    &dir,
                )?;
                session.note(&event);
                return Err(StudyError::Unfinished(format!(
                    "interrupted during `{}`; removed its {removed} container(s) and recorded it as interrupted; `feedbench run --resume` runs it again",
                    run.id
                )));
            }
        };
        settle_record(
            session,
            ctx,
            loaded,
            (run, attempt, &dir),
            &record,
            images,
            &mut measured,
            &mut left,
        )?;
    }
    left.verdict()
}

/// Settles a run that ended with a record: its objective's verdict, its manifest and
/// journal line; a ramp that finished remembers its saturation for the runs after it.
#[allow(clippy::too_many_arguments)]
pub(super) fn settle_record(
    session: &mut Session<'_>,
    ctx: &StudyContext,
    loaded: &LoadedPlan,
    (run, attempt, dir): (&RunSpec, u32, &Path),
    record: &RunRecord,
    images: Vec<crate::ledger::manifest::Image>,
    measured: &mut Saturations,
    left: &mut Left,
) -> Result<(), StudyError> {
    session.report(StudyEvent::RunEnded(record));
    let study_dir = session.dir.clone();
    let event = settle::settle(
        ctx,
        &study_dir,
        session.writer()?,
        run,
        attempt,
        dir,
        record,
        images,
        objective(loaded, run, record),
    )?;
    settled(session, &event, run, record, measured, left);
    Ok(())
}

/// The objective's verdict on a run's measured phase (a ramp's is judged step by step).
pub(super) fn objective(
    loaded: &LoadedPlan,
    run: &RunSpec,
    record: &RunRecord,
) -> Option<&'static str> {
    let ramp = matches!(
        loaded.plan.profiles.get(run.profile.as_str()),
        Some(Profile::StepRamp { .. })
    );
    record.measured.as_ref().and_then(|m| {
        crate::analysis::objective::verdict(
            &loaded.plan.study.objective,
            m.p99_ms,
            m.failed_share,
            ramp,
        )
    })
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
                remember(measured, run, rate, s.first_breach.is_some());
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

/// How a run's execution ended, for settling.
pub(super) enum Ended {
    Record(Box<RunRecord>),
    /// The executor could not produce a record.
    Failed(String),
    Interrupted,
}

/// Executes one run, reporting its events (and the study's progress with each progress
/// event), unless the interrupt is raised first.
async fn execute_or_interrupt<T: Testbed>(
    session: &mut Session<'_>,
    testbed: &T,
    interrupt: &mut Interrupt,
    request: &StudyRequest<'_>,
    (run, topo, measured, dir): (&RunSpec, &RunTopology, &Saturations, &Path),
    (study_started, later, upper_bound): (std::time::Instant, f64, bool),
) -> Ended {
    let reporter = session.reporter();
    let mut observe = |id: &str, stamp: Stamp, event: &RunEvent| {
        report_run_event(
            reporter,
            id,
            stamp,
            event,
            (study_started, later, upper_bound),
        )
    };
    tokio::select! {
        r = testbed.execute(request.loaded, run, topo, measured, dir, &mut observe) => match r {
            Ok(record) => Ended::Record(Box::new(record)),
            Err(e) => Ended::Failed(e.to_string()),
        },
        _ = interrupt.wait() => Ended::Interrupted,
    }
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
