//! A step ramp judged while it runs: requests arrive as the load generator writes them
//! (about in the order they ended), each step is judged by `saturation::step_verdict` — the
//! rule the offline analysis uses — once every request that started in it has ended or
//! timed out, and the ramp's stop is decided: at its first sustained breach, once the
//! `confirm` steps after it broke the objective too. A breach a met step follows within
//! `confirm` steps is a transient: the ramp goes on.
//!
//! Time here is the stream's own: the latest end among the requests seen (the watermark),
//! never this host's clock, so a load generator on another engine, with its own clock, is
//! judged the same way. A step `[a, b)` is complete when the watermark has passed
//! `b + settle`, where `settle` is the request timeout (a request started before `b` has
//! ended or failed by `b + timeout`) plus the output's disorder (k6 writes its samples once
//! a second, not strictly in end order). A request that arrives for a step already judged
//! is counted as late: the live verdict then saw fewer requests than the offline one will,
//! and the executor says so.

use super::saturation::{self, Objective, Request, Saturation, Step, StepVerdict};

/// Why and when the load stops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stop {
    /// The first step of the sustained breach (its index).
    pub breach: usize,
    /// The last step run: the breach and the `confirm` more that confirmed it (its index).
    pub last: usize,
    /// When the load stops: the last step's end (unix ns, on the stream's clock).
    pub at_ns: i128,
    pub breach_rate: f64,
    pub last_rate: f64,
}

/// A breach a met step refuted within `confirm` steps.
#[derive(Debug, Clone, PartialEq)]
pub struct Transient {
    /// The breaching step's index.
    pub step: usize,
    pub breached: StepVerdict,
    /// The first later step that met the objective.
    pub met_again: StepVerdict,
}

#[derive(Debug, Clone)]
pub struct LiveRamp {
    steps: Vec<Step>,
    objective: Objective,
    settle_ns: i128,
    /// How many steps after a breach must break the objective too for it to be sustained.
    confirm: usize,
    /// Whether the load stops at the first sustained breach; false: the ramp runs every
    /// step (`stop-on-breach: false`, or a profile that is no ramp).
    stops: bool,
    /// The requests that started in each step not yet judged.
    pending: Vec<Vec<Request>>,
    judged: Vec<StepVerdict>,
    watermark: i128,
    late: usize,
}

impl LiveRamp {
    /// `settle_ns`: the request timeout plus the output's disorder; `confirm`: how many
    /// steps after a breach must break the objective too for it to be sustained; `stops`:
    /// whether the load stops there.
    pub fn new(
        steps: Vec<Step>,
        objective: Objective,
        settle_ns: i128,
        confirm: usize,
        stops: bool,
    ) -> Self {
        LiveRamp {
            pending: vec![Vec::new(); steps.len()],
            steps,
            objective,
            settle_ns,
            confirm,
            stops,
            judged: Vec::new(),
            watermark: i128::MIN,
            late: 0,
        }
    }

    /// One request from the stream, with its end. Requests outside every step (the
    /// warm-up, or after the last step) are not the ramp's.
    pub fn push(&mut self, r: Request, end_ns: i128) {
        self.watermark = self.watermark.max(end_ns);
        let i = self.steps.partition_point(|s| s.end_ns <= r.at_ns);
        match self.steps.get(i) {
            Some(s) if s.start_ns <= r.at_ns => {
                if i < self.judged.len() {
                    self.late += 1;
                } else {
                    self.pending[i].push(r);
                }
            }
            _ => {}
        }
    }

    /// Judges every step the stream has completed; returns the verdicts newly given, with
    /// their step's index.
    pub fn advance(&mut self) -> Vec<(usize, StepVerdict)> {
        let mut out = Vec::new();
        while let Some(step) = self.steps.get(self.judged.len()) {
            if self.watermark < step.end_ns.saturating_add(self.settle_ns) || self.stopped() {
                break;
            }
            out.push(self.judge_next());
        }
        out
    }

