//! The audit's report: what `--format json` prints as it is, and its Markdown rendering, a
//! ready "Deviations" section for a paper.

use std::fmt::Write as _;

use serde::Serialize;

use super::history::{short, FieldChange, Rev};
use super::pilots::Exploration;
use crate::ledger::journal::RunChange;
use crate::ledger::state::{RunState, RunStatus};

/// The version of `feedbench audit --format json`'s output.
pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub format_version: u32,
    pub study: String,
    /// The plan file's path in its repository.
    pub plan_file: String,
    pub study_dir: String,
    pub registration: VersionInfo,
    /// The last commit that holds the plan file as it is at HEAD.
    pub head: VersionInfo,
    /// The plan file on disk, when its text differs from HEAD's.
    pub working_tree: Option<VersionInfo>,
    /// The version the run states are for: the newest that loads as a plan.
    pub runs_for: VersionInfo,
    /// Every change of the plan hash since registration, oldest first.
    pub history: Vec<Change>,
    /// Every planned run's final state, in plan order.
    pub runs: Vec<RunStatus>,
    /// Departures (declared or not) and gaps, item by item.
    pub deviations: Vec<Item>,
    pub summary: Summary,
    /// The study's pilots (`feedbench pilot`): exploration before registration, listed
    /// apart; they are not the study's runs and fail nothing.
    pub exploration: Exploration,
    /// Journal lines written before the journal was chained (format_version 1): their
    /// order is as they stand, unproven (`ledger::chain`).
    pub unchained_journal_lines: usize,
}

/// One version of the plan.
#[derive(Debug, Clone, Serialize)]
pub struct VersionInfo {
    #[serde(flatten)]
    pub rev: Rev,
    pub plan_hash: Option<String>,
    /// Runs it expands to (0 when it does not load).
    pub runs: usize,
    /// Why it does not load as a plan.
    pub error: Option<String>,
}

/// A change of the plan between two consecutive versions.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// The deviation item that reports it.
    pub deviation: String,
    pub from: Rev,
    pub to: Rev,
    pub old_plan_hash: Option<String>,
    pub new_plan_hash: Option<String>,
    /// The change in plan terms, field by field.
    pub fields: Vec<FieldChange>,
    pub declared: bool,
    /// The `plan-amended` event that declares it.
    pub amendment: Option<Amendment>,
    /// Runs the amendment superseded (`run-superseded` events carrying its reason).
    pub superseded: Vec<Superseded>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Amendment {
    /// The journal line.
    pub line: usize,
    pub reason: String,
    pub old_plan_hash: String,
    pub new_plan_hash: String,
    pub git_commit: Option<String>,
    pub changes: Vec<RunChange>,
    /// The inputs' digests it takes the study from and to, when recorded.
    pub old_inputs_digest: Option<String>,
    pub new_inputs_digest: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Superseded {
    pub line: usize,
    pub run: String,
    pub run_hash: String,
    pub attempt: u32,
    pub dir: Option<String>,
}

/// What a deviation item is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// The plan changed after registration.
    PlanEdit,
    /// Runs made under a plan hash no commit has, or from a plan file with uncommitted
    /// changes.
    UncommittedPlan,
    /// A run in the results that no committed version of the plan has (by id and hash).
    UnplannedRun,
    /// Files of a run directory that no longer match its manifest.
    FileMismatch,
    /// A run directory the journal names that is not there.
    VanishedDirectory,
    /// A run directory the journal never names.
    UnrecordedDirectory,
    /// A finished run's directory without its manifest.
    MissingManifest,
    /// A manifest that does not read.
    BadManifest,
    /// A journal line that does not parse.
    BadJournalLine,
    /// A journal line whose link to the line before is broken: lines edited, deleted,
    /// inserted, duplicated or moved.
    BrokenJournalChain,
    /// A journal line whose time no host could have written then, or far behind the line
    /// before it.
    ImpossibleJournalTime,
    /// A run that needed more than one attempt: earlier attempts interrupted or aborted.
    RunRepeated,
    /// A contender whose gate failed: none of its runs ran.
    ContenderExcluded,
    /// A result set aside because a run it took a figure from was invalidated or skipped
    /// by a person.
    RunSupersededByDependency,
    /// An image's ID changed between runs, from the same sources or from sources an
    /// amendment changed.
    ImageRebuilt,
    /// An image's ID changed between runs from sources nothing declares, or from sources
    /// feedbench does not know.
    ImageChanged,
    /// Runs of one comparison on engines whose hosts report different facts.
    HostsDiffer,
    /// Runs made by an invocation that shared its engine with another live study
    /// (`--share-engine`).
    EngineShared,
    /// A run's container ran under caps its plan did not give it (read back at deploy).
    CapsNotPlanned,
    /// Runs of one comparison whose containers of one role ran under different caps:
    /// declared when the plan gave them those caps.
    CapsDiffer,
    RunInvalid,
    RunSkipped,
    RunInterrupted,
    RunNotRun,
}

