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
//! Each generator's memory is modelled as a base plus a cost per request in flight (a k6
//! VU, a feedbench-load connection), both measured by `scripts/bench-load` and written in
//! docs/performance.md, whose figures these constants are.

use super::model::{LoadGeneratorKind, Plan, Profile};
use super::units::Rate;

/// What a generator's memory is made of, in bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Footprint {
    /// Resident memory with nothing in flight.
    pub base: f64,
    /// Added per request in flight: a VU for k6, an open connection for feedbench-load.
    pub per_request: f64,
    /// What one request in flight is called in the generator's own words.
    pub unit: &'static str,
}

/// The measured footprints (docs/performance.md, "Load generators").
pub fn of(kind: LoadGeneratorKind) -> Footprint {
    match kind {
        LoadGeneratorKind::K6 => Footprint {
            base: 40.0 * MIB,
            per_request: 2.8 * MIB,
            unit: "VU",
        },
        LoadGeneratorKind::Native => Footprint {
            base: 4.0 * MIB,
            per_request: 40.0 * KIB,
            unit: "connection",
        },
    }
}

const KIB: f64 = 1024.0;
const MIB: f64 = 1024.0 * 1024.0;

impl Footprint {
    /// The memory `in_flight` requests need.
    pub fn bytes(&self, in_flight: f64) -> f64 {
        self.base + self.per_request * in_flight
    }

    /// How many requests in flight fit in `cap` bytes.
    pub fn holds(&self, cap: f64) -> f64 {
        ((cap - self.base) / self.per_request).max(0.0).floor()
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
