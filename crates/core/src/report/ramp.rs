//! A step ramp: the per-step table and saturation under five definitions side by side,
//! each read at its first sustained breach and at its first breach (docs/analysis.md,
//! "Step ramps").

use super::judged::{within, Judged};
use super::latency::ratio;
use super::out::Out;
use super::rows::{BELOW_FIRST_STEP, CENSORED, NOT_REACHED};
use crate::analysis::objective::{self, Bounds};
use crate::analysis::saturation::{before, sustained_breach, transients, Request};
use crate::rundir::frame::{FrameObjective, FrameStep, Span};

/// The definitions, in the order they are reported.
pub const DEFINITIONS: [&str; 5] = [
    "objective-windows",
    "every-second",
    "p99-only",
    "errors-only",
    "throughput-knee",
];

/// What a window is judged on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Judge {
    Both,
    P99,
    Errors,
}

/// Each window of `window_ns` in `[start_ns, end_ns)` (the whole span when it is shorter than
/// one window), whether it meets the rule, on the judged requests placed in it
/// (`report::judged`); a window without a request sent does not.
fn windows_judged(
    reqs: &[Request],
    (start_ns, end_ns): (i128, i128),
    window_ns: i128,
    o: &FrameObjective,
    judge: Judge,
) -> Vec<bool> {
    let spans = objective::windows(start_ns, end_ns, window_ns);
    let bounds = Bounds {
        p99_ms: o.p99_ms,
        failed_share: o.failed_share,
    };
    spans
        .iter()
        .map(|&(a, b)| {
            let w = Judged::of(within(reqs, a, b));
            let Some(p99) = w.p(99.0) else {
                return false;
            };
            let share = w.failed_share();
            match judge {
                Judge::Both => objective::met(bounds, p99, share),
                Judge::P99 => objective::met(bounds, p99, 0.0),
                Judge::Errors => objective::met(bounds, f64::NEG_INFINITY, share),
            }
        })
        .collect()
}

/// Whether every window of `window_ns` in the step meets the rule.
fn windows_meet(
    reqs: &[Request],
    step: &FrameStep,
    window_ns: i128,
    o: &FrameObjective,
    judge: Judge,
) -> bool {
    windows_judged(reqs, (step.start_ns, step.end_ns), window_ns, o, judge)
        .iter()
        .all(|m| *m)
}

/// The measured phase of a run that is not a ramp under the windows rule, its verdict:
/// `objective_windows` (how many) and `objective_windows_breached` (how many breached).
pub fn phase_rows(out: &mut Out, reqs: &[Request], span: &Span, o: &FrameObjective) {
    let judged = windows_judged(
        reqs,
        (span.start_ns, span.end_ns),
        o.window_ns,
        o,
        Judge::Both,
    );
    out.count("objective_windows", judged.len());
    out.count(
        "objective_windows_breached",
        judged.iter().filter(|m| !**m).count(),
    );
}

/// Every step's verdict under one definition.
pub fn verdicts(
    reqs: &[Request],
    steps: &[FrameStep],
    o: &FrameObjective,
    definition: &str,
) -> Vec<bool> {
    steps
        .iter()
        .map(|s| match definition {
            "objective-windows" => windows_meet(reqs, s, o.window_ns, o, Judge::Both),
            "every-second" => windows_meet(reqs, s, 1_000_000_000, o, Judge::Both),
            "p99-only" => windows_meet(reqs, s, o.window_ns, o, Judge::P99),
            "errors-only" => windows_meet(reqs, s, o.window_ns, o, Judge::Errors),
            _ => {
                let span = s.span();
                let sent = Judged::of(within(reqs, s.start_ns, s.end_ns)).sent;
                let achieved = sent as f64 / span.len_s();
                achieved >= 0.98 * (s.offered_arrivals / span.len_s())
            }
        })
        .collect()
}

/// How a ramp's rows are read: whether its load stopped at the knee (a definition that did
/// not breach by then is censored there, not "not reached") and its `confirm-steps`.
#[derive(Debug, Clone, Copy)]
pub struct Reading {
    pub stopped: bool,
    pub confirm: usize,
}

/// The per-step table and the five definitions' rows; returns the step where the CPU is
/// looked at (the first breach under `objective-windows`, else the last step).
pub fn rows(
    out: &mut Out,
    reqs: &[Request],
    steps: &[FrameStep],
    o: &FrameObjective,
    how: Reading,
) -> Option<usize> {
    step_rows(out, reqs, steps);
    let unmet = if how.stopped { CENSORED } else { NOT_REACHED };
    let mut look_at = steps.len().checked_sub(1);
    for d in DEFINITIONS {
        let met = verdicts(reqs, steps, o, d);
        let mut x = out.under(d);
        for (s, m) in steps.iter().zip(&met) {
            let mut y = x.at_step(s.rate);
            y.count("step_met", usize::from(*m));
            x.absorb(y);
        }
        let first = met.iter().position(|m| !m);
        let sustained = sustained_breach(&met, how.confirm);
        let rate = |i: Option<usize>| i.map(|i| steps[i].rate);
        for (metric, breach, breach_metric) in [
            ("saturation", sustained, "sustained_breach"),
            ("saturation_before_first_breach", first, "first_breach"),
        ] {
            let sat = before(breach, met.len());
            if breach == Some(0) {
                // The first step already broke it: below that step, an upper bound.
                x.noted(metric, rate(breach), "1/s", BELOW_FIRST_STEP);
            } else if breach.is_some() {
                x.value(metric, rate(sat), "1/s");
            } else {
                // No step breached: saturation is at least the last step, not measured.
                x.noted(metric, rate(sat), "1/s", unmet);
            }
            x.or(breach_metric, rate(breach), "1/s", unmet);
        }
        x.count("transient_steps", transients(&met, how.confirm).len());
        if d == "objective-windows" && first.is_some() {
            look_at = first;
        }
        out.absorb(x);
    }
    look_at
}

