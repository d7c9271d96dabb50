//! The one study loop, for one group of engines or several: every contender's gate first (on
//! the first group, beside the coordinator), then runs in plan order go to idle groups, one
//! run per group at a time, each started only once the runs it takes a figure from stand.
//! One group is the case of several with one: the same gates, exclusions, waits, skips,
//! settling and interrupt, so the policy tests of one run against both.
//!
//! Why gates first: a failing contender is known before hours of the others' runs, and a
//! gate never runs beside a measured run (it would load its host). Why a group is idle only
//! once its run is settled: a run that takes a figure from the one just ended sees it, so
//! runs start in plan order on one group as on several.
//!
//! One journal: every line still goes through the session, which the runs under way share
//! for their events only (never across an await). Runs under way are futures of this one
//! task, polled only while the loop waits, so the loop never does slow work between two
//! waits: a run's directory is sealed (its files digested) on a blocking thread, and a
//! failed run's engines reaped, as futures polled beside the runs still under way. A run
//! that fails to execute stops new starts and lets the others finish; an interrupt stops
//! every run under way, reaps every group and settles each as interrupted; an error of the
//! study itself (its journal) reaps every group before it is returned.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use futures_util::future::LocalBoxFuture;
use futures_util::stream::{FuturesUnordered, StreamExt};

use super::dependencies::{blocked_by, recorded};
use super::gate::{gate, needs_gate};
use super::interrupt::Interrupt;
use super::reporter::StudyEvent;
use super::runner::{objective, report_run_event, settled, Left, StudyRequest};
use super::session::Session;
use super::testbed::Testbed;
use super::StudyError;
use crate::ledger::journal::Event;
use crate::ledger::manifest::{Image, Manifest};
use crate::ledger::Decider;
use crate::plan::RunSpec;
use crate::run::execute::Saturations;
use crate::run::settle::{self, StudyContext};
use crate::rundir::events::{RunEvent, Stamp};
use crate::rundir::layout;
use crate::rundir::record::RunRecord;
use crate::spec::topology::{of_loaded, RunTopology};

/// A run started on a group, until its journal line settles it.
struct Flying<'a> {
    group: usize,
    run: &'a RunSpec,
    attempt: u32,
    dir: PathBuf,
    /// Its execution ended; it is being sealed or reaped.
    ended: bool,
}

/// How a run's execution ended, for settling.
enum Ended {
    Record(Box<RunRecord>),
    /// The executor could not produce a record.
    Failed(String),
}

/// A run's execution ended: its id, how, and its containers' images.
type Executed = (String, Ended, Vec<Image>);

/// What finishing an ended run produced, off the loop's thread or beside the runs under way.
enum Finished {
    /// Its directory sealed (or why not), to be placed and journalled.
    Sealed {
        id: String,
        record: Box<RunRecord>,
        sealed: Result<Box<Manifest>, String>,
    },
    /// Its group reaped after it failed to execute.
    Reaped { id: String, reason: String },
}

/// What the loop is given: the study, its groups and the runs still to do.
struct Study<'a, T> {
    request: &'a StudyRequest<'a>,
    testbeds: &'a [T],
    ctxs: &'a [StudyContext],
    to_do: &'a [&'a RunSpec],
    started: Instant,
}

/// What the loop keeps between two waits.
struct Progress<'a> {
    /// Admitted runs not started yet, in plan order.
    pending: Vec<&'a RunSpec>,
    under_way: Vec<Flying<'a>>,
    /// Groups with no run, the lowest last (taken first).
    idle: Vec<usize>,
    measured: Saturations,
    left: Left,
    /// Why no run may start any more: one could not be executed.
    failed: Option<String>,
}

type Runs<'f> = FuturesUnordered<LocalBoxFuture<'f, Executed>>;
type Finishing<'f> = FuturesUnordered<LocalBoxFuture<'f, Finished>>;

