//! Across repetitions: per figure, the median and (with 3 or more repetitions) its exact
//! order-statistic interval labelled by its coverage, as docs/analysis.md writes it out so
//! that the twin reproduces it (comparisons of arms are `report::comparison`'s).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::rows::{number, Bound, Row};
use crate::analysis::saturation::rank;

pub const RESAMPLES: usize = 10_000;
pub const SEED: u64 = 0x5EED_F00D_0000_0013;

/// summary.csv's columns.
pub const COLUMNS: [&str; 15] = [
    "contender",
    "variant",
    "profile",
    "fault",
    "step_rate",
    "container",
    "definition",
    "metric",
    "unit",
    "n",
    "median",
    "ci_low",
    "ci_high",
    "confidence",
    "bound",
];

/// SplitMix64, as docs/analysis.md writes it out (the plan's shuffle's generator).
pub use crate::plan::expand::SplitMix64;

/// The median of values (the mean of the two middle ones when their number is even).
pub fn median(values: &[f64]) -> Option<f64> {
    median_in_place(&mut values.to_vec())
}

fn median_in_place(v: &mut [f64]) -> Option<f64> {
    v.sort_unstable_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// The level asked of a median's interval. Where n is too small for it, the range is given
/// at its own exact level (n = 3: 75 %), never labelled 95 %.
pub const WANTED: f64 = 0.95;

/// A median's interval across repetitions, and the probability that an interval made so
/// covers the population's median.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MedianInterval {
    pub lo: f64,
    pub hi: f64,
    pub confidence: f64,
}

/// `P(Bin(n, ½) ≤ k − 1)`: exactly while `2^n` fits in 128 bits, in log space past that
/// (no study repeats a run 122 times).
fn lower_tail(n: usize, k: usize) -> f64 {
    if n <= 121 {
        exact_tail(n, k)
    } else {
        log_tail(n, k)
    }
}

/// `P(Bin(n, ½) ≤ k − 1)` as a ratio of integers; `n` at most 121.
fn exact_tail(n: usize, k: usize) -> f64 {
    let (mut c, mut sum) = (1u128, 0u128);
    for i in 0..k {
        if i > 0 {
            c = c * (n - i + 1) as u128 / i as u128;
        }
        sum += c;
    }
    sum as f64 / 2f64.powi(n as i32)
}

/// `P(Bin(n, ½) ≤ k − 1)` summed term by term from each `ln C(n, i) − n·ln 2`.
fn log_tail(n: usize, k: usize) -> f64 {
    let mut ln_c = 0.0;
    let mut sum = 0.0;
    for i in 0..k {
        if i > 0 {
            ln_c += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        sum += (ln_c - n as f64 * std::f64::consts::LN_2).exp();
    }
    sum
}

/// The coverage of `[x(k), x(n+1−k)]` for the median of any continuous distribution:
/// `1 − 2·P(Bin(n, ½) ≤ k − 1)`. With tied values it is a lower bound.
pub fn order_confidence(n: usize, k: usize) -> f64 {
    1.0 - 2.0 * lower_tail(n, k)
}

/// The narrowest order-statistic interval at [`WANTED`] or above: the largest `k` whose
/// coverage reaches it, else 1 (the range).
pub fn order_rank(n: usize) -> usize {
    let mut k = 1;
    while k < n.div_ceil(2) && order_confidence(n, k + 1) >= WANTED {
        k += 1;
    }
    k
}

/// The median's exact, distribution-free interval `[x(k), x(n+1−k)]` with its confidence
/// (docs/analysis.md); none under 3 values.
pub fn median_interval(values: &[f64]) -> Option<MedianInterval> {
    let n = values.len();
    if n < 3 {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    let k = order_rank(n);
    Some(MedianInterval {
        lo: sorted[k - 1],
        hi: sorted[n - k],
        confidence: order_confidence(n, k),
    })
}

/// The nearest-rank `p`-th percentile of values it may reorder (not empty).
pub fn nth(values: &mut [f64], p: f64) -> f64 {
    let k = rank(p, values.len()) - 1;
    *values.select_nth_unstable_by(k, f64::total_cmp).1
}

/// One line of summary.csv.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummaryRow {
    pub contender: String,
    pub variant: String,
    pub profile: String,
    pub fault: String,
    pub step_rate: Option<f64>,
    pub container: String,
    pub definition: String,
    pub metric: String,
    pub unit: String,
    pub n: usize,
    pub median: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// The interval's coverage (exact; a lower bound where values tie).
    pub confidence: Option<f64>,
    /// What the median is when some values are only bounds (see [`Across`]).
    pub bound: Across,
}

/// What a figure's median across repetitions is, given which values are bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Across {
    /// Every value exact: the median and its interval.
    Exact,
    /// Some values are lower bounds, none upper: the median of the values as written is a
    /// lower bound of the median (each true value is at least its bound, and an order
    /// statistic cannot fall when values rise); no interval, which would need both ends.
    AtLeast,
    /// Likewise with upper bounds.
    AtMost,
    /// Bounds both ways: no median and no interval.
    Both,
}

