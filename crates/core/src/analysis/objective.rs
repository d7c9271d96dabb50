//! The objective's verdict on a run's measured phase: met or breached.

use crate::plan::model::Objective;

/// `met` when the measured phase's p99 is under the bound and its failed share under the
/// error-rate bound, `breached` otherwise; None when there is nothing to judge (no measured
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
    let met = p99 <= objective.p99.millis as f64 && failed_share <= objective.error_rate.fraction();
    Some(if met { "met" } else { "breached" })
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
}
