//! A fault's figures: when it was seen (the balancer, the first failed request, the first
//! window breaking the objective), when the service was back within its control (the
//! seeds' rule), and what the fault cost meanwhile (docs/analysis.md, "Faults").

use super::judged::{self, within};
use super::latency::{Second, Stats};
use super::out::Out;
use super::read::{Event, Health, ReadyAttempt, Req};
use super::rows::{NOT_APPLICABLE, NOT_OBSERVED, NOT_RECORDED, NOT_RECOVERED};
use super::window::{Ranks, Sliding};
use crate::analysis::objective::{self, Bounds};
use crate::analysis::saturation::Request;
use crate::rundir::frame::{FaultWindow, Frame};

/// The fault's instants on the wall clock (unix ns).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Instants {
    pub applied: i128,
    pub cleared: Option<i128>,
    /// The replica back in service; `None` when the fault has no replica to bring back or
    /// none came back.
    pub restart: Option<i128>,
    /// The observe window's end, cut at the measured phase's end.
    pub observe_end: i128,
    /// The balancer's first DOWN of the fault's target at or after `applied`, before the
    /// observe window's end (`detect_balancer_down`'s instant); `None` when none came.
    pub down: Option<i128>,
}

/// The control: the measured phase before the fault.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Control {
    pub throughput: f64,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
}

/// The instants, from events.csv and health.csv; `None` when the fault was never applied.
pub fn instants(frame: &Frame, events: &[Event], health: &[Health]) -> Option<Instants> {
    let fault = frame.fault_window.as_ref()?;
    let mut events: Vec<&Event> = events.iter().collect();
    events.sort_by_key(|e| e.wall_ns);
    let applied = events.iter().find(|e| e.event == "fault-applied")?.wall_ns;
    let cleared = events
        .iter()
        .find(|e| e.event == "fault-cleared" && e.wall_ns >= applied)
        .map(|e| e.wall_ns);
    let observe_end = cleared
        .map_or(frame.measured.end_ns, |c| c + fault.observe_ns)
        .min(frame.measured.end_ns);
    // The target's own UP: another replica's (a bystander marked DOWN meanwhile) is not
    // this one back in service.
    let restart = match (fault.restarts_a_replica(), cleared) {
        (true, Some(c)) => first_seen(fault, health, "UP", c, observe_end).map(|h| h.wall_ns),
        _ => None,
    };
    let down = first_seen(fault, health, "DOWN", applied, observe_end).map(|h| h.wall_ns);
    Some(Instants {
        applied,
        cleared,
        restart,
        observe_end,
        down,
    })
}

pub fn control(frame: &Frame, reqs: &[Req], applied: i128) -> Control {
    let a = frame.measured.start_ns;
    let s = Stats::of(within(reqs, a, applied));
    let len = (applied - a) as f64 / 1e9;
    Control {
        throughput: if len > 0.0 {
            s.requests as f64 / len
        } else {
            0.0
        },
        p95: s.p(95.0),
        p99: s.p(99.0),
    }
}

/// The recovery instant under the seeds' rule, signed against `origin`, or `None` (not
/// recovered by `end`). The candidates lie on the grid through `origin`, from the first at
/// or after `applied`: the search starts at the first whose window is out of control (the
/// disruption), so a service back through redispatch before its replica restarts recovers
/// before the origin (a negative time), and one never out of control recovered at the first
/// candidate.
pub fn recovery(
    frame: &Frame,
    reqs: &[Req],
    ranks: &Ranks,
    control: &Control,
    origin: i128,
    applied: i128,
    end: i128,
) -> Option<i128> {
    let r = &frame.recovery;
    if r.step_ns <= 0 || r.window_ns <= 0 {
        return None;
    }
    let hold = (r.hold_ns / r.step_ns) as usize;
    let (c95, c99) = (control.p95?, control.p99?);
    let window_s = r.window_ns as f64 / 1e9;
    let mut w = Sliding::new(reqs, ranks);
    let mut within_control = |u: i128| {
        w.set(u, u + r.window_ns);
        if w.is_empty() {
            return false;
        }
        let thr = w.len() as f64 / window_s;
        (thr - control.throughput).abs() <= r.throughput_tolerance * control.throughput
            && w.percentile(95.0)
                .is_some_and(|p| p <= (1.0 + r.latency_tolerance) * c95)
            && w.percentile(99.0)
                .is_some_and(|p| p <= (1.0 + r.latency_tolerance) * c99)
    };
    // The first candidate at or after `applied` (the origin is never before it).
    let first = origin - (origin - applied).max(0) / r.step_ns * r.step_ns;
    // Windows on the grid while they end by `end`; after the disruption, a run of hold + 1
    // consecutive windows within control starts at the recovery instant.
    let (mut run, mut disrupted) = (0usize, false);
    let mut u = first;
    while u + r.window_ns <= end {
        if !within_control(u) {
            (run, disrupted) = (0, true);
        } else {
            run += 1;
            if disrupted && run > hold {
                return Some(u - hold as i128 * r.step_ns);
            }
        }
        u += r.step_ns;
    }
    (!disrupted && run > hold).then_some(first)
}

