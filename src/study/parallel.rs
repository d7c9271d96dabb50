//! The study loop over several groups of engines: every contender's gate first (on the
//! first group, beside the coordinator), then runs in plan order go to idle groups, one run
//! per group at a time, each started only once the runs it takes a figure from stand.
//! One journal: every line still goes through the session, which the runs under way share
//! for their events only (never across an await).
//!
//! Runs under way are futures of this one task, polled only while the loop waits, so the
//! loop never does slow work between two waits: a run's directory is sealed (its files
//! digested) on a blocking thread, and a failed run's engines reaped, as futures polled
//! beside the runs still under way; a fault or a poll of theirs is never held up. A run
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
use super::runner::{objective, report_run_event, settled, Ended, Left, StudyRequest};
use super::session::Session;
use super::testbed::Testbed;
use super::StudyError;
use crate::engine::topology::{of_loaded, RunTopology};
use crate::ledger::journal::Event;
use crate::ledger::layout;
use crate::ledger::manifest::{Image, Manifest};
use crate::ledger::Decider;
use crate::plan::RunSpec;
use crate::run::events::{RunEvent, Stamp};
use crate::run::settle::{self, StudyContext};
use crate::rundir::record::RunRecord;

/// A run started on a group, until its journal line settles it.
struct Flying<'a> {
    group: usize,
    run: &'a RunSpec,
    attempt: u32,
    dir: PathBuf,
    /// Its execution ended (its group is idle again); it is being sealed or reaped.
    ended: bool,
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

