//! Repetitions sized from a pilot (docs/analysis.md, "Sizing repetitions from a pilot"):
//! each headline figure's spread across the pilot's repetitions, per arm, and by simulation
//! from that spread the repetitions per arm at which the report's own exact test would show
//! the plan's smallest effect (`matrix.smallest-effect`) in at least [`POWER`] of studies,
//! at the strictest level Holm's correction can hold a comparison to in the plan's report.
//! The pilot writes it as `sizing.json` in its area; `feedbench plan` reads the newest one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::comparison::{self, exact, ALPHA, HEADLINE};
use super::rows::{Bound, Row};
use super::summary::median;
use crate::plan::expand::{RunSpec, SplitMix64};
use crate::plan::model::{Plan, Profile};

/// The version of `sizing.json`.
pub const FORMAT_VERSION: u32 = 1;
/// The share of simulated studies that must show the effect.
pub const POWER: f64 = 0.8;
/// Simulated studies per number of repetitions tried.
pub const SIMULATIONS: usize = 1000;
/// The most repetitions per arm tried; beyond, "more than".
pub const MOST: usize = 50;
/// The fewest values a spread is taken of (the fewest repetitions a pilot may run).
pub const LEAST_PILOT: u32 = crate::plan::scale::LEAST_REPETITIONS;
/// Every figure's simulation starts from this seed, so a sizing is the same every time.
const SEED: u64 = 46;

/// `sizing.json`: a pilot's spreads, and the repetitions they call for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sizing {
    pub format_version: u32,
    /// The pilot's number (`pilots/<NNN>/`).
    pub pilot: u32,
    /// The plan file's hash as the pilot ran it.
    pub plan_hash: String,
    /// The repetitions the pilot ran of each arm.
    pub repetitions: u32,
    /// Whether the plan's order pairs arms by round (the signed-rank test) or not (rank sums).
    pub paired: bool,
    /// The comparisons the plan's report makes on the figures the pilot measured.
    pub comparisons: usize,
    /// [`ALPHA`] over `comparisons`: the level the first step of Holm's procedure asks.
    pub level: f64,
    /// The plan's smallest effect when the pilot ran, as a fraction (0.1 for 10%).
    pub smallest_effect: Option<f64>,
    pub spreads: Vec<Spread>,
    /// The pilot's runs that stand and could not be read, each with the reason.
    #[serde(default)]
    pub left_out: Vec<String>,
}

/// One arm on one headline figure, profile and fault.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub metric: String,
    pub definition: String,
    pub container: String,
    pub profile: String,
    pub fault: String,
    pub arm: String,
    /// The pilot's values, by repetition.
    pub values: Vec<f64>,
    pub median: Option<f64>,
    /// The sample standard deviation of the values' natural logarithms: about the relative
    /// spread (0.05 is about 5 %).
    pub log_sd: Option<f64>,
    /// Why there is no spread (fewer than two values, a bound, a value at or below 0).
    pub why_not: Option<String>,
    /// The repetitions per arm the smallest effect needs, when there are a spread and an effect.
    pub needed: Option<Needed>,
}

/// How many repetitions per arm show the effect in at least [`POWER`] of simulated studies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Needed {
    Repetitions(usize),
    /// Not even [`MOST`] do.
    MoreThan(usize),
}

impl std::fmt::Display for Needed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Needed::Repetitions(n) => write!(f, "{n}"),
            Needed::MoreThan(n) => write!(f, "more than {n}"),
        }
    }
}

impl Needed {
    /// Whether `repetitions` fall short of it.
    pub fn exceeds(self, repetitions: u32) -> bool {
        match self {
            Needed::Repetitions(n) => n > repetitions as usize,
            Needed::MoreThan(_) => true,
        }
    }
}

/// The level the first step of Holm's procedure holds the smallest p of `comparisons` to
/// (a plan comparing nothing yet is sized as if it made one comparison).
pub fn level(comparisons: usize) -> f64 {
    ALPHA / comparisons.max(1) as f64
}

/// Each arm's values on each headline figure, profile and fault, with its spread.
pub fn spreads(rows: &[Row]) -> Vec<Spread> {
    type Slot = (BTreeMap<u32, f64>, Option<String>);
    let mut groups: BTreeMap<(usize, String, String, String), Slot> = BTreeMap::new();
    for r in rows {
        let Some((f, arm)) = comparison::headline_arm(r) else {
            continue;
        };
        let (values, why) = groups
            .entry((f, r.key.profile.clone(), r.key.fault.clone(), arm))
            .or_default();
        match (r.value, r.bound()) {
            (Some(v), Bound::Exact) if v > 0.0 => {
                values.insert(r.key.repetition, v);
            }
            (Some(v), Bound::Exact) => *why = Some(format!("`{}` is {v}, not above 0", r.key.run)),
            (Some(_), _) => *why = Some(format!("`{}` holds only a bound", r.key.run)),
            (None, _) => *why = Some(format!("`{}` has no value ({})", r.key.run, r.note)),
        }
    }
    groups
        .into_iter()
        .map(|((f, profile, fault, arm), (values, why))| {
            let (metric, definition, container) = HEADLINE[f];
            let values: Vec<f64> = values.into_values().collect();
            let why_not = why.or_else(|| {
                (values.len() < LEAST_PILOT as usize)
                    .then(|| format!("{} value(s): a spread needs 2", values.len()))
            });
            Spread {
                metric: metric.into(),
                definition: definition.into(),
                container: container.into(),
                profile,
                fault,
                arm,
                median: median(&values),
                log_sd: why_not.is_none().then(|| log_sd(&values)),
                values,
                why_not,
                needed: None,
            }
        })
        .collect()
}

