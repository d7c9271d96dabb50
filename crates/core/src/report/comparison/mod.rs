//! Two arms compared on one headline figure across repetitions: the difference and the ratio
//! of their medians with exact intervals, an exact rank test (`exact`), and Holm's correction
//! within each of the report's two families of comparisons (the hypotheses', exploratory). Never a bare winner and never "no difference":
//! what the data cannot show is said to be not shown, with the repetitions that could show
//! it (docs/analysis.md, "Comparisons").

pub mod exact;
pub mod file;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::rows::{number, Bound, Row};
use crate::plan::model::Order;
use exact::ShiftInterval;

/// The family-wise error rate Holm's correction holds each family of comparisons to.
pub const ALPHA: f64 = 0.05;
/// The level asked of a comparison's intervals.
pub const LEVEL: f64 = 0.95;

/// The headline figures, `(metric, definition, container)`: what the report tabulates and
/// compares across arms.
pub const HEADLINE: [(&str, &str, &str); 6] = [
    ("saturation", "objective-windows", ""),
    ("latency_p99", "", ""),
    ("failed_share", "", ""),
    (
        "requests_per_core_second",
        "measured",
        super::usage::REPLICAS,
    ),
    (
        "memory_working_set_peak",
        "measured",
        super::usage::REPLICAS,
    ),
    ("time_to_recover", "clear", ""),
];

/// How many headline figures the report gives a run, and so compares arms on: every run
/// has a p99, a failed share, requests per core-second and a working-set peak; a step
/// ramp's also a saturation (`report::ramp`), a faulted run's a time to recover
/// (`report::faults`).
pub fn headline_figures(step_ramp: bool, fault: bool) -> usize {
    HEADLINE.len() - usize::from(!step_ramp) - usize::from(!fault)
}

/// One repetition's value: exact, or only a bound (a saturation not reached or censored
/// at the stop is at least its value; one below the first step at most).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Value {
    Exact(f64),
    AtLeast(f64),
    AtMost(f64),
}

impl Value {
    fn of(row: &Row) -> Result<Value, String> {
        let v = row
            .value
            .ok_or_else(|| format!("`{}` has no value ({})", row.key.run, row.note))?;
        // As metrics.csv writes it, which is what the twin reads back.
        let v = number(v).parse().unwrap_or(v);
        Ok(match row.bound() {
            Bound::Exact => Value::Exact(v),
            Bound::AtMost => Value::AtMost(v),
            Bound::AtLeast => Value::AtLeast(v),
        })
    }

    fn bound(self) -> f64 {
        match self {
            Value::Exact(v) | Value::AtLeast(v) | Value::AtMost(v) => v,
        }
    }

    /// Whether `self` is known to lie strictly above or below `other`.
    fn decided(self, other: Value) -> bool {
        let (a, b) = (self.bound(), other.bound());
        match (self, other) {
            (Value::Exact(_), Value::Exact(_)) => true,
            (Value::AtLeast(_), Value::Exact(_) | Value::AtMost(_)) => b < a,
            (Value::Exact(_) | Value::AtMost(_), Value::AtLeast(_)) => a < b,
            (Value::AtMost(_), Value::Exact(_)) => a < b,
            (Value::Exact(_), Value::AtMost(_)) => b < a,
            (Value::AtLeast(_), Value::AtLeast(_)) | (Value::AtMost(_), Value::AtMost(_)) => false,
        }
    }
}

/// A pair of arms on one figure, profile and fault, `a` before `b` in byte order: how a
/// check's comparison of two arms names the comparisons.csv line it registers.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pair {
    pub metric: String,
    pub definition: String,
    pub container: String,
    pub profile: String,
    pub fault: String,
    pub a: String,
    pub b: String,
}

/// Which family Holm's correction holds a comparison in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// A pair a hypothesis's check compares: registered before the runs.
    Hypotheses,
    /// Every other pair the report compares.
    Exploratory,
}

impl Family {
    /// comparisons.csv's `family` cell.
    pub fn cell(self) -> &'static str {
        match self {
            Family::Hypotheses => "hypotheses",
            Family::Exploratory => "exploratory",
        }
    }
}

