//! `feedbench invalidate <RUN>` and `feedbench skip <RUN>`: a person's decision about a run,
//! with a reason, recorded in the study's journal like feedbench's own.

use std::path::PathBuf;

use super::CliError;
use crate::ledger::journal::{self, Event, Writer};
use crate::ledger::layout;
use crate::ledger::state::{Ledger, RunState};
use crate::ledger::{files, Decider};
use crate::plan::{expand, load_file};

#[derive(Debug, clap::Args)]
pub struct DecideArgs {
    /// The run's id, e.g. `feed-rs/baseline+db-latency/r1` (`feedbench status` lists them).
    pub run: String,
    /// Why, in words; it goes into the journal and the audit.
    #[arg(long)]
    pub reason: String,
    /// The study's plan file.
    #[arg(long)]
    pub plan: PathBuf,
    /// Where study results are.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Invalidate,
    Skip,
}

impl DecideArgs {
    pub fn exec(self, decision: Decision) -> Result<(), CliError> {
        if self.reason.trim().is_empty() {
            return Err(CliError::invalid("--reason must say why, in words".into()));
        }
        let loaded = load_file(&self.plan, super::local_cores())?;
        let runs = expand(&loaded.plan);
        let Some(spec) = runs.iter().find(|r| r.id == self.run) else {
            return Err(CliError::invalid(format!(
                "`{}` has no run `{}`; `feedbench status {}` lists the runs",
                loaded.file,
                self.run,
                self.plan.display()
            )));
        };
        let study = loaded.plan.study.name.to_string();
        let study_dir = self.results.join(&study);
        if !study_dir.join(journal::FILE).exists() {
            return Err(CliError::invalid(format!(
                "`{}` holds no journal of study `{study}`: nothing has run there (is --results right?)",
                study_dir.display()
            )));
        }
        let _lock = crate::run::lock::lock_study(&study_dir, &study)
            .map_err(|e| CliError::Failure(e.into()))?;
        let path = study_dir.join(journal::FILE);
        let j = journal::read(&path).map_err(|e| CliError::Failure(e.into()))?;
        if j.entries.is_empty() {
            return Err(CliError::invalid(format!(
                "`{}` holds no journal of study `{study}`: nothing has run there (is --results right?)",
                study_dir.display()
            )));
        }
        // Opened before anything moves: a journal that cannot take the decision stops it.
        let mut w = Writer::open(&path).map_err(|e| CliError::Failure(e.into()))?;
        let ledger = Ledger::fold(j.events());
        if ledger.plan_change(&loaded.plan_hash, &runs).is_some() {
            return Err(CliError::invalid(format!(
                "`{}` changed since study `{study}` last ran; declare the change first (`feedbench run --amend \"<reason>\"`)",
                loaded.file
            )));
        }
        let state = ledger
            .status(&runs)
            .into_iter()
            .find(|s| s.run == spec.id)
            .map(|s| s.state)
            .unwrap_or(RunState::NotRun);
        let event = match (decision, state) {
            (Decision::Invalidate, RunState::CompletedValid { attempt, dir, .. }) => {
                let from = study_dir.join(&dir);
                let to = files::move_dir(
                    &from,
                    &layout::aside(&study_dir, &layout::invalid_area("by-person"), &spec.id),
                )
                .map_err(|e| CliError::Failure(e.into()))?;
                Event::RunInvalidated {
                    run: spec.id.clone(),
                    run_hash: spec.run_hash.clone(),
                    attempt,
                    dir: layout::relative(&study_dir, &to),
                    reason: self.reason.clone(),
                    by: Decider::Person,
                    evidence: Vec::new(),
                }
            }
            (Decision::Skip, RunState::NotRun) => Event::RunSkipped {
                run: spec.id.clone(),
                run_hash: spec.run_hash.clone(),
                reason: self.reason.clone(),
                by: Decider::Person,
            },
            (Decision::Invalidate, s) => {
                return Err(CliError::invalid(format!(
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
                return Err(CliError::invalid(format!(
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
        w.append(event.clone())
            .map_err(|e| CliError::Failure(e.into()))?;
        eprintln!("recorded: {}", super::status::describe(&event));
        Ok(())
    }
}