    /// The stream has ended: every step it reached (one that began before the latest end
    /// seen) and not yet judged is judged with what it holds; steps never reached, or cut
    /// short by the stop (the load stopped at the end of the stop's last step), are not
    /// judged.
    pub fn finish(&mut self) -> Vec<(usize, StepVerdict)> {
        let mut out = Vec::new();
        while let Some(step) = self.steps.get(self.judged.len()) {
            if step.start_ns >= self.watermark || self.stopped() {
                break;
            }
            out.push(self.judge_next());
        }
        out
    }

    fn judge_next(&mut self) -> (usize, StepVerdict) {
        let i = self.judged.len();
        let reqs = std::mem::take(&mut self.pending[i]);
        let refs: Vec<&Request> = reqs.iter().collect();
        let v = saturation::step_verdict(&refs, &self.steps[i], &self.objective);
        self.judged.push(v.clone());
        (i, v)
    }

    /// Every step up to the stop's last is judged: no later one ran as a step.
    fn stopped(&self) -> bool {
        self.stop().is_some_and(|s| self.judged.len() > s.last)
    }

    /// The stop, once a breach and its `confirm` next steps have been judged and all broke
    /// the objective, and steps remain after them; `None` before (a breach awaiting its
    /// confirmations, or one a met step refuted, does not stop the ramp), and for a ramp
    /// that runs every step.
    pub fn stop(&self) -> Option<Stop> {
        if !self.stops {
            return None;
        }
        let c = self.confirm;
        let n = self.judged.len();
        let breach =
            (0..n).find(|&i| i + c < n && self.judged[i..=i + c].iter().all(|v| !v.met))?;
        let last = breach + c;
        if last + 1 >= self.steps.len() {
            return None; // the ramp ends there anyway
        }
        Some(Stop {
            breach,
            last,
            at_ns: self.steps[last].end_ns,
            breach_rate: self.steps[breach].rate,
            last_rate: self.steps[last].rate,
        })
    }

    /// The saturation from the steps judged so far (the same fold as the offline figure).
    pub fn saturation(&self) -> Saturation {
        saturation::of_steps(self.judged.clone(), self.confirm)
    }

    /// The transients known so far, in step order: breaching steps before the first sustained
    /// breach (the offline rule, on the steps judged so far), each with the step that met the
    /// objective again. A breach still awaiting its confirmations is not one yet.
    pub fn transients(&self) -> Vec<Transient> {
        let met: Vec<bool> = self.judged.iter().map(|v| v.met).collect();
        saturation::transients(&met, self.confirm)
            .into_iter()
            .filter_map(|step| {
                let again = self.judged[step + 1..].iter().find(|v| v.met)?;
                Some(Transient {
                    step,
                    breached: self.judged[step].clone(),
                    met_again: again.clone(),
                })
            })
            .collect()
    }

    /// Requests that arrived for a step already judged.
    pub fn late(&self) -> usize {
        self.late
    }

