"""Tests of the family of comparisons (twin/comparison.py's Family) and comparisons.csv.

    cd twin/tests && ../.venv/bin/python -m unittest test_family

Small sets of metrics.csv rows with known comparisons.csv rows (the exact tests' values
worked out by hand: 3 against 3 fully separated is p = 2/C(6, 3) = 0.1, 3 equal-signed
pairs 2/2³ = 0.25, 4 against 4 2/C(8, 4) = 2/70), the two families (the pairs the
checks compare, each family adjusted on its own), the command on generated run
directories, and a seeded simulation of the family-wise error rate.
"""

from __future__ import annotations

import csv
import json
import random
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import comparison as cmp  # noqa: E402
import gen  # noqa: E402
import hypotheses  # noqa: E402
import recompute  # noqa: E402

SCRIPT = HERE.parent / "recompute.py"
HEADER = ("metric,definition,container,profile,fault,a,b,n_a,n_b,paired,median_a,median_b,"
          "difference_low,difference_high,difference_confidence,ratio_low,ratio_high,"
          "ratio_confidence,p,p_min,p_adjusted,finding,higher,n,needed,level,why,family")
SAT = ("saturation", "objective-windows", "")


def rows(arm, values, note="", figure=SAT, profile="ramp", fault="", reps=None,
         step_rate="", second=""):
    """metrics.csv rows (dicts of text) of one arm: one per value, repetitions 1, 2, …
    unless given; `note` one for all or one per value."""
    contender, _, variant = arm.partition(".")
    metric, definition, container = figure
    notes = note if isinstance(note, list) else [note] * len(values)
    out = []
    for i, (v, n) in enumerate(zip(values, notes)):
        r = str(reps[i] if reps else i + 1)
        p = profile + (f"+{fault}" if fault else "")
        out.append({"run": f"{arm}/{p}/r{r}", "contender": contender, "variant": variant,
                    "profile": profile, "fault": fault, "repetition": r,
                    "step_rate": step_rate, "second": second, "container": container,
                    "definition": definition, "metric": metric, "value": str(v), "unit": "",
                    "note": n})
    return out


def csv_rows(metric_rows, paired_rounds=False, registered=frozenset()):
    """comparisons.csv's rows, as dicts, of these metrics rows (through the CSV writer and
    reader, as the file has them); registered: the pairs in the hypotheses' family."""
    fam = cmp.Family()
    for r in metric_rows:
        fam.add_row(r)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "comparisons.csv"
        recompute.write_comparisons(path, fam.comparisons(paired_rounds, registered))
        text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0] == HEADER, lines[0]
    return list(csv.DictReader(text.splitlines()))


def row(metric="saturation", definition="objective-windows", container="", profile="ramp",
        fault="", **kw):
    """An expected comparisons.csv row: every column empty unless given, the family
    exploratory."""
    out = {c: "" for c in recompute.COMPARISONS_COLUMNS}
    out.update(metric=metric, definition=definition, container=container, profile=profile,
               fault=fault, family=cmp.EXPLORATORY)
    for k, v in kw.items():
        assert k in out, k
        out[k] = str(v)
    return out


ALPHA = rows("alpha", [101, 102, 103])
BETA = rows("beta", [11, 12, 13])