/// Whether the judged requests placed in `[e − W, e)` (`report::judged`) break the
/// objective as a client knew them at instant `e`: `n` of them, `dropped` of which are
/// dropped starts (failed, without a latency, known where they are placed). A finished
/// request (`end_ns ≤ e`) counts by its latency and whether it failed, an open one by its
/// age `e − at_ns` and not failed. Without a request sent they do. The nearest-rank p99 of
/// the `n − dropped` latencies is above the bound exactly when at least `n − dropped −
/// rank + 1` of them are, so only the window's `suspects` are looked at: the requests that
/// can ever count as over the bound or failed (see [`suspects`]).
fn breaks_at(n: usize, dropped: usize, suspects: &[&Request], e: i128, bounds: Bounds) -> bool {
    let sent = n - dropped;
    if sent == 0 {
        return true;
    }
    let (mut over, mut failed) = (0usize, 0usize);
    for r in suspects {
        let (seen_ms, has_failed) = if r.end_ns <= e {
            (r.latency_ms, r.failed())
        } else {
            (Some((e - r.at_ns) as f64 / 1e6), false)
        };
        over += usize::from(seen_ms.is_some_and(|ms| ms > bounds.p99_ms));
        failed += usize::from(has_failed);
    }
    let p99_over = over > sent - crate::analysis::saturation::rank(99.0, sent);
    let share = failed as f64 / n as f64;
    p99_over || !objective::met(bounds, f64::NEG_INFINITY, share)
}

/// The judged requests, in `at_ns` order, that can count against the objective at some
/// instant: a failed one (a dropped start among them), one whose latency is over the
/// bound, or one open longer than it (an open request's age stays below `end_ns − at_ns`).
/// Every other request is within the bound at every instant, finished or not.
fn suspects(reqs: &[Request], p99_ms: f64) -> Vec<&Request> {
    reqs.iter()
        .filter(|r| {
            r.failed()
                || r.latency_ms.is_some_and(|ms| ms > p99_ms)
                || (r.end_ns - r.at_ns) as f64 / 1e6 > p99_ms
        })
        .collect()
}

/// The first instant on the grid after `applied` at which the trailing objective window,
/// judged on what had happened by then ([`breaks_at`]: causal, never on a latency not yet
/// finished), breaks the objective, as the time since `applied`.
fn objective_detection(frame: &Frame, reqs: &[Request], i: &Instants) -> Option<i128> {
    let o = &frame.objective;
    let step = frame.recovery.step_ns;
    if step <= 0 {
        return None;
    }
    let bounds = Bounds {
        p99_ms: o.p99_ms,
        failed_share: o.failed_share,
    };
    let suspects = suspects(reqs, o.p99_ms);
    let drops: Vec<i128> = reqs
        .iter()
        .filter(|r| r.latency_ms.is_none())
        .map(|r| r.at_ns)
        .collect();
    let mut k: i128 = 0;
    loop {
        let e = i.applied + k * step;
        if e > i.observe_end {
            return None;
        }
        let a = e - o.window_ns;
        let n = judged::within(reqs, a, e).len();
        let dropped = drops.partition_point(|&d| d < e) - drops.partition_point(|&d| d < a);
        let from = suspects.partition_point(|r| r.at_ns < a);
        let to = suspects.partition_point(|r| r.at_ns < e);
        if breaks_at(n, dropped, &suspects[from..to], e, bounds) {
            return Some(e - i.applied);
        }
        k += 1;
    }
}

