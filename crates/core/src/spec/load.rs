//! The load: a profile and the workload rendered into the load generator's input (always an
//! open model): a k6 script, or feedbench-load's plan (`kind: native`), both from the same
//! schedule, route weights and seeded draws, with the arrival schedule analysis compares
//! the achieved load against.
//!
//! For feedbench-load, maxVUs below is its cap on open connections (one request in flight
//! each): the same Little's-law sizing holds, and a start that finds the cap reached is
//! dropped and counted as k6 drops an iteration with no free VU.
//!
//! VU sizing (Little's law: requests in flight = arrival rate × latency), with `R₀` the
//! schedule's highest rate over its first `PRE_ALLOCATION_S` seconds, `R` its highest rate
//! overall, `p99` the objective's bound and `T` the request timeout:
//!
//! - request timeout `T = clamp(10 × p99, 1 s, 60 s)`; a slower request fails with k6's
//!   timeout error (far past the objective either way);
//! - `preAllocatedVUs = ceil(R₀ × p99 × 2) + 5`: twice the VUs in flight when every
//!   request takes the p99 bound at the rates the run starts with. A VU costs the load
//!   generator memory (about 3 MB) from its allocation, so they are sized from the start
//!   of the schedule, not its end: a ramp with a `max` far above any knee costs nothing up
//!   front, and k6 allocates more VUs as the rate rises (a healthy system needs few more
//!   than the rate × its latency);
//! - `maxVUs = max(preAllocatedVUs, ceil(R × T) + 5)`: enough for every request to take
//!   the full timeout, so k6 drops an iteration only when the system is slower than that
//!   (or the plan's `max-in-flight`, `LoadSpec::max_vus`, caps it: a client with a bounded
//!   pool). It is a ceiling, allocated only as the requests in flight need it.

mod schedule;
mod script;

use indexmap::IndexMap;

pub use schedule::{Schedule, Stage, TIME_UNIT_S};
pub use script::{segments, Segment, MAX_ID, NATIVE_EXECUTOR};

use crate::plan::model::{LoadGeneratorKind, Objective, Profile, Workload};
use crate::plan::units::{Name, Rate};
use crate::spec::topology::FileSpec;

/// The VUs added to every Little's-law estimate.
pub const VU_FLOOR: u32 = 5;

/// The start of the schedule whose highest rate sizes the pre-allocated VUs.
pub const PRE_ALLOCATION_S: f64 = 60.0;

#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error("the rate \"{rate}\" needs the measured saturation of profile `{profile}`, which is not known")]
    MissingSaturation { rate: String, profile: String },
    #[error("the profile's {field} resolves to {rate} arrivals per second; it must be a finite number above 0")]
    BadRate { field: &'static str, rate: f64 },
    #[error("the schedule would need {stages} stages; make the steps or the period longer")]
    TooManyStages { stages: u64 },
    #[error(
        "route `{route}` uses the placeholder {{{id}}}, which names no ID range in workload.ids"
    )]
    UnknownId { route: String, id: String },
    #[error("ID range `{id}` ({min} to {max}) must have min ≤ max ≤ {MAX_ID} (JavaScript's largest exact integer)")]
    BadIdRange { id: String, min: u64, max: u64 },
    #[error("the workload has no route with a weight above 0")]
    EmptyWorkload,
    #[error("the target \"{0}\" is not an http:// or https:// URL")]
    BadBaseUrl(String),
    #[error("the objective's p99 bound must be above 0")]
    BadObjective,
    #[error("cannot render the load script: {0}")]
    Template(#[source] minijinja::Error),
    #[error("cannot serialise the load script's data: {0}")]
    Json(#[source] serde_json::Error),
}

/// What a run's load is made of.
pub struct LoadSpec<'a> {
    pub profile: &'a Profile,
    pub workload: &'a Workload,
    pub objective: &'a Objective,
    /// Measured saturation (arrivals per second) of step-ramp profiles, by profile name,
    /// for rates written as "70% of ramp".
    pub saturation: &'a IndexMap<Name, f64>,
    /// The target, e.g. `http://balancer:8080`; routes' paths are appended to it.
    pub base_url: &'a str,
    /// Seeds the route and ID draws: the same seed sends the same request sequence.
    pub seed: u64,
    /// A ceiling on maxVUs: the plan's `max-in-flight`; none by default.
    pub max_vus: Option<u32>,
    /// Which program runs the load.
    pub generator: LoadGeneratorKind,
    /// feedbench-load only: a start later than this is dropped and counted.
    pub max_lag_ms: u64,
}

/// A rendered load and its schedule. Times count from the k6 scenario's start, which k6
/// reports in its output (`requests::LoadSummary::scenario_start_ns`).
#[derive(Debug, Clone)]
pub struct LoadScript {
    /// Which program runs the load.
    pub generator: LoadGeneratorKind,
    /// The load generator's input: the k6 script (JavaScript), or feedbench-load's plan
    /// (JSON), to be placed at `commands::input_path(generator)`.
    pub script: String,
    /// The profile kind: step-ramp, constant, diurnal or soak.
    pub kind: &'static str,
    /// The k6 executor (constant-arrival-rate or ramping-arrival-rate), or
    /// `NATIVE_EXECUTOR` for feedbench-load.
    pub executor: &'static str,
    /// The warm-up's length: requests that start before this are not evaluated.
    pub measured_start_s: f64,
    /// The whole arrival stream, warm-up included.
    pub duration_s: f64,
    /// Iterations (one request each) the schedule starts over the whole run.
    pub scheduled_arrivals: f64,
    pub pre_allocated_vus: u32,
    pub max_vus: u32,
    /// Each request's timeout.
    pub request_timeout_s: f64,
    /// The arrival rate over time, as k6 runs it.
    pub schedule: Schedule,
}