/// Runs `to_do` across `testbeds` (one per group), settling each run as it ends.
pub(super) async fn study_loop<T: Testbed>(
    session: &mut Session<'_>,
    request: &StudyRequest<'_>,
    testbeds: &[T],
    interrupt: &mut Interrupt,
    ctxs: &[StudyContext],
    to_do: &[&RunSpec],
    topologies: &mut BTreeMap<String, RunTopology>,
) -> Result<(), StudyError> {
    let (loaded, runs) = (request.loaded, request.runs);
    let total = to_do.len();
    // Gates first, on the first group: a run may start on any group once its contender is
    // admitted, and a gate running beside a measured run would load its host.
    for run in to_do {
        if interrupt.raised() {
            return Err(StudyError::Unfinished(
                "interrupted between gates; nothing was running. `feedbench run --resume` carries on".into(),
            ));
        }
        if needs_gate(loaded, &run.contender, &session.ledger) {
            gate(session, &testbeds[0], interrupt, request, run).await?;
        }
    }
    let mut left = Left::default();
    let mut pending: Vec<&RunSpec> = Vec::new();
    for (i, run) in to_do.iter().enumerate() {
        match session.ledger.excluded.get(&run.contender).cloned() {
            Some(why) => {
                session.report(StudyEvent::Excluded {
                    index: i + 1,
                    total,
                    run: &run.id,
                    why: &why,
                });
                left.excluded.push(run.id.clone());
            }
            None => pending.push(run),
        }
    }
    let index_of = |run: &RunSpec| to_do.iter().position(|r| r.id == run.id).unwrap_or(0) + 1;
    let mut measured = recorded(&session.dir, &session.ledger, runs)?;
    let allowance = loaded.plan.matrix.setup_allowance.as_secs_f64();
    let estimate = |r: &RunSpec| r.estimated_duration_s.unwrap_or(0.0) + allowance;
    let groups = testbeds.len() as f64;
    let study_started = Instant::now();
    let mut idle: Vec<usize> = (0..testbeds.len()).rev().collect();
    let mut failed: Option<String> = None;
    let session = RefCell::new(session);
    let mut flying: FuturesUnordered<LocalBoxFuture<'_, Executed>> = FuturesUnordered::new();
    let mut finishing: FuturesUnordered<LocalBoxFuture<'_, Finished>> = FuturesUnordered::new();
    let mut under_way: Vec<Flying> = Vec::new();
    loop {
        while failed.is_none() && !interrupt.raised() && !idle.is_empty() {
            let next = {
                let mut s = session.borrow_mut();
                next_run(
                    &mut s,
                    runs,
                    &mut pending,
                    &under_way,
                    &mut left,
                    (&index_of, total),
                )
            };
            let run = match next {
                Ok(Some(run)) => run,
                Ok(None) => break,
                Err(e) => {
                    drop((flying, finishing));
                    return Err(abandon(testbeds, ctxs, e).await);
                }
            };
            let Some(group) = idle.pop() else { break };
            let topo = match topologies.remove(&run.id) {
                Some(t) => Ok(t),
                None => of_loaded(loaded, run).map_err(|e| {
                    StudyError::Refused(format!("`{}`: run `{}`: {e}", loaded.file, run.id))
                }),
            };
            let begun = topo.and_then(|topo| {
                let mut s = session.borrow_mut();
                begin(&mut s, run, index_of(run), total).map(|b| (topo, b))
            });
            let (topo, (attempt, dir)) = match begun {
                Ok(x) => x,
                Err(e) => {
                    drop((flying, finishing));
                    return Err(abandon(testbeds, ctxs, e).await);
                }
            };
            // What is left after the runs under way, shared by the groups.
            let later: f64 = pending.iter().map(|r| estimate(r)).sum::<f64>() / groups;
            let upper_bound = std::iter::once(run)
                .chain(pending.iter().copied())
                .any(|r| r.may_stop_early(&loaded.plan))
                && pending.iter().all(|r| r.estimated_duration_s.is_some());
            let taken = measured.clone();
            let into = dir.clone();
            let session = &session;
            let testbed = &testbeds[group];
            flying.push(Box::pin(async move {
                let images = testbed.images(&topo).await;
                let mut observe = |id: &str, stamp: Stamp, event: &RunEvent| {
                    let mut s = session.borrow_mut();
                    report_run_event(
                        s.reporter(),
                        id,
                        stamp,
                        event,
                        (study_started, later, upper_bound),
                    )
                };
                let ended = match testbed
                    .execute(loaded, run, &topo, &taken, &into, &mut observe)
                    .await
                {
                    Ok(record) => Ended::Record(Box::new(record)),
                    Err(e) => Ended::Failed(e.to_string()),
                };
                (run.id.clone(), ended, images)
            }));
            under_way.push(Flying {
                group,
                run,
                attempt,
                dir,
                ended: false,
            });
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
                // Every run under way is stopped where it is; those already ended are
                // finished first (their results stand).
                drop(flying);
                while let Some(f) = finishing.next().await {
                    let done = {
                        let mut s = session.borrow_mut();
                        finish(&mut s, &mut under_way, f, &mut measured, &mut left)
                    };
                    if let Err(e) = done {
                        return Err(abandon(testbeds, ctxs, e).await);
                    }
                }
                return interrupted(&session, testbeds, ctxs, under_way).await;
            }
            Step::Executed((id, ended, images)) => {
                let Some(f) = under_way.iter_mut().find(|f| f.run.id == id) else {
                    continue;
                };
                f.ended = true;
                idle.push(f.group);
                idle.sort_unstable_by(|a, b| b.cmp(a));
                let group = f.group;
                let (run, attempt, dir) = (f.run, f.attempt, f.dir.clone());
                match ended {
                    Ended::Record(record) => {
                        session.borrow_mut().report(StudyEvent::RunEnded(&record));
                        let m = settle::unsealed(
                            &ctxs[group],
                            run,
                            attempt,
                            &record,
                            images,
                            objective(loaded, run, &record),
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
                        // Its group's engines hold this run alone: reaping them stops no
                        // other (`cli::engines::reach` lets no engine serve two groups).
                        let (testbed, study) = (&testbeds[group], &ctxs[group].study);
                        finishing.push(Box::pin(async move {
                            let _ = testbed.reap(study).await;
                            Finished::Reaped { id, reason }
                        }));
                    }
                    Ended::Interrupted => {}
                }
                Ok(None)
            }
            Step::Finished(f) => {
                let mut s = session.borrow_mut();
                finish(&mut s, &mut under_way, f, &mut measured, &mut left)
            }
        };
        match outcome {
            Ok(None) => {}
            Ok(Some(why)) => {
                failed.get_or_insert(why);
            }
            Err(e) => {
                drop((flying, finishing));
                return Err(abandon(testbeds, ctxs, e).await);
            }
        }
    }
    if let Some(why) = failed {
        return Err(StudyError::Unfinished(why));
    }
    if interrupt.raised() && !pending.is_empty() {
        return Err(StudyError::Unfinished(format!(
            "interrupted between runs; nothing was running. `feedbench run --resume` carries on from `{}`",
            pending[0].id
        )));
    }
    left.waiting.extend(pending.iter().map(|r| r.id.clone()));
    left.verdict()
}

