//! What happens during a run, as typed events stamped from one monotonic clock mapped to
//! wall time, so that every event, sample and request can be placed on one time line.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;

/// One monotonic clock per run, anchored to the wall clock once at its start. Events carry
/// both: the monotonic offset orders them exactly, the wall time joins them with the raw
/// data other processes (k6, the sampler) stamp with wall time.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    start: Instant,
    start_wall_ns: i128,
}

/// A moment of the run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Stamp {
    /// Seconds since the run's clock started.
    pub t_s: f64,
    /// Unix time in nanoseconds.
    pub wall_ns: i128,
}

impl Clock {
    pub fn start() -> Self {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as i128)
            .unwrap_or(0);
        Clock {
            start: Instant::now(),
            start_wall_ns: wall,
        }
    }

    pub fn now(&self) -> Stamp {
        self.at(Instant::now())
    }

    pub fn at(&self, instant: Instant) -> Stamp {
        let d = instant.saturating_duration_since(self.start);
        Stamp {
            t_s: d.as_secs_f64(),
            wall_ns: self.start_wall_ns + d.as_nanos() as i128,
        }
    }

    pub fn start_wall_ns(&self) -> i128 {
        self.start_wall_ns
    }
}

/// `FaultApplyFailed`'s kind: validity reads it back.
pub const FAULT_APPLY_FAILED: &str = "fault-apply-failed";

/// What happened.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum RunEvent {
    /// A phase of the run began: deploy, warmup, measure, teardown.
    Phase {
        phase: String,
    },
    FaultApplied {
        fault: String,
        action: String,
        target: String,
    },
    FaultCleared {
        fault: String,
        action: String,
        target: String,
    },
    /// A killed or stopped replica about to be started again as its fault clears: the
    /// origin of its `time_to_ready` (docs/analysis.md, "Faults"); its readiness probe
    /// starts with it.
    ReplicaStarting {
        replica: String,
    },
    /// An action applying a fault that could not be carried out, so that the fault was not
    /// applied (`Step::failure_unapplies`): the run's `fault-not-applied` evidence.
    FaultApplyFailed {
        fault: String,
        action: String,
        reason: String,
    },
    /// Any other fault action that could not be carried out: a clearing one, or a stop's
    /// wait for the exit that ended in a SIGKILL.
    FaultFailed {
        fault: String,
        action: String,
        reason: String,
    },
    /// A guard stopped the run; `figure` against `threshold`, in `unit`.
    GuardTripped {
        guard: String,
        figure: f64,
        threshold: f64,
        unit: String,
        detail: String,
    },
    ContainerRestarted {
        container: String,
    },
    /// A container of the system under test (a replica, the database, an object store) was
    /// killed for memory: a result, so the run goes on. `kills` counts from the monitors'
    /// start; `memory_limit_bytes` is its cap.
    OomKilled {
        container: String,
        kills: u64,
        memory_limit_bytes: u64,
    },
    HealthChanged {
        server: String,
        from: String,
        to: String,
    },
    LoadStarted {
        scheduled_arrivals: f64,
    },
    LoadFinished {
        requests: u64,
        dropped_iterations: u64,
    },
    /// A note for the record (oversubscription, a derived rate and where it came from).
    Note {
        text: String,
    },
    /// Where the run stands, every few seconds, for the live display (not written to
    /// events.csv: the raw files hold the same figures exactly).
    Progress {
        elapsed_s: f64,
        total_s: f64,
        /// Requests per second the balancer received over the last interval.
        achieved_rate: f64,
        scheduled_rate: f64,
        /// 5xx answers over the last interval.
        errors: u64,
        /// HAProxy's average response time over its last 1024 requests (HAProxy keeps no
        /// percentiles; p99 comes from requests.csv after the run).
        avg_response_ms: u64,
    },
    /// A span judged while the run ran (`analysis::live`), once every request that started
    /// in it had ended or timed out: a ramp's step (`step_rate`; its worst objective
    /// window's p99 and failed share), or an objective window of any other profile. Its
    /// span in seconds since the scenario's start; the rates offered and achieved over
    /// those same seconds.
    WindowJudged {
        step_rate: Option<f64>,
        from_s: f64,
        to_s: f64,
        requests: usize,
        offered_rate: f64,
        achieved_rate: f64,
        p99_ms: Option<f64>,
        p99_bound_ms: f64,
        failed_share: f64,
        failed_bound: f64,
        met: bool,
    },
    /// The ramp's load stopped at its knee (`stop-on-breach`), at `at_ns` on the load
    /// generator's clock.
    LoadStopped {
        reason: String,
        at_ns: i128,
    },
    /// A ramp's step broke the objective and a step within its `confirm-steps` met it
    /// again: a transient, not the knee; the ramp went on (judged live).
    RampTransient {
        step_rate: f64,
        p99_ms: Option<f64>,
        failed_share: f64,
        /// The step that met the objective after it.
        met_at_rate: f64,
    },
}

