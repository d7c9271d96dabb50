"""Exact, distribution-free comparisons of two arms' values across repetitions.

Two arms (say two contenders, or one contender before and after a change) each give one
value per repetition: a metric's value of each run. With a handful of repetitions neither a
normal approximation nor a bootstrap says anything trustworthy, so everything here is exact:

- `rank_sum_p`: the two-sided Wilcoxon–Mann–Whitney permutation test of two independent
  samples, ties handled exactly (midranks, the permutation distribution of the tie pattern
  at hand, counted in integers);
- `signed_rank_p`: the two-sided Wilcoxon signed-rank test of paired differences (arms run
  in the same round), zeros dropped, ties handled exactly;
- `shift_interval`: the Hodges–Lehmann / Moses interval for the shift between two samples,
  labelled by its exact coverage;
- `paired_shift_interval`: the Walsh-average interval for the centre of symmetric paired
  differences, labelled by its exact coverage;
- `holm`: Holm's step-down adjustment of several p-values;
- `least_n_unpaired`, `least_n_paired`: the fewest repetitions at which a test can reach a
  given level at all;
- `Family`: the headline figures' rows of metrics.csv gathered by figure, profile, fault
  and arm, every pair of arms compared with the above, each pair in one of two families
  (`hypotheses`, the pairs a hypothesis's check compares; `exploratory`, every other),
  Holm's adjustment over each family on its own, and each comparison's finding
  (recompute.py writes them to comparisons.csv).

The probabilities are counted with Python integers (subset counts) and compared as
integers or `fractions.Fraction`s; a float appears only in what is returned (the correctly
rounded value of the exact fraction). The values themselves are read as IEEE doubles (what
the Rust side holds, f64), compared as numbers (so −0.0 and 0.0 tie), and must be finite.

This module is independent of feedbench's Rust code, as the rest of the twin: it is the
second computation that the first is compared to.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from math import comb, gcd

DEFAULT_LEVEL = Fraction(95, 100)


# ---------------------------------------------------------------------------------------
# Helpers


def _floats(values, name):
    """The values as a list of finite floats (IEEE doubles, as the Rust side's f64).

    Why: the ranks, differences and averages must be computed on the same numbers as the
    Rust side computes them on; a NaN has no rank and an infinity makes a difference or an
    average undefined, so both are refused (ValueError) rather than given a meaning here.
    """
    out = []
    for i, v in enumerate(values):
        x = float(v)
        if not math.isfinite(x):
            raise ValueError(f"{name}[{i}] is not a finite number: {v!r}")
        out.append(x)
    return out


def _level(level):
    """The level as an exact Fraction strictly between 0 and 1.

    Why: coverages and smallest p-values are exact fractions and are compared to the level
    exactly. A Fraction or an int is taken as it is; a float is read as its shortest
    decimal representation (0.95 is 19/20, not the binary double just below it), so that
    a coverage of exactly 95 % meets the level 0.95 however the level was written.
    """
    if isinstance(level, bool):
        raise ValueError(f"level must be a number, not {level!r}")
    if isinstance(level, float):
        if not math.isfinite(level):
            raise ValueError(f"level must be finite: {level!r}")
        lv = Fraction(repr(level))
    else:
        lv = Fraction(level)
    if not 0 < lv < 1:
        raise ValueError(f"level must be strictly between 0 and 1: {level!r}")
    return lv


def _twice_midranks(values):
    """Twice the midrank of each value (integers), in the input order.

    Why: with ties the rank tests use midranks (the mean of the ranks a tied group spans),
    which are integers or half-integers; doubled they are integers, so that every sum and
    count after this is exact integer arithmetic. A group of equal values spanning ranks
    r+1 … r+g gets midrank r + (g+1)/2, i.e. score 2r + g + 1.
    """
    order = sorted(range(len(values)), key=lambda i: values[i])
    scores = [0] * len(values)
    i = 0
    n = len(order)
    while i < n:
        j = i
        while j + 1 < n and values[order[j + 1]] == values[order[i]]:
            j += 1
        g = j - i + 1
        s = 2 * i + g + 1  # twice the mean of ranks i+1 .. j+1
        for t in range(i, j + 1):
            scores[order[t]] = s
        i = j + 1
    return scores


def _reduce(scores):
    """The scores divided by their greatest common divisor, and that divisor.

    Why: the tests' statistics are compared only through differences that scale with the
    scores, so dividing every score by their gcd changes no comparison and narrows the
    counting tables (by 2 at least: without ties every doubled midrank is even).
    """
    g = 0
    for s in scores:
        g = gcd(g, s)
    g = g or 1
    return [s // g for s in scores], g


def _size_sum_counts(scores, size):
    """counts[t] = the number of subsets of exactly `size` items whose scores sum to t.

    Why: under the null hypothesis of the rank-sum test every subset of `size` of the
    pooled items is equally likely to be arm A's, so the null distribution of A's score sum
    is these counts over C(N, size). Counted exactly with Python integers by the usual
    dynamic programme over items (rows by subset size, taken in decreasing size so each
    item is used once); a row k is kept only while it can still grow to `size`.
    """
    total = sum(scores)
    rows = [[0] * (total + 1) for _ in range(size + 1)]
    rows[0][0] = 1
    n = len(scores)
    for i, s in enumerate(scores):
        hi = min(i + 1, size)
        lo = max(1, size - (n - i - 1))
        for k in range(hi, lo - 1, -1):
            dst = rows[k]
            dst[s:] = [x + y for x, y in zip(dst[s:], rows[k - 1])]
    return rows[size]


def _subset_sum_counts(scores):
    """counts[t] = the number of subsets (of any size) whose scores sum to t.

    Why: under the null hypothesis of the signed-rank test each of the 2^n sign patterns
    is equally likely, and the positive items form a subset: the null distribution of the
    positive score sum is these counts over 2^n. Exact with Python integers.
    """
    total = sum(scores)
    counts = [0] * (total + 1)
    counts[0] = 1
    for s in scores:
        counts[s:] = [x + y for x, y in zip(counts[s:], counts)]
    return counts


def _two_sided(counts, scale, centre2, observed2):
    """(p, p_min) as exact Fractions from a null distribution counted on integers.

    `counts[t]` is the number of equally likely outcomes with statistic t; a statistic t is
    compared by its scaled distance from the mean, |scale·t − centre2| (all integers, the
    mean multiplied through by its denominator), and `observed2` is that distance of the
    observed statistic. Why: a two-sided exact p-value is the share of outcomes at least
    as far from the mean as the one observed, and p_min the share at the farthest distance
    any outcome reaches: the smallest p-value this tie pattern can give at all.
    """
    total = 0
    at_least = 0
    far = -1
    at_far = 0
    for t, c in enumerate(counts):
        if not c:
            continue
        total += c
        dev = abs(scale * t - centre2)
        if dev >= observed2:
            at_least += c
        if dev > far:
            far, at_far = dev, c
        elif dev == far:
            at_far += c
    return Fraction(at_least, total), Fraction(at_far, total)


# ---------------------------------------------------------------------------------------
# Tests


def rank_sum_p(a, b):
    """Two-sided exact Wilcoxon–Mann–Whitney (permutation) test of arms a and b.

    Returns (p, p_min) as floats: p the share of the C(N, m) equally likely splits of the
    pooled N = m + n values into m and n whose A-score sum W' is at least as far from its
    mean E as the observed W (|W' − E| ≥ |W − E|, exactly), and p_min the probability of
    the farthest |W' − E| any split reaches (the smallest p this tie pattern can give: with
    few repetitions, or many ties, no outcome at all may reach a level such as 0.05).

    Why exact: with a handful of repetitions per arm the normal approximation is poor, and
    ties (equal values, common in rounded metrics) change the null distribution. Scores are
    twice the midranks of the pooled values (integers); W is the sum of A's scores; E =
    m·(Σ s)/N, compared after multiplying through by N. The counting is done for the smaller
    arm (its deviations are those of A's, negated). ValueError when an arm is empty or holds
    a non-finite value.
    """
    a = _floats(a, "a")
    b = _floats(b, "b")
    m, n = len(a), len(b)
    if m == 0 or n == 0:
        raise ValueError(f"each arm needs at least one value (got {m} and {n})")
    scores, _ = _reduce(_twice_midranks(a + b))
    big_n = m + n
    total = sum(scores)
    w = sum(scores[:m])
    observed = abs(big_n * w - m * total)
    if m <= n:
        counts = _size_sum_counts(scores, m)
        centre = m * total
    else:
        # B's sum is S − W: its distance from its mean is A's, so count B's subsets.
        counts = _size_sum_counts(scores, n)
        centre = n * total
    p, p_min = _two_sided(counts, big_n, centre, observed)
    return float(p), float(p_min)


def signed_rank_p(d):
    """Two-sided exact Wilcoxon signed-rank test of paired differences d.

    Returns (p, p_min, n_used). Exact zeros are dropped (Wilcoxon's convention: a zero has
    no sign) and n_used is how many differences remain; with none, (1.0, 1.0, 0). Scores
    are twice the midranks of |d| (ties exact); T is the sum of the positive differences'
    scores; under the null hypothesis each of the 2^n sign patterns is equally likely, so
    p = #{patterns with |T' − E| ≥ |T − E|} / 2^n with E = Σ s / 2, compared exactly (after
    multiplying through by 2), and p_min is the probability of the farthest |T' − E| (the
    smallest p attainable with this tie pattern).

    Why: paired designs (both arms run in the same round) remove the round-to-round
    variation, and the exact distribution is what a handful of rounds allows. ValueError
    when a difference is not finite.
    """
    d = _floats(d, "d")
    nz = [x for x in d if x != 0.0]
    if not nz:
        return 1.0, 1.0, 0
    scores, _ = _reduce(_twice_midranks([abs(x) for x in nz]))
    total = sum(scores)
    t = sum(s for s, x in zip(scores, nz) if x > 0)
    counts = _subset_sum_counts(scores)
    p, p_min = _two_sided(counts, 2, total, abs(2 * t - total))
    return float(p), float(p_min), len(nz)


# ---------------------------------------------------------------------------------------
# Intervals


@lru_cache(maxsize=None)
def _mann_whitney_counts(m, n):
    """counts[u] = the number of the C(m+n, m) equally likely rankings with U = u (no ties).

    Why: U, the number of (a, b) pairs with a > b, is A's rank sum minus m(m+1)/2, and
    without ties A's ranks are a uniformly random m-subset of 1..N; its distribution is the
    same for (m, n) and (n, m), so the smaller size is counted. Cached: the intervals of
    many comparisons share their sizes.
    """
    k = min(m, n)
    counts = _size_sum_counts(list(range(1, m + n + 1)), k)
    base = k * (k + 1) // 2
    return tuple(counts[base:base + m * n + 1])


@lru_cache(maxsize=None)
def _signed_rank_counts(n):
    """counts[t] = the number of the 2^n sign patterns with T = t (ranks 1..n, no ties).

    Why: T, the sum of the positive items' ranks, has this null distribution, and the
    Walsh-average interval's coverage is read from it. Cached per n.
    """
    return tuple(_subset_sum_counts(list(range(1, n + 1))))


def _k_star(counts, total, m_items, level):
    """(k*, coverage(k*)) for an order-statistic interval [X(k), X(M+1−k)] of M items.

    coverage(k) = 1 − 2·F(k−1), F the null CDF given by `counts` over `total` (exact).
    k* is the largest k in 1 … ⌊(M+1)/2⌋ with coverage(k) ≥ level, else 1 (the whole range,
    labelled with its own, lower, coverage). Why: the interval is then the narrowest of its
    family that holds the parameter with at least the level's probability, and its label is
    its true coverage, not the nominal level.
    """
    cdf = counts[0]  # F(0)·total
    best, best_cov = 1, 1 - Fraction(2 * cdf, total)
    for k in range(2, (m_items + 1) // 2 + 1):
        cdf += counts[k - 1]  # F(k−1)·total
        cov = 1 - Fraction(2 * cdf, total)
        if cov < level:
            break  # coverage only falls as k grows
        best, best_cov = k, cov
    return best, best_cov


@lru_cache(maxsize=None)
def _shift_k_star(m, n, level):
    """k* and its coverage for the Hodges–Lehmann interval of m and n values (cached)."""
    return _k_star(_mann_whitney_counts(m, n), comb(m + n, m), m * n, level)


@lru_cache(maxsize=None)
def _walsh_k_star(n, level):
    """k* and its coverage for the Walsh-average interval of n differences (cached)."""
    return _k_star(_signed_rank_counts(n), 2 ** n, n * (n + 1) // 2, level)


def shift_interval(a, b, level=DEFAULT_LEVEL):
    """Hodges–Lehmann / Moses interval for the shift a − b, with its exact coverage.

    D is the sorted list of all M = m·n differences a_i − b_j (each one floating-point
    subtraction). With F(u) = P(U ≤ u), U the Mann–Whitney count without ties (exact),
    coverage(k) = 1 − 2·F(k−1); k* is the largest k in 1 … ⌊(M+1)/2⌋ with coverage(k) ≥
    level, else 1 (the range of D, at its own lower coverage). Returns
    (D[k*−1], D[M−k*], float(coverage(k*))); a zero end is returned as 0.0, never −0.0.

    Why: for two samples that differ by a shift of continuous distributions, the interval
    holds the shift with probability exactly coverage(k*), whatever the distributions;
    it is the set of shifts the two-sided rank-sum test does not reject. With m = n = 3 no
    interval reaches 95 %: the range of the 9 differences is returned, labelled 0.9.
    ValueError for an empty arm, a non-finite value, or a level not strictly in (0, 1).
    """
    a = _floats(a, "a")
    b = _floats(b, "b")
    m, n = len(a), len(b)
    if m == 0 or n == 0:
        raise ValueError(f"each arm needs at least one value (got {m} and {n})")
    lv = _level(level)
    diffs = sorted(x - y for x in a for y in b)
    k, cov = _shift_k_star(m, n, lv)
    big_m = m * n
    return diffs[k - 1] + 0.0, diffs[big_m - k] + 0.0, float(cov)


def paired_shift_interval(d, level=DEFAULT_LEVEL):
    """Walsh-average interval for the centre of paired differences d, with its coverage.

    n = len(d), zeros kept (an interval has no reason to drop them). W is the sorted list of
    the M = n(n+1)/2 Walsh averages (d_i + d_j)/2, i ≤ j (one floating-point addition and
    one halving each). With G(t) = P(T ≤ t), T the signed-rank statistic without ties
    (ranks 1..n, 2^n sign patterns, exact), coverage(k) = 1 − 2·G(k−1); k* as in
    `shift_interval`. Returns (W[k*−1], W[M−k*], float(coverage(k*))), a zero end as 0.0.

    Why: for differences symmetric about a centre (continuous), the interval holds the
    centre with probability exactly coverage(k*): the paired counterpart of the shift
    interval (n = 3: the range of the averages, labelled 0.75). ValueError for no
    difference, a non-finite one, or a level not strictly in (0, 1).
    """
    d = _floats(d, "d")
    n = len(d)
    if n == 0:
        raise ValueError("no difference")
    lv = _level(level)
    walsh = sorted((d[i] + d[j]) / 2 for i in range(n) for j in range(i, n))
    k, cov = _walsh_k_star(n, lv)
    big_m = n * (n + 1) // 2
    return walsh[k - 1] + 0.0, walsh[big_m - k] + 0.0, float(cov)


# ---------------------------------------------------------------------------------------
# Several comparisons; how many repetitions


def holm(ps):
    """Holm's step-down adjustment of K p-values, returned in the input order.

    Sorted ascending (stable), adjusted_(i) = max over j ≤ i of min(1, (K − j + 1)·p_(j))
    (1-based j), each product one floating-point multiplication. Why: several comparisons
    read together need their family-wise error held at the level; Holm's adjustment does
    so under any dependence and is uniformly more powerful than Bonferroni's. Rejecting
    where adjusted p ≤ α is Holm's procedure. ValueError for a p that is NaN or outside
    [0, 1]. An empty list gives an empty list.
    """
    vals = []
    for i, p in enumerate(ps):
        x = float(p)
        if not 0.0 <= x <= 1.0:  # NaN fails too
            raise ValueError(f"ps[{i}] is not a probability: {p!r}")
        vals.append(x)
    k = len(vals)
    order = sorted(range(k), key=lambda i: vals[i])
    out = [0.0] * k
    running = 0.0
    for j, i in enumerate(order, start=1):
        running = max(running, min(1.0, (k - j + 1) * vals[i]))
        out[i] = running
    return out


def least_n_unpaired(level):
    """The smallest n (per arm, equal arms, no ties) whose smallest two-sided p is ≤ level.

    The smallest attainable p of the rank-sum test with n and n values is 2/C(2n, n) (the
    two complete separations); compared exactly. Why: below this n no outcome whatever can
    be significant at the level (n = 3 gives 0.1: three against three can never show a
    difference at 5 %; 0.05 needs 4). ValueError for a level not strictly in (0, 1).
    """
    lv = _level(level)
    n = 1
    while Fraction(2, comb(2 * n, n)) > lv:
        n += 1
    return n


def least_n_paired(level):
    """The smallest n (pairs, no ties, no zeros) whose smallest two-sided p is ≤ level.

    The smallest attainable p of the signed-rank test with n pairs is 2/2^n (all signs
    alike); compared exactly. Why: below this n no paired outcome can be significant at the
    level (0.05 needs 6 pairs). ValueError for a level not strictly in (0, 1).
    """
    lv = _level(level)
    n = 1
    while Fraction(2, 2 ** n) > lv:
        n += 1
    return n


# ---------------------------------------------------------------------------------------
# The family: every pair of arms on each headline figure

# The headline figures (metric, definition, container), in the order the family lists them.
HEADLINE = (
    ("saturation", "objective-windows", ""),
    ("latency_p99", "", ""),
    ("failed_share", "", ""),
    ("requests_per_core_second", "measured", "replicas"),
    ("memory_working_set_peak", "measured", "replicas"),
    ("time_to_recover", "clear", ""),
)
_HEADLINE_INDEX = {key: i for i, key in enumerate(HEADLINE)}
HEADLINE_METRICS = frozenset(m for m, _, _ in HEADLINE)

# The family-wise error rate Holm's adjustment holds the family's findings to.
FAMILY_ALPHA = 0.05

BELOW_FIRST_STEP = "below the first step"
OPEN_ORDER = "a bound leaves the order of two values open"
# Every value ties (or every paired difference is 0): the rank test has no outcome but the
# one observed, so no number of such repetitions could show a difference.
ALL_TIED = "every value ties: the rank test has nothing to order"

# A value and what it is: exactly the value, or only a bound on it.
EXACT, AT_LEAST, AT_MOST = "exact", "at-least", "at-most"

FINDINGS = ("higher", "not-shown", "cannot-be-shown", "not-testable")

# The two families Holm's adjustment holds apart (comparisons.csv's `family`): the pairs a
# hypothesis's check compares, registered before the runs, and every other pair.
HYPOTHESES, EXPLORATORY = "hypotheses", "exploratory"
FAMILIES = (HYPOTHESES, EXPLORATORY)


def _median(values):
    """The middle value, or the mean of the two middle ones ((x + y) / 2 in floating point)."""
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def _repetition_key(rep):
    """A repetition's place in repetition order: its number (a repetition that is not an
    integer, which run.json does not give, after every number, by its text)."""
    try:
        return (0, int(rep), "")
    except ValueError:
        return (1, 0, rep)


def _decided(x, y):
    """Whether the order of x and y (each (kind, value)) is known, ties included.

    Why: a bound only places the value on one side of it. Two exact values are always
    ordered (equal ones tie); an `at-least v` is above a value known to be at most w < v;
    two lower bounds (or two upper bounds) never order their values.
    """
    (kx, vx), (ky, vy) = x, y
    if kx == EXACT and ky == EXACT:
        return True
    if kx == ky:
        return False  # at-least vs at-least, at-most vs at-most
    if kx == AT_LEAST:
        return vy < vx  # y exact or at most vy
    if ky == AT_LEAST:
        return vx < vy  # x exact or at most vx
    if kx == AT_MOST:
        return vx < vy  # y exact
    return vy < vx  # x exact, y at most vy


def _above(a, b):
    """Whether a's values exceed b's in more of the m·n pairs than they fall short."""
    gt = sum(1 for x in a for y in b if x > y)
    lt = sum(1 for x in a for y in b if x < y)
    return gt > lt


def _signed_ranks_positive(d):
    """Whether the positive differences' midranks (of |d|, zeros dropped) sum to more than
    the negative ones': the direction the signed-rank test reads, a zero counting for
    neither side."""
    nz = [x for x in d if x != 0.0]
    twice = _twice_midranks([abs(x) for x in nz])
    return sum(r if x > 0 else -r for r, x in zip(twice, nz)) > 0


def _ranked(a, b):
    """How many repetitions the rank-sum test ranks: the fewer arm's, none when every value
    of both arms is one and the same."""
    return 0 if len(set(a) | set(b)) <= 1 else min(len(a), len(b))


class Comparison:
    """One pair of arms on one figure, one profile and one fault: the figures of a row of
    comparisons.csv (None where the row is empty)."""

    __slots__ = ("metric", "definition", "container", "profile", "fault", "a", "b",
                 "n_a", "n_b", "paired", "median_a", "median_b", "difference", "ratio",
                 "p", "p_min", "p_adjusted", "a_above", "finding", "higher", "n", "needed",
                 "level", "why", "ranked", "family")

    def __init__(self, key, profile, fault, a, b):
        self.metric, self.definition, self.container = key
        self.profile, self.fault, self.a, self.b = profile, fault, a, b
        self.n_a = self.n_b = 0
        self.paired = False
        self.median_a = self.median_b = None
        self.difference = self.ratio = None  # (low, high, confidence)
        self.p = self.p_min = self.p_adjusted = None
        self.a_above = None
        self.finding = self.higher = self.n = self.needed = self.level = self.why = None
        # how many repetitions the test ranks (paired: the rounds whose values differ)
        self.ranked = 0
        self.family = EXPLORATORY

    def pair(self):
        """The pair this comparison is of, as a registered pair names it: (metric,
        definition, container, profile, fault, a, b)."""
        return (self.metric, self.definition, self.container, self.profile, self.fault,
                self.a, self.b)

    def untestable(self, why):
        self.finding, self.why = "not-testable", why
        return self


class Family:
    """The headline rows of metrics.csv, gathered by figure, profile, fault and arm; then
    every pair of arms compared, each in its family (HYPOTHESES for a registered pair,
    else EXPLORATORY), Holm's adjustment over each family on its own.

    Rows are given as metrics.csv writes them (`add`): the value is the written text read
    back, so that the comparisons are those of the file.
    """

    def __init__(self):
        # (headline index, profile, fault) -> arm -> {"values": {rep: (kind, v)}, "why": str|None}
        self.groups = {}

    def add(self, run, contender, variant, profile, fault, repetition, step_rate, second,
            container, definition, metric, value, note):
        """One metrics.csv row, every field as the file's text. Rows that are not a headline
        figure's (or that have a second or a step rate) are ignored."""
        if second or step_rate:
            return
        idx = _HEADLINE_INDEX.get((metric, definition, container))
        if idx is None:
            return
        arm_name = contender if not variant else f"{contender}.{variant}"
        arm = self.groups.setdefault((idx, profile, fault), {}).setdefault(
            arm_name, {"values": {}, "why": None})
        if value == "":
            if arm["why"] is None:
                arm["why"] = f"`{run}` has no value ({note})"
            return
        v = float(value)
        if note == "":
            kind = EXACT
        elif note == BELOW_FIRST_STEP:
            kind = AT_MOST
        else:
            kind = AT_LEAST
        arm["values"][repetition] = (kind, v)

    def add_row(self, row):
        """A metrics.csv row as a dict of its columns' text."""
        self.add(row["run"], row["contender"], row["variant"], row["profile"], row["fault"],
                 row["repetition"], row["step_rate"], row["second"], row["container"],
                 row["definition"], row["metric"], row["value"], row["note"])

    def comparisons(self, paired_rounds=False, registered=frozenset()):
        """Every comparison, in order: figures in HEADLINE order, then profile and fault
        (byte order), then each pair (a, b) of arms, a before b by name. registered: the
        pairs the hypotheses' checks compare, each (metric, definition, container,
        profile, fault, a, b) with a before b by name (hypotheses.registered_pairs): those
        are the HYPOTHESES family, every other comparison the EXPLORATORY one, and Holm's
        adjustment, its level and the findings are each family's own."""
        out = []
        for gkey in sorted(self.groups):
            idx, profile, fault = gkey
            arms = self.groups[gkey]
            names = sorted(arms)
            for i, a in enumerate(names):
                for b in names[i + 1:]:
                    c = Comparison(HEADLINE[idx], profile, fault, a, b)
                    c = _compare(c, arms[a], arms[b], paired_rounds)
                    c.family = HYPOTHESES if c.pair() in registered else EXPLORATORY
                    out.append(c)
        for family in FAMILIES:
            _conclude([c for c in out if c.family == family])
        return out


