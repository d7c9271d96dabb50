"""Tests of the twin on generated run directories with known answers.

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
from fractions import Fraction
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import gen  # noqa: E402
import recompute  # noqa: E402

SCRIPT = HERE.parent / "recompute.py"
NS = gen.NS


def run_twin(out, *dirs):
    return subprocess.run([sys.executable, str(SCRIPT), "--out", str(out), *map(str, dirs)],
                          capture_output=True, text=True)


def read_metrics(path):
    rows = {}
    with open(path, newline="", encoding="utf-8") as f:
        r = csv.DictReader(f)
        assert r.fieldnames == recompute.METRICS_COLUMNS, r.fieldnames
        for row in r:
            key = (row["run"], row["step_rate"], row["second"], row["container"],
                   row["definition"], row["metric"])
            assert key not in rows, f"duplicate key {key}"
            rows[key] = row
    return rows


def read_summary(path):
    rows = {}
    with open(path, newline="", encoding="utf-8") as f:
        r = csv.DictReader(f)
        assert r.fieldnames == recompute.SUMMARY_COLUMNS, r.fieldnames
        for row in r:
            key = tuple(row[c] for c in recompute.SUMMARY_COLUMNS[:8])
            assert key not in rows
            rows[key] = row
    return rows


# A plain reference, straight from docs/analysis.md, for what the twin vectorises.

def nearest_rank(values, p):
    v = sorted(values)
    if not v:
        return None
    r = max(1, math.ceil(Fraction(str(p)) * len(v) / 100))
    return v[r - 1]


def splitmix64(seed):
    mask = (1 << 64) - 1
    state = seed

    def nxt():
        nonlocal state
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)
    return nxt


def plain_coverage(n, k):
    """The chance that [x(k), x(n+1−k)] holds the median, by counting: of the 2**n equally
    likely ways n values fall below or above it, those with k to n−k below."""
    hits = sum(1 for below in range(2 ** n) if k <= bin(below).count("1") <= n - k)
    return Fraction(hits, 2 ** n)


def read_requests(d):
    with open(Path(d) / "requests.csv", newline="") as f:
        return [(int(r["start_ns"]), int(r["end_ns"]), int(r["status"]), float(r["duration_ms"]))
                for r in csv.DictReader(f)]


def is_route_row(key):
    """A measured route row: definition exactly `route:<name>`, no `at:` or `status:`."""
    return key[4].startswith("route:") and " " not in key[4]


def read_routed_requests(d):
    """(start_ns, status, duration_ms, route) of each request."""
    with open(Path(d) / "requests.csv", newline="") as f:
        return [(int(r["start_ns"]), int(r["status"]), float(r["duration_ms"]), r["route"])
                for r in csv.DictReader(f)]


def plain_spans(d):
    """docs/analysis.md's spans of the qualified rows, (at, start, end), straight from
    run.json and events.csv: the measured phase; with a `fault-applied` (the first in time),
    `at:fault` to the first `fault-cleared` at or after it (the measured end without one),
    `at:until-down` to the first DOWN row of the fault's target before the observe window's
    end, and, with a clear, `at:observe` for observe_ns; each cut to the measured phase."""
    f = json.loads((Path(d) / "run.json").read_text())["frame"]
    ms, me = f["measured"]["start_ns"], f["measured"]["end_ns"]
    spans = [("", ms, me)]
    if f["fault_window"] is None:
        return spans
    with open(Path(d) / "events.csv", newline="") as fh:
        events = sorted((int(r["wall_ns"]), r["event"]) for r in csv.DictReader(fh))
    applied = next((w for w, e in events if e == "fault-applied"), None)
    if applied is None:
        return spans
    cleared = next((w for w, e in events if e == "fault-cleared" and w >= applied), None)

    def cut(a, b):
        a = min(max(a, ms), me)
        return a, max(a, min(b, me))
    spans.append(("at:fault", *cut(applied, me if cleared is None else cleared)))
    # until the balancer's first DOWN of the target (any server's without one), from
    # `applied` to the observe window's end
    observe = f["fault_window"]["observe_ns"]
    obs_end = min((cleared if cleared is not None else max(me, applied)) + observe, me)
    if cleared is None:
        obs_end = max(me, applied)
    target = f["fault_window"].get("server")
    with open(Path(d) / "health.csv", newline="") as fh:
        downs = sorted(int(r["wall_ns"]) for r in csv.DictReader(fh)
                       if r["state"] == "DOWN" and applied <= int(r["wall_ns"]) < obs_end
                       and (target is None or r["server"].rsplit("/", 1)[-1] == target))
    if downs:
        # cut at the clear
        down = downs[0] if cleared is None else min(downs[0], cleared)
        spans.append(("at:until-down", *cut(applied, down)))
    if cleared is not None:
        spans.append(("at:observe", *cut(cleared, cleared + observe)))
    return spans


def plain_qualified(d):
    """The qualified rows' definitions in order, each with a plain reference of its figures:
    {definition: {metric: value}} (requests, achieved_rate, latency_p50, latency_max, and
    status_share with a status or failed_share without)."""
    reqs = read_routed_requests(d)
    out = {}
    spans = plain_spans(d)
    _, ma, mb = spans[0]
    # the measured phase's routes and codes, in every span, with requests or not
    routes = sorted({r for s, _, _, r in reqs if ma <= s < mb and r})
    codes = sorted({st for s, st, _, _ in reqs if ma <= s < mb and st != 0})
    for at, a, b in spans:
        L = (b - a) / 1e9
        for route in [""] + routes:
            mine = [(st, du) for s, st, du, r in reqs if a <= s < b and (not route or r == route)]
            statuses = [None, "2xx", "4xx", "5xx"] + [str(c) for c in codes]
            for status in statuses:
                if not at and status is None:
                    continue  # the measured phase's own rows and its route rows
                if status is None:
                    sel = mine
                elif status.endswith("xx"):
                    low = int(status[0]) * 100
                    sel = [(st, du) for st, du in mine
                           if low <= st and (st <= low + 99 or low == 500)]
                else:
                    sel = [(st, du) for st, du in mine if st == int(status)]
                durs = [du for _, du in sel]
                fig = {"requests": len(sel), "achieved_rate": len(sel) / L if L > 0 else None,
                       "latency_p50": nearest_rank(durs, 50),
                       "latency_max": max(durs) if durs else None}
                if status is None:
                    failed = sum(1 for st, _ in sel if st == 0 or st >= 500)
                    fig["failed_share"] = failed / len(sel) if sel else 0
                else:
                    fig["status_share"] = len(sel) / len(mine) if mine else 0
                words = [at, f"route:{route}" if route else "",
                         f"status:{status}" if status else ""]
                out[" ".join(w for w in words if w)] = fig
    return out


def read_containers(d):
    with open(Path(d) / "containers.csv", newline="") as f:
        return list(csv.DictReader(f))


class Numbers(unittest.TestCase):
    def test_format(self):
        f = recompute.fmt
        self.assertEqual(f(12.0), "12")
        self.assertEqual(f(0.25), "0.25")
        self.assertEqual(f(math.pi), "3.141592654")
        self.assertEqual(f(-0.0), "0")
        self.assertEqual(f(-1e-12), "0")
        self.assertEqual(f(2.5e-10), "0")
        self.assertEqual(f(7e-9), "0.000000007")
        self.assertEqual(f(123456789012), "123456789012")
        self.assertEqual(f(None), "")
        self.assertEqual(f(-3.5), "-3.5")

    def test_nearest_rank_is_exact(self):
        # 99.9/100 × 1000 is 999.0000000000001 in binary floating point: the rank is 999
        self.assertEqual(recompute.rank(Fraction("99.9"), 1000), 999)
        self.assertEqual(recompute.rank(Fraction("99"), 100), 99)
        self.assertEqual(recompute.rank(Fraction("50"), 1), 1)
        self.assertEqual(recompute.rank(Fraction("2.5"), 10_000), 250)
        self.assertEqual(recompute.rank(Fraction("97.5"), 10_000), 9750)
        self.assertEqual(recompute.rank(Fraction("95"), 21), 20)

    def test_splitmix_matches_a_plain_implementation(self):
        nxt = splitmix64(0x5EEDF00D00000013)
        plain = [nxt() for _ in range(7 * 5)]
        idx = recompute.splitmix_indices(7, resamples=5)
        self.assertEqual(idx.reshape(-1).tolist(), [z % 7 for z in plain])
        # the reference value of SplitMix64 seeded with 0 (as in its published code)
        self.assertEqual(splitmix64(0)(), 0xE220A8397B1DCDAF)

    def test_median(self):
        self.assertEqual(recompute.median([3, 1, 2]), 2)
        self.assertEqual(recompute.median([4, 1, 3, 2]), 2.5)
        self.assertIsNone(recompute.median([]))

    def test_knees(self):
        k = recompute.knees
        # (verdicts, confirm): (first, sustained, transients)
        cases = {
            ((1, 0, 1, 0, 0), 1): (1, 3, 1),
            ((1, 0, 1, 0, 0), 0): (1, 1, 0),
            ((1, 0, 1, 0, 0), 2): (1, 3, 1),  # 3 and 4 run; the step after 4 never ran
            ((1, 1, 0), 2): (2, 2, 0),  # the last step: nothing ran after it to refute it
            ((0, 0), 5): (0, 0, 0),
            ((1, 0, 0, 1, 0), 2): (1, 4, 2),
            ((0, 1, 0, 1), 1): (0, None, 2),
            ((1, 1, 1), 1): (None, None, 0),
            ((), 1): (None, None, 0),
        }
        for (met, confirm), want in cases.items():
            self.assertEqual(k([bool(v) for v in met], confirm), want, (met, confirm))


class MedianInterval(unittest.TestCase):
    """The median's exact order-statistic interval (recompute.median_interval)."""

    def test_too_few_values(self):
        self.assertIsNone(recompute.median_interval([]))
        self.assertIsNone(recompute.median_interval([2.0, 1.0]))

    def test_small_n_is_the_range_at_its_own_level(self):
        # below n = 6 even the range misses 95 %: it is given with its exact level
        self.assertEqual(recompute.median_interval([3.0, 1.0, 2.0]), (1.0, 3.0, 0.75))
        self.assertEqual(recompute.median_interval([4.0, 1.0, 3.0, 2.0]), (1.0, 4.0, 0.875))
        self.assertEqual(recompute.median_interval([5.0, 1.0, 4.0, 2.0, 3.0]),
                         (1.0, 5.0, 0.9375))
        # n = 6: the range reaches 96.875 %, x(2)..x(5) only 78.125 %
        self.assertEqual(recompute.median_interval([6.0, 1.0, 5.0, 2.0, 4.0, 3.0]),
                         (1.0, 6.0, 0.96875))

    def test_ten_values(self):
        values = [7.0, 2.0, 10.0, 1.0, 5.0, 9.0, 3.0, 8.0, 6.0, 4.0]
        # k* = 2: 1 − 2 × (1 + 10)/1024; k = 3 would be 1 − 2 × 56/1024 = 0.890625
        self.assertEqual(recompute.median_interval(values), (2.0, 9.0, 0.978515625))
        self.assertEqual(recompute.median_rank(10), (2, Fraction(501, 512)))

    def test_rank_is_the_largest_that_keeps_95_percent(self):
        for n in range(3, 15):
            cover = {k: plain_coverage(n, k) for k in range(1, (n + 1) // 2 + 1)}
            self.assertEqual({k: recompute.median_coverage(n, k) for k in cover}, cover, n)
            keep = [k for k, c in cover.items() if c >= Fraction(95, 100)]
            k = max(keep) if keep else 1
            self.assertEqual(recompute.median_rank(n), (k, cover[k]), n)
        for n in range(15, 60):  # against the definition, by the formula
            keep = [k for k in range(1, (n + 1) // 2 + 1)
                    if recompute.median_coverage(n, k) >= Fraction(95, 100)]
            self.assertEqual(recompute.median_rank(n)[0], max(keep), n)

    def test_coverage_by_simulation(self):
        """The share of simulated samples whose interval holds the population median is the
        stated confidence, within 1.5 points, for skewed and bimodal populations alike."""
        rng = np.random.default_rng(20240613)
        samples = 10_000

        def mixture(size):
            # N(0, 1) and N(4, 1), half and half: symmetric about 2
            return rng.normal(size=size) + 4.0 * (rng.random(size) < 0.5)

        populations = (
            ("normal", lambda size: rng.normal(size=size), 0.0),
            ("lognormal", lambda size: rng.lognormal(0.0, 0.5, size=size), 1.0),
            ("mixture", mixture, 2.0),
        )
        for name, draw, true_median in populations:
            for n in (3, 5, 10):
                x = draw((samples, n))
                s = np.sort(x, axis=1)
                k, conf = recompute.median_rank(n)
                lo, hi = s[:, k - 1], s[:, n - k]
                share = float(np.mean((lo <= true_median) & (true_median <= hi)))
                self.assertLess(abs(share - float(conf)), 0.015, (name, n, share, conf))
                # the vectorised interval is median_interval's
                for row in range(50):
                    self.assertEqual(recompute.median_interval(x[row].tolist()),
                                     (lo[row], hi[row], float(conf)))


class SummaryBounds(unittest.TestCase):
    """A median of bounds is a bound, without an interval (docs/analysis.md, "Bounds")."""

    def rows(self, notes):
        g = {"unit": "1/s", "values": [(f"r{i}", 40.0 + 10 * i, n)
                                       for i, n in enumerate(notes)]}
        (row,) = recompute.summary_rows({("s", "", "ramp", "", "", "", "objective-windows",
                                          "saturation"): g})
        return dict(zip(recompute.SUMMARY_COLUMNS, row))

    def test_bounds(self):
        exact = self.rows(["", "", ""])
        self.assertEqual((exact["median"], exact["ci_low"], exact["bound"]), ("50", "40", ""))
        least = self.rows(["", "", "not reached"])
        self.assertEqual((least["median"], least["ci_low"], least["confidence"],
                          least["bound"]), ("50", "", "", "at-least"))
        both = self.rows(["below the first step", "", "censored at the stop"])
        self.assertEqual((both["median"], both["n"], both["bound"]), ("", "3", "both"))
        self.assertEqual(self.rows(["below the first step", "", ""])["bound"], "at-most")


class Scenarios(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        root = Path(cls.tmp.name)
        runs = root / "runs"
        cls.constant = [gen.constant_run(runs, repetition=r, shift_ms=0.5 * (r - 1))
                        for r in (1, 2, 3)]
        cls.ramp = gen.ramp_run(runs)
        cls.stalled = gen.stalled_ramp_run(runs)
        cls.fault = gen.fault_run(runs)
        cls.out = root / "out"
        p = run_twin(cls.out, *cls.constant, cls.ramp, cls.stalled, cls.fault)
        if p.returncode != 0:
            raise AssertionError(p.stderr)
        cls.m = read_metrics(cls.out / "metrics.csv")
        cls.s = read_summary(cls.out / "summary.csv")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def get(self, run, metric, step_rate="", second="", container="", definition=""):
        return self.m[(run, step_rate, second, container, definition, metric)]

    def val(self, *a, **kw):
        return self.get(*a, **kw)["value"]

    def assertEmpty(self, row, note):
        self.assertEqual((row["value"], row["note"]), ("", note))

    # --- the measured phase

    def test_measured_phase(self):
        run = "feed-rs.indexed/baseline/r1"
        row = self.get(run, "requests")
        self.assertEqual(
            [row[c] for c in ("contender", "variant", "profile", "fault", "repetition")],
            ["feed-rs", "indexed", "baseline", "", "1"])
        self.assertEqual((row["value"], row["unit"]), ("200", "count"))
        self.assertEqual(self.val(run, "offered_rate"), "10.1")
        self.assertEqual(self.val(run, "achieved_rate"), "10")
        self.assertEqual(self.val(run, "failed_share"), "0.025")
        self.assertEqual(self.val(run, "no_response_share"), "0.01")
        self.assertEqual(self.val(run, "status_5xx_share"), "0.015")
        # 404s: 3 on route `feed` and every second's last request (route `post`), 23 of 200
        self.assertEqual(self.val(run, "status_4xx_share"), "0.115")
        row = self.get(run, "status_2xx_share")
        self.assertEqual((row["value"], row["unit"], row["note"]), ("0.86", "ratio", ""))
        self.assertEqual(self.val(run, "dropped_iterations"), "3")
        self.assertEqual(self.val(run, "latency_max"), "200")
        self.assertEqual(self.get(run, "latency_p99")["unit"], "ms")
        # against the plain reference
        f = json.loads((self.constant[0] / "run.json").read_text())["frame"]
        a, b = f["measured"]["start_ns"], f["measured"]["end_ns"]
        durs = [d for s, _, _, d in read_requests(self.constant[0]) if a <= s < b]
        for metric, p in (("latency_p50", 50), ("latency_p90", 90), ("latency_p95", 95),
                          ("latency_p99", 99), ("latency_p99_9", 99.9)):
            self.assertEqual(float(self.val(run, metric)), nearest_rank(durs, p), metric)

    # route: (requests, achieved_rate, latency_p99, failed_share, no_response_share,
    #         status_2xx_share, status_4xx_share, status_5xx_share, expected_4xx_share) in
    # the constant run r1 (post declares 99.5 %, feed nothing)
    ROUTES = {
        "feed": ("180", "9", "171", "0.027777778", "0.011111111", "0.955555556", "0.016666667",
                 "0.016666667", "0"),
        "post": ("20", "1", "200", "0", "0", "0", "1", "0", "0.995"),
    }
    ROUTE_METRICS = {
        "requests": "count", "achieved_rate": "1/s", "latency_p50": "ms", "latency_p90": "ms",
        "latency_p95": "ms", "latency_p99": "ms", "latency_p99_9": "ms", "latency_max": "ms",
        "failed_share": "ratio", "no_response_share": "ratio", "status_2xx_share": "ratio",
        "status_4xx_share": "ratio", "status_5xx_share": "ratio", "expected_4xx_share": "ratio",
    }

    def test_per_route(self):
        run = "feed-rs.indexed/baseline/r1"
        names = ("requests", "achieved_rate", "latency_p99", "failed_share", "no_response_share",
                 "status_2xx_share", "status_4xx_share", "status_5xx_share", "expected_4xx_share")
        for route, want in self.ROUTES.items():
            for metric, v in zip(names, want):
                row = self.get(run, metric, definition=f"route:{route}")
                self.assertEqual((row["value"], row["note"]), (v, ""), (route, metric))
        # shifted durations, the same counts: post's p99 is its slowest, 200 ms + 0.5 ms
        self.assertEqual(self.val("feed-rs.indexed/baseline/r2", "latency_p99",
                                  definition="route:post"), "200.5")
        # exactly these rows per route (definition `route:<name>`, not the qualified rows
        # by route and status, test_qualified_rows), with the whole phase's units, no step
        # rate, second or container
        for r in ("r1", "r2", "r3"):
            each = f"feed-rs.indexed/baseline/{r}"
            keys = [k for k in self.m if k[0] == each and is_route_row(k)]
            self.assertEqual({k[4] for k in keys}, {"route:feed", "route:post"})
            self.assertEqual(len(keys), 2 * len(self.ROUTE_METRICS), each)
            for k in keys:
                self.assertEqual(k[1:4], ("", "", ""), k)
                row = self.m[k]
                self.assertEqual(row["unit"], self.ROUTE_METRICS[k[5]], k)
                if k[5] != "expected_4xx_share":  # a route's own: no whole-phase row
                    self.assertEqual(row["unit"], self.get(each, k[5])["unit"], k)
                self.assertNotEqual(row["value"], "", k)
        # against the plain reference
        f = json.loads((self.constant[0] / "run.json").read_text())["frame"]
        a, b = f["measured"]["start_ns"], f["measured"]["end_ns"]
        with open(self.constant[0] / "requests.csv", newline="") as fh:
            rows = [r for r in csv.DictReader(fh) if a <= int(r["start_ns"]) < b]
        for route in ("feed", "post"):
            durs = [float(r["duration_ms"]) for r in rows if r["route"] == route]
            for metric, p in (("latency_p50", 50), ("latency_p90", 90), ("latency_p95", 95),
                              ("latency_p99", 99), ("latency_p99_9", 99.9)):
                self.assertEqual(float(self.val(run, metric, definition=f"route:{route}")),
                                 nearest_rank(durs, p), (route, metric))
            self.assertEqual(float(self.val(run, "latency_max", definition=f"route:{route}")),
                             max(durs))
        # the other runs' requests are all on route `feed`: their figures are the phase's
        for run in ("feed-rs.indexed/ramp/r1", "feed-rs.indexed/baseline+replica-kill/r1"):
            for metric in set(self.ROUTE_METRICS) - {"expected_4xx_share"}:
                self.assertEqual(self.val(run, metric, definition="route:feed"),
                                 self.val(run, metric), (run, metric))
        # only the measured phase has route rows: none per step, and none of the other
        # figures of the phase; nor has any qualified row naming a route
        route_keys = [k for k in self.m if is_route_row(k)]
        self.assertTrue(route_keys)
        self.assertTrue(all(k[1] == "" and k[2] == "" for k in self.m if "route:" in k[4]))
        self.assertEqual({k[5] for k in route_keys}, set(self.ROUTE_METRICS))

    # the rows of a qualified definition without a status (a route's, but its declared share)
    # and with one
    SPAN_METRICS = {k: v for k, v in ROUTE_METRICS.items() if k != "expected_4xx_share"}
    STATUS_METRICS = {
        "requests": "count", "achieved_rate": "1/s", "latency_p50": "ms", "latency_p90": "ms",
        "latency_p95": "ms", "latency_p99": "ms", "latency_p99_9": "ms", "latency_max": "ms",
        "status_share": "ratio",
    }

    def assertQualifiedRows(self, m, run, d):
        """Every qualified row of `run` (directory `d`) in `m` against plain_qualified: the
        definitions in order, their metrics and units, and their figures."""
        want = plain_qualified(d)
        got = list(dict.fromkeys(
            k[4] for k in m if k[0] == run and ("at:" in k[4] or "status:" in k[4])))
        self.assertEqual(got, list(want), run)
        for definition, fig in want.items():
            keys = {k[5]: k for k in m if k[0] == run and k[4] == definition}
            metrics = self.STATUS_METRICS if "status:" in definition else self.SPAN_METRICS
            self.assertEqual(set(keys), set(metrics), definition)
            for metric, k in keys.items():
                self.assertEqual(k[1:4], ("", "", ""), k)
                self.assertEqual(m[k]["unit"], metrics[metric], k)
            for metric, v in fig.items():
                row = m[keys[metric]]
                if v is None:
                    self.assertEqual((row["value"], row["note"]), ("", "none"),
                                     (definition, metric))
                else:
                    self.assertEqual(row["note"], "", (definition, metric))
                    self.assertAlmostEqual(float(row["value"]), v, places=9,
                                           msg=(definition, metric))

    def test_qualified_rows(self):
        run = "feed-rs.indexed/baseline+replica-kill/r1"
        self.assertQualifiedRows(self.m, run, self.fault)

        def row(metric, definition):
            r = self.get(run, metric, definition=definition)
            return r["value"], r["note"]
        # The kill: [applied, cleared) holds 100 + 100 + 40 + 40 + 85 requests of 1000 ms,
        # 5 of them answered 502; the observe window (60 s, to the measured end) 6000 and the
        # 100 of the burst, 3 without a response (status 0, which is no status code).
        self.assertEqual(row("requests", "at:fault"), ("365", ""))
        self.assertEqual(row("achieved_rate", "at:fault"), ("73", ""))
        self.assertEqual(row("latency_p50", "at:fault"), ("1000", ""))
        self.assertEqual(row("failed_share", "at:fault"), (recompute.fmt(5 / 365), ""))
        self.assertEqual(row("requests", "at:fault status:502"), ("5", ""))
        self.assertEqual(row("latency_p50", "at:fault status:502"), ("1000", ""))
        self.assertEqual(row("achieved_rate", "at:fault status:502"), ("1", ""))
        self.assertEqual(row("status_share", "at:fault status:5xx"), ("0.01369863", ""))
        self.assertEqual(row("requests", "at:fault status:200"), ("360", ""))
        self.assertEqual(row("requests", "at:fault route:feed status:2xx"), ("360", ""))
        self.assertEqual(row("requests", "at:observe route:feed"), ("6100", ""))
        self.assertEqual(row("no_response_share", "at:observe route:feed"),
                         (recompute.fmt(3 / 6100), ""))
        self.assertEqual(row("requests", "at:observe"), ("6100", ""))
        # the classes are always there: no 4xx anywhere, no 5xx after the clear
        for definition in ("status:4xx", "at:fault status:4xx", "at:observe status:5xx",
                           "at:observe route:feed status:4xx"):
            self.assertEqual(row("requests", definition), ("0", ""), definition)
            self.assertEqual(row("achieved_rate", definition), ("0", ""), definition)
            self.assertEqual(row("status_share", definition), ("0", ""), definition)
            for metric in ("latency_p50", "latency_p99_9", "latency_max"):
                self.assertEqual(row(metric, definition), ("", "none"), (definition, metric))
        # the measured phase's codes in every span, with a request or not: no 502 after the
        # clear reads 0
        for definition in ("at:observe status:502", "at:observe route:feed status:502"):
            self.assertEqual(row("requests", definition), ("0", ""), definition)
            self.assertEqual(row("latency_p50", definition), ("", "none"), definition)
        # a code no measured request has has no rows, and 0 is no code
        for definition in ("status:0", "at:fault status:0", "at:observe status:0",
                           "at:fault status:404"):
            self.assertFalse([k for k in self.m if k[0] == run and k[4] == definition],
                             definition)
        # the whole phase by status: 5 × 502 and the rest 200
        self.assertEqual(row("requests", "status:502"), ("5", ""))
        self.assertEqual(row("requests", "route:feed status:502"), ("5", ""))
        self.assertEqual(int(self.val(run, "requests", definition="status:200")) + 5 + 3,
                         int(self.val(run, "requests")))

    def test_qualified_rows_without_a_fault(self):
        # the constant run: by route and status, no `at:` (no fault)
        run = "feed-rs.indexed/baseline/r1"
        self.assertQualifiedRows(self.m, run, self.constant[0])
        self.assertFalse([k for k in self.m if k[0] == run and "at:" in k[4]])
        self.assertFalse([k for k in self.m if "at:" in k[4] and "+" not in k[0]])
        # 23 × 404 (20 on post), 3 × 503 on feed, 172 × 200 on feed
        for definition, requests, share in (
                ("status:404", "23", "0.115"), ("status:503", "3", "0.015"),
                ("status:5xx", "3", "0.015"), ("route:post status:404", "20", "1"),
                ("route:post status:2xx", "0", "0"), ("route:feed status:200", "172",
                                                      recompute.fmt(172 / 180))):
            self.assertEqual(self.val(run, "requests", definition=definition), requests,
                             definition)
            self.assertEqual(self.val(run, "status_share", definition=definition), share,
                             definition)
        self.assertEqual(self.val(run, "latency_max", definition="route:post status:404"),
                         "200")
        # 200 is a code of the measured phase (the feed's): the post route has its row, at 0
        self.assertEqual(self.val(run, "requests", definition="route:post status:200"), "0")
        # the ramps too have their status rows
        self.assertEqual(self.val("feed-rs.indexed/ramp/r1", "status_share",
                                  definition="status:200"), "1")

    def test_qualified_rows_of_a_fault_not_cleared_or_not_applied(self):
        # Without its `fault-cleared`, the fault lasts to the measured end and there is no
        # observe window; without its `fault-applied`, there is no fault span at all. In the
        # first, the requests before the fault are on a route `early` of their own: every
        # span has the measured phase's routes, with requests in it or not.
        with tempfile.TemporaryDirectory() as t:
            runs = Path(t) / "runs"
            open_ = gen.fault_run(runs, fault="db-cut", injection="link-down", restart=False)
            never = gen.fault_run(runs, repetition=2, fault="db-cut", injection="link-down",
                                  restart=False)
            for d, drop in ((open_, "fault-cleared"), (never, "fault-applied")):
                path = d / "events.csv"
                lines = path.read_text().splitlines(keepends=True)
                path.write_text("".join(l for l in lines if f",{drop}," not in l))
            applied = int(json.loads((open_ / "run.json").read_text())["frame"]["measured"]
                          ["start_ns"]) + 60 * NS
            path = open_ / "requests.csv"
            with open(path, newline="") as fh:
                rows = list(csv.DictReader(fh))
            for r in rows:
                if int(r["start_ns"]) < applied:
                    r["route"] = "early"
            with open(path, "w", newline="") as fh:
                w = csv.DictWriter(fh, fieldnames=list(rows[0]))
                w.writeheader()
                w.writerows(rows)
            p = run_twin(Path(t) / "out", open_, never)
            self.assertEqual(p.returncode, 0, p.stderr)
            m = read_metrics(Path(t) / "out" / "metrics.csv")
            kept = "feed-rs.indexed/baseline+db-cut/r1"
            self.assertQualifiedRows(m, kept, open_)
            # 365 in the fault's 5 s and the 6100 after: all to the measured end (65 s)
            row = m[(kept, "", "", "", "at:fault", "requests")]
            self.assertEqual(row["value"], "6465")
            self.assertEqual(m[(kept, "", "", "", "at:fault", "achieved_rate")]["value"],
                             recompute.fmt(6465 / 65))
            self.assertFalse([k for k in m if k[0] == kept and "at:observe" in k[4]])
            self.assertEqual(m[(kept, "", "", "", "route:early status:200", "requests")]
                             ["value"], "6000")
            self.assertEqual(m[(kept, "", "", "", "at:fault route:early", "requests")]["value"],
                             "0")
            self.assertEqual(m[(kept, "", "", "", "at:fault route:feed", "requests")]["value"],
                             "6465")
            gone = "feed-rs.indexed/baseline+db-cut/r2"
            self.assertQualifiedRows(m, gone, never)
            self.assertFalse([k for k in m if k[0] == gone and "at:" in k[4]])
            self.assertTrue([k for k in m if k[0] == gone and k[4] == "status:502"])

    def test_verdict_windows(self):
        # The constant run's 20 s phase is shorter than its 60 s window: judged whole, and its
        # 2.5 % failed breaches. The fault run's 125 s phase holds 12 full 10 s windows (the
        # last 5 s are no window); only the one the kill lands in breaches.
        for run, windows, breached in (("feed-rs.indexed/baseline/r1", "1", "1"),
                                       ("feed-rs.indexed/baseline+replica-kill/r1", "12", "1")):
            self.assertEqual(self.val(run, "objective_windows"), windows, run)
            self.assertEqual(self.val(run, "objective_windows_breached"), breached, run)
        ramp = "feed-rs.indexed/ramp/r1"
        self.assertTrue(any(k[0] == ramp and k[5] == "step_p99" for k in self.m))
        self.assertFalse(any(k[0] == ramp and k[5].startswith("objective_windows")
                             for k in self.m))

    def test_per_second_series(self):
        run = "feed-rs.indexed/baseline/r1"
        seconds = sorted({int(k[2]) for k in self.m if k[0] == run and k[2] != ""})
        self.assertEqual(seconds, list(range(20)))
        for k in range(20):
            self.assertEqual(self.val(run, "second_throughput", second=str(k)), "10")
            # second k: (j + 1)(k + 1) ms for j = 0..9: p50 is the 5th, p99 the 10th
            self.assertEqual(self.val(run, "second_p50", second=str(k)), recompute.fmt(5 * (k + 1)))
            self.assertEqual(self.val(run, "second_p99", second=str(k)), recompute.fmt(10 * (k + 1)))
        self.assertEqual(self.val(run, "second_failed", second="0"), "1")
        self.assertEqual(self.val(run, "second_failed", second="2"), "2")
        self.assertEqual(self.val(run, "second_failed", second="3"), "0")
        self.assertEqual(self.get(run, "second_failed", second="3")["unit"], "count")
        self.assertEqual(self.get(run, "second_throughput", second="3")["unit"], "1/s")

    def test_cpu_and_memory(self):
        run = "feed-rs.indexed/baseline/r1"
        r1, r2 = "feedbench-replica-1", "feedbench-replica-2"
        kw = dict(definition="measured")
        self.assertEqual(self.val(run, "cpu_mean_pct_of_cap", container=r1, **kw), "50")
        self.assertEqual(self.val(run, "cpu_p95_pct_of_cap", container=r1, **kw), "50")
        self.assertEqual(self.val(run, "cpu_seconds", container=r1, **kw), "2.5")
        self.assertEqual(self.val(run, "memory_rss_peak", container=r1, **kw), "121000000")
        self.assertEqual(self.val(run, "memory_rss_mean", container=r1, **kw), "111500000")
        self.assertEqual(self.val(run, "memory_usage_peak", container=r1, **kw), "200000000")
        # replica-2: the down row at tick 10 breaks two intervals, the reset at 15 one
        self.assertEqual(self.val(run, "cpu_seconds", container=r2, **kw), "0.85")
        self.assertEqual(self.val(run, "cpu_mean_pct_of_cap", container=r2, **kw), "20")
        self.assertEqual(self.val(run, "cpu_seconds", container="replicas", **kw), "3.35")
        self.assertEqual(self.val(run, "memory_rss_peak", container="replicas", **kw), "201000000")
        self.assertEqual(self.val(run, "memory_rss_mean", container="replicas", **kw), "187500000")
        self.assertEqual(self.get(run, "memory_rss_peak", container="replicas", **kw)["unit"],
                         "bytes")
        # the working set, ticks 2-21: replica-1 140 M + 2t M; replica-2 120 M but for
        # tick 10 (down) and tick 12 (an ok row without a value)
        ws = {"memory_working_set_peak": ("182000000", "120000000", "302000000"),
              "memory_working_set_mean": ("163000000", "120000000", "271000000")}
        for rep in ("r1", "r2", "r3"):
            each = f"feed-rs.indexed/baseline/{rep}"
            for metric, (v1, v2, vsum) in ws.items():
                for container, v in ((r1, v1), (r2, v2), ("replicas", vsum)):
                    row = self.get(each, metric, container=container, **kw)
                    self.assertEqual((row["value"], row["unit"], row["note"]), (v, "bytes", ""),
                                     (each, container, metric))
        # the other containers: halfway between RSS (20 M) and usage (30 M)
        self.assertEqual(self.val(run, "memory_working_set_peak", container="feedbench-database",
                                  **kw), "25000000")
        # against a plain reference: per-tick sums over the replicas' ok rows with a value
        rows = [r for r in read_containers(self.constant[0])
                if r["container"] in (r1, r2) and r["status"] == "ok"
                and r["memory_working_set_bytes"] != ""]
        f = json.loads((self.constant[0] / "run.json").read_text())["frame"]
        a, b = f["measured"]["start_ns"], f["measured"]["end_ns"]
        sums = {}
        for r in rows:
            if a <= int(r["unix_ns"]) < b:
                sums[r["tick"]] = sums.get(r["tick"], 0) + float(r["memory_working_set_bytes"])
        self.assertEqual(len(sums), 20)
        self.assertEqual(float(self.val(run, "memory_working_set_peak", container="replicas",
                                        **kw)), max(sums.values()))
        self.assertEqual(float(self.val(run, "memory_working_set_mean", container="replicas",
                                        **kw)), sum(sums.values()) / len(sums))
        row = self.get(run, "requests_per_core_second", container="replicas", **kw)
        self.assertEqual(row["unit"], "1/core·s")
        # Served answers: 172 × 200 and 19.9 of post's 20 404s (its declared 99.5 %); feed's
        # three undeclared 404s and the five failed are not.
        self.assertAlmostEqual(float(row["value"]), (172 + 19.9) / 3.35, places=9)
        for container in ("feedbench-load-generator", "feedbench-fault-proxy", "feedbench-balancer"):
            self.assertEqual(
                self.val(run, "path_cpu_p95_pct_of_cap", container=container, **kw),
                self.val(run, "cpu_p95_pct_of_cap", container=container, **kw))
        self.assertEqual(self.val(run, "path_cpu_p95_pct_of_cap",
                                  container="feedbench-load-generator", **kw), "4")

    def test_host_rows(self):
        # gen.host_csv: 19 complete seconds in the measured phase, 3.6 core-seconds used
        # outside the study (a row without the study's figure left out, one floored at 0)
        run = "feed-rs.indexed/baseline/r1"
        kw = dict(definition="measured")
        self.assertAlmostEqual(float(self.val(run, "host_outside_cores", **kw)), 3.6 / 19,
                               places=8)
        self.assertAlmostEqual(float(self.val(run, "host_steal_cores", **kw)), 0.05, places=8)
        self.assertEqual(self.get(run, "host_outside_cores", **kw)["unit"], "cores")
        # a run without host.csv has no host rows
        self.assertNotIn(("feed-rs.indexed/ramp/r1", "", "", "", "measured", "host_outside_cores"),
                         self.m)

    def test_a_negative_figure_in_host_csv_is_refused_at_its_line(self):
        # As the report's reader (rundir::host::read) refuses it: a CPU time, and the load
        # average, which has no figure of its own.
        text = gen.host_csv([10**18 + i * 10**9 for i in range(3)])
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "host.csv"
            for column, line, damaged in (
                    ("load1", 4, text.replace(",1.2,", ",-1.2,", 1)),
                    ("steal_s", 3, text.replace(",0.05,", ",-0.05,", 1))):
                path.write_text(damaged)
                with self.assertRaises(recompute.InputError) as e:
                    recompute.host_rows(None, path, None)
                self.assertIn(f"host.csv:{line}: {column} -", str(e.exception))

    # --- step ramps

    def test_ramp_saturation(self):
        run = "feed-rs.indexed/ramp/r1"
        expect = {  # definition: (saturation, note, first_breach, note, verdicts)
            "objective-windows": ("30", "", "40", "", [1, 1, 1, 0, 1]),
            "p99-only": ("30", "", "40", "", [1, 1, 1, 0, 1]),
            "every-second": ("10", "", "20", "", [1, 0, 1, 0, 1]),
            "errors-only": ("50", "not reached", "", "not reached", [1, 1, 1, 1, 1]),
            "throughput-knee": ("40", "", "50", "", [1, 1, 1, 1, 0]),
        }
        for d, (sat, sat_note, fb, fb_note, met) in expect.items():
            row = self.get(run, "saturation", definition=d)
            self.assertEqual((row["value"], row["note"], row["unit"]), (sat, sat_note, "1/s"), d)
            row = self.get(run, "first_breach", definition=d)
            self.assertEqual((row["value"], row["note"]), (fb, fb_note), d)
            got = [int(self.val(run, "step_met", step_rate=str(r), definition=d))
                   for r in gen.RAMP_RATES]
            self.assertEqual(got, met, d)
            # no frame.confirm_steps: every breach is sustained, as before confirmed knees
            row = self.get(run, "saturation_before_first_breach", definition=d)
            self.assertEqual((row["value"], row["note"]), (sat, sat_note), d)
            row = self.get(run, "sustained_breach", definition=d)
            self.assertEqual((row["value"], row["note"], row["unit"]), (fb, fb_note, "1/s"), d)
            row = self.get(run, "transient_steps", definition=d)
            self.assertEqual((row["value"], row["note"], row["unit"]), ("0", "", "count"), d)

    STALLED = "feed-rs.indexed/stalled-ramp/r1"
    # definition: (saturation, saturation_before_first_breach, first_breach,
    #              sustained_breach, transient_steps, verdicts); values with their notes
    STALLED_KNEES = {
        d: (("140", ""), ("60", ""), ("80", ""), ("160", ""), "1",
            [1, 1, 1, 0, 1, 1, 1, 0, 0])
        for d in ("objective-windows", "p99-only", "every-second")
    } | {
        d: (("180", "censored at the stop"), ("180", "censored at the stop"),
            ("", "censored at the stop"), ("", "censored at the stop"), "0", [1] * 9)
        for d in ("errors-only", "throughput-knee")
    }
    KNEE_METRICS = ("saturation", "saturation_before_first_breach", "first_breach",
                    "sustained_breach")

    def assertKnees(self, get, run, expect):
        for d, (*readings, transients, met) in expect.items():
            for metric, want in zip(self.KNEE_METRICS, readings):
                row = get(run, metric, definition=d)
                self.assertEqual((row["value"], row["note"], row["unit"]), (*want, "1/s"),
                                 (d, metric))
            row = get(run, "transient_steps", definition=d)
            self.assertEqual((row["value"], row["note"], row["unit"]),
                             (transients, "", "count"), d)
            got = [int(get(run, "step_met", step_rate=str(r), definition=d)["value"])
                   for r in gen.STALLED_RATES]
            self.assertEqual(got, met, d)

    def test_stalled_ramp_confirmed_knee(self):
        # A 3 s stall breaks the step at 80/s; 100/s refutes it (a transient), 180/s
        # confirms the breach at 160/s (confirm_steps 1): the saturation is 140, not 60.
        self.assertKnees(self.get, self.STALLED, self.STALLED_KNEES)
        # the knee rows are the run's, with no step rate, second or container
        for metric in self.KNEE_METRICS + ("transient_steps",):
            keys = [k for k in self.m if k[0] == self.STALLED and k[5] == metric]
            self.assertEqual(len(keys), 5, metric)
            self.assertTrue(all(k[1:4] == ("", "", "") for k in keys), metric)
        # where the CPU was stays at the first breach under objective-windows (80/s)
        breach = {k for k in self.m if k[0] == self.STALLED and k[4] == "first-breach"}
        self.assertTrue(breach)
        self.assertEqual({k[1] for k in breach}, {"80"})
        self.assertEqual(
            self.val(self.STALLED, "cpu_seconds", step_rate="80", container="replicas",
                     definition="first-breach"),
            self.val(self.STALLED, "cpu_seconds", step_rate="80", container="replicas",
                     definition="step"))
        # the step at 80/s: 240 of its first window's 400 requests took 1000 ms
        self.assertEqual(self.val(self.STALLED, "step_p99", step_rate="80"), "1000")
        self.assertEqual(self.val(self.STALLED, "step_p99", step_rate="100"), "16")
        self.assertEqual(self.val(self.STALLED, "step_p99", step_rate="160"), "800")
        row = self.s[("feed-rs", "indexed", "stalled-ramp", "", "", "", "objective-windows",
                      "saturation")]
        self.assertEqual((row["n"], row["median"]), ("1", "140"))

    def test_stalled_ramp_without_confirmation(self):
        # The same requests without frame.confirm_steps (an older run.json) or with 0: every
        # breach is sustained, the saturation is the first breach's (60), no transient.
        with tempfile.TemporaryDirectory() as t:
            runs = Path(t) / "runs"
            absent = gen.stalled_ramp_run(runs, repetition=2, confirm_steps=None)
            zero = gen.stalled_ramp_run(runs, repetition=3, confirm_steps=0)
            frame = json.loads((absent / "run.json").read_text())["frame"]
            self.assertNotIn("confirm_steps", frame)
            self.assertEqual(json.loads((zero / "run.json").read_text())["frame"]["confirm_steps"],
                             0)
            p = run_twin(Path(t) / "out", absent, zero)
            self.assertEqual(p.returncode, 0, p.stderr)
            m = read_metrics(Path(t) / "out" / "metrics.csv")

            def get(run, metric, step_rate="", definition=""):
                return m[(run, step_rate, "", "", definition, metric)]
            expect = dict(self.STALLED_KNEES)
            for d in ("objective-windows", "p99-only", "every-second"):
                expect[d] = (("60", ""), ("60", ""), ("80", ""), ("80", ""), "0",
                             [1, 1, 1, 0, 1, 1, 1, 0, 0])
            for r in (2, 3):
                self.assertKnees(get, f"feed-rs.indexed/stalled-ramp/r{r}", expect)

    def test_ramp_steps(self):
        run = "feed-rs.indexed/ramp/r1"
        self.assertEqual(self.val(run, "step_requests", step_rate="50"), "450")
        self.assertEqual(self.val(run, "step_offered_rate", step_rate="50"), "50")
        self.assertEqual(self.val(run, "step_achieved_rate", step_rate="50"), "45")
        self.assertEqual(self.val(run, "step_p99", step_rate="40"), "800")
        self.assertEqual(self.val(run, "step_failed_share", step_rate="40"), "0")
        # the step's CPU: intervals ending in [start, end): 9 of the ramp's, 1 before it
        self.assertEqual(self.val(run, "cpu_seconds", step_rate="10", container="replicas",
                                  definition="step"), "0.36")
        # memory: every container RSS 5 MB, working set 7 MB, usage 10 MB at every tick
        for rate in ("10", "50"):
            for container, rss, ws in (("feedbench-replica-1", "5000000", "7000000"),
                                       ("replicas", "10000000", "14000000")):
                for stat in ("peak", "mean"):
                    self.assertEqual(self.val(run, f"memory_rss_{stat}", step_rate=rate,
                                              container=container, definition="step"), rss)
                    self.assertEqual(self.val(run, f"memory_working_set_{stat}", step_rate=rate,
                                              container=container, definition="step"), ws)
        # where the CPU was: the first breach under objective-windows (40/s)
        breach = {k for k in self.m if k[0] == run and k[4] == "first-breach"}
        self.assertTrue(breach)
        self.assertEqual({k[1] for k in breach}, {"40"})
        self.assertEqual(self.val(run, "cpu_seconds", step_rate="40", container="replicas",
                                  definition="first-breach"),
                         self.val(run, "cpu_seconds", step_rate="40", container="replicas",
                                  definition="step"))
        for metric in ("memory_working_set_peak", "memory_working_set_mean"):
            self.assertEqual(self.val(run, metric, step_rate="40", container="replicas",
                                      definition="first-breach"), "14000000")
        self.assertEqual(
            self.val(run, "requests_per_core_second", step_rate="40", container="replicas",
                     definition="first-breach"),
            self.val(run, "requests_per_core_second", step_rate="40", container="replicas",
                     definition="step"))

    # --- faults

    def test_fault(self):
        run = "feed-rs.indexed/baseline+replica-kill/r1"
        self.assertEqual(self.get(run, "requests")["fault"], "replica-kill")
        # Causal detection: the fault's requests take 1000 ms; at applied + e a client knows
        # those started before e - 500 ms to be over the 500 ms bound. Eleven of a window's
        # 1000 requests over it put the p99 over it: at 0.6 s ten are (starts 0-90 ms), at
        # 0.7 s twenty. (Judged on whole durations by start, the window breached at 0.2 s,
        # on latencies nobody had seen yet.)
        expect = {
            "detect_balancer_down": "2.5", "detect_failed_request": "1.5",
            "detect_objective_window": "0.7", "fault_failed": "5", "observe_failed": "3",
            "fault_worst_p99": "1000", "observe_worst_p99": "99", "seconds_below_50pct": "2",
            "seconds_below_90pct": "3", "control_throughput": "100", "control_p95": "95",
            "control_p99": "99",
        }
        for metric, v in expect.items():
            self.assertEqual(self.val(run, metric), v, metric)
        # 2.5: replica-1's own DOWN, not the bystander's a second before it
        self.assertEqual(self.get(run, "detect_balancer_down")["note"], "")
        self.assertEqual(self.val(run, "time_to_recover", definition="clear"), "12")
        self.assertEqual(self.val(run, "time_to_recover", definition="restart"), "10")
        self.assertEqual(self.get(run, "time_to_recover", definition="clear")["unit"], "s")
        # memory: the i-th container by name has working set 70 MB + i, RSS 50 MB + i
        kw = dict(definition="measured")
        for container, ws, rss in (("feedbench-replica-1", "70000004", "50000004"),
                                   ("feedbench-replica-2", "70000005", "50000005"),
                                   ("replicas", "140000009", "100000009")):
            for stat in ("peak", "mean"):
                self.assertEqual(self.val(run, f"memory_working_set_{stat}", container=container,
                                          **kw), ws)
                self.assertEqual(self.val(run, f"memory_rss_{stat}", container=container, **kw),
                                 rss)

    def test_fault_variants(self):
        with tempfile.TemporaryDirectory() as t:
            runs = Path(t) / "runs"
            lat = gen.fault_run(runs, injection="link-latency", restart=False, fault="db-latency")
            kill = gen.fault_run(runs, repetition=2, restart=False)
            short = gen.fault_run(runs, repetition=3, observe_s=21)
            older = gen.fault_run(runs, repetition=4, target=False)
            late = gen.fault_run(runs, repetition=5, up_s=20)
            p = run_twin(Path(t) / "out", lat, kill, short, older, late)
            self.assertEqual(p.returncode, 0, p.stderr)
            m = read_metrics(Path(t) / "out" / "metrics.csv")

            def row(run, metric, definition=""):
                return m[(run, "", "", "", definition, metric)]
            self.assertEmpty(row("feed-rs.indexed/baseline+db-latency/r1", "time_to_recover",
                                 "restart"), "not applicable")
            self.assertEqual(row("feed-rs.indexed/baseline+db-latency/r1", "time_to_recover",
                                 "clear")["value"], "12")
            # a link fault reads any replica's first DOWN: the bystander's
            down = row("feed-rs.indexed/baseline+db-latency/r1", "detect_balancer_down")
            self.assertEqual((down["value"], down["note"]), ("1", ""))
            # replica-1 never came back: the bystander's UP is no restart
            self.assertEmpty(row("feed-rs.indexed/baseline+replica-kill/r2", "time_to_recover",
                                 "restart"), "not observed")
            # a frame without its target (an older run.json) reads any server's rows
            older_id = "feed-rs.indexed/baseline+replica-kill/r4"
            self.assertEqual(row(older_id, "detect_balancer_down")["value"], "1")
            self.assertEqual(row(older_id, "time_to_recover", "restart")["value"], "11")
            # 12 s + a 10 s hold + a 10 s window end at 32 s: a 21 s observe window is short
            short_id = "feed-rs.indexed/baseline+replica-kill/r3"
            self.assertEmpty(row(short_id, "time_to_recover", "clear"), "not recovered")
            self.assertEmpty(row(short_id, "time_to_recover", "restart"), "not recovered")
            # the service back 8 s before its replica: recovery from the restart is signed
            late_id = "feed-rs.indexed/baseline+replica-kill/r5"
            self.assertEqual(row(late_id, "time_to_recover", "restart")["value"], "-8")
            self.assertEqual(row(late_id, "time_to_recover", "clear")["value"], "12")

    def test_time_to_ready(self):
        # the kill: the probe's first attempt 290 ms before the clear, its 200 ends 15 ms after
        self.assertEqual(self.val("feed-rs.indexed/baseline+replica-kill/r1", "time_to_ready"),
                         "0.305")
        with tempfile.TemporaryDirectory() as t:
            runs = Path(t) / "runs"
            cut = gen.fault_run(runs, injection="link-down", restart=False, fault="db-cut",
                                up_after_clear=True)
            unprobed = gen.fault_run(runs, repetition=2)
            (unprobed / "readiness.csv").unlink()
            never = gen.fault_run(runs, repetition=3)
            probe = (never / "readiness.csv").read_text().replace(",200,", ",503,")
            (never / "readiness.csv").write_text(probe)
            p = run_twin(Path(t) / "out", cut, unprobed, never)
            self.assertEqual(p.returncode, 0, p.stderr)
            m = read_metrics(Path(t) / "out" / "metrics.csv")

            def note(run):
                r = m[(run, "", "", "", "", "time_to_ready")]
                return r["value"], r["note"]
            self.assertEqual(note("feed-rs.indexed/baseline+db-cut/r1"), ("", "not applicable"))
            self.assertEqual(note("feed-rs.indexed/baseline+replica-kill/r2"), ("", "not recorded"))
            self.assertEqual(note("feed-rs.indexed/baseline+replica-kill/r3"), ("", "not observed"))

    def test_recovery_just_fits(self):
        # recovery at 12 s needs windows up to 12 + 10 + 10 = 32 s after the clear
        with tempfile.TemporaryDirectory() as t:
            fits = gen.fault_run(Path(t) / "runs", observe_s=32)
            short = gen.fault_run(Path(t) / "runs", repetition=2, observe_s=31)
            p = run_twin(Path(t) / "out", fits, short)
            self.assertEqual(p.returncode, 0, p.stderr)
            m = read_metrics(Path(t) / "out" / "metrics.csv")
            key = ("", "", "", "clear", "time_to_recover")
            self.assertEqual(m[("feed-rs.indexed/baseline+replica-kill/r1",) + key]["value"], "12")
            self.assertEqual(m[("feed-rs.indexed/baseline+replica-kill/r2",) + key]["note"],
                             "not recovered")

    # --- the summary

    def test_summary(self):
        key = ("feed-rs", "indexed", "baseline", "", "", "", "", "latency_p50")
        row = self.s[key]
        runs = ["feed-rs.indexed/baseline/r1", "feed-rs.indexed/baseline/r2",
                "feed-rs.indexed/baseline/r3"]
        vals = [float(self.val(r, "latency_p50")) for r in runs]
        self.assertEqual(row["n"], "3")
        self.assertEqual(row["unit"], "ms")
        self.assertEqual(float(row["median"]), sorted(vals)[1])
        # three runs: the range, whose exact coverage is 1 − 2 × 1/8
        lo, hi = min(vals), max(vals)
        self.assertEqual((float(row["ci_low"]), float(row["ci_high"])), (lo, hi))
        self.assertEqual(row["confidence"], "0.75")
        self.assertLess(lo, hi)
        # no per-second row in the summary
        self.assertFalse([k for k in self.s if k[7].startswith("second_")])
        # a single run: n 1, no interval
        row = self.s[("feed-rs", "indexed", "ramp", "", "", "", "objective-windows", "saturation")]
        self.assertEqual((row["n"], row["median"], row["ci_low"], row["ci_high"],
                          row["confidence"]), ("1", "30", "", "", ""))
        row = self.s[("feed-rs", "indexed", "ramp", "", "", "", "errors-only", "first_breach")]
        self.assertEqual((row["n"], row["median"]), ("0", ""))
        row = self.s[("feed-rs", "indexed", "ramp", "", "40", "", "every-second", "step_met")]
        self.assertEqual((row["n"], row["median"]), ("1", "0"))

    def test_summary_interval_of_four_runs(self):
        with tempfile.TemporaryDirectory() as t:
            runs = Path(t) / "runs"
            dirs = [gen.constant_run(runs, repetition=r, shift_ms=s)
                    for r, s in ((10, 3.0), (9, 0.0), (2, 7.0), (1, 1.0))]
            p = run_twin(Path(t) / "out", *dirs)
            self.assertEqual(p.returncode, 0, p.stderr)
            s = read_summary(Path(t) / "out" / "summary.csv")
            row = s[("feed-rs", "indexed", "baseline", "", "", "", "", "latency_p90")]
            m = read_metrics(Path(t) / "out" / "metrics.csv")
            # the whole phase's rows (not the per-route ones)
            ids = sorted((k[0] for k in m if k[5] == "latency_p90" and k[4] == ""),
                         key=str.encode)
            self.assertEqual(ids[0], "feed-rs.indexed/baseline/r1")
            self.assertEqual(ids[1], "feed-rs.indexed/baseline/r10")  # bytes, not numbers
            vals = [float(m[(r, "", "", "", "", "latency_p90")]["value"]) for r in ids]
            self.assertEqual(row["n"], "4")
            self.assertEqual(float(row["median"]), (sorted(vals)[1] + sorted(vals)[2]) / 2)
            # four runs: the range, at 1 − 2 × 1/16
            self.assertEqual((float(row["ci_low"]), float(row["ci_high"])),
                             (min(vals), max(vals)))
            self.assertEqual(row["confidence"], "0.875")


class Reading(unittest.TestCase):
    def test_rss_rows_empty_without_the_column(self):
        with tempfile.TemporaryDirectory() as t:
            d = gen.constant_run(Path(t) / "runs", rss_column=False)
            header = (d / "containers.csv").read_text().splitlines()[0]
            self.assertNotIn("memory_rss_bytes", header)
            p = run_twin(Path(t) / "out", d)
            self.assertEqual(p.returncode, 0, p.stderr)
            m = read_metrics(Path(t) / "out" / "metrics.csv")
            run = "feed-rs.indexed/baseline/r1"
            for container in ("feedbench-replica-1", "replicas"):
                for metric in ("memory_rss_peak", "memory_rss_mean"):
                    row = m[(run, "", "", container, "measured", metric)]
                    self.assertEqual((row["value"], row["note"]), ("", "none"))
            row = m[(run, "", "", "feedbench-replica-1", "measured", "memory_usage_peak")]
            self.assertEqual(row["value"], "200000000")
            # the working set is read on its own
            row = m[(run, "", "", "replicas", "measured", "memory_working_set_mean")]
            self.assertEqual((row["value"], row["note"]), ("271000000", ""))

    def test_working_set_rows_empty_without_the_column(self):
        # containers.csv as written before memory_working_set_bytes
        with tempfile.TemporaryDirectory() as t:
            d = gen.constant_run(Path(t) / "runs", working_set_column=False)
            header = (d / "containers.csv").read_text().splitlines()[0].split(",")
            self.assertNotIn("memory_working_set_bytes", header)
            self.assertEqual(header[header.index("memory_rss_bytes") + 1], "memory_limit_bytes")
            p = run_twin(Path(t) / "out", d)
            self.assertEqual(p.returncode, 0, p.stderr)
            m = read_metrics(Path(t) / "out" / "metrics.csv")
            run = "feed-rs.indexed/baseline/r1"
            for container in ("feedbench-replica-1", "feedbench-replica-2", "feedbench-database",
                              "replicas"):
                for metric in ("memory_working_set_peak", "memory_working_set_mean"):
                    row = m[(run, "", "", container, "measured", metric)]
                    self.assertEqual((row["value"], row["unit"], row["note"]),
                                     ("", "bytes", "none"), (container, metric))
            row = m[(run, "", "", "feedbench-replica-1", "measured", "memory_rss_peak")]
            self.assertEqual(row["value"], "121000000")
            row = m[(run, "", "", "replicas", "measured", "memory_rss_mean")]
            self.assertEqual(row["value"], "187500000")
            # every other row as with the column
            d2 = gen.constant_run(Path(t) / "runs2")
            p = run_twin(Path(t) / "out2", d2)
            self.assertEqual(p.returncode, 0, p.stderr)
            m2 = read_metrics(Path(t) / "out2" / "metrics.csv")
            self.assertEqual(m.keys(), m2.keys())
            differ = {k[5] for k in m if m[k] != m2[k]}
            self.assertEqual(differ, {"memory_working_set_peak", "memory_working_set_mean"})

    def test_no_route_rows_without_the_column(self):
        # requests.csv without `route`: no per-route rows; every other row as with it
        with tempfile.TemporaryDirectory() as t:
            d = gen.constant_run(Path(t) / "runs", route_column=False)
            header = (d / "requests.csv").read_text().splitlines()[0].split(",")
            self.assertNotIn("route", header)
            p = run_twin(Path(t) / "out", d)
            self.assertEqual(p.returncode, 0, p.stderr)
            m = read_metrics(Path(t) / "out" / "metrics.csv")
            self.assertFalse([k for k in m if "route:" in k[4]])
            run = "feed-rs.indexed/baseline/r1"
            row = m[(run, "", "", "", "", "status_2xx_share")]
            self.assertEqual((row["value"], row["unit"], row["note"]), ("0.86", "ratio", ""))
            d2 = gen.constant_run(Path(t) / "runs2")
            p = run_twin(Path(t) / "out2", d2)
            self.assertEqual(p.returncode, 0, p.stderr)
            m2 = read_metrics(Path(t) / "out2" / "metrics.csv")
            with_routes = {k: v for k, v in m2.items() if "route:" not in k[4]}
            self.assertEqual(m.keys(), with_routes.keys())
            # the same but the efficiency: without routes, no 404 is the post route's
            # declared share, so none counts as served
            differ = {k[5] for k in m if m[k] != with_routes[k]}
            self.assertEqual(differ, {"requests_per_core_second"})

    def test_columns_are_read_by_name(self):
        with tempfile.TemporaryDirectory() as t:
            d = gen.constant_run(Path(t) / "runs")
            p = run_twin(Path(t) / "a", d)
            self.assertEqual(p.returncode, 0, p.stderr)
            for name in ("containers.csv", "requests.csv"):
                with open(d / name, newline="") as f:
                    rows = list(csv.reader(f))
                rows = [list(reversed(r)) for r in rows]
                with open(d / name, "w", newline="") as f:
                    csv.writer(f).writerows(rows)
            p = run_twin(Path(t) / "b", d)
            self.assertEqual(p.returncode, 0, p.stderr)
            for name in ("metrics.csv", "summary.csv"):
                self.assertEqual((Path(t) / "a" / name).read_text(),
                                 (Path(t) / "b" / name).read_text())


    def test_quoted_fields_read_as_unquoted_ones(self):
        with tempfile.TemporaryDirectory() as t:
            d = gen.fault_run(Path(t) / "runs")
            p = run_twin(Path(t) / "a", d)
            self.assertEqual(p.returncode, 0, p.stderr)
            path = d / "requests.csv"
            with open(path, newline="") as f:
                rows = list(csv.reader(f))
            for r in rows[1:40]:
                r[-1] = '1212 dial: "connection refused", retrying\nonce'
            with open(path, "w", newline="") as f:
                csv.writer(f).writerows(rows)
            self.assertIn('"', path.read_text())
            p = run_twin(Path(t) / "b", d)
            self.assertEqual(p.returncode, 0, p.stderr)
            for name in ("metrics.csv", "summary.csv"):
                self.assertEqual((Path(t) / "a" / name).read_text(),
                                 (Path(t) / "b" / name).read_text())
            # a bad value after the quoted multi-line fields: its line, not its row
            rows[60][4] = "2x0"
            with open(path, "w", newline="") as f:
                csv.writer(f).writerows(rows)
            p = run_twin(Path(t) / "c", d)
            self.assertEqual(p.returncode, 2)
            self.assertIn(f"requests.csv:{61 + 39}: unparsable row: status '2x0'", p.stderr)


class DamagedInput(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = gen.fault_run(Path(self.tmp.name) / "runs")

    def tearDown(self):
        self.tmp.cleanup()

    def fails(self, needle):
        p = run_twin(Path(self.tmp.name) / "out", self.dir)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn(needle, p.stderr)
        self.assertNotIn("Traceback", p.stderr)
        self.assertFalse((Path(self.tmp.name) / "out" / "metrics.csv").exists())
        return p.stderr

    def edit_line(self, name, lineno, fn):
        path = self.dir / name
        lines = path.read_text().splitlines(keepends=True)
        lines[lineno - 1] = fn(lines[lineno - 1])
        path.write_text("".join(lines))

    def test_missing_file(self):
        for name in ("requests.csv", "containers.csv", "events.csv", "health.csv", "run.json"):
            with self.subTest(name=name):
                path = self.dir / name
                data = path.read_bytes()
                path.unlink()
                self.fails(f"{name}: missing file")
                path.write_bytes(data)

    def test_unparsable_status(self):
        self.edit_line("requests.csv", 5, lambda l: l.replace(",200,", ",2x0,"))
        err = self.fails("requests.csv:5:")
        self.assertIn("status", err)

    def test_short_row(self):
        self.edit_line("requests.csv", 7, lambda l: l.rsplit(",", 2)[0] + "\n")
        self.fails("requests.csv:7:")

    def test_blank_line(self):
        self.edit_line("containers.csv", 4, lambda l: "\n" + l)
        self.fails("containers.csv:4:")

    def test_empty_start(self):
        self.edit_line("requests.csv", 9, lambda l: "," + l.split(",", 1)[1])
        self.fails("requests.csv:9:")

    def test_float_time(self):
        self.edit_line("events.csv", 3, lambda l: l.replace(l.split(",")[0], "1.8e18", 1))
        self.fails("events.csv:3:")

    def test_unparsable_working_set(self):
        # line 4: the fault-proxy's first row, working set 70000002
        self.edit_line("containers.csv", 4, lambda l: l.replace(",70000002,", ",7e0x,"))
        self.fails("containers.csv:4: unparsable row: memory_working_set_bytes '7e0x' "
                   "is not a finite number")

    def test_missing_column(self):
        self.edit_line("containers.csv", 1, lambda l: l.replace("cpu_usage_s", "cpu_usage"))
        self.fails("containers.csv:1: no column cpu_usage_s")

    def test_bad_json(self):
        path = self.dir / "run.json"
        path.write_text(path.read_text().replace('"frame": {', '"frame": {,', 1))
        err = self.fails("run.json:")
        self.assertRegex(err, r"run\.json:\d+:\d+: does not parse")

    def test_missing_frame_field(self):
        path = self.dir / "run.json"
        doc = json.loads(path.read_text())
        del doc["frame"]["measured"]["end_ns"]
        path.write_text(json.dumps(doc))
        self.fails("no field frame.measured.end_ns")

    def test_bad_confirm_steps(self):
        self.dir = gen.stalled_ramp_run(Path(self.tmp.name) / "runs")
        path = self.dir / "run.json"
        doc = json.loads(path.read_text())
        for bad in (-1, "1", True, 1.5, [1]):
            with self.subTest(bad=bad):
                doc["frame"]["confirm_steps"] = bad
                path.write_text(json.dumps(doc))
                self.fails(f"run.json: frame.confirm_steps is not a non-negative integer: "
                           f"{bad!r}")

    def test_not_a_directory(self):
        p = run_twin(Path(self.tmp.name) / "out", Path(self.tmp.name) / "nope")
        self.assertEqual(p.returncode, 2)
        self.assertIn("not a run directory", p.stderr)


if __name__ == "__main__":
    unittest.main()
