//! The audit proper, pure: from the plan's history and the study directory as read, every
//! change of the plan and whether an amendment declares it, every planned run's state, and
//! every departure of the results from the committed plan, declared or not.
//!
//! Each kind of check lives in its own module and yields drafts; `audit` runs them in a
//! fixed order and numbers the drafts in that order, so the order of the calls below is
//! the order of the report's items (D1, D2, …):
//!
//! 1. `plan_edits`: the plan's history and its declarations;
//! 2. `unplanned`: runs made under a plan hash no commit has, and runs no commit planned;
//! 3. `files`: files that no longer match their manifest, vanished or unrecorded run
//!    directories, missing or unreadable manifests;
//! 4. `journal`: journal lines that do not parse;
//! 5. `attempts`: runs that needed more than one attempt, contenders their gate excluded;
//! 6. `images`: image IDs that changed between runs, and whether their sources did;
//! 7. `hosts`: runs of one comparison on hosts whose facts differ; `shared`: runs made on
//!    an engine shared with another study;
//! 8. `caps`: containers that ran under caps their plan did not give them, and runs of one
//!    comparison whose containers ran under different caps;
//! 9. `gaps`: every planned run without a valid result.

mod attempts;
mod caps;
mod files;
mod gaps;
mod hosts;
mod images;
mod journal;
mod plan_edits;
mod shared;
mod unplanned;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use super::history::{short, History, PlanVersion};
use super::report::{Item, Kind, Report, Standing, Summary, VersionInfo, FORMAT_VERSION};
use super::study::StudyFiles;
use crate::ledger::journal::Event;
use crate::ledger::manifest::{Execution, Manifest, Validity};
use crate::ledger::state::{counts, RunStatus};
use crate::plan::expand::RunIdParts;

/// An item before it is numbered.
struct Draft {
    kind: Kind,
    standing: Standing,
    subject: String,
    title: String,
    reason: String,
    evidence: Vec<String>,
}

/// The journal's parsed events, each with its line number.
type Entries<'a> = [(usize, &'a Event)];

/// `a`, `b` quoted as code, comma-separated.
fn quoted<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    items
        .into_iter()
        .map(|i| format!("`{}`", i.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The event's name as the journal writes it, e.g. `run-finished`.
pub fn event_name(e: &Event) -> String {
    serde_json::to_value(e)
        .ok()
        .and_then(|v| v.get("event").and_then(|n| n.as_str()).map(String::from))
        .unwrap_or_default()
}

fn info(v: &PlanVersion) -> VersionInfo {
    VersionInfo {
        rev: v.rev.clone(),
        plan_hash: v.plan_hash.clone(),
        runs: v.runs.len(),
        error: v.error.clone(),
    }
}

fn hash_or_none(h: &Option<String>) -> String {
    h.as_deref()
        .map_or_else(|| "(none)".to_string(), |h| short(h).to_string())
}

/// A git-clean flag as evidence says it: `true`, `false` or `unknown`.
fn clean_or_unknown(clean: Option<bool>) -> String {
    clean.map_or("unknown".into(), |c| c.to_string())
}

/// The run, run hash and attempt of an event about one run's attempt.
fn run_of(e: &Event) -> Option<(&str, &str, Option<u32>)> {
    match e {
        Event::RunStarted {
            run,
            run_hash,
            attempt,
            ..
        }
        | Event::RunFinished {
            run,
            run_hash,
            attempt,
            ..
        }
        | Event::RunAborted {
            run,
            run_hash,
            attempt,
            ..
        }
        | Event::RunInterrupted {
            run,
            run_hash,
            attempt,
            ..
        }
        | Event::RunInvalidated {
            run,
            run_hash,
            attempt,
            ..
        }
        | Event::RunSuperseded {
            run,
            run_hash,
            attempt,
            ..
        }
        | Event::RunSupersededByDependency {
            run,
            run_hash,
            attempt,
            ..
        } => Some((run, run_hash, Some(*attempt))),
        _ => None,
    }
}

/// The comparison a run belongs to: its id without the contender and the repetition
/// (`feed-rs/ramp/r1` → `ramp`).
fn comparison(run_id: &str) -> Option<&str> {
    RunIdParts::parse(run_id).map(|p| p.comparison)
}

/// The runs the report compares (completed, valid, in `runs/`), by comparison.
fn comparisons(study: &StudyFiles) -> BTreeMap<&str, Vec<&Manifest>> {
    let mut groups: BTreeMap<&str, Vec<&Manifest>> = BTreeMap::new();
    for d in &study.run_dirs {
        let Ok(Some(m)) = &d.manifest else { continue };
        let kept = m.outcome.execution == Execution::Completed
            && m.outcome.validity == Validity::Valid
            && d.dir
                .starts_with(&format!("{}/", crate::rundir::layout::RUNS));
        if let (true, Some(c)) = (kept, comparison(&m.run_id)) {
            groups.entry(c).or_default().push(m);
        }
    }
    groups
}

/// Plan hashes declared run uncommitted (`--allow-uncommitted`), each with the journal line
/// of its `uncommitted-plan` event (the last, where one hash is declared twice).
fn declared_uncommitted<'a>(entries: &Entries<'a>) -> BTreeMap<&'a str, usize> {
    entries
        .iter()
        .filter_map(|(line, e)| match e {
            Event::UncommittedPlan { plan_hash, .. } => Some((plan_hash.as_str(), *line)),
            _ => None,
        })
        .collect()
}

