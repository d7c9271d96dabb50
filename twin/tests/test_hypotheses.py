"""Tests of the twin's verdicts on the hypotheses' checks (twin/hypotheses.py).

    python3 -m unittest discover twin/tests     (with the venv's python3, see twin/README.md)
"""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import comparison  # noqa: E402
import gen  # noqa: E402
import hypotheses as h  # noqa: E402
import recompute  # noqa: E402
from test_recompute import nearest_rank, read_summary, splitmix64  # noqa: E402

SCRIPT = HERE.parent / "recompute.py"
INF = math.inf
T, F, U = True, False, None


def twin(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)],
                          capture_output=True, text=True)


def plain_stat(stat, values):
    if stat == "median":
        v = sorted(values)
        n = len(v)
        return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
    if stat == "mean":
        s = 0.0
        for x in values:
            s += x
        return s / len(values)
    return {"min": min, "max": max}[stat](values)


def plain_call_bootstrap(stat, values, p):
    """docs/analysis.md's bootstrap with `stat` (a call's mean), one value at a time."""
    n = len(values)
    nxt = splitmix64(0x5EEDF00D00000013)
    stats = [plain_stat(stat, [values[nxt() % n] for _ in range(n)]) for _ in range(10_000)]
    return nearest_rank(stats, p)


def call_of(text, function_text, stat="median", rows=(), not_standing=()):
    start = text.index(function_text)
    return {"start": start, "end": start + len(function_text), "stat": stat,
            "rows": [dict(r) for r in rows], "not_standing": list(not_standing)}


def spec(run, metric, definition="", container="", step_rate=None, at_first_breach=False,
         repetition=None):
    """A row key of checks.json; its repetition, unless given, the run id's `/r<n>`."""
    if repetition is None:
        tail = run.rsplit("/r", 1)[-1]
        repetition = int(tail) if tail.isdigit() else 1
    return {"run": run, "metric": metric, "definition": definition, "container": container,
            "step_rate": step_rate, "at_first_breach": at_first_breach,
            "repetition": repetition}


