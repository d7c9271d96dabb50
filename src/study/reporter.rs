//! What the runner tells whoever watches a study: typed events, shown by a `Reporter`. The
//! runner never prints; the command line's reporters do (for people on stderr, or JSON
//! lines on stdout), and tests collect the events.

use crate::ledger::journal::Event;
use crate::rundir::events::{RunEvent, Stamp};
use crate::rundir::record::RunRecord;

/// One step of a study, as it happens.
#[derive(Debug, Clone, Copy)]
pub enum StudyEvent<'a> {
    /// A line was appended to the journal (by the session or by settling a run).
    Journal(&'a Event),
    /// Something a person should know that is not a journal event.
    Warning(&'a str),
    /// Containers a killed invocation left were removed before resuming.
    Reaped { containers: usize },
    /// A contender's gate is being deployed and run.
    GateStarted { contender: &'a str },
    /// A run is not run: its contender was excluded by its gate.
    Excluded {
        index: usize,
        total: usize,
        run: &'a str,
        why: &'a str,
    },
    /// A run waits for a run it takes a figure from, which has not completed.
    Waiting {
        index: usize,
        total: usize,
        run: &'a str,
        dependency: &'a str,
    },
    /// A run starts, into `dir`.
    RunStarting {
        index: usize,
        total: usize,
        run: &'a str,
        attempt: u32,
        dir: &'a std::path::Path,
    },
    /// Something happened in the run (or the gate) under way.
    Run {
        run: &'a str,
        stamp: Stamp,
        event: &'a RunEvent,
    },
    /// How far the study is, with each progress event of a run.
    /// `upper_bound`: every run left has a known length and some may stop early (a ramp
    /// that stops at its knee), so the time left is at most `left_s`.
    StudyProgress {
        elapsed_s: f64,
        left_s: f64,
        upper_bound: bool,
    },
    /// A run ended with this record (before it is settled).
    RunEnded(&'a RunRecord),
    /// Every selected run was already settled.
    NothingToDo { selected: usize },
}

/// Shows a study's events.
pub trait Reporter {
    fn report(&mut self, event: StudyEvent<'_>);
}
