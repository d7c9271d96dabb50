"""Tests of twin/comparison.py: exact rank tests and intervals against brute force.

    cd twin/tests && ../.venv/bin/python -m unittest test_comparison

scipy is not in the twin's environment, so the exact tests are checked against plain
enumerations written here (every split of the pooled values, every sign pattern), midranks
computed by counting, in Fractions; the intervals against the distribution of U and T
counted the same way, and by a seeded simulation of their coverage.
"""

from __future__ import annotations

import itertools
import math
import random
import sys
import unittest
from fractions import Fraction
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import comparison as cmp  # noqa: E402


# ---------------------------------------------------------------------------------------
# Brute force, written independently of the module


def midranks(values):
    """Midrank of each value by counting: #smaller + (#equal + 1)/2, a Fraction."""
    return [Fraction(sum(1 for y in values if y < x)) + Fraction(sum(1 for y in values if y == x) + 1, 2)
            for x in values]


def brute_rank_sum(a, b):
    """(p, p_min) as Fractions by enumerating every m-subset of the pooled values."""
    pooled = list(a) + list(b)
    m, big_n = len(a), len(pooled)
    r = midranks(pooled)
    e = m * sum(r) / big_n
    w = sum(r[:m])
    obs = abs(w - e)
    devs = [abs(sum(r[i] for i in idx) - e) for idx in itertools.combinations(range(big_n), m)]
    total = len(devs)
    far = max(devs)
    return (Fraction(sum(1 for x in devs if x >= obs), total),
            Fraction(sum(1 for x in devs if x == far), total))


def brute_signed_rank(d):
    """(p, p_min, n_used) as Fractions by enumerating every sign pattern of the non-zeros."""
    nz = [x for x in d if x != 0]
    n = len(nz)
    if n == 0:
        return Fraction(1), Fraction(1), 0
    r = midranks([abs(x) for x in nz])
    e = sum(r) / 2
    obs = abs(sum(ri for ri, x in zip(r, nz) if x > 0) - e)
    devs = [abs(sum(ri for ri, s in zip(r, signs) if s) - e)
            for signs in itertools.product((False, True), repeat=n)]
    far = max(devs)
    return (Fraction(sum(1 for x in devs if x >= obs), 2 ** n),
            Fraction(sum(1 for x in devs if x == far), 2 ** n), n)


def brute_u_cdf(m, n):
    """F(u) = P(U ≤ u), U = #{(a, b): a > b}, over every arrangement of m a's among m+n."""
    counts = [0] * (m * n + 1)
    for pos in itertools.combinations(range(m + n), m):
        # a at sorted positions pos; U = sum over a's of the b's below it
        counts[sum(p - i for i, p in enumerate(pos))] += 1
    total = math.comb(m + n, m)
    return [Fraction(sum(counts[:u + 1]), total) for u in range(m * n + 1)]


def brute_t_cdf(n):
    """G(t) = P(T ≤ t), T the sum of the positive ranks, over every sign pattern of 1..n."""
    top = n * (n + 1) // 2
    counts = [0] * (top + 1)
    for signs in itertools.product((0, 1), repeat=n):
        counts[sum(r for r, s in zip(range(1, n + 1), signs) if s)] += 1
    return [Fraction(sum(counts[:t + 1]), 2 ** n) for t in range(top + 1)]


