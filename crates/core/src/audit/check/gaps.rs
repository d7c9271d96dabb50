//! The honest gaps: every planned run without a valid result (invalid, skipped, interrupted
//! or not run), with its reason and evidence. Gaps are reported but never fail the audit.

use std::collections::BTreeMap;

use super::{quoted, Draft, Entries};
use crate::audit::history::{short, History, PlanVersion};
use crate::audit::report::{count, state_detail, Kind, Standing};
use crate::audit::study::StudyFiles;
use crate::ledger::journal::{Decider, Event};
use crate::ledger::state::{Ledger, RunState, RunStatus};
use crate::plan::expand::RunIdParts;

/// The planned runs' final states, and the gaps among them.
pub(super) struct Gaps<'h> {
    /// The version whose runs are planned: the latest that loads.
    pub planned: &'h PlanVersion,
    pub runs: Vec<RunStatus>,
    pub drafts: Vec<Draft>,
}

/// Invalid runs one item each, in plan order; then skipped runs one item per reason; then
/// one item for the interrupted runs and one for those not run.
pub(super) fn check<'h>(history: &'h History, study: &StudyFiles, entries: &Entries) -> Gaps<'h> {
    let planned = history
        .versions
        .iter()
        .rev()
        .find(|v| v.error.is_none())
        .unwrap_or_else(|| history.current());
    let ledger = Ledger::fold(study.journal.events());
    let runs = ledger.status(&planned.runs);
    let mut drafts = Vec::new();
    let mut skipped: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut not_run = Vec::new();
    let mut interrupted = Vec::new();
    for r in &runs {
        match &r.state {
            RunState::Invalid {
                attempt,
                dir,
                reason,
                evidence,
            } => {
                let mut ev: Vec<String> = evidence.iter().map(ToString::to_string).collect();
                ev.push(format!(
                    "the run's directory is `{dir}` (attempt {attempt})"
                ));
                drafts.push(Draft {
                    kind: Kind::RunInvalid,
                    standing: Standing::Gap,
                    subject: r.run.clone(),
                    title: format!("Run `{}` is invalid", r.run),
                    reason: reason.clone(),
                    evidence: ev,
                });
            }
            RunState::Skipped { reason } => skipped.entry(reason).or_default().push(&r.run),
            RunState::NotRun => not_run.push(r),
            RunState::Interrupted { .. } => interrupted.push(r),
            RunState::CompletedValid { .. } => {}
        }
    }
    for (reason, list) in skipped {
        let evidence = list
            .iter()
            .filter_map(|run| skip_evidence(entries, run))
            .collect();
        drafts.push(Draft {
            kind: Kind::RunSkipped,
            standing: Standing::Gap,
            subject: list.join(", "),
            title: format!("{} skipped: {}", count(list.len(), "run"), quoted(&list)),
            reason: reason.to_string(),
            evidence,
        });
    }
    drafts.extend(unfinished(
        &interrupted,
        Kind::RunInterrupted,
        "interrupted",
        "started and never finished; `feedbench run --resume` records it and runs it again",
    ));
    drafts.extend(unfinished(
        &not_run,
        Kind::RunNotRun,
        "not run",
        "no attempt under the plan's current run hash finished",
    ));
    Gaps {
        planned,
        runs,
        drafts,
    }
}

/// One item for the runs of `list` (interrupted, or not run), if any, with each run's
/// attempts and state.
fn unfinished(list: &[&RunStatus], kind: Kind, what: &str, reason: &str) -> Option<Draft> {
    if list.is_empty() {
        return None;
    }
    let names: Vec<&str> = list.iter().map(|r| r.run.as_str()).collect();
    let evidence = list
        .iter()
        .map(|r| {
            let detail = state_detail(r);
            format!(
                "`{}`: {}{}",
                r.run,
                match r.attempts {
                    0 => "no attempt".to_string(),
                    n => format!("{} started", count(n as usize, "attempt")),
                },
                if detail.is_empty() {
                    String::new()
                } else {
                    format!("; {detail}")
                }
            )
        })
        .collect();
    Some(Draft {
        kind,
        standing: Standing::Gap,
        subject: names.join(", "),
        // A long list goes in the evidence only: the title stays a line.
        title: if names.len() <= 8 {
            format!("{} {what}: {}", count(list.len(), "run"), quoted(&names))
        } else {
            format!("{} {what}", count(list.len(), "run"))
        },
        reason: reason.to_string(),
        evidence,
    })
}

/// The journal line that skipped `run`: its own `run-skipped`, else its contender's
/// exclusion by the gate.
fn skip_evidence(entries: &Entries, run: &str) -> Option<String> {
    let own = entries.iter().rev().find_map(|(line, e)| match e {
        Event::RunSkipped {
            run: r,
            run_hash,
            by,
            ..
        } if r == run => Some(format!(
            "journal line {line}: run-skipped `{run}` (run hash {}), decided by {}",
            short(run_hash),
            match by {
                Decider::Feedbench => "feedbench",
                Decider::Person => "a person",
            }
        )),
        _ => None,
    });
    own.or_else(|| {
        entries.iter().rev().find_map(|(line, e)| match e {
            Event::ContenderExcluded {
                contender,
                image,
                exit_code,
                ..
            } if RunIdParts::parse(run).map(|p| p.contender) == Some(contender.as_str()) => Some(format!(
                "journal line {line}: contender-excluded `{contender}` ({image}), gate exit code {}",
                exit_code.map_or("none".into(), |c| c.to_string())
            )),
            _ => None,
        })
    })
}
