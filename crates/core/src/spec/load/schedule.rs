//! The arrival schedule of a profile: a piecewise-linear arrival rate, as k6's arrival-rate
//! executors run it (rates quantised the way the script hands them to k6).

use serde::Serialize;

use super::ScriptError;
use crate::plan::model::Profile;
use crate::plan::units::Duration;

/// k6 takes rates as integers per `timeUnit`; with a unit of 1000 s a rate is exact to
/// 0.001 arrivals per second.
pub const TIME_UNIT_S: u64 = 1000;

/// More stages than this is a plan mistake (a ramp with a tiny step), not a schedule.
const MAX_STAGES: usize = 10_000;

/// One stage: the rate moves linearly from the previous stage's target (or the start rate)
/// to `target` over `duration_s`; a stage of zero duration is an instant jump.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Stage {
    pub duration_s: f64,
    /// Arrivals per second at the end of the stage.
    pub target: f64,
}

/// The whole arrival stream, warm-up included, from the scenario's start (t = 0).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Schedule {
    /// Arrivals per second at t = 0.
    pub start_rate: f64,
    pub stages: Vec<Stage>,
}

/// A rate as k6 will run it: per second, rounded to the 1/TIME_UNIT_S resolution.
pub fn quantise(rate: f64) -> f64 {
    (rate * TIME_UNIT_S as f64).round() / TIME_UNIT_S as f64
}

/// The same rate in k6's units (arrivals per TIME_UNIT_S).
pub fn per_unit(rate: f64) -> u64 {
    (rate * TIME_UNIT_S as f64).round().max(0.0) as u64
}

impl Schedule {
    fn hold(rate: f64, duration: Duration) -> Schedule {
        Schedule {
            start_rate: rate,
            stages: vec![Stage {
                duration_s: duration.as_secs_f64(),
                target: rate,
            }],
        }
    }

    pub fn duration_s(&self) -> f64 {
        self.stages.iter().map(|s| s.duration_s).sum()
    }

    pub fn max_rate(&self) -> f64 {
        self.stages
            .iter()
            .map(|s| s.target)
            .fold(self.start_rate, f64::max)
    }

    /// The highest rate scheduled before `t_s` seconds after the scenario's start (a jump
    /// at `t_s` itself is after it).
    pub fn max_rate_before(&self, t_s: f64) -> f64 {
        self.pieces()
            .filter(|(t0, _, _, _)| *t0 < t_s)
            .map(|(t0, t1, r0, r1)| {
                if t1 <= t_s || t1 == t0 {
                    r0.max(r1)
                } else {
                    r0.max(r0 + (r1 - r0) * (t_s - t0) / (t1 - t0))
                }
            })
            .fold(self.start_rate, f64::max)
    }

    /// Whether the rate never changes (k6's constant-arrival-rate can run it).
    pub fn is_constant(&self) -> bool {
        self.stages.iter().all(|s| s.target == self.start_rate)
    }

    /// `(start, end, rate at start, rate at end)` of each stage.
    fn pieces(&self) -> impl Iterator<Item = (f64, f64, f64, f64)> + '_ {
        let mut t = 0.0;
        let mut rate = self.start_rate;
        self.stages.iter().map(move |s| {
            let piece = (t, t + s.duration_s, rate, s.target);
            t += s.duration_s;
            rate = s.target;
            piece
        })
    }

    /// The scheduled arrival rate at `t_s` seconds after the scenario's start; 0 outside
    /// the schedule. At an instant jump the rate after it counts.
    pub fn rate_at(&self, t_s: f64) -> f64 {
        for (t0, t1, r0, r1) in self.pieces() {
            if t_s >= t0 && t_s < t1 {
                return r0 + (r1 - r0) * (t_s - t0) / (t1 - t0);
            }
        }
        0.0
    }

    /// Scheduled arrivals between `a_s` and `b_s` (the integral of the rate).
    pub fn arrivals_between(&self, a_s: f64, b_s: f64) -> f64 {
        let mut total = 0.0;
        for (t0, t1, r0, r1) in self.pieces() {
            let (lo, hi) = (a_s.max(t0), b_s.min(t1));
            if hi > lo {
                let at = |t: f64| r0 + (r1 - r0) * (t - t0) / (t1 - t0);
                total += (at(lo) + at(hi)) / 2.0 * (hi - lo);
            }
        }
        total
    }

    /// Scheduled arrivals over the whole schedule.
    pub fn total_arrivals(&self) -> f64 {
        self.arrivals_between(0.0, self.duration_s())
    }
}