/// Runs `to_do` across `testbeds` (one per group, at least one), settling each run as it ends.
pub(super) async fn study_loop<T: Testbed>(
    session: &mut Session<'_>,
    request: &StudyRequest<'_>,
    testbeds: &[T],
    interrupt: &mut Interrupt,
    ctxs: &[StudyContext],
    to_do: &[&RunSpec],
    topologies: &mut BTreeMap<String, RunTopology>,
) -> Result<(), StudyError> {
    gate_all(session, request, &testbeds[0], interrupt, to_do).await?;
    let mut left = Left::default();
    let pending = admitted(session, to_do, &mut left);
    let measured = recorded(&session.dir, &session.ledger, request.runs)?;
    let study = Study {
        request,
        testbeds,
        ctxs,
        to_do,
        started: Instant::now(),
    };
    let mut progress = Progress {
        pending,
        under_way: Vec::new(),
        idle: (0..testbeds.len()).rev().collect(),
        measured,
        left,
        failed: None,
    };
    let session = RefCell::new(session);
    let mut flying: Runs<'_> = FuturesUnordered::new();
    let mut finishing: Finishing<'_> = FuturesUnordered::new();
    loop {
        let started = start_runs(
            &study,
            &session,
            &mut progress,
            topologies,
            interrupt,
            &mut flying,
        );
        if let Err(e) = started {
            drop((flying, finishing));
            return Err(abandon(testbeds, ctxs, e).await);
        }
        if flying.is_empty() && finishing.is_empty() {
            break;
        }
        enum Step {
            Executed(Executed),
            Finished(Finished),
            Interrupted,
        }
        let step = tokio::select! {
            Some(x) = flying.next(), if !flying.is_empty() => Step::Executed(x),
            Some(f) = finishing.next(), if !finishing.is_empty() => Step::Finished(f),
            _ = interrupt.wait() => Step::Interrupted,
        };
        let outcome = match step {
            Step::Interrupted => {
                drop(flying);
                return stop_everything(&study, &session, progress, finishing).await;
            }
            Step::Executed(x) => {
                executed(&study, &session, &mut progress, x, &mut finishing);
                Ok(())
            }
            Step::Finished(f) => finish(&mut session.borrow_mut(), &mut progress, f),
        };
        if let Err(e) = outcome {
            drop((flying, finishing));
            return Err(abandon(testbeds, ctxs, e).await);
        }
    }
    conclude(progress, interrupt)
}

/// Every contender's gate that is still to pass, before any run: on `testbed`, the first
/// group's, beside the coordinator.
async fn gate_all<T: Testbed>(
    session: &mut Session<'_>,
    request: &StudyRequest<'_>,
    testbed: &T,
    interrupt: &mut Interrupt,
    to_do: &[&RunSpec],
) -> Result<(), StudyError> {
    for run in to_do {
        if !needs_gate(request.loaded, &run.contender, &session.ledger) {
            continue;
        }
        if interrupt.raised() {
            return Err(StudyError::Unfinished(format!(
                "interrupted between runs, before `{}`'s gate; nothing was running. `feedbench run --resume` carries on",
                run.contender
            )));
        }
        gate(session, testbed, interrupt, request, run).await?;
    }
    Ok(())
}

/// The runs whose contender was not excluded, in plan order; each excluded one reported
/// and counted.
fn admitted<'a>(
    session: &mut Session<'_>,
    to_do: &[&'a RunSpec],
    left: &mut Left,
) -> Vec<&'a RunSpec> {
    let mut pending = Vec::new();
    for (i, run) in to_do.iter().enumerate() {
        match session.ledger.excluded.get(&run.contender).cloned() {
            Some(why) => {
                session.report(StudyEvent::Excluded {
                    index: i + 1,
                    total: to_do.len(),
                    run: &run.id,
                    why: &why,
                });
                left.excluded.push(run.id.clone());
            }
            None => pending.push(*run),
        }
    }
    pending
}