class Rows(unittest.TestCase):
    maxDiff = None

    def test_header(self):
        self.assertEqual(",".join(recompute.COMPARISONS_COLUMNS), HEADER)

    def test_three_against_three(self):
        self.assertEqual(csv_rows(ALPHA + BETA), [row(
            a="alpha", b="beta", n_a=3, n_b=3, paired=0, median_a=102, median_b=12,
            difference_low=88, difference_high=92, difference_confidence=0.9,
            ratio_low="7.769230769", ratio_high="9.363636364", ratio_confidence=0.9,
            p=0.1, p_min=0.1, p_adjusted=0.1, finding="cannot-be-shown", n=3, needed=4,
            level=0.05)])

    def test_three_rounds(self):
        # d = 90, 90, 90: the Walsh averages are all 90; the ratios 101/11, 8.5, 103/13
        self.assertEqual(csv_rows(ALPHA + BETA, paired_rounds=True), [row(
            a="alpha", b="beta", n_a=3, n_b=3, paired=1, median_a=102, median_b=12,
            difference_low=90, difference_high=90, difference_confidence=0.75,
            ratio_low="7.923076923", ratio_high="9.181818182", ratio_confidence=0.75,
            p=0.25, p_min=0.25, p_adjusted=0.25, finding="cannot-be-shown", n=3, needed=6,
            level=0.05)])

    def test_rounds_need_the_same_repetitions(self):
        beta = rows("beta", [11, 12, 13], reps=[1, 2, 4])
        (got,) = csv_rows(ALPHA + beta, paired_rounds=True)
        self.assertEqual((got["paired"], got["p"], got["needed"]), ("0", "0.1", "4"))

    def test_rounds_in_repetition_order(self):
        # repetitions given out of order and numbered past 9 (10 after 9, not after 1)
        a = rows("a", [5, 7, 1], reps=[10, 9, 1])
        b = rows("b", [1, 2, 3], reps=[1, 10, 9])
        (got,) = csv_rows(b + a, paired_rounds=True)
        # pairs by repetition: 1: 1−1 = 0, 9: 7−3 = 4, 10: 5−2 = 3; the ratios 1, 7/3, 2.5
        self.assertEqual((got["paired"], got["difference_low"], got["difference_high"]),
                         ("1", "0", "4"))
        self.assertEqual((got["ratio_low"], got["ratio_high"]), ("1", "2.5"))

    def test_rounds_with_a_value_not_positive(self):
        # a zero: no ratio, the differences are tested (d = −1, −1, −1, −1, −1, −1)
        a = rows("a", [0, 1, 2, 3, 4, 5])
        b = rows("b", [1, 2, 3, 4, 5, 6])
        (got,) = csv_rows(a + b, paired_rounds=True)
        self.assertEqual(got, row(
            a="a", b="b", n_a=6, n_b=6, paired=1, median_a=2.5, median_b=3.5,
            difference_low=-1, difference_high=-1, difference_confidence=0.96875,
            p=0.03125, p_min=0.03125, p_adjusted=0.03125, finding="higher", higher="b"))

    def test_unpaired_without_ratio(self):
        a = rows("a", [-1, 2, 3])
        b = rows("b", [1, 2, 3])
        (got,) = csv_rows(a + b)
        self.assertEqual((got["ratio_low"], got["ratio_high"], got["ratio_confidence"]),
                         ("", "", ""))
        self.assertEqual((got["difference_low"], got["difference_high"]), ("-4", "2"))

    def test_not_reached(self):
        gamma = rows("gamma", [200] * 4, note="not reached")
        delta = rows("delta", [51, 52, 53, 54])
        expected = [row(a="delta", b="gamma", n_a=4, n_b=4, paired=0, median_a=52.5,
                        p="0.028571429", p_min="0.028571429", p_adjusted="0.028571429",
                        finding="higher", higher="gamma")]
        self.assertEqual(csv_rows(gamma + delta), expected)
        # a bound is never paired
        self.assertEqual(csv_rows(gamma + delta, paired_rounds=True), expected)

    def test_bounds_that_order_the_values(self):
        below = rows("low", [10, 10, 10, 10], note=cmp.BELOW_FIRST_STEP)  # at most 10
        above = rows("high", [11, 12, 13, 14], note="censored at the stop")  # at least
        (got,) = csv_rows(below + above)
        self.assertEqual((got["a"], got["b"], got["finding"], got["higher"]),
                         ("high", "low", "higher", "high"))
        self.assertEqual((got["median_a"], got["median_b"], got["difference_low"]),
                         ("", "", ""))

    def test_a_bound_that_leaves_the_order_open(self):
        for a, b in ((rows("a", [50, 60, 70], note="not reached"), rows("b", [60, 61, 62])),
                     (rows("a", [50, 60, 70], note="not reached"),
                      rows("b", [200, 300, 400], note="not reached")),
                     (rows("a", [5, 6, 7], note=cmp.BELOW_FIRST_STEP),
                      rows("b", [1, 2, 3], note=cmp.BELOW_FIRST_STEP)),
                     (rows("a", [5, 6, 7], note=cmp.BELOW_FIRST_STEP), rows("b", [1, 2, 7]))):
            with self.subTest(a=a[0]["note"], b=b[0]["note"]):
                self.assertEqual(csv_rows(a + b), [row(
                    a="a", b="b", n_a=0, n_b=0, paired=0, finding="not-testable",
                    why="a bound leaves the order of two values open")])

    def test_decided(self):
        E, L, M = cmp.EXACT, cmp.AT_LEAST, cmp.AT_MOST
        cases = {
            ((E, 1), (E, 1)): True, ((E, 1), (E, 2)): True,
            ((L, 5), (E, 4)): True, ((L, 5), (E, 5)): False, ((L, 5), (M, 4)): True,
            ((L, 5), (M, 5)): False, ((E, 4), (L, 5)): True, ((E, 5), (L, 5)): False,
            ((M, 4), (L, 5)): True, ((M, 5), (L, 5)): False, ((M, 4), (E, 5)): True,
            ((M, 5), (E, 5)): False, ((E, 5), (M, 4)): True, ((E, 5), (M, 5)): False,
            ((L, 1), (L, 9)): False, ((M, 1), (M, 9)): False,
        }
        for (x, y), want in cases.items():
            with self.subTest(x=x, y=y):
                self.assertIs(cmp._decided(x, y), want)
                self.assertIs(cmp._decided(y, x), want)

    def test_a_missing_value(self):
        eps = rows("eps", [7, "", ""], note=["", "not observed", "none"])
        self.assertEqual(csv_rows(ALPHA + eps), [row(
            a="alpha", b="eps", n_a=0, n_b=0, paired=0, finding="not-testable",
            why="`eps/ramp/r2` has no value (not observed)")])
        # both unusable: a's reason
        zed = rows("zed", ["", 1, 2], note=["censored, at, the stop", "", ""])
        (got,) = csv_rows(zed + eps)
        self.assertEqual(got["why"], "`eps/ramp/r2` has no value (not observed)")
        self.assertEqual(csv_rows(zed + ALPHA)[0]["why"],
                         "`zed/ramp/r1` has no value (censored, at, the stop)")

    def test_rows_that_are_not_headline_figures(self):
        other = (rows("beta", [1, 2, 3], step_rate="10")
                 + rows("beta", [1, 2, 3], second="4")
                 + rows("beta", [1, 2, 3], figure=("saturation", "every-second", ""))
                 + rows("beta", [1, 2, 3], figure=("latency_p99", "", "replicas"))
                 + rows("beta", [1, 2, 3], figure=("latency_p50", "", "")))
        self.assertEqual(csv_rows(ALPHA + other), [])
        self.assertEqual(csv_rows(ALPHA + BETA + other)[0]["p"], "0.1")

    def test_arms_and_order(self):
        fig = cmp.HEADLINE
        metric_rows = []
        # added in reverse of the family's order
        for f in reversed(fig):
            for profile, fault in (("steady", "kill"), ("steady", ""), ("ramp", "")):
                metric_rows += rows("feed-rs.plain", [1, 2, 3], figure=f, profile=profile,
                                    fault=fault)
                metric_rows += rows("feed-rs", [4, 5, 6], figure=f, profile=profile,
                                    fault=fault)
                metric_rows += rows("feed-go.indexed", [7, 8, 9], figure=f, profile=profile,
                                    fault=fault)
        got = csv_rows(metric_rows)
        keys = [(r["metric"], r["definition"], r["container"], r["profile"], r["fault"],
                 r["a"], r["b"]) for r in got]
        pairs = [("feed-go.indexed", "feed-rs"), ("feed-go.indexed", "feed-rs.plain"),
                 ("feed-rs", "feed-rs.plain")]
        expected = [f + (p, flt) + pr for f in fig
                    for p, flt in (("ramp", ""), ("steady", ""), ("steady", "kill"))
                    for pr in pairs]
        self.assertEqual(keys, expected)
        # 54 comparisons, none can reach 0.05 / 54 with 3 values an arm
        self.assertEqual({r["finding"] for r in got}, {"cannot-be-shown"})
        self.assertEqual({(r["level"], r["needed"], r["p_adjusted"]) for r in got},
                         {("0.000925926", "7", "1")})  # 2/C(14, 7) ≤ 0.05 / 54
        self.assertEqual({r["higher"] for r in got}, {""})

    def test_holm_across_the_family(self):
        five = rows("a", [11, 12, 13, 14, 15]) + rows("b", [1, 2, 3, 4, 5])  # 2/252
        three = rows("a", [101, 102, 103], figure=cmp.HEADLINE[1]) + \
            rows("b", [11, 12, 13], figure=cmp.HEADLINE[1])  # 0.1
        got = csv_rows(five + three)
        self.assertEqual([(r["metric"], r["p"], r["p_adjusted"], r["finding"], r["higher"])
                          for r in got],
                         [("saturation", "0.007936508", "0.015873016", "higher", "a"),
                          ("latency_p99", "0.1", "0.1", "cannot-be-shown", "")])
        # one found of two: the next step's level is 0.05 / 1
        self.assertEqual((got[1]["level"], got[1]["needed"], got[1]["n"]), ("0.05", "4", "3"))
        self.assertEqual((got[0]["level"], got[0]["needed"], got[0]["n"]), ("", "", ""))

    def test_two_that_each_miss_after_adjustment(self):
        fam = rows("a", [5, 6, 7, 8]) + rows("b", [1, 2, 3, 4]) + \
            rows("a", [5, 6, 7, 8], profile="steady") + rows("b", [1, 2, 3, 4], profile="steady")
        got = csv_rows(fam)
        # p = 2/70 each, adjusted 4/70; level 0.025 needs 5 an arm
        self.assertEqual([(r["profile"], r["p_adjusted"], r["finding"], r["level"], r["needed"],
                           r["n"]) for r in got],
                         [("ramp", "0.057142857", "cannot-be-shown", "0.025", "5", "4"),
                          ("steady", "0.057142857", "cannot-be-shown", "0.025", "5", "4")])

    def test_not_shown(self):
        a = rows("a", [1, 3, 5, 7, 9])
        b = rows("b", [2, 4, 6, 8, 10])
        (got,) = csv_rows(a + b)
        self.assertEqual((got["finding"], got["higher"], got["n"], got["needed"], got["level"]),
                         ("not-shown", "", "", "", ""))
        self.assertEqual(got["p_min"], "0.007936508")

    def test_values_as_written(self):
        # the value's text is what is compared: 1.0000000001 would be written 1
        a = rows("a", ["1", "1", "1"])
        b = rows("b", ["1.000000000", "1", "1.0"])
        (got,) = csv_rows(a + b)
        # every value ties once read as written: nothing to order, left out of the family
        self.assertEqual((got["p"], got["p_min"], got["difference_low"], got["finding"],
                          got["why"]),
                         ("", "", "", "not-testable",
                          "every value ties: the rank test has nothing to order"))


    def test_one_differing_round_is_too_few_not_a_tie(self):
        # five rounds, four equal: one round ranks, which no test decides (n = 1, not a tie)
        fs = ("failed_share", "", "")
        a = rows("x.a", [0, 0, 0, 0, 0.02], figure=fs)
        b = rows("x.b", [0, 0, 0, 0, 0], figure=fs)
        (got,) = csv_rows(a + b, paired_rounds=True)
        self.assertEqual((got["paired"], got["finding"], got["n"], got["needed"]),
                         ("1", "cannot-be-shown", "1", "6"))
        (got,) = csv_rows(rows("x.a", [0.02], figure=fs) + rows("x.b", [0], figure=fs))
        self.assertEqual((got["finding"], got["n"]), ("cannot-be-shown", "1"))

    def test_paired_direction_is_the_signed_ranks(self):
        # two rounds far above, three a little below, five equal: the Walsh sums' median is
        # 0 (it would say b), the signed ranks T = 9 of 15 say a
        d = [0, 0, 0, 0, 0, 5, 6, -1, -1, -1]
        self.assertTrue(cmp._signed_ranks_positive(d))
        self.assertFalse(cmp._signed_ranks_positive([0, 0, 0, 1, 2, -3]))
        c = cmp.Comparison(SAT, "ramp", "", "a", "b")
        arm_a = {"values": {str(i + 1): (cmp.EXACT, 10.0 + x) for i, x in enumerate(d)},
                 "why": None}
        arm_b = {"values": {str(i + 1): (cmp.EXACT, 10.0) for i in range(10)}, "why": None}
        c = cmp._compare(c, arm_a, arm_b, True)
        self.assertTrue(c.paired and c.a_above)
        self.assertEqual(c.ranked, 5)


