//! The load generator's own figures: iterations it dropped, and the arrivals it achieved
//! against the schedule while no fault was active.

use super::window::{subtract, Window};
use super::{Assessment, Evidence, Run, MIN_ARRIVAL_SPAN_S};

/// Check 3: dropped iterations as a share of the scheduled arrivals is at most `limit_pct`.
pub fn check_dropped(run: &Run, loadgen: Option<String>, limit_pct: f64, out: &mut Assessment) {
    let (Some(dropped), Some(scheduled)) = (run.dropped_iterations, run.scheduled_arrivals) else {
        out.warnings.push(
            "validity: dropped-iterations not evaluated: the dropped or scheduled count is \
             unknown"
                .into(),
        );
        return;
    };
    if scheduled.is_nan() || scheduled <= 0.0 {
        out.warnings.push(format!(
            "validity: dropped-iterations not evaluated: {scheduled} arrivals were scheduled"
        ));
        return;
    }
    let share = dropped as f64 / scheduled * 100.0;
    if share > limit_pct {
        out.evidence.push(Evidence {
            check: "dropped-iterations".into(),
            role: "load-generator".into(),
            container: loadgen,
            figure: match run.dropped_late {
                None => format!(
                    "iterations dropped for want of a free VU ({dropped} of {scheduled:.0}), \
                     share of the scheduled arrivals"
                ),
                Some(late) => format!(
                    "starts dropped ({dropped} of {scheduled:.0}: {} at the connection cap, \
                     {late} later than max-lag), share of the scheduled arrivals",
                    dropped.saturating_sub(late)
                ),
            },
            value: share,
            threshold: limit_pct,
            unit: "%".into(),
        });
    }
}