/// Starts the next runs that may start, one on each idle group, unless a run failed or an
/// interrupt was raised.
fn start_runs<'f, T: Testbed>(
    study: &'f Study<'f, T>,
    session: &'f RefCell<&mut Session<'_>>,
    progress: &mut Progress<'f>,
    topologies: &mut BTreeMap<String, RunTopology>,
    interrupt: &Interrupt,
    flying: &mut Runs<'f>,
) -> Result<(), StudyError> {
    let loaded = study.request.loaded;
    while progress.failed.is_none() && !interrupt.raised() && !progress.idle.is_empty() {
        let Some(run) = next_run(study, &mut session.borrow_mut(), progress)? else {
            break;
        };
        let Some(group) = progress.idle.pop() else {
            break;
        };
        let topo = match topologies.remove(&run.id) {
            Some(t) => t,
            None => of_loaded(loaded, run, &study.ctxs[group].instance).map_err(|e| {
                StudyError::Refused(format!("`{}`: run `{}`: {e}", loaded.file, run.id))
            })?,
        };
        let (attempt, dir) = begin(
            &mut session.borrow_mut(),
            run,
            study.index_of(run),
            study.to_do.len(),
        )?;
        let terms = study.progress_terms(run, &progress.pending);
        flying.push(launch(
            study,
            session,
            group,
            run,
            topo,
            progress.measured.clone(),
            dir.clone(),
            terms,
        ));
        progress.under_way.push(Flying {
            group,
            run,
            attempt,
            dir,
            ended: false,
        });
    }
    Ok(())
}

impl<T> Study<'_, T> {
    /// A run's number among the runs to do, for people.
    fn index_of(&self, run: &RunSpec) -> usize {
        self.to_do.iter().position(|r| r.id == run.id).unwrap_or(0) + 1
    }

    /// The study's progress terms while `run` runs: the estimate of what is left after the
    /// runs under way, shared by the groups, and whether the estimate is an upper bound (a
    /// run left may stop early, and every run left has an estimate).
    fn progress_terms(&self, run: &RunSpec, pending: &[&RunSpec]) -> (Instant, f64, bool) {
        let plan = &self.request.loaded.plan;
        let allowance = plan.matrix.setup_allowance.as_secs_f64();
        let groups = self.testbeds.len() as f64;
        let later = pending
            .iter()
            .map(|r| r.estimated_duration_s.unwrap_or(0.0) + allowance)
            .sum::<f64>()
            / groups;
        let upper_bound = std::iter::once(run)
            .chain(pending.iter().copied())
            .any(|r| r.may_stop_early(plan))
            && pending.iter().all(|r| r.estimated_duration_s.is_some());
        (self.started, later, upper_bound)
    }
}

/// `run`'s execution on `group`'s testbed, as a future of the loop: its events reported
/// through the session as they come.
#[allow(clippy::too_many_arguments)]
fn launch<'f, T: Testbed>(
    study: &'f Study<'f, T>,
    session: &'f RefCell<&mut Session<'_>>,
    group: usize,
    run: &'f RunSpec,
    topo: RunTopology,
    taken: Saturations,
    into: PathBuf,
    terms: (Instant, f64, bool),
) -> LocalBoxFuture<'f, Executed> {
    let testbed = &study.testbeds[group];
    let loaded = study.request.loaded;
    Box::pin(async move {
        let images = testbed.images(&topo).await;
        let mut observe = |id: &str, stamp: Stamp, event: &RunEvent| {
            let mut s = session.borrow_mut();
            report_run_event(s.reporter(), id, stamp, event, terms)
        };
        let ended = match testbed
            .execute(loaded, run, &topo, &taken, &into, &mut observe)
            .await
        {
            Ok(record) => Ended::Record(Box::new(record)),
            Err(e) => Ended::Failed(e.to_string()),
        };
        (run.id.clone(), ended, images)
    })
}