impl LoadScript {
    /// The stages as `(duration in seconds, target arrivals per second)`, starting from
    /// `schedule.start_rate`; a zero duration is an instant jump.
    pub fn stages(&self) -> Vec<(f64, f64)> {
        self.schedule
            .stages
            .iter()
            .map(|s| (s.duration_s, s.target))
            .collect()
    }

    /// The input as a file for the load-generator container.
    pub fn file(&self) -> FileSpec {
        FileSpec {
            path: crate::spec::commands::input_path(self.generator).into(),
            sha256: crate::plan::hash::sha256_hex(self.script.as_bytes()),
            contents: self.script.clone().into_bytes(),
        }
    }
}

/// The scheduled arrival rate (per second) `t_s` seconds after the scenario's start.
pub fn scheduled_rate_at(load: &LoadScript, t_s: f64) -> f64 {
    load.schedule.rate_at(t_s)
}

/// The scheduled arrivals per second over `[a_s, b_s)` seconds after the scenario's start:
/// what the live display sets beside the rate achieved over the same seconds (at a step's
/// edge or past the schedule's end the instantaneous rate would compare other seconds).
pub fn scheduled_rate_between(load: &LoadScript, a_s: f64, b_s: f64) -> f64 {
    if b_s > a_s {
        load.schedule.arrivals_between(a_s, b_s) / (b_s - a_s)
    } else {
        load.schedule.rate_at(a_s)
    }
}

/// A rate of the plan in arrivals per second.
pub fn resolve(rate: &Rate, saturation: &IndexMap<Name, f64>) -> Result<f64, ScriptError> {
    match rate {
        Rate::Fixed(v) => Ok(*v),
        Rate::OfSaturation { share, profile } => saturation
            .get(profile)
            .map(|s| s * share.fraction())
            .ok_or_else(|| ScriptError::MissingSaturation {
                rate: rate.to_string(),
                profile: profile.to_string(),
            }),
    }
}

/// `(preAllocatedVUs, maxVUs, timeout in ms)` for the highest rate of the schedule's start
/// and of the whole schedule, and a p99 bound.
pub fn size_vus(start_rate: f64, max_rate: f64, p99_s: f64, cap: Option<u32>) -> (u32, u32, u64) {
    let timeout_ms = (p99_s * 10_000.0).round().clamp(1_000.0, 60_000.0) as u64;
    let vus = |x: f64| (x.ceil().clamp(0.0, 1e6) as u32).saturating_add(VU_FLOOR);
    let pre = vus(start_rate.min(max_rate) * p99_s * 2.0);
    let mut max = pre.max(vus(max_rate * timeout_ms as f64 / 1000.0));
    if let Some(cap) = cap {
        max = max.min(cap.max(1));
    }
    (pre.min(max), max, timeout_ms)
}

/// Renders the load of one run.
pub fn render(spec: &LoadSpec) -> Result<LoadScript, ScriptError> {
    let url = spec.base_url;
    if !(url.starts_with("http://") || url.starts_with("https://"))
        || url.contains(char::is_whitespace)
    {
        return Err(ScriptError::BadBaseUrl(url.to_string()));
    }
    let p99_s = spec.objective.p99.as_secs_f64();
    if p99_s <= 0.0 {
        return Err(ScriptError::BadObjective);
    }
    let rates = spec.profile.rates();
    let rate = |field: &'static str| -> Result<f64, ScriptError> {
        let r = rates.iter().find(|(f, _)| *f == field).map(|(_, r)| *r);
        resolve(
            r.ok_or(ScriptError::BadRate {
                field,
                rate: f64::NAN,
            })?,
            spec.saturation,
        )
    };
    let schedule = schedule::of_profile(spec.profile, &rate)?;
    let (pre_allocated_vus, max_vus, timeout_ms) = size_vus(
        schedule.max_rate_before(PRE_ALLOCATION_S),
        schedule.max_rate(),
        p99_s,
        spec.max_vus,
    );
    let params = script::ScriptParams {
        kind: spec.profile.kind(),
        base_url: url,
        seed: spec.seed,
        schedule: &schedule,
        pre_allocated_vus,
        max_vus,
        timeout_ms,
    };
    let (script, executor) = match spec.generator {
        LoadGeneratorKind::K6 => script::render(spec.workload, &params)?,
        LoadGeneratorKind::Native => (
            script::render_native(spec.workload, &params, spec.max_lag_ms)?,
            NATIVE_EXECUTOR,
        ),
    };
    Ok(LoadScript {
        generator: spec.generator,
        script,
        kind: spec.profile.kind(),
        executor,
        measured_start_s: spec.profile.warmup().as_secs_f64(),
        duration_s: schedule.duration_s(),
        scheduled_arrivals: schedule.total_arrivals(),
        pre_allocated_vus,
        max_vus,
        request_timeout_s: timeout_ms as f64 / 1000.0,
        schedule,
    })
}

#[cfg(test)]
mod tests;
