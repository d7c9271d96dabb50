//! The objective's verdict on a run's measured phase (met or breached, over its objective
//! windows), and the one rule for "the objective is met" that every window is judged by.

use crate::plan::model::Objective;

/// The objective's two ceilings as numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    /// p99 latency, ms.
    pub p99_ms: f64,
    /// Share of failed requests, 0 to 1.
    pub failed_share: f64,
}

impl Bounds {
    pub fn of(objective: &Objective) -> Bounds {
        Bounds {
            p99_ms: objective.p99.millis as f64,
            failed_share: objective.error_rate.fraction(),
        }
    }
}

/// The objective is a ceiling ("p99 at most 300ms, at most 1% failed"): it is met when the
/// p99 is at most its bound and the failed share at most its bound, a value exactly at a
/// bound included. The run's verdict and every saturation window use this and nothing else.
pub fn met(bounds: Bounds, p99_ms: f64, failed_share: f64) -> bool {
    p99_ms <= bounds.p99_ms && failed_share <= bounds.failed_share
}

/// The objective windows of `[start_ns, end_ns)`: its full windows
/// `[start + j·W, start + (j+1)·W)` (a trailing part window is none), or the whole span when
/// it is shorter than one window (or `W` is not positive). A ramp's step and a run's
/// measured phase are cut so, offline and live.
pub fn windows(start_ns: i128, end_ns: i128, window_ns: i128) -> Vec<(i128, i128)> {
    let n = if window_ns > 0 {
        (end_ns - start_ns) / window_ns
    } else {
        0
    };
    if n <= 0 {
        return vec![(start_ns, end_ns)];
    }
    (0..n)
        .map(|j| (start_ns + j * window_ns, start_ns + (j + 1) * window_ns))
        .collect()
}

/// How a span fared under the windows rule: its full objective windows (the whole span when
/// it is shorter than one window) and how many of them breached the objective. A window
/// without requests breaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct JudgedWindows {
    pub windows: usize,
    pub breached: usize,
}

/// The run's verdict, by the windows rule the seeds evaluate an SLO by ("over each window,
/// the way an SLO is evaluated"): `met` when no objective window of the measured phase
/// breached (see [`met`]), `breached` when one did; None when there is nothing to judge (no
/// measured request, or no windows judged) or the run is a step ramp, whose verdicts are
/// per step (its saturation). A phase whose whole p99 is within the bound can breach: two
/// bad windows of five are not averaged away.
pub fn verdict(
    requests: usize,
    windows: Option<JudgedWindows>,
    ramp: bool,
) -> Option<&'static str> {
    if ramp || requests == 0 {
        return None;
    }
    let w = windows.filter(|w| w.windows > 0)?;
    Some(if w.breached == 0 { "met" } else { "breached" })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::units::{Duration, Percent};

    fn objective() -> Objective {
        Objective {
            p99: Duration { millis: 500 },
            error_rate: Percent { percent: 1.0 },
            window: Duration { millis: 10_000 },
        }
    }

    fn judged(windows: usize, breached: usize) -> Option<JudgedWindows> {
        Some(JudgedWindows { windows, breached })
    }

    #[test]
    fn a_run_is_met_only_when_no_window_breached() {
        assert_eq!(verdict(900, judged(5, 0), false), Some("met"));
        // The smoke study's database-latency run: two of five windows over the bound, the
        // whole phase's p99 under it.
        assert_eq!(verdict(900, judged(5, 2), false), Some("breached"));
        assert_eq!(verdict(900, judged(1, 1), false), Some("breached"));
        assert_eq!(verdict(0, judged(5, 5), false), None);
        assert_eq!(verdict(900, None, false), None);
        assert_eq!(verdict(900, judged(0, 0), false), None);
        assert_eq!(verdict(900, judged(5, 0), true), None);
    }

    #[test]
    fn a_window_exactly_at_both_bounds_meets_the_objective() {
        let b = Bounds::of(&objective());
        // 1 failure in 100 is exactly 1%, as 1 in 200 is exactly 0.5%.
        assert!(met(b, 500.0, 1.0 / 100.0));
        assert!(met(b, 500.0, 0.0));
        assert!(met(b, 0.0, 1.0 / 100.0));
        let half = Objective {
            error_rate: Percent { percent: 0.5 },
            ..objective()
        };
        assert!(met(Bounds::of(&half), 500.0, 1.0 / 200.0));
        // Just above either bound breaches.
        assert!(!met(b, 500.001, 0.0));
        assert!(!met(b, 500.0, 2.0 / 199.0));
        assert!(!met(b, 501.0, 0.0));
        assert!(!met(b, 10.0, 0.02));
    }
}
