//! The load generator's own figures: the starts it failed to make, and the arrivals it
//! achieved against the schedule while no fault was active.
//!
//! Whose a dropped start is: one later than feedbench-load's `max-lag` is the generator's
//! own; one dropped at its connection cap (k6: for want of a free VU) is the system under
//! test's backpressure while the generator's CPU and throttling checks pass (slow answers
//! held every connection), and the generator's own when one of them failed. The system's
//! drops are failed requests in its windows (`analysis::judging`), never evidence against
//! the testbed (docs/results.md, "Validity").

use super::window::{subtract, Window};
use super::{Assessment, Evidence, Run, MIN_ARRIVAL_SPAN_S};
use crate::analysis::judging::second_start;

/// The load generator's dropped starts, per whole second of the scenario.
#[derive(Debug, Clone, Copy)]
pub struct Drops<'a> {
    /// Every dropped start (k6's dropped iterations, or feedbench-load's).
    pub per_second: &'a [u64],
    /// feedbench-load only: of those, the starts later than `max-lag`; `None` for k6, whose
    /// every drop found no free VU.
    pub late_per_second: Option<&'a [u64]>,
}

impl Drops<'_> {
    /// `(late, at the cap)` dropped in the seconds of `t`.
    fn split(&self, t: usize) -> (u64, u64) {
        let all = self.per_second.get(t).copied().unwrap_or(0);
        let late = self
            .late_per_second
            .and_then(|l| l.get(t).copied())
            .unwrap_or(0)
            .min(all);
        (late, all - late)
    }
}

/// The seconds of the scenario (started at `t0`) that begin before `until`.
fn seconds_before(t0: i128, until: i128, len: usize) -> std::ops::Range<usize> {
    let n = ((until - t0).max(0) as u128).div_ceil(1_000_000_000);
    0..usize::try_from(n).unwrap_or(usize::MAX).min(len)
}

/// Check 3: the starts the generator itself dropped (late ones; at its cap too when
/// `generator_failed`: its CPU or throttling check did), from the scenario's start to the
/// end of the checked window, as a share of the arrivals scheduled there, at most
/// `limit_pct`.
pub fn check_dropped(
    run: &Run,
    loadgen: Option<String>,
    limit_pct: f64,
    generator_failed: bool,
    out: &mut Assessment,
) {
    let Some(drops) = run.drops else {
        out.warnings.push(
            "validity: dropped-iterations not evaluated: the dropped starts are unknown".into(),
        );
        return;
    };
    let rel = |ns: i128| (ns - run.scenario_start_ns) as f64 / 1e9;
    let scheduled = run.schedule.arrivals_between(0.0, rel(run.window.end_ns));
    if scheduled.is_nan() || scheduled <= 0.0 {
        out.warnings.push(format!(
            "validity: dropped-iterations not evaluated: {scheduled} arrivals were scheduled"
        ));
        return;
    }
    let seconds = seconds_before(
        run.scenario_start_ns,
        run.window.end_ns,
        drops.per_second.len(),
    );
    let (late, cap) = seconds
        .map(|t| drops.split(t))
        .fold((0, 0), |(l, c), (dl, dc)| (l + dl, c + dc));
    let own = late + if generator_failed { cap } else { 0 };
    let share = own as f64 / scheduled * 100.0;
    if share <= limit_pct {
        return;
    }
    let kinds = match (drops.late_per_second.is_some(), generator_failed) {
        (true, false) => format!(
            "{late} later than max-lag; {cap} at the connection cap are the system under test's"
        ),
        (true, true) => format!(
            "{late} later than max-lag, {cap} at the connection cap while the load \
             generator's CPU or throttling check failed"
        ),
        (false, _) => format!(
            "{cap} for want of a free VU while the load generator's CPU or throttling check \
             failed"
        ),
    };
    out.evidence.push(Evidence {
        check: "dropped-iterations".into(),
        role: "load-generator".into(),
        container: loadgen,
        figure: format!(
            "starts the load generator dropped itself ({own} of {scheduled:.0}: {kinds}), \
             share of the scheduled arrivals"
        ),
        value: share,
        threshold: limit_pct,
        unit: "%".into(),
    });
}