/// What a comparison found, after Holm's correction.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "finding", rename_all = "kebab-case")]
pub enum Finding {
    /// The adjusted p-value is within [`ALPHA`]: `higher` is the arm whose values rank above.
    Higher { higher: String },
    /// The test could have shown a difference and did not: none shown, none ruled out.
    NotShown,
    /// Even the most extreme outcome of `n` repetitions could not reach the level Holm's
    /// procedure held it to; `needed` repetitions each could.
    CannotBeShown { n: usize, needed: usize, level: f64 },
    /// No rank test applies: a value is missing, or a bound leaves the order open.
    NotTestable { why: String },
}

/// Two arms on one figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub metric: String,
    pub definition: String,
    pub container: String,
    pub profile: String,
    pub fault: String,
    pub a: String,
    pub b: String,
    pub n_a: usize,
    pub n_b: usize,
    /// Paired by round (the signed-rank test on within-round ratios) or not (rank sums).
    pub paired: bool,
    pub family: Family,
    pub median_a: Option<f64>,
    pub median_b: Option<f64>,
    /// Of the shift `a − b`, and (every value above 0) of the ratio `a / b`.
    pub difference: Option<ShiftInterval>,
    pub ratio: Option<ShiftInterval>,
    pub p: Option<f64>,
    pub p_min: Option<f64>,
    pub adjusted: Option<f64>,
    /// Whether `a`'s values rank above `b`'s (rank sum above its mean; paired, the
    /// positive differences' signed ranks outweigh the negative ones').
    pub a_above: bool,
    /// The repetitions the test ranks: the fewer of the two arms', or paired, the rounds
    /// whose values differ (a zero difference has no sign).
    #[serde(skip)]
    pub ranked: usize,
    #[serde(flatten)]
    pub finding: Finding,
}

/// Whether the plan's order makes rounds: one repetition of each arm per round, the same
/// load seed (the repetition's number) in each, so that arms can be paired by round.
pub fn paired_rounds(order: &Order) -> bool {
    matches!(order, Order::Interleaved | Order::Shuffled { .. })
}

/// An arm's values on one figure, by repetition.
type Arm = BTreeMap<u32, Value>;
type Problem = String;
/// Each arm's values on one figure, profile and fault, or why one is unusable.
type Arms = BTreeMap<String, Result<Arm, Problem>>;

/// A whole-phase row of a headline figure: the figure's index in [`HEADLINE`] and the arm
/// (`contender` or `contender.variant`) it belongs to.
pub fn headline_arm(r: &Row) -> Option<(usize, String)> {
    if r.second.is_some() || r.step_rate.is_some() {
        return None;
    }
    let f = HEADLINE
        .iter()
        .position(|(m, d, c)| r.metric == *m && r.definition == *d && r.container == *c)?;
    let arm = if r.key.variant.is_empty() {
        r.key.contender.clone()
    } else {
        format!("{}.{}", r.key.contender, r.key.variant)
    };
    Some((f, arm))
}

/// Every pair of arms on the same profile, fault and headline figure, tested, each in its
/// family (the hypotheses' where `registered` holds the pair), and each family adjusted by
/// Holm on its own.
pub fn of_rows(rows: &[Row], paired_rounds: bool, registered: &BTreeSet<Pair>) -> Vec<Comparison> {
    // (figure, profile, fault) → arm → its values, or why one is unusable.
    let mut groups: BTreeMap<(usize, String, String), Arms> = BTreeMap::new();
    for r in rows {
        let Some((f, arm)) = headline_arm(r) else {
            continue;
        };
        let slot = groups
            .entry((f, r.key.profile.clone(), r.key.fault.clone()))
            .or_default()
            .entry(arm)
            .or_insert_with(|| Ok(Arm::new()));
        if let Ok(values) = slot {
            match Value::of(r) {
                Ok(v) => {
                    values.insert(r.key.repetition, v);
                }
                Err(why) => *slot = Err(why),
            }
        }
    }
    let mut out = Vec::new();
    for ((f, profile, fault), arms) in &groups {
        let arms: Vec<_> = arms.iter().collect();
        for (i, (a, va)) in arms.iter().enumerate() {
            for (b, vb) in &arms[i + 1..] {
                let (metric, definition, container) = HEADLINE[*f];
                let mut c = compare(va, vb, paired_rounds);
                c.metric = metric.into();
                c.definition = definition.into();
                c.container = container.into();
                c.profile = profile.clone();
                c.fault = fault.clone();
                c.a = (*a).clone();
                c.b = (*b).clone();
                c.family = if registered.contains(&pair_of(&c)) {
                    Family::Hypotheses
                } else {
                    Family::Exploratory
                };
                out.push(c);
            }
        }
    }
    for family in [Family::Hypotheses, Family::Exploratory] {
        let mut members: Vec<&mut Comparison> =
            out.iter_mut().filter(|c| c.family == family).collect();
        adjust(&mut members);
    }
    out
}

