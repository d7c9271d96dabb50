//! Saturation under the objective: from a step ramp's requests, each placed where the run's
//! rule judges it (`analysis::judging`: its scheduled instant or its start), the verdict of
//! every step, and the highest step rate that met the objective.
//!
//! A step is judged over each full objective window inside it (after the warm-up): it meets
//! the objective when every window holds requests and, in every window, the p99 latency
//! (nearest rank) is at most the bound and the share of failed requests (no response,
//! status 500 and above, or a dropped start the rule counts) at most the error-rate bound: `objective::met`, the rule a run's
//! verdict uses too. A breach is *sustained* when each of the `confirm` steps after it that
//! ran broke the objective too; a breach before the first sustained one is a *transient*.
//! Saturation is the rate of the last step met before the first sustained breach; the
//! first-breach reading (the last step met before the first breach) stands beside it.

use serde::{Deserialize, Serialize};

use super::objective::{self, Bounds, JudgedWindows};

/// One request as the objective judges it (`analysis::judging::Rule`), or a start the
/// load generator dropped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Request {
    /// The instant it is judged at: its scheduled instant or its start, by the rule.
    pub at_ns: i128,
    /// When its last byte came (or it failed); a dropped start's is its `at_ns`: it was
    /// known to be dropped there.
    pub end_ns: i128,
    /// Its latency from that instant to its last byte, ms; `None` for a dropped start,
    /// which was never sent and so has no latency (it counts as failed).
    pub latency_ms: Option<f64>,
    /// 0 when no response arrived (and for a dropped start).
    pub status: u16,
}

impl Request {
    /// A start the load generator dropped, judged at `at_ns`.
    pub fn dropped(at_ns: i128) -> Request {
        Request {
            at_ns,
            end_ns: at_ns,
            latency_ms: None,
            status: 0,
        }
    }