/// A run's execution ended: a record is sealed on a blocking thread, a failure's group
/// reaped, either beside the runs still under way.
fn executed<'f, T: Testbed>(
    study: &'f Study<'f, T>,
    session: &RefCell<&mut Session<'_>>,
    progress: &mut Progress<'f>,
    (id, ended, images): Executed,
    finishing: &mut Finishing<'f>,
) {
    let Some(f) = progress.under_way.iter_mut().find(|f| f.run.id == id) else {
        return;
    };
    f.ended = true;
    let (group, run, attempt, dir) = (f.group, f.run, f.attempt, f.dir.clone());
    match ended {
        Ended::Record(record) => {
            session.borrow_mut().report(StudyEvent::RunEnded(&record));
            let m = settle::unsealed(
                &study.ctxs[group],
                run,
                attempt,
                &record,
                images,
                objective(study.request.loaded, run, &record),
            );
            finishing.push(Box::pin(async move {
                let sealed = tokio::task::spawn_blocking(move || m.seal(&dir))
                    .await
                    .map_err(|e| format!("sealing stopped: {e}"))
                    .and_then(|r| r.map(Box::new).map_err(|e| e.to_string()));
                Finished::Sealed { id, record, sealed }
            }));
        }
        Ended::Failed(reason) => {
            // Its group's engines hold this run alone: reaping them stops no other
            // (`cli::engines::reach` lets no engine serve two groups).
            let (testbed, instance) = (&study.testbeds[group], &study.ctxs[group].instance);
            finishing.push(Box::pin(async move {
                let _ = testbed.reap(instance).await;
                Finished::Reaped { id, reason }
            }));
        }
    }
}

/// Places and journals a run whose finishing ended, forgets it and makes its group idle: a
/// sealed run where its outcome says, a failed one as aborted (and no run starts after it).
fn finish(
    s: &mut Session<'_>,
    progress: &mut Progress<'_>,
    finished: Finished,
) -> Result<(), StudyError> {
    let id = match &finished {
        Finished::Sealed { id, .. } | Finished::Reaped { id, .. } => id.clone(),
    };
    let Some(k) = progress.under_way.iter().position(|f| f.run.id == id) else {
        return Ok(());
    };
    // A study that came while the run ran is declared before the run is settled.
    s.declare_neighbours()?;
    let f = progress.under_way.remove(k);
    progress.idle.push(f.group);
    progress.idle.sort_unstable_by(|a, b| b.cmp(a));
    let study_dir = s.dir.clone();
    match finished {
        Finished::Sealed { record, sealed, .. } => {
            let sealed = sealed.map_err(|reason| {
                StudyError::Unfinished(format!(
                    "`{}` ended but could not be sealed: {reason}",
                    f.run.id
                ))
            })?;
            let event = settle::place_sealed(&study_dir, s.writer()?, &sealed, &f.dir)?;
            settled(
                s,
                &event,
                f.run,
                &record,
                &mut progress.measured,
                &mut progress.left,
            );
        }
        Finished::Reaped { reason, .. } => {
            let event =
                settle::aborted(&study_dir, s.writer()?, f.run, f.attempt, &f.dir, &reason)?;
            s.note(&event);
            progress
                .failed
                .get_or_insert(format!("`{}` could not be executed: {reason}", f.run.id));
        }
    }
    Ok(())
}

/// Journals `run`'s start (number `index` of `total` for people) into its directory, which
/// must not exist yet; returns its attempt and directory.
fn begin(
    s: &mut Session<'_>,
    run: &RunSpec,
    index: usize,
    total: usize,
) -> Result<(u32, PathBuf), StudyError> {
    let attempt = s.ledger.next_attempt(&run.id);
    let dir = layout::run_dir(&s.dir, &run.id);
    if dir.exists() {
        return Err(StudyError::Refused(format!(
            "`{}` exists but the journal has no run in it; feedbench never overwrites results. Move it away, then resume",
            dir.display()
        )));
    }
    s.declare_neighbours()?;
    s.report(StudyEvent::RunStarting {
        index,
        total,
        run: &run.id,
        attempt,
        dir: &dir,
    });
    let relative = s.relative(&dir);
    s.log(Event::RunStarted {
        run: run.id.clone(),
        run_hash: run.run_hash.clone(),
        attempt,
        dir: relative,
    })?;
    Ok((attempt, dir))
}

/// The study cannot go on (its journal cannot be written, a run's directory is in the way):
/// the runs under way were dropped, so every group is reaped before the error is returned.
/// Their journal lines stay open, as after a crash: `--resume` settles them.
async fn abandon<T: Testbed>(testbeds: &[T], ctxs: &[StudyContext], e: StudyError) -> StudyError {
    for (t, ctx) in testbeds.iter().zip(ctxs) {
        let _ = t.reap(&ctx.instance).await;
    }
    e
}