/// The pair a comparison is of.
fn pair_of(c: &Comparison) -> Pair {
    Pair {
        metric: c.metric.clone(),
        definition: c.definition.clone(),
        container: c.container.clone(),
        profile: c.profile.clone(),
        fault: c.fault.clone(),
        a: c.a.clone(),
        b: c.b.clone(),
    }
}

fn blank(finding: Finding) -> Comparison {
    Comparison {
        metric: String::new(),
        definition: String::new(),
        container: String::new(),
        profile: String::new(),
        fault: String::new(),
        a: String::new(),
        b: String::new(),
        n_a: 0,
        n_b: 0,
        paired: false,
        family: Family::Exploratory,
        median_a: None,
        median_b: None,
        difference: None,
        ratio: None,
        p: None,
        p_min: None,
        adjusted: None,
        a_above: false,
        ranked: 0,
        finding,
    }
}

/// One pair, tested; its finding is settled by [`adjust`].
fn compare(a: &Result<Arm, Problem>, b: &Result<Arm, Problem>, paired_rounds: bool) -> Comparison {
    let (a, b) = match (a, b) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(why), _) | (_, Err(why)) => return blank(Finding::NotTestable { why: why.clone() }),
    };
    let mut c = blank(Finding::NotShown);
    c.n_a = a.len();
    c.n_b = b.len();
    let exact = |arm: &Arm| -> Option<Vec<f64>> {
        arm.values()
            .map(|v| match v {
                Value::Exact(x) => Some(*x),
                _ => None,
            })
            .collect()
    };
    let (xa, xb) = (exact(a), exact(b));
    c.median_a = xa.as_deref().and_then(super::summary::median);
    c.median_b = xb.as_deref().and_then(super::summary::median);
    match (xa, xb) {
        (Some(xa), Some(xb)) if paired_rounds && a.keys().eq(b.keys()) => {
            c.paired = true;
            paired(&mut c, &xa, &xb);
        }
        (Some(xa), Some(xb)) => unpaired(&mut c, &xa, &xb),
        _ => bounded(&mut c, a, b),
    }
    if c.p.is_some() && c.ranked == 0 {
        // Every paired difference is 0: no outcome but the observed one, so no number of
        // such rounds could show a difference; left out of the family.
        return blank(Finding::NotTestable {
            why: ALL_TIED.into(),
        });
    }
    c
}

/// Why a pair whose every value ties (every paired difference 0) is not tested.
pub const ALL_TIED: &str = "every value ties: the rank test has nothing to order";

/// Whether every value of both arms is the same one.
fn all_tied(a: &[f64], b: &[f64]) -> bool {
    a.iter().chain(b).all(|x| *x == a[0])
}

/// Whether every value is above 0, so that a ratio and its logarithm mean something.
fn positive(v: &[f64]) -> bool {
    v.iter().all(|x| *x > 0.0)
}

/// Whether `a` ranks above `b`: more pairs with a above than below.
fn ranks_above(a: &[f64], b: &[f64]) -> bool {
    let (mut above, mut below) = (0, 0);
    for x in a {
        for y in b {
            above += usize::from(x > y);
            below += usize::from(x < y);
        }
    }
    above > below
}

