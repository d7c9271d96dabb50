//! The journal itself: every line that does not parse, declared only where a later writer
//! found it torn (a `torn-line-found` event) and the journal agrees it was a torn write.

use super::{Draft, Entries};
use crate::audit::report::{Kind, Standing};
use crate::audit::study::StudyFiles;
use crate::ledger::journal::Event;

/// One item per bad or torn line, bad lines first, each in the order the journal reader
/// found them.
pub(super) fn check(study: &StudyFiles, entries: &Entries) -> Vec<Draft> {
    let undeclared: Vec<usize> = study
        .journal
        .undeclared_bad()
        .iter()
        .map(|b| b.line)
        .collect();
    study
        .journal
        .bad
        .iter()
        .chain(study.journal.torn.iter())
        .map(|b| {
            let declared_at = entries.iter().find_map(|(n, e)| match e {
                Event::TornLineFound { line, .. } if *line == b.line => Some(*n),
                _ => None,
            });
            let (standing, reason) = match (undeclared.contains(&b.line), declared_at) {
                (false, Some(at)) => (
                    Standing::Declared,
                    format!("a write cut short by a crash, declared by torn-line-found at journal line {at}"),
                ),
                _ => (
                    Standing::Undeclared,
                    "none recorded: no torn-line-found event declares it; journal lines are \
                     written whole, so it was changed afterwards or torn without a later run \
                     noticing"
                        .into(),
                ),
            };
            Draft {
                kind: Kind::BadJournalLine,
                standing,
                subject: format!("journal line {}", b.line),
                title: format!("Journal line {} does not parse", b.line),
                reason,
                evidence: vec![format!("{}: `{}`", b.error, b.text)],
            }
        })
        .collect()
}