    pub fn failed(&self) -> bool {
        self.latency_ms.is_none() || self.status == 0 || self.status >= 500
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
    /// The requests sent in the step (dropped starts not included).
    pub requests: usize,
    /// The dropped starts the rule counts in the step, each a failed request; 0 in run.json
    /// files written before dropped starts were counted.
    #[serde(default)]
    pub dropped: usize,
    /// The worst window's p99, in ms (`None` without requests).
    pub p99_ms: Option<f64>,
    /// The worst window's error share, 0 to 1.
    pub error_rate: f64,
    pub met: bool,
    /// How many full windows the step held; a step shorter than a window is judged whole.
    pub windows: usize,
}

/// A ramp's saturation, as run.json records it (docs/results.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "SaturationOnDisk")]
pub struct Saturation {
    /// The last step rate that met the objective before the first sustained breach; `None`
    /// when the first step already began one.
    pub rate: Option<f64>,
    /// The first step rate of the first sustained breach; `None` when no breach was
    /// sustained (saturation is then at least the last step's rate, not measured).
    pub sustained_breach: Option<f64>,
    /// The last step rate met before the first breach, sustained or not.
    pub rate_before_first_breach: Option<f64>,
    /// The first step rate that broke the objective; `None` when no step did.
    pub first_breach: Option<f64>,
    /// The rates of the steps that broke the objective before the first sustained breach.
    pub transients: Vec<f64>,
    /// How many steps after a breach had to break the objective too for it to be sustained.
    pub confirm_steps: usize,
    pub steps: Vec<StepVerdict>,
}

/// run.json's `saturation` as any version wrote it. One written before breaches were
/// confirmed has no `confirm_steps`: its ramp was judged at its first breach, which is then
/// its sustained one too.
#[derive(Deserialize)]
struct SaturationOnDisk {
    rate: Option<f64>,
    first_breach: Option<f64>,
    steps: Vec<StepVerdict>,
    #[serde(default)]
    confirm_steps: Option<usize>,
    #[serde(default)]
    sustained_breach: Option<f64>,
    #[serde(default)]
    rate_before_first_breach: Option<f64>,
    #[serde(default)]
    transients: Vec<f64>,
}

impl From<SaturationOnDisk> for Saturation {
    fn from(d: SaturationOnDisk) -> Self {
        let confirmed = d.confirm_steps.is_some();
        Saturation {
            rate: d.rate,
            sustained_breach: if confirmed {
                d.sustained_breach
            } else {
                d.first_breach
            },
            rate_before_first_breach: if confirmed {
                d.rate_before_first_breach
            } else {
                d.rate
            },
            first_breach: d.first_breach,
            transients: d.transients,
            confirm_steps: d.confirm_steps.unwrap_or(0),
            steps: d.steps,
        }
    }
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

/// A window's p99 (over the requests sent: a dropped start has no latency), its failed
/// share (over every request and dropped start) and whether it met the objective.
fn judge(requests: &[&Request], objective: &Objective) -> (Option<f64>, f64, bool) {
    let mut latencies: Vec<f64> = requests.iter().filter_map(|r| r.latency_ms).collect();
    latencies.sort_by(f64::total_cmp);
    let p99 = percentile(&latencies, 99.0);
    let errors = requests.iter().filter(|r| r.failed()).count();
    let share = if requests.is_empty() {
        0.0
    } else {
        errors as f64 / requests.len() as f64
    };
    let met = p99.is_some_and(|p| objective::met(objective.bounds(), p, share));
    (p99, share, met)
}

/// A ramp's saturation from its requests; `confirm`: the steps after a breach that must
/// break the objective too for it to be sustained.
pub fn saturation(
    requests: &[Request],
    steps: &[Step],
    objective: &Objective,
    confirm: usize,
) -> Saturation {
    let verdicts = steps
        .iter()
        .map(|step| {
            let in_step: Vec<&Request> = requests
                .iter()
                .filter(|r| r.at_ns >= step.start_ns && r.at_ns < step.end_ns)
                .collect();
            step_verdict(&in_step, step, objective)
        })
        .collect();
    of_steps(verdicts, confirm)
}

/// Each objective window of `[start_ns, end_ns)` (its full windows, the whole span when it is
/// shorter than one) judged on the requests placed in it: `(p99, failed share, met)`.
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
                .filter(|r| r.at_ns >= s && r.at_ns < e)
                .collect();
            judge(&window, objective)
        })
        .collect()
}

/// One step's verdict from the requests placed in it (in any order): the rule every
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
        requests: in_step.iter().filter(|r| r.latency_ms.is_some()).count(),
        dropped: in_step.iter().filter(|r| r.latency_ms.is_none()).count(),
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
        .filter(|r| r.at_ns >= start_ns && r.at_ns < end_ns)
        .collect();
    let judged = judge_windows(&in_span, start_ns, end_ns, objective);
    JudgedWindows {
        windows: judged.len(),
        breached: judged.iter().filter(|j| !j.2).count(),
    }
}

/// The first sustained breach among step verdicts (`met`, in step order): the first step
/// that broke the rule whose `confirm` next steps broke it too, as far as the ramp ran
/// (steps never run, past its end or its stop, neither confirm nor refute a breach).
pub fn sustained_breach(met: &[bool], confirm: usize) -> Option<usize> {
    let last = met.len().checked_sub(1)?;
    (0..met.len()).find(|&i| met[i..=(i + confirm).min(last)].iter().all(|m| !m))
}

/// The steps that broke the rule before its first sustained breach (or before the ramp's
/// end, when none was sustained): each was followed by a met step within `confirm`.
pub fn transients(met: &[bool], confirm: usize) -> Vec<usize> {
    let until = sustained_breach(met, confirm).unwrap_or(met.len());
    (0..until).filter(|&i| !met[i]).collect()
}

/// The step before a breach, the reading of saturation at it: `None` when the breach is the
/// first step; the last step when there is no breach.
pub fn before(breach: Option<usize>, steps: usize) -> Option<usize> {
    match breach {
        Some(i) => i.checked_sub(1),
        None => steps.checked_sub(1),
    }
}

