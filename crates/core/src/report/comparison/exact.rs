//! Exact rank tests and the intervals that invert them, for the few repetitions a study has:
//! the Wilcoxon–Mann–Whitney test of two arms, the signed-rank test of paired rounds, the
//! Hodges–Lehmann intervals of a shift, Holm's adjustment (docs/analysis.md, "Comparisons").
//! Counts are exact permutation counts (f64 holds them exactly up to 2^53, far past any
//! study's repetitions), so a p-value is what the test's own distribution gives, not an
//! approximation.

/// Midranks of `values` (ties share their mean rank), doubled so that they are integers.
fn doubled_midranks(values: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0; values.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && values[order[j + 1]] == values[order[i]] {
            j += 1;
        }
        // Ranks i+1 ..= j+1 share their mean: doubled, (i + 1) + (j + 1).
        for &o in &order[i..=j] {
            ranks[o] = i + j + 2;
        }
        i = j + 1;
    }
    ranks
}

/// Whether no two scores tie.
fn distinct(scores: &[usize]) -> bool {
    let mut seen = vec![false; 2 * scores.len() + 2];
    scores
        .iter()
        .all(|&s| !std::mem::replace(&mut seen[s], true))
}

type Counts = std::sync::Arc<Vec<f64>>;

/// Null counts without ties depend only on the arms' sizes: computed once per size
/// (simulations and large reports ask for the same ones many times).
fn cached(key: (usize, usize, u8), make: impl FnOnce() -> Vec<f64>) -> Counts {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    type Cache = Mutex<HashMap<(usize, usize, u8), Counts>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(c) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return c.clone();
    }
    let made = Counts::new(make());
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, made.clone());
    made
}

/// `counts[k][s]`: how many subsets of `scores` of size k sum to s.
fn subset_counts(scores: &[usize], most: usize) -> Vec<Vec<f64>> {
    let total: usize = scores.iter().sum();
    let mut counts = vec![vec![0.0; total + 1]; most + 1];
    counts[0][0] = 1.0;
    for &s in scores {
        for k in (1..=most).rev() {
            for sum in (s..=total).rev() {
                counts[k][sum] += counts[k - 1][sum - s];
            }
        }
    }
    counts
}

/// A two-sided p-value from a statistic's null counts (indexed by its value s): the share of
/// outcomes at least as far from the mean as `observed`, and the smallest share any outcome
/// could give. The mean is `mean_scaled / scale`; distances are compared as the integers
/// `|scale·s − mean_scaled|`, so a fractional mean costs no rounding.
fn two_sided(counts: &[f64], observed: usize, scale: usize, mean_scaled: usize) -> (f64, f64) {
    let all: f64 = counts.iter().sum();
    let far = |s: usize| (scale * s).abs_diff(mean_scaled);
    let extreme = (0..counts.len())
        .filter(|&s| counts[s] > 0.0)
        .map(far)
        .max()
        .unwrap_or(0);
    let tail = |d: usize| {
        (0..counts.len())
            .filter(|&s| far(s) >= d)
            .map(|s| counts[s])
            .sum::<f64>()
            / all
    };
    (tail(far(observed)).min(1.0), tail(extreme).min(1.0))
}

/// The two-sided exact Wilcoxon–Mann–Whitney test of `a` against `b`, ties handled by
/// midranks in the permutation distribution: `(p, smallest attainable p)`.
pub fn rank_sum_p(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let pooled: Vec<f64> = a.iter().chain(b).copied().collect();
    let scores = doubled_midranks(&pooled);
    let m = a.len();
    let w: usize = scores[..m].iter().sum();
    let total: usize = scores.iter().sum();
    // Without ties the scores are 2, 4, …, 2N whatever the values: their counts are shared.
    let counts = if distinct(&scores) {
        cached((m, pooled.len(), 0), || {
            subset_counts(&scores, m).swap_remove(m)
        })
    } else {
        std::sync::Arc::new(subset_counts(&scores, m).swap_remove(m))
    };
    // E[W] = m·Σs / N.
    Some(two_sided(&counts, w, pooled.len(), m * total))
}

/// What the signed-rank test made of a round's paired differences.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SignedRank {
    pub p: f64,
    /// The smallest p any sign pattern of these differences could give.
    pub p_min: f64,
    /// The differences ranked: the nonzero ones.
    pub used: usize,
    /// Whether the positive differences' ranks outweigh the negative ones' (T above its
    /// mean): the direction the test itself reads, zeros counting for neither side.
    pub positive: bool,
}

/// The two-sided exact Wilcoxon signed-rank test of paired differences `d` (zeros dropped,
/// ties by midranks).
pub fn signed_rank_p(d: &[f64]) -> SignedRank {
    let nonzero: Vec<f64> = d.iter().copied().filter(|x| *x != 0.0).collect();
    if nonzero.is_empty() {
        return SignedRank {
            p: 1.0,
            p_min: 1.0,
            used: 0,
            positive: false,
        };
    }
    let abs: Vec<f64> = nonzero.iter().map(|x| x.abs()).collect();
    let scores = doubled_midranks(&abs);
    let t: usize = scores
        .iter()
        .zip(&nonzero)
        .filter(|(_, x)| **x > 0.0)
        .map(|(s, _)| s)
        .sum();
    let total: usize = scores.iter().sum();
    let every_sign = || {
        // Any number of positive signs: the subset counts summed over every size.
        let mut counts = vec![0.0; total + 1];
        for row in subset_counts(&scores, scores.len()) {
            for (s, c) in row.iter().enumerate() {
                counts[s] += c;
            }
        }
        counts
    };
    let counts = if distinct(&scores) {
        cached((scores.len(), 0, 1), every_sign)
    } else {
        std::sync::Arc::new(every_sign())
    };
    // E[T] = Σs / 2.
    let (p, p_min) = two_sided(&counts, t, 2, total);
    SignedRank {
        p,
        p_min,
        used: nonzero.len(),
        positive: 2 * t > total,
    }
}