/// Each step's requests and dropped starts, offered and achieved rates, p99 and failed
/// share, as the run's rule judges them (the step's verdicts' own terms).
fn step_rows(out: &mut Out, reqs: &[Request], steps: &[FrameStep]) {
    for s in steps {
        let span = s.span();
        let st = Judged::of(within(reqs, s.start_ns, s.end_ns));
        let mut x = out.at_step(s.rate);
        x.count("step_requests", st.sent);
        x.count("step_dropped", st.dropped);
        x.value(
            "step_offered_rate",
            ratio(s.offered_arrivals, span.len_s()),
            "1/s",
        );
        x.value(
            "step_achieved_rate",
            ratio(st.sent as f64, span.len_s()),
            "1/s",
        );
        x.value("step_p99", st.p(99.0), "ms");
        x.value("step_failed_share", Some(st.failed_share()), "ratio");
        out.absorb(x);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::judging::Rule;
    use crate::report::read::Req;
    use crate::report::rows::RunKey;

    const S: i128 = 1_000_000_000;

    /// requests.csv's rows as a run judged by start judges them.
    fn judged(reqs: &[Req]) -> Vec<Request> {
        crate::report::judged::requests(Rule::ByStart, reqs, None)
    }

    /// p99 at most 500 ms, at most 1 % failed, over 10 s windows.
    fn objective() -> FrameObjective {
        FrameObjective {
            p99_ms: 500.0,
            failed_share: 0.01,
            window_ns: 10 * S,
        }
    }

    fn key(contender: &str, profile: &str) -> RunKey {
        RunKey {
            run: format!("{contender}/{profile}/r1"),
            contender: contender.into(),
            variant: String::new(),
            profile: profile.into(),
            fault: String::new(),
            repetition: 1,
        }
    }

    #[test]
    fn a_ramp_broken_at_its_first_step_is_below_it_not_empty() {
        // Two 10 s steps at 2/s and 4/s, every request 900 ms against a 500 ms bound.
        let steps: Vec<FrameStep> = [2.0, 4.0]
            .iter()
            .enumerate()
            .map(|(i, &rate)| FrameStep {
                rate,
                start_ns: i as i128 * 10 * S,
                end_ns: (i as i128 + 1) * 10 * S,
                offered_arrivals: rate * 10.0,
            })
            .collect();
        let reqs: Vec<Req> = steps
            .iter()
            .flat_map(|s| {
                let n = (s.rate * 10.0) as i128;
                (0..n).map(move |k| Req {
                    start_ns: s.start_ns + k * 10 * S / n,
                    end_ns: s.start_ns + k * 10 * S / n + 900_000_000,
                    status: 200,
                    duration_ms: 900.0,
                    scheduled_ns: None,
                    route: 0,
                })
            })
            .collect();
        let o = objective();
        let mut out = Out::new(key("slow", "ramp"));
        rows(
            &mut out,
            &judged(&reqs),
            &steps,
            &o,
            Reading {
                stopped: false,
                confirm: 1,
            },
        );
        let sat = out
            .rows
            .iter()
            .find(|r| r.definition == "objective-windows" && r.metric == "saturation")
            .unwrap();
        assert_eq!(
            (sat.value, sat.note.as_str()),
            (Some(2.0), BELOW_FIRST_STEP)
        );
        let breach = out
            .rows
            .iter()
            .find(|r| r.definition == "objective-windows" && r.metric == "first_breach")
            .unwrap();
        assert_eq!((breach.value, breach.note.as_str()), (Some(2.0), ""));
    }

    #[test]
    fn a_phase_is_judged_over_its_full_windows() {
        // 45 s at 10/s, every request 20 ms but two of 600 ms in the second window and a
        // failure run of 3 in the fourth: windows 1 and 3 of 4 breach (the last 5 s are no
        // window), while the whole phase's p99 (rank 446 of 450) is 20 ms.
        let reqs: Vec<Req> = (0..450)
            .map(|k: i128| {
                let ms = if k == 120 || k == 121 { 600.0 } else { 20.0 };
                Req {
                    start_ns: k * S / 10,
                    end_ns: k * S / 10 + (ms * 1e6) as i128,
                    status: if (310..313).contains(&k) { 503 } else { 200 },
                    duration_ms: ms,
                    scheduled_ns: None,
                    route: 0,
                }
            })
            .collect();
        let o = objective();
        let mut out = Out::new(key("feed", "baseline"));
        let span = Span {
            start_ns: 0,
            end_ns: 45 * S,
            offered_arrivals: 450.0,
        };
        phase_rows(&mut out, &judged(&reqs), &span, &o);
        let count = |m: &str| out.rows.iter().find(|r| r.metric == m).unwrap().value;
        assert_eq!(count("objective_windows"), Some(4.0));
        assert_eq!(count("objective_windows_breached"), Some(2.0));
    }
}
