//! The load generator's memory, seen before a run: how many requests a profile may keep in
//! flight, and whether the load generator's memory cap holds them.
//!
//! In an open model the requests in flight are the arrival rate times the latency (Little's
//! law). Two figures matter:
//! - **at the objective**: every request takes the p99 bound, with the 2× headroom the
//!   load's pre-allocation uses (`spec::load`): the generator needs this much memory for
//!   the system to be measured up to the objective at all;
//! - **at the timeout**: every request takes the timeout, `clamp(10 × p99, 1 s, 60 s)`, as
//!   past a knee: the most `maxVUs` (or connections) allows.
//!
//! Each generator's memory is modelled as a base, plus a cost per arrival per second (k6
//! keeps about a second of its samples and their output buffered: 77 MiB at 100/s, 326 MiB
//! at 1,000/s against a fast target with a handful of VUs busy), plus a cost per request in
//! flight (a k6 VU, a feedbench-load connection). The three are fitted to the figures of
//! `cargo bench --bench load` in docs/performance.md ("Load generators": the uncapped runs
//! at 100 and 1,000/s and the memory runs at 50 and 250/s with every response 2 s late).

use super::model::{LoadGeneratorKind, Plan, Profile};
use super::units::Rate;

/// What a generator's memory is made of, in bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Footprint {
    /// Resident memory with nothing in flight.
    pub base: f64,
    /// Added per arrival per second of the schedule.
    pub per_rate: f64,
    /// Added per request in flight: a VU for k6, an open connection for feedbench-load.
    pub per_request: f64,
    /// What one request in flight is called in the generator's own words.
    pub unit: &'static str,
}

/// The measured footprints (docs/performance.md, "Load generators").
pub fn of(kind: LoadGeneratorKind) -> Footprint {
    match kind {
        LoadGeneratorKind::K6 => Footprint {
            base: 49.6 * MIB,
            per_rate: 0.275 * MIB,
            per_request: 90.0 * KIB,
            unit: "VU",
        },
        LoadGeneratorKind::Native => Footprint {
            base: 2.5 * MIB,
            per_rate: 0.1 * KIB,
            per_request: 6.1 * KIB,
            unit: "connection",
        },
    }
}

const KIB: f64 = 1024.0;
const MIB: f64 = 1024.0 * 1024.0;

impl Footprint {
    /// The memory a load at `rate` arrivals per second with `in_flight` requests needs.
    pub fn bytes(&self, rate: f64, in_flight: f64) -> f64 {
        self.base + self.per_rate * rate + self.per_request * in_flight
    }
}

/// The highest rate a profile schedules, in arrivals per second; a rate taken from a
/// ramp's saturation is bounded by that ramp's `max` (the most it can be).
pub fn highest_rate(plan: &Plan, profile: &Profile) -> Option<f64> {
    let rate = |r: &Rate| match r {
        Rate::Fixed(v) => Some(*v),
        Rate::OfSaturation { share, profile } => {
            let ramp = plan.profiles.get(profile.as_str())?;
            let (_, max) = ramp.rates().into_iter().find(|(f, _)| *f == "max")?;
            match max {
                Rate::Fixed(m) => Some(m * share.fraction()),
                Rate::OfSaturation { .. } => None,
            }
        }
    };
    let rates = profile.rates();
    let highest = rates
        .iter()
        .filter_map(|(_, r)| rate(r))
        .fold(f64::NAN, f64::max);
    let highest = match profile {
        Profile::Diurnal { peak, .. } => highest * peak.fraction().max(1.0),
        _ => highest,
    };
    highest.is_finite().then_some(highest)
}

/// Requests in flight at `rate` when every request takes `latency_s`.
pub fn in_flight(rate: f64, latency_s: f64) -> f64 {
    (rate * latency_s).ceil()
}

/// The request timeout the load uses for a p99 bound (`spec::load::size_vus`).
pub fn timeout_s(p99_s: f64) -> f64 {
    (p99_s * 10.0).clamp(1.0, 60.0)
}