/// `P(U ≤ u)` for u = 0, 1, …: the Mann–Whitney statistic's null distribution for m and n
/// values without ties.
fn mann_whitney_cdf(m: usize, n: usize) -> Vec<f64> {
    let ranks: Vec<usize> = (1..=m + n).collect();
    let counts = subset_counts(&ranks, m);
    let offset = m * (m + 1) / 2;
    cumulative(&counts[m][offset..=offset + m * n])
}

/// `P(T ≤ t)` for t = 0, 1, …: the signed-rank statistic's null distribution for n
/// differences without ties.
fn signed_rank_cdf(n: usize) -> Vec<f64> {
    let ranks: Vec<usize> = (1..=n).collect();
    let by_size = subset_counts(&ranks, n);
    let mut counts = vec![0.0; n * (n + 1) / 2 + 1];
    for row in &by_size {
        for (s, c) in row.iter().enumerate() {
            counts[s] += c;
        }
    }
    cumulative(&counts)
}

fn cumulative(counts: &[f64]) -> Vec<f64> {
    let all: f64 = counts.iter().sum();
    let mut acc = 0.0;
    counts
        .iter()
        .map(|c| {
            acc += c;
            acc / all
        })
        .collect()
}

/// An interval of a shift with its exact coverage under the shift model.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ShiftInterval {
    pub lo: f64,
    pub hi: f64,
    pub confidence: f64,
}

/// `[D(k), D(M+1−k)]` of the sorted candidates `d` (M of them), k the largest whose
/// coverage `1 − 2·cdf(k−1)` reaches `level`, else 1 (their range, at its own level).
fn inverted(mut d: Vec<f64>, cdf: &[f64], level: f64) -> ShiftInterval {
    d.sort_by(f64::total_cmp);
    let m = d.len();
    let coverage = |k: usize| 1.0 - 2.0 * cdf[k - 1];
    let mut k = 1;
    while k < m.div_ceil(2) && coverage(k + 1) >= level {
        k += 1;
    }
    ShiftInterval {
        lo: d[k - 1],
        hi: d[m - k],
        confidence: coverage(k),
    }
}

/// The Hodges–Lehmann (Moses) interval of the shift `a − b`: from the m·n differences,
/// inverting the Wilcoxon–Mann–Whitney test.
pub fn shift_interval(a: &[f64], b: &[f64], level: f64) -> Option<ShiftInterval> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let d: Vec<f64> = a
        .iter()
        .flat_map(|x| b.iter().map(move |y| x - y))
        .collect();
    let (m, n) = (a.len(), b.len());
    let cdf = cached((m, n, 2), || mann_whitney_cdf(m, n));
    Some(inverted(d, &cdf, level))
}

/// The Walsh-average interval of a paired shift: from the n(n+1)/2 averages
/// `(d_i + d_j) / 2`, i ≤ j, inverting the signed-rank test.
pub fn paired_shift_interval(d: &[f64], level: f64) -> Option<ShiftInterval> {
    if d.is_empty() {
        return None;
    }
    let mut walsh = Vec::with_capacity(d.len() * (d.len() + 1) / 2);
    for i in 0..d.len() {
        for j in i..d.len() {
            walsh.push((d[i] + d[j]) / 2.0);
        }
    }
    let n = d.len();
    Some(inverted(
        walsh,
        &cached((n, 0, 3), || signed_rank_cdf(n)),
        level,
    ))
}

/// Holm's step-down adjustment of a family's p-values, in their given order.
pub fn holm(ps: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..ps.len()).collect();
    order.sort_by(|&a, &b| ps[a].total_cmp(&ps[b]));
    let mut adjusted = vec![0.0; ps.len()];
    let mut running: f64 = 0.0;
    for (j, &i) in order.iter().enumerate() {
        running = running.max(((ps.len() - j) as f64 * ps[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

/// The least n per arm (equal arms, no ties) whose smallest attainable two-sided p,
/// `2 / C(2n, n)`, is at most `level`.
pub fn least_n_unpaired(level: f64) -> usize {
    let mut n = 1;
    let mut choose = 2.0; // C(2, 1)
    while 2.0 / choose > level {
        n += 1;
        // C(2n, n) = C(2n−2, n−1) · (2n)(2n−1) / n².
        choose *= (2 * n) as f64 * (2 * n - 1) as f64 / (n * n) as f64;
    }
    n
}

/// The least number of paired rounds whose smallest attainable two-sided p, `2 / 2^n`, is
/// at most `level`.
pub fn least_n_paired(level: f64) -> usize {
    let mut n = 1;
    while 2.0 / 2f64.powi(n as i32) > level {
        n += 1;
    }
    n
}

#[cfg(test)]
pub(super) mod tests;