/// Audits the study against the plan's history; `study_dir` names the study directory in
/// the report.
pub fn audit(history: &History, study: &StudyFiles, study_dir: &str) -> Report {
    let entries: Vec<(usize, &Event)> = study
        .journal
        .entries
        .iter()
        .map(|(n, e)| (*n, &e.event))
        .collect();
    let declared = declared_uncommitted(&entries);

    // The plan edits come first, so the n-th edit is the n-th draft: numbering below relies
    // on it to name each history change's deviation.
    let edits = plan_edits::check(history, &entries, &declared);
    let mut drafts: Vec<Draft> = Vec::new();
    let mut history_out = Vec::new();
    for e in edits {
        drafts.push(e.draft);
        history_out.push(e.change);
    }
    drafts.extend(unplanned::check(history, study, &entries, &declared));
    drafts.extend(files::check(study, &entries));
    drafts.extend(journal::check(study, &entries));
    drafts.extend(attempts::check(&entries));
    drafts.extend(images::check(history, study, &entries));
    drafts.extend(hosts::check(study));
    drafts.extend(shared::check(&entries));
    drafts.extend(caps::check(study));
    let gaps = gaps::check(history, study, &entries);
    drafts.extend(gaps.drafts);

    let items: Vec<Item> = drafts
        .into_iter()
        .enumerate()
        .map(|(n, d)| Item {
            id: format!("D{}", n + 1),
            kind: d.kind,
            standing: d.standing,
            subject: d.subject,
            title: d.title,
            reason: d.reason,
            evidence: d.evidence,
        })
        .collect();
    for (change, item) in history_out.iter_mut().zip(&items) {
        change.deviation = item.id.clone();
    }
    let summary = summary(&gaps.runs, &history_out, &items);
    Report {
        format_version: FORMAT_VERSION,
        study: history
            .study()
            .map_or_else(|| "(unknown)".into(), String::from),
        plan_file: history.plan_file.clone(),
        study_dir: study_dir.to_string(),
        registration: info(history.registration()),
        head: info(history.head()),
        working_tree: history
            .versions
            .last()
            .filter(|v| !v.rev.committed())
            .map(info),
        runs_for: info(gaps.planned),
        history: history_out,
        runs: gaps.runs,
        deviations: items,
        summary,
        exploration: super::pilots::exploration(history, &study.pilots),
        unchained_journal_lines: study.journal.order.unchained,
    }
}

/// The counts of the report: runs by state, plan changes, deviations by standing. The audit
/// passes when no deviation is undeclared.
fn summary(runs: &[RunStatus], history: &[super::report::Change], items: &[Item]) -> Summary {
    let c = counts(runs);
    let state = |s: &str| c.get(s).copied().unwrap_or(0);
    let n = |s: Standing| items.iter().filter(|i| i.standing == s).count();
    Summary {
        planned_runs: runs.len(),
        completed_valid: state("completed valid"),
        invalid: state("invalid"),
        skipped: state("skipped"),
        interrupted: state("interrupted"),
        not_run: state("not run"),
        superseded: state("superseded"),
        plan_changes: history.len(),
        plan_changes_declared: history.iter().filter(|c| c.declared).count(),
        deviations: items.len(),
        declared: n(Standing::Declared),
        undeclared: n(Standing::Undeclared),
        gaps: n(Standing::Gap),
        passed: n(Standing::Undeclared) == 0,
    }
}