impl Across {
    fn of(bounds: impl Iterator<Item = Bound>) -> Across {
        let (mut least, mut most) = (false, false);
        for b in bounds {
            least |= b == Bound::AtLeast;
            most |= b == Bound::AtMost;
        }
        match (least, most) {
            (false, false) => Across::Exact,
            (true, false) => Across::AtLeast,
            (false, true) => Across::AtMost,
            (true, true) => Across::Both,
        }
    }

    /// summary.csv's `bound` cell.
    pub fn cell(self) -> &'static str {
        match self {
            Across::Exact => "",
            Across::AtLeast => "at-least",
            Across::AtMost => "at-most",
            Across::Both => "both",
        }
    }
}

type GroupKey = (
    String,
    String,
    String,
    String,
    String,
    String,
    String,
    String,
);

/// Groups every row without a second by what it measures, across repetitions.
pub fn summarise(rows: &[Row]) -> Vec<SummaryRow> {
    // Per group: the unit, and each value with its run and whether it is a bound.
    type Values = Vec<(String, f64, Bound)>;
    let mut groups: BTreeMap<GroupKey, (String, Values)> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.second.is_none()) {
        let k = &r.key;
        let key = (
            k.contender.clone(),
            k.variant.clone(),
            k.profile.clone(),
            k.fault.clone(),
            r.step_rate.map(number).unwrap_or_default(),
            r.container.clone(),
            r.definition.clone(),
            r.metric.clone(),
        );
        let g = groups
            .entry(key)
            .or_insert_with(|| (r.unit.clone(), Vec::new()));
        if let Some(v) = r.value {
            g.1.push((k.run.clone(), v, r.bound()));
        }
    }
    groups
        .into_iter()
        .map(|(k, (unit, mut values))| {
            values.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            let bound = Across::of(values.iter().map(|x| x.2));
            let v: Vec<f64> = values.into_iter().map(|x| x.1).collect();
            let ci = median_interval(&v).filter(|_| bound == Across::Exact);
            SummaryRow {
                contender: k.0,
                variant: k.1,
                profile: k.2,
                fault: k.3,
                step_rate: (!k.4.is_empty()).then(|| k.4.parse().unwrap_or(f64::NAN)),
                container: k.5,
                definition: k.6,
                metric: k.7,
                unit,
                n: v.len(),
                median: median(&v).filter(|_| bound != Across::Both),
                ci_low: ci.map(|c| c.lo),
                ci_high: ci.map(|c| c.hi),
                confidence: ci.map(|c| c.confidence),
                bound,
            }
        })
        .collect()
}

fn opt(out: &mut String, v: Option<f64>) {
    if let Some(v) = v {
        out.push_str(&number(v));
    }
}

