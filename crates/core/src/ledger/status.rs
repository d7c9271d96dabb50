//! A study's status, as `feedbench status` shows it: every planned run's state in the
//! ledger, counts, where the time went, and what a person must know first (a changed plan
//! or input, an excluded contender, pilots, journal lines that do not parse). One typed
//! value that owns both its forms: the JSON of `--format json` (`format_version` 1,
//! described in docs/results.md) and the text for people.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::chain::Broken;
use super::hours::{self, Split};
use super::journal::{self, BadLine, Journal};
use super::state::{counts, Ledger, RunState, RunStatus};
use crate::files::short;
use crate::inputs::InputFile;
use crate::plan::RunSpec;

/// The version of the JSON form.
pub const FORMAT_VERSION: u32 = 1;

/// A study's status.
#[derive(Debug, Clone, Serialize)]
pub struct StudyStatus {
    pub format_version: u32,
    pub study: String,
    /// The plan's hash now.
    pub plan_hash: String,
    /// The plan hash the study last ran under (none before its first run).
    pub recorded_plan_hash: Option<String>,
    /// The runs whose results no longer match the plan as it is now, when it changed.
    pub plan_changed: Option<Vec<String>>,
    /// Input files changed since the inputs were last recorded, one line each.
    pub inputs_changed: Vec<String>,
    /// Contenders excluded by their gate, with the reason.
    pub excluded_contenders: BTreeMap<String, String>,
    /// Every planned run, in plan order.
    pub runs: Vec<RunStatus>,
    /// Runs by state label.
    pub counts: BTreeMap<&'static str, usize>,
    /// Where the study's wall time went.
    pub time: Split,
    pub unreadable_journal_lines: Vec<BadLine>,
    /// Where the journal's order is not proven (`ledger::chain`): its first broken link and
    /// its first impossible time.
    pub journal_disorder: Vec<Broken>,
    /// Journal lines written before the chain (format_version 1), read as they are.
    pub journal_unchained_lines: usize,
    /// Pilot areas beside the study's runs.
    pub pilots: usize,
    /// The plan hash the changed results were recorded under (text form only).
    #[serde(skip)]
    changed_from: Option<String>,
    /// The journal's path, and whether it holds any line (text form only).
    #[serde(skip)]
    journal: PathBuf,
    #[serde(skip)]
    journal_empty: bool,
    #[serde(skip)]
    study_dir: PathBuf,
}

/// What the status is made of: the study, its directory and journal as read, the plan's
/// hash, runs and input files as they are now, and its pilot areas (`audit::pilots`, which
/// the ledger may not use).
pub struct Sources<'a> {
    pub study: &'a str,
    pub study_dir: &'a Path,
    pub journal: &'a Journal,
    pub plan_hash: &'a str,
    pub runs: &'a [RunSpec],
    pub inputs: &'a [InputFile],
    pub pilots: usize,
}

impl StudyStatus {
    /// The status from its sources (reading each run's phases under the study's directory).
    pub fn of(s: &Sources<'_>) -> StudyStatus {
        let ledger = Ledger::fold(s.journal.events());
        let runs = ledger.status(s.runs);
        let change = ledger.plan_change(s.plan_hash, s.runs);
        let inputs_changed = ledger
            .inputs
            .as_ref()
            .map(|(_, f)| crate::inputs::changed(f, s.inputs))
            .unwrap_or_default()
            .iter()
            .map(ToString::to_string)
            .collect();
        let entries: Vec<_> = s.journal.entries.iter().map(|(_, e)| e.clone()).collect();
        let time = hours::split(&entries, &mut |dir| hours::phases_at(s.study_dir, dir));
        StudyStatus {
            format_version: FORMAT_VERSION,
            study: s.study.to_string(),
            plan_hash: s.plan_hash.to_string(),
            recorded_plan_hash: ledger.plan_hash.clone(),
            plan_changed: change
                .as_ref()
                .map(|c| c.changes.iter().map(|ch| ch.run.clone()).collect()),
            inputs_changed,
            excluded_contenders: ledger.excluded.clone(),
            counts: counts(&runs),
            runs,
            time,
            unreadable_journal_lines: s.journal.undeclared_bad().into_iter().cloned().collect(),
            journal_disorder: s.journal.disorder().cloned().collect(),
            journal_unchained_lines: s.journal.order.unchained,
            pilots: s.pilots,
            changed_from: change.map(|c| c.old_plan_hash),
            journal: s.study_dir.join(journal::FILE),
            journal_empty: s.journal.entries.is_empty(),
            study_dir: s.study_dir.to_path_buf(),
        }
    }