P99 = cmp.HEADLINE[1]
FAILED = cmp.HEADLINE[2]


class Families(unittest.TestCase):
    """The pairs the hypotheses' checks compare are one family, every other pair another;
    Holm's adjustment, its level and the findings are each family's own."""

    maxDiff = None

    @staticmethod
    def separated():
        # two figures, four repetitions each, fully separated: p = 2/70 each
        out = []
        for fig in (SAT, P99):
            out += rows("x.a", [101, 102, 103, 104], figure=fig)
            out += rows("x.b", [11, 12, 13, 14], figure=fig)
        return out

    def test_a_registered_pair_is_held_in_its_own_family(self):
        # one family of two: Holm doubles the smaller p to 4/70 > 5 %; level 0.05 / 2
        both = csv_rows(self.separated())
        self.assertEqual(len(both), 2)
        for r in both:
            self.assertEqual((r["family"], r["p"], r["p_adjusted"], r["finding"], r["level"],
                              r["needed"], r["n"]),
                             ("exploratory", "0.028571429", "0.057142857", "cannot-be-shown",
                              "0.025", "5", "4"))
        # latency_p99's pair registered: each alone in its family, 2/70 stands for both
        split = csv_rows(self.separated(), registered={P99 + ("ramp", "", "x.a", "x.b")})
        self.assertEqual([(r["metric"], r["family"]) for r in split],
                         [("saturation", "exploratory"), ("latency_p99", "hypotheses")])
        for r in split:
            self.assertEqual((r["p"], r["p_adjusted"], r["finding"], r["higher"], r["level"]),
                             ("0.028571429", "0.028571429", "higher", "x.a", ""))

    def test_each_family_has_its_own_level(self):
        # the registered pair (3 against 3, p = 0.1) alone: level 0.05, 4 an arm could; the
        # two exploratory ones (2/70 each) together: level 0.025, 5 an arm could
        three = rows("x.a", [101, 102, 103], figure=FAILED) + \
            rows("x.b", [11, 12, 13], figure=FAILED)
        got = csv_rows(self.separated() + three,
                       registered={FAILED + ("ramp", "", "x.a", "x.b")})
        self.assertEqual([(r["metric"], r["family"], r["p_adjusted"], r["finding"], r["level"],
                           r["needed"]) for r in got],
                         [("saturation", "exploratory", "0.057142857", "cannot-be-shown",
                           "0.025", "5"),
                          ("latency_p99", "exploratory", "0.057142857", "cannot-be-shown",
                           "0.025", "5"),
                          ("failed_share", "hypotheses", "0.1", "cannot-be-shown", "0.05",
                           "4")])

    def test_what_a_registered_pair_must_match(self):
        # another profile, the arms the other way round, another figure: not these pairs
        for pair in (P99 + ("steady", "", "x.a", "x.b"), P99 + ("ramp", "", "x.b", "x.a"),
                     SAT[:2] + ("replicas", "ramp", "", "x.a", "x.b")):
            with self.subTest(pair=pair):
                self.assertEqual({r["family"] for r in csv_rows(self.separated(),
                                                                registered={pair})},
                                 {"exploratory"})

    def test_an_untestable_pair_is_in_its_family_but_not_counted(self):
        eps = rows("x.c", [7, "", ""], figure=P99, note=["", "not observed", "none"])
        got = csv_rows(self.separated() + eps,
                       registered={P99 + ("ramp", "", "x.a", "x.c")})
        self.assertEqual([(r["metric"], r["a"], r["b"], r["family"], r["finding"])
                          for r in got],
                         [("saturation", "x.a", "x.b", "exploratory", "cannot-be-shown"),
                          ("latency_p99", "x.a", "x.b", "exploratory", "cannot-be-shown"),
                          ("latency_p99", "x.a", "x.c", "hypotheses", "not-testable"),
                          ("latency_p99", "x.b", "x.c", "exploratory", "not-testable")])


