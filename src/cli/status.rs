//! `feedbench status <PLAN>`: every planned run with its state in the study's ledger
//! (not run, completed valid, invalid + reason, skipped + reason, interrupted), and counts.

use std::io::Write;
use std::path::PathBuf;

use super::{CliError, Format};
use crate::ledger::journal::{self, Event};
use crate::ledger::state::{counts, Ledger, RunState};
use crate::plan::load_file;

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
        let study_dir = self.results.join(loaded.plan.study.name.as_str());
        let j = journal::read(&study_dir.join(journal::FILE)).map_err(|e| {
            if crate::confine::is_bad_input(&e.source) {
                CliError::invalid(e.to_string())
            } else {
                CliError::Failure(e.into())
            }
        })?;
        let ledger = Ledger::fold(j.events());
        let status = ledger.status(&runs);
        let change = ledger.plan_change(&loaded.plan_hash, &runs);
        // Input files changed since the inputs were last recorded.
        let files_changed: Vec<String> = ledger
            .inputs
            .as_ref()
            .map(|(_, f)| feedbench_core::inputs::changed(f, &inputs.files))
            .unwrap_or_default()
            .iter()
            .map(ToString::to_string)
            .collect();
        let c = counts(&status);
        let bad: Vec<_> = j.undeclared_bad();
        let entries: Vec<_> = j.entries.iter().map(|(_, e)| e.clone()).collect();
        let hours = crate::ledger::hours::split(&entries, &mut |dir| {
            crate::ledger::hours::phases_at(&study_dir, dir)
        });
        let pilots = crate::audit::pilots::PilotAreas::read(&study_dir)
            .areas
            .len();
        if self.format == Format::Json {
            let v = serde_json::json!({
                "format_version": 1,
                "study": loaded.plan.study.name.as_str(),
                "plan_hash": loaded.plan_hash,
                "recorded_plan_hash": ledger.plan_hash,
                "plan_changed": change.as_ref().map(|c| c.changes.iter().map(|ch| ch.run.clone()).collect::<Vec<_>>()),
                "inputs_changed": files_changed,
                "excluded_contenders": ledger.excluded,
                "runs": status,
                "counts": c,
                "time": hours,
                "unreadable_journal_lines": bad,
                "pilots": pilots,
            });
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&v).unwrap_or_default()
            )
            .map_err(|e| CliError::Failure(e.into()))?;
            return Ok(());
        }
        let mut text = format!(
            "study `{}`: {} planned run(s), plan {}\n",
            loaded.plan.study.name,
            runs.len(),
            crate::ledger::files::short(&loaded.plan_hash)
        );
        if j.entries.is_empty() {
            text.push_str(&format!(
                "no journal at `{}`: nothing has run\n",
                study_dir.join(journal::FILE).display()
            ));
        }
        if pilots > 0 {
            text.push_str(&format!(
                "{pilots} pilot(s) in `{}`, apart from the study's runs; `feedbench audit` lists them\n",
                study_dir.join(crate::ledger::layout::PILOTS).display()
            ));
        }
        if let Some(ch) = &change {
            text.push_str(&format!(
                "the plan changed since the study last ran (plan {} then): {} result(s) no longer match; `feedbench run --amend \"<reason>\"` declares it\n",
                crate::ledger::files::short(&ch.old_plan_hash),
                ch.changes.len()
            ));
        }
        for f in &files_changed {
            text.push_str(&format!("input changed since it was recorded: {f}\n"));
        }
        for (who, why) in &ledger.excluded {
            text.push_str(&format!("contender `{who}` excluded by its gate: {why}\n"));
        }
        let width = runs.iter().map(|r| r.id.len()).max().unwrap_or(0);
        for s in &status {
            let detail = match &s.state {
                RunState::NotRun if s.superseded_by_dependency.is_some() => format!(
                    "`{}`, which it took a figure from, was set aside; it runs again only once that stands",
                    s.superseded_by_dependency.as_deref().unwrap_or_default()
                ),
                RunState::NotRun if !s.superseded.is_empty() => {
                    "by an amendment; `run --resume` runs it again".to_string()
                }
                RunState::NotRun => String::new(),
                RunState::CompletedValid { dir, objective, .. } => format!(
                    "{dir}{}",
                    objective
                        .as_ref()
                        .map(|o| format!(", objective {o}"))
                        .unwrap_or_default()
                ),
                RunState::Invalid {
                    dir,
                    reason,
                    evidence,
                    ..
                } => format!(
                    "{reason}: {}; {dir}",
                    evidence
                        .iter()
                        .map(|e| e.to_string())
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
                RunState::Skipped { reason } => reason.clone(),
                RunState::Interrupted { dir, .. } => format!("{dir}; `run --resume` runs it again"),
            };
            let attempts = if s.attempts > 1 {
                format!(" ({} attempts)", s.attempts)
            } else {
                String::new()
            };
            let label = s.label();
            text.push_str(&format!(
                "  {:width$}  {label:<15} {detail}{attempts}\n",
                s.run
            ));
        }
        let summary: Vec<String> = c.iter().map(|(k, v)| format!("{v} {k}")).collect();
        text.push_str(&format!("{}\n", summary.join(", ")));
        if hours.total_s > 0.0 {
            let parts: Vec<String> = hours
                .parts()
                .iter()
                .map(|(name, s)| {
                    format!(
                        "{name} {} ({:.0} %)",
                        duration(*s),
                        100.0 * s / hours.total_s
                    )
                })
                .collect();
            text.push_str(&format!(
                "time: {} in all: {}; overhead (all but warm-up and measuring) {:.1} %\n",
                duration(hours.total_s),
                parts.join(", "),
                100.0 * hours.overhead()
            ));
        }
        for b in bad {
            text.push_str(&format!(
                "`{}` line {} does not parse: {}; `feedbench audit` says whether it is declared\n",
                study_dir.join(journal::FILE).display(),
                b.line,
                b.error
            ));
        }
        out.write_all(text.as_bytes())
            .map_err(|e| CliError::Failure(e.into()))
    }
}

/// `1h02m03s`, `4m05s`, `6s`.
fn duration(secs: f64) -> String {
    let t = secs.round() as u64;
    match (t / 3600, t / 60 % 60, t % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, m, s) => format!("{h}h{m:02}m{s:02}s"),
    }
}

/// One journal event in a line, for people.
pub fn describe(e: &Event) -> String {
    match e {
        Event::StudyStarted { plan_hash, resume, runs_planned, runs_to_do, git_commit, git_clean, .. } => format!(
            "study {} under plan {} ({} planned, {} to do; git {} {})",
            if *resume { "resumed" } else { "started" },
            crate::ledger::files::short(plan_hash),
            runs_planned,
            runs_to_do.len(),
            git_commit.as_deref().map_or("-", crate::ledger::files::short),
            match git_clean { Some(true) => "clean", Some(false) => "with uncommitted changes", None => "unknown" }
        ),
        Event::UncommittedPlan { plan_file, files, .. } if files.is_empty() => format!("deviation: `{plan_file}` runs with uncommitted changes (--allow-uncommitted)"),
        Event::UncommittedPlan { plan_file, files, .. } => format!("deviation: `{plan_file}` runs with uncommitted changes to {} (--allow-uncommitted)", files.join(", ")),
        Event::InputsRead { digest, files } => format!("inputs read: {} file(s), digest {}", files.len(), crate::ledger::files::short(digest)),
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
    }
}