/// The sample standard deviation of the logarithms of `values` (at least two, all above 0).
fn log_sd(values: &[f64]) -> f64 {
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let mean = logs.iter().sum::<f64>() / logs.len() as f64;
    let ss: f64 = logs.iter().map(|l| (l - mean).powi(2)).sum();
    (ss / (logs.len() - 1) as f64).sqrt()
}

/// The comparisons the plan's report makes, whatever a pilot measured: on each profile and
/// fault of the plan, one per pair of the arms it runs there and per headline figure the
/// report gives such runs (`comparison::headline_figures`).
pub fn comparisons(plan: &Plan, runs: &[RunSpec]) -> usize {
    let mut arms: BTreeMap<(&str, Option<&str>), BTreeSet<&str>> = BTreeMap::new();
    for r in runs {
        arms.entry((r.profile.as_str(), r.fault.as_deref()))
            .or_default()
            .insert(r.contender.as_str());
    }
    arms.iter()
        .map(|((profile, fault), arms)| {
            let ramp = matches!(plan.profiles.get(*profile), Some(Profile::StepRamp { .. }));
            let pairs = arms.len() * arms.len().saturating_sub(1) / 2;
            pairs * comparison::headline_figures(ramp, fault.is_some())
        })
        .sum()
}

/// The level and pairing the plan `runs` come from asks of a sizing: [`level`] over its
/// [`comparisons`], and whether its order pairs arms by round.
pub fn design(plan: &Plan, runs: &[RunSpec]) -> (f64, bool) {
    (
        level(comparisons(plan, runs)),
        comparison::paired_rounds(&plan.matrix.order),
    )
}

/// What a pilot found: its spreads, each with the repetitions `effect` needs.
pub struct Pilot<'a> {
    pub number: u32,
    pub plan_hash: &'a str,
    pub plan: &'a Plan,
    /// The plan's runs (all of them, not only the pilot's): which arms each entry compares.
    pub runs: &'a [RunSpec],
}

/// The pilot's sizing from its rows.
pub fn size(pilot: &Pilot<'_>, rows: &[Row]) -> Sizing {
    let mut spreads = spreads(rows);
    let comparisons = comparisons(pilot.plan, pilot.runs);
    let (level, paired) = design(pilot.plan, pilot.runs);
    let effect = pilot.plan.matrix.smallest_effect.map(|e| e.fraction());
    if let Some(effect) = effect {
        for s in &mut spreads {
            s.needed = s.log_sd.map(|sd| needed(sd, effect, level, paired));
        }
    }
    Sizing {
        format_version: FORMAT_VERSION,
        pilot: pilot.number,
        plan_hash: pilot.plan_hash.to_string(),
        repetitions: pilot.plan.matrix.repetitions,
        paired,
        comparisons,
        level,
        smallest_effect: effect,
        spreads,
        left_out: Vec::new(),
    }
}

