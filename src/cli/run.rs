//! `feedbench run <PLAN>`: execute the plan's runs in the plan's order, each into its own
//! directory under results/<study>/runs/, and keep the study's ledger: the journal, a sealed
//! manifest per run, runs moved aside when they are invalid, aborted or interrupted.
//! `--resume` carries a study on; `--amend` declares a plan change and reruns what it touched.

use std::path::PathBuf;

use super::{CliError, Format};
use crate::engine::runtime::Runtime;
use crate::ledger::files;
use crate::ledger::journal::{self, Event, Writer};
use crate::ledger::layout::{self, SUPERSEDED};
use crate::ledger::manifest::Host;
use crate::ledger::state::Ledger;
use crate::plan::{expand, load_file, RunSpec};
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

/// `*` and `?` glob match over a whole run id (`plan::select::matches`).
pub fn glob(pattern: &str, text: &str) -> bool {
    crate::plan::select::matches(pattern, text)
}

mod show;
mod study;

use show::Recorder;

impl RunArgs {
    pub fn exec(self) -> Result<(), CliError> {
        let loaded = load_file(&self.plan, super::local_cores())?;
        let runs = expand(&loaded.plan);
        let selected: Vec<RunSpec> = runs
            .iter()
            .filter(|r| self.only.as_deref().is_none_or(|p| glob(p, &r.id)))
            .cloned()
            .collect();
        if selected.is_empty() {
            return Err(CliError::invalid(format!(
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
            return Err(CliError::invalid(format!(
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
        for b in journal.undeclared_bad() {
            eprintln!(
                "warning: `{}` line {} does not parse ({}); its event is lost to the ledger and the audit reports it",
                journal_path.display(),
                b.line,
                b.error
            );
        }
        let has_results = !journal.entries.is_empty() || study_dir.join(layout::RUNS).exists();
        let resume = self.resume || self.amend.is_some();
        if has_results && !resume {
            return Err(CliError::invalid(format!(
                "`{}` already holds results of study `{study}`; feedbench never overwrites them. Pass --resume to carry the study on (completed runs are kept), or choose another --results",
                study_dir.display()
            )));
        }
        if resume && journal.entries.is_empty() && study_dir.join(layout::RUNS).exists() {
            return Err(CliError::invalid(format!(
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
                let what = if c.old_plan_hash == c.new_plan_hash {
                    format!(
                        "`{}` is unchanged (plan hash {}), but this feedbench defines some of its runs differently from the feedbench that ran them (another version?).",
                        loaded.file,
                        short(&c.new_plan_hash)
                    )
                } else {
                    format!(
                        "`{}` changed since study `{study}` last ran (plan hash {} then, {} now).",
                        loaded.file,
                        short(&c.old_plan_hash),
                        short(&c.new_plan_hash)
                    )
                };
                return Err(CliError::invalid(format!(
                    "{what} {}\nA change is never applied silently: declare it with --amend \"<reason>\" to record an amendment, mark the runs it touched superseded and run exactly those again; or restore the plan",
                    if list.is_empty() {
                        "No result recorded so far is touched.".to_string()
                    } else {
                        format!("Results that would no longer match:\n{}", list.join("\n"))
                    }
                )));
            }
            (None, Some(_)) if ledger.plan_hash.is_some() => {
                return Err(CliError::invalid(format!(
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
            // Caps that do not fit the host are the plan's problem: refused before anything
            // is recorded (an amendment, a gate, a run).
            preflight(&loaded, &runs, &selected, &ledger, facts.cores)?;
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
                    let event = settle::recover(
                        &study_dir,
                        &mut rec.writer,
                        &run,
                        &hash,
                        attempt,
                        &study_dir.join(&dir),
                    )
                    .map_err(anyhow::Error::from)?;
                    rec.note(&event);
                }
                // An amendment a crash cut short is finished before anything else.
                supersede_pending(&study_dir, &mut rec)?;
            }
            if let (Some(c), Some(reason)) = (&change, &self.amend) {
                rec.log(Event::PlanAmended {
                    reason: reason.clone(),
                    old_plan_hash: c.old_plan_hash.clone(),
                    new_plan_hash: c.new_plan_hash.clone(),
                    git_commit: git.commit.clone(),
                    changes: c.changes.clone(),
                })?;
                supersede_pending(&study_dir, &mut rec)?;
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
            study::study_loop(&rt, &loaded, &runs, &to_do, &study_dir, &ctx, &mut rec).await
        })
    }
}

/// Moves every result an amendment superseded out of `runs/` (an invalid one stays with its
/// evidence) and journals where it went. A directory a crash already moved is found by its
/// manifest.
fn supersede_pending(study_dir: &std::path::Path, rec: &mut Recorder) -> Result<(), CliError> {
    for p in rec.ledger.pending.clone() {
        let dir = match &p.dir {
            Some(d) if d.starts_with(&format!("{}/", layout::RUNS)) => {
                let from = study_dir.join(d);
                let to = if from.exists() {
                    Some(
                        files::move_dir(&from, &layout::aside(study_dir, SUPERSEDED, &p.run))
                            .map_err(anyhow::Error::from)?,
                    )
                } else {
                    settle::find_moved(study_dir, &p.run, &p.run_hash, p.attempt)
                };
                to.map(|t| layout::relative(study_dir, &t))
            }
            other => other.clone(),
        };
        rec.log(Event::RunSuperseded {
            run: p.run,
            run_hash: p.run_hash,
            attempt: p.attempt,
            dir,
            amendment: p.amendment,
        })?;
    }
    Ok(())
}

/// Every selected run still to do must fit the host's cores (unless the plan allows
/// oversubscription), and so must its contender's gate, which deploys the same topology.
fn preflight(
    loaded: &crate::plan::LoadedPlan,
    runs: &[RunSpec],
    selected: &[RunSpec],
    ledger: &Ledger,
    cores: f64,
) -> Result<(), CliError> {
    let status = ledger.status(runs);
    for r in selected {
        if status.iter().any(|s| s.run == r.id && s.state.settled()) {
            continue;
        }
        let topo = crate::engine::topology::of_loaded(loaded, r)
            .map_err(|e| CliError::invalid(format!("`{}`: run `{}`: {e}", loaded.file, r.id)))?;
        crate::engine::deploy::check_caps(&topo, cores, loaded.plan.caps.allow_oversubscription)
            .map_err(|e| {
                CliError::invalid(format!(
                    "`{}`: {e}. Lower the caps, or set `caps.allow-oversubscription: true` to run anyway (runs then compete for CPU)",
                    loaded.file
                ))
            })?;
    }
    Ok(())
}

use crate::ledger::files::short;

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

    #[test]
    fn many_stars_against_a_long_id_answer_without_backtracking_through_each() {
        let id = format!("feed-rs/{}/r1", "x".repeat(192));
        assert_eq!(id.len(), 203);
        assert!(!glob(&format!("{}q", "*".repeat(30)), &id));
        assert!(glob(&format!("feed-rs/{}r1", "*".repeat(30)), &id));
    }
}
