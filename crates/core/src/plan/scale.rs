//! A plan shortened by a scale in (0, 1], for a pilot: every duration that makes a run long
//! is multiplied by it, and the result is kept valid (docs/plan.md, "Scaling a plan for a
//! pilot"). Pure: `scale` maps a plan to a plan; `scale_loaded` also validates the result
//! with the validation `feedbench plan` uses, placing findings at the original file's values.
//!
//! The rules, in whole milliseconds (the model's unit), never rounding a nonzero to 0:
//!
//! - a profile's lengths (`step-duration`, `duration` of constant and soak, `period` of
//!   diurnal) are rounded up, and kept at least 1 s (a length already under 1 s is kept);
//! - a warm-up is rounded up, at least 1 ms, and kept shorter than what it warms (a ramp's
//!   step, the duration, the period) when it was: at most that length less 1 ms;
//! - a fault's `at`, `duration` and `observe` are rounded down (so they still fit in the
//!   measured phase they fitted in), at least 1 ms each;
//! - the objective's window is tied to the ramps' steps (each step is judged over its
//!   windows): in a plan with a step ramp it is scaled and rounded up, at least 1 s (the
//!   validation's floor), and at most the shortest scaled step when it was at most the
//!   shortest step; a plan without a step ramp keeps its window.
//!
//! Nothing else changes: rates, caps, grace periods, latencies, the analysis settings. A
//! pilot may also run its own number of repetitions (`pilot_loaded`, `Repetitions`).

use std::fmt;

use super::diagnostic::Severity;
use super::load::{place, LoadError, LoadedPlan};
use super::model::{Plan, Profile};
use super::units::Duration;
use super::validate::{validate, Context};
use super::yaml::{parse, Positions};

/// A scale in (0, 1].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale(f64);

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScaleError {
    #[error("--scale: `{0}` is not a number; give a fraction in (0, 1], e.g. 0.25")]
    NotANumber(String),
    #[error("--scale: {0} is not in (0, 1]; give a fraction above 0 and at most 1, e.g. 0.25")]
    OutOfRange(String),
    #[error("--repetitions: `{0}` is not a whole number; give at least 2, e.g. 3")]
    NotACount(String),
    #[error("--repetitions: {0} is too few: a spread across repetitions needs at least 2 values; give e.g. 3")]
    TooFewRepetitions(u32),
}

/// The fewest repetitions a pilot may run: a spread across repetitions needs two values.
pub const LEAST_REPETITIONS: u32 = 2;

/// The repetitions a pilot runs of each arm in place of the plan's: at least
/// [`LEAST_REPETITIONS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repetitions(u32);

impl Repetitions {
    pub fn get(self) -> u32 {
        self.0
    }
}

impl std::str::FromStr for Repetitions {
    type Err = ScaleError;
    fn from_str(s: &str) -> Result<Repetitions, ScaleError> {
        let k: u32 = s
            .trim()
            .parse()
            .map_err(|_| ScaleError::NotACount(s.to_string()))?;
        if k < LEAST_REPETITIONS {
            return Err(ScaleError::TooFewRepetitions(k));
        }
        Ok(Repetitions(k))
    }
}

impl Scale {
    pub const FULL: Scale = Scale(1.0);

    pub fn new(f: f64) -> Result<Scale, ScaleError> {
        if f.is_finite() && f > 0.0 && f <= 1.0 {
            Ok(Scale(f))
        } else {
            Err(ScaleError::OutOfRange(f.to_string()))
        }
    }

    pub fn get(self) -> f64 {
        self.0
    }
}

impl std::str::FromStr for Scale {
    type Err = ScaleError;
    fn from_str(s: &str) -> Result<Scale, ScaleError> {
        let f: f64 = s
            .trim()
            .parse()
            .map_err(|_| ScaleError::NotANumber(s.to_string()))?;
        Scale::new(f).map_err(|_| ScaleError::OutOfRange(s.trim().to_string()))
    }
}

