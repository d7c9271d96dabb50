//! The study loop over several groups of engines: every contender's gate first (on the
//! first group, beside the coordinator), then runs in plan order go to idle groups, one run
//! per group at a time, each started only once the runs it takes a figure from stand.
//! One journal: every line still goes through the session, which the runs under way share
//! for their events only (never across an await). A run that fails to execute stops new
//! starts and lets the others finish; an interrupt stops every run under way, reaps every
//! group and settles each as interrupted; an error of the study itself (its journal) reaps
//! every group before it is returned.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use futures_util::stream::{FuturesUnordered, StreamExt};

use super::dependencies::{blocked_by, recorded};
use super::gate::{gate, needs_gate};
use super::interrupt::Interrupt;
use super::reporter::StudyEvent;
use super::runner::{settle_record, Ended, Left, StudyRequest};
use super::session::Session;
use super::testbed::Testbed;
use super::StudyError;
use crate::engine::topology::{of_loaded, RunTopology};
use crate::ledger::journal::Event;
use crate::ledger::layout;
use crate::ledger::Decider;
use crate::plan::RunSpec;
use crate::run::events::{RunEvent, Stamp};
use crate::run::settle::{self, StudyContext};

/// A run under way on a group.
struct Flying<'a> {
    group: usize,
    run: &'a RunSpec,
    attempt: u32,
    dir: PathBuf,
    images: Vec<crate::ledger::manifest::Image>,
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
    let mut measured = recorded(&session.dir, &session.ledger, runs)?;
    let allowance = loaded.plan.matrix.setup_allowance.as_secs_f64();
    let estimate = |r: &RunSpec| r.estimated_duration_s.unwrap_or(0.0) + allowance;
    let groups = testbeds.len() as f64;
    let study_started = Instant::now();
    let mut idle: Vec<usize> = (0..testbeds.len()).rev().collect();
    let mut started = 0;
    let mut failed: Option<String> = None;
    let session = RefCell::new(session);
    let mut flying = FuturesUnordered::new();
    let mut under_way: Vec<Flying> = Vec::new();
    loop {
        while failed.is_none() && !interrupt.raised() && !idle.is_empty() {
            let next = {
                let mut s = session.borrow_mut();
                next_run(&mut s, runs, &mut pending, &under_way, &mut left, total)
            };
            let run = match next {
                Ok(Some(run)) => run,
                Ok(None) => break,
                Err(e) => {
                    drop(flying);
                    return Err(abandon(testbeds, ctxs, e).await);
                }
            };
            let Some(group) = idle.pop() else { break };
            started += 1;
            let topo = match topologies.remove(&run.id) {
                Some(t) => Ok(t),
                None => of_loaded(loaded, run).map_err(|e| {
                    StudyError::Refused(format!("`{}`: run `{}`: {e}", loaded.file, run.id))
                }),
            };
            let topo = match topo {
                Ok(t) => t,
                Err(e) => {
                    drop(flying);
                    return Err(abandon(testbeds, ctxs, e).await);
                }
            };
            let testbed = &testbeds[group];
            let images = testbed.images(&topo).await;
            let begun = {
                let mut s = session.borrow_mut();
                begin(&mut s, run, started, total)
            };
            let (attempt, dir) = match begun {
                Ok(x) => x,
                Err(e) => {
                    drop(flying);
                    return Err(abandon(testbeds, ctxs, e).await);
                }
            };
            // What is left after the runs under way, shared by the groups.
            let later: f64 = pending.iter().map(|r| estimate(r)).sum::<f64>() / groups;
            let upper_bound = pending.iter().any(|r| r.may_stop_early(&loaded.plan))
                && pending.iter().all(|r| r.estimated_duration_s.is_some());
            let taken = measured.clone();
            let into = dir.clone();
            let session = &session;
            flying.push(async move {
                let mut observe = |id: &str, stamp: Stamp, event: &RunEvent| {
                    let mut s = session.borrow_mut();
                    if let RunEvent::Progress {
                        elapsed_s, total_s, ..
                    } = event
                    {
                        s.report(StudyEvent::StudyProgress {
                            elapsed_s: study_started.elapsed().as_secs_f64(),
                            left_s: (total_s - elapsed_s).max(0.0) + later,
                            upper_bound,
                        });
                    }
                    s.report(StudyEvent::Run {
                        run: id,
                        stamp,
                        event,
                    });
                };
                let ended = match testbed
                    .execute(loaded, run, &topo, &taken, &into, &mut observe)
                    .await
                {
                    Ok(record) => Ended::Record(Box::new(record)),
                    Err(e) => Ended::Failed(e.to_string()),
                };
                (run.id.clone(), ended)
            });
            under_way.push(Flying {
                group,
                run,
                attempt,
                dir,
                images,
            });
        }
        if flying.is_empty() {
            break;
        }
        let next = tokio::select! {
            done = flying.next() => done,
            _ = interrupt.wait() => None,
        };
        let Some((id, ended)) = next else {
            // Interrupted: every run under way is stopped where it is.
            drop(flying);
            return interrupted(&session, testbeds, ctxs, under_way).await;
        };
        let Some(k) = under_way.iter().position(|f| f.run.id == id) else {
            continue;
        };
        let f = under_way.remove(k);
        idle.push(f.group);
        idle.sort_unstable_by(|a, b| b.cmp(a));
        if let Ended::Failed(_) = ended {
            // Its group's engines hold this run alone: reaping them stops no other.
            let _ = testbeds[f.group].reap(&ctxs[f.group].study).await;
        }
        let settled = {
            let mut s = session.borrow_mut();
            match ended {
                Ended::Record(record) => settle_record(
                    &mut s,
                    &ctxs[f.group],
                    loaded,
                    (f.run, f.attempt, &f.dir),
                    &record,
                    f.images,
                    &mut measured,
                    &mut left,
                )
                .map(|()| None),
                Ended::Failed(reason) => aborted(&mut s, &f, &reason).map(Some),
                Ended::Interrupted => Ok(None),
            }
        };
        match settled {
            Ok(None) => {}
            Ok(Some(why)) => {
                failed.get_or_insert(why);
            }
            Err(e) => {
                drop(flying);
                return Err(abandon(testbeds, ctxs, e).await);
            }
        }
    }
    if let Some(why) = failed {
        return Err(StudyError::Unfinished(why));
    }
    if interrupt.raised() {
        let next = pending.first().map(|r| r.id.as_str()).unwrap_or("the rest");
        return Err(StudyError::Unfinished(format!(
            "interrupted between runs; nothing was running. `feedbench run --resume` carries on from `{next}`"
        )));
    }
    left.waiting.extend(pending.iter().map(|r| r.id.clone()));
    left.verdict()
}

/// Journals `run`'s start (attempt `index` of `total` for people) into its directory,
/// which must not exist yet; returns its attempt and directory.
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

/// Settles a run the executor could not produce a record for as aborted, its directory set
/// aside with the reason; returns what the study's exit says of it.
fn aborted(s: &mut Session<'_>, f: &Flying<'_>, reason: &str) -> Result<String, StudyError> {
    let study_dir = s.dir.clone();
    let event = settle::aborted(&study_dir, s.writer()?, f.run, f.attempt, &f.dir, reason)?;
    s.note(&event);
    Ok(format!("`{}` could not be executed: {reason}", f.run.id))
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
    total: usize,
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
                    index: k + 1,
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
    let mut removed = 0;
    for (t, ctx) in testbeds.iter().zip(ctxs) {
        removed += t.reap(&ctx.study).await?;
    }
    let mut s = session.borrow_mut();
    let study_dir = s.dir.clone();
    let mut ids = Vec::new();
    for f in &under_way {
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
    Err(StudyError::Unfinished(format!(
        "interrupted during {}; removed {removed} container(s) and recorded each as interrupted; `feedbench run --resume` runs them again",
        ids.join(", ")
    )))
}