/// Check 4: requests that started in the measured window outside every fault span, and
/// the starts dropped there at the generator's cap while it was not at fault (the system's
/// backpressure: the generator offered them), against the schedule's arrivals over the same
/// pieces, within `tolerance_pct` either way. Skipped (with a warning) when less than
/// `MIN_ARRIVAL_SPAN_S` of the window is fault-free.
pub fn check_arrivals(
    run: &Run,
    starts: &[i128],
    faults: &[Window],
    (loadgen, generator_failed): (Option<String>, bool),
    tolerance_pct: f64,
    out: &mut Assessment,
) {
    let pieces = subtract(run.window, faults);
    let span_s: f64 = pieces.iter().map(Window::len_s).sum();
    if span_s < MIN_ARRIVAL_SPAN_S {
        out.warnings.push(format!(
            "validity: arrival-rate not evaluated: only {span_s:.1} s of the measured window \
             had no fault active (at least {MIN_ARRIVAL_SPAN_S} s needed)"
        ));
        return;
    }
    let rel = |ns: i128| (ns - run.scenario_start_ns) as f64 / 1e9;
    let scheduled: f64 = pieces
        .iter()
        .map(|p| {
            run.schedule
                .arrivals_between(rel(p.start_ns), rel(p.end_ns))
        })
        .sum();
    if scheduled.is_nan() || scheduled < 1.0 {
        out.warnings.push(format!(
            "validity: arrival-rate not evaluated: the schedule has {scheduled:.2} arrivals in \
             the fault-free measured window"
        ));
        return;
    }
    // Pieces are sorted and disjoint: the last piece starting at or before `t` is the only
    // one that can hold it.
    let inside = |t: i128| {
        let i = pieces.partition_point(|p| p.start_ns <= t);
        i > 0 && pieces[i - 1].contains(t)
    };
    let started = starts.iter().filter(|&&t| inside(t)).count() as u64;
    // A second's drops are placed at its start, as the windows place them.
    let at_cap: u64 = match (run.drops, generator_failed) {
        (Some(d), false) => (0..d.per_second.len())
            .filter(|&t| inside(second_start(run.scenario_start_ns, t as u64)))
            .map(|t| d.split(t).1)
            .sum(),
        _ => 0,
    };
    let achieved = started + at_cap;
    let share = achieved as f64 / scheduled * 100.0;
    let (low, high) = (100.0 - tolerance_pct, 100.0 + tolerance_pct);
    if share < low || share > high {
        out.evidence.push(Evidence {
            check: "arrival-rate".into(),
            role: "load-generator".into(),
            container: loadgen,
            figure: format!(
                "requests started in the {span_s:.0} s of the measured window without a fault, \
                 and starts dropped there at the connection cap as the system under test's \
                 ({started} + {at_cap} against {scheduled:.0} scheduled), share of the schedule"
            ),
            value: share,
            threshold: if share < low { low } else { high },
            unit: "%".into(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::load::{Schedule, Stage};

    const S: i128 = 1_000_000_000;
    /// The scenario starts at unix second 1000; warm-up 10 s; 60 s in all.
    const T0: i128 = 1000 * S;

    fn schedule(rate: f64) -> Schedule {
        Schedule {
            start_rate: rate,
            stages: vec![Stage {
                duration_s: 60.0,
                target: rate,
            }],
        }
    }

    fn run<'a>(schedule: &'a Schedule, drops: Option<Drops<'a>>) -> Run<'a> {
        Run {
            window: Window {
                start_ns: T0 + 10 * S,
                end_ns: T0 + 60 * S,
            },
            scenario_start_ns: T0,
            schedule,
            containers: &[],
            drops,
            fault: None,
        }
    }

    /// `n` drops in each of the seconds `from..to` of the scenario (60 seconds in all).
    fn per_second(from: usize, to: usize, n: u64) -> Vec<u64> {
        (0..60)
            .map(|t| if (from..to).contains(&t) { n } else { 0 })
            .collect()
    }

    /// Starts evenly spread at `rate` per second over `[from_s, to_s)` of the scenario.
    fn starts(rate: u32, from_s: i128, to_s: i128) -> Vec<i128> {
        let step = S / i128::from(rate);
        (0..)
            .map(|i| T0 + from_s * S + i * step)
            .take_while(|&t| t < T0 + to_s * S)
            .collect()
    }

    fn arrivals(run: &Run, starts: &[i128], faults: &[Window], failed: bool) -> Assessment {
        let mut out = Assessment::default();
        check_arrivals(
            run,
            starts,
            faults,
            (Some("lg".into()), failed),
            2.0,
            &mut out,
        );
        out
    }

    /// A run's drops: every one per second, and of those the late ones (feedbench-load).
    fn drops<'a>(per_second: &'a [u64], late: Option<&'a [u64]>) -> Option<Drops<'a>> {
        Some(Drops {
            per_second,
            late_per_second: late,
        })
    }

    fn dropped(run: &Run, failed: bool) -> Assessment {
        let mut out = Assessment::default();
        check_dropped(run, Some("lg".into()), 1.0, failed, &mut out);
        out
    }

    #[test]
    fn late_starts_over_the_tolerance_are_evidence_and_under_it_pass() {
        let s = schedule(100.0);
        // 6,000 scheduled: 60 late (1 %) pass, 61 do not.
        let mut all = per_second(0, 60, 1);
        let late = all.clone();
        let r = run(&s, drops(&all, Some(&late)));
        assert_eq!(dropped(&r, false), Assessment::default());
        all[0] += 1;
        let late = all.clone();
        let r = run(&s, drops(&all, Some(&late)));
        let out = dropped(&r, false);
        let e = &out.evidence[0];
        assert_eq!(
            (e.check.as_str(), e.role.as_str(), e.unit.as_str()),
            ("dropped-iterations", "load-generator", "%")
        );
        assert!((e.value - 61.0 / 60.0).abs() < 1e-9);
        assert_eq!(e.threshold, 1.0);
        assert_eq!(
            e.figure,
            "starts the load generator dropped itself (61 of 6000: 61 later than max-lag; 0 at \
             the connection cap are the system under test's), share of the scheduled arrivals"
        );
    }

    #[test]
    fn drops_at_the_cap_are_the_systems_unless_the_generator_failed_its_own_checks() {
        let s = schedule(100.0);
        // feedbench-load: 90 dropped, 20 of them late; k6: 90 for want of a free VU.
        let all = per_second(40, 50, 9);
        let late = per_second(40, 50, 2);
        let native = run(&s, drops(&all, Some(&late)));
        assert_eq!(dropped(&native, false), Assessment::default());
        let out = dropped(&native, true);
        assert_eq!(
            out.evidence[0].figure,
            "starts the load generator dropped itself (90 of 6000: 20 later than max-lag, 70 at \
             the connection cap while the load generator's CPU or throttling check failed), \
             share of the scheduled arrivals"
        );
        assert!((out.evidence[0].value - 1.5).abs() < 1e-9);
        let k6 = run(&s, drops(&all, None));
        assert_eq!(dropped(&k6, false), Assessment::default());
        assert!(dropped(&k6, true).evidence[0]
            .figure
            .contains("90 for want of a free VU while the load generator's CPU"));
    }

    #[test]
    fn drops_past_the_checked_window_are_not_counted() {
        let s = schedule(100.0);
        // 120 late starts in the scenario's seconds 40–51 (2 %), over 6,000 scheduled to 60 s.
        let late = per_second(40, 52, 10);
        let mut r = run(&s, drops(&late, Some(&late)));
        assert_eq!(dropped(&r, false).evidence.len(), 1);
        // A ramp judged up to the end of its first breaching step at 40 s: none counted.
        r.window.end_ns = T0 + 40 * S;
        assert_eq!(dropped(&r, false), Assessment::default());
        // Up to 41 s: 10 of 4,100 scheduled, within 1 %.
        r.window.end_ns = T0 + 41 * S;
        assert_eq!(dropped(&r, false), Assessment::default());
    }

    #[test]
    fn unknown_drops_or_no_schedule_is_a_warning() {
        let s = schedule(100.0);
        let out = dropped(&run(&s, None), false);
        assert!(out.evidence.is_empty());
        assert_eq!(out.warnings.len(), 1);
        let none = schedule(0.0);
        let out = dropped(&run(&none, drops(&[], None)), false);
        assert_eq!((out.evidence.len(), out.warnings.len()), (0, 1));
    }

    #[test]
    fn arrivals_on_schedule_pass_and_warm_up_is_ignored() {
        let s = schedule(100.0);
        let r = run(&s, None);
        // A slow warm-up does not count; the measured window is on time.
        let mut all = starts(10, 0, 10);
        all.extend(starts(100, 10, 60));
        assert_eq!(arrivals(&r, &all, &[], false), Assessment::default());
    }

    #[test]
    fn a_shortfall_or_an_excess_beyond_the_tolerance_is_evidence() {
        let s = schedule(100.0);
        let r = run(&s, None);
        let out = arrivals(&r, &starts(97, 0, 60), &[], false);
        let e = &out.evidence[0];
        assert_eq!(e.check, "arrival-rate");
        assert_eq!(e.container.as_deref(), Some("lg"));
        assert!((e.value - 97.0).abs() < 0.1, "{}", e.value);
        assert_eq!(e.threshold, 98.0);
        let out = arrivals(&r, &starts(103, 0, 60), &[], false);
        assert_eq!(out.evidence[0].threshold, 102.0);
        assert!(arrivals(&r, &starts(99, 0, 60), &[], false)
            .evidence
            .is_empty());
    }

    #[test]
    fn starts_dropped_at_the_cap_count_as_offered_unless_the_generator_failed() {
        let s = schedule(100.0);
        // 95/s started over the measured window, 5/s dropped at the cap (the system held
        // every connection), 1/s of them late.
        let all = per_second(10, 60, 5);
        let late = per_second(10, 60, 1);
        let r = run(&s, drops(&all, Some(&late)));
        let sent = starts(95, 10, 60);
        // About 4,750 started and 200 at the cap against 5,000: 99 %.
        assert_eq!(arrivals(&r, &sent, &[], false), Assessment::default());
        // The generator at fault: its cap drops are its own, 95 % achieved.
        let out = arrivals(&r, &sent, &[], true);
        assert!((out.evidence[0].value - 95.0).abs() < 0.1, "{out:?}");
        assert!(out.evidence[0]
            .figure
            .contains(" + 0 against 5000 scheduled)"));
        // k6 (every drop for want of a VU): 4,750 + 250.
        let k6 = run(&s, drops(&all, None));
        assert_eq!(arrivals(&k6, &sent, &[], false), Assessment::default());
    }

    #[test]
    fn fault_spans_are_left_out_of_both_counts() {
        let s = schedule(100.0);
        let r = run(&s, None);
        // Nothing arrives between 20 s and 30 s (the fault), on time elsewhere.
        let mut all = starts(100, 0, 20);
        all.extend(starts(100, 30, 60));
        let fault = Window {
            start_ns: T0 + 20 * S,
            end_ns: T0 + 30 * S,
        };
        assert_eq!(arrivals(&r, &all, &[fault], false), Assessment::default());
        assert_eq!(arrivals(&r, &all, &[], false).evidence.len(), 1);
    }

    #[test]
    fn a_window_mostly_under_fault_is_skipped_with_a_warning() {
        let s = schedule(100.0);
        let r = run(&s, None);
        let fault = Window {
            start_ns: T0 + 12 * S,
            end_ns: i128::MAX,
        };
        let out = arrivals(&r, &[], &[fault], false);
        assert!(out.evidence.is_empty());
        assert!(out.warnings[0].contains("only 2.0 s"), "{out:?}");
    }

    #[test]
    fn an_empty_schedule_is_a_warning() {
        let s = schedule(0.0);
        let out = arrivals(&run(&s, None), &[], &[], false);
        assert!(out.evidence.is_empty());
        assert_eq!(out.warnings.len(), 1);
    }
}