    /// The latest end seen (unix ns, the stream's clock); `None` before any request.
    pub fn watermark(&self) -> Option<i128> {
        (self.watermark > i128::MIN).then_some(self.watermark)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::plan::expand::SplitMix64;

    const S: i128 = 1_000_000_000;

    fn objective() -> Objective {
        Objective {
            p99_ms: 100.0,
            error_rate: 0.01,
            window_ns: 5 * S,
        }
    }

    /// A ramp of 10 s steps at 10, 20, … /s after a 5 s warm-up; latency rises past the
    /// bound from `knee` on. Each request with its end, in start order.
    fn ramp(rates: &[f64], knee: f64, seed: u64) -> (Vec<Step>, Vec<(Request, i128)>) {
        let mut rng = SplitMix64::new(seed);
        let warmup = 5 * S;
        let steps: Vec<Step> = rates
            .iter()
            .enumerate()
            .map(|(i, &rate)| Step {
                rate,
                start_ns: warmup + i as i128 * 10 * S,
                end_ns: warmup + (i as i128 + 1) * 10 * S,
            })
            .collect();
        let mut reqs = Vec::new();
        let mut t = 0i128;
        for s in &steps {
            let rate = s.rate;
            while t < s.end_ns {
                let slow = s.rate >= knee;
                let u = (rng.next_u64() % 1000) as f64 / 1000.0;
                let ms = if slow {
                    90.0 + 400.0 * u
                } else {
                    5.0 + 40.0 * u
                };
                let status = if rng.next_u64() % 500 == 0 { 503 } else { 200 };
                let end = t + (ms * 1e6) as i128;
                reqs.push((
                    Request {
                        at_ns: t,
                        end_ns: t + (ms * 1e6) as i128,
                        latency_ms: Some(ms),
                        status,
                    },
                    end,
                ));
                t += (S as f64 / rate) as i128;
            }
        }
        (steps, reqs)
    }

    /// The stream as a load generator writes it: by end, shuffled within one-second
    /// batches.
    fn stream(reqs: Vec<(Request, i128)>, seed: u64) -> Vec<(Request, i128)> {
        let mut rng = SplitMix64::new(seed);
        let mut keyed: Vec<_> = reqs
            .into_iter()
            .map(|r| ((r.1 / S, rng.next_u64()), r))
            .collect();
        keyed.sort_by_key(|k| k.0);
        keyed.into_iter().map(|k| k.1).collect()
    }

    #[test]
    fn the_live_saturation_equals_the_offline_one() {
        for (knee, seed, breach) in [
            (40.0, 1, Some(40.0)),
            (20.0, 2, Some(20.0)),
            (1000.0, 3, None),
            (10.0, 4, Some(10.0)),
        ] {
            let rates = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0];
            let (steps, reqs) = ramp(&rates, knee, seed);
            let offline: Vec<Request> = reqs.iter().map(|r| r.0).collect();
            let want = saturation::saturation(&offline, &steps, &objective(), 1);
            assert_eq!(want.first_breach, breach, "the fixture's knee");
            let mut live = LiveRamp::new(steps, objective(), S + 2 * S, 1, false);
            let mut given = Vec::new();
            for (r, end) in stream(reqs, seed) {
                live.push(r, end);
                given.extend(live.advance());
            }
            given.extend(live.finish());
            assert_eq!(live.late(), 0);
            assert_eq!(
                given.iter().map(|g| g.0).collect::<Vec<_>>(),
                (0..6).collect::<Vec<_>>()
            );
            assert_eq!(live.saturation(), want, "knee {knee}");
        }
    }

