//! The journal itself: every line that does not parse, declared only where a later writer
//! found it torn (a `torn-line-found` event) and the journal agrees it was a torn write;
//! then its order (`ledger::chain`): the first broken link and the first impossible time,
//! which nothing declares.

use super::{Draft, Entries};
use crate::audit::report::{Kind, Standing};
use crate::audit::study::StudyFiles;
use crate::ledger::journal::Event;

/// One item per bad or torn line, bad lines first, each in the order the journal reader
/// found them; then one for a broken chain and one for an impossible time.
pub(super) fn check(study: &StudyFiles, entries: &Entries) -> Vec<Draft> {
    let mut out = lines(study, entries);
    let order = &study.journal.order;
    let chain = "none recorded: journal lines are appended in order, each linked to the one \
                 before, so the journal was changed after it was written";
    let clock = "none recorded: the host's clock was wrong when the line was written, or lines \
                 were changed or moved since";
    for (b, kind, title, reason) in [
        (
            &order.broken,
            Kind::BrokenJournalChain,
            "breaks the journal's chain",
            chain,
        ),
        (
            &order.clock,
            Kind::ImpossibleJournalTime,
            "has an impossible time",
            clock,
        ),
    ] {
        let Some(b) = b else { continue };
        out.push(Draft {
            kind,
            standing: Standing::Undeclared,
            subject: format!("journal line {}", b.line),
            title: format!("Journal line {} {title}", b.line),
            reason: reason.into(),
            evidence: vec![b.why.clone()],
        });
    }
    out
}

fn lines(study: &StudyFiles, entries: &Entries) -> Vec<Draft> {
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