/// The first pending run, in plan order, that may start now: one whose runs it takes a
/// figure from stand. A run whose dependency never will is skipped (journalled); one
/// whose dependency is neither under way nor pending waits for a later invocation; one
/// whose dependency is under way or pending stays for later in this loop.
fn next_run<'a, T>(
    study: &Study<'_, T>,
    session: &mut Session<'_>,
    progress: &mut Progress<'a>,
) -> Result<Option<&'a RunSpec>, StudyError> {
    let Progress {
        pending,
        under_way,
        left,
        ..
    } = progress;
    let mut k = 0;
    while k < pending.len() {
        let run = pending[k];
        match blocked_by(&session.ledger, study.request.runs, run) {
            None => return Ok(Some(pending.remove(k))),
            Some((dep, Some(label))) => {
                session.log(Event::RunSkipped {
                    run: run.id.clone(),
                    run_hash: run.run_hash.clone(),
                    reason: format!("it takes a rate from `{dep}`, which is {label}"),
                    by: Decider::Feedbench,
                })?;
                left.not_valid.push(run.id.clone());
                pending.remove(k);
            }
            Some((dep, None)) => {
                let coming = under_way.iter().any(|f| f.run.id == dep)
                    || pending.iter().any(|r| r.id == dep);
                if coming {
                    k += 1;
                    continue;
                }
                session.report(StudyEvent::Waiting {
                    index: study.index_of(run),
                    total: study.to_do.len(),
                    run: &run.id,
                    dependency: &dep,
                });
                left.waiting.push(run.id.clone());
                pending.remove(k);
            }
        }
    }
    Ok(None)
}

/// An interrupt: every run under way was stopped where it was (dropped); those already
/// ended are finished first (their results stand), then every group is reaped and each
/// run stopped is recorded as interrupted, to run again on `--resume`.
async fn stop_everything<T: Testbed>(
    study: &Study<'_, T>,
    session: &RefCell<&mut Session<'_>>,
    mut progress: Progress<'_>,
    mut finishing: Finishing<'_>,
) -> Result<(), StudyError> {
    while let Some(f) = finishing.next().await {
        let done = finish(&mut session.borrow_mut(), &mut progress, f);
        if let Err(e) = done {
            return Err(abandon(study.testbeds, study.ctxs, e).await);
        }
    }
    // Every group reaped and every run recorded, whatever one reap says.
    let mut removed = 0;
    let mut unreaped = None;
    for (t, ctx) in study.testbeds.iter().zip(study.ctxs) {
        match t.reap(&ctx.instance).await {
            Ok(n) => removed += n,
            Err(e) => {
                unreaped.get_or_insert(e);
            }
        }
    }
    let mut s = session.borrow_mut();
    let study_dir = s.dir.clone();
    let mut ids = Vec::new();
    for f in progress.under_way.iter().filter(|f| !f.ended) {
        let event = settle::interrupted(
            &study_dir,
            s.writer()?,
            &f.run.id,
            &f.run.run_hash,
            f.attempt,
            &f.dir,
        )?;
        s.note(&event);
        ids.push(format!("`{}`", f.run.id));
    }
    if let Some(e) = unreaped {
        return Err(e.into());
    }
    Err(StudyError::Unfinished(format!(
        "interrupted during {}; removed {removed} container(s) and recorded each as interrupted; `feedbench run --resume` runs them again",
        ids.join(", ")
    )))
}

/// The study's exit once nothing is under way: why a run could not be executed, an
/// interrupt between runs, or what was left undone.
fn conclude(progress: Progress<'_>, interrupt: &Interrupt) -> Result<(), StudyError> {
    if let Some(why) = progress.failed {
        return Err(StudyError::Unfinished(why));
    }
    let Progress {
        pending, mut left, ..
    } = progress;
    if interrupt.raised() && !pending.is_empty() {
        return Err(StudyError::Unfinished(format!(
            "interrupted between runs; nothing was running. `feedbench run --resume` carries on from `{}`",
            pending[0].id
        )));
    }
    left.waiting.extend(pending.iter().map(|r| r.id.clone()));
    left.verdict()
}