def metrics_csv(path, rows):
    """rows: (run, metric, value, unit, note) or dicts with more columns."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, recompute.METRICS_COLUMNS, lineterminator="\n")
        w.writeheader()
        for r in rows:
            if not isinstance(r, dict):
                run, metric, value, unit, note = r
                r = {"run": run, "metric": metric, "value": value, "unit": unit, "note": note}
            w.writerow({c: r.get(c, "") for c in recompute.METRICS_COLUMNS})


# ---------------------------------------------------------------------------------------
# The parser


class Parsing(unittest.TestCase):
    def test_precedence(self):
        def num(v):
            return ("num", v, "")

        tree, _ = h.parse_check("1 + 2 * 3 < 7 - -2 / 4")
        self.assertEqual(tree, (
            "cmp", "<",
            ("arith", "+", num(1.0), ("arith", "*", num(2.0), num(3.0))),
            ("arith", "-", num(7.0), ("arith", "/", ("neg", num(2.0)), num(4.0))),
            (0, 22)))
        tree, _ = h.parse_check("not 1 < 2 or 3 < 4 and not not 5 < 6")
        self.assertEqual(tree, (
            "or", [("not", ("cmp", "<", num(1.0), num(2.0), (4, 9))),
                   ("and", [("cmp", "<", num(3.0), num(4.0), (13, 18)),
                            ("not", ("not", ("cmp", "<", num(5.0), num(6.0), (31, 36))))])]))
        tree, _ = h.parse_check("(1 + 2) * 3 == 9")
        self.assertEqual(tree[2][0:2], ("arith", "*"))
        self.assertEqual(tree[2][2], ("arith", "+", num(1.0), num(2.0)))
        self.assertEqual(tree[4], (0, 16))
        # left to right: 10 - 2 - 3 is 5, 8 / 2 / 2 is 2
        for text, want in (("10 - 2 - 3 == 5", T), ("10 - 2 - 3 == 11", F),
                           ("8 / 2 / 2 == 2", T), ("-2 * -3 == 6", T), ("10/2 == 5", T),
                           ("(1 < 2) and (2 < 1 or 3 > 2)", T), ("not(2 < 1)", T)):
            self.assertEqual(h.evaluate(h.parse_check(text)[0], {}), want, text)

    def test_spans_and_arguments(self):
        text = "saturation(feed-rs.indexed) >= 5 * saturation(feed-rs.production)"
        _, calls = h.parse_check(text)
        self.assertEqual([(c.function, c.subject, c.start, c.end) for c in calls],
                         [("saturation", "feed-rs.indexed", 0, 27),
                          ("saturation", "feed-rs.production", 35, 65)])
        text = ("cpu(database, at: first-breach, of: feed-rs.indexed) >= 90%\n"
                "and cpu(replicas, at: first-breach, of: feed-rs.indexed) < 60%")
        _, calls = h.parse_check(text)
        self.assertEqual([(c.start, c.end) for c in calls], [(0, 52), (64, 116)])
        self.assertEqual(calls[1].args, {"at": "first-breach", "of": "feed-rs.indexed"})
        self.assertEqual(calls[1].subject, "replicas")
        text = "efficiency(feed-rs.indexed, at: 20/s) / p99.9(x,stat:max) >= 2"
        _, calls = h.parse_check(text)
        self.assertEqual([(c.function, c.args, c.start, c.end) for c in calls],
                         [("efficiency", {"at": "20/s"}, 0, 37),
                          ("p99.9", {"stat": "max"}, 40, 57)])
        # a function with no argument is a call too (feedbench names what is missing)
        _, calls = h.parse_check("f() < 1")
        self.assertEqual((calls[0].start, calls[0].end, calls[0].subject), (0, 3, None))

    def test_a_call_in_parentheses(self):
        # its own span, then each pair of parentheses around it alone, inner to outer
        # (feedbench gives the outermost, white space inside them included)
        _, calls = h.parse_check("p99(x.a) >= 2 * (p99(x.b))")
        self.assertEqual([c.spans for c in calls], [[(0, 8)], [(17, 25), (16, 26)]])
        _, calls = h.parse_check("(( p99(x.a) ) ) < 1s or (p99(x.b) + 1s) < (2 * p99(x.c))")
        self.assertEqual([c.spans for c in calls],
                         [[(3, 11), (1, 13), (0, 15)], [(25, 33)], [(47, 55)]])

    def test_status_classes(self):
        # one digit, `xx`, then no letter, digit or `_`: a name (a status class), not a
        # number with a unit
        toks = h.tokenize("p50(feed-rs, fault: db-cut, at: fault, status: 5xx) < 1s")
        cls = [t for t in toks if t.text == "5xx"]
        self.assertEqual([(t.kind, t.start, t.end) for t in cls], [("name", 47, 50)])
        _, calls = h.parse_check("p50(feed-rs, fault: db-cut, at: fault, status: 5xx) < 1s")
        self.assertEqual(calls[0].args, {"fault": "db-cut", "at": "fault", "status": "5xx"})
        for text in ("2xx", "4xx", "5xx"):
            _, calls = h.parse_check(f"failed(x, status: {text}) < 1%")
            self.assertEqual(calls[0].args, {"status": text})
        # at the end of the text, before `)`, `,`, a space or an operator
        self.assertEqual([(t.kind, t.text) for t in h.tokenize("4xx")],
                         [("name", "4xx"), ("end", "")])
        self.assertEqual([(t.kind, t.text) for t in h.tokenize("5xx-1")],
                         [("name", "5xx"), ("op", "-"), ("num", "1"), ("end", "")])
        # a code stays a number
        _, calls = h.parse_check("p50(x, status: 503) < 1s")
        self.assertEqual(calls[0].args, {"status": "503"})
        self.assertEqual(h.tokenize("503")[0].kind, "num")
        # anything else is as before: a number with an unknown unit
        for text, pos, unit in (("p99(x, status: 5xxy) < 1s", 16, "xxy"),
                                ("p99(x, status: 5xx1) < 1s", 16, "xx1"),
                                ("p99(x, status: 5xx_) < 1s", 16, "xx_"),
                                ("p99(x, status: 55xx) < 1s", 17, "xx"),
                                ("p99(x, status: 5x) < 1s", 16, "x"),
                                ("p99(x, status: 1.5xx) < 1s", 18, "xx")):
            with self.subTest(text=text):
                with self.assertRaises(h.CheckSyntaxError) as cm:
                    h.parse_check(text)
                self.assertEqual(cm.exception.pos, pos, str(cm.exception))
                self.assertIn(f"unknown unit `{unit}`", str(cm.exception))

    def test_units(self):
        for text, want in (("500ms", 0.5), ("90%", 0.9), ("1KiB", 1024.0),
                           ("2MiB", 2 * 1024.0 ** 2), ("1GiB", 1024.0 ** 3), ("20/s", 20.0),
                           ("3/core-s", 3.0), ("1.5s", 1.5), ("7", 7.0), ("0.25", 0.25),
                           # the row's own product, not the nearest double to 0.95
                           ("95%", 95 * 0.01), ("9ms", 9 * 0.001)):
            tree, _ = h.parse_check(f"{text} == 0")
            self.assertEqual(tree[2], ("num", want, text.lstrip("0123456789.")), text)
        self.assertNotEqual(95 * 0.01, 0.95)
        self.assertEqual(h.evaluate(h.parse_check("500ms + 1s < 2s")[0], {}), T)
        self.assertEqual(h.evaluate(h.parse_check("2s-1s == 1s")[0], {}), T)

    def test_syntax_errors(self):
        for text, pos, needle in (
                ("1 < 2 < 3", 6, "chained"),
                ("p99(x) < 5sec", 10, "unknown unit `sec`"),
                ("f(a, b) < 1", 5, "unnamed argument after the first"),
                ("f(a, at: 1s, at: 2s) < 1", 13, "given twice"),
                ("1 + 2", 0, "not a condition"),
                ("(1 < 2) == 1", 0, "a condition, not a quantity"),
                ("1 < 2 and 3", 10, "not a condition"),
                ("p99(x) < 1s @", 12, "unexpected character"),
                ("p99(x) < 1s )", 12, "unexpected `)`"),
                ("p99 < 1s", 4, "`(` after the function `p99`"),
                ("p99(x < 1s", 6, "`,` or `)`"),
                ("1. < 2", 1, "followed by digits"),
                ("p99(x) < 1s and", 15, "the end of the check"),
                ("p99(x) < 5µs", 10, "not ASCII")):
            with self.subTest(text=text):
                with self.assertRaises(h.CheckSyntaxError) as cm:
                    h.parse_check(text)
                self.assertEqual(cm.exception.pos, pos, str(cm.exception))
                self.assertIn(needle, str(cm.exception))

    def test_the_plans_checks_parse(self):
        plan = (HERE.parent.parent / "tests" / "plans" / "valid" / "hypotheses.yaml")
        if not plan.is_file():
            self.skipTest("no tests/plans/valid/hypotheses.yaml")
        for text in (
                "saturation(feed-rs.indexed) >= 5 * saturation(feed-rs.production)",
                "recovery(feed-rs.indexed, fault: replica-kill, origin: restart) < 5s",
                "failed(feed-rs.indexed, profile: baseline, fault: db-latency) < 1%",
                "p99(feed-py, fault: db-latency) <= 500ms\n"
                "or not (detect(feed-py, fault: db-latency, detect: failed-request) > 2s)",
                "efficiency(feed-rs.indexed, at: 20/s) / efficiency(feed-py, at: 20/s) >= 2\n"
                "and memory(replica-1, of: feed-py, stat: max) < 256MiB\n"):
            h.parse_check(text)


# ---------------------------------------------------------------------------------------
# Intervals and Kleene's logic


class Intervals(unittest.TestCase):
    def test_arithmetic(self):
        self.assertEqual(h.iv_add((1, 2), (10, INF)), (11, INF))
        self.assertEqual(h.iv_sub((1, 2), (10, INF)), (-INF, -8))
        self.assertEqual(h.iv_sub((40, INF), (10, 20)), (20, INF))
        self.assertEqual(h.iv_neg((3, INF)), (-INF, -3))
        self.assertEqual(h.iv_mul((-2, 3), (4, 5)), (-10, 15))
        self.assertEqual(h.iv_mul((-2, -1), (-3, 4)), (-8, 6))
        self.assertEqual(h.iv_mul((5, 5), (30, INF)), (150, INF))
        # a product of 0 and an infinity is 0
        self.assertEqual(h.iv_mul((0, 0), (30, INF)), (0, 0))
        self.assertEqual(h.iv_mul((0, 2), (1, INF)), (0, INF))
        self.assertEqual(h.iv_mul((-INF, INF), (0, 0)), (0, 0))
        # division: by an interval holding 0 anything goes; 1/inf is 0
        self.assertEqual(h.iv_div((1, 2), (-1, 1)), (-INF, INF))
        self.assertEqual(h.iv_div((1, 2), (0, 1)), (-INF, INF))
        self.assertEqual(h.iv_div((40, INF), (20, 20)), (2, INF))
        self.assertEqual(h.iv_div((40, 40), (20, INF)), (0, 2))
        self.assertEqual(h.iv_div((6, 8), (2, 4)), (1.5, 4))
        self.assertEqual(h.iv_div((6, 8), (-4, -2)), (-4, -1.5))
        # +inf + -inf would be NaN: the widest end
        self.assertEqual(h.iv_add((-INF, INF), (-INF, INF)), (-INF, INF))

    def test_comparisons(self):
        c = h.compare
        a, b = (1, 2), (2, 3)
        self.assertEqual([c(op, a, b) for op in h.COMPARISONS], [U, T, F, U, U, U])
        a, b = (1, 2), (3, 4)
        self.assertEqual([c(op, a, b) for op in h.COMPARISONS], [T, T, F, F, F, T])
        a, b = (3, 3), (3, 3)
        self.assertEqual([c(op, a, b) for op in h.COMPARISONS], [F, T, F, T, T, F])
        a, b = (1, 2), (1, 2)
        self.assertEqual([c(op, a, b) for op in h.COMPARISONS], [U, U, U, U, U, U])
        # a lower bound that still decides, and one that leaves it open
        self.assertEqual(c(">=", (40, INF), (20, 20)), T)
        self.assertEqual(c("<", (40, INF), (20, 20)), F)
        self.assertEqual(c(">=", (30, INF), (50, 50)), U)
        self.assertEqual(c("<", (30, INF), (50, 50)), U)
        self.assertEqual(c("==", (30, INF), (20, 20)), F)
        self.assertEqual(c("!=", (30, INF), (40, 40)), U)

    def test_kleene(self):
        vals = (T, F, U)
        want_and = {(T, T): T, (T, F): F, (T, U): U, (F, T): F, (F, F): F, (F, U): F,
                    (U, T): U, (U, F): F, (U, U): U}
        want_or = {(T, T): T, (T, F): T, (T, U): T, (F, T): T, (F, F): F, (F, U): U,
                   (U, T): T, (U, F): U, (U, U): U}
        for a in vals:
            for b in vals:
                self.assertIs(h.k_and([a, b]), want_and[(a, b)], (a, b))
                self.assertIs(h.k_or([a, b]), want_or[(a, b)], (a, b))
        self.assertEqual([h.k_not(x) for x in vals], [F, T, U])
        self.assertIs(h.k_and([T, U, F]), F)
        self.assertIs(h.k_or([F, U, T]), T)


# ---------------------------------------------------------------------------------------
# Verdicts


def index_of(rows):
    """rows: (run, metric, value or None, unit, note[, step_rate[, definition, container]])."""
    ix = h.RowIndex()
    for r in rows:
        run, metric, value, unit, note = r[:5]
        step_rate = r[5] if len(r) > 5 else None
        definition, container = r[6:8] if len(r) > 6 else ("", "")
        ix.add(run, metric, definition, container, step_rate, value, unit, note)
    return ix


def check_of(text, calls, unresolved=None, hypothesis="H1", which="current",
             registered=True):
    """A check as read_checks returns it (the calls matched by their spans)."""
    doc = {"format_version": 2, "checks": [{"hypothesis": hypothesis, "which": which,
                                            "check": text, "unresolved": unresolved,
                                            "registered": registered, "calls": calls}]}
    with tempfile.TemporaryDirectory() as t:
        p = Path(t) / "checks.json"
        p.write_text(json.dumps(doc))
        return h.read_checks(p)[0]


IDX = "feed-rs.indexed/ramp/r{}"
PROD = "feed-rs.production/ramp/r{}"
SAT = "saturation(feed-rs.indexed) >= 5 * saturation(feed-rs.production)"


def sat_calls(reps_a=(1,), reps_b=(1,), not_standing=()):
    return [call_of(SAT, "saturation(feed-rs.indexed)",
                    rows=[spec(IDX.format(r), "saturation", "objective-windows") for r in reps_a],
                    not_standing=not_standing),
            call_of(SAT, "saturation(feed-rs.production)",
                    rows=[spec(PROD.format(r), "saturation", "objective-windows") for r in reps_b])]


def sat_rows(a, b, note_a="", note_b=""):
    ows = ("objective-windows", "")
    return ([(IDX.format(i + 1), "saturation", v, "1/s", note_a, None, *ows)
             for i, v in enumerate(a)] +
            [(PROD.format(i + 1), "saturation", v, "1/s", note_b, None, *ows)
             for i, v in enumerate(b)])


class Verdicts(unittest.TestCase):
    def verdict(self, text, calls, rows):
        return h.verdict(check_of(text, calls), index_of(rows))

    def test_supported_and_not(self):
        v = self.verdict(SAT, sat_calls(), sat_rows([40], [5]))
        self.assertEqual((v["verdict"], v["interval"]), ("supported", None))
        self.assertEqual(v["calls"], [
            {"start": 0, "end": 27, "evaluable": True, "n": 1, "low": 40.0, "high": 40.0,
             "ci_low": None, "ci_high": None, "confidence": None},
            {"start": 35, "end": 65, "evaluable": True, "n": 1, "low": 5.0, "high": 5.0,
             "ci_low": None, "ci_high": None, "confidence": None}])
        v = self.verdict(SAT, sat_calls(), sat_rows([40], [10]))
        self.assertEqual((v["verdict"], v["interval"]), ("not supported", None))
        # exactly at the bound
        v = self.verdict(SAT, sat_calls(), sat_rows([40], [8]))
        self.assertEqual(v["verdict"], "supported")

    def test_a_multiple_of_a_negative_recovery_is_not_evaluable(self):
        text = ("recovery(feed-rs.cache, fault: kill, origin: restart) >= "
                "5 * recovery(feed-rs.indexed, fault: kill, origin: restart)")
        runs = {"feed-rs.cache": "feed-rs.cache/baseline+kill/r1",
                "feed-rs.indexed": "feed-rs.indexed/baseline+kill/r1"}
        calls = [call_of(text, f"recovery({c}, fault: kill, origin: restart)",
                         rows=[spec(run, "time_to_recover", "restart")])
                 for c, run in runs.items()]

        def rows(cache, indexed):
            return [(runs["feed-rs.cache"], "time_to_recover", cache, "s", "", None,
                     "restart", ""),
                    (runs["feed-rs.indexed"], "time_to_recover", indexed, "s", "", None,
                     "restart", "")]
        # 84 s against 0.4 s: what the hypothesis means
        self.assertEqual(self.verdict(text, calls, rows(84, 0.4))["verdict"], "supported")
        self.assertEqual(self.verdict(text, calls, rows(1, 0.4))["verdict"], "not supported")
        # five times −1.8 s is −9 s: every recovery is above it, and nothing is compared
        v = self.verdict(text, calls, rows(1, -1.8))
        self.assertEqual((v["verdict"], v["interval"]), ("not evaluable", None))
        self.assertTrue(all(c["evaluable"] for c in v["calls"]))
        # a negative recovery compared as it is means what it says
        alone = "recovery(feed-rs.indexed, fault: kill, origin: restart) < 5s"
        v = self.verdict(alone, [call_of(alone, alone[:alone.index(" <")],
                                         rows=[spec(runs["feed-rs.indexed"], "time_to_recover",
                                                    "restart")])], rows(1, -1.8))
        self.assertEqual(v["verdict"], "supported")

    def test_not_evaluable_when_a_run_does_not_stand(self):
        calls = sat_calls(not_standing=["feed-rs.indexed/ramp/r2: invalid"])
        v = self.verdict(SAT, calls, sat_rows([40], [5]))
        self.assertEqual((v["verdict"], v["interval"]), ("not evaluable", None))
        self.assertEqual([(c["evaluable"], c["n"], c["low"], c["high"]) for c in v["calls"]],
                         [(False, 1, None, None), (True, 1, 5.0, 5.0)])

    def test_not_evaluable_when_a_row_is_missing(self):
        v = self.verdict(SAT, sat_calls(reps_a=(1, 2)), sat_rows([40], [5]))
        self.assertEqual(v["verdict"], "not evaluable")
        self.assertEqual([(c["evaluable"], c["n"]) for c in v["calls"]], [(False, 0), (True, 1)])
        # a row at the wrong definition is not the row
        rows = sat_rows([40], [5])
        rows[0] = rows[0][:6] + ("every-second", "")
        v = self.verdict(SAT, sat_calls(), rows)
        self.assertEqual((v["verdict"], v["calls"][0]["n"]), ("not evaluable", 0))
        # two rows for one key
        v = self.verdict(SAT, sat_calls(), sat_rows([40], [5]) + sat_rows([41], []))
        self.assertEqual((v["verdict"], v["calls"][0]["evaluable"], v["calls"][0]["n"]),
                         ("not evaluable", False, 0))

    def test_not_evaluable_when_a_value_is_empty(self):
        v = self.verdict(SAT, sat_calls(), sat_rows([None], [5], note_a="none"))
        self.assertEqual(v["verdict"], "not evaluable")
        self.assertEqual(v["calls"][0], {"start": 0, "end": 27, "evaluable": False, "n": 1,
                                         "low": None, "high": None, "ci_low": None,
                                         "ci_high": None, "confidence": None})

    def test_a_lower_bound_that_leaves_it_open(self):
        # 30/s, not reached: [30, +inf] >= 5 × 10 is unknown
        v = self.verdict(SAT, sat_calls(), sat_rows([30], [10], note_a="not reached"))
        self.assertEqual((v["verdict"], v["interval"]), ("not evaluable", None))
        self.assertEqual((v["calls"][0]["evaluable"], v["calls"][0]["low"],
                          v["calls"][0]["high"]), (True, 30.0, INF))
        # and the same bound on the right: 5 × [2, +inf] ≤ 40 is unknown as well
        v = self.verdict(SAT, sat_calls(), sat_rows([40], [2], note_b="censored at the stop"))
        self.assertEqual(v["verdict"], "not evaluable")

    def test_a_saturation_below_the_first_step_is_an_upper_bound(self):
        # 40 >= 5 × [0, 5] = [0, 25]: supported whatever the production arm's true value
        v = self.verdict(SAT, sat_calls(), sat_rows([40], [5], note_b="below the first step"))
        self.assertEqual(v["verdict"], "supported")
        self.assertEqual((v["calls"][1]["low"], v["calls"][1]["high"]), (0.0, 5.0))
        # [0, 5] >= 5 × 2 = 10: not supported
        v = self.verdict(SAT, sat_calls(), sat_rows([5], [2], note_a="below the first step"))
        self.assertEqual(v["verdict"], "not supported")
        # 20 >= 5 × [0, 5]: open
        v = self.verdict(SAT, sat_calls(), sat_rows([20], [5], note_b="below the first step"))
        self.assertEqual(v["verdict"], "not evaluable")

    def test_a_lower_bound_that_still_decides(self):
        text = "saturation(feed-rs.indexed) >= 20/s"
        calls = [call_of(text, "saturation(feed-rs.indexed)",
                         rows=[spec(IDX.format(1), "saturation", "objective-windows")])]
        v = self.verdict(text, calls, sat_rows([40], [], note_a="not reached"))
        self.assertEqual(v["verdict"], "supported")
        self.assertEqual((v["calls"][0]["low"], v["calls"][0]["high"]), (40.0, INF))
        # [40, inf] < 20 is false, the other way round
        text = "saturation(feed-rs.indexed) < 20/s"
        calls = [call_of(text, "saturation(feed-rs.indexed)",
                         rows=[spec(IDX.format(1), "saturation", "objective-windows")])]
        v = self.verdict(text, calls, sat_rows([40], [], note_a="censored at the stop"))
        self.assertEqual(v["verdict"], "not supported")

    def p99_verdict(self, values, stat="median", limit="500ms"):
        text = f"p99(svc, stat: {stat}) < {limit}"
        runs = [f"svc/baseline/r{i + 1}" for i in range(len(values))]
        calls = [call_of(text, f"p99(svc, stat: {stat})", stat=stat,
                         rows=[spec(r, "latency_p99") for r in runs])]
        rows = [(r, "latency_p99", v, "ms", "") for r, v in zip(runs, values)]
        return self.verdict(text, calls, rows)

    def test_undecided_with_three_repetitions(self):
        v = self.p99_verdict([400.0, 450.0, 600.0])
        c = v["calls"][0]
        self.assertEqual((c["n"], c["low"], c["high"]), (3, 0.45, 0.45))
        # three values: the median's interval is their range, holding it with chance 3/4
        self.assertEqual((c["ci_low"], c["ci_high"], c["confidence"]), (0.4, 0.6, 0.75))
        self.assertEqual((v["verdict"], v["interval"]), ("supported", "undecided"))

    def test_interval_supported_and_not(self):
        v = self.p99_verdict([100.0, 110.0, 120.0])
        self.assertEqual((v["verdict"], v["interval"]), ("supported", "supported"))
        self.assertEqual((v["calls"][0]["ci_low"], v["calls"][0]["ci_high"]), (0.1, 0.12))
        v = self.p99_verdict([700.0, 800.0, 900.0, 1000.0])
        self.assertEqual((v["verdict"], v["interval"]), ("not supported", "not supported"))
        # the mean of the two middle ones, in floating point: not 0.85
        self.assertEqual(v["calls"][0]["low"], 0.8500000000000001)
        # two repetitions: a value, no interval
        v = self.p99_verdict([100.0, 110.0])
        self.assertEqual((v["verdict"], v["interval"]), ("supported", None))
        c = v["calls"][0]
        self.assertEqual((c["ci_low"], c["ci_high"], c["confidence"]), (None, None, None))

    def test_statistics(self):
        values = [100.0, 200.0, 600.0, 250.0]
        base = [x * 0.001 for x in values]
        # the median's exact interval (n = 4: the range, at 0.875); the mean's bootstrap, a
        # nominal level; no interval for an extreme
        intervals = {"median": (0.1, 0.6, 0.875),
                     "mean": (plain_call_bootstrap("mean", base, 2.5),
                              plain_call_bootstrap("mean", base, 97.5), None),
                     "min": (None, None, None), "max": (None, None, None)}
        verdicts = {"median": "undecided", "mean": "undecided", "min": None, "max": None}
        for stat, want in (("median", 0.225), ("mean", 0.2875), ("min", 0.1), ("max", 0.6)):
            v = self.p99_verdict(values, stat=stat, limit="250ms")
            c = v["calls"][0]
            self.assertEqual((c["low"], c["high"]), (want, want), stat)
            self.assertEqual((c["ci_low"], c["ci_high"], c["confidence"]), intervals[stat], stat)
            self.assertEqual(v["verdict"], "supported" if want < 0.25 else "not supported")
            self.assertEqual(v["interval"], verdicts[stat], stat)
        self.assertLess(intervals["mean"][0], intervals["mean"][1])
        # summed in order, one addition at a time: 0.9999999999999999 / 10
        self.assertEqual(h.statistic("mean", [0.1] * 10), 0.09999999999999999)
        self.assertEqual(h.statistic("mean", [1e16, 1.0, -1e16, 1.0]), 0.25)
        self.assertEqual(h.statistic("median", [3.0, 1.0, 2.0]), 2.0)
        self.assertEqual(h.statistic("median", [INF, 1.0, 2.0, INF]), INF)

    def test_interval_of_the_median_is_the_summarys(self):
        values = [12.5, 7.0, 9.25, 30.0, 8.0]
        self.assertEqual(recompute.median_interval(values), (7.0, 30.0, 0.9375))
        self.assertEqual(h.call_interval("median", values, values), ((7.0, 30.0), 0.9375))
        # the lows' low end, the highs' high end, at the same rank
        highs = [v + 1 for v in values]
        self.assertEqual(h.call_interval("median", values, highs), ((7.0, 31.0), 0.9375))
        # a lower bound's highs are +inf: so is ci_high
        text = "saturation(feed-rs.indexed) >= 20/s"
        calls = [call_of(text, "saturation(feed-rs.indexed)",
                         rows=[spec(IDX.format(r), "saturation", "objective-windows")
                               for r in (1, 2, 3)])]
        rows = sat_rows([40, 50, 30], [])
        rows[1] = rows[1][:4] + ("not reached",) + rows[1][5:]
        v = h.verdict(check_of(text, calls), index_of(rows))
        c = v["calls"][0]
        # lows 40, 50, 30; highs 40, +inf, 30
        self.assertEqual((c["low"], c["high"]), (40.0, 40.0))
        self.assertEqual((c["ci_low"], c["ci_high"], c["confidence"]), (30.0, INF, 0.75))
        self.assertEqual((v["verdict"], v["interval"]), ("supported", "supported"))

    def test_an_extreme_has_no_interval(self):
        runs = {x: [f"{x}/baseline/r{i}" for i in (1, 2, 3)] for x in "ab"}
        rows = ([(r, "latency_p99", v, "ms", "") for r, v in zip(runs["a"], (10, 20, 30))] +
                [(r, "latency_p99", v, "ms", "") for r, v in zip(runs["b"], (50, 70, 60))])

        def check(stat_a):
            text = f"p99(a, stat: {stat_a}) < p99(b, stat: median)"
            calls = [call_of(text, f"p99({x}, stat: {stat})", stat=stat,
                             rows=[spec(r, "latency_p99") for r in runs[x]])
                     for x, stat in (("a", stat_a), ("b", "median"))]
            return h.verdict(check_of(text, calls), index_of(rows))

        v = check("max")
        a, b = v["calls"]
        self.assertEqual((a["n"], a["low"], a["high"]), (3, 0.03, 0.03))
        self.assertEqual((a["ci_low"], a["ci_high"], a["confidence"]), (None, None, None))
        self.assertEqual((b["low"], b["ci_low"], b["ci_high"], b["confidence"]),
                         (0.06, 0.05, 0.07, 0.75))
        # a call without an interval: a verdict, but none across the intervals
        self.assertEqual((v["verdict"], v["interval"]), ("supported", None))
        self.assertEqual(check("min")["interval"], None)
        # with the median in place of the max, both have one: [0.01, 0.03] < [0.05, 0.07]
        v = check("median")
        self.assertEqual((v["verdict"], v["interval"]), ("supported", "supported"))
        self.assertEqual([c["confidence"] for c in v["calls"]], [0.75, 0.75])
        for stat in ("min", "max"):
            self.assertEqual(h.call_interval(stat, [1.0, 2.0, 3.0], [1.0, 2.0, 3.0]),
                             (None, None))

    def test_step_rates(self):
        text = "cpu(database, at: first-breach, of: svc) >= 90%"
        call = call_of(text, "cpu(database, at: first-breach, of: svc)")
        key = ("svc/ramp/r1", "cpu_mean_pct_of_cap")
        rows = [key + (95.0, "%", "", 40.0, "first-breach", "svc-database"),
                key + (10.0, "%", "", 30.0, "step", "svc-database"),
                key + (91.0, "%", "", 40.0, "step", "svc-database")]
        for s, want in ((spec("svc/ramp/r1", "cpu_mean_pct_of_cap", "step", "svc-database",
                              step_rate=40), (True, 0.91)),
                        (spec("svc/ramp/r1", "cpu_mean_pct_of_cap", "step", "svc-database",
                              step_rate=30), (False, 0.1)),
                        (spec("svc/ramp/r1", "cpu_mean_pct_of_cap", "step", "svc-database",
                              step_rate=50), None),
                        # no step rate asked: a row with one is not it
                        (spec("svc/ramp/r1", "cpu_mean_pct_of_cap", "first-breach",
                              "svc-database"), None)):
            with self.subTest(spec=s):
                c = dict(call, rows=[s])
                v = h.verdict(check_of(text, [c]), index_of(rows))
                if want is None:
                    self.assertEqual((v["verdict"], v["calls"][0]["n"]), ("not evaluable", 0))
                else:
                    self.assertEqual((v["verdict"] == "supported", v["calls"][0]["low"]), want)

    def test_percent_rows_at_the_literal(self):
        # the row 95 (%) and the literal 95% are one number: `<=` holds at the bound
        text = "cpu(database, of: svc) <= 95%"
        c = call_of(text, "cpu(database, of: svc)",
                    rows=[spec("svc/b/r1", "cpu_mean_pct_of_cap", "measured", "svc-database")])
        rows = [("svc/b/r1", "cpu_mean_pct_of_cap", 95.0, "%", "", None, "measured", "svc-database")]
        v = h.verdict(check_of(text, [c]), index_of(rows))
        self.assertEqual(v["verdict"], "supported")
        v = h.verdict(check_of(text.replace("<=", "<"), [dict(c)]), index_of(rows))
        self.assertEqual(v["verdict"], "not supported")

    def test_logic_over_calls(self):
        text = ("p99(svc) <= 500ms or not (detect(svc, fault: f, detect: failed-request) > 2s)")
        c1 = call_of(text, "p99(svc)", rows=[spec("svc/b/r1", "latency_p99")])
        c2 = call_of(text, "detect(svc, fault: f, detect: failed-request)",
                     rows=[spec("svc/b+f/r1", "detect_failed_request")])
        for p99, detect, want in ((600, 1.5, "supported"), (600, 3, "not supported"),
                                  (400, 3, "supported")):
            rows = [("svc/b/r1", "latency_p99", float(p99), "ms", ""),
                    ("svc/b+f/r1", "detect_failed_request", float(detect), "s", "")]
            self.assertEqual(h.verdict(check_of(text, [c1, c2]), index_of(rows))["verdict"],
                             want, (p99, detect))
        # one call not evaluable makes the check not evaluable, even where `or` would hold
        rows = [("svc/b/r1", "latency_p99", 400.0, "ms", "")]
        v = h.verdict(check_of(text, [c1, c2]), index_of(rows))
        self.assertEqual(v["verdict"], "not evaluable")

    def test_unresolved(self):
        v = h.verdict(check_of("p99(gone) < 1s", [], unresolved="unknown contender `gone`",
                               which="registered"), h.RowIndex())
        self.assertEqual(v, {"hypothesis": "H1", "which": "registered",
                             "verdict": "not evaluable", "interval": None, "calls": [],
                             "compared": []})

    def test_json_numbers(self):
        text = h.verdicts_text({"format_version": 2, "verdicts": [
            {"low": 40.0, "high": INF, "ci_low": -INF, "ci_high": None, "n": 3, "x": -0.0}]})
        self.assertEqual(json.loads(text)["verdicts"][0],
                         {"low": 40.0, "high": "+inf", "ci_low": "-inf", "ci_high": None,
                          "n": 3, "x": 0.0})


# ---------------------------------------------------------------------------------------
# Checks that compare two arms


def found(text):
    """The comparisons of two arms in text: (A's call as written, form, bound, OP)."""
    tree, calls = h.parse_check(text)
    return [(text[calls[a.a].start:calls[a.a].end], a.form, a.bound, a.op)
            for a in h.two_arms(tree)]


def median_call(start, end, values, repetitions=None):
    """(stat, CallValue) of a median call over values (base units), repetitions 1, 2, …"""
    reps = repetitions or range(1, len(values) + 1)
    return "median", h.CallValue({"start": start, "end": end}, exact=list(zip(reps, values)))


B3 = [1.0, 2.0, 1.5, 1.2, 1.8]
A3 = [3.0 * x for x in B3]


class ComparingTwoArms(unittest.TestCase):
    def test_the_forms_are_found_either_way_round_and_nothing_else(self):
        self.assertEqual(
            found("saturation(x.a) >= 5 * saturation(x.b) and "
                  "saturation(y.a) >= saturation(y.b) * 5"),
            [("saturation(x.a)", "ratio", 5.0, ">="), ("saturation(y.a)", "ratio", 5.0, ">=")])
        # mirrored: `k · b < a` is `a > k · b`
        self.assertEqual(found("5 * p99(x.b) < p99(x.a)"), [("p99(x.a)", "ratio", 5.0, ">")])
        self.assertEqual(found("p99(x.b) * 2 >= p99(x.a)"), [("p99(x.a)", "ratio", 2.0, "<=")])
        # a call alone is a difference against 0, not a ratio with k = 1
        self.assertEqual(found("p99(x.a) < p99(x.b)"), [("p99(x.a)", "difference", 0.0, "<")])
        self.assertEqual(found("(p99(x.b)) >= p99(x.a)"),
                         [("p99(x.b)", "difference", 0.0, ">=")])
        # a difference, against c in base units, or −c
        self.assertEqual(found("p99(x.a) <= p99(x.b) + 50ms"),
                         [("p99(x.a)", "difference", 0.05, "<=")])
        self.assertEqual(found("p99(x.a) <= 50ms + p99(x.b)"),
                         [("p99(x.a)", "difference", 0.05, "<=")])
        self.assertEqual(found("not (p99(x.a) <= p99(x.b) - 2ms)"),
                         [("p99(x.a)", "difference", -0.002, "<=")])
        self.assertEqual(found("p99(x.b) + 50ms > p99(x.a)"),
                         [("p99(x.a)", "difference", 0.05, "<")])
        # a difference's c may be unitless; a ratio's k must be
        self.assertEqual(found("requests(x.a) > requests(x.b) + 3"),
                         [("requests(x.a)", "difference", 3.0, ">")])
        # in and, or, not, in order
        self.assertEqual(
            [f[0] for f in found("p99(a) < 2 * p99(b) or not (p99(c) > p99(d) and "
                                 "p99(e) >= p99(f) - 1s)")],
            ["p99(a)", "p99(c)", "p99(e)"])
        # interval arithmetic stays: a literal bound, a scale with a unit, a sum of two
        # calls, an equality, a constant minus a call; a quotient, a negative scale, a
        # scale on both sides, two scales
        for other in ("p99(x.a) < 5ms", "p99(x.a) < 2ms * p99(x.b)",
                      "p99(x.a) < p99(x.b) + p99(x.c)", "p99(x.a) == p99(x.b)",
                      "p99(x.a) != p99(x.b)", "p99(x.a) < 5ms - p99(x.b)",
                      "p99(x.a) < p99(x.b) / 2", "p99(x.a) < -2 * p99(x.b)",
                      "2 * p99(x.a) < 3 * p99(x.b)", "p99(x.a) < 2 * 3 * p99(x.b)",
                      "p99(x.a) - p99(x.b) < 5ms"):
            self.assertEqual(found(other), [], other)

    def test_spans(self):
        # the whole comparison, in bytes; with the parentheses it stands in
        for text, want in (("p99(x.a) >= 2 * p99(x.b)", (0, 24)),
                           ("not (p99(x.a) <= p99(x.b) - 2ms)", (4, 32)),
                           ("p99(c) < 1s or ((2 * p99(b) < p99(a)))", (15, 38)),
                           ("p99(a) >= (2 * p99(b)) and p99(c) < 1s", (0, 22))):
            tree, _ = h.parse_check(text)
            (arms,) = h.two_arms(tree)
            self.assertEqual(arms.span, want, text)

    def test_a_ratio_is_decided_by_its_interval(self):
        text = "p99(x.a) >= 2 * p99(x.b)"
        (arms,) = h.two_arms(h.parse_check(text)[0])
        # a is 3× b in every round, round effects shared: paired, the ratio is exactly 3
        calls = {0: median_call(0, 8, A3), 1: median_call(16, 24, B3)}
        entry, holds = h.compared(arms, calls, True)
        self.assertTrue(entry["paired"])
        self.assertEqual(entry["low"], entry["high"])
        self.assertAlmostEqual(entry["low"], 3.0, delta=1e-12)
        self.assertEqual((holds, entry["confidence"], entry["verdict"]),
                         (True, 0.9375, "supported"))
        self.assertEqual({k: entry[k] for k in ("start", "end", "form", "bound")},
                         {"start": 0, "end": 24, "form": "ratio", "bound": 2.0})
        # unpaired, the round effects stay in: the ratio's interval reaches below 2
        entry, holds = h.compared(arms, calls, False)
        self.assertFalse(entry["paired"])
        self.assertLess(entry["low"], 2.0)
        self.assertGreater(entry["high"], 2.0)
        self.assertEqual((holds, entry["verdict"]), (None, "undecided"))
        lo, hi, conf = comparison.shift_interval([math.log(x) for x in A3],
                                                 [math.log(x) for x in B3])
        self.assertEqual((entry["low"], entry["high"], entry["confidence"]),
                         (math.exp(lo), math.exp(hi), conf))
        # paired only with the same repetitions in both calls (matched by number)
        other = {0: median_call(0, 8, A3, repetitions=[2, 3, 4, 5, 6]), 1: calls[1]}
        self.assertFalse(h.compared(arms, other, True)[0]["paired"])
        shuffled = {0: median_call(0, 8, A3[::-1], repetitions=[5, 4, 3, 2, 1]), 1: calls[1]}
        entry, holds = h.compared(arms, shuffled, True)
        self.assertEqual((entry["paired"], holds), (True, True))
        self.assertAlmostEqual(entry["high"], 3.0, delta=1e-12)
        # the other way: `<` 2 is false
        (arms,) = h.two_arms(h.parse_check("p99(x.a) < 2 * p99(x.b)")[0])
        entry, holds = h.compared(arms, calls, True)
        self.assertEqual((holds, entry["verdict"]), (False, "not supported"))

    def test_what_keeps_interval_arithmetic(self):
        (arms,) = h.two_arms(h.parse_check("p99(x.a) >= 2 * p99(x.b)")[0])
        calls = {0: median_call(0, 8, A3), 1: median_call(16, 24, B3)}
        # a bound among the values
        bounded = dict(calls)
        bounded[1] = ("median", h.CallValue({}, exact=None))
        self.assertIsNone(h.compared(arms, bounded, True))
        # a mean
        self.assertIsNone(h.compared(arms, {0: ("mean", calls[0][1]), 1: calls[1]}, True))
        # a ratio of a value not above 0
        zero = {0: calls[0], 1: median_call(16, 24, [0.0] + B3[1:])}
        self.assertIsNone(h.compared(arms, zero, True))
        # … which a difference does not mind
        (diff,) = h.two_arms(h.parse_check("p99(x.a) >= p99(x.b) + 1s")[0])
        self.assertIsNotNone(h.compared(diff, zero, True))

    def test_a_difference_is_decided_by_its_interval(self):
        # a − b is 40–60 ms in every round, against + 50 ms: open
        text = "p99(x.a) <= p99(x.b) + 50ms"
        (arms,) = h.two_arms(h.parse_check(text)[0])
        b = [0.1, 0.2, 0.3, 0.4, 0.5]
        a = [x + d for x, d in zip(b, [0.04, 0.05, 0.06, 0.045, 0.055])]
        calls = {0: median_call(0, 8, a), 1: median_call(12, 20, b)}
        entry, holds = h.compared(arms, calls, True)
        self.assertEqual((entry["form"], entry["bound"], entry["paired"]),
                         ("difference", 0.05, True))
        self.assertLess(entry["low"], 0.05)
        self.assertGreater(entry["high"], 0.05)
        self.assertEqual((holds, entry["verdict"], entry["confidence"]),
                         (None, "undecided", 0.9375))
        self.assertEqual((entry["low"], entry["high"], entry["confidence"]),
                         comparison.paired_shift_interval([x - y for x, y in zip(a, b)]))
        # against + 70 ms it holds, against − 10 ms (`- 10ms`) it does not
        for bound, want in (("+ 70ms", True), ("- 10ms", False)):
            (arms,) = h.two_arms(h.parse_check(f"p99(x.a) <= p99(x.b) {bound}")[0])
            self.assertEqual(h.compared(arms, calls, True)[1], want, bound)
        # unpaired: the Hodges–Lehmann interval of a_i − b_j
        entry, _ = h.compared(arms, calls, False)
        self.assertEqual((entry["low"], entry["high"], entry["confidence"]),
                         comparison.shift_interval(a, b))

    def test_a_bare_comparison_is_a_difference_and_zeros_do_not_matter(self):
        # `f(A) >= f(B)` is A − B against 0: a zero among the values keeps its interval
        (arms,) = h.two_arms(h.parse_check("p99(x.a) >= p99(x.b)")[0])
        zero = {0: median_call(0, 8, A3), 1: median_call(12, 20, [0.0] + B3[1:])}
        entry, holds = h.compared(arms, zero, True)
        self.assertEqual((entry["form"], entry["bound"], entry["paired"], holds),
                         ("difference", 0.0, True, True))
        self.assertEqual((entry["low"], entry["high"], entry["confidence"]),
                         comparison.paired_shift_interval(
                             [x - y for x, y in zip(A3, [0.0] + B3[1:])]))

    def test_the_ends_snap_to_the_bound(self):
        # A = 3 · B exactly: ln and exp give 3.0000000000000004, which snaps to 3, so
        # `<=` and `>=` 3 hold and `<`, `>` do not
        raw = h.arms_interval("ratio", list(zip(range(1, 6), A3)),
                              list(zip(range(1, 6), B3)), True)[1]
        self.assertNotEqual(raw[0], 3.0)
        calls = {0: median_call(0, 8, A3), 1: median_call(15, 23, B3)}
        for op, want in (("<=", True), (">=", True), ("<", False), (">", False)):
            (arms,) = h.two_arms(h.parse_check(f"p99(x.a) {op} 3 * p99(x.b)")[0])
            entry, holds = h.compared(arms, calls, True)
            self.assertEqual((entry["low"], entry["high"], holds), (3.0, 3.0, want), op)
        # within 1e-9 · (1 + |bound|) of the bound, and no further
        self.assertEqual(h.snap(3.0 + 3.9e-9, 3.0), 3.0)
        self.assertEqual(h.snap(3.0 - 4e-9, 3.0), 3.0)
        self.assertEqual(h.snap(3.0 + 4.1e-9, 3.0), 3.0 + 4.1e-9)
        self.assertEqual(h.snap(-0.9e-9, 0.0), 0.0)
        self.assertEqual(h.snap(1.1e-9, 0.0), 1.1e-9)
        self.assertEqual(h.snap(-2.0 + 2.9e-9, -2.0), -2.0)

    def test_never_against_the_point_verdict(self):
        # every round's ratio but three is 3: the shift's interval, [2.35, 3], is above 2,
        # but median(a) / median(b) = 11 / 6 is below: undecided
        a, b = P_A, P_B
        (arms,) = h.two_arms(h.parse_check("p99(x.a) >= 2 * p99(x.b)")[0])
        calls = {0: median_call(0, 8, a), 1: median_call(16, 24, b)}
        entry, holds = h.compared(arms, calls, True)
        self.assertGreater(entry["low"], 2.0)
        self.assertEqual((holds, entry["verdict"]), (None, "undecided"))
        self.assertIs(h.point_holds(arms, calls[0][1], calls[1][1]), False)
        # against 1.5 both say it holds
        (arms,) = h.two_arms(h.parse_check("p99(x.a) >= 1.5 * p99(x.b)")[0])
        self.assertEqual(h.compared(arms, calls, True)[1], True)
        # a difference's point verdict compares median(a) with median(b) + c (or − c)
        for text, want in (("p99(x.a) >= p99(x.b) + 5", True),
                           ("p99(x.a) > p99(x.b) + 5", False),
                           ("p99(x.a) > p99(x.b) - 1", True),
                           ("p99(x.a) <= p99(x.b)", False)):
            (arms,) = h.two_arms(h.parse_check(text)[0])
            self.assertIs(h.point_holds(arms, calls[0][1], calls[1][1]), want, text)


# every ratio 3 but three (2.75, 2.2, 1.83): median(a) = 11 is below 2 · median(b) = 12
P_B = [float(x) for x in range(1, 12)]
P_A = [3.0, 6.0, 9.0, 11.0, 11.0, 11.0, 21.0, 24.0, 27.0, 30.0, 33.0]


def two_arm_rows(a, b, unit="1/s", notes_a=(), notes_b=()):
    ows = ("objective-windows", "")
    notes_a = list(notes_a) + [""] * (len(a) - len(notes_a))
    notes_b = list(notes_b) + [""] * (len(b) - len(notes_b))
    return ([(IDX.format(i + 1), "saturation", v, unit, n, None, *ows)
             for i, (v, n) in enumerate(zip(a, notes_a))] +
            [(PROD.format(i + 1), "saturation", v, unit, n, None, *ows)
             for i, (v, n) in enumerate(zip(b, notes_b))])


SAT2 = "saturation(feed-rs.indexed) >= 2 * saturation(feed-rs.production)"


def sat2_calls(text=SAT2, reps=(1, 2, 3, 4, 5), stats=("median", "median")):
    return [call_of(text, "saturation(feed-rs.indexed)", stat=stats[0],
                    rows=[spec(IDX.format(r), "saturation", "objective-windows") for r in reps]),
            call_of(text, "saturation(feed-rs.production)", stat=stats[1],
                    rows=[spec(PROD.format(r), "saturation", "objective-windows")
                          for r in reps])]


class TwoArmVerdicts(unittest.TestCase):
    def verdict(self, rows, text=SAT2, paired_rounds=True, **kw):
        return h.verdict(check_of(text, sat2_calls(text, **kw)), index_of(rows), paired_rounds)

    def test_the_ratio_decides_where_the_intervals_do_not(self):
        v = self.verdict(two_arm_rows(A3, B3))
        # the medians' intervals alone, [3, 6] against 2 × [1, 2], leave it open; the ratio
        # is 3 in every round
        self.assertEqual([(c["ci_low"], c["ci_high"]) for c in v["calls"]],
                         [(3.0, 6.0), (1.0, 2.0)])
        self.assertEqual((v["verdict"], v["interval"]), ("supported", "supported"))
        (c,) = v["compared"]
        self.assertEqual({k: c[k] for k in ("start", "end", "form", "bound", "paired",
                                            "confidence", "verdict")},
                         {"start": 0, "end": len(SAT2), "form": "ratio", "bound": 2.0,
                          "paired": True, "confidence": 0.9375, "verdict": "supported"})
        self.assertAlmostEqual(c["low"], 3.0, delta=1e-12)
        # unpaired (the plan's order makes no rounds): undecided
        v = self.verdict(two_arm_rows(A3, B3), paired_rounds=False)
        self.assertEqual((v["interval"], v["compared"][0]["paired"],
                          v["compared"][0]["verdict"]), ("undecided", False, "undecided"))

    def test_in_logic_with_other_comparisons(self):
        text = (f"not ({SAT2}) or saturation(feed-rs.indexed) == "
                "saturation(feed-rs.production)")
        calls = sat2_calls(text)
        # the second pair of calls: the same runs
        second = text.index("saturation(feed-rs.indexed) ==")
        calls += [dict(calls[0], start=second, end=second + 27),
                  dict(calls[1], start=second + 31, end=len(text))]
        v = h.verdict(check_of(text, calls), index_of(two_arm_rows(A3, B3)), True)
        # not true or (interval arithmetic: [3, 6] == [1, 2] is false): not supported
        self.assertEqual(v["interval"], "not supported")
        self.assertEqual([(c["start"], c["end"]) for c in v["compared"]],
                         [(4, 4 + len(SAT2) + 2)])

    def test_a_bound_keeps_interval_arithmetic(self):
        # a lower bound among a's values: no comparison of the two arms; the intervals,
        # [30, +inf] against 2 × [1, 2], decide
        a = [30.0, 31.0, 32.0, 33.0, 34.0]
        v = self.verdict(two_arm_rows(a, B3, notes_a=["not reached"]))
        self.assertEqual((v["interval"], v["compared"]), ("supported", []))
        self.assertEqual(v["calls"][0]["ci_high"], INF)
        # and with a = 3b and one lower bound: open
        v = self.verdict(two_arm_rows(A3, B3, notes_b=["", "", "not reached"]))
        self.assertEqual((v["interval"], v["compared"]), ("undecided", []))

    def test_never_against_the_point_verdict(self):
        # the shift's interval says supported, the medians' ratio 11 / 6 not: undecided
        v = self.verdict(two_arm_rows(P_A, P_B), reps=range(1, 12))
        self.assertEqual((v["verdict"], v["interval"], v["compared"][0]["verdict"]),
                         ("not supported", "undecided", "undecided"))

    def test_only_medians_with_intervals(self):
        v = self.verdict(two_arm_rows(A3, B3), stats=("mean", "median"))
        self.assertEqual((v["compared"], v["interval"] is not None), ([], True))
        # fewer than 3 repetitions: no verdict across the intervals, and nothing compared
        v = self.verdict(two_arm_rows(A3[:2], B3[:2]), reps=(1, 2))
        self.assertEqual((v["verdict"], v["interval"], v["compared"]),
                         ("supported", None, []))

    def test_a_call_in_parentheses(self):
        # feedbench gives a call in parentheses the span of the parentheses (the outermost
        # pair); it is the same call, and the same comparison of two arms
        for text in ("saturation(feed-rs.indexed) >= 2 * (saturation(feed-rs.production))",
                     "((saturation(feed-rs.indexed))) >= 2 * ( saturation(feed-rs.production) )"):
            with self.subTest(text=text):
                _, parsed = h.parse_check(text)
                calls = sat2_calls(text)
                for c, p in zip(calls, parsed):
                    c["start"], c["end"] = p.spans[-1]
                self.assertEqual(text[calls[1]["start"]], "(")
                v = h.verdict(check_of(text, calls), index_of(two_arm_rows(A3, B3)), True)
                self.assertEqual([(c["start"], c["end"]) for c in v["calls"]],
                                 [p.spans[-1] for p in parsed])  # as given
                self.assertEqual((v["verdict"], v["interval"]), ("supported", "supported"))
                (c,) = v["compared"]
                self.assertEqual((c["start"], c["end"], c["form"], c["paired"]),
                                 (0, len(text), "ratio", True))

    def test_values_in_base_units(self):
        # 0.9 s against 100 ms, in rows of s and ms: a − b is 0.8 s in every round
        text = "p99(x.a) >= p99(x.b) + 750ms"
        runs = {x: [f"{x}/b/r{r}" for r in (1, 2, 3, 4, 5)] for x in ("x.a", "x.b")}
        calls = [call_of(text, f"p99({x})", rows=[spec(r, "latency_p99") for r in runs[x]])
                 for x in ("x.a", "x.b")]
        rows = ([(r, "latency_p99", 0.9 + i / 10, "s", "") for i, r in enumerate(runs["x.a"])] +
                [(r, "latency_p99", 100.0 + i * 100, "ms", "")
                 for i, r in enumerate(runs["x.b"])])
        v = h.verdict(check_of(text, calls), index_of(rows), True)
        (c,) = v["compared"]
        self.assertEqual((c["form"], c["bound"], c["paired"], c["verdict"]),
                         ("difference", 0.75, True, "supported"))
        self.assertAlmostEqual(c["low"], 0.8, delta=1e-12)
        self.assertAlmostEqual(c["high"], 0.8, delta=1e-12)


FB_TEXT = "cpu(database, at: first-breach, of: svc) >= 90%"
FB_CALL = "cpu(database, at: first-breach, of: svc)"
RAMP = "svc/ramp/r1"


def fb_rows(first_breach=40.0, note="", last=50.0, definition="objective-windows"):
    """A ramp of steps 30, 40, 50: its database's CPU per step (10, 91, 97 %), the
    first-breach row (95 %) at `last`, and its first_breach row under `definition` (its
    value None for an empty one; no row for False)."""
    cpu = (RAMP, "cpu_mean_pct_of_cap")
    rows = [cpu + (10.0, "%", "", 30.0, "step", "svc-database"),
            cpu + (91.0, "%", "", 40.0, "step", "svc-database"),
            cpu + (97.0, "%", "", 50.0, "step", "svc-database"),
            cpu + (95.0, "%", "", last, "first-breach", "svc-database")]
    if first_breach is not False:
        rows.append((RAMP, "first_breach", first_breach, "1/s", note, None, definition, ""))
    return rows


def fb_spec(definition="first-breach"):
    return spec(RAMP, "cpu_mean_pct_of_cap", definition, "svc-database", at_first_breach=True)


class AtFirstBreach(unittest.TestCase):
    """`at_first_breach`: the row at the step rate of the run's first_breach row
    (objective-windows), and none when the ramp never breached."""

    def verdict(self, rows, s=None):
        c = call_of(FB_TEXT, FB_CALL, rows=[s or fb_spec()])
        return h.verdict(check_of(FB_TEXT, [c]), index_of(rows))

    def assertNotEvaluable(self, v):
        self.assertEqual((v["verdict"], v["calls"][0]["evaluable"], v["calls"][0]["n"],
                          v["calls"][0]["low"]), ("not evaluable", False, 0, None))

    def test_the_row_at_the_first_breach(self):
        # first_breach 40, rows at 30 and 40 (and 50): the 40 row
        v = self.verdict(fb_rows(), fb_spec("step"))
        self.assertEqual((v["verdict"], v["calls"][0]["n"], v["calls"][0]["low"]),
                         ("supported", 1, 0.91))
        v = self.verdict(fb_rows(last=40.0))
        self.assertEqual((v["verdict"], v["calls"][0]["low"]), ("supported", 95 * 0.01))
        # the first-breach row at another step than the first breach is not it
        self.assertNotEvaluable(self.verdict(fb_rows(last=50.0)))

    def test_a_ramp_that_never_breached(self):
        # the first-breach row is at the last step, but the ramp did not breach
        rows = fb_rows(first_breach=None, note="not reached", last=50.0)
        self.assertNotEvaluable(self.verdict(rows))
        self.assertNotEvaluable(self.verdict(rows, fb_spec("step")))
        rows = fb_rows(first_breach=None, note="censored at the stop", last=50.0)
        self.assertNotEvaluable(self.verdict(rows))

    def test_no_first_breach_row(self):
        self.assertNotEvaluable(self.verdict(fb_rows(first_breach=False, last=40.0)))
        # another definition's first_breach is not it
        self.assertNotEvaluable(self.verdict(fb_rows(last=40.0, definition="throughput-knee")))
        # nor another run's
        rows = fb_rows(first_breach=False, last=40.0)
        rows.append(("svc/ramp/r2", "first_breach", 40.0, "1/s", "", None, "objective-windows", ""))
        self.assertNotEvaluable(self.verdict(rows))
        # nor one with a step rate or a container
        rows = fb_rows(first_breach=False, last=40.0)
        rows.append((RAMP, "first_breach", 40.0, "1/s", "", 40.0, "objective-windows", ""))
        rows.append((RAMP, "first_breach", 40.0, "1/s", "", None, "objective-windows", "x"))
        self.assertNotEvaluable(self.verdict(rows))

    def test_two_first_breach_rows(self):
        rows = fb_rows(last=40.0)
        rows.append((RAMP, "first_breach", 40.0, "1/s", "", None, "objective-windows", ""))
        self.assertNotEvaluable(self.verdict(rows))

    def test_one_row_at_that_step(self):
        # a first breach at a step with no row, or with two
        self.assertNotEvaluable(self.verdict(fb_rows(first_breach=60.0), fb_spec("step")))
        rows = fb_rows()
        rows.append(rows[1])
        self.assertNotEvaluable(self.verdict(rows, fb_spec("step")))

    def test_wanted_keys_hold_the_first_breach(self):
        c = call_of(FB_TEXT, FB_CALL, rows=[fb_spec()])
        self.assertEqual(h.wanted_keys([check_of(FB_TEXT, [c])]),
                         {(RAMP, "cpu_mean_pct_of_cap", "first-breach", "svc-database"),
                          (RAMP, "first_breach", "objective-windows", "")})
        c = call_of(FB_TEXT, FB_CALL, rows=[dict(fb_spec(), at_first_breach=False)])
        self.assertEqual(h.wanted_keys([check_of(FB_TEXT, [c])]),
                         {(RAMP, "cpu_mean_pct_of_cap", "first-breach", "svc-database")})


# ---------------------------------------------------------------------------------------
# The command


class Command(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name)
        self.checks = self.root / "checks.json"
        self.metrics = self.root / "metrics.csv"
        self.out = self.root / "out"
        self.doc = {"format_version": 2, "checks": [
            {"hypothesis": "H1", "which": "current", "check": SAT, "unresolved": None,
             "registered": True, "calls": sat_calls()},
            {"hypothesis": "H1", "which": "registered", "check": "p99(x) < 1s",
             "unresolved": "unknown contender `x`", "registered": True, "calls": []}]}
        self.write_checks()
        metrics_csv(self.metrics, [
            {"run": IDX.format(1), "metric": "saturation", "definition": "objective-windows",
             "value": "30", "unit": "1/s", "note": "not reached"},
            {"run": PROD.format(1), "metric": "saturation", "definition": "objective-windows",
             "value": "5", "unit": "1/s"},
            {"run": PROD.format(1), "metric": "saturation", "definition": "objective-windows",
             "second": "3", "value": "7", "unit": "1/s"}])

    def tearDown(self):
        self.tmp.cleanup()

    def write_checks(self):
        self.checks.write_text(json.dumps(self.doc, indent=1))

    def test_metrics_mode(self):
        p = twin("--out", self.out, "--checks", self.checks, "--metrics", self.metrics)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(x.name for x in self.out.iterdir()), ["verdicts.json"])
        doc = json.loads((self.out / "verdicts.json").read_text())
        self.assertEqual(doc, {"format_version": 2, "verdicts": [
            {"hypothesis": "H1", "which": "current", "verdict": "supported", "interval": None,
             "calls": [{"start": 0, "end": 27, "evaluable": True, "n": 1, "low": 30.0,
                        "high": "+inf", "ci_low": None, "ci_high": None,
                        "confidence": None},
                       {"start": 35, "end": 65, "evaluable": True, "n": 1, "low": 5.0,
                        "high": 5.0, "ci_low": None, "ci_high": None,
                        "confidence": None}],
             "compared": []},
            {"hypothesis": "H1", "which": "registered", "verdict": "not evaluable",
             "interval": None, "calls": [], "compared": []}]})

    def test_metrics_mode_at_first_breach(self):
        # the first_breach rows are kept with the rows the checks read
        text = "cpu(replica-1, at: first-breach, of: svc) < 50%"
        c = call_of(text, "cpu(replica-1, at: first-breach, of: svc)", stat="max",
                    rows=[spec(f"svc/ramp/r{r}", "cpu_mean_pct_of_cap", "first-breach", "r-1",
                               at_first_breach=True) for r in (1, 2)])
        self.doc = {"format_version": 2, "checks": [
            {"hypothesis": "H2", "which": "current", "check": text, "unresolved": None,
             "registered": True, "calls": [c]}]}
        self.write_checks()

        def row(r, metric, value, step_rate="", definition="first-breach", container="r-1",
                unit="%", note=""):
            return {"run": f"svc/ramp/r{r}", "metric": metric, "definition": definition,
                    "container": container, "step_rate": step_rate, "value": value,
                    "unit": unit, "note": note}

        fb = dict(definition="objective-windows", container="", unit="1/s")
        cpu = [row(1, "cpu_mean_pct_of_cap", "20", "30"), row(1, "cpu_mean_pct_of_cap", "40", "40"),
               row(2, "cpu_mean_pct_of_cap", "45", "50")]
        for first_breaches, want in (
                ([row(1, "first_breach", "40", **fb), row(2, "first_breach", "50", **fb)],
                 ("supported", 2, 0.45)),
                # r2 never breached: its first-breach row at the last step is not read
                ([row(1, "first_breach", "40", **fb),
                  row(2, "first_breach", "", note="not reached", **fb)],
                 ("not evaluable", 0, None)),
                ([row(1, "first_breach", "40", **fb)], ("not evaluable", 0, None))):
            with self.subTest(first_breaches=first_breaches):
                metrics_csv(self.metrics, cpu + first_breaches)
                p = twin("--out", self.out, "--checks", self.checks, "--metrics", self.metrics)
                self.assertEqual(p.returncode, 0, p.stderr)
                v = json.loads((self.out / "verdicts.json").read_text())["verdicts"][0]
                self.assertEqual((v["verdict"], v["calls"][0]["n"], v["calls"][0]["low"]), want)

    def test_metrics_mode_compares_two_arms(self):
        self.doc = {"format_version": 2, "checks": [
            {"hypothesis": "H3", "which": "current", "check": SAT2, "unresolved": None,
             "registered": True, "calls": sat2_calls()}]}
        self.write_checks()
        ows = {"metric": "saturation", "definition": "objective-windows", "unit": "1/s"}
        metrics_csv(self.metrics,
                    [dict(ows, run=IDX.format(r), value=str(3 * 2 ** r)) for r in range(1, 6)] +
                    [dict(ows, run=PROD.format(r), value=str(2 ** r)) for r in range(1, 6)])
        for flags, paired, verdict in (((), False, "undecided"),
                                       (("--paired-rounds",), True, "supported")):
            with self.subTest(flags=flags):
                p = twin("--out", self.out, "--checks", self.checks, "--metrics", self.metrics,
                         *flags)
                self.assertEqual(p.returncode, 0, p.stderr)
                (v,) = json.loads((self.out / "verdicts.json").read_text())["verdicts"]
                self.assertEqual((v["verdict"], v["interval"]), ("supported", verdict))
                (c,) = v["compared"]
                self.assertEqual(sorted(c), ["bound", "confidence", "end", "form", "high",
                                             "low", "paired", "start", "verdict"])
                self.assertEqual({k: c[k] for k in ("start", "end", "form", "bound", "paired",
                                                    "verdict")},
                                 {"start": 0, "end": len(SAT2), "form": "ratio", "bound": 2.0,
                                  "paired": paired, "verdict": verdict})
                if paired:
                    self.assertAlmostEqual(c["low"], 3.0, delta=1e-12)
                    self.assertAlmostEqual(c["high"], 3.0, delta=1e-12)
                    self.assertEqual(c["confidence"], 0.9375)
                else:
                    # the 25 ratios 3·2^(i−j), sorted: the 3rd to the 23rd (k* = 3 of 5
                    # against 5, coverage 1 − 2·4/252)
                    self.assertAlmostEqual(c["low"], 3 / 8, delta=1e-12)
                    self.assertAlmostEqual(c["high"], 24.0, delta=1e-12)
                    self.assertEqual(c["confidence"], 1 - 8 / 252)

    def test_a_span_with_white_space_around_the_call(self):
        self.doc["checks"][0]["calls"][0]["end"] = 28  # "saturation(feed-rs.indexed) "
        self.write_checks()
        p = twin("--out", self.out, "--checks", self.checks, "--metrics", self.metrics)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads((self.out / "verdicts.json").read_text())
        self.assertEqual(doc["verdicts"][0]["calls"][0]["end"], 28)  # as given
        self.assertEqual(doc["verdicts"][0]["verdict"], "supported")

    def test_a_span_of_parentheses_around_the_call(self):
        # `p99(x.a) >= 2 * (p99(x.b))` as feedbench gives it: the second call at [16, 26)
        text = "p99(x.a) >= 2 * (p99(x.b))"
        runs = {x: [f"{x}/b/r{r}" for r in (1, 2, 3)] for x in ("x.a", "x.b")}
        calls = [call_of(text, f"p99({x})", rows=[spec(r, "latency_p99") for r in runs[x]])
                 for x in ("x.a", "x.b")]
        calls[1].update(start=16, end=26)
        self.doc = {"format_version": 2, "checks": [
            {"hypothesis": "H1", "which": "current", "check": text, "unresolved": None,
             "registered": True, "calls": calls}]}
        metrics_csv(self.metrics,
                    [{"run": r, "metric": "latency_p99", "value": str(30 + i), "unit": "ms"}
                     for i, r in enumerate(runs["x.a"])] +
                    [{"run": r, "metric": "latency_p99", "value": str(10 + i), "unit": "ms"}
                     for i, r in enumerate(runs["x.b"])])
        # the parentheses with white space around them, or the call inside them: the call
        for start, end in ((16, 26), (15, 26), (17, 25)):
            with self.subTest(span=(start, end)):
                calls[1].update(start=start, end=end)
                self.write_checks()
                p = twin("--out", self.out, "--checks", self.checks, "--metrics", self.metrics)
                self.assertEqual(p.returncode, 0, p.stderr)
                v = json.loads((self.out / "verdicts.json").read_text())["verdicts"][0]
                self.assertEqual([(c["start"], c["end"], c["n"]) for c in v["calls"]],
                                 [(0, 8, 3), (start, end, 3)])
                self.assertEqual(v["verdict"], "supported")
        # parentheses that hold more than the call are not on it
        self.out = self.root / "refused"
        text = "p99(x.a) >= 2 * (p99(x.b) + 1ms)"
        self.doc["checks"][0]["check"] = text
        calls[1].update(start=16, end=len(text))
        self.write_checks()
        self.fails("checks[0].calls[1]: the span [16, 32) is not on a call of the check")
        # nor is half a pair
        self.doc["checks"][0]["check"] = "p99(x.a) >= 2 * (p99(x.b))"
        calls[1].update(start=16, end=25)
        self.write_checks()
        self.fails("checks[0].calls[1]: the span [16, 25) is not on a call of the check")

    def test_usage_errors(self):
        for args, needle in (
                (["--checks", self.checks, "--metrics", self.metrics, self.root],
                 "either --metrics or run directories"),
                (["--metrics", self.metrics], "--metrics needs --checks"),
                (["--checks", self.checks], "no run directory")):
            with self.subTest(args=args):
                p = twin("--out", self.out, *args)
                self.assertEqual(p.returncode, 2)
                self.assertIn(needle, p.stderr)
                self.assertFalse(self.out.exists())

    def fails(self, needle):
        p = twin("--out", self.out, "--checks", self.checks, "--metrics", self.metrics)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertNotIn("Traceback", p.stderr)
        lines = p.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn(needle, lines[0])
        self.assertFalse((self.out / "verdicts.json").exists())
        self.assertEqual([x.name for x in self.out.iterdir()] if self.out.exists() else [], [])
        return lines[0]

    def test_damaged_checks(self):
        good = json.loads(json.dumps(self.doc))

        def case(edit, needle):
            self.doc = json.loads(json.dumps(good))
            edit(self.doc)
            self.write_checks()
            with self.subTest(needle=needle):
                line = self.fails(needle)
                self.assertIn("checks.json", line)

        case(lambda d: d.update(format_version=1), "format_version is 1, the twin reads 2")
        case(lambda d: d.pop("checks"), "no field checks")
        case(lambda d: d["checks"][0].pop("check"), "no field checks[0].check")
        case(lambda d: d["checks"][0]["calls"][1]["rows"][0].pop("at_first_breach"),
             "no field checks[0].calls[1].rows[0].at_first_breach")
        case(lambda d: d["checks"][0]["calls"][0]["rows"][0].update(at_first_breach="yes"),
             "checks[0].calls[0].rows[0].at_first_breach is not true or false: \"yes\"")
        case(lambda d: d["checks"][0]["calls"][1]["rows"][0].pop("repetition"),
             "no field checks[0].calls[1].rows[0].repetition")
        case(lambda d: d["checks"][0]["calls"][0]["rows"][0].update(repetition="1"),
             "checks[0].calls[0].rows[0].repetition is not an integer: \"1\"")
        case(lambda d: d["checks"][0]["calls"][0]["rows"][0].update(repetition=-1),
             "checks[0].calls[0].rows[0].repetition is negative: -1")
        case(lambda d: d["checks"][0]["calls"][0].update(stat="mode"),
             "checks[0].calls[0].stat is \"mode\"")
        case(lambda d: d["checks"][0].update(which="now"), "checks[0].which")
        case(lambda d: d["checks"][0].pop("registered"), "no field checks[0].registered")
        case(lambda d: d["checks"][1].update(registered="yes"),
             "checks[1].registered is not true or false: \"yes\"")
        case(lambda d: d["checks"][0].update(registered=None),
             "checks[0].registered is not true or false: null")
        case(lambda d: d["checks"][0]["calls"][0].update(end=200), "outside the check")
        case(lambda d: d["checks"][0]["calls"][0].update(start=1), "not on a call")
        case(lambda d: d["checks"][0]["calls"][1].update(start=0, end=27), "two entries")
        case(lambda d: d["checks"][0]["calls"].pop(), "has no entry in calls")
        case(lambda d: d["checks"][0].update(check=SAT + " >= 1"),
             "checks[0].check: unparsable check at byte 66: a chained comparison")
        case(lambda d: d["checks"][1].update(calls=good["checks"][0]["calls"]),
             "a check that does not resolve has calls")
        self.checks.write_text('{"format_version": 2,\n "checks": [}')
        self.assertRegex(self.fails("does not parse"), r"checks\.json:2:\d+: does not parse")

    def test_damaged_metrics(self):
        text = self.metrics.read_text().splitlines(keepends=True)
        text[2] = text[2].replace(",5,", ",5x,")
        self.metrics.write_text("".join(text))
        self.assertIn("metrics.csv:3: unparsable row: value '5x'", self.fails("metrics.csv:3:"))
        self.metrics.write_text("run,metric\n")
        self.fails("metrics.csv:1: no column")