    /// The status for people: what they must know first, a line a run, the counts, the time
    /// and the journal's damage.
    pub fn text(&self) -> String {
        let mut text = format!(
            "study `{}`: {} planned run(s), plan {}\n",
            self.study,
            self.runs.len(),
            short(&self.plan_hash)
        );
        self.warnings(&mut text);
        let width = self.runs.iter().map(|r| r.run.len()).max().unwrap_or(0);
        for s in &self.runs {
            let attempts = if s.attempts > 1 {
                format!(" ({} attempts)", s.attempts)
            } else {
                String::new()
            };
            let label = s.label();
            text.push_str(&format!(
                "  {:width$}  {label:<15} {}{attempts}\n",
                s.run,
                detail(s)
            ));
        }
        let summary: Vec<String> = self
            .counts
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect();
        text.push_str(&format!("{}\n", summary.join(", ")));
        if self.time.total_s > 0.0 {
            text.push_str(&time_line(&self.time));
        }
        let at = self.journal.display();
        let unread = self.unreadable_journal_lines.iter().map(|b| {
            let declared = "`feedbench audit` says whether it is declared";
            format!("{}; {declared}", b.at(&at))
        });
        let disorder = self.journal_disorder.iter().map(|b| {
            let fails = "the journal's order is not proven, and `feedbench audit` fails on it";
            format!("{}; {fails}", b.at(&at))
        });
        for what in unread.chain(disorder) {
            text.push_str(&what);
            text.push('\n');
        }
        if self.journal_unchained_lines > 0 {
            text.push_str(&format!(
                "`{}`: {} line(s) written before the journal's lines were chained (format_version 1): their order is as they stand, unproven\n",
                self.journal.display(),
                self.journal_unchained_lines
            ));
        }
        text
    }

    /// What a person must know before the runs: no journal, pilots, a changed plan or
    /// input, excluded contenders.
    fn warnings(&self, text: &mut String) {
        if self.journal_empty {
            text.push_str(&format!(
                "no journal at `{}`: nothing has run\n",
                self.journal.display()
            ));
        }
        if self.pilots > 0 {
            text.push_str(&format!(
                "{} pilot(s) in `{}`, apart from the study's runs; `feedbench audit` lists them\n",
                self.pilots,
                self.study_dir.join(crate::rundir::layout::PILOTS).display()
            ));
        }
        if let (Some(changed), Some(from)) = (&self.plan_changed, &self.changed_from) {
            text.push_str(&format!(
                "the plan changed since the study last ran (plan {} then): {} result(s) no longer match; `feedbench run --amend \"<reason>\"` declares it\n",
                short(from),
                changed.len()
            ));
        }
        for f in &self.inputs_changed {
            text.push_str(&format!("input changed since it was recorded: {f}\n"));
        }
        for (who, why) in &self.excluded_contenders {
            text.push_str(&format!("contender `{who}` excluded by its gate: {why}\n"));
        }
    }
}

/// A run's state in words, after its label.
fn detail(s: &RunStatus) -> String {
    match &s.state {
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
    }
}

/// `time: 1h02m03s in all: …; overhead … %`.
fn time_line(time: &Split) -> String {
    let parts: Vec<String> = time
        .parts()
        .iter()
        .map(|(name, s)| {
            format!(
                "{name} {} ({:.0} %)",
                duration(*s),
                100.0 * s / time.total_s
            )
        })
        .collect();
    format!(
        "time: {} in all: {}; overhead (all but warm-up and measuring) {:.1} %\n",
        duration(time.total_s),
        parts.join(", "),
        100.0 * time.overhead()
    )
}

/// `1h02m03s`, `4m05s`, `6s`.
pub fn duration(secs: f64) -> String {
    let t = secs.round() as u64;
    match (t / 3600, t / 60 % 60, t % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, m, s) => format!("{h}h{m:02}m{s:02}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(duration(6.4), "6s");
        assert_eq!(duration(245.0), "4m05s");
        assert_eq!(duration(3723.0), "1h02m03s");
    }

    #[test]
    fn an_empty_journal_says_nothing_has_run_and_the_json_keeps_its_fields() {
        let dir = std::env::temp_dir().join("feedbench-status-test-none");
        let journal = Journal::default();
        let status = StudyStatus::of(&Sources {
            study: "s",
            study_dir: &dir,
            journal: &journal,
            plan_hash: "abcdef0123456789",
            runs: &[],
            inputs: &[],
            pilots: 0,
        });
        let text = status.text();
        assert!(
            text.starts_with("study `s`: 0 planned run(s), plan "),
            "{text}"
        );
        assert!(text.contains("nothing has run"), "{text}");
        let v = serde_json::to_value(&status).unwrap();
        assert_eq!(v["format_version"], 1);
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "counts",
                "excluded_contenders",
                "format_version",
                "inputs_changed",
                "journal_disorder",
                "journal_unchained_lines",
                "pilots",
                "plan_changed",
                "plan_hash",
                "recorded_plan_hash",
                "runs",
                "study",
                "time",
                "unreadable_journal_lines"
            ]
        );
    }
}