impl RunEvent {
    pub fn kind(&self) -> &'static str {
        match self {
            RunEvent::Phase { .. } => "phase",
            RunEvent::FaultApplied { .. } => "fault-applied",
            RunEvent::FaultCleared { .. } => "fault-cleared",
            RunEvent::ReplicaStarting { .. } => "replica-starting",
            RunEvent::FaultApplyFailed { .. } => FAULT_APPLY_FAILED,
            RunEvent::FaultFailed { .. } => "fault-failed",
            RunEvent::GuardTripped { .. } => "guard-tripped",
            RunEvent::ContainerRestarted { .. } => "container-restarted",
            RunEvent::OomKilled { .. } => "oom-killed",
            RunEvent::HealthChanged { .. } => "health-changed",
            RunEvent::LoadStarted { .. } => "load-started",
            RunEvent::LoadFinished { .. } => "load-finished",
            RunEvent::Note { .. } => "note",
            RunEvent::Progress { .. } => "progress",
            RunEvent::WindowJudged { .. } => "window-judged",
            RunEvent::LoadStopped { .. } => "load-stopped",
            RunEvent::RampTransient { .. } => "ramp-transient",
        }
    }
}

impl RunEvent {
    /// The event's subject (a phase, a fault, a guard, a container…) and its detail in
    /// words: the `subject` and `detail` columns of events.csv, and the live display.
    pub fn describe(&self) -> (String, String) {
        match self {
            RunEvent::Phase { phase } => (phase.clone(), String::new()),
            RunEvent::FaultApplied { fault, action, target } | RunEvent::FaultCleared { fault, action, target } => {
                (fault.clone(), format!("{action} {target}"))
            }
            RunEvent::ReplicaStarting { replica } => (replica.clone(), String::new()),
            RunEvent::FaultApplyFailed { fault, action, reason } | RunEvent::FaultFailed { fault, action, reason } => (fault.clone(), format!("{action}: {reason}")),
            RunEvent::GuardTripped { guard, figure, threshold, unit, detail } => {
                (guard.clone(), format!("{figure} {unit} against {threshold} {unit}: {detail}"))
            }
            RunEvent::ContainerRestarted { container } => (container.clone(), String::new()),
            RunEvent::OomKilled { container, kills, memory_limit_bytes } => (
                container.clone(),
                format!("killed for memory ({kills} kill(s) so far) at its cap of {} MiB", memory_limit_bytes >> 20),
            ),
            RunEvent::HealthChanged { server, from, to } => (server.clone(), format!("{from} -> {to}")),
            RunEvent::LoadStarted { scheduled_arrivals } => (String::new(), format!("scheduled {scheduled_arrivals}")),
            RunEvent::LoadFinished { requests, dropped_iterations } => {
                (String::new(), format!("requests {requests}, dropped {dropped_iterations}"))
            }
            RunEvent::Note { text } => (String::new(), text.clone()),
            RunEvent::Progress { elapsed_s, total_s, achieved_rate, scheduled_rate, errors, avg_response_ms } => (
                String::new(),
                format!(
                    "{elapsed_s:.0}/{total_s:.0} s  {achieved_rate:.1}/s of {scheduled_rate:.1}/s scheduled  {errors} 5xx  avg {avg_response_ms} ms"
                ),
            ),
            RunEvent::LoadStopped { reason, at_ns } => (format!("{at_ns}"), reason.clone()),
            RunEvent::RampTransient { step_rate, p99_ms, failed_share, met_at_rate } => (
                format!("step {step_rate}/s"),
                format!(
                    "a transient: p99 {}, failed {:.2} %; the step at {met_at_rate}/s met the objective, the ramp went on",
                    p99_ms.map_or("none".to_string(), |p| format!("{p:.1} ms")),
                    failed_share * 100.0
                ),
            ),
            RunEvent::WindowJudged {
                step_rate, from_s, to_s, requests, offered_rate, achieved_rate, p99_ms,
                p99_bound_ms, failed_share, failed_bound, met,
            } => (
                step_rate.map_or_else(|| "window".to_string(), |r| format!("step {r}/s")),
                format!(
                    "{}: {from_s:.1}-{to_s:.1} s, {achieved_rate:.1}/s of {offered_rate:.1}/s offered, {requests} requests, p99 {} (bound {p99_bound_ms} ms), failed {:.2} % (bound {:.2} %)",
                    if *met { "met" } else { "breached" },
                    p99_ms.map_or("none".to_string(), |p| format!("{p:.1} ms")),
                    failed_share * 100.0,
                    failed_bound * 100.0
                ),
            ),
        }
    }
}

