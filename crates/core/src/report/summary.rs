//! Across repetitions: per figure, the median and (with 3 or more repetitions) a bootstrap
//! 95 % interval, exactly as docs/analysis.md writes it out so that the twin reproduces
//! it; and the comparison of two contenders that never names a bare winner.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::rows::{number, Row};
use crate::analysis::saturation::rank;

pub const RESAMPLES: usize = 10_000;
pub const SEED: u64 = 0x5EED_F00D_0000_0013;

/// summary.csv's columns.
pub const COLUMNS: [&str; 13] = [
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

/// The percentile-method bootstrap interval of the median; `values` in run-id order.
///
/// Each resample draws `n` indices as docs/analysis.md writes; its median is then found
/// without sorting the resample: the values are sorted once, a draw counts one more copy
/// of its value's place in that order, and the middle places are read off the running
/// counts (the same numbers sorting each resample gives, in O(n) per resample).
pub fn bootstrap(values: &[f64]) -> Option<(f64, f64)> {
    let n = values.len();
    if n < 3 {
        return None;
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut place = vec![0usize; n];
    for (p, &i) in order.iter().enumerate() {
        place[i] = p;
    }
    let sorted: Vec<f64> = order.iter().map(|&i| values[i]).collect();
    // The 0-based positions of the middle value(s) in a sorted resample.
    let (lo, hi) = if n % 2 == 1 {
        (n / 2, n / 2)
    } else {
        (n / 2 - 1, n / 2)
    };
    let mut rng = SplitMix64::new(SEED);
    let mut medians = Vec::with_capacity(RESAMPLES);
    let mut counts = vec![0u32; n];
    for _ in 0..RESAMPLES {
        counts.iter_mut().for_each(|c| *c = 0);
        for _ in 0..n {
            counts[place[(rng.next_u64() % n as u64) as usize]] += 1;
        }
        let (mut a, mut b) = (None, None);
        let mut seen = 0usize;
        for (p, &c) in counts.iter().enumerate() {
            seen += c as usize;
            if a.is_none() && seen > lo {
                a = Some(sorted[p]);
            }
            if seen > hi {
                b = Some(sorted[p]);
                break;
            }
        }
        let (a, b) = (a?, b?);
        medians.push(if lo == hi { a } else { (a + b) / 2.0 });
    }
    Some((nth(&mut medians, 2.5), nth(&mut medians, 97.5)))
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
    let mut groups: BTreeMap<GroupKey, (String, Vec<(String, f64)>)> = BTreeMap::new();
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
            g.1.push((k.run.clone(), v));
        }
    }
    let groups: Vec<(GroupKey, String, Vec<f64>)> = groups
        .into_iter()
        .map(|(k, (unit, mut values))| {
            values.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            (k, unit, values.into_iter().map(|x| x.1).collect())
        })
        .collect();
    // The bootstraps are most of the work, and independent: one share per core.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    let share = groups.len().div_ceil(threads).max(1);
    let intervals: Vec<Option<(f64, f64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = groups
            .chunks(share)
            .map(|chunk| s.spawn(move || chunk.iter().map(|g| bootstrap(&g.2)).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    groups
        .into_iter()
        .zip(intervals)
        .map(|((k, unit, v), ci)| SummaryRow {
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
            median: median(&v),
            ci_low: ci.map(|c| c.0),
            ci_high: ci.map(|c| c.1),
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
        out.push('\n');
    }
    out
}

/// Two contenders on one figure, in words: never a bare winner.
pub fn compare(a_name: &str, a: &SummaryRow, b_name: &str, b: &SummaryRow) -> String {
    match (a.ci_low, a.ci_high, b.ci_low, b.ci_high) {
        (Some(al), Some(ah), Some(bl), Some(bh)) => {
            if al <= bh && bl <= ah {
                format!(
                    "not distinguishable: {a_name} [{}, {}] and {b_name} [{}, {}] overlap",
                    number(al),
                    number(ah),
                    number(bl),
                    number(bh)
                )
            } else {
                let (hi, lo) = if al > bh {
                    (a_name, b_name)
                } else {
                    (b_name, a_name)
                };
                format!(
                    "{hi} higher than {lo}: {a_name} [{}, {}], {b_name} [{}, {}]",
                    number(al),
                    number(ah),
                    number(bl),
                    number(bh)
                )
            }
        }
        _ => format!(
            "not distinguishable: {} and {} repetitions (3 are needed for an interval)",
            a.n, b.n
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_intervals() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(bootstrap(&[1.0, 2.0]), None);
        let (lo, hi) = bootstrap(&[10.0, 11.0, 12.0, 13.0, 14.0]).unwrap();
        assert!(lo >= 10.0 && hi <= 14.0 && lo < hi, "{lo} {hi}");
        assert_eq!(bootstrap(&[5.0; 4]), Some((5.0, 5.0)));
    }

    /// The rule as docs/analysis.md writes it: sort every resample, sort the medians.
    fn bootstrap_as_written(values: &[f64]) -> (f64, f64) {
        let n = values.len();
        let mut rng = SplitMix64::new(SEED);
        let mut medians: Vec<f64> = (0..RESAMPLES)
            .map(|_| {
                let draw: Vec<f64> = (0..n)
                    .map(|_| values[(rng.next_u64() % n as u64) as usize])
                    .collect();
                median(&draw).unwrap()
            })
            .collect();
        medians.sort_by(f64::total_cmp);
        let at = |p: f64| crate::analysis::saturation::percentile(&medians, p).unwrap();
        (at(2.5), at(97.5))
    }

    #[test]
    fn counted_medians_equal_sorted_resamples() {
        let mut rng = SplitMix64::new(99);
        for n in [3, 4, 5, 8, 11, 20] {
            // Ties on purpose (a coarse grid), in no particular order.
            let values: Vec<f64> = (0..n).map(|_| (rng.next_u64() % 7) as f64 * 1.5).collect();
            let ours = bootstrap(&values).unwrap();
            assert_eq!(ours, bootstrap_as_written(&values), "n = {n}: {values:?}");
        }
    }
}
