//! `feedbench run <PLAN>`: execute the plan's runs in the plan's order, each into its own
//! directory under results/<study>/runs/, and keep the study's ledger: the journal, a sealed
//! manifest per run, runs moved aside when they are invalid, aborted or interrupted.
//! `--resume` carries a study on; `--amend` declares a plan change and reruns what it touched.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{CliError, Format};
use crate::engine::runtime::Runtime;
use crate::ledger::journal::{self, Event, Writer};
use crate::ledger::layout::{self, SUPERSEDED};
use crate::ledger::manifest::{Host, Image};
use crate::ledger::state::{Ledger, RunState};
use crate::ledger::{files, Decider};
use crate::plan::model::Profile;
use crate::plan::{expand, load_file, LoadedPlan, RunSpec};
use crate::run::events::{RunEvent, Stamp};
use crate::run::execute::{execute, Execution, RunRecord, Saturations};
use crate::run::settle::{self, StudyContext};

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The plan file.
    pub plan: PathBuf,
    /// Only runs whose id matches this pattern (`*` any characters, `?` one), e.g.
    /// `feed-rs/*/r1`. Runs they depend on must have run before, or match too.
    #[arg(long)]
    pub only: Option<String>,
    /// `json` prints every event, and every journal line, as a JSON line on stdout.
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
    /// Where study results go.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// Use the images as they are instead of building missing or stale ones first.
    #[arg(long)]
    pub no_build: bool,
    /// Carry on a study that has results: run what is not completed and valid for its run
    /// hash, after recording interrupted runs and removing their leftover containers.
    #[arg(long)]
    pub resume: bool,
    /// Declare a plan change since the study last ran, with its reason: the runs it changed
    /// are marked superseded and run again; the rest are kept. Implies --resume.
    #[arg(long, value_name = "REASON")]
    pub amend: Option<String>,
    /// Run a plan file that differs from its last commit (or is not committed); the journal
    /// records it as a deviation from the pre-registration.
    #[arg(long)]
    pub allow_uncommitted: bool,
}