/// Places and journals a run whose finishing ended, and forgets it: a sealed run where its
/// outcome says, a failed one as aborted. Returns what the study's exit says of a run that
/// could not be executed.
fn finish(
    s: &mut Session<'_>,
    under_way: &mut Vec<Flying<'_>>,
    finished: Finished,
    measured: &mut crate::run::execute::Saturations,
    left: &mut Left,
) -> Result<Option<String>, StudyError> {
    let id = match &finished {
        Finished::Sealed { id, .. } | Finished::Reaped { id, .. } => id.clone(),
    };
    let Some(k) = under_way.iter().position(|f| f.run.id == id) else {
        return Ok(None);
    };
    let f = under_way.remove(k);
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
            settled(s, &event, f.run, &record, measured, left);
            Ok(None)
        }
        Finished::Reaped { reason, .. } => {
            let event =
                settle::aborted(&study_dir, s.writer()?, f.run, f.attempt, &f.dir, &reason)?;
            s.note(&event);
            Ok(Some(format!(
                "`{}` could not be executed: {reason}",
                f.run.id
            )))
        }
    }
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
        let _ = t.reap(&ctx.study).await;
    }
    e
}

/// The first pending run, in plan order, that may start now: one whose runs it takes a
/// figure from stand. A run whose dependency never will is skipped (journalled); one
/// whose dependency is neither under way nor pending waits for a later invocation; one
/// whose dependency is under way or pending stays for later in this loop.
fn next_run<'a>(
    session: &mut Session<'_>,
    runs: &[RunSpec],
    pending: &mut Vec<&'a RunSpec>,
    under_way: &[Flying],
    left: &mut Left,
    (index_of, total): (&dyn Fn(&RunSpec) -> usize, usize),
) -> Result<Option<&'a RunSpec>, StudyError> {
    let mut k = 0;
    while k < pending.len() {
        let run = pending[k];
        match blocked_by(&session.ledger, runs, run) {
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
                    index: index_of(run),
                    total,
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

/// Every run under way stopped by an interrupt: each group's engines reaped, each run
/// recorded as interrupted, to run again on `--resume`.
async fn interrupted<T: Testbed>(
    session: &RefCell<&mut Session<'_>>,
    testbeds: &[T],
    ctxs: &[StudyContext],
    under_way: Vec<Flying<'_>>,
) -> Result<(), StudyError> {
    // Every group reaped and every run recorded, whatever one reap says.
    let mut removed = 0;
    let mut unreaped = None;
    for (t, ctx) in testbeds.iter().zip(ctxs) {
        match t.reap(&ctx.study).await {
            Ok(n) => removed += n,
            Err(e) => {
                unreaped.get_or_insert(e);
            }
        }
    }
    let mut s = session.borrow_mut();
    let study_dir = s.dir.clone();
    let mut ids = Vec::new();
    for f in under_way.iter().filter(|f| !f.ended) {
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