class OnRunDirectories(unittest.TestCase):
    """The checks on the rows the twin recomputed, agreeing with --metrics on its own
    metrics.csv and with its summary.csv."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        root = Path(cls.tmp.name)
        runs = root / "runs"
        cls.dirs = [gen.constant_run(runs, repetition=r, shift_ms=0.5 * (r - 1)) for r in (1, 2, 3)]
        cls.dirs.append(gen.ramp_run(runs))
        base = [f"feed-rs.indexed/baseline/r{r}" for r in (1, 2, 3)]
        ramp = "feed-rs.indexed/ramp/r1"
        checks = []

        def add(text, *calls):
            checks.append({"hypothesis": f"H{len(checks) + 1}", "which": "current",
                           "check": text, "unresolved": None, "registered": True,
                           "calls": [call_of(text, t, stat=s, rows=r) for t, s, r in calls]})

        p50 = "p50(feed-rs.indexed)"
        add(f"{p50} < 1s", (p50, "median", [spec(r, "latency_p50") for r in base]))
        add(f"{p50} > 1s", (p50, "median", [spec(r, "latency_p50") for r in base]))
        sat = "saturation(feed-rs.indexed, definition: {})"
        for d, limit in (("objective-windows", "30/s"), ("throughput-knee", "40/s"),
                         ("errors-only", "50/s"), ("errors-only", "60/s")):
            add(f"{sat.format(d)} >= {limit}",
                (sat.format(d), "median", [spec(ramp, "saturation", d)]))
        cpu = "cpu(replica-1, at: first-breach, of: feed-rs.indexed)"
        add(f"{cpu} < 100%", (cpu, "max", [spec(ramp, "cpu_mean_pct_of_cap", "first-breach",
                                                "feedbench-replica-1", at_first_breach=True)]))
        # the step rows at the first breach (40/s under objective-windows)
        cpu = "cpu_seconds(replicas, at: first-breach, of: feed-rs.indexed)"
        add(f"{cpu} > 0", (cpu, "median", [spec(ramp, "cpu_seconds", "step", "replicas",
                                                 at_first_breach=True)]))
        # two arms: each run's p50 against half its p99, paired by round
        p99 = "p99(feed-rs.indexed)"
        add(f"{p50} <= 0.5 * {p99}", (p50, "median", [spec(r, "latency_p50") for r in base]),
            (p99, "median", [spec(r, "latency_p99") for r in base]))
        cls.doc = {"format_version": 2, "checks": checks}
        cls.checks = root / "checks.json"
        cls.checks.write_text(json.dumps(cls.doc))
        cls.out = root / "out"
        p = twin("--out", cls.out, "--checks", cls.checks, "--paired-rounds", *cls.dirs)
        if p.returncode != 0:
            raise AssertionError(p.stderr)
        cls.v = json.loads((cls.out / "verdicts.json").read_text())
        cls.s = read_summary(cls.out / "summary.csv")
        cls.out2 = root / "out2"
        p = twin("--out", cls.out2, "--checks", cls.checks, "--metrics", cls.out / "metrics.csv",
                 "--paired-rounds")
        if p.returncode != 0:
            raise AssertionError(p.stderr)
        cls.v2 = json.loads((cls.out2 / "verdicts.json").read_text())

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_all_files_written(self):
        self.assertEqual(sorted(x.name for x in self.out.iterdir()),
                         ["comparisons.csv", "metrics.csv", "summary.csv", "verdicts.json"])

    def test_verdicts(self):
        got = [(v["verdict"], v["interval"]) for v in self.v["verdicts"]]
        self.assertEqual(got, [("supported", "supported"), ("not supported", "not supported"),
                               ("supported", None), ("supported", None), ("supported", None),
                               ("not evaluable", None), ("supported", None),
                               ("supported", None), ("supported", "supported")])
        # errors-only never breached: [50, +inf]
        c = self.v["verdicts"][4]["calls"][0]
        self.assertEqual((c["low"], c["high"]), (50.0, "+inf"))

    def test_two_arms(self):
        self.assertEqual([v["compared"] for v in self.v["verdicts"][:-1]], [[]] * 8)
        m = {}
        with open(self.out / "metrics.csv", newline="", encoding="utf-8") as f:
            for r in csv.DictReader(f):
                if r["second"] == "" and r["definition"] == "" and r["container"] == "":
                    m[(r["run"], r["metric"])] = float(r["value"]) * 0.001
        runs = [f"feed-rs.indexed/baseline/r{r}" for r in (1, 2, 3)]
        ratios = [math.log(m[(r, "latency_p50")] / m[(r, "latency_p99")]) for r in runs]
        lo, hi, conf = comparison.paired_shift_interval(ratios)
        text = self.doc["checks"][-1]["check"]
        self.assertEqual(self.v["verdicts"][-1]["compared"], [
            {"start": 0, "end": len(text), "form": "ratio", "bound": 0.5, "paired": True,
             "low": math.exp(lo), "high": math.exp(hi), "confidence": 0.75,
             "verdict": "supported"}])
        self.assertEqual(conf, 0.75)
        self.assertLess(math.exp(hi), 0.5)

    def test_at_first_breach(self):
        m = {}
        with open(self.out / "metrics.csv", newline="", encoding="utf-8") as f:
            for r in csv.DictReader(f):
                m[(r["run"], r["step_rate"], r["second"], r["container"], r["definition"],
                   r["metric"])] = r["value"]
        ramp = "feed-rs.indexed/ramp/r1"
        self.assertEqual(m[(ramp, "", "", "", "objective-windows", "first_breach")], "40")
        c = self.v["verdicts"][7]["calls"][0]
        want = float(m[(ramp, "40", "", "replicas", "step", "cpu_seconds")])
        self.assertNotEqual(want, float(m[(ramp, "50", "", "replicas", "step", "cpu_seconds")]))
        self.assertEqual((c["n"], c["low"], c["high"]), (1, want, want))
        c = self.v["verdicts"][6]["calls"][0]
        want = float(m[(ramp, "40", "", "feedbench-replica-1", "first-breach",
                        "cpu_mean_pct_of_cap")]) * 0.01
        self.assertEqual((c["n"], c["low"]), (1, want))

    def test_the_median_interval_is_the_summarys(self):
        row = self.s[("feed-rs", "indexed", "baseline", "", "", "", "", "latency_p50")]
        c = self.v["verdicts"][0]["calls"][0]
        self.assertEqual(c["n"], 3)
        self.assertEqual(c["low"], float(row["median"]) * 0.001)
        self.assertEqual(c["ci_low"], float(row["ci_low"]) * 0.001)
        self.assertEqual(c["ci_high"], float(row["ci_high"]) * 0.001)
        self.assertEqual(c["confidence"], float(row["confidence"]))
        self.assertEqual(c["confidence"], 0.75)
        self.assertLess(c["ci_low"], c["ci_high"])

    def test_the_same_on_its_own_metrics_csv(self):
        self.assertEqual(self.v, self.v2)


if __name__ == "__main__":
    unittest.main()