/// `*` and `?` glob match over a whole run id.
pub fn glob(pattern: &str, text: &str) -> bool {
    fn go(p: &[u8], t: &[u8]) -> bool {
        match (p.first(), t.first()) {
            (None, None) => true,
            (Some(b'*'), _) => go(&p[1..], t) || (!t.is_empty() && go(p, &t[1..])),
            (Some(b'?'), Some(_)) => go(&p[1..], &t[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &t[1..]),
            _ => false,
        }
    }
    go(pattern.as_bytes(), text.as_bytes())
}

/// Saturations measured by runs that stand (completed and valid), from their run.json.
fn recorded(study_dir: &Path, ledger: &Ledger, runs: &[RunSpec]) -> Saturations {
    let mut out = Saturations::new();
    for (r, s) in runs.iter().zip(ledger.status(runs)) {
        let RunState::CompletedValid { dir, .. } = &s.state else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(study_dir.join(dir).join("run.json")) else {
            continue;
        };
        let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        if let Some(rate) = json["saturation"]["rate"].as_f64() {
            out.insert(
                (r.contender.clone(), r.repetition, r.profile.clone()),
                (rate, r.id.clone()),
            );
        }
    }
    out
}

/// Appends to the journal, folds the event into the ledger and shows it.
struct Recorder {
    writer: Writer,
    ledger: Ledger,
    json: bool,
}

impl Recorder {
    fn log(&mut self, event: Event) -> Result<(), CliError> {
        let entry = self
            .writer
            .append(event)
            .map_err(|e| CliError::Failure(e.into()))?;
        self.ledger.apply(&entry.event);
        self.show(&entry.event);
        Ok(())
    }
}

fn invalid(msg: String) -> CliError {
    CliError::Invalid(msg, Vec::new())
}

impl RunArgs {
    pub fn exec(self) -> Result<(), CliError> {
        let loaded = load_file(&self.plan, super::host_cores())?;
        let runs = expand(&loaded.plan);
        let selected: Vec<RunSpec> = runs
            .iter()
            .filter(|r| self.only.as_deref().is_none_or(|p| glob(p, &r.id)))
            .cloned()
            .collect();
        if selected.is_empty() {
            return Err(invalid(format!(
                "no run of `{}` matches `{}`",
                loaded.file,
                self.only.clone().unwrap_or_default()
            )));
        }
        let git = crate::git::registration(&self.plan).map_err(|e| CliError::Failure(e.into()))?;
        let uncommitted = git.clean != Some(true);
        if uncommitted && !self.allow_uncommitted {
            let why = match (&git.path, &git.commit) {
                (None, _) => "is not in a git repository".to_string(),
                (Some(_), None) => "is in a repository with no commit yet".to_string(),
                (Some(p), Some(_)) => {
                    format!("(`{p}`) differs from its last commit, or is not committed")
                }
            };
            return Err(invalid(format!(
                "`{}` {why}. The plan's commit is the study's pre-registration: commit the plan first, or pass --allow-uncommitted to run it anyway and record that as a deviation",
                loaded.file
            )));
        }
        let study = loaded.plan.study.name.to_string();
        let study_dir = self.results.join(&study);
        let _lock = crate::run::lock::lock_study(&study_dir, &study)
            .map_err(|e| CliError::Failure(e.into()))?;
        let journal_path = study_dir.join(journal::FILE);
        let journal = journal::read(&journal_path).map_err(|e| CliError::Failure(e.into()))?;
        let has_results = !journal.entries.is_empty() || study_dir.join(layout::RUNS).exists();
        let resume = self.resume || self.amend.is_some();
        if has_results && !resume {
            return Err(invalid(format!(
                "`{}` already holds results of study `{study}`; feedbench never overwrites them. Pass --resume to carry the study on (completed runs are kept), or choose another --results",
                study_dir.display()
            )));
        }
        if resume && journal.entries.is_empty() && study_dir.join(layout::RUNS).exists() {
            return Err(invalid(format!(
                "`{}` holds runs but no journal ({}); they were not made by this version of feedbench and cannot be resumed. Choose another --results",
                study_dir.display(),
                journal::FILE
            )));
        }
        let ledger = Ledger::fold(journal.events());
        let change = ledger.plan_change(&loaded.plan_hash, &runs);
        match (&change, &self.amend) {
            (Some(c), None) => {
                let list: Vec<String> = c
                    .changes
                    .iter()
                    .map(|ch| match &ch.new_run_hash {
                        None => format!("  {} (no longer in the plan)", ch.run),
                        Some(h) if Some(h) == ch.old_run_hash.as_ref() => {
                            format!("  {} (a run it depends on changed)", ch.run)
                        }
                        Some(_) => format!("  {} (its definition changed)", ch.run),
                    })
                    .collect();
                return Err(invalid(format!(
                    "`{}` changed since study `{study}` last ran (plan hash {} then, {} now). {}\nA change is never applied silently: declare it with --amend \"<reason>\" to record an amendment, mark the runs it touched superseded and run exactly those again; or restore the plan",
                    loaded.file,
                    short(&c.old_plan_hash),
                    short(&c.new_plan_hash),
                    if list.is_empty() {
                        "No result recorded so far is touched.".to_string()
                    } else {
                        format!("Results that would no longer match:\n{}", list.join("\n"))
                    }
                )));
            }
            (None, Some(_)) if ledger.plan_hash.is_some() => {
                return Err(invalid(format!(
                    "--amend: `{}` has not changed since study `{study}` last ran (plan hash {}); there is nothing to amend",
                    loaded.file,
                    short(&loaded.plan_hash)
                )));
            }
            _ => {}
        }
        if !self.no_build {
            let recipes = super::images::plan_recipes(&self.plan)?;
            let args = super::images::BuildArgs {
                plan: None,
                force: false,
                only: Vec::new(),
                repo_root: None,
            };
            args.exec_with(recipes).map_err(CliError::Failure)?;
        }
        let json = self.format == Format::Json;
        let plan_file = git.path.clone().unwrap_or_else(|| loaded.file.clone());
        super::block_on(async move {
            let rt = Runtime::connect().await.map_err(anyhow::Error::from)?;
            let facts = rt.facts().await.map_err(anyhow::Error::from)?;
            let ctx = StudyContext {
                study: study.clone(),
                plan_file: plan_file.clone(),
                plan_hash: loaded.plan_hash.clone(),
                git: git.clone(),
                host: Host {
                    cores: facts.cores,
                    memory_bytes: facts.memory_bytes,
                    kernel: facts.kernel,
                    cgroup_version: facts.cgroup_version,
                    engine_version: facts.engine_version,
                },
            };
            std::fs::create_dir_all(&study_dir).map_err(anyhow::Error::from)?;
            let writer = Writer::open(&journal_path).map_err(anyhow::Error::from)?;
            // Opening may have declared a torn line: fold what the journal holds now.
            let ledger = Ledger::fold(
                journal::read(&journal_path)
                    .map_err(anyhow::Error::from)?
                    .events(),
            );
            let mut rec = Recorder {
                writer,
                ledger,
                json,
            };
            if resume {
                // Whatever an earlier, killed invocation left running is reaped first.
                let removed = rt.clean(Some(&study)).await.map_err(anyhow::Error::from)?;
                if !removed.containers.is_empty() {
                    eprintln!(
                        "removed {} leftover container(s) of study `{study}`",
                        removed.containers.len()
                    );
                }
                for (run, hash, attempt, dir) in rec.ledger.open_runs() {
                    let event = settle::interrupted(
                        &study_dir,
                        &mut rec.writer,
                        &run,
                        &hash,
                        attempt,
                        &study_dir.join(&dir),
                    )
                    .map_err(anyhow::Error::from)?;
                    rec.ledger.apply(&event);
                    rec.show(&event);
                }
            }
            if let (Some(c), Some(reason)) = (&change, &self.amend) {
                rec.log(Event::PlanAmended {
                    reason: reason.clone(),
                    old_plan_hash: c.old_plan_hash.clone(),
                    new_plan_hash: c.new_plan_hash.clone(),
                    git_commit: git.commit.clone(),
                    changes: c.changes.clone(),
                })?;
                for ch in &c.changes {
                    let Some((hash, attempt, dir)) = rec.ledger.standing(&ch.run) else {
                        continue;
                    };
                    let moved = match dir {
                        Some(d) if study_dir.join(&d).exists() => Some(layout::relative(
                            &study_dir,
                            &files::move_dir(
                                &study_dir.join(&d),
                                &layout::aside(&study_dir, SUPERSEDED, &ch.run),
                            )
                            .map_err(anyhow::Error::from)?,
                        )),
                        other => other,
                    };
                    rec.log(Event::RunSuperseded {
                        run: ch.run.clone(),
                        run_hash: hash,
                        attempt,
                        dir: moved,
                        amendment: reason.clone(),
                    })?;
                }
            }
            if uncommitted {
                rec.log(Event::UncommittedPlan {
                    plan_file: plan_file.clone(),
                    plan_hash: loaded.plan_hash.clone(),
                    git_commit: git.commit.clone(),
                })?;
            }
            let status = rec.ledger.status(&runs);
            let to_do: Vec<&RunSpec> = selected
                .iter()
                .filter(|r| {
                    status
                        .iter()
                        .find(|s| s.run == r.id)
                        .is_some_and(|s| !s.state.settled())
                })
                .collect();
            rec.log(Event::StudyStarted {
                plan_file: plan_file.clone(),
                plan_hash: loaded.plan_hash.clone(),
                feedbench_version: settle::feedbench_version(),
                git_commit: git.commit.clone(),
                git_clean: git.clean,
                resume,
                runs_planned: runs.len(),
                runs_to_do: to_do.iter().map(|r| r.id.clone()).collect(),
            })?;
            if to_do.is_empty() {
                eprintln!(
                    "nothing to do: the {} selected run(s) are settled (see `feedbench status`)",
                    selected.len()
                );
                return Ok(());
            }
            study_loop(&rt, &loaded, &runs, &to_do, &study_dir, &ctx, &mut rec).await
        })
    }
}

fn short(hash: &str) -> &str {
    &hash[..12.min(hash.len())]
}

impl Recorder {
    /// Shows an event that was appended elsewhere.
    fn show(&self, event: &Event) {
        if self.json {
            let _ = writeln!(
                std::io::stdout().lock(),
                "{}",
                serde_json::json!({"journal": event})
            );
        } else {
            let _ = writeln!(
                std::io::stderr().lock(),
                "  journal: {}",
                super::status::describe(event)
            );
        }
    }
}

/// The images of a run's containers, as the engine has them now.
async fn images(rt: &Runtime, loaded: &LoadedPlan, run: &RunSpec) -> Vec<Image> {
    let base = loaded.base_dir.clone();
    let read = move |rel: &str| std::fs::read(base.join(rel)).map_err(|e| e.to_string());
    let Ok(topo) = crate::engine::topology::topology(&loaded.plan, run, &read) else {
        return Vec::new();
    };
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
        _ = super::interrupted() => {
            rt.clean(Some(&ctx.study)).await.map_err(anyhow::Error::from)?;
            return Err(anyhow::anyhow!("interrupted during the gate of `{}`; nothing was recorded for it", run.contender).into());
        }
    };
    let log = study_dir
        .join("gates")
        .join(format!("{}.log", run.contender));
    std::fs::create_dir_all(study_dir.join("gates")).map_err(anyhow::Error::from)?;
    let mut path = log.clone();
    let mut n = 1;
    while path.exists() {
        n += 1;
        path = log.with_extension(format!("{n}.log"));
    }
    files::write_atomic(&path, outcome.output.as_bytes()).map_err(anyhow::Error::from)?;
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

async fn study_loop(
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
            return Err(invalid(format!(
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
        let images = images(rt, loaded, run).await;
        rec.log(Event::RunStarted {
            run: run.id.clone(),
            run_hash: run.run_hash.clone(),
            attempt,
            dir: layout::relative(study_dir, &dir),
        })?;
        let measured = recorded(study_dir, &rec.ledger, runs);
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
            r = execute(rt, loaded, run, &measured, &dir, &mut observe) => r.map_err(anyhow::Error::from)?,
            _ = super::interrupted() => {
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
        rec.ledger.apply(&event);
        rec.show(&event);
        if !matches!(event, Event::RunFinished { .. }) {
            not_valid.push(run.id.clone());
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

fn print_event(json: bool, run: &str, stamp: Stamp, event: &RunEvent) {
    if json {
        let mut v = serde_json::to_value(event).unwrap_or_default();
        if let Some(m) = v.as_object_mut() {
            m.insert("run".into(), run.into());
            m.insert(
                "wall_ns".into(),
                serde_json::Value::String(stamp.wall_ns.to_string()),
            );
            m.insert("t_s".into(), stamp.t_s.into());
        }
        let _ = writeln!(std::io::stdout().lock(), "{v}");
    } else {
        let row = crate::run::events::csv_row(stamp, event);
        let fields: Vec<&str> = row.trim_end().splitn(3, ',').collect();
        let _ = writeln!(
            std::io::stderr().lock(),
            "  {:>7.1}s  {}",
            stamp.t_s,
            fields.get(2).unwrap_or(&"").replace(',', " ")
        );
    }
}

fn clock(secs: f64) -> String {
    let t = secs.round() as u64;
    format!("{}h{:02}m{:02}s", t / 3600, t / 60 % 60, t % 60)
}

fn summarise(r: &RunRecord) {
    let mut err = std::io::stderr().lock();
    let outcome = match &r.execution {
        Execution::Completed => "completed".to_string(),
        Execution::Aborted {
            guard,
            figure,
            threshold,
            unit,
            ..
        } => format!("aborted by {guard}: {figure} {unit} against {threshold} {unit}"),
        Execution::Failed { reason } => format!("failed: {reason}"),
    };
    let _ = writeln!(
        err,
        "  {outcome}; cleanup {}",
        if r.cleanup_ok { "ok" } else { "FAILED" }
    );
    if let (Some(l), Some(s)) = (&r.load, r.scheduled_arrivals) {
        let _ = writeln!(
            err,
            "  {} requests of {s:.0} scheduled, {} dropped, {} with an error code (4xx included)",
            l.requests, l.dropped_iterations, l.errors
        );
    }
    if let Some(m) = &r.measured {
        let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1} ms"));
        let _ = writeln!(
            err,
            "  measured phase: {} requests, p50 {}, p99 {}, {:.2}% failed",
            m.requests,
            ms(m.p50_ms),
            ms(m.p99_ms),
            m.failed_share * 100.0
        );
    }
    if let Some(s) = &r.saturation {
        match (s.rate, s.first_breach) {
            (Some(rate), Some(b)) => {
                let _ = writeln!(
                    err,
                    "  saturation {rate} arrivals/s (the objective broke at {b})"
                );
            }
            (Some(rate), None) => {
                let _ = writeln!(
                    err,
                    "  the objective held at every step, up to {rate} arrivals/s"
                );
            }
            (None, _) => {
                let _ = writeln!(err, "  the objective broke at the first step");
            }
        }
    }
    for w in &r.warnings {
        let _ = writeln!(err, "  warning: {w}");
    }
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn globs_match_whole_ids() {
        assert!(glob("feed-rs/*/r1", "feed-rs/ramp/r1"));
        assert!(glob("*", "x/y/r2"));
        assert!(glob("feed-??/ramp/r1", "feed-rs/ramp/r1"));
        assert!(!glob("feed-rs/*", "feed-py/ramp/r1"));
        assert!(!glob("feed-rs/ramp", "feed-rs/ramp/r1"));
    }
}
