//! The study loop of `feedbench run`: each run to do in plan order, its contender's gate
//! before the first, the runs it waits for, execution, and settling it in the ledger.

use std::io::Write;
use std::path::Path;

use super::show::{clock, print_event, summarise, Recorder};
use crate::cli::CliError;
use crate::engine::runtime::Runtime;
use crate::engine::topology::RunTopology;
use crate::ledger::journal::Event;
use crate::ledger::layout;
use crate::ledger::manifest::Image;
use crate::ledger::state::{Ledger, RunState};
use crate::ledger::{files, Decider};
use crate::plan::model::Profile;
use crate::plan::{LoadedPlan, RunSpec};
use crate::run::events::{RunEvent, Stamp};
use crate::run::execute::{execute, Saturations};
use crate::run::settle::{self, StudyContext};
use crate::rundir::record::{RecordError, RunRecord};

/// Saturations measured by runs that stand (completed and valid), from their run.json:
/// read once when the study loop starts; each run finished afterwards adds its own. A
/// record that does not read is an error naming the file: later runs would otherwise take
/// their rate from nothing.
fn recorded(
    study_dir: &Path,
    ledger: &Ledger,
    runs: &[RunSpec],
) -> Result<Saturations, RecordError> {
    let mut out = Saturations::new();
    for (r, s) in runs.iter().zip(ledger.status(runs)) {
        let RunState::CompletedValid { dir, .. } = &s.state else {
            continue;
        };
        let record = RunRecord::read(&study_dir.join(dir))?;
        if let Some(sat) = &record.saturation {
            if let Some(rate) = sat.rate {
                remember(&mut out, r, rate, sat.first_breach.is_some());
            }
        }
    }
    Ok(out)
}

/// Adds the saturation `r` measured. A ramp whose every step met the objective did not
/// find saturation: its top step is a lower bound, and every rate taken from it says so.
fn remember(out: &mut Saturations, r: &RunSpec, rate: f64, breached: bool) {
    let source = if breached {
        r.id.clone()
    } else {
        format!(
            "{} (a lower bound: the objective held at every step up to the ramp's top)",
            r.id
        )
    };
    out.insert(
        (r.contender.clone(), r.repetition, r.profile.clone()),
        (rate, source),
    );
}

/// The images of a run's containers, as the engine has them now.
async fn images(rt: &Runtime, topo: &RunTopology) -> Vec<Image> {
    let mut out = Vec::new();
    for c in &topo.containers {
        out.push(Image {
            role: c.role.key(),
            container: c.name.clone(),
            image: c.image.clone(),
            image_id: rt.image_id(&c.image).await,
        });
    }
    out
}

/// Whether the contender declares a gate that has not passed (nor failed) in this study.
fn needs_gate(loaded: &LoadedPlan, contender: &str, ledger: &Ledger) -> bool {
    !ledger.gate_passed.contains(contender)
        && !ledger.excluded.contains_key(contender)
        && crate::plan::expand::resolve_contenders(&loaded.plan)
            .iter()
            .any(|c| c.name == contender && c.gate.is_some())
}