/// Whether an item fails the audit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Standing {
    /// A departure the ledger records with its reason.
    Declared,
    /// A departure nothing records: it fails the audit.
    Undeclared,
    /// A planned run without a valid result, reported with why; not a departure.
    Gap,
}

/// One deviation: `D<n>. <title>. Reason: … Evidence: …`.
#[derive(Debug, Clone, Serialize)]
pub struct Item {
    /// `D1`, `D2`, …
    pub id: String,
    pub kind: Kind,
    pub standing: Standing,
    /// What it is about, precisely: a run id, a file, a field path, a journal line.
    pub subject: String,
    pub title: String,
    pub reason: String,
    pub evidence: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub planned_runs: usize,
    pub completed_valid: usize,
    pub invalid: usize,
    pub skipped: usize,
    pub interrupted: usize,
    pub not_run: usize,
    /// Not run since an amendment superseded their earlier result.
    pub superseded: usize,
    pub plan_changes: usize,
    pub plan_changes_declared: usize,
    pub deviations: usize,
    pub declared: usize,
    pub undeclared: usize,
    pub gaps: usize,
    /// No undeclared departure: the audit exits 0.
    pub passed: bool,
}

impl Report {
    pub fn undeclared(&self) -> impl Iterator<Item = &Item> {
        self.deviations
            .iter()
            .filter(|i| i.standing == Standing::Undeclared)
    }

