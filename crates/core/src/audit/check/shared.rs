//! Engines shared with another study: an `engine-shared` line declares that another live
//! study ran on one of the engines (found as the study began, with `--share-engine`, or
//! come since, with its own); the runs settled after it, until the next invocation,
//! competed with that study's for the engine's CPU and memory. Declared, and reported all
//! the same, with those runs.

use super::{quoted, Draft, Entries};
use crate::audit::report::{count, Kind, Standing};
use crate::ledger::journal::Event;
use crate::ledger::Decider;

pub(super) fn check(entries: &Entries) -> Vec<Draft> {
    let mut drafts = Vec::new();
    for (i, (line, e)) in entries.iter().enumerate() {
        let Event::EngineShared { engine, with } = e else {
            continue;
        };
        // The runs this invocation settled from here on: completed (valid or set aside by
        // feedbench) or aborted.
        let runs: Vec<&str> = entries[i + 1..]
            .iter()
            .take_while(|(_, e)| !matches!(e, Event::StudyStarted { .. }))
            .filter_map(|(_, e)| match e {
                Event::RunFinished { run, .. }
                | Event::RunAborted { run, .. }
                | Event::RunInvalidated {
                    run,
                    by: Decider::Feedbench,
                    ..
                } => Some(run.as_str()),
                _ => None,
            })
            .collect();
        let settled = if runs.is_empty() {
            "no run was settled after it in this invocation".into()
        } else {
            format!("settled after it in this invocation: {}", quoted(&runs))
        };
        drafts.push(Draft {
            kind: Kind::EngineShared,
            standing: Standing::Declared,
            subject: format!("journal line {line}"),
            title: format!(
                "{} ran on engine `{engine}` shared with another study",
                count(runs.len(), "run")
            ),
            reason: format!(
                "declared at journal line {line} (engine-shared): another study ran on the \
                 engine with --share-engine, so the runs of both competed for its CPU and \
                 memory"
            ),
            evidence: vec![format!("engine `{engine}` shared with {with}"), settled],
        });
    }
    drafts
}
