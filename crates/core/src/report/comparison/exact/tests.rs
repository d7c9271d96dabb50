//! The exact tests against brute-force enumeration, and the intervals' coverage by
//! simulation.

use super::*;
use crate::plan::expand::SplitMix64;

/// Every split of the pooled values into |a| and |b|: the share at least as far from the
/// mean rank sum as the observed one (midranks, the rule as written).
fn rank_sum_by_enumeration(a: &[f64], b: &[f64]) -> f64 {
    let pooled: Vec<f64> = a.iter().chain(b).copied().collect();
    let ranks: Vec<f64> = doubled_midranks(&pooled)
        .into_iter()
        .map(|r| r as f64 / 2.0)
        .collect();
    let (m, n) = (a.len(), pooled.len());
    let mean = m as f64 * ranks.iter().sum::<f64>() / n as f64;
    let w: f64 = ranks[..m].iter().sum();
    let (mut hit, mut all) = (0u64, 0u64);
    for mask in 0u32..(1 << n) {
        if mask.count_ones() as usize != m {
            continue;
        }
        let s: f64 = (0..n)
            .filter(|i| mask >> i & 1 == 1)
            .map(|i| ranks[i])
            .sum();
        all += 1;
        hit += u64::from((s - mean).abs() >= (w - mean).abs() - 1e-9);
    }
    hit as f64 / all as f64
}

fn signed_rank_by_enumeration(d: &[f64]) -> f64 {
    let nz: Vec<f64> = d.iter().copied().filter(|x| *x != 0.0).collect();
    let abs: Vec<f64> = nz.iter().map(|x| x.abs()).collect();
    let ranks: Vec<f64> = doubled_midranks(&abs)
        .into_iter()
        .map(|r| r as f64 / 2.0)
        .collect();
    let mean = ranks.iter().sum::<f64>() / 2.0;
    let t: f64 = (0..nz.len())
        .filter(|&i| nz[i] > 0.0)
        .map(|i| ranks[i])
        .sum();
    let n = nz.len();
    let hit = (0u32..(1 << n))
        .filter(|mask| {
            let s: f64 = (0..n)
                .filter(|i| mask >> i & 1 == 1)
                .map(|i| ranks[i])
                .sum();
            (s - mean).abs() >= (t - mean).abs() - 1e-9
        })
        .count();
    hit as f64 / (1u64 << n) as f64
}

/// Small values on a coarse grid, so that ties and zeros happen.
fn coarse(rng: &mut SplitMix64, n: usize) -> Vec<f64> {
    (0..n).map(|_| (rng.next_u64() % 9) as f64 - 4.0).collect()
}

#[test]
fn the_rank_tests_are_their_permutation_distributions() {
    assert_eq!(
        rank_sum_p(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]),
        Some((0.1, 0.1))
    );
    let (p, p_min) = rank_sum_p(&[1.1, 2.2, 3.3, 4.4], &[5.0, 6.0, 7.0, 8.0]).unwrap();
    assert!((p - 2.0 / 70.0).abs() < 1e-15 && p == p_min);
    let all_up = signed_rank_p(&[1.0, 2.0, 3.0]);
    assert_eq!((all_up.p, all_up.p_min, all_up.used), (0.25, 0.25, 3));
    assert!(all_up.positive);
    // Zeros count for neither side: one large drop outweighs two small rises only by rank.
    let zeros = signed_rank_p(&[0.0, 0.0, 0.0, 1.0, 2.0, -3.0]);
    assert_eq!(zeros.used, 3);
    assert!(!zeros.positive, "T = 1 + 2 = 3 is the mean of 0..=6");
    assert!(signed_rank_p(&[0.0, 0.0, 0.0, 1.0, 3.0, -2.0]).positive);
    assert_eq!(rank_sum_p(&[], &[1.0]), None);
    let mut rng = SplitMix64::new(47);
    for _ in 0..200 {
        let (m, n) = (
            1 + rng.next_u64() as usize % 6,
            1 + rng.next_u64() as usize % 6,
        );
        let (a, b) = (coarse(&mut rng, m), coarse(&mut rng, n));
        let (p, _) = rank_sum_p(&a, &b).unwrap();
        let brute = rank_sum_by_enumeration(&a, &b);
        assert!((p - brute).abs() < 1e-12, "{a:?} {b:?}: {p} {brute}");
        let k = 1 + rng.next_u64() as usize % 10;
        let d = coarse(&mut rng, k);
        let p = signed_rank_p(&d).p;
        let brute = signed_rank_by_enumeration(&d);
        assert!((p - brute).abs() < 1e-12, "{d:?}: {p} {brute}");
    }
}

#[test]
fn holm_and_the_least_repetitions() {
    let adjusted = holm(&[0.01, 0.04, 0.03, 0.005]);
    let want = [0.03, 0.06, 0.06, 0.02];
    for (a, w) in adjusted.iter().zip(want) {
        assert!((a - w).abs() < 1e-12, "{adjusted:?}");
    }
    assert_eq!(least_n_unpaired(0.05), 4);
    assert_eq!(least_n_paired(0.05), 6);
    assert_eq!(least_n_unpaired(0.1), 3);
}

pub(in crate::report::comparison) use crate::report::sizing::normal;

/// Under a multiplicative shift of 1.2, the interval of the log ratio covers ln 1.2 as often
/// as its label says, within 1.5 points, unpaired and paired (a shared round effect).
#[test]
fn the_shift_intervals_cover_as_labelled() {
    let mut rng = SplitMix64::new(48);
    let shift = 1.2f64.ln();
    for n in [3, 5, 10] {
        let (mut covered, mut paired_covered) = (0, 0);
        let (mut stated, mut paired_stated) = (0.0, 0.0);
        for _ in 0..10_000 {
            let a: Vec<f64> = (0..n).map(|_| 0.5 * normal(&mut rng) + shift).collect();
            let b: Vec<f64> = (0..n).map(|_| 0.5 * normal(&mut rng)).collect();
            let i = shift_interval(&a, &b, 0.95).unwrap();
            covered += usize::from(i.lo <= shift && shift <= i.hi);
            stated = i.confidence;
            let d: Vec<f64> = (0..n)
                .map(|_| {
                    let round = 0.3 * normal(&mut rng);
                    (round + 0.1 * normal(&mut rng) + shift) - (round + 0.1 * normal(&mut rng))
                })
                .collect();
            let p = paired_shift_interval(&d, 0.95).unwrap();
            paired_covered += usize::from(p.lo <= shift && shift <= p.hi);
            paired_stated = p.confidence;
        }
        for (what, c, s) in [
            ("unpaired", covered, stated),
            ("paired", paired_covered, paired_stated),
        ] {
            let observed = c as f64 / 10_000.0;
            assert!(
                (observed - s).abs() <= 0.015,
                "{what}, n = {n}: covered {observed}, stated {s}"
            );
        }
    }
    assert_eq!(
        shift_interval(&[1.0, 2.0, 3.0], &[0.0, 0.5, 1.0], 0.95).map(|i| (
            i.lo,
            i.hi,
            i.confidence
        )),
        Some((0.0, 3.0, 0.9))
    );
}
