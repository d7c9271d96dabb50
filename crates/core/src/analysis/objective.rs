//! The objective's verdict on a run's measured phase (met or breached), and the one rule for
//! "the objective is met" that this verdict and every saturation step are judged by.

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

/// `met` when the measured phase's p99 and failed share are within the objective (see
/// [`met`]), `breached` otherwise; None when there is nothing to judge (no measured
/// request) or the run is a step ramp, whose verdicts are per step (its saturation).
pub fn verdict(
    objective: &Objective,
    p99_ms: Option<f64>,
    failed_share: f64,
    ramp: bool,
) -> Option<&'static str> {
    if ramp {
        return None;
    }
    let p99 = p99_ms?;
    Some(if met(Bounds::of(objective), p99, failed_share) {
        "met"
    } else {
        "breached"
    })
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

    #[test]
    fn judges_both_bounds() {
        let o = objective();
        assert_eq!(verdict(&o, Some(120.0), 0.0, false), Some("met"));
        assert_eq!(verdict(&o, Some(500.0), 0.01, false), Some("met"));
        assert_eq!(verdict(&o, Some(501.0), 0.0, false), Some("breached"));
        assert_eq!(verdict(&o, Some(10.0), 0.02, false), Some("breached"));
        assert_eq!(verdict(&o, None, 0.0, false), None);
        assert_eq!(verdict(&o, Some(10.0), 0.0, true), None);
    }

    #[test]
    fn a_run_exactly_at_both_bounds_meets_the_objective() {
        let o = objective();
        // 1 failure in 100 is exactly 1%, as 1 in 200 is exactly 0.5%.
        assert_eq!(verdict(&o, Some(500.0), 1.0 / 100.0, false), Some("met"));
        assert_eq!(verdict(&o, Some(500.0), 0.0, false), Some("met"));
        assert_eq!(verdict(&o, Some(0.0), 1.0 / 100.0, false), Some("met"));
        let half = Objective {
            error_rate: Percent { percent: 0.5 },
            ..objective()
        };
        assert_eq!(verdict(&half, Some(500.0), 1.0 / 200.0, false), Some("met"));
        // Just above either bound breaches.
        assert_eq!(verdict(&o, Some(500.001), 0.0, false), Some("breached"));
        assert_eq!(
            verdict(&o, Some(500.0), 2.0 / 199.0, false),
            Some("breached")
        );
        assert!(met(Bounds::of(&o), 500.0, 0.01));
    }
}