def p99_rows(arm, profile="ramp", reps=(1,)):
    """checks.json's row keys of a p99 call on these runs."""
    return [{"run": f"{arm}/{profile}/r{r}", "repetition": r, "metric": "latency_p99",
             "definition": "", "container": "", "step_rate": None, "at_first_breach": False}
            for r in reps]


def read_checks(checks):
    """checks.json's checks, as hypotheses.read_checks reads them."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "checks.json"
        path.write_text(json.dumps({"format_version": hypotheses.FORMAT_VERSION,
                                    "checks": checks}))
        return hypotheses.read_checks(path)


def check(text, figures, which="current", stat="median", registered=True):
    """A resolved check whose calls (in order of appearance, each at its span as feedbench
    gives it) read figures: (arm, profile, repetitions) each, None for a call without rows."""
    _, parsed = hypotheses.parse_check(text)
    calls = []
    for p, fig in zip(parsed, figures):
        start, end = p.spans[-1]
        calls.append({"start": start, "end": end, "stat": stat, "not_standing": [],
                      "rows": [] if fig is None else p99_rows(*fig)})
    return {"hypothesis": "H1", "which": which, "check": text, "unresolved": None,
            "registered": registered, "calls": calls}


# run id -> (arm, profile, fault), as metrics.csv's rows of the run name them
ARMS = {f"{arm}/{profile}/r{r}": (arm, profile, "")
        for arm in ("x.a", "x.b", "x.c") for profile in ("ramp", "other") for r in (1, 2, 3)}
AB_RAMP = P99 + ("ramp", "", "x.a", "x.b")


class RegisteredPairs(unittest.TestCase):
    """hypotheses.registered_pairs: the pairs of arms the checks compare."""

    def test_the_pairs_a_check_compares_are_registered_in_byte_order(self):
        c = check("p99(x.b) <= p99(x.a) + 5ms and p99(x.a) < 20ms and "
                  "p99(x.c) < p99(x.a, profile: other)",
                  [("x.b", "ramp"), ("x.a", "ramp"), ("x.a", "ramp"), ("x.c", "ramp"),
                   ("x.a", "other")])
        # the literal bound registers nothing, nor two calls on different profiles
        self.assertEqual(hypotheses.registered_pairs(read_checks([c]), ARMS), {AB_RAMP})

    def test_the_form_alone_decides(self):
        # whatever the statistic or how many repetitions (read through its interval or not)
        for stat in ("median", "mean", "max"):
            c = check("2 * p99(x.b) < p99(x.a)", [("x.b", "ramp", (1, 2, 3)), ("x.a", "ramp")],
                      stat=stat)
            self.assertEqual(hypotheses.registered_pairs(read_checks([c]), ARMS), {AB_RAMP},
                             stat)
        # not a form of two arms: interval arithmetic's comparisons register nothing
        for text in ("p99(x.a) == p99(x.b)", "p99(x.a) < 2ms * p99(x.b)",
                     "p99(x.a) < 5ms - p99(x.b)", "p99(x.a) - p99(x.b) < 5ms",
                     "p99(x.a) + p99(x.b) < 5ms + p99(x.c)"):
            c = check(text, [("x.a", "ramp"), ("x.b", "ramp"), ("x.c", "ramp")])
            self.assertEqual(hypotheses.registered_pairs(read_checks([c]), ARMS), set(), text)
        # one arm against itself
        c = check("p99(x.a) < 2 * p99(x.a)", [("x.a", "ramp"), ("x.a", "ramp")])
        self.assertEqual(hypotheses.registered_pairs(read_checks([c]), ARMS), set())

    def test_every_statement_and_every_comparison(self):
        current = check("not (p99(x.a) < p99(x.b)) or p99(x.c) >= 2 * (p99(x.b))",
                        [("x.a", "ramp"), ("x.b", "ramp"), ("x.c", "other"),
                         ("x.b", "other")])
        registered = check("p99(x.c) < p99(x.a)", [("x.c", "ramp"), ("x.a", "ramp")],
                           which="registered")
        unresolved = {"hypothesis": "H2", "which": "current", "check": "p99(y) < p99(z)",
                      "unresolved": "unknown contender `y`", "registered": True, "calls": []}
        self.assertEqual(
            hypotheses.registered_pairs(read_checks([current, registered, unresolved]), ARMS),
            {AB_RAMP, P99 + ("other", "", "x.b", "x.c"), P99 + ("ramp", "", "x.a", "x.c")})

    def test_only_registered_statements_register(self):
        # a check added or amended after registration (`registered` false) registers nothing
        added = check("p99(x.a) < p99(x.b)", [("x.a", "ramp"), ("x.b", "ramp")],
                      registered=False)
        self.assertEqual(hypotheses.registered_pairs(read_checks([added]), ARMS), set())
        # … the registered statement of the same hypothesis does
        registered = check("p99(x.c) < 2 * p99(x.a)", [("x.c", "ramp"), ("x.a", "ramp")],
                           which="registered")
        self.assertEqual(
            hypotheses.registered_pairs(read_checks([added, registered]), ARMS),
            {P99 + ("ramp", "", "x.a", "x.c")})
        # and so does a current statement standing as registered
        standing = check("p99(x.a) < p99(x.b)", [("x.a", "ramp"), ("x.b", "ramp")])
        self.assertEqual(hypotheses.registered_pairs(read_checks([standing]), ARMS),
                         {AB_RAMP})

    def test_only_whole_run_calls_register(self):
        # a call at a step rate, or `at:` the first breach, has no figure
        for key, value in (("step_rate", 100.0), ("at_first_breach", True)):
            for which in (0, 1):
                c = check("p99(x.a) < p99(x.b)", [("x.a", "ramp", (1, 2)), ("x.b", "ramp")])
                c["calls"][which]["rows"][-1][key] = value
                self.assertIsNone(hypotheses.call_figure(
                    read_checks([c])[0]["calls"][which], ARMS), (key, which))
                self.assertEqual(hypotheses.registered_pairs(read_checks([c]), ARMS), set(),
                                 (key, which))

    def test_a_call_without_a_figure_registers_nothing(self):
        # no rows (every run of the arm left out); runs the twin did not compute
        for figures in ([("x.a", "ramp"), None], [None, ("x.b", "ramp")],
                        [("x.a", "ramp"), ("x.z", "ramp")]):
            c = check("p99(x.a) < p99(x.b)", figures)
            self.assertEqual(hypotheses.registered_pairs(read_checks([c]), ARMS), set(),
                             figures)
        # rows of two metrics: not one figure
        c = check("p99(x.a) < p99(x.b)", [("x.a", "ramp", (1, 2)), ("x.b", "ramp")])
        c["calls"][0]["rows"][1]["metric"] = "latency_p50"
        self.assertEqual(hypotheses.registered_pairs(read_checks([c]), ARMS), set())
        # two metrics, one a call each: not the same figure
        c = check("p99(x.a) < p99(x.b)", [("x.a", "ramp"), ("x.b", "ramp")])
        for spec in c["calls"][1]["rows"]:
            spec["metric"] = "latency_p50"
        self.assertEqual(hypotheses.registered_pairs(read_checks([c]), ARMS), set())


def run_twin(out, *args):
    return subprocess.run([sys.executable, str(SCRIPT), "--out", str(out), *map(str, args)],
                          capture_output=True, text=True)


class Command(unittest.TestCase):
    """recompute.py writes comparisons.csv beside metrics.csv: the family of its own rows."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        root = Path(cls.tmp.name)
        cls.runs = []
        for variant, shift in (("indexed", 0.0), ("plain", 50.0)):
            for r in (1, 2, 3):
                d = gen.constant_run(root / "gen" / variant, repetition=r,
                                     shift_ms=shift + 0.5 * r)
                doc = json.loads((d / "run.json").read_text())
                doc["frame"]["variant"] = variant
                doc["run_id"] = gen.run_id_of(doc["frame"])
                dest = root / "runs" / doc["run_id"].replace("/", "_")
                shutil.copytree(d, dest)
                (dest / "run.json").write_text(json.dumps(doc))
                cls.runs.append(dest)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def twin(self, name, *flags):
        out = Path(self.tmp.name) / name
        p = run_twin(out, *flags, *self.runs)
        self.assertEqual(p.returncode, 0, p.stderr)
        return out

    def family_of(self, metrics_path, paired_rounds):
        with open(metrics_path, newline="", encoding="utf-8") as f:
            metric_rows = list(csv.DictReader(f))
        return csv_rows(metric_rows, paired_rounds)

    def test_comparisons_csv(self):
        for flags, paired in (((), "0"), (("--paired-rounds",), "1")):
            with self.subTest(flags=flags):
                out = self.twin("out" + "".join(flags), *flags)
                text = (out / "comparisons.csv").read_text(encoding="utf-8")
                self.assertEqual(text.splitlines()[0], HEADER)
                got = list(csv.DictReader(text.splitlines()))
                self.assertEqual(got, self.family_of(out / "metrics.csv", bool(flags)))
                p99 = [r for r in got if r["metric"] == "latency_p99"]
                self.assertEqual(len(p99), 1)
                r = p99[0]
                self.assertEqual((r["a"], r["b"], r["profile"], r["paired"], r["n_a"]),
                                 ("feed-rs.indexed", "feed-rs.plain", "baseline", paired, "3"))
                # p99 171 ms + shift: 50 ms apart in every repetition, 49 to 51 across
                self.assertEqual((r["difference_low"], r["difference_high"]),
                                 ("-50", "-50") if flags else ("-51", "-49"))
                self.assertEqual(r["finding"], "cannot-be-shown")
                # without checks, every pair is exploratory
                self.assertEqual({r["family"] for r in got}, {"exploratory"})
                self.assertFalse(list(out.glob(".*.tmp")))

    def test_the_pairs_the_checks_compare(self):
        runs = {}  # arm -> its runs' ids, by repetition
        for d in self.runs:
            frame = json.loads((d / "run.json").read_text())["frame"]
            runs.setdefault(f"feed-rs.{frame['variant']}", []).append(
                (frame["repetition"], gen.run_id_of(frame)))
        text = "p99(feed-rs.indexed) <= (p99(feed-rs.plain)) - 40ms"
        _, parsed = hypotheses.parse_check(text)
        calls = [{"start": p.spans[-1][0], "end": p.spans[-1][1], "stat": "median",
                  "not_standing": [],
                  "rows": [{"run": run, "repetition": rep, "metric": "latency_p99",
                            "definition": "", "container": "", "step_rate": None,
                            "at_first_breach": False} for rep, run in sorted(runs[arm])]}
                 for p, arm in zip(parsed, ("feed-rs.indexed", "feed-rs.plain"))]
        self.assertEqual((calls[1]["start"], calls[1]["end"]), (24, 44))  # the parentheses
        checks = Path(self.tmp.name) / "checks-p99.json"
        checks.write_text(json.dumps({"format_version": 2, "checks": [
            {"hypothesis": "H1", "which": "current", "check": text, "unresolved": None,
             "registered": True, "calls": calls}]}))
        pair = ("latency_p99", "", "", "baseline", "", "feed-rs.indexed", "feed-rs.plain")
        for flags in ((), ("--paired-rounds",)):
            with self.subTest(flags=flags):
                out = self.twin("checked" + "".join(flags), "--checks", checks, *flags)
                text_csv = (out / "comparisons.csv").read_text(encoding="utf-8")
                got = list(csv.DictReader(text_csv.splitlines()))
                with open(out / "metrics.csv", newline="", encoding="utf-8") as f:
                    metric_rows = list(csv.DictReader(f))
                self.assertEqual(got, csv_rows(metric_rows, bool(flags), {pair}))
                self.assertEqual([(r["metric"], r["family"]) for r in got
                                  if r["family"] == "hypotheses"], [("latency_p99",
                                                                     "hypotheses")])
                self.assertGreater(len(got), 1)
                # alone in its family: its p is not adjusted
                (r,) = [r for r in got if r["family"] == "hypotheses"]
                self.assertEqual(r["p_adjusted"], r["p"])
                v = json.loads((out / "verdicts.json").read_text())
                self.assertEqual(v["format_version"], 2)
                self.assertEqual(v["verdicts"][0]["verdict"], "supported")

    def test_not_with_metrics(self):
        out = self.twin("first")
        checks = Path(self.tmp.name) / "checks.json"
        checks.write_text(json.dumps({"format_version": 2, "checks": []}))
        out2 = Path(self.tmp.name) / "second"
        p = run_twin(out2, "--checks", checks, "--metrics", out / "metrics.csv")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue((out2 / "verdicts.json").exists())
        self.assertFalse((out2 / "comparisons.csv").exists())

    def test_nothing_written_on_a_damaged_input(self):
        out = Path(self.tmp.name) / "damaged"
        p = run_twin(out, *self.runs, Path(self.tmp.name) / "nope")
        self.assertEqual(p.returncode, 2)
        self.assertFalse((out / "comparisons.csv").exists())
        self.assertFalse(list(out.glob(".*.tmp")))