/// The earliest health.csv row in `[from, to)` with `state` among the rows the fault reads:
/// its target's for a fault on one replica (a bystander's answers for nothing), every
/// replica's otherwise.
fn first_seen<'h>(
    fault: &FaultWindow,
    health: &'h [Health],
    state: &str,
    from: i128,
    to: i128,
) -> Option<&'h Health> {
    health
        .iter()
        .filter(|h| h.state == state && fault.reads_server(h))
        .filter(|h| h.wall_ns >= from && h.wall_ns < to)
        .min_by_key(|h| h.wall_ns)
}

/// The server (after its `backend/`, where a row names one) whose DOWN row `detect_balancer_down` reads: the
/// target's for a fault on one replica, the first replica marked DOWN for a link or CPU
/// fault. For report.md, which names it; a metrics.csv row has no place for it.
pub fn seen_down(frame: &Frame, events: &[Event], health: &[Health]) -> Option<String> {
    let fault = frame.fault_window.as_ref()?;
    let i = instants(frame, events, health)?;
    first_seen(fault, health, "DOWN", i.applied, i.observe_end).map(|h| h.server_name().to_string())
}

fn secs(ns: i128) -> f64 {
    ns as f64 / 1e9
}

/// `time_to_ready` (docs/analysis.md, "Faults"): from the readiness probe's first attempt,
/// which starts as the replica is started again, to the end of the first attempt answered
/// 200, both on the fault proxy's clock.
pub fn ready_row(out: &mut Out, frame: &Frame, readiness: Option<&[ReadyAttempt]>) {
    let Some(fault) = frame.fault_window.as_ref() else {
        return;
    };
    if !fault.restarts_a_replica() {
        return out.empty("time_to_ready", "s", NOT_APPLICABLE);
    }
    let Some(attempts) = readiness else {
        return out.empty("time_to_ready", "s", NOT_RECORDED);
    };
    let origin = attempts.iter().map(|a| a.start_ns).min();
    let ready = origin.and_then(|o| {
        attempts
            .iter()
            .filter(|a| a.status == 200)
            .map(|a| a.end_ns)
            .min()
            .map(|e| secs(e - o))
    });
    out.or("time_to_ready", ready, "s", NOT_OBSERVED);
}