/// Check 4: requests that started in the measured window outside every fault span, against
/// the schedule's arrivals over the same pieces, within `tolerance_pct` either way. Skipped
/// (with a warning) when less than `MIN_ARRIVAL_SPAN_S` of the window is fault-free.
pub fn check_arrivals(
    run: &Run,
    starts: &[i128],
    faults: &[Window],
    loadgen: Option<String>,
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
    let achieved = starts
        .iter()
        .filter(|&&t| {
            let i = pieces.partition_point(|p| p.start_ns <= t);
            i > 0 && pieces[i - 1].contains(t)
        })
        .count();
    let share = achieved as f64 / scheduled * 100.0;
    let (low, high) = (100.0 - tolerance_pct, 100.0 + tolerance_pct);
    if share < low || share > high {
        out.evidence.push(Evidence {
            check: "arrival-rate".into(),
            role: "load-generator".into(),
            container: loadgen,
            figure: format!(
                "requests started in the {span_s:.0} s of the measured window without a fault \
                 ({achieved} against {scheduled:.0} scheduled), share of the schedule"
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

    fn run(schedule: &Schedule) -> Run<'_> {
        Run {
            window: Window {
                start_ns: T0 + 10 * S,
                end_ns: T0 + 60 * S,
            },
            scenario_start_ns: T0,
            schedule,
            containers: &[],
            dropped_iterations: Some(0),
            dropped_late: None,
            scheduled_arrivals: Some(6000.0),
        }
    }

    /// Starts evenly spread at `rate` per second over `[from_s, to_s)` of the scenario.
    fn starts(rate: u32, from_s: i128, to_s: i128) -> Vec<i128> {
        let step = S / i128::from(rate);
        (0..)
            .map(|i| T0 + from_s * S + i * step)
            .take_while(|&t| t < T0 + to_s * S)
            .collect()
    }

    fn arrivals(run: &Run, starts: &[i128], faults: &[Window]) -> Assessment {
        let mut out = Assessment::default();
        check_arrivals(run, starts, faults, Some("lg".into()), 2.0, &mut out);
        out
    }

    #[test]
    fn dropped_under_the_tolerance_passes_and_over_it_is_evidence() {
        let s = schedule(100.0);
        let mut r = run(&s);
        let mut out = Assessment::default();
        r.dropped_iterations = Some(60);
        check_dropped(&r, Some("lg".into()), 1.0, &mut out);
        assert_eq!(out, Assessment::default());
        r.dropped_iterations = Some(61);
        check_dropped(&r, Some("lg".into()), 1.0, &mut out);
        let e = &out.evidence[0];
        assert_eq!(
            (e.check.as_str(), e.role.as_str(), e.unit.as_str()),
            ("dropped-iterations", "load-generator", "%")
        );
        assert!((e.value - 61.0 / 60.0).abs() < 1e-9);
        assert_eq!(e.threshold, 1.0);
    }

    #[test]
    fn a_native_generators_dropped_starts_say_how_many_were_late() {
        let s = schedule(100.0);
        let mut r = run(&s);
        r.dropped_iterations = Some(90);
        r.dropped_late = Some(70);
        let mut out = Assessment::default();
        check_dropped(&r, Some("lg".into()), 1.0, &mut out);
        assert_eq!(
            out.evidence[0].figure,
            "starts dropped (90 of 6000: 20 at the connection cap, 70 later than max-lag), \
             share of the scheduled arrivals"
        );
        assert!((out.evidence[0].value - 1.5).abs() < 1e-9);
    }

    #[test]
    fn dropped_without_figures_is_a_warning() {
        let s = schedule(100.0);
        let mut r = run(&s);
        r.dropped_iterations = None;
        let mut out = Assessment::default();
        check_dropped(&r, None, 1.0, &mut out);
        r.dropped_iterations = Some(0);
        r.scheduled_arrivals = Some(0.0);
        check_dropped(&r, None, 1.0, &mut out);
        assert!(out.evidence.is_empty());
        assert_eq!(out.warnings.len(), 2);
    }

    #[test]
    fn arrivals_on_schedule_pass_and_warm_up_is_ignored() {
        let s = schedule(100.0);
        let r = run(&s);
        // A slow warm-up does not count; the measured window is on time.
        let mut all = starts(10, 0, 10);
        all.extend(starts(100, 10, 60));
        assert_eq!(arrivals(&r, &all, &[]), Assessment::default());
    }

    #[test]
    fn a_shortfall_or_an_excess_beyond_the_tolerance_is_evidence() {
        let s = schedule(100.0);
        let r = run(&s);
        let out = arrivals(&r, &starts(97, 0, 60), &[]);
        let e = &out.evidence[0];
        assert_eq!(e.check, "arrival-rate");
        assert_eq!(e.container.as_deref(), Some("lg"));
        assert!((e.value - 97.0).abs() < 0.1, "{}", e.value);
        assert_eq!(e.threshold, 98.0);
        let out = arrivals(&r, &starts(103, 0, 60), &[]);
        assert_eq!(out.evidence[0].threshold, 102.0);
        assert!(arrivals(&r, &starts(99, 0, 60), &[]).evidence.is_empty());
    }

    #[test]
    fn fault_spans_are_left_out_of_both_counts() {
        let s = schedule(100.0);
        let r = run(&s);
        // Nothing arrives between 20 s and 30 s (the fault), on time elsewhere.
        let mut all = starts(100, 0, 20);
        all.extend(starts(100, 30, 60));
        let fault = Window {
            start_ns: T0 + 20 * S,
            end_ns: T0 + 30 * S,
        };
        assert_eq!(arrivals(&r, &all, &[fault]), Assessment::default());
        assert_eq!(arrivals(&r, &all, &[]).evidence.len(), 1);
    }

    #[test]
    fn a_window_mostly_under_fault_is_skipped_with_a_warning() {
        let s = schedule(100.0);
        let r = run(&s);
        let fault = Window {
            start_ns: T0 + 12 * S,
            end_ns: i128::MAX,
        };
        let out = arrivals(&r, &[], &[fault]);
        assert!(out.evidence.is_empty());
        assert!(out.warnings[0].contains("only 2.0 s"), "{out:?}");
    }

    #[test]
    fn an_empty_schedule_is_a_warning() {
        let s = schedule(0.0);
        let out = arrivals(&run(&s), &[], &[]);
        assert!(out.evidence.is_empty());
        assert_eq!(out.warnings.len(), 1);
    }
}
