//! `feedbench status <PLAN>`: every planned run with its state in the study's ledger
//! (not run, completed valid, invalid + reason, skipped + reason, interrupted), and counts;
//! the status and both its forms are the core's (`ledger::status`).

use std::io::Write;
use std::path::PathBuf;

use super::{CliError, Format};
use crate::ledger::journal::{self, Event};
use crate::plan::load_file;
use feedbench_core::ledger::status::{Sources, StudyStatus};

#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// The plan file.
    pub plan: PathBuf,
    /// Where study results are.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
}

impl StatusArgs {
    pub fn exec(self, out: &mut dyn Write) -> Result<(), CliError> {
        let loaded = load_file(&self.plan, super::local_cores())?;
        let (inputs, runs) = super::planned(&loaded)?;
        let study_dir =
            crate::rundir::layout::study_dir(&self.results, loaded.plan.study.name.as_str());
        let j = journal::read(&study_dir.join(journal::FILE)).map_err(|e| {
            if crate::confine::is_bad_input(&e.source) {
                CliError::invalid(e.to_string())
            } else {
                CliError::Failure(e.into())
            }
        })?;
        let status = StudyStatus::of(&Sources {
            study: loaded.plan.study.name.as_str(),
            study_dir: &study_dir,
            journal: &j,
            plan_hash: &loaded.plan_hash,
            runs: &runs,
            inputs: &inputs.files,
            pilots: crate::audit::pilots::PilotAreas::read(&study_dir)
                .areas
                .len(),
        });
        let text = match self.format {
            Format::Json => serde_json::to_string_pretty(&status)
                .map(|t| t + "\n")
                .map_err(|e| CliError::Failure(e.into()))?,
            Format::Human => status.text(),
        };
        out.write_all(text.as_bytes())
            .map_err(|e| CliError::Failure(e.into()))?;
        // A journal whose order is not proven is no state to act on: exit 1, as the audit.
        match status.journal_disorder.first() {
            None => Ok(()),
            Some(b) => Err(CliError::Failure(anyhow::anyhow!(
                "{}",
                b.at(study_dir.join(journal::FILE).display())
            ))),
        }
    }
}

/// One journal event in a line, for people.
pub fn describe(e: &Event) -> String {
    match e {
        Event::StudyStarted { plan_hash, resume, runs_planned, runs_to_do, git_commit, git_clean, .. } => format!(
            "study {} under plan {} ({} planned, {} to do; git {} {})",
            if *resume { "resumed" } else { "started" },
            feedbench_core::files::short(plan_hash),
            runs_planned,
            runs_to_do.len(),
            git_commit.as_deref().map_or("-", feedbench_core::files::short),
            match git_clean { Some(true) => "clean", Some(false) => "with uncommitted changes", None => "unknown" }
        ),
        Event::EngineShared { engine, with } => format!("deviation: engine `{engine}` is shared with {with} (--share-engine): the runs of both compete for its CPU and memory"),
        Event::UncommittedPlan { plan_file, files, .. } if files.is_empty() => format!("deviation: `{plan_file}` runs with uncommitted changes (--allow-uncommitted)"),
        Event::UncommittedPlan { plan_file, files, .. } => format!("deviation: `{plan_file}` runs with uncommitted changes to {} (--allow-uncommitted)", files.join(", ")),
        Event::InputsRead { digest, files } => format!("inputs read: {} file(s), digest {}", files.len(), feedbench_core::files::short(digest)),
        Event::RunStarted { run, attempt, .. } => format!("{run} started (attempt {attempt})"),
        Event::RunFinished { run, dir, objective, .. } => format!(
            "{run} completed valid{} → {dir}",
            objective.as_ref().map(|o| format!(", objective {o}")).unwrap_or_default()
        ),
        Event::RunAborted { run, reason, dir, .. } => format!("deviation: {run} aborted: {reason} → {dir}"),
        Event::RunInterrupted { run, attempt, found, dir, .. } => format!("deviation: {run} attempt {attempt} was interrupted ({found}) → {dir}"),
        Event::RunInvalidated { run, reason, evidence, dir, by, .. } => format!(
            "deviation: {run} invalid ({reason}, by {}){} → {dir}",
            if *by == crate::ledger::Decider::Person { "a person" } else { "feedbench" },
            if evidence.is_empty() {
                String::new()
            } else {
                format!(": {}", evidence.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("; "))
            }
        ),
        Event::RunSkipped { run, reason, .. } => format!("deviation: {run} skipped: {reason}"),
        Event::RunSupersededByDependency { run, dependency, dir, .. } => format!("deviation: {run} superseded: `{dependency}`, which it took a figure from, was set aside → {dir}"),
        Event::RunSuperseded { run, amendment, .. } => format!("{run} superseded by the amendment \"{amendment}\""),
        Event::PlanAmended { reason, changes, files_changed, .. } if files_changed.is_empty() => format!("plan amended: \"{reason}\" ({} run(s) touched)", changes.len()),
        Event::PlanAmended { reason, changes, files_changed, .. } => format!("plan amended: \"{reason}\" ({} run(s) touched; inputs changed: {})", changes.len(), files_changed.join(", ")),
        Event::GatePassed { contender, seconds, .. } => format!("gate of {contender} passed in {seconds:.0} s"),
        Event::ContenderExcluded { contender, reason, runs, .. } => format!(
            "deviation: contender {contender} excluded by its gate ({reason}); its {} run(s) will not run",
            runs.len()
        ),
        Event::TornLineFound { line, bytes } => format!("journal line {line} was torn by a crash ({bytes} bytes); terminated and kept"),
        Event::ClockSteppedBack { from_ns, to_ns } => format!("the clock stepped back from {from_ns} to {to_ns} ns since 1970; declared, later lines are timed from it"),
    }
}