/// Every fault row of a run with a fault.
/// `reqs` are requests.csv's rows, `judged` the same requests (and the dropped starts) as
/// the run's rule judges them (`report::judged`), which the objective-window detection reads.
pub fn rows(
    out: &mut Out,
    frame: &Frame,
    (reqs, judged): (&[Req], &[Request]),
    events: &[Event],
    health: &[Health],
    seconds: &[Second],
) {
    let Some(fault) = frame.fault_window.as_ref() else {
        return;
    };
    let Some(i) = instants(frame, events, health) else {
        for (m, unit) in [
            ("detect_balancer_down", "s"),
            ("detect_failed_request", "s"),
            ("detect_objective_window", "s"),
        ] {
            out.empty(m, unit, NOT_OBSERVED);
        }
        for d in ["clear", "restart"] {
            let mut x = out.under(d);
            x.empty("time_to_recover", "s", NOT_OBSERVED);
            out.absorb(x);
        }
        return;
    };
    let ranks = Ranks::of(reqs);
    // (The server is not written in the row's note: a note on a value makes it a bound.)
    out.or(
        "detect_balancer_down",
        i.down.map(|d| secs(d - i.applied)),
        "s",
        NOT_OBSERVED,
    );
    let failed = reqs
        .iter()
        .filter(|r| r.failed() && r.end_ns >= i.applied && r.end_ns < i.observe_end)
        .map(|r| r.end_ns)
        .min()
        .map(|e| secs(e - i.applied));
    out.or("detect_failed_request", failed, "s", NOT_OBSERVED);
    out.or(
        "detect_objective_window",
        objective_detection(frame, judged, &i).map(secs),
        "s",
        NOT_OBSERVED,
    );

    let c = control(frame, reqs, i.applied);
    // Without a request before the fault there is nothing to recover to.
    let no_control = c.p95.is_none();
    for (d, origin, missing) in [
        ("clear", i.cleared, NOT_OBSERVED),
        (
            "restart",
            i.restart,
            if fault.restarts_a_replica() {
                NOT_OBSERVED
            } else {
                NOT_APPLICABLE
            },
        ),
    ] {
        let mut x = out.under(d);
        match origin {
            _ if no_control => x.empty("time_to_recover", "s", super::rows::NONE),
            None => x.empty("time_to_recover", "s", missing),
            Some(o) => x.or(
                "time_to_recover",
                recovery(frame, reqs, &ranks, &c, o, i.applied, i.observe_end).map(|t| secs(t - o)),
                "s",
                NOT_RECOVERED,
            ),
        }
        out.absorb(x);
    }

    let cleared = i.cleared.unwrap_or(i.observe_end);
    let failed_in = |a: i128, b: i128| within(reqs, a, b).iter().filter(|r| r.failed()).count();
    out.count("fault_failed", failed_in(i.applied, cleared));
    out.count("observe_failed", failed_in(cleared, i.observe_end));
    let worst = |a: i128, b: i128| {
        seconds
            .iter()
            .filter(|s| s.start_ns >= a && s.start_ns < b)
            .filter_map(|s| s.p99)
            .fold(None, |m: Option<f64>, p| Some(m.map_or(p, |m| m.max(p))))
    };
    out.value("fault_worst_p99", worst(i.applied, cleared), "ms");
    out.value("observe_worst_p99", worst(cleared, i.observe_end), "ms");
    for (m, share) in [("seconds_below_50pct", 0.5), ("seconds_below_90pct", 0.9)] {
        if no_control {
            out.empty(m, "count", super::rows::NONE);
            continue;
        }
        let n = seconds
            .iter()
            .filter(|s| s.start_ns >= i.applied && s.start_ns < i.observe_end)
            .filter(|s| (s.throughput as f64) < share * c.throughput)
            .count();
        out.count(m, n);
    }
    out.value(
        "control_throughput",
        (!no_control).then_some(c.throughput),
        "1/s",
    );
    out.value("control_p95", c.p95, "ms");
    out.value("control_p99", c.p99, "ms");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_to_ready_runs_from_the_probes_first_attempt_to_its_first_200() {
        let at = |start_s: f64, took_ms: f64, status: u16| ReadyAttempt {
            start_ns: (start_s * 1e9) as i128,
            end_ns: ((start_s + took_ms / 1e3) * 1e9) as i128,
            server: "replica-1".into(),
            status,
            error: String::new(),
        };
        // Refused, 503, then 200 (the probe's last; a later one would not count first).
        let attempts = [
            at(15.0, 1.0, 0),
            at(15.1, 2.0, 503),
            at(15.2, 50.0, 200),
            at(15.3, 1.0, 200),
        ];
        let mut frame = frame();
        frame.fault_window = Some(FaultWindow {
            name: "kill".into(),
            injection: "kill-replica".into(),
            observe_ns: 60 * S,
            server: Some("replica-1".into()),
        });
        let row = |frame: &Frame, attempts: Option<&[ReadyAttempt]>| {
            let mut out = Out::new(crate::report::rows::RunKey {
                run: "r".into(),
                contender: "c".into(),
                variant: String::new(),
                profile: "p".into(),
                fault: "kill".into(),
                repetition: 1,
            });
            ready_row(&mut out, frame, attempts);
            let r = &out.rows[0];
            (r.value.map(|v| (v * 1e6).round() / 1e6), r.note.clone())
        };
        assert_eq!(row(&frame, Some(&attempts)), (Some(0.25), String::new()));
        assert_eq!(
            row(&frame, Some(&attempts[..2])),
            (None, NOT_OBSERVED.into())
        );
        assert_eq!(
            row(&frame, Some(&[])),
            (None, NOT_OBSERVED.into()),
            "never started"
        );
        assert_eq!(row(&frame, None), (None, NOT_RECORDED.into()));
        if let Some(f) = frame.fault_window.as_mut() {
            f.injection = "link-down".into();
        }
        assert_eq!(row(&frame, Some(&attempts)), (None, NOT_APPLICABLE.into()));
    }

    const S: i128 = 1_000_000_000;
    /// The fault's application.
    const APPLIED: i128 = 100 * S;

    /// 100 requests a second of 1 ms from 0 to 200 s; those started in `slow` take 100 ms.
    fn reqs(slow: (i128, i128)) -> Vec<Req> {
        (0..20_000)
            .map(|i| {
                let start_ns = i as i128 * 10_000_000;
                let ms = if (slow.0..slow.1).contains(&start_ns) {
                    100.0
                } else {
                    1.0
                };
                Req {
                    start_ns,
                    end_ns: start_ns + (ms * 1e6) as i128,
                    status: 200,
                    duration_ms: ms,
                    scheduled_ns: None,
                    route: 0,
                }
            })
            .collect()
    }

    /// A frame with the seeds' recovery rule (window 10 s, step 100 ms, hold 10 s).
    fn frame() -> Frame {
        serde_json::from_value(serde_json::json!({
            "contender": "feed-rs", "variant": null, "profile": "baseline",
            "fault": "replica-kill", "repetition": 1,
            "measured": {"start_ns": 0, "end_ns": 200 * S, "offered_arrivals": 20000.0},
            "objective": {"p99_ms": 50.0, "failed_share": 0.01, "window_ns": 10 * S},
            "fault_window": null, "caps": {},
            "recovery": {"window_ns": 10 * S, "step_ns": S / 10, "hold_ns": 10 * S,
                         "throughput_tolerance": 0.05, "latency_tolerance": 0.1},
        }))
        .unwrap()
    }

    fn recovered(slow: (i128, i128), origin: i128) -> Option<i128> {
        let reqs = reqs(slow);
        let ranks = Ranks::of(&reqs);
        let control = Control {
            throughput: 100.0,
            p95: Some(1.0),
            p99: Some(1.0),
        };
        recovery(&frame(), &reqs, &ranks, &control, origin, APPLIED, 200 * S)
    }

    #[test]
    fn a_service_back_before_its_origin_recovered_before_it() {
        // Slow from 1 s to 3 s after the fault; its replica back at 20 s. A window of 1,000
        // requests is within control once at most 10 are slow (its p99 is rank 990): the
        // first from 2.9 s.
        let slow = (APPLIED + S, APPLIED + 3 * S);
        let at = APPLIED + 29 * S / 10;
        assert_eq!(recovered(slow, APPLIED + 20 * S), Some(at));
        // From the clearing at 5 s, the same instant (its grid is the same here).
        assert_eq!(recovered(slow, APPLIED + 5 * S), Some(at));
        // An origin off the 100 ms grid through the application keeps its own grid: at
        // 2.85 s a window holds 15 slow requests, at 2.95 s five.
        assert_eq!(
            recovered(slow, APPLIED + 20 * S + 50_000_000),
            Some(at + 50_000_000)
        );
    }

    #[test]
    fn a_service_never_out_of_control_recovered_at_the_first_candidate() {
        assert_eq!(recovered((0, 0), APPLIED + 5 * S), Some(APPLIED));
        // Slow only before the fault: nothing after it is out of control.
        assert_eq!(recovered((0, APPLIED), APPLIED + 5 * S), Some(APPLIED));
    }

    #[test]
    fn a_service_still_out_of_control_at_the_end_has_not_recovered() {
        assert_eq!(recovered((APPLIED + S, 200 * S), APPLIED + 5 * S), None);
        // Back with too little left for the hold's windows.
        assert_eq!(recovered((APPLIED + S, 185 * S), APPLIED + 5 * S), None);
    }

    /// When the trailing window breaks the objective (p99 500 ms) if the requests started
    /// from the fault on take `ms` each with `status`.
    fn detected(ms: f64, status: u16) -> Option<i128> {
        let mut reqs = reqs((0, 0));
        for r in reqs.iter_mut().filter(|r| r.start_ns >= APPLIED) {
            r.duration_ms = ms;
            r.end_ns = r.start_ns + (ms * 1e6) as i128;
            r.status = status;
        }
        let mut frame = frame();
        frame.objective.p99_ms = 500.0;
        let i = Instants {
            applied: APPLIED,
            cleared: Some(APPLIED + 5 * S),
            restart: None,
            observe_end: 200 * S,
            down: None,
        };
        let judged = judged::requests(crate::analysis::judging::Rule::ByStart, &reqs, None);
        objective_detection(&frame, &judged, &i)
    }

    #[test]
    fn detection_judges_only_what_had_happened_by_then() {
        // 1,000 requests a window: eleven over 500 ms put its p99 over. A request of 1 s
        // started at s is known to be over 500 ms from s + 500 ms: at 0.6 s ten are (started
        // 0–90 ms), at 0.7 s twenty. Bucketed by start with their whole durations, the
        // window would breach at 0.2 s, on latencies no client had seen.
        assert_eq!(detected(1000.0, 200), Some(7 * S / 10));
        // Failures count once they ended: each takes 300 ms, so by 0.4 s eleven have (the
        // one started at 100 ms ends at exactly 0.4 s), by 0.3 s one.
        assert_eq!(detected(300.0, 503), Some(4 * S / 10));
        // Nothing breaks the objective.
        assert_eq!(detected(1.0, 200), None);
    }
}