fn check_rate(field: &'static str, rate: f64, allow_zero: bool) -> Result<f64, ScriptError> {
    let q = quantise(rate);
    if rate.is_finite() && rate >= 0.0 && (q > 0.0 || allow_zero) {
        Ok(q)
    } else {
        Err(ScriptError::BadRate { field, rate })
    }
}

/// The schedule of `profile`, its rates resolved by `rate` (field name → arrivals/s).
pub fn of_profile(
    profile: &Profile,
    rate: &dyn Fn(&'static str) -> Result<f64, ScriptError>,
) -> Result<Schedule, ScriptError> {
    let warmup = profile.warmup();
    let mut schedule = match profile {
        Profile::Constant { duration, .. } | Profile::Soak { duration, .. } => {
            let r = check_rate("rate", rate("rate")?, false)?;
            let total = Duration {
                millis: warmup.millis.saturating_add(duration.millis),
            };
            return Ok(Schedule::hold(r, total));
        }
        Profile::StepRamp {
            step,
            step_duration,
            ..
        } => {
            let start = check_rate("start", rate("start")?, false)?;
            let max = check_rate("max", rate("max")?, false)?;
            if !(step.is_finite() && *step > 0.0) {
                return Err(ScriptError::BadRate {
                    field: "step",
                    rate: *step,
                });
            }
            let steps = Profile::ramp_steps(start, *step, max);
            if steps as usize > MAX_STAGES / 2 {
                return Err(ScriptError::TooManyStages { stages: steps });
            }
            let mut s = Schedule {
                start_rate: start,
                stages: Vec::new(),
            };
            for i in 0..steps {
                let r = quantise(start + i as f64 * step);
                if i > 0 {
                    s.stages.push(Stage {
                        duration_s: 0.0,
                        target: r,
                    });
                }
                s.stages.push(Stage {
                    duration_s: step_duration.as_secs_f64(),
                    target: r,
                });
            }
            s
        }
        Profile::Diurnal {
            period,
            peak,
            trough,
            cycles,
            ..
        } => {
            let base = check_rate("base", rate("base")?, false)?;
            diurnal(base, *period, trough.fraction(), peak.fraction(), *cycles)?
        }
    };
    if warmup.millis > 0 {
        let first = Stage {
            duration_s: warmup.as_secs_f64(),
            target: schedule.start_rate,
        };
        schedule.stages.insert(0, first);
    }
    Ok(schedule)
}

/// Segments per period approximating the cosine (linear pieces, error below 0.3% of the
/// swing), fewer for short periods so that a segment lasts at least a second.
fn segments(period: Duration) -> u64 {
    (period.millis / 1000).clamp(4, 48)
}

/// `base × (trough + (peak − trough) × (1 − cos 2πt/period) / 2)`: a day starting and
/// ending at its trough, peaking half-way.
fn diurnal(
    base: f64,
    period: Duration,
    trough: f64,
    peak: f64,
    cycles: u32,
) -> Result<Schedule, ScriptError> {
    let n = segments(period);
    if period.millis == 0 || n.saturating_mul(u64::from(cycles)) as usize > MAX_STAGES {
        return Err(ScriptError::TooManyStages {
            stages: n.saturating_mul(u64::from(cycles)),
        });
    }
    let at = |i: u64| {
        let phase = std::f64::consts::TAU * i as f64 / n as f64;
        check_rate(
            "base",
            base * (trough + (peak - trough) * (1.0 - phase.cos()) / 2.0),
            true,
        )
    };
    let mut s = Schedule {
        start_rate: at(0)?,
        stages: Vec::new(),
    };
    for _ in 0..cycles {
        let mut prev_ms = 0;
        for i in 1..=n {
            // Whole milliseconds, so the stages add up to the period exactly.
            let ms = period.millis * i / n;
            s.stages.push(Stage {
                duration_s: (ms - prev_ms) as f64 / 1000.0,
                target: at(i)?,
            });
            prev_ms = ms;
        }
    }
    Ok(s)
}