impl fmt::Display for Scale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Below this much of a millisecond, a product is taken as whole (0.1 × 30000 is
/// 3000.0000000000005 in binary floating point, and is 3000 ms).
const SLACK: f64 = 1e-6;
const ONE_SECOND: u64 = 1000;

fn up(d: Duration, s: Scale) -> u64 {
    ((d.millis as f64 * s.0 - SLACK).ceil().max(0.0)) as u64
}

fn down(d: Duration, s: Scale) -> u64 {
    ((d.millis as f64 * s.0 + SLACK).floor().max(0.0)) as u64
}

/// A profile's length: rounded up, at least 1 s unless it was shorter.
fn length(d: Duration, s: Scale) -> Duration {
    Duration {
        millis: up(d, s).max(ONE_SECOND.min(d.millis)),
    }
}

/// A warm-up before `of` (scaled to `of_scaled`): rounded up, at least 1 ms, and shorter
/// than what it warms when it was.
fn warmup(w: Duration, of: Duration, of_scaled: Duration, s: Scale) -> Duration {
    if w.millis == 0 {
        return w;
    }
    let mut m = up(w, s).max(1);
    if w < of && m >= of_scaled.millis {
        m = of_scaled.millis.saturating_sub(1).max(1);
    }
    Duration { millis: m }
}

/// A fault's timing: rounded down, at least 1 ms unless it was 0.
fn timing(d: Duration, s: Scale) -> Duration {
    Duration {
        millis: if d.millis == 0 { 0 } else { down(d, s).max(1) },
    }
}

/// The plan with every duration that makes a run long multiplied by `s` (module doc).
pub fn scale(plan: &Plan, s: Scale) -> Plan {
    let mut out = plan.clone();
    let mut steps = Vec::new();
    for p in out.profiles.values_mut() {
        match p {
            Profile::StepRamp {
                step_duration,
                warmup: w,
                ..
            } => {
                let scaled = length(*step_duration, s);
                steps.push((*step_duration, scaled));
                *w = warmup(*w, *step_duration, scaled, s);
                *step_duration = scaled;
            }
            Profile::Constant {
                duration,
                warmup: w,
                ..
            }
            | Profile::Soak {
                duration,
                warmup: w,
                ..
            } => {
                let scaled = length(*duration, s);
                *w = warmup(*w, *duration, scaled, s);
                *duration = scaled;
            }
            Profile::Diurnal {
                period, warmup: w, ..
            } => {
                let scaled = length(*period, s);
                *w = warmup(*w, *period, scaled, s);
                *period = scaled;
            }
        }
    }
    for f in out.faults.values_mut() {
        f.at = timing(f.at, s);
        f.duration = timing(f.duration, s);
        f.observe = timing(f.observe, s);
    }
    if let (Some(shortest), Some(shortest_scaled)) = (
        steps.iter().map(|(o, _)| *o).min(),
        steps.iter().map(|(_, n)| *n).min(),
    ) {
        let window = plan.study.objective.window;
        let mut m = up(window, s).max(ONE_SECOND);
        if window <= shortest {
            m = m.min(shortest_scaled.millis.max(ONE_SECOND));
        }
        out.study.objective.window = Duration { millis: m };
    }
    out
}

/// `loaded` (read from `source`) scaled by `s` and validated as `feedbench plan` validates:
/// the scaled plan, with the plan file's hash (the file is what was run) and the scaled
/// plan's warnings; or its errors, placed at the values of the file they were scaled from.
pub fn scale_loaded(
    loaded: &LoadedPlan,
    source: &str,
    s: Scale,
    host_cores: Option<f64>,
) -> Result<LoadedPlan, LoadError> {
    pilot_loaded(loaded, source, s, None, host_cores)
}

/// `scale_loaded`, with `repetitions` of each arm in place of the plan's when given (a
/// pilot's `--repetitions`), validated at that count.
pub fn pilot_loaded(
    loaded: &LoadedPlan,
    source: &str,
    s: Scale,
    repetitions: Option<Repetitions>,
    host_cores: Option<f64>,
) -> Result<LoadedPlan, LoadError> {
    let mut plan = scale(&loaded.plan, s);
    if let Some(r) = repetitions {
        plan.matrix.repetitions = r.get();
    }
    let dir = loaded.base_dir.clone();
    let exists = move |rel: &str| dir.join(rel).exists();
    let ctx = Context {
        host_cores,
        exists: Some(&exists),
    };
    let findings = validate(&plan, &ctx);
    let positions = parse(source)
        .map(|root| Positions::index(&root))
        .unwrap_or_default();
    let diagnostics = place(&loaded.file, source, &positions, findings);
    if diagnostics.iter().any(|d| d.severity == Severity::Error) {
        return Err(LoadError::Invalid {
            file: loaded.file.clone(),
            diagnostics,
        });
    }
    Ok(LoadedPlan {
        file: loaded.file.clone(),
        base_dir: loaded.base_dir.clone(),
        plan,
        plan_hash: loaded.plan_hash.clone(),
        warnings: diagnostics,
    })
}

#[cfg(test)]
mod tests;