/// The saturation of a ramp from its steps' verdicts, in step order.
pub fn of_steps(steps: Vec<StepVerdict>, confirm: usize) -> Saturation {
    let met: Vec<bool> = steps.iter().map(|v| v.met).collect();
    let rate = |i: Option<usize>| i.map(|i| steps[i].rate);
    let first = met.iter().position(|m| !m);
    let sustained = sustained_breach(&met, confirm);
    Saturation {
        rate: rate(before(sustained, steps.len())),
        sustained_breach: rate(sustained),
        rate_before_first_breach: rate(before(first, steps.len())),
        first_breach: rate(first),
        transients: transients(&met, confirm)
            .into_iter()
            .map(|i| steps[i].rate)
            .collect(),
        confirm_steps: confirm,
        steps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saturation_is_read_at_the_step_before_the_breach() {
        assert_eq!(before(Some(2), 4), Some(1));
        assert_eq!(before(Some(0), 2), None, "broken at the first step");
        assert_eq!(before(None, 2), Some(1), "no breach: the last step");
        assert_eq!(before(None, 0), None);
    }

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
                at_ns: from * S + i as i128 * S / rate,
                end_ns: from * S + i as i128 * S / rate + (ms * 1e6) as i128,
                latency_ms: Some(ms),
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
        let s = saturation(
            &reqs,
            &steps(&[10.0, 20.0, 30.0, 40.0], 10),
            &objective(),
            0,
        );
        assert_eq!((s.rate, s.first_breach), (Some(20.0), Some(30.0)));
        assert!(s.steps[3].met);
        // Confirmed by one more step, the breach at 30/s is a transient: 40/s met and
        // nothing after it broke the objective.
        let s = saturation(
            &reqs,
            &steps(&[10.0, 20.0, 30.0, 40.0], 10),
            &objective(),
            1,
        );
        assert_eq!((s.rate, s.sustained_breach), (Some(40.0), None));
        assert_eq!(
            (s.rate_before_first_breach, s.first_breach),
            (Some(20.0), Some(30.0))
        );
        assert_eq!(s.transients, vec![30.0]);
    }

    #[test]
    fn a_breach_is_sustained_when_the_steps_run_after_it_confirm_it() {
        let (t, f) = (true, false);
        assert_eq!(sustained_breach(&[t, f, t, f, f], 1), Some(3));
        assert_eq!(transients(&[t, f, t, f, f], 1), vec![1]);
        assert_eq!(sustained_breach(&[t, f, f, t, f, f, f], 2), Some(4));
        assert_eq!(transients(&[t, f, f, t, f, f, f], 2), vec![1, 2]);
        // 0 confirmations: the first breach is sustained.
        assert_eq!(sustained_breach(&[t, f, t], 0), Some(1));
        assert!(transients(&[t, f, t], 0).is_empty());
        // The ramp ended before the confirmations: nothing refutes the breach.
        assert_eq!(sustained_breach(&[t, t, f], 2), Some(2));
        assert_eq!(sustained_breach(&[t, f, t], 1), None);
        assert_eq!(transients(&[t, f, t], 1), vec![1]);
        assert_eq!(sustained_breach(&[], 1), None);
        // The step before a sustained breach met the objective: were it a breach, the
        // sustained one would begin there.
        for met in [[t, f, t, f, f, t], [f, t, t, f, f, f], [t, t, t, f, t, f]] {
            if let Some(i @ 1..) = sustained_breach(&met, 1) {
                assert!(met[i - 1], "{met:?}");
            }
        }
    }

    #[test]
    fn a_record_written_before_breaches_were_confirmed_reads_its_first_as_sustained() {
        let old = r#"{"rate": 20.0, "first_breach": 30.0, "steps": []}"#;
        let s: Saturation = serde_json::from_str(old).unwrap();
        assert_eq!((s.rate, s.sustained_breach), (Some(20.0), Some(30.0)));
        assert_eq!(s.rate_before_first_breach, Some(20.0));
        assert_eq!(s.confirm_steps, 0);
        let s = of_steps(Vec::new(), 1);
        let back: Saturation = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn a_phase_breaches_in_two_windows_its_whole_p99_hides() {
        // 50 s at 10/s: two requests of 600 ms in the second and the fourth window. Each of
        // those windows' p99 (rank 99 of 100) is 600 ms; the whole phase's (rank 495 of 500)
        // is 50 ms.
        let mut reqs = load(0, 50, 10, 50.0, 0);
        for i in [100, 101, 300, 301] {
            reqs[i].latency_ms = Some(600.0);
        }
        let mut d: Vec<f64> = reqs.iter().filter_map(|r| r.latency_ms).collect();
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
    fn dropped_starts_break_a_window_whose_answered_requests_meet_the_objective() {
        // 30 s at 100/s, every answer 50 ms. 2 % of the second window's starts dropped (20
        // of 1,000 scheduled): its 980 answers meet the p99, the window breaches the 1 %
        // error bound through the drops alone (20 of 1,000 failed).
        let mut reqs = load(0, 30, 100, 50.0, 0);
        reqs.retain(|r| !(10 * S..10 * S + S / 5).contains(&r.at_ns));
        assert_eq!(reqs.len(), 2980);
        reqs.extend((0..20).map(|_| Request::dropped(10 * S)));
        let judged = phase_windows(&reqs, 0, 30 * S, &objective());
        assert_eq!(
            judged,
            JudgedWindows {
                windows: 3,
                breached: 1
            }
        );
        let steps = steps(&[100.0, 100.0, 100.0], 10);
        let s = saturation(&reqs, &steps, &objective(), 0);
        let second = &s.steps[1];
        assert_eq!((second.requests, second.dropped), (980, 20));
        assert_eq!((second.p99_ms, second.met), (Some(50.0), false));
        assert!((second.error_rate - 0.02).abs() < 1e-12);
        // 1 % dropped (10 of 1,000 scheduled) is exactly at the bound: met.
        let mut at_bound = load(0, 10, 100, 50.0, 0);
        at_bound.truncate(990);
        at_bound.extend((0..10).map(|_| Request::dropped(S)));
        assert_eq!(
            phase_windows(&at_bound, 0, 10 * S, &objective()).breached,
            0
        );
        // A window of dropped starts only has no p99 and breaches.
        let only = vec![Request::dropped(S)];
        assert_eq!(phase_windows(&only, 0, 10 * S, &objective()).breached, 1);
    }

    #[test]
    fn errors_break_the_objective_too() {
        let mut reqs = load(0, 10, 10, 50.0, 0);
        reqs.extend(load(10, 20, 20, 50.0, 50)); // 2% failures
        let s = saturation(&reqs, &steps(&[10.0, 20.0], 10), &objective(), 0);
        assert_eq!((s.rate, s.first_breach), (Some(10.0), Some(20.0)));
        assert!((s.steps[1].error_rate - 0.02).abs() < 1e-9);
    }

    #[test]
    fn requests_count_where_they_start_not_where_they_end() {
        // Slow requests that start in step 1 and end in step 2 belong to step 1.
        let mut reqs = load(0, 10, 10, 9_000.0, 0);
        reqs.extend(load(10, 20, 10, 10.0, 0));
        let s = saturation(&reqs, &steps(&[10.0, 20.0], 10), &objective(), 0);
        assert_eq!((s.rate, s.first_breach), (None, Some(10.0)));
        assert_eq!(s.steps[1].requests, 100);
    }

    #[test]
    fn one_bad_window_breaks_a_long_step() {
        let mut reqs = load(0, 10, 10, 50.0, 0);
        reqs.extend(load(10, 20, 10, 700.0, 0));
        let s = saturation(&reqs, &steps(&[10.0], 20), &objective(), 0);
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
        let s = saturation(&reqs, &steps(&[10.0, 20.0, 30.0], 10), &objective(), 0);
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