def expected_k(cdf, big_m, level):
    """k* from its definition: largest k ≤ ⌊(M+1)/2⌋ with 1 − 2F(k−1) ≥ level, else 1."""
    ks = [k for k in range(1, (big_m + 1) // 2 + 1) if 1 - 2 * cdf[k - 1] >= level]
    k = max(ks) if ks else 1
    return k, 1 - 2 * cdf[k - 1]


# ---------------------------------------------------------------------------------------


class RankSum(unittest.TestCase):
    def test_known_values(self):
        self.assertEqual(cmp.rank_sum_p([1, 2, 3], [4, 5, 6]), (0.1, 0.1))
        p, p_min = cmp.rank_sum_p([1.1, 2.2, 3.3, 4.4], [5, 6, 7, 8])
        self.assertEqual(p, 2 / 70)
        self.assertEqual(p_min, 2 / 70)
        # Textbook (Mann–Whitney tables, no ties), each checked by brute force below:
        # m = n = 4 with U = 1: two-sided 2·P(U ≤ 1) = 2·2/70.
        self.assertEqual(cmp.rank_sum_p([1, 2, 3, 5], [4, 6, 7, 8])[0], 4 / 70)
        # m = n = 5, complete separation: 2/252 (scipy's 0.007936507936507936).
        self.assertEqual(cmp.rank_sum_p([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]), (2 / 252, 2 / 252))
        # m = n = 5, U = 4: 2·P(U ≤ 4) = 2·12/252 (scipy's 0.09523809523809523).
        self.assertEqual(cmp.rank_sum_p([1, 2, 3, 6, 7], [4, 5, 8, 9, 10])[0], 24 / 252)
        for a, b in [([1, 2, 3, 5], [4, 6, 7, 8]), ([1, 2, 3, 6, 7], [4, 5, 8, 9, 10])]:
            self.assertEqual(cmp.rank_sum_p(a, b)[0], float(brute_rank_sum(a, b)[0]))
        # arms' order does not matter; all tied: nothing to see
        self.assertEqual(cmp.rank_sum_p([4, 5, 6], [1, 2, 3]), (0.1, 0.1))
        self.assertEqual(cmp.rank_sum_p([2, 2], [2, 2, 2]), (1.0, 1.0))
        self.assertEqual(cmp.rank_sum_p([1], [2]), (1.0, 1.0))

    def test_ties_exact(self):
        # a = [1, 1], b = [1, 2]: midranks 2, 2 | 2, 4; W = 4, E = 5; splits of {2,2,2,4}:
        # sums 4 (×3), 6 (×3); every |W' − E| = 1, so p = 1 and p_min = 1.
        self.assertEqual(cmp.rank_sum_p([1, 1], [1, 2]), (1.0, 1.0))
        # with ties the extreme is less extreme: p_min = 2/20 without, here larger
        p, p_min = cmp.rank_sum_p([1, 1, 2], [3, 4, 4])
        self.assertEqual((p, p_min), tuple(float(x) for x in brute_rank_sum([1, 1, 2], [3, 4, 4])))

    def test_against_enumeration(self):
        rng = random.Random(20240601)
        for case in range(200):
            m, n = rng.randint(1, 6), rng.randint(1, 6)
            pool = rng.choice([3, 5, 10, 1000])  # few distinct values: many ties
            a = [rng.randint(0, pool) / 2 for _ in range(m)]
            b = [rng.randint(0, pool) / 2 for _ in range(n)]
            p, p_min = brute_rank_sum(a, b)
            with self.subTest(case=case, a=a, b=b):
                self.assertEqual(cmp.rank_sum_p(a, b), (float(p), float(p_min)))

    def test_larger_arms(self):
        # the counting scales (30 per arm: C(60, 30) ≈ 1.2e17 splits) and stays exact
        a = [float(i) for i in range(30)]
        b = [i + 0.5 for i in range(30)]
        p, p_min = cmp.rank_sum_p(a, b)
        self.assertEqual(p_min, float(Fraction(2, math.comb(60, 30))))
        self.assertTrue(0.5 < p < 1.0)

    def test_refusals(self):
        with self.assertRaises(ValueError):
            cmp.rank_sum_p([], [1, 2])
        with self.assertRaises(ValueError):
            cmp.rank_sum_p([1], [])
        with self.assertRaises(ValueError):
            cmp.rank_sum_p([1, float("nan")], [2])
        with self.assertRaises(ValueError):
            cmp.rank_sum_p([1, float("inf")], [2])


class SignedRank(unittest.TestCase):
    def test_known_values(self):
        self.assertEqual(cmp.signed_rank_p([1, 2, 3]), (0.25, 0.25, 3))
        self.assertEqual(cmp.signed_rank_p([-1, -2, -3]), (0.25, 0.25, 3))
        self.assertEqual(cmp.signed_rank_p([]), (1.0, 1.0, 0))
        self.assertEqual(cmp.signed_rank_p([0, 0.0, -0.0]), (1.0, 1.0, 0))
        # zeros dropped: same as [1, 2, 3]
        self.assertEqual(cmp.signed_rank_p([0, 1, 0, 2, 3]), (0.25, 0.25, 3))
        # 6 positive: 2/64 ≤ 0.05, the least_n_paired(0.05) case
        self.assertEqual(cmp.signed_rank_p([1, 2, 3, 4, 5, 6]), (2 / 64, 2 / 64, 6))
        # ties across signs: |d| = 1, 1, 2 → scores 3, 3, 6; T = 9, E = 6; p = 6/8
        self.assertEqual(cmp.signed_rank_p([1, -1, 0, 2]), (0.75, 0.25, 3))

    def test_against_enumeration(self):
        rng = random.Random(7)
        for case in range(200):
            n = rng.randint(0, 10)
            pool = rng.choice([2, 4, 100])
            d = [rng.randint(-pool, pool) / 4 for _ in range(n)]  # zeros and ties
            p, p_min, used = brute_signed_rank(d)
            with self.subTest(case=case, d=d):
                self.assertEqual(cmp.signed_rank_p(d), (float(p), float(p_min), used))

    def test_refusals(self):
        with self.assertRaises(ValueError):
            cmp.signed_rank_p([1, float("nan")])


class ShiftInterval(unittest.TestCase):
    def test_three_by_three(self):
        a, b = [1.0, 2.0, 4.0], [0.5, 3.0, 7.0]
        diffs = [x - y for x in a for y in b]
        self.assertEqual(cmp.shift_interval(a, b), (min(diffs), max(diffs), 0.9))

    def test_against_definition(self):
        rng = random.Random(11)
        for m in range(1, 7):
            for n in range(1, 7):
                cdf = brute_u_cdf(m, n)
                for level in (Fraction(95, 100), Fraction(9, 10), Fraction(1, 2)):
                    a = [rng.random() for _ in range(m)]
                    b = [rng.random() for _ in range(n)]
                    diffs = sorted(x - y for x in a for y in b)
                    k, cov = expected_k(cdf, m * n, level)
                    with self.subTest(m=m, n=n, level=level):
                        self.assertEqual(cmp.shift_interval(a, b, level),
                                         (diffs[k - 1], diffs[m * n - k], float(cov)))
        # a float level is its decimal: 0.95 is 19/20
        self.assertEqual(cmp.shift_interval([1, 2], [3], 0.95), cmp.shift_interval([1, 2], [3]))

    def test_coverage_by_simulation(self):
        # a ~ 1.2·lognormal, b ~ lognormal: log a − log b is shifted by log 1.2 exactly
        rng = np.random.default_rng(20240602)
        target = math.log(1.2)
        for size in (5, 10):
            hits = 0
            draws = 2000
            conf = None
            for _ in range(draws):
                a = np.log(1.2 * rng.lognormal(0.0, 0.5, size))
                b = np.log(rng.lognormal(0.0, 0.5, size))
                lo, hi, conf = cmp.shift_interval(a.tolist(), b.tolist())
                hits += lo <= target <= hi
            with self.subTest(size=size, confidence=conf, observed=hits / draws):
                self.assertLess(abs(hits / draws - conf), 0.015)
                self.assertGreaterEqual(conf, 0.95)

    def test_refusals(self):
        for args in (([], [1]), ([1], []), ([1], [float("inf")])):
            with self.assertRaises(ValueError):
                cmp.shift_interval(*args)
        for level in (0, 1, Fraction(3, 2), -0.1, float("nan")):
            with self.assertRaises(ValueError):
                cmp.shift_interval([1], [2], level)

    def test_zero_end_is_positive_zero(self):
        lo, hi, _ = cmp.shift_interval([0.0], [0.0])
        self.assertEqual(math.copysign(1.0, lo), 1.0)
        self.assertEqual(math.copysign(1.0, hi), 1.0)


class PairedShiftInterval(unittest.TestCase):
    def test_three(self):
        d = [1.0, 2.0, 4.0]
        walsh = [(d[i] + d[j]) / 2 for i in range(3) for j in range(i, 3)]
        self.assertEqual(cmp.paired_shift_interval(d), (min(walsh), max(walsh), 0.75))

    def test_against_definition(self):
        rng = random.Random(13)
        for n in range(1, 13):
            cdf = brute_t_cdf(n)
            big_m = n * (n + 1) // 2
            for level in (Fraction(95, 100), Fraction(9, 10), Fraction(1, 2)):
                d = [rng.gauss(0, 1) for _ in range(n)]
                walsh = sorted((d[i] + d[j]) / 2 for i in range(n) for j in range(i, n))
                k, cov = expected_k(cdf, big_m, level)
                with self.subTest(n=n, level=level):
                    self.assertEqual(cmp.paired_shift_interval(d, level),
                                     (walsh[k - 1], walsh[big_m - k], float(cov)))
        # n = 10: k* = 9, coverage 1 − 2·25/1024
        self.assertEqual(cmp.paired_shift_interval(list(range(10)))[2], 1 - 50 / 1024)
        # zeros are kept: n = 3, not 1
        self.assertEqual(cmp.paired_shift_interval([0, 0, 1])[2], 0.75)

    def test_coverage_by_simulation(self):
        # per round a shared effect (the round's machine, its noise) multiplies both arms;
        # the difference of logs is log 1.2 plus a symmetric noise
        rng = np.random.default_rng(20240603)
        target = math.log(1.2)
        for size in (5, 10):
            hits = 0
            draws = 2000
            conf = None
            for _ in range(draws):
                round_effect = rng.lognormal(0.0, 1.0, size)
                a = np.log(1.2 * round_effect * rng.lognormal(0.0, 0.3, size))
                b = np.log(round_effect * rng.lognormal(0.0, 0.3, size))
                lo, hi, conf = cmp.paired_shift_interval((a - b).tolist())
                hits += lo <= target <= hi
            with self.subTest(size=size, confidence=conf, observed=hits / draws):
                self.assertLess(abs(hits / draws - conf), 0.015)

    def test_refusals(self):
        with self.assertRaises(ValueError):
            cmp.paired_shift_interval([])
        with self.assertRaises(ValueError):
            cmp.paired_shift_interval([1, float("nan")])


class Holm(unittest.TestCase):
    def test_known(self):
        self.assertEqual(cmp.holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02])
        self.assertEqual(cmp.holm([]), [])
        self.assertEqual(cmp.holm([0.5]), [0.5])
        self.assertEqual(cmp.holm([0.5, 0.6]), [1.0, 1.0])  # capped at 1
        self.assertEqual(cmp.holm([0.02, 0.02]), [0.04, 0.04])  # ties

    def test_against_definition(self):
        rng = random.Random(17)
        for _ in range(200):
            ps = [rng.choice([rng.random(), rng.random() / 50, 0.01]) for _ in range(rng.randint(1, 8))]
            k = len(ps)
            srt = sorted(ps)
            adj_sorted = [max(min(1.0, (k - j + 1) * srt[j - 1]) for j in range(1, i + 1))
                          for i in range(1, k + 1)]
            out = cmp.holm(ps)
            for p, q in zip(ps, out):
                self.assertEqual(q, adj_sorted[srt.index(p)])

    def test_refusals(self):
        for bad in (-0.1, 1.1, float("nan")):
            with self.assertRaises(ValueError):
                cmp.holm([0.1, bad])


class LeastN(unittest.TestCase):
    def test_known(self):
        self.assertEqual(cmp.least_n_unpaired(0.05), 4)
        self.assertEqual(cmp.least_n_paired(0.05), 6)
        self.assertEqual(cmp.least_n_unpaired(Fraction(1, 10)), 3)  # 2/20 exactly
        self.assertEqual(cmp.least_n_paired(Fraction(1, 16)), 5)  # 2/32 exactly
        self.assertEqual(cmp.least_n_unpaired(0.01), 5)  # 2/252
        self.assertEqual(cmp.least_n_paired(0.01), 8)  # 2/256

    def test_matches_the_tests(self):
        for level in (Fraction(1, 10), Fraction(5, 100), Fraction(1, 100)):
            n = cmp.least_n_unpaired(level)
            a, b = list(range(n)), list(range(n, 2 * n))
            # p_min is a float, the correctly rounded exact value: compare floats
            self.assertLessEqual(cmp.rank_sum_p(a, b)[1], float(level))
            if n > 1:
                self.assertGreater(cmp.rank_sum_p(a[:-1], b[:-1])[1], float(level))
            n = cmp.least_n_paired(level)
            self.assertLessEqual(cmp.signed_rank_p(range(1, n + 1))[1], float(level))
            self.assertGreater(cmp.signed_rank_p(range(1, n))[1], float(level))

    def test_refusals(self):
        for bad in (0, -1, 1, 2.0):
            with self.assertRaises(ValueError):
                cmp.least_n_unpaired(bad)
            with self.assertRaises(ValueError):
                cmp.least_n_paired(bad)


if __name__ == "__main__":
    unittest.main()