    #[test]
    fn no_step_past_the_stop_is_judged_and_a_ramp_that_runs_every_step_never_stops() {
        let rates = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0];
        for (confirm, judged) in [(Some(1), 3), (Some(0), 2), (None, 6)] {
            let (steps, reqs) = ramp(&rates, 20.0, 5);
            let mut live = LiveRamp::new(
                steps,
                objective(),
                3 * S,
                confirm.unwrap_or(1),
                confirm.is_some(),
            );
            let mut given = Vec::new();
            // The stream goes on past the stop (the load generator was slow to stop).
            for (r, end) in stream(reqs, 5) {
                live.push(r, end);
                given.extend(live.advance());
            }
            given.extend(live.finish());
            assert_eq!(given.len(), judged, "{confirm:?}");
            assert_eq!(live.stop().is_some(), confirm.is_some(), "{confirm:?}");
            assert_eq!(live.saturation().first_breach, Some(20.0));
        }
    }

    #[test]
    fn the_ramp_stops_after_its_first_breach_and_its_confirmations() {
        let rates = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0];
        for confirm in [0, 1, 2] {
            let (steps, reqs) = ramp(&rates, 40.0, 7);
            let mut live = LiveRamp::new(steps.clone(), objective(), 3 * S, confirm, true);
            let mut stopped = None;
            for (r, end) in stream(reqs, 7) {
                live.push(r, end);
                live.advance();
                if let Some(stop) = live.stop() {
                    // The stop is known once the last confirmation is judged: the load runs
                    // on past its end until then, outside every step.
                    stopped.get_or_insert((stop, end));
                }
            }
            let (stop, seen_at) = stopped.expect("a breach at 40/s stops the ramp");
            assert_eq!((stop.breach, stop.last), (3, 3 + confirm));
            assert_eq!(stop.at_ns, steps[3 + confirm].end_ns);
            // The last confirmation is judged once the stream is 3 s (settle) past its step's
            // end: within the one-second batch that crosses that instant.
            let after = seen_at - steps[3 + confirm].end_ns;
            assert!((3 * S..=4 * S).contains(&after), "{confirm}: {after}");
            assert_eq!(live.saturation().rate, Some(30.0));
        }
    }

    #[test]
    fn no_stop_without_a_breach_or_when_the_ramp_ends_anyway() {
        let rates = [10.0, 20.0, 30.0];
        let (steps, reqs) = ramp(&rates, 1000.0, 9);
        let mut live = LiveRamp::new(steps.clone(), objective(), 3 * S, 1, true);
        for (r, end) in stream(reqs.clone(), 9) {
            live.push(r, end);
            live.advance();
            assert_eq!(live.stop(), None);
        }
        // A breach at the second-to-last step with one confirmation: the ramp ends there.
        let (steps, reqs) = ramp(&rates, 20.0, 9);
        let mut live = LiveRamp::new(steps, objective(), 3 * S, 1, true);
        for (r, end) in stream(reqs, 9) {
            live.push(r, end);
            live.advance();
        }
        live.finish();
        assert_eq!(live.saturation().first_breach, Some(20.0));
        assert_eq!(live.stop(), None);
    }

    /// A ramp at 20, 40, …, 200/s whose knee is at 140/s, with a 3 s stall (every request
    /// 1 s) inside its 80/s step.
    fn stalled(seed: u64) -> (Vec<Step>, Vec<(Request, i128)>) {
        let rates: Vec<f64> = (1..=10).map(|k| 20.0 * k as f64).collect();
        let (steps, mut reqs) = ramp(&rates, 160.0, seed);
        let stall = steps[3].start_ns + 2 * S..steps[3].start_ns + 5 * S;
        for (r, end) in &mut reqs {
            if stall.contains(&r.at_ns) {
                r.latency_ms = Some(1000.0);
                *end = r.at_ns + S;
            }
        }
        (steps, reqs)
    }

    #[test]
    fn a_stall_inside_a_step_is_a_transient_and_the_ramp_goes_on_to_its_knee() {
        let (steps, reqs) = stalled(11);
        let mut live = LiveRamp::new(steps.clone(), objective(), 3 * S, 1, true);
        let mut transients_seen = Vec::new();
        for (r, end) in stream(reqs.clone(), 11) {
            live.push(r, end);
            live.advance();
            let t: Vec<usize> = live.transients().iter().map(|t| t.step).collect();
            if t.len() > transients_seen.len() {
                // Known once the next step met the objective, and never stopping the ramp.
                assert_eq!(live.stop(), None);
                transients_seen = t;
            }
        }
        live.finish();
        assert_eq!(transients_seen, vec![3], "the 80/s step");
        let stop = live.stop().expect("the knee at 160/s, confirmed at 180/s");
        assert_eq!((stop.breach_rate, stop.last_rate), (160.0, 180.0));
        assert_eq!(stop.at_ns, steps[8].end_ns);
        let sat = live.saturation();
        assert_eq!((sat.rate, sat.sustained_breach), (Some(140.0), Some(160.0)));
        assert_eq!(
            (sat.rate_before_first_breach, sat.first_breach),
            (Some(60.0), Some(80.0))
        );
        assert_eq!(sat.transients, vec![80.0]);
        // The same from the requests afterwards, over the steps run.
        let offline: Vec<Request> = reqs.iter().map(|r| r.0).collect();
        let want = saturation::saturation(&offline, &steps[..9], &objective(), 1);
        assert_eq!(sat, want);
        // With no confirmation asked, the stall stops the ramp at 80/s.
        let mut live = LiveRamp::new(steps.clone(), objective(), 3 * S, 0, true);
        for (r, end) in stream(reqs, 11) {
            live.push(r, end);
            live.advance();
        }
        assert_eq!(live.stop().map(|s| s.breach_rate), Some(80.0));
        assert_eq!(live.saturation().rate, Some(60.0));
    }

    #[test]
    fn a_met_step_after_the_sustained_breach_makes_no_transient_live_or_offline() {
        // The stalled ramp run to its top, whose last step (200/s) is fast again: the breach
        // at 180/s that it follows comes after the sustained one at 160/s.
        let (steps, mut reqs) = stalled(13);
        for (r, end) in &mut reqs {
            if r.at_ns >= steps[9].start_ns {
                r.latency_ms = Some(10.0);
                *end = r.at_ns + S / 100;
            }
        }
        let mut live = LiveRamp::new(steps.clone(), objective(), 3 * S, 1, false);
        for (r, end) in stream(reqs.clone(), 13) {
            live.push(r, end);
            live.advance();
        }
        live.finish();
        let seen: Vec<(usize, f64)> = live
            .transients()
            .iter()
            .map(|t| (t.step, t.met_again.rate))
            .collect();
        assert_eq!(
            seen,
            vec![(3, 100.0)],
            "the stall alone, met again at 100/s"
        );
        let offline: Vec<Request> = reqs.iter().map(|r| r.0).collect();
        let want = saturation::saturation(&offline, &steps, &objective(), 1);
        assert_eq!(want.transients, vec![80.0]);
        assert_eq!(live.saturation(), want);
    }

    #[test]
    fn dropped_starts_break_a_step_live_as_they_do_offline() {
        // Every request answered fast (no knee), but 2 % of the 30/s step's starts dropped:
        // the step breaches the 1 % bound, live and offline alike.
        let (steps, reqs) = ramp(&[10.0, 20.0, 30.0, 40.0], 1000.0, 21);
        let at = steps[2].start_ns + S;
        let mut all = reqs.clone();
        all.extend((0..6).map(|_| (Request::dropped(at), at)));
        let offline: Vec<Request> = all.iter().map(|r| r.0).collect();
        let want = saturation::saturation(&offline, &steps, &objective(), 0);
        assert_eq!(want.first_breach, Some(30.0));
        assert_eq!(want.steps[2].dropped, 6);
        let mut live = LiveRamp::new(steps, objective(), 3 * S, 0, false);
        for (r, end) in stream(all, 21) {
            live.push(r, end);
            live.advance();
        }
        live.finish();
        assert_eq!(live.late(), 0);
        assert_eq!(live.saturation(), want);
    }

    #[test]
    fn a_request_for_a_judged_step_is_counted_late() {
        let (steps, _) = ramp(&[10.0, 20.0], 1000.0, 5);
        let mut live = LiveRamp::new(steps.clone(), objective(), S, 0, true);
        let r = |at_ns| Request {
            at_ns,
            end_ns: at_ns + S / 100,
            latency_ms: Some(10.0),
            status: 200,
        };
        live.push(r(steps[0].start_ns), steps[0].start_ns + S / 100);
        assert!(
            live.advance().is_empty(),
            "the first step is not complete yet"
        );
        live.push(r(steps[1].start_ns), steps[0].end_ns + S);
        assert_eq!(live.advance().len(), 1);
        live.push(r(steps[0].start_ns + S), steps[0].start_ns + S + S / 100);
        assert_eq!(live.late(), 1);
        // Warm-up requests are not the ramp's.
        live.push(r(0), S / 100);
        assert_eq!(live.late(), 1);
    }
}
