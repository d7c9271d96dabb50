//! What `feedbench run` shows while it works: the study runner's events, on stderr for
//! people or as JSON lines on stdout (every run event and journal line).

use std::io::Write;

use crate::ledger::journal::Event;
use crate::rundir::events::{RunEvent, Stamp};
use crate::rundir::record::{Ending, RunRecord};
use crate::study::{Reporter, StudyEvent};

/// Shows a study for people on stderr, or, with `json`, every run event and journal line
/// as a JSON line on stdout (the rest, what people read, stays on stderr).
pub struct Show {
    json: bool,
    /// The run people last read about: with several groups of engines, runs under way at
    /// once interleave, and a line naming the run comes before each change of run.
    last: Option<String>,
}

impl Show {
    pub fn new(json: bool) -> Self {
        Show { json, last: None }
    }

    /// Names `run` to people when the lines before were another run's.
    fn about(&mut self, run: &str) {
        if self.json || self.last.as_deref() == Some(run) {
            return;
        }
        let _ = writeln!(std::io::stderr().lock(), "  ── {run}");
        self.last = Some(run.to_string());
    }
}

impl Reporter for Show {
    fn report(&mut self, event: StudyEvent<'_>) {
        match event {
            StudyEvent::RunStarting { run, .. } => {
                self.last = Some(run.to_string());
                people(event)
            }
            StudyEvent::Journal(e) => journal_line(self.json, e),
            StudyEvent::Run { run, stamp, event } => {
                self.about(run);
                print_event(self.json, run, stamp, event)
            }
            StudyEvent::StudyProgress {
                elapsed_s,
                left_s,
                upper_bound,
            } if self.json => {
                let v = serde_json::json!({
                    "event": "study-progress",
                    "elapsed_s": elapsed_s,
                    "left_s": left_s,
                    "left_is_upper_bound": upper_bound,
                });
                let _ = writeln!(std::io::stdout().lock(), "{v}");
            }
            StudyEvent::StudyProgress {
                elapsed_s,
                left_s,
                upper_bound,
            } => {
                let _ = writeln!(
                    std::io::stderr().lock(),
                    "  study: {} elapsed, {} {} left{}",
                    clock(elapsed_s),
                    if upper_bound { "at most" } else { "about" },
                    clock(left_s),
                    if upper_bound {
                        " (ramps may stop at their knee)"
                    } else {
                        ""
                    }
                );
            }
            StudyEvent::RunEnded(r) => {
                self.about(&r.run_id);
                summarise(r)
            }
            other => people(other),
        }
    }
}

/// The events shown to people the same way in both formats, on stderr.
fn people(event: StudyEvent<'_>) {
    let mut err = std::io::stderr().lock();
    let _ = match event {
        StudyEvent::Warning(w) => writeln!(err, "warning: {w}"),
        StudyEvent::Reaped { containers } => {
            writeln!(
                err,
                "removed {containers} leftover container(s) of the study"
            )
        }
        StudyEvent::GateStarted { contender } => writeln!(
            err,
            "gate of {contender}: deploying it and running its checks"
        ),
        StudyEvent::Excluded {
            index,
            total,
            run,
            why,
        } => writeln!(
            err,
            "[{index}/{total}] {run}: not run, its contender was excluded by its gate: {why}"
        ),
        StudyEvent::Waiting {
            index,
            total,
            run,
            dependency,
        } => writeln!(
            err,
            "[{index}/{total}] {run}: waits for `{dependency}`, which has not completed"
        ),
        StudyEvent::RunStarting {
            index,
            total,
            run,
            attempt,
            dir,
        } => writeln!(
            err,
            "[{index}/{total}] {run} (attempt {attempt}) → {}",
            dir.display()
        ),
        StudyEvent::NothingToDo { selected } => writeln!(
            err,
            "nothing to do: the {selected} selected run(s) are settled (see `feedbench status`)"
        ),
        StudyEvent::Journal(_)
        | StudyEvent::Run { .. }
        | StudyEvent::StudyProgress { .. }
        | StudyEvent::RunEnded(_) => Ok(()),
    };
}

/// A journal line: as JSON on stdout, or described in words on stderr.
fn journal_line(json: bool, event: &Event) {
    if json {
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

fn print_event(json: bool, run: &str, stamp: Stamp, event: &RunEvent) {
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

fn clock(secs: f64) -> String {
    let t = secs.round() as u64;
    format!("{}h{:02}m{:02}s", t / 3600, t / 60 % 60, t % 60)
}

fn summarise(r: &RunRecord) {
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
        match (s.rate, s.sustained_breach) {
            (Some(rate), Some(b)) => {
                let _ = writeln!(
                    err,
                    "  saturation {rate} arrivals/s (the objective broke at {b}, confirmed by {} more step(s))",
                    s.confirm_steps
                );
            }
            (Some(rate), None) => {
                let held = if s.transients.is_empty() {
                    "the objective held at every step"
                } else {
                    "no breach was sustained"
                };
                let _ = writeln!(err, "  {held}, up to {rate} arrivals/s");
            }
            (None, _) => {
                let _ = writeln!(err, "  the objective broke at the first step");
            }
        }
        if !s.transients.is_empty() {
            let rates: Vec<String> = s.transients.iter().map(|r| format!("{r}/s")).collect();
            let _ = writeln!(
                err,
                "  transient breach(es) at {}: a later step met the objective again (saturation read at the first breach: {})",
                rates.join(", "),
                s.rate_before_first_breach
                    .map_or("below the first step".to_string(), |r| format!("{r} arrivals/s"))
            );
        }
    }
    for w in &r.warnings {
        let _ = writeln!(err, "  warning: {w}");
    }
}