fn unpaired(c: &mut Comparison, a: &[f64], b: &[f64]) {
    c.a_above = ranks_above(a, b);
    if let Some((p, p_min)) = exact::rank_sum_p(a, b) {
        c.p = Some(p);
        c.p_min = Some(p_min);
        c.ranked = if all_tied(a, b) {
            0
        } else {
            a.len().min(b.len())
        };
    }
    c.difference = exact::shift_interval(a, b, LEVEL);
    if positive(a) && positive(b) {
        let ln = |v: &[f64]| v.iter().map(|x| x.ln()).collect::<Vec<_>>();
        c.ratio = exact::shift_interval(&ln(a), &ln(b), LEVEL).map(exponential);
    }
}

/// Paired by round: the signed-rank test on the within-round log ratios where every value
/// is above 0 (a multiplicative effect), else on the differences.
fn paired(c: &mut Comparison, a: &[f64], b: &[f64]) {
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    c.difference = exact::paired_shift_interval(&d, LEVEL);
    let tested = if positive(a) && positive(b) {
        let r: Vec<f64> = a.iter().zip(b).map(|(x, y)| (x / y).ln()).collect();
        c.ratio = exact::paired_shift_interval(&r, LEVEL).map(exponential);
        r
    } else {
        d
    };
    let test = exact::signed_rank_p(&tested);
    c.a_above = test.positive;
    c.p = Some(test.p);
    c.p_min = Some(test.p_min);
    c.ranked = test.used;
}

/// With bounds: the rank-sum test where every bound lies strictly beyond each value of the
/// other arm (its rank is then known); no interval, which would need every value.
fn bounded(c: &mut Comparison, a: &Arm, b: &Arm) {
    for x in a.values() {
        for y in b.values() {
            if !x.decided(*y) {
                // As an unusable arm: nothing tested, nothing to show beside the reason.
                *c = blank(Finding::NotTestable {
                    why: "a bound leaves the order of two values open".into(),
                });
                return;
            }
        }
    }
    let bounds = |arm: &Arm| arm.values().map(|v| v.bound()).collect::<Vec<_>>();
    let (a, b) = (bounds(a), bounds(b));
    c.a_above = ranks_above(&a, &b);
    if let Some((p, p_min)) = exact::rank_sum_p(&a, &b) {
        c.p = Some(p);
        c.p_min = Some(p_min);
        c.ranked = if all_tied(&a, &b) {
            0
        } else {
            a.len().min(b.len())
        };
    }
}

fn exponential(i: ShiftInterval) -> ShiftInterval {
    ShiftInterval {
        lo: i.lo.exp(),
        hi: i.hi.exp(),
        confidence: i.confidence,
    }
}

/// Holm's step-down procedure over every tested comparison: a comparison is found when its
/// adjusted p is within [`ALPHA`]; one that is not, and whose smallest attainable p is above
/// the level the procedure stopped at, cannot be shown with its repetitions.
fn adjust(family: &mut [&mut Comparison]) {
    let tested: Vec<usize> = (0..family.len())
        .filter(|&i| family[i].p.is_some())
        .collect();
    let ps: Vec<f64> = tested.iter().filter_map(|&i| family[i].p).collect();
    let adjusted = exact::holm(&ps);
    let found = adjusted.iter().filter(|a| **a <= ALPHA).count();
    // The level of the step where the procedure stopped.
    let level = ALPHA / (ps.len() - found).max(1) as f64;
    for (&i, adj) in tested.iter().zip(adjusted) {
        let c = &mut family[i];
        c.adjusted = Some(adj);
        c.finding = if adj <= ALPHA {
            Finding::Higher { higher: higher(c) }
        } else if c.p_min.is_some_and(|m| m > level) {
            Finding::CannotBeShown {
                n: c.ranked,
                needed: if c.paired {
                    exact::least_n_paired(level)
                } else {
                    exact::least_n_unpaired(level)
                },
                level,
            }
        } else {
            Finding::NotShown
        };
    }
}

/// The arm whose values rank above the other's.
fn higher(c: &Comparison) -> String {
    if c.a_above {
        c.a.clone()
    } else {
        c.b.clone()
    }
}

#[cfg(test)]
pub(in crate::report) mod tests;