/// One line of events.csv: `wall_ns,t_s,event,subject,detail`.
pub fn csv_row(stamp: Stamp, event: &RunEvent) -> String {
    let (subject, detail) = event.describe();
    format!(
        "{},{:.6},{},{},{}\n",
        stamp.wall_ns,
        stamp.t_s,
        event.kind(),
        csv_field(&subject),
        csv_field(&detail)
    )
}

pub const CSV_HEADER: &str = "wall_ns,t_s,event,subject,detail\n";

/// RFC 4180 quoting where needed.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_share_one_clock() {
        let c = Clock::start();
        let a = c.now();
        let b = c.now();
        assert!(b.t_s >= a.t_s && b.wall_ns >= a.wall_ns);
        assert_eq!(
            b.wall_ns - a.wall_ns,
            ((b.t_s - a.t_s) * 1e9).round() as i128
        );
    }

    /// The kind in events.csv is the name in the JSON event stream.
    #[test]
    fn an_apply_failure_has_one_name_in_the_csv_and_the_stream() {
        let e = RunEvent::FaultApplyFailed {
            fault: "f".into(),
            action: "SIGKILL".into(),
            reason: "no such container".into(),
        };
        let json = serde_json::to_value(&e).unwrap();
        assert_eq!(json["event"], FAULT_APPLY_FAILED);
        assert_eq!(e.kind(), FAULT_APPLY_FAILED);
    }

    #[test]
    fn rows_are_quoted_csv() {
        let row = csv_row(
            Stamp {
                t_s: 1.5,
                wall_ns: 7,
            },
            &RunEvent::GuardTripped {
                guard: "host-memory".into(),
                figure: 1.0,
                threshold: 2.0,
                unit: "GiB".into(),
                detail: "a, \"b\"".into(),
            },
        );
        assert_eq!(
            row,
            "7,1.500000,guard-tripped,host-memory,\"1 GiB against 2 GiB: a, \"\"b\"\"\"\n"
        );
    }

    #[test]
    fn a_judged_window_shows_both_rates_over_its_own_seconds_and_both_bounds() {
        let e = RunEvent::WindowJudged {
            step_rate: Some(20.0),
            from_s: 15.0,
            to_s: 25.0,
            requests: 196,
            offered_rate: 20.0,
            achieved_rate: 19.6,
            p99_ms: Some(612.25),
            p99_bound_ms: 500.0,
            failed_share: 0.0,
            failed_bound: 0.01,
            met: false,
        };
        assert_eq!(e.kind(), "window-judged");
        assert_eq!(
            e.describe(),
            (
                "step 20/s".to_string(),
                "breached: 15.0-25.0 s, 19.6/s of 20.0/s offered, 196 requests, p99 612.2 ms (bound 500 ms), failed 0.00 % (bound 1.00 %)".to_string()
            )
        );
    }
}
