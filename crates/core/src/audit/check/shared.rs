//! Engines shared with another study: an invocation started with `--share-engine` beside a
//! live study declares it in its `study-started`; the runs it completed competed with that
//! study's for the engine's CPU and memory. Declared, and reported all the same, with the runs.

use super::{quoted, Draft, Entries};
use crate::audit::report::{count, Kind, Standing};
use crate::ledger::journal::Event;

pub(super) fn check(entries: &Entries) -> Vec<Draft> {
    let mut drafts = Vec::new();
    for (i, (line, e)) in entries.iter().enumerate() {
        let Event::StudyStarted { shared_engines, .. } = e else {
            continue;
        };
        if shared_engines.is_empty() {
            continue;
        }
        // The invocation's runs: those completed before the next invocation started.
        let runs: Vec<&str> = entries[i + 1..]
            .iter()
            .take_while(|(_, e)| !matches!(e, Event::StudyStarted { .. }))
            .filter_map(|(_, e)| match e {
                Event::RunFinished { run, .. } => Some(run.as_str()),
                _ => None,
            })
            .collect();
        let engines: Vec<&str> = shared_engines.iter().map(|s| s.engine.as_str()).collect();
        let mut evidence: Vec<String> = shared_engines
            .iter()
            .map(|s| format!("engine `{}` shared with {}", s.engine, s.with))
            .collect();
        evidence.push(if runs.is_empty() {
            "no run completed in this invocation".into()
        } else {
            format!("completed in this invocation: {}", quoted(&runs))
        });
        drafts.push(Draft {
            kind: Kind::EngineShared,
            standing: Standing::Declared,
            subject: format!("journal line {line}"),
            title: format!(
                "{} ran on {} shared with another study",
                count(runs.len(), "run"),
                quoted(&engines)
            ),
            reason: format!(
                "declared at journal line {line}: the invocation was started with \
                 --share-engine; its runs competed with the other study's for the engine's \
                 CPU and memory"
            ),
            evidence,
        });
    }
    drafts
}
