//! What `feedbench run` shows while it works: run events and journal lines, on stderr for
//! people or as JSON lines on stdout, and each run's summary.

use std::io::Write;

use crate::cli::CliError;
use crate::ledger::journal::{Event, Writer};
use crate::ledger::state::Ledger;
use crate::run::events::{RunEvent, Stamp};
use crate::rundir::record::{Ending, RunRecord};

/// Appends to the journal, folds the event into the ledger and shows it.
pub struct Recorder {
    pub writer: Writer,
    pub ledger: Ledger,
    pub json: bool,
}

impl Recorder {
    pub fn log(&mut self, event: Event) -> Result<(), CliError> {
        let entry = self
            .writer
            .append(event)
            .map_err(|e| CliError::Failure(e.into()))?;
        self.note(&entry.event);
        Ok(())
    }

    /// Folds an event another writer appended (`run::settle`) into the ledger and shows it.
    pub fn note(&mut self, event: &Event) {
        self.ledger.apply(event);
        self.show(event);
    }
}

impl Recorder {
    /// Shows an event that was appended elsewhere.
    pub fn show(&self, event: &Event) {
        if self.json {
            let _ = writeln!(
                std::io::stdout().lock(),
                "{}",
                serde_json::json!({"journal": event})
            );
        } else {
            let _ = writeln!(
                std::io::stderr().lock(),
                "  journal: {}",
                crate::cli::status::describe(event)
            );
        }
    }
}

pub fn print_event(json: bool, run: &str, stamp: Stamp, event: &RunEvent) {
    if json {
        let mut v = serde_json::to_value(event).unwrap_or_default();
        if let Some(m) = v.as_object_mut() {
            m.insert("run".into(), run.into());
            m.insert(
                "wall_ns".into(),
                serde_json::Value::String(stamp.wall_ns.to_string()),
            );
            m.insert("t_s".into(), stamp.t_s.into());
        }
        let _ = writeln!(std::io::stdout().lock(), "{v}");
    } else {
        let (subject, detail) = event.describe();
        let words: Vec<&str> = [event.kind(), subject.as_str(), detail.as_str()]
            .into_iter()
            .filter(|w| !w.is_empty())
            .collect();
        let _ = writeln!(
            std::io::stderr().lock(),
            "  {:>7.1}s  {}",
            stamp.t_s,
            words.join(" ")
        );
    }
}

pub fn clock(secs: f64) -> String {
    let t = secs.round() as u64;
    format!("{}h{:02}m{:02}s", t / 3600, t / 60 % 60, t % 60)
}

pub fn summarise(r: &RunRecord) {
    let mut err = std::io::stderr().lock();
    let outcome = match &r.execution {
        Ending::Completed => "completed".to_string(),
        Ending::Aborted {
            guard,
            figure,
            threshold,
            unit,
            ..
        } => format!("aborted by {guard}: {figure} {unit} against {threshold} {unit}"),
        Ending::Failed { reason } => format!("failed: {reason}"),
    };
    let _ = writeln!(
        err,
        "  {outcome}; cleanup {}",
        if r.cleanup_ok { "ok" } else { "FAILED" }
    );
    if let (Some(l), Some(s)) = (&r.load, r.scheduled_arrivals) {
        let _ = writeln!(
            err,
            "  {} requests of {s:.0} scheduled, {} dropped, {} with an error code (4xx included)",
            l.requests, l.dropped_iterations, l.errors
        );
    }
    if let Some(m) = &r.measured {
        let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1} ms"));
        let _ = writeln!(
            err,
            "  measured phase: {} requests, p50 {}, p99 {}, {:.2}% failed",
            m.requests,
            ms(m.p50_ms),
            ms(m.p99_ms),
            m.failed_share * 100.0
        );
    }
    if let Some(s) = &r.saturation {
        match (s.rate, s.first_breach) {
            (Some(rate), Some(b)) => {
                let _ = writeln!(
                    err,
                    "  saturation {rate} arrivals/s (the objective broke at {b})"
                );
            }
            (Some(rate), None) => {
                let _ = writeln!(
                    err,
                    "  the objective held at every step, up to {rate} arrivals/s"
                );
            }
            (None, _) => {
                let _ = writeln!(err, "  the objective broke at the first step");
            }
        }
    }
    for w in &r.warnings {
        let _ = writeln!(err, "  warning: {w}");
    }
}