/// A standard normal draw (Box–Muller).
pub fn normal(rng: &mut SplitMix64) -> f64 {
    let u = |r: &mut SplitMix64| ((r.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    let (a, b) = (u(rng), u(rng));
    (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
}

/// The share of [`SIMULATIONS`] studies of `n` repetitions per arm whose exact test reaches
/// `level`: each arm's log values normal with standard deviation `sd`, one arm's shifted by
/// ln(1 + effect); paired, the test is the signed-rank test of the rounds' log ratios (no
/// round effect is assumed: a shared one would cancel), else the rank-sum test.
pub fn power(n: usize, sd: f64, effect: f64, level: f64, paired: bool) -> f64 {
    // Without spread every study has the most extreme outcome (and its draws would all tie,
    // which the exact test counts the slow way).
    if sd == 0.0 {
        return if n >= least(level, paired) { 1.0 } else { 0.0 };
    }
    let mut rng = SplitMix64::new(SEED);
    let shift = effect.ln_1p();
    let draw = |k: usize, by: f64, rng: &mut SplitMix64| -> Vec<f64> {
        (0..k).map(|_| sd * normal(rng) + by).collect()
    };
    let shown = (0..SIMULATIONS)
        .filter(|_| {
            let a = draw(n, 0.0, &mut rng);
            let b = draw(n, shift, &mut rng);
            let p = if paired {
                let d: Vec<f64> = b.iter().zip(&a).map(|(b, a)| b - a).collect();
                exact::signed_rank_p(&d).p
            } else {
                exact::rank_sum_p(&a, &b).map_or(1.0, |(p, _)| p)
            };
            p <= level
        })
        .count();
    shown as f64 / SIMULATIONS as f64
}

/// The fewest repetitions per arm whose most extreme outcome could reach `level`.
fn least(level: f64, paired: bool) -> usize {
    match paired {
        true => exact::least_n_paired(level),
        false => exact::least_n_unpaired(level),
    }
}

/// The fewest repetitions per arm with a [`power`] of at least [`POWER`], from the fewest
/// whose most extreme outcome could reach `level`, up to [`MOST`]. Power grows with n, so
/// the fewest is found by bisection: a handful of simulations, not one per n.
pub fn needed(sd: f64, effect: f64, level: f64, paired: bool) -> Needed {
    let least = least(level, paired);
    let enough = |n: usize| power(n, sd, effect, level, paired) >= POWER;
    if least > MOST || !enough(MOST) {
        return Needed::MoreThan(MOST);
    }
    // Invariant: `hi` is enough; every n below `lo` is not.
    let (mut lo, mut hi) = (least, MOST);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if enough(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Needed::Repetitions(hi)
}

/// A figure whose registered repetitions fall short of what the pilot's spread needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Shortfall<'a> {
    pub spread: &'a Spread,
    pub needed: Needed,
}

/// The spreads whose arm needs more than `repetitions` to show `effect` at `level` under
/// the `paired` test: the current plan's, which may differ from the pilot's. A spread's
/// stored `needed` is reused where the sizing was made for the same effect and design.
pub fn shortfalls(
    sizing: &Sizing,
    repetitions: u32,
    effect: f64,
    (level, paired): (f64, bool),
) -> Vec<Shortfall<'_>> {
    let same =
        sizing.smallest_effect == Some(effect) && sizing.level == level && sizing.paired == paired;
    sizing
        .spreads
        .iter()
        .filter_map(|s| {
            let needed = match (same, s.needed) {
                (true, Some(n)) => n,
                _ => needed(s.log_sd?, effect, level, paired),
            };
            needed
                .exceeds(repetitions)
                .then_some(Shortfall { spread: s, needed })
        })
        .collect()
}

/// Reads `sizing.json` from its text; an error says what is wrong in words.
pub fn parse(text: &[u8]) -> Result<Sizing, String> {
    let s: Sizing = crate::files::parse_versioned(text, FORMAT_VERSION)?;
    // What a person's edit could make of the numbers a warning is computed from.
    for sp in &s.spreads {
        if let Some(sd) = sp.log_sd.filter(|sd| !(sd.is_finite() && *sd >= 0.0)) {
            return Err(format!(
                "the spread of {} is {sd}, not a standard deviation",
                figure(sp)
            ));
        }
    }
    if let Some(e) = s.smallest_effect.filter(|e| !(*e > 0.0 && *e <= 1.0)) {
        return Err(format!(
            "its smallest effect ({e}) is not above 0 and at most 1"
        ));
    }
    // The level follows from the comparisons; a file where they disagree was edited.
    if s.level != level(s.comparisons) {
        return Err(format!(
            "its level ({}) is not {ALPHA} over its {} comparison(s) ({})",
            s.level,
            s.comparisons,
            level(s.comparisons)
        ));
    }
    Ok(s)
}

/// The newest pilot of the study in `study_dir` that holds a sizing: its area and its
/// sizing, or what is wrong with its `sizing.json`; `None` without one.
pub fn newest(study_dir: &Path) -> Option<(PathBuf, Result<Sizing, String>)> {
    let root = study_dir.join(crate::rundir::layout::PILOTS);
    let mut numbers: Vec<u32> = std::fs::read_dir(&root)
        .ok()?
        .filter_map(|e| crate::rundir::layout::pilot_number(e.ok()?.file_name().to_str()?))
        .collect();
    numbers.sort_unstable();
    numbers.into_iter().rev().find_map(|n| {
        let file = crate::rundir::layout::pilot_sizing(study_dir, n);
        match std::fs::symlink_metadata(&file) {
            Err(_) => None,
            Ok(m) if !m.is_file() => Some((file, Err("not a regular file".into()))),
            // A pilot of one repetition, or one where nothing stood, sizes nothing: an
            // older one that did is the newest sizing.
            Ok(_) => match std::fs::read(&file)
                .map_err(|e| e.to_string())
                .and_then(|t| parse(&t))
            {
                Ok(s) if s.spreads.iter().all(|sp| sp.log_sd.is_none()) => None,
                found => Some((file, found)),
            },
        }
    })
}

mod words;
pub use words::{figure, judge, level_text, plan_warnings, render, warning, Judged};

#[cfg(test)]
mod tests;