    /// The report as a Markdown "Deviations" section.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        self.write_markdown(&mut s).expect("writing to a String");
        s
    }

    fn write_markdown(&self, s: &mut String) -> std::fmt::Result {
        self.write_heading(s)?;
        self.write_items(s)
    }

    /// The section's title, the registration, the counts and how far the journal's order
    /// is proven.
    fn write_heading(&self, s: &mut String) -> std::fmt::Result {
        let sum = &self.summary;
        writeln!(s, "## Deviations\n")?;
        let reg = &self.registration;
        write!(
            s,
            "Study `{}`, plan `{}`, registered in {}{} with plan hash `{}`",
            self.study,
            self.plan_file,
            reg.rev.label(),
            commit_note(&reg.rev),
            reg.plan_hash.as_deref().map_or("-", short),
        )?;
        match (sum.plan_changes, sum.plan_changes_declared) {
            (0, _) => writeln!(s, "; the plan has not changed since.")?,
            (1, 1) => writeln!(s, "; it changed once since, declared as an amendment.")?,
            (1, _) => writeln!(s, "; it changed once since, undeclared.")?,
            (n, d) => writeln!(
                s,
                "; it changed {n} times since, {d} of the changes declared as amendments."
            )?,
        }
        let states: Vec<String> = [
            (sum.completed_valid, "completed valid"),
            (sum.invalid, "invalid"),
            (sum.skipped, "skipped"),
            (sum.interrupted, "interrupted"),
            (sum.not_run, "not run"),
            (sum.superseded, "superseded and not run again"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        writeln!(
            s,
            "Of {}, {}.",
            count(sum.planned_runs, "planned run"),
            if states.is_empty() {
                "none".to_string()
            } else {
                states.join(", ")
            }
        )?;
        writeln!(
            s,
            "The audit found {} from the plan ({} declared, {} undeclared) and {}.\n",
            count(sum.declared + sum.undeclared, "departure"),
            sum.declared,
            sum.undeclared,
            count(sum.gaps, "gap")
        )?;
        let lines = match self.unchained_journal_lines {
            0 => None,
            1 => Some("1 journal line was".to_string()),
            n => Some(format!("{n} journal lines were")),
        };
        if let Some(lines) = lines {
            writeln!(
                s,
                "{lines} written before the journal's lines were chained (format_version 1): their order is as they stand, unproven.\n"
            )?;
        }
        Ok(())
    }

    /// Each deviation, then the planned runs' states and the pilots.
    fn write_items(&self, s: &mut String) -> std::fmt::Result {
        if self.deviations.is_empty() {
            writeln!(
                s,
                "None: every planned run completed valid, as registered.\n"
            )?;
        }
        for i in &self.deviations {
            let standing = match i.standing {
                Standing::Declared => "Declared.",
                Standing::Undeclared => "**Undeclared.**",
                Standing::Gap => "A gap, not a departure.",
            };
            writeln!(s, "**{}. {}.** {standing}", i.id, i.title)?;
            writeln!(s, "Reason: {}", sentence(&i.reason))?;
            match i.evidence.as_slice() {
                [] => {}
                [one] => writeln!(s, "Evidence: {}", sentence(one))?,
                many => {
                    writeln!(s, "Evidence:\n")?;
                    for e in many {
                        writeln!(s, "- {e}")?;
                    }
                }
            }
            writeln!(s)?;
        }
        writeln!(s, "### Planned runs\n")?;
        writeln!(
            s,
            "Run states for the plan at {} (plan hash `{}`).\n",
            self.runs_for.rev.label(),
            self.runs_for.plan_hash.as_deref().map_or("-", short)
        )?;
        writeln!(s, "| run | state | detail |")?;
        writeln!(s, "|---|---|---|")?;
        for r in &self.runs {
            writeln!(
                s,
                "| `{}` | {} | {} |",
                r.run,
                r.state.label(),
                state_detail(r).replace('|', "\\|")
            )?;
        }
        let x = &self.exploration;
        if !x.pilots.is_empty() || !x.problems.is_empty() {
            writeln!(s, "\n### Exploration before registration\n")?;
            writeln!(
                s,
                "Pilots (`feedbench pilot`), each in its own area with its own journal: not the study's runs, and no departure.\n"
            )?;
            for p in &x.pilots {
                writeln!(s, "- {}", p.line())?;
            }
            for p in &x.problems {
                writeln!(s, "- Unreadable: {p}.")?;
            }
        }
        Ok(())
    }
}

/// `1 run`, `2 runs`.
pub fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// The text with a full stop at its end.
fn sentence(text: &str) -> String {
    if text.ends_with(['.', '!', '?']) {
        text.to_string()
    } else {
        format!("{text}.")
    }
}

fn commit_note(rev: &Rev) -> String {
    match rev {
        Rev::Commit(c) => format!(" ({}, \"{}\")", c.date, c.subject),
        Rev::WorkingTree => String::new(),
    }
}

/// One line on a run's state: where its result is, or why it has none.
pub fn state_detail(r: &RunStatus) -> String {
    let mut d = match &r.state {
        RunState::NotRun => String::new(),
        RunState::CompletedValid {
            attempt,
            dir,
            objective,
        } => format!(
            "`{dir}`, attempt {attempt}, objective {}",
            objective.as_deref().unwrap_or("not judged")
        ),
        RunState::Invalid {
            attempt,
            dir,
            reason,
            ..
        } => format!("{reason}; `{dir}`, attempt {attempt}"),
        RunState::Skipped { reason } => reason.clone(),
        RunState::Interrupted { attempt, dir } => format!("`{dir}`, attempt {attempt}"),
    };
    if !r.superseded.is_empty() {
        if !d.is_empty() {
            d.push_str("; ");
        }
        let hashes: Vec<&str> = r.superseded.iter().map(|h| short(h)).collect();
        let what = count(hashes.len(), "superseded result");
        write!(d, "{what} (run hash {})", hashes.join(", ")).ok();
    }
    d
}
