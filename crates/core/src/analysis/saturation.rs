//! Saturation under the objective: from a step ramp's requests, bucketed by START time, the
//! verdict of every step, and the highest step rate that met the objective.
//!
//! A step is judged over each full objective window inside it (after the warm-up): it meets
//! the objective when every window holds requests and, in every window, the p99 latency
//! (nearest rank) is at most the bound and the share of failed requests (no response, or
//! status 500 and above) at most the error-rate bound: `objective::met`, the rule a run's
//! verdict uses too. Saturation is the rate of the last step that met the objective before
//! the first that did not.

use serde::{Deserialize, Serialize};

use super::objective::{self, Bounds, JudgedWindows};

/// One request, as analysis needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Request {
    pub start_ns: i128,
    pub duration_ms: f64,
    /// 0 when no response arrived.
    pub status: u16,
}

impl Request {
    pub fn failed(&self) -> bool {
        self.status == 0 || self.status >= 500
    }
}

/// A step of the ramp: its rate and its time span (unix ns, end exclusive).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Step {
    pub rate: f64,
    pub start_ns: i128,
    pub end_ns: i128,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Objective {
    pub p99_ms: f64,
    pub error_rate: f64,
    pub window_ns: i128,
}

impl Objective {
    fn bounds(&self) -> Bounds {
        Bounds {
            p99_ms: self.p99_ms,
            failed_share: self.error_rate,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepVerdict {
    pub rate: f64,
    pub requests: usize,
    /// The worst window's p99, in ms (`None` without requests).
    pub p99_ms: Option<f64>,
    /// The worst window's error share, 0 to 1.
    pub error_rate: f64,
    pub met: bool,
    /// How many full windows the step held; a step shorter than a window is judged whole.
    pub windows: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Saturation {
    /// The last step rate that met the objective; `None` when the first step already broke it.
    pub rate: Option<f64>,
    /// The first step rate that broke it; `None` when no step did (saturation is then at
    /// least the last step's rate, not measured).
    pub first_breach: Option<f64>,
    pub steps: Vec<StepVerdict>,
}

/// The 1-based nearest rank of the `p`-th percentile among `n` values:
/// `max(1, ceil(p × n / 100))`, computed exactly with `p` in thousandths (in floating point,
/// 99.9 / 100 × 1000 is 999.0000000000001 and would round up to 1000).
pub fn rank(p: f64, n: usize) -> usize {
    let milli = (p * 1000.0).round().max(0.0) as u128;
    let r = (milli * n as u128).div_ceil(100_000) as usize;
    r.clamp(1, n.max(1))
}

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    Some(sorted[rank(p, sorted.len()) - 1])
}

fn judge(requests: &[&Request], objective: &Objective) -> (Option<f64>, f64, bool) {
    let mut durations: Vec<f64> = requests.iter().map(|r| r.duration_ms).collect();
    durations.sort_by(f64::total_cmp);
    let p99 = percentile(&durations, 99.0);
    let errors = requests.iter().filter(|r| r.failed()).count();
    let share = if requests.is_empty() {
        0.0
    } else {
        errors as f64 / requests.len() as f64
    };
    let met = p99.is_some_and(|p| objective::met(objective.bounds(), p, share));
    (p99, share, met)
}

pub fn saturation(requests: &[Request], steps: &[Step], objective: &Objective) -> Saturation {
    let verdicts = steps
        .iter()
        .map(|step| {
            let in_step: Vec<&Request> = requests
                .iter()
                .filter(|r| r.start_ns >= step.start_ns && r.start_ns < step.end_ns)
                .collect();
            step_verdict(&in_step, step, objective)
        })
        .collect();
    of_steps(verdicts)
}

/// Each objective window of `[start_ns, end_ns)` (its full windows, the whole span when it is
/// shorter than one) judged on the requests that started in it: `(p99, failed share, met)`.
fn judge_windows(
    in_span: &[&Request],
    start_ns: i128,
    end_ns: i128,
    objective: &Objective,
) -> Vec<(Option<f64>, f64, bool)> {
    objective::windows(start_ns, end_ns, objective.window_ns)
        .into_iter()
        .map(|(s, e)| {
            let window: Vec<&Request> = in_span
                .iter()
                .copied()
                .filter(|r| r.start_ns >= s && r.start_ns < e)
                .collect();
            judge(&window, objective)
        })
        .collect()
}

/// One step's verdict from the requests that started in it (in any order): the rule every
/// step is judged by, offline and while the ramp runs (`analysis::live`).
pub fn step_verdict(in_step: &[&Request], step: &Step, objective: &Objective) -> StepVerdict {
    let judged = judge_windows(in_step, step.start_ns, step.end_ns, objective);
    let mut worst = (None::<f64>, 0.0f64, true);
    for &(p99, share, met) in &judged {
        worst.0 = match (worst.0, p99) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        worst.1 = worst.1.max(share);
        worst.2 &= met;
    }
    StepVerdict {
        rate: step.rate,
        requests: in_step.len(),
        p99_ms: worst.0,
        error_rate: worst.1,
        met: worst.2 && !in_step.is_empty(),
        windows: judged.len(),
    }
}

/// A run's measured phase `[start_ns, end_ns)` under the windows rule, for its verdict
/// (`objective::verdict`): the same windows and the same judging as a ramp's step.
pub fn phase_windows(
    requests: &[Request],
    start_ns: i128,
    end_ns: i128,
    objective: &Objective,
) -> JudgedWindows {
    let in_span: Vec<&Request> = requests
        .iter()
        .filter(|r| r.start_ns >= start_ns && r.start_ns < end_ns)
        .collect();
    let judged = judge_windows(&in_span, start_ns, end_ns, objective);
    JudgedWindows {
        windows: judged.len(),
        breached: judged.iter().filter(|j| !j.2).count(),
    }
}

/// The saturation of a ramp from its steps' verdicts, in step order.
pub fn of_steps(steps: Vec<StepVerdict>) -> Saturation {
    let mut rate = None;
    let mut first_breach = None;
    for v in &steps {
        if first_breach.is_none() {
            if v.met {
                rate = Some(v.rate);
            } else {
                first_breach = Some(v.rate);
            }
        }
    }
    Saturation {
        rate,
        first_breach,
        steps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_are_exact() {
        assert_eq!(rank(99.9, 1000), 999);
        assert_eq!(rank(99.0, 100), 99);
        assert_eq!(rank(50.0, 3), 2);
        assert_eq!(rank(2.5, 10_000), 250);
        assert_eq!(rank(97.5, 10_000), 9750);
        assert_eq!(rank(0.0, 5), 1);
    }

    const S: i128 = 1_000_000_000;

    fn objective() -> Objective {
        Objective {
            p99_ms: 500.0,
            error_rate: 0.01,
            window_ns: 10 * S,
        }
    }

    /// `rate` requests per second over `[from, to)` seconds, each taking `ms`, with
    /// every `fail_every`-th one failing.
    fn load(from: i128, to: i128, rate: i128, ms: f64, fail_every: usize) -> Vec<Request> {
        let n = ((to - from) * rate) as usize;
        (0..n)
            .map(|i| Request {
                start_ns: from * S + i as i128 * S / rate,
                duration_ms: ms,
                status: if fail_every > 0 && i % fail_every == 0 {
                    503
                } else {
                    200
                },
            })
            .collect()
    }

    fn steps(rates: &[f64], secs: i128) -> Vec<Step> {
        rates
            .iter()
            .enumerate()
            .map(|(i, r)| Step {
                rate: *r,
                start_ns: i as i128 * secs * S,
                end_ns: (i as i128 + 1) * secs * S,
            })
            .collect()
    }

    #[test]
    fn saturation_is_the_last_step_before_the_first_breach() {
        let mut reqs = load(0, 10, 10, 50.0, 0);
        reqs.extend(load(10, 20, 20, 80.0, 0));
        reqs.extend(load(20, 30, 30, 900.0, 0));
        reqs.extend(load(30, 40, 40, 60.0, 0)); // a later good step does not undo the breach
        let s = saturation(&reqs, &steps(&[10.0, 20.0, 30.0, 40.0], 10), &objective());
        assert_eq!((s.rate, s.first_breach), (Some(20.0), Some(30.0)));
        assert!(s.steps[3].met);
    }

    #[test]
    fn a_phase_breaches_in_two_windows_its_whole_p99_hides() {
        // 50 s at 10/s: two requests of 600 ms in the second and the fourth window. Each of
        // those windows' p99 (rank 99 of 100) is 600 ms; the whole phase's (rank 495 of 500)
        // is 50 ms.
        let mut reqs = load(0, 50, 10, 50.0, 0);
        for i in [100, 101, 300, 301] {
            reqs[i].duration_ms = 600.0;
        }
        let mut d: Vec<f64> = reqs.iter().map(|r| r.duration_ms).collect();
        d.sort_by(f64::total_cmp);
        assert_eq!(percentile(&d, 99.0), Some(50.0));
        let judged = phase_windows(&reqs, 0, 50 * S, &objective());
        assert_eq!(
            judged,
            JudgedWindows {
                windows: 5,
                breached: 2
            }
        );
        assert_eq!(
            objective::verdict(500, Some(judged), false),
            Some("breached")
        );
        // A phase shorter than one window is judged whole; a trailing part window is not.
        let short = phase_windows(&reqs, 0, 5 * S, &objective());
        assert_eq!(
            short,
            JudgedWindows {
                windows: 1,
                breached: 0
            }
        );
        let ragged = phase_windows(&reqs, 0, 25 * S, &objective());
        assert_eq!(
            ragged,
            JudgedWindows {
                windows: 2,
                breached: 1
            }
        );
        // A window without requests breaches.
        let empty = phase_windows(&reqs, 40 * S, 60 * S, &objective());
        assert_eq!(
            empty,
            JudgedWindows {
                windows: 2,
                breached: 1
            }
        );
    }

    #[test]
    fn errors_break_the_objective_too() {
        let mut reqs = load(0, 10, 10, 50.0, 0);
        reqs.extend(load(10, 20, 20, 50.0, 50)); // 2% failures
        let s = saturation(&reqs, &steps(&[10.0, 20.0], 10), &objective());
        assert_eq!((s.rate, s.first_breach), (Some(10.0), Some(20.0)));
        assert!((s.steps[1].error_rate - 0.02).abs() < 1e-9);
    }

    #[test]
    fn requests_count_where_they_start_not_where_they_end() {
        // Slow requests that start in step 1 and end in step 2 belong to step 1.
        let mut reqs = load(0, 10, 10, 9_000.0, 0);
        reqs.extend(load(10, 20, 10, 10.0, 0));
        let s = saturation(&reqs, &steps(&[10.0, 20.0], 10), &objective());
        assert_eq!((s.rate, s.first_breach), (None, Some(10.0)));
        assert_eq!(s.steps[1].requests, 100);
    }

    #[test]
    fn one_bad_window_breaks_a_long_step() {
        let mut reqs = load(0, 10, 10, 50.0, 0);
        reqs.extend(load(10, 20, 10, 700.0, 0));
        let s = saturation(&reqs, &steps(&[10.0], 20), &objective());
        assert_eq!(s.steps[0].windows, 2);
        assert!(!s.steps[0].met);
    }

    #[test]
    fn a_step_exactly_at_both_bounds_meets_the_objective() {
        // 100 requests in one 10s window: 99 at 500ms (the p99 is exactly the bound) and
        // 1 failed (exactly 1%).
        let mut reqs = load(0, 10, 10, 500.0, 100);
        assert_eq!(reqs.iter().filter(|r| r.failed()).count(), 1);
        // Just over a bound breaks it: the next step has 501ms or 2 of 100 failed.
        reqs.extend(load(10, 20, 10, 501.0, 0));
        reqs.extend(load(20, 30, 10, 500.0, 50));
        let s = saturation(&reqs, &steps(&[10.0, 20.0, 30.0], 10), &objective());
        assert_eq!(s.steps[0].p99_ms, Some(500.0));
        assert!((s.steps[0].error_rate - 0.01).abs() < 1e-12);
        assert!(s.steps[0].met);
        assert!(!s.steps[1].met);
        assert!(!s.steps[2].met);
        assert_eq!((s.rate, s.first_breach), (Some(10.0), Some(20.0)));
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 99.0), Some(99.0));
        assert_eq!(percentile(&v, 100.0), Some(100.0));
        assert_eq!(percentile(&[], 99.0), None);
    }
}