class Simulation(unittest.TestCase):
    def test_family_wise_error(self):
        """Arms drawn from one distribution: Holm holds the family's share of any `higher`
        at 5 % (1,000 seeded families of 4 arms × 8 values, 6 comparisons each, unpaired
        and paired), within three standard errors."""
        rng = random.Random(20240613)
        families = 1000
        for paired in (False, True):
            wrong = 0
            for _ in range(families):
                fam = cmp.Family()
                for arm in ("a", "b", "c", "d"):
                    for r in rows(arm, [round(rng.lognormvariate(0, 0.5), 6)
                                        for _ in range(8)]):
                        fam.add_row(r)
                comps = fam.comparisons(paired)
                self.assertEqual(len(comps), 6)
                self.assertTrue(all(c.paired is paired for c in comps))
                wrong += any(c.finding == "higher" for c in comps)
            self.assertLess(wrong / families, 0.05 + 3 * (0.05 * 0.95 / families) ** 0.5,
                            (paired, wrong))

    def test_power(self):
        """A real shift (b's values 3 times a's) is found by most families of 8 values."""
        rng = random.Random(7)
        found = 0
        for _ in range(200):
            a = [rng.lognormvariate(0, 0.3) for _ in range(8)]
            b = [3 * rng.lognormvariate(0, 0.3) for _ in range(8)]
            fam = cmp.Family()
            for r in rows("a", [round(x, 6) for x in a]) + rows("b", [round(x, 6) for x in b]):
                fam.add_row(r)
            (c,) = fam.comparisons()
            found += c.finding == "higher" and c.higher == "b"
        self.assertGreater(found, 190)


if __name__ == "__main__":
    unittest.main()