/// The whole of summary.csv.
pub fn render(rows: &[SummaryRow]) -> String {
    let mut out = COLUMNS.join(",");
    out.push('\n');
    for r in rows {
        for s in [&r.contender, &r.variant, &r.profile, &r.fault] {
            out.push_str(s);
            out.push(',');
        }
        opt(&mut out, r.step_rate);
        let _ = write!(
            out,
            ",{},{},{},{},{},",
            r.container, r.definition, r.metric, r.unit, r.n
        );
        opt(&mut out, r.median);
        out.push(',');
        opt(&mut out, r.ci_low);
        out.push(',');
        opt(&mut out, r.ci_high);
        out.push(',');
        opt(&mut out, r.confidence);
        out.push(',');
        out.push_str(r.bound.cell());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_their_order_statistic_intervals() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median_interval(&[1.0, 2.0]), None);
        let at = |v: &[f64]| median_interval(v).map(|i| (i.lo, i.hi, i.confidence));
        // Too few for 95 %: the range, at its own level.
        assert_eq!(at(&[12.0, 10.0, 11.0]), Some((10.0, 12.0, 0.75)));
        assert_eq!(at(&[4.0, 1.0, 2.0, 3.0]), Some((1.0, 4.0, 0.875)));
        assert_eq!(at(&[5.0, 1.0, 4.0, 2.0, 3.0]), Some((1.0, 5.0, 0.9375)));
        assert_eq!(
            at(&[6.0, 1.0, 5.0, 2.0, 4.0, 3.0]),
            Some((1.0, 6.0, 0.96875))
        );
        // n = 10: k = 2 (97.85 %); k = 3 would be 89 %.
        let ten = [7.0, 1.0, 10.0, 2.0, 9.0, 3.0, 8.0, 4.0, 6.0, 5.0];
        assert_eq!(at(&ten), Some((2.0, 9.0, 0.978515625)));
        assert!((order_confidence(10, 3) - (1.0 - 2.0 * 56.0 / 1024.0)).abs() < 1e-15);
        assert_eq!(at(&[5.0; 4]), Some((5.0, 5.0, 0.875)));
    }

    fn saturation(rep: u32, value: f64, note: &str) -> Row {
        use crate::report::rows::RunKey;
        Row {
            key: RunKey {
                run: format!("s/ramp/r{rep}"),
                contender: "s".into(),
                variant: String::new(),
                profile: "ramp".into(),
                fault: String::new(),
                repetition: rep,
            },
            step_rate: None,
            second: None,
            container: String::new(),
            definition: "objective-windows".into(),
            metric: "saturation".into(),
            value: Some(value),
            unit: "1/s".into(),
            note: note.into(),
        }
    }

    #[test]
    fn a_median_of_bounds_is_a_bound_without_an_interval() {
        use crate::report::rows::{BELOW_FIRST_STEP, NOT_REACHED};
        let exact = [
            saturation(1, 40.0, ""),
            saturation(2, 50.0, ""),
            saturation(3, 60.0, ""),
        ];
        let [s] = summarise(&exact).try_into().unwrap();
        assert_eq!(
            (s.median, s.ci_low, s.bound),
            (Some(50.0), Some(40.0), Across::Exact)
        );
        let mut rows = exact.to_vec();
        rows[2] = saturation(3, 60.0, NOT_REACHED);
        let [s] = summarise(&rows).try_into().unwrap();
        assert_eq!((s.median, s.ci_low, s.confidence), (Some(50.0), None, None));
        assert_eq!(s.bound, Across::AtLeast);
        assert!(render(&[s]).ends_with(",50,,,,at-least\n"));
        rows[0] = saturation(1, 40.0, BELOW_FIRST_STEP);
        let [s] = summarise(&rows).try_into().unwrap();
        assert_eq!((s.median, s.bound, s.n), (None, Across::Both, 3));
    }

    #[test]
    fn exact_and_log_space_tails_agree_where_both_apply() {
        for (n, k) in [(30, 10), (121, 50), (121, 55)] {
            let (exact, logs) = (exact_tail(n, k), log_tail(n, k));
            assert!((exact - logs).abs() < 1e-12, "n {n} k {k}: {exact} {logs}");
        }
        assert_eq!(exact_tail(3, 1), 0.125);
        assert_eq!(lower_tail(122, 1), log_tail(122, 1));
        // Far past the exact range the interval still narrows sensibly.
        let k = order_rank(400);
        assert!(order_confidence(400, k) >= WANTED && order_confidence(400, k + 1) < WANTED);
    }

    use crate::report::sizing::normal;

    /// 10,000 samples each at n = 3, 5 and 10 from a normal, a lognormal (σ 0.5) and an even
    /// mixture of N(0, 1) and N(4, 1): each interval covers its population's median (0, 1
    /// and 2) as often as its label says, within 1.5 points.
    #[test]
    fn the_stated_confidence_is_the_observed_coverage() {
        type Draw = fn(&mut SplitMix64) -> f64;
        let draws: [(&str, Draw, f64); 3] = [
            ("normal", normal, 0.0),
            ("lognormal", |r| (0.5 * normal(r)).exp(), 1.0),
            (
                "mixture",
                |r| normal(r) + if r.next_u64() % 2 == 0 { 0.0 } else { 4.0 },
                2.0,
            ),
        ];
        let mut rng = SplitMix64::new(46);
        for (name, draw, truth) in draws {
            for n in [3, 5, 10] {
                let mut covered = 0;
                let mut stated = 0.0;
                for _ in 0..10_000 {
                    let v: Vec<f64> = (0..n).map(|_| draw(&mut rng)).collect();
                    let i = median_interval(&v).unwrap();
                    covered += usize::from(i.lo <= truth && truth <= i.hi);
                    stated = i.confidence;
                }
                let observed = covered as f64 / 10_000.0;
                assert!(
                    (observed - stated).abs() <= 0.015,
                    "{name}, n = {n}: covered {observed}, stated {stated}"
                );
            }
        }
    }
}