def _compare(c, arm_a, arm_b, paired_rounds):
    """The test of one pair (everything but what depends on the rest of the family)."""
    for arm in (arm_a, arm_b):
        if arm["why"] is not None:
            return c.untestable(arm["why"])
    reps_a = sorted(arm_a["values"], key=_repetition_key)
    reps_b = sorted(arm_b["values"], key=_repetition_key)
    xa = [arm_a["values"][r] for r in reps_a]
    xb = [arm_b["values"][r] for r in reps_b]
    exact_a = all(k == EXACT for k, _ in xa)
    exact_b = all(k == EXACT for k, _ in xb)
    a = [v for _, v in xa]
    b = [v for _, v in xb]
    if not (exact_a and exact_b):
        if not all(_decided(x, y) for x in xa for y in xb):
            return c.untestable(OPEN_ORDER)
    c.n_a, c.n_b = len(a), len(b)
    c.median_a = _median(a) if exact_a else None
    c.median_b = _median(b) if exact_b else None
    positive = all(x > 0 for x in a) and all(y > 0 for y in b)
    if exact_a and exact_b and paired_rounds and \
            set(map(_repetition_key, reps_a)) == set(map(_repetition_key, reps_b)):
        c.paired = True
        d = [x - y for x, y in zip(a, b)]
        c.difference = paired_shift_interval(d, DEFAULT_LEVEL)
        tested = d
        if positive:
            r = [math.log(x / y) for x, y in zip(a, b)]
            lo, hi, conf = paired_shift_interval(r, DEFAULT_LEVEL)
            c.ratio = (math.exp(lo), math.exp(hi), conf)
            tested = r
        c.a_above = _signed_ranks_positive(tested)
        c.p, c.p_min, c.ranked = signed_rank_p(tested)
    elif exact_a and exact_b:
        c.a_above = _above(a, b)
        c.p, c.p_min = rank_sum_p(a, b)
        c.ranked = _ranked(a, b)
        c.difference = shift_interval(a, b, DEFAULT_LEVEL)
        if positive:
            lo, hi, conf = shift_interval([math.log(x) for x in a], [math.log(y) for y in b],
                                          DEFAULT_LEVEL)
            c.ratio = (math.exp(lo), math.exp(hi), conf)
    else:
        # the order of every pair is known: the bounds rank as the values would
        c.a_above = _above(a, b)
        c.p, c.p_min = rank_sum_p(a, b)
        c.ranked = _ranked(a, b)
    if c.ranked == 0:
        # as an unusable arm: nothing tested and left out of Holm's family
        key = (c.metric, c.definition, c.container)
        return Comparison(key, c.profile, c.fault, c.a, c.b).untestable(ALL_TIED)
    return c


def _conclude(family):
    """Holm's adjustment over the family's tested comparisons, and each one's finding.

    A comparison is `higher` when its adjusted p is at most FAMILY_ALPHA. Otherwise the
    level the next rejection would need is FAMILY_ALPHA / (K − found) (Holm's next step); a
    comparison whose smallest attainable p exceeds even that `cannot-be-shown` with these
    repetitions (with `needed`, the fewest that could), else it is `not-shown`.
    """
    tested = [c for c in family if c.p is not None]
    for c, adj in zip(tested, holm([c.p for c in tested])):
        c.p_adjusted = adj
    found = sum(1 for c in tested if c.p_adjusted <= FAMILY_ALPHA)
    level = FAMILY_ALPHA / max(1, len(tested) - found)
    for c in tested:
        if c.p_adjusted <= FAMILY_ALPHA:
            c.finding = "higher"
            c.higher = c.a if c.a_above else c.b
        elif c.p_min > level:
            c.finding = "cannot-be-shown"
            c.n = c.ranked
            c.needed = least_n_paired(level) if c.paired else least_n_unpaired(level)
            c.level = level
        else:
            c.finding = "not-shown"