/// Runs a contender's gate before its first run: its output is kept under `gates/`, and a
/// failure excludes the contender's runs with a deviation that carries the output.
async fn gate(
    rt: &Runtime,
    loaded: &LoadedPlan,
    runs: &[RunSpec],
    run: &RunSpec,
    study_dir: &Path,
    ctx: &StudyContext,
    rec: &mut Recorder,
) -> Result<(), CliError> {
    let json = rec.json;
    eprintln!(
        "gate of {}: deploying it and running its checks",
        run.contender
    );
    let mut observe =
        |id: &str, stamp: Stamp, event: &RunEvent| print_event(json, id, stamp, event);
    let outcome = tokio::select! {
        r = crate::run::gate::run_gate(rt, loaded, run, &mut observe) => r.map_err(anyhow::Error::from)?,
        _ = crate::cli::interrupted() => {
            rt.clean(Some(&ctx.study)).await.map_err(anyhow::Error::from)?;
            return Err(anyhow::anyhow!("interrupted during the gate of `{}`; nothing was recorded for it", run.contender).into());
        }
    };
    std::fs::create_dir_all(study_dir.join(layout::GATES)).map_err(anyhow::Error::from)?;
    let path = layout::gate_log(study_dir, &run.contender);
    files::write_atomic(&path, outcome.output.as_bytes()).map_err(anyhow::Error::from)?;
    if !outcome.judged {
        // Not the contender's fault as far as anyone can tell: nothing is recorded against
        // it, and the next resume gates it again.
        return Err(anyhow::anyhow!(
            "the gate of `{}` could not run: {}; nothing was recorded against the contender. Fix the cause, then `feedbench run --resume`",
            run.contender,
            outcome.reason
        )
        .into());
    }
    if outcome.passed {
        rec.log(Event::GatePassed {
            contender: run.contender.clone(),
            image: outcome.image.clone(),
            seconds: outcome.seconds,
        })
    } else {
        rec.log(Event::ContenderExcluded {
            contender: run.contender.clone(),
            image: outcome.image.clone(),
            exit_code: outcome.exit_code,
            reason: format!(
                "{}; output in {}",
                outcome.reason,
                layout::relative(study_dir, &path)
            ),
            output: outcome.output.clone(),
            runs: runs
                .iter()
                .filter(|r| r.contender == run.contender)
                .map(|r| r.id.clone())
                .collect(),
        })
    }
}

pub async fn study_loop(
    rt: &Runtime,
    loaded: &LoadedPlan,
    runs: &[RunSpec],
    to_do: &[&RunSpec],
    study_dir: &Path,
    ctx: &StudyContext,
    rec: &mut Recorder,
) -> Result<(), CliError> {
    let json = rec.json;
    let total = to_do.len();
    let allowance = loaded.plan.matrix.setup_allowance.as_secs_f64();
    let estimate = |r: &RunSpec| r.estimated_duration_s.unwrap_or(0.0) + allowance;
    let study_started = std::time::Instant::now();
    let mut measured = recorded(study_dir, &rec.ledger, runs).map_err(anyhow::Error::from)?;
    let (mut not_valid, mut waiting, mut excluded) = (Vec::new(), Vec::new(), Vec::new());
    for (i, run) in to_do.iter().enumerate() {
        if needs_gate(loaded, &run.contender, &rec.ledger) {
            gate(rt, loaded, runs, run, study_dir, ctx, rec).await?;
        }
        if let Some(why) = rec.ledger.excluded.get(&run.contender) {
            eprintln!(
                "[{}/{total}] {}: not run, its contender was excluded by its gate: {why}",
                i + 1,
                run.id
            );
            excluded.push(run.id.clone());
            continue;
        }
        // A run that takes a figure from another waits for it to stand.
        let status = rec.ledger.status(runs);
        let state_of = |id: &str| status.iter().find(|s| s.run == id).map(|s| s.state.clone());
        let mut blocked = None;
        for d in &run.depends_on {
            match state_of(d) {
                Some(RunState::CompletedValid { .. }) => {}
                Some(s @ (RunState::Invalid { .. } | RunState::Skipped { .. })) => {
                    blocked = Some((d.clone(), Some(s.label())));
                }
                _ => blocked = Some((d.clone(), None)),
            }
        }
        match blocked {
            Some((dep, Some(label))) => {
                rec.log(Event::RunSkipped {
                    run: run.id.clone(),
                    run_hash: run.run_hash.clone(),
                    reason: format!("it takes a rate from `{dep}`, which is {label}"),
                    by: Decider::Feedbench,
                })?;
                not_valid.push(run.id.clone());
                continue;
            }
            Some((dep, None)) => {
                eprintln!(
                    "[{}/{total}] {}: waits for `{dep}`, which has not completed",
                    i + 1,
                    run.id
                );
                waiting.push(run.id.clone());
                continue;
            }
            None => {}
        }
        let attempt = rec.ledger.next_attempt(&run.id);
        let dir = layout::run_dir(study_dir, &run.id);
        if dir.exists() {
            return Err(CliError::invalid(format!(
                "`{}` exists but the journal has no run in it; feedbench never overwrites results. Move it away, then resume",
                dir.display()
            )));
        }
        eprintln!(
            "[{}/{total}] {} (attempt {attempt}) → {}",
            i + 1,
            run.id,
            dir.display()
        );
        // Built once for the run: its images are recorded from it and it is deployed.
        let topo = crate::engine::topology::of_loaded(loaded, run).map_err(anyhow::Error::from)?;
        let images = images(rt, &topo).await;
        rec.log(Event::RunStarted {
            run: run.id.clone(),
            run_hash: run.run_hash.clone(),
            attempt,
            dir: layout::relative(study_dir, &dir),
        })?;
        let later: f64 = to_do[i + 1..].iter().map(|r| estimate(r)).sum();
        let mut observe = |id: &str, stamp: Stamp, event: &RunEvent| {
            if let (
                false,
                RunEvent::Progress {
                    elapsed_s, total_s, ..
                },
            ) = (json, event)
            {
                let left = (total_s - elapsed_s).max(0.0) + later;
                let _ = writeln!(
                    std::io::stderr().lock(),
                    "  study: {} elapsed, about {} left",
                    clock(study_started.elapsed().as_secs_f64()),
                    clock(left)
                );
            }
            print_event(json, id, stamp, event)
        };
        let record = tokio::select! {
            r = execute(rt, loaded, run, &topo, &measured, &dir, &mut observe) => match r {
                Ok(record) => record,
                Err(e) => {
                    // The run started and cannot be settled from a record: it is aborted, its
                    // containers removed, its directory set aside with the reason.
                    let _ = rt.clean(Some(&ctx.study)).await;
                    let event = settle::aborted(study_dir, &mut rec.writer, run, attempt, &dir, &e.to_string())
                        .map_err(anyhow::Error::from)?;
                    rec.note(&event);
                    return Err(anyhow::anyhow!("`{}` could not be executed: {e}", run.id).into());
                }
            },
            _ = crate::cli::interrupted() => {
                let removed = rt.clean(Some(&ctx.study)).await.map_err(anyhow::Error::from)?;
                let event = settle::interrupted(study_dir, &mut rec.writer, &run.id, &run.run_hash, attempt, &dir)
                    .map_err(anyhow::Error::from)?;
                rec.show(&event);
                return Err(anyhow::anyhow!(
                    "interrupted during `{}`; removed its {} container(s) and recorded it as interrupted; `feedbench run --resume` runs it again",
                    run.id, removed.containers.len()
                ).into());
            }
        };
        summarise(&record);
        let ramp = matches!(
            loaded.plan.profiles.get(run.profile.as_str()),
            Some(Profile::StepRamp { .. })
        );
        let objective = record.measured.as_ref().and_then(|m| {
            crate::analysis::objective::verdict(
                &loaded.plan.study.objective,
                m.p99_ms,
                m.failed_share,
                ramp,
            )
        });
        let event = settle::settle(
            ctx,
            study_dir,
            &mut rec.writer,
            run,
            attempt,
            &dir,
            &record,
            images,
            objective,
        )
        .map_err(anyhow::Error::from)?;
        rec.note(&event);
        match (&event, &record.saturation) {
            (Event::RunFinished { .. }, Some(s)) => {
                if let Some(rate) = s.rate {
                    remember(&mut measured, run, rate, s.first_breach.is_some());
                }
            }
            (Event::RunFinished { .. }, None) => {}
            _ => not_valid.push(run.id.clone()),
        }
    }
    let mut problems = Vec::new();
    if !not_valid.is_empty() {
        problems.push(format!(
            "{} run(s) did not complete valid: {}",
            not_valid.len(),
            not_valid.join(", ")
        ));
    }
    if !excluded.is_empty() {
        problems.push(format!(
            "{} run(s) not run because their contender failed its gate: {}",
            excluded.len(),
            excluded.join(", ")
        ));
    }
    if !waiting.is_empty() {
        problems.push(format!(
            "{} run(s) wait for runs that have not completed: {}",
            waiting.len(),
            waiting.join(", ")
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(anyhow::anyhow!(
            "{}; see `feedbench status` and the journal",
            problems.join("; ")
        )
        .into())
    }
}
