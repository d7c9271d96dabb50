#!/usr/bin/env python3
"""The twin: an independent recomputation of `feedbench report`'s figures.

Written from docs/analysis.md and docs/results.md alone; it imports nothing of feedbench.

    python3 twin/recompute.py --out DIR [--checks FILE] [--paired-rounds] RUNDIR [RUNDIR...]
    python3 twin/recompute.py --out DIR --checks FILE --metrics METRICS_CSV

reads each run directory (run.json, requests.csv, containers.csv and, for a run with a
fault, events.csv and health.csv) and writes DIR/metrics.csv and DIR/summary.csv; with
--checks, it evaluates checks.json's checks on those rows (or on the rows of the given
metrics.csv) and writes DIR/verdicts.json (hypotheses.py). With run directories it also
compares every pair of arms on the headline figures and writes DIR/comparisons.csv
(comparison.py; --paired-rounds: the plan's order makes rounds, so pairs are paired, in
comparisons.csv and in the checks' comparisons of two arms alike), in two families Holm
adjusts apart: the pairs the checks compare (`hypotheses`) and every other (`exploratory`).
A damaged input is reported on stderr as `FILE:LINE: what` and the exit code is 2.
"""

from __future__ import annotations

import argparse
import csv
import functools
import io
import json
import math
import os
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd

import comparison  # the family of comparisons.csv (beside this file; nothing of feedbench)

NS = 1_000_000_000

METRICS_COLUMNS = [
    "run", "contender", "variant", "profile", "fault", "repetition", "step_rate", "second",
    "container", "definition", "metric", "value", "unit", "note",
]
SUMMARY_COLUMNS = [
    "contender", "variant", "profile", "fault", "step_rate", "container", "definition",
    "metric", "unit", "n", "median", "ci_low", "ci_high", "confidence", "bound",
]
COMPARISONS_COLUMNS = [
    "metric", "definition", "container", "profile", "fault", "a", "b", "n_a", "n_b", "paired",
    "median_a", "median_b", "difference_low", "difference_high", "difference_confidence",
    "ratio_low", "ratio_high", "ratio_confidence", "p", "p_min", "p_adjusted", "finding",
    "higher", "n", "needed", "level", "why", "family",
]

NONE = "none"
NOT_REACHED = "not reached"
CENSORED = "censored at the stop"
BELOW_FIRST_STEP = "below the first step"
NOT_OBSERVED = "not observed"
NOT_RECOVERED = "not recovered"
NOT_APPLICABLE = "not applicable"
NOT_RECORDED = "not recorded"

PATH_ROLES = ("load-generator", "fault-proxy", "balancer")
SATURATION_DEFINITIONS = (
    "objective-windows", "every-second", "p99-only", "errors-only", "throughput-knee",
)
# Faults that kill or stop a replica, and so have a `restart` origin (the replica back in
# service: health.csv's first UP after the fault's clearing).
RESTARTING_INJECTIONS = ("kill-replica", "stop-replica")

# The median's interval is the narrowest order-statistic interval whose exact coverage is at
# least this level (summary.csv's `confidence` gives the coverage itself).
MEDIAN_LEVEL = Fraction(95, 100)
# The percentile bootstrap of a mean (hypotheses.py): SplitMix64 from this seed.
BOOTSTRAP_SEED = 0x5EED_F00D_0000_0013
BOOTSTRAP_RESAMPLES = 10_000
SPLITMIX_GAMMA = 0x9E3779B97F4A7C15
SPLITMIX_M1 = 0xBF58476D1CE4E5B9
SPLITMIX_M2 = 0x94D049BB133111EB


class InputError(Exception):
    """A damaged or missing input: reported as `file:line: message`, exit 2."""

    def __init__(self, path, line, message):
        super().__init__(message)
        self.path = path
        self.line = line
        self.message = message

    def __str__(self):
        where = str(self.path)
        if self.line is not None:
            where += f":{self.line}"
        return f"{where}: {self.message}"


# ---------------------------------------------------------------------------------------
# Numbers


def fmt(v) -> str:
    """Up to 9 decimals, trailing zeros removed; None is the empty value."""
    if v is None:
        return ""
    if isinstance(v, (bool, np.bool_)):
        return "1" if v else "0"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    v = float(v)
    if not np.isfinite(v):
        raise ValueError(f"non-finite figure {v!r}")
    s = f"{v:.9f}".rstrip("0").rstrip(".")
    if s in ("-0", "", "-"):
        s = "0"
    return s


def rank(p: Fraction, n):
    """Nearest rank, 1-based: max(1, ceil(p/100 × n)), in exact arithmetic (n may be an array)."""
    num, den = p.numerator, p.denominator * 100
    r = -((-num * n) // den)
    return np.maximum(1, r) if isinstance(r, np.ndarray) else max(1, r)


P50, P90, P95, P99, P999 = (Fraction(x) for x in ("50", "90", "95", "99", "99.9"))
P2_5, P97_5 = Fraction("2.5"), Fraction("97.5")


def percentile(values: np.ndarray, p: Fraction):
    n = len(values)
    if n == 0:
        return None
    r = rank(p, n)
    return float(np.partition(values, r - 1)[r - 1])


def percentiles(values: np.ndarray, ps):
    n = len(values)
    if n == 0:
        return [None] * len(ps)
    ranks = [rank(p, n) - 1 for p in ps]
    part = np.partition(values, sorted(set(ranks)))
    return [float(part[r]) for r in ranks]


def median(values):
    v = sorted(values)
    n = len(v)
    if n == 0:
        return None
    if n % 2:
        return v[n // 2]
    return (v[n // 2 - 1] + v[n // 2]) / 2


# ---------------------------------------------------------------------------------------
# Reading the files


def _record_lines(path: Path, data: bytes, text: str, ncols: int):
    """Check that every record has the header's number of fields.

    Returns each record's line number (its last line, for a quoted field spanning lines)
    and, for a file without quotes, every field's byte span (starts, ends), each of shape
    (records, ncols); None for a file with quotes."""
    if b'"' not in data:
        # No quoting: a record is a line, its fields its commas plus one.
        arr = np.frombuffer(data, dtype=np.uint8)
        nl = np.flatnonzero(arr == 10)
        ends = nl if data.endswith(b"\n") else np.append(nl, len(arr))
        starts = np.concatenate(([0], nl + 1))[: len(ends)]
        comma = arr == 44
        cpos = np.flatnonzero(comma)
        fields = np.searchsorted(cpos, ends) - np.searchsorted(cpos, starts) + 1
        length = ends - starts
        blank = (length == 0) | ((length == 1) & (arr[np.minimum(starts, len(arr) - 1)] == 13))
        bad = (fields != ncols) | blank
        bad[0] = False  # the header
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            what = "an empty line" if blank[i] else f"{int(fields[i])} fields"
            raise InputError(path, i + 1, f"unparsable row: {what}, the header has {ncols}")
        seps = np.flatnonzero(comma | (arr == 10))
        if not data.endswith(b"\n"):
            seps = np.append(seps, len(arr))
        f_end = seps.reshape(-1, ncols)
        f_start = np.concatenate(([0], seps[:-1] + 1)).reshape(-1, ncols)
        plain = _INT_BYTES[arr]
        not_int = np.concatenate(([0], np.cumsum(~plain, dtype=np.int32)))
        return np.arange(2, len(ends) + 1, dtype=np.int64), (not_int, f_start[1:], f_end[1:])
    lines = []
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        next(reader)
        for row in reader:
            if len(row) != ncols:
                what = "an empty line" if not row else f"{len(row)} fields"
                raise InputError(path, reader.line_num,
                                 f"unparsable row: {what}, the header has {ncols}")
            lines.append(reader.line_num)
    except csv.Error as e:
        raise InputError(path, reader.line_num + 1, f"unparsable row: {e}") from None
    return np.asarray(lines, dtype=np.int64), None


_INT_BYTES = np.zeros(256, dtype=bool)
_INT_BYTES[[ord(c) for c in "0123456789-+\r"]] = True


def _int_fields_plain(spans, col: int) -> bool:
    """Whether every field of column `col` is a non-empty run of digits (and sign)."""
    bad, f_start, f_end = spans
    if len(f_start) == 0:
        return True
    s, e = f_start[:, col], f_end[:, col]
    return bool(((bad[e] - bad[s]) == 0).all() and (e > s).all())


def read_table(path: Path, spec: dict, optional_columns=()):
    """Read a tidy CSV by column name.

    spec: column -> (kind, required) with kind `int`, `float` or `str`; `required` means
    every row must have a value (an `int` column is always required). Columns in
    optional_columns may be absent from the header (they are then all missing). Returns a
    DataFrame with exactly the spec's columns and `_line`, each row's line in the file.
    """
    if not path.is_file():
        raise InputError(path, None, "missing file")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(path, data[: e.start].count(b"\n") + 1, "not UTF-8 text") from None
    first = text.split("\n", 1)[0].rstrip("\r")
    try:
        header_row = next(csv.reader([first]), None)
    except csv.Error as e:
        raise InputError(path, 1, f"unparsable header: {e}") from None
    if not header_row or header_row == [""]:
        raise InputError(path, 1, "no header line")
    if len(set(header_row)) != len(header_row):
        raise InputError(path, 1, "a column name appears twice in the header")
    missing = [c for c in spec if c not in header_row and c not in optional_columns]
    if missing:
        raise InputError(path, 1, f"no column {', '.join(missing)} in the header")
    lines, spans = _record_lines(path, data, text, len(header_row))
    present = [c for c in spec if c in header_row]
    n = len(lines)

    # The fast reading: typed by the C parser, for a file without quotes whose integer
    # fields are plain digits (the parser would take `1.8e18` as an integer). Anything it
    # does not take as it is goes to the strict reading, which names the line.
    df = None
    if spans is not None and all(_int_fields_plain(spans, header_row.index(c))
                                 for c in present if spec[c][0] == "int"):
        try:
            dtype = {c: {"int": "int64", "float": "float64", "str": str}[spec[c][0]]
                     for c in present}
            na = {c: [""] for c in present if spec[c][0] == "float"}
            df = pd.read_csv(io.BytesIO(data), usecols=present, dtype=dtype,
                             keep_default_na=False, na_values=na, encoding="utf-8")
            for c in present:
                kind, required = spec[c]
                if kind == "float":
                    v = df[c].to_numpy()
                    if np.isinf(v).any() or (required and np.isnan(v).any()):
                        df = None
                        break
                elif kind == "str" and required and (df[c] == "").any():
                    df = None
                    break
            if df is not None and len(df) != n:
                df = None
        except (ValueError, OverflowError, TypeError, pd.errors.ParserError):
            df = None
    if df is None:
        df = _read_strict(path, data, present, spec, lines)
    out = {}
    for column, (kind, _) in spec.items():
        if column in df.columns:
            out[column] = df[column].to_numpy()
        else:
            out[column] = np.full(n, "", dtype=object) if kind == "str" else np.full(n, np.nan)
    out = pd.DataFrame(out)
    out["_line"] = lines
    return out


def _read_strict(path: Path, data: bytes, present, spec, lines):
    """The slow reading, as text, value by value: names the first bad value and its line."""
    try:
        raw = pd.read_csv(io.BytesIO(data), usecols=present, dtype=str, keep_default_na=False,
                          na_filter=False, encoding="utf-8")
    except (pd.errors.ParserError, ValueError) as e:
        raise InputError(path, None, f"unparsable: {e}") from None
    if len(raw) != len(lines):
        raise InputError(path, None, "unparsable: the rows do not read back consistently")

    def fail(mask, column, why):
        i = int(np.flatnonzero(mask)[0])
        value = raw[column].iloc[i]
        raise InputError(path, int(lines[i]), f"unparsable row: {column} {value!r} {why}")

    out = {}
    for column in present:
        kind, required = spec[column]
        s = raw[column].astype(object)
        empty = (s == "").to_numpy()
        if (required or kind == "int") and empty.any():
            fail(empty, column, "is empty")
        if kind == "str":
            out[column] = s.to_numpy()
        elif kind == "int":
            ok = s.str.fullmatch(r"\s*[-+]?[0-9]+\s*").to_numpy(dtype=bool)
            if not ok.all():
                fail(~ok, column, "is not an integer")
            big = s.map(lambda x: not (-2**63 <= int(x) < 2**63)).to_numpy(dtype=bool)
            if big.any():
                fail(big, column, "is out of range")
            out[column] = np.array([int(x) for x in s], dtype=np.int64)
        elif kind == "float":
            vals = pd.to_numeric(s.where(~empty, None), errors="coerce").to_numpy(dtype=float)
            bad = ~np.isfinite(vals) & ~empty
            if bad.any():
                fail(bad, column, "is not a finite number")
            out[column] = vals
    return pd.DataFrame(out)


def _json_error(path, why, line=None):
    return InputError(path, line, why)


def _ns(path, obj, key, ctx):
    v = _get(path, obj, key, ctx)
    if isinstance(v, bool):
        raise _json_error(path, f"{ctx}.{key} is not an integer of nanoseconds")
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.lstrip("-").isdigit():
        return int(v)
    raise _json_error(path, f"{ctx}.{key} is not an integer of nanoseconds: {v!r}")


def _num(path, obj, key, ctx):
    v = _get(path, obj, key, ctx)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        if isinstance(v, str):
            try:
                return float(v)
            except ValueError:
                pass
        raise _json_error(path, f"{ctx}.{key} is not a number: {v!r}")
    return v


def _get(path, obj, key, ctx):
    if not isinstance(obj, dict):
        raise _json_error(path, f"{ctx} is not an object")
    if key not in obj:
        raise _json_error(path, f"no field {ctx}.{key}")
    return obj[key]


def _text(path, obj, key, ctx, nullable=False):
    v = _get(path, obj, key, ctx)
    if v is None and nullable:
        return ""
    if not isinstance(v, str):
        raise _json_error(path, f"{ctx}.{key} is not a string: {v!r}")
    return v


def _optional_text(path, obj, key, ctx):
    """A string that may be absent or null: None then."""
    v = obj.get(key) if isinstance(obj, dict) else None
    if v is not None and not isinstance(v, str):
        raise _json_error(path, f"{ctx}.{key} is not a string: {v!r}")
    return v


def read_run_json(path: Path):
    if not path.is_file():
        raise InputError(path, None, "missing file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise InputError(path, None, f"not UTF-8 text: {e}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(path, f"{e.lineno}:{e.colno}", f"does not parse: {e.msg}") from None
    if not isinstance(doc, dict):
        raise _json_error(path, "is not a JSON object")
    run_id = _text(path, doc, "run_id", "run")
    frame = _get(path, doc, "frame", "run")
    if frame is None:
        raise _json_error(path, "run.frame is null (a run without a frame cannot be analysed)")
    f = {}
    variant = _text(path, frame, "variant", "frame", nullable=True)
    contender = _text(path, frame, "contender", "frame")
    if variant and contender.endswith("." + variant):
        contender = contender[: -len(variant) - 1]
    f["contender"], f["variant"] = contender, variant
    f["profile"] = _text(path, frame, "profile", "frame")
    f["fault"] = _text(path, frame, "fault", "frame", nullable=True)
    rep = _get(path, frame, "repetition", "frame")
    if isinstance(rep, bool) or not isinstance(rep, (int, str)):
        raise _json_error(path, f"frame.repetition is not an integer: {rep!r}")
    f["repetition"] = str(rep)
    m = _get(path, frame, "measured", "frame")
    f["start"] = _ns(path, m, "start_ns", "frame.measured")
    f["end"] = _ns(path, m, "end_ns", "frame.measured")
    f["offered"] = _num(path, m, "offered_arrivals", "frame.measured")
    steps = _get(path, frame, "steps", "frame")
    if steps is None:
        steps = []
    if not isinstance(steps, list):
        raise _json_error(path, "frame.steps is not a list")
    f["steps"] = []
    for i, s in enumerate(steps):
        ctx = f"frame.steps[{i}]"
        f["steps"].append({
            "rate": _num(path, s, "rate", ctx),
            "start": _ns(path, s, "start_ns", ctx),
            "end": _ns(path, s, "end_ns", ctx),
            "offered": _num(path, s, "offered_arrivals", ctx),
        })
    # A ramp stopped at its knee (docs/results.md, run.json's frame.stopped).
    f["stopped"] = frame.get("stopped") is not None
    # How many steps after a breach must breach too for it to be sustained (a knee);
    # absent (older run.json files) or null: 0, every breach is sustained.
    confirm = frame.get("confirm_steps")
    if confirm is None:
        confirm = 0
    elif isinstance(confirm, bool) or not isinstance(confirm, int) or confirm < 0:
        raise _json_error(path, f"frame.confirm_steps is not a non-negative integer: {confirm!r}")
    f["confirm"] = confirm
    # Each route's declared expected 4xx share (docs/analysis.md, "Expected 4xx"); absent in
    # older run.json files: none declared.
    declared = frame.get("expected_4xx") or {}
    if not isinstance(declared, dict):
        raise _json_error(path, "frame.expected_4xx is not an object of route → ratio")
    for route, share in declared.items():
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
            raise _json_error(path, f"frame.expected_4xx.{route} is not a ratio in [0, 1]: {share!r}")
    f["expected_4xx"] = {str(k): float(v) for k, v in declared.items()}
    o = _get(path, frame, "objective", "frame")
    f["p99_ms"] = _num(path, o, "p99_ms", "frame.objective")
    f["failed_bound"] = _num(path, o, "failed_share", "frame.objective")
    f["W"] = _ns(path, o, "window_ns", "frame.objective")
    if f["W"] <= 0:
        raise _json_error(path, "frame.objective.window_ns is not positive")
    fw = frame.get("fault_window") if isinstance(frame, dict) else None
    if fw is not None:
        f["fault_window"] = {
            "name": _text(path, fw, "name", "frame.fault_window"),
            "injection": _text(path, fw, "injection", "frame.fault_window"),
            "observe": _ns(path, fw, "observe_ns", "frame.fault_window"),
            # The balancer's server a fault on one replica is aimed at; absent for faults on
            # a link or every replica, and in older run.json files: any server's rows count.
            "server": _optional_text(path, fw, "server", "frame.fault_window"),
        }
        if not f["fault"]:
            f["fault"] = f["fault_window"]["name"]
    else:
        f["fault_window"] = None
    caps = _get(path, frame, "caps", "frame")
    if not isinstance(caps, dict):
        raise _json_error(path, "frame.caps is not an object")
    f["caps"] = {}
    for name, c in caps.items():
        ctx = f"frame.caps[{name!r}]"
        f["caps"][name] = {"role": _text(path, c, "role", ctx), "cpus": _num(path, c, "cpus", ctx)}
    r = _get(path, frame, "recovery", "frame")
    f["recovery"] = {
        "window": _ns(path, r, "window_ns", "frame.recovery"),
        "step": _ns(path, r, "step_ns", "frame.recovery"),
        "hold": _ns(path, r, "hold_ns", "frame.recovery"),
        "thr_tol": _num(path, r, "throughput_tolerance", "frame.recovery"),
        "lat_tol": _num(path, r, "latency_tolerance", "frame.recovery"),
    }
    if f["recovery"]["step"] <= 0 or f["recovery"]["window"] <= 0:
        raise _json_error(path, "frame.recovery.step_ns and window_ns must be positive")
    # The rule the run's windows are judged by (docs/analysis.md, "Windows by schedule");
    # absent in older run.json files, which were judged by start.
    rule = frame.get("judged_by", "by-start")
    if rule not in JUDGING_RULES:
        raise _json_error(path, f"frame.judged_by is {rule!r}, not one of {', '.join(JUDGING_RULES)}")
    f["judged_by"] = rule
    load = doc.get("load")
    dropped = None
    if isinstance(load, dict) and load.get("dropped_iterations") is not None:
        dropped = _num(path, load, "dropped_iterations", "load")
    elif load is not None and not isinstance(load, dict):
        raise _json_error(path, "load is not an object")
    f["dropped"] = dropped
    f["scenario_start"], f["dropped_per_second"] = _drops(path, load)
    return run_id, f


JUDGING_RULES = ("by-start", "by-schedule")


def _drops(path, load):
    """The load summary's scenario start (unix ns, or None) and dropped starts per second."""
    if not isinstance(load, dict):
        return None, []
    start = load.get("scenario_start_ns")
    if start is not None:
        start = _ns(path, load, "scenario_start_ns", "load")
    per = load.get("dropped_per_second") or []
    if not isinstance(per, list) or any(
            isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in per):
        raise _json_error(path, "load.dropped_per_second is not a list of counts")
    return start, per


def is_replica_role(role: str) -> bool:
    return role == "replica" or (role.startswith("replica-") and role[8:].isdigit())


# ---------------------------------------------------------------------------------------
# Requests


class Requests:
    """requests.csv sorted by start_ns, with cumulative counts for span queries."""

    def __init__(self, df: pd.DataFrame):
        self.df = df
        order = np.argsort(df["start_ns"].to_numpy(), kind="stable")
        self.start = df["start_ns"].to_numpy()[order]
        self.end = df["end_ns"].to_numpy()[order]
        status = df["status"].to_numpy()[order]
        self.dur = df["duration_ms"].to_numpy()[order]
        # A native load generator's rows carry the instant the open model scheduled them.
        self.scheduled = (df["scheduled_ns"].to_numpy()[order]
                          if "scheduled_ns" in df.columns and not df["scheduled_ns"].isna().any()
                          else None)
        self.status = status
        self.failed = (status == 0) | (status >= 500)
        self.no_response = status == 0
        self.s5xx = status >= 500
        self.s4xx = (status >= 400) & (status <= 499)
        self.s2xx = (status >= 200) & (status <= 299)
        # The workload route of each request; "" for every row of a file without the column.
        self.route = df["route"].to_numpy()[order]
        self.cum_failed = np.concatenate(([0], np.cumsum(self.failed)))

    def span(self, a, b):
        lo = int(np.searchsorted(self.start, a, "left"))
        hi = int(np.searchsorted(self.start, b, "left"))
        return lo, max(lo, hi)

    def spans(self, a: np.ndarray, b: np.ndarray):
        lo = np.searchsorted(self.start, a, "left")
        hi = np.maximum(lo, np.searchsorted(self.start, b, "left"))
        return lo, hi

    def failed_in(self, lo, hi):
        return self.cum_failed[hi] - self.cum_failed[lo]

    def placed(self, f):
        """These requests as the run's rule places them (docs/analysis.md, "Windows by
        schedule"): by schedule, each row with a scheduled instant starts there, and its
        duration is its latency from there (at least 0); by start, as they are."""
        if f["judged_by"] != "by-schedule" or self.scheduled is None:
            return self
        order = np.argsort(self.df["start_ns"].to_numpy(), kind="stable")
        df = self.df.iloc[order].reset_index(drop=True).copy()
        sched = df["scheduled_ns"].to_numpy()
        df["duration_ms"] = np.maximum(df["end_ns"].to_numpy() - sched, 0) / 1e6
        df["start_ns"] = sched
        return Requests(df)


class Judged:
    """The requests as the run's rule judges them (docs/analysis.md, "Windows by
    schedule"): by schedule, each placed at its scheduled instant where the file has one,
    its latency from there, and every dropped start a failed request without a latency
    (NaN) at the start of its second; by start, as requests.csv says. Sorted by where each
    is placed."""

    def __init__(self, req: Requests, f):
        by_schedule = f["judged_by"] == "by-schedule"
        if by_schedule and req.scheduled is not None:
            at = req.scheduled
            lat = np.maximum(req.end - req.scheduled, 0) / 1e6
        else:
            at, lat = req.start, req.dur.astype(float)
        drops = []
        if by_schedule and f["scenario_start"] is not None:
            for second, count in enumerate(f["dropped_per_second"]):
                drops += [f["scenario_start"] + second * NS] * count
        drops = np.array(drops, dtype=np.int64)
        at = np.concatenate((at, drops))
        order = np.argsort(at, kind="stable")
        self.at = at[order]
        self.end = np.concatenate((req.end, drops))[order]
        self.lat = np.concatenate((lat, np.full(len(drops), np.nan)))[order]
        self.failed = np.concatenate((req.failed, np.ones(len(drops), dtype=bool)))[order]
        self.sent = ~np.isnan(self.lat)

    def spans(self, a, b):
        lo = np.searchsorted(self.at, a, "left")
        hi = np.maximum(lo, np.searchsorted(self.at, b, "left"))
        return lo, hi

    def span(self, a, b):
        lo, hi = self.spans(np.array([a]), np.array([b]))
        return int(lo[0]), int(hi[0])

    def summary(self, l, h):
        """(sent, dropped, failed share of all, p99 of the latencies sent) of l:h."""
        sent = self.sent[l:h]
        n, k = h - l, int(sent.sum())
        share = int(self.failed[l:h].sum()) / n if n else 0
        return k, n - k, share, percentile(self.lat[l:h][sent], P99)


def read_requests(path: Path) -> Requests:
    df = read_table(path, {
        "start_ns": ("int", True), "end_ns": ("int", True),
        "status": ("int", True), "duration_ms": ("float", True),
        "scheduled_ns": ("int", True), "route": ("str", False),
    }, optional_columns=("scheduled_ns", "route"))
    return Requests(df)


# ---------------------------------------------------------------------------------------
# Containers


class Containers:
    def __init__(self, df: pd.DataFrame, caps: dict):
        self.caps = caps
        self.by_name = {}
        names = df["container"].to_numpy()
        for name in pd.unique(names):
            sub = df[names == name]
            unix = sub["unix_ns"].to_numpy()
            # Rates over the monitors' monotonic clock; the wall clock places the interval.
            offset = sub["offset_s"].to_numpy()
            ok = (sub["status"].to_numpy() == "ok")
            cpu = sub["cpu_usage_s"].to_numpy()
            have = ok & ~np.isnan(cpu)
            pair = have[1:] & have[:-1]
            dcpu = cpu[1:] - cpu[:-1]
            dt = offset[1:] - offset[:-1]
            # A decrease is a counter reset (a restart), not a negative rate; a pair
            # without elapsed time has no rate.
            pair &= (dcpu >= 0) & (dt > 0)
            idx = np.flatnonzero(pair)
            rate = dcpu[idx] / dt[idx]
            self.by_name[name] = {
                "iv_end": unix[1:][idx], "iv_dcpu": dcpu[idx], "iv_rate": rate,
                "unix": unix, "ok": ok, "tick": sub["tick"].to_numpy(),
                "mem": sub["memory_bytes"].to_numpy(),
                "rss": sub["memory_rss_bytes"].to_numpy(),
                "ws": sub["memory_working_set_bytes"].to_numpy(),
            }
        self.replicas = sorted(n for n, c in caps.items() if is_replica_role(c["role"]))

    def cpu(self, name, a, b):
        """(shares of cap in %, cpu seconds) of the container's intervals ending in [a, b)."""
        c = self.by_name.get(name)
        if c is None:
            return np.empty(0), np.empty(0)
        m = (c["iv_end"] >= a) & (c["iv_end"] < b)
        cpus = self.caps[name]["cpus"] if name in self.caps else None
        if cpus is None or cpus <= 0:
            share = np.full(int(m.sum()), np.nan)
        else:
            share = 100.0 * c["iv_rate"][m] / cpus
        return share, c["iv_dcpu"][m]

    def rows_in(self, name, column, a, b):
        c = self.by_name.get(name)
        if c is None:
            return np.empty(0)
        v = c[column]
        m = c["ok"] & (c["unix"] >= a) & (c["unix"] < b) & ~np.isnan(v)
        return v[m]

    def replica_ticks(self, column, a, b):
        """Per-tick sums over the replicas of `column` (`rss`, `ws`) of their ok rows with
        a value in [a, b)."""
        ticks, vals = [], []
        for name in self.replicas:
            c = self.by_name.get(name)
            if c is None:
                continue
            m = c["ok"] & (c["unix"] >= a) & (c["unix"] < b) & ~np.isnan(c[column])
            ticks.append(c["tick"][m])
            vals.append(c[column][m])
        if not ticks:
            return np.empty(0)
        t = np.concatenate(ticks)
        v = np.concatenate(vals)
        if len(t) == 0:
            return np.empty(0)
        return pd.Series(v).groupby(t).sum().to_numpy()


def read_containers(path: Path, caps: dict) -> Containers:
    df = read_table(path, {
        "unix_ns": ("int", True), "offset_s": ("float", True), "tick": ("int", True),
        "container": ("str", True), "status": ("str", True), "cpu_usage_s": ("float", False),
        "memory_bytes": ("float", False), "memory_rss_bytes": ("float", False),
        "memory_working_set_bytes": ("float", False),
    }, optional_columns=("memory_rss_bytes", "memory_working_set_bytes"))
    return Containers(df, caps)


# ---------------------------------------------------------------------------------------
# The figures of one run


class RunRows:
    def __init__(self, run_id, frame):
        self.run_id = run_id
        self.frame = frame
        self.rows = []  # (step_rate, second, container, definition, metric, value, unit, note)

    def add(self, metric, value, unit, note="", *, step_rate=None, second=None,
            container="", definition=""):
        if value is None and not note:
            note = NONE
        if value is not None:
            value = float(value) if not isinstance(value, (int, np.integer)) else int(value)
        self.rows.append((step_rate, second, container, definition, metric, value, unit, note))


def cpu_memory_rows(out: RunRows, cont: Containers, a, b, definition, step_rate, efficiency_ok=None):
    """CPU and memory rows of every capped container and of `replicas` over [a, b)."""
    kw = dict(step_rate=step_rate, definition=definition)
    for name in sorted(cont.caps):
        share, dcpu = cont.cpu(name, a, b)
        if len(dcpu):
            mean = float(np.mean(share)) if not np.isnan(share).any() else None
            p95 = percentile(share, P95) if not np.isnan(share).any() else None
            secs = float(np.sum(dcpu))
        else:
            mean = p95 = secs = None
        out.add("cpu_mean_pct_of_cap", mean, "%", container=name, **kw)
        out.add("cpu_p95_pct_of_cap", p95, "%", container=name, **kw)
        out.add("cpu_seconds", secs, "s", container=name, **kw)
        rss = cont.rows_in(name, "rss", a, b)
        out.add("memory_rss_peak", float(rss.max()) if len(rss) else None, "bytes",
                container=name, **kw)
        out.add("memory_rss_mean", float(rss.mean()) if len(rss) else None, "bytes",
                container=name, **kw)
        ws = cont.rows_in(name, "ws", a, b)
        out.add("memory_working_set_peak", float(ws.max()) if len(ws) else None, "bytes",
                container=name, **kw)
        out.add("memory_working_set_mean", float(ws.mean()) if len(ws) else None, "bytes",
                container=name, **kw)
        mem = cont.rows_in(name, "mem", a, b)
        out.add("memory_usage_peak", float(mem.max()) if len(mem) else None, "bytes",
                container=name, **kw)
    dcpus = [cont.cpu(n, a, b)[1] for n in cont.replicas]
    n_iv = sum(len(d) for d in dcpus)
    rep_secs = float(sum(float(np.sum(d)) for d in dcpus)) if n_iv else None
    out.add("cpu_seconds", rep_secs, "s", container="replicas", **kw)
    for column, peak, mean in (("rss", "memory_rss_peak", "memory_rss_mean"),
                               ("ws", "memory_working_set_peak", "memory_working_set_mean")):
        ticks = cont.replica_ticks(column, a, b)
        out.add(peak, float(ticks.max()) if len(ticks) else None, "bytes",
                container="replicas", **kw)
        out.add(mean, float(ticks.mean()) if len(ticks) else None, "bytes",
                container="replicas", **kw)
    if efficiency_ok is not None:
        eff = efficiency_ok / rep_secs if rep_secs else None
        out.add("requests_per_core_second", eff, "1/core·s", container="replicas", **kw)


def served(req: Requests, f, lo, hi):
    """The answers served by requests lo:hi (docs/analysis.md, "Expected 4xx"): every 2xx,
    and per route its 4xx up to its declared share of its requests (none undeclared)."""
    ok = int(req.s2xx[lo:hi].sum())
    routes = req.route[lo:hi]
    s4xx = req.s4xx[lo:hi]
    extra = 0.0
    for name, share in f["expected_4xx"].items():
        mine = routes == name
        extra += min(float(s4xx[mine].sum()), share * float(mine.sum()))
    return ok + extra


def window_bounds(a, b, W):
    """The full windows [a + jW, a + (j+1)W) of [a, b), or [a, b) when shorter than W."""
    if b - a < W:
        return np.array([a], dtype=np.int64), np.array([b], dtype=np.int64)
    k = (b - a) // W
    starts = a + np.arange(k, dtype=np.int64) * W
    return starts, starts + W


def window_verdicts(j: Judged, a, b, W, p99_ms, failed_bound, judge_p99, judge_failed):
    """Whether each window of window_bounds(a, b, W) meets the rule, on the judged requests
    placed in it; one without a request sent does not."""
    ws, we = window_bounds(a, b, W)
    lo, hi = j.spans(ws, we)
    met = []
    for l, h in zip(lo, hi):
        sent, _, share, p99 = j.summary(l, h)
        ok = sent > 0
        if ok and judge_failed:
            ok = share <= failed_bound
        if ok and judge_p99:
            ok = p99 <= p99_ms
        met.append(ok)
    return met


def windows_met(j: Judged, a, b, W, p99_ms, failed_bound, judge_p99, judge_failed):
    return all(window_verdicts(j, a, b, W, p99_ms, failed_bound, judge_p99, judge_failed))


def knees(met, confirm):
    """(first, sustained, transients) of a ramp's step verdicts (True: met).

    first: the first breaching step's index; sustained: the first breaching step whose
    `confirm` next steps that were run breached too (a step the ramp never reached neither
    confirms nor refutes it); None when there is no such step. transients: the breaching
    steps before the sustained breach (before the end when there is none)."""
    n = len(met)
    first = next((i for i, v in enumerate(met) if not v), None)
    sustained = next((i for i in range(n)
                      if not any(met[i:min(i + confirm, n - 1) + 1])), None)
    transients = sum(1 for v in met[: n if sustained is None else sustained] if not v)
    return first, sustained, transients


def phase_request_rows(out: RunRows, req: Requests, sel, L, definition="", offered=None,
                       dropped=0):
    """The measured phase's request rows over the requests `sel` of req (a slice or an
    index array) and the phase's length L (s): requests, achieved rate, latencies and the
    shares; with `offered` (the whole phase), offered_rate too. `dropped`: the starts
    dropped in the span, which failed_share counts as failed requests among all."""
    dur = req.dur[sel]
    n = len(dur)
    kw = dict(definition=definition)
    out.add("requests", n, "count", **kw)
    if offered is not None:
        out.add("offered_rate", offered / L if L > 0 else None, "1/s", **kw)
    out.add("achieved_rate", n / L if L > 0 else None, "1/s", **kw)
    latency_rows(out, dur, definition)
    failed_n = int(req.failed[sel].sum()) + dropped
    all_n = n + dropped
    out.add("failed_share", failed_n / all_n if all_n else 0, "ratio", **kw)
    for name, mask in (("no_response_share", req.no_response), ("status_5xx_share", req.s5xx),
                       ("status_4xx_share", req.s4xx), ("status_2xx_share", req.s2xx)):
        out.add(name, int(mask[sel].sum()) / n if n else 0, "ratio", **kw)


def duration_rows(out: RunRows, sent: Requests, f):
    """duration_p50, duration_p99 and duration_max: requests.csv's duration_ms of the
    requests that started in the measured phase, whatever the run's rule."""
    lo, hi = sent.span(f["start"], f["end"])
    dur = sent.dur[lo:hi]
    for name, v in zip(("duration_p50", "duration_p99"), percentiles(dur, [P50, P99])):
        out.add(name, v, "ms")
    out.add("duration_max", float(dur.max()) if len(dur) else None, "ms")


def latency_rows(out: RunRows, dur: np.ndarray, definition):
    """latency_p50 … latency_p99_9 (nearest rank) and latency_max of the durations `dur`,
    empty (note `none`) without any."""
    ps = percentiles(dur, [P50, P90, P95, P99, P999])
    for name, v in zip(("latency_p50", "latency_p90", "latency_p95", "latency_p99",
                        "latency_p99_9"), ps):
        out.add(name, v, "ms", definition=definition)
    out.add("latency_max", float(dur.max()) if len(dur) else None, "ms", definition=definition)


# The status classes of the `status:` qualifier (docs/analysis.md, "qualified rows"):
# name, lowest and highest status (None: no bound).
STATUS_CLASSES = (("2xx", 200, 299), ("4xx", 400, 499), ("5xx", 500, None))


def qualifier(at="", route="", status=""):
    """A qualified row's definition: `at:`, `route:`, `status:` in that order, joined by a
    space, the defaults (empty) left out."""
    parts = (f"at:{at}" if at else "", f"route:{route}" if route else "",
             f"status:{status}" if status else "")
    return " ".join(p for p in parts if p)


def request_spans(f, instants, down=None):
    """The spans of the qualified rows, (at, start, end): the measured phase (at ""), and for
    a run whose fault was applied (`instants` (applied, cleared or None), else None)
    `fault`, [applied, cleared) or [applied, measured end); with the balancer's first DOWN
    of the fault's target (`down`, fault_down's) `until-down`, [applied, down); and with a
    clear `observe`, [cleared, observe end); each cut to the measured phase."""
    ms, me = f["start"], f["end"]
    spans = [("", ms, me)]
    if instants is None:
        return spans

    def cut(a, b):
        a = min(max(a, ms), me)
        return a, max(a, min(b, me))
    applied, cleared = instants
    spans.append(("fault",) + cut(applied, me if cleared is None else cleared))
    if down is not None:
        # cut at the clear: past it the replica is back, whatever the balancer thought
        spans.append(("until-down",) + cut(applied, down if cleared is None else min(down, cleared)))
    if cleared is not None:
        spans.append(("observe",) + cut(cleared, cleared + f["fault_window"]["observe"]))
    return spans


def fault_health(run_dir: Path, f):
    """health.csv's (wall_ns, state, ours): `ours` marks the rows the fault reads, its
    target server's (the part after `backend/`), or every server's for a fault aimed at
    none."""
    health = read_table(run_dir / "health.csv", {"wall_ns": ("int", True), "server": ("str", True),
                                                 "state": ("str", True)})
    hw = health["wall_ns"].to_numpy()
    hstate = health["state"].to_numpy()
    hserver = health["server"].to_numpy().astype(str)
    server = f["fault_window"]["server"]
    if server is not None:
        ours = np.array([s.rsplit("/", 1)[-1] == server for s in hserver], dtype=bool)
    else:
        ours = np.ones(len(hw), dtype=bool)
    return hw, hstate, ours


def observe_end(f, instants):
    """The observe window's end: cleared + observe cut at the measured end; without a
    clear, the measured end (not before `applied`)."""
    applied, cleared = instants
    me = f["end"]
    clear_o = cleared if cleared is not None else max(me, applied)
    return max(clear_o, min(clear_o + f["fault_window"]["observe"], me))


def first_down(hw, hstate, ours, applied, obs_b):
    """The earliest DOWN the fault reads in [applied, obs_b), or None."""
    down = np.sort(hw[ours & (hstate == "DOWN") & (hw >= applied) & (hw < obs_b)])
    return int(down[0]) if len(down) else None


def status_selections(status: np.ndarray, codes):
    """(status qualifier, mask over `status`): the classes 2xx, 4xx, 5xx, then each of
    `codes` (the measured phase's codes other than 0, ascending), with a request or not."""
    for name, low, high in STATUS_CLASSES:
        mask = status >= low
        if high is not None:
            mask &= status <= high
        yield name, mask
    for code in codes:
        yield str(int(code)), status == code


def status_rows(out: RunRows, req: Requests, idx: np.ndarray, mask: np.ndarray, L, definition):
    """The rows of the requests idx[mask] (those with one status of the requests idx):
    requests, achieved_rate over L s, the latencies, and status_share over all of idx."""
    n, total = int(mask.sum()), len(idx)
    out.add("requests", n, "count", definition=definition)
    out.add("achieved_rate", n / L if L > 0 else None, "1/s", definition=definition)
    latency_rows(out, req.dur[idx[mask]], definition)
    out.add("status_share", n / total if total else 0, "ratio", definition=definition)


def dropped_in(judged, a, b):
    """The dropped starts the run's rule placed in [a, b)."""
    lo, hi = judged.span(a, b)
    return int((~judged.sent[lo:hi]).sum())


def qualified_rows(out: RunRows, reqs, f, instants, down=None):
    """The qualified rows (docs/analysis.md, "qualified rows"): each span, route (none, then
    by name each route of the measured phase's requests) and status (the classes, then the
    measured phase's codes), with requests or not, but the measured phase's own rows and
    its `route:` rows, which are written already. `reqs`: requests.csv's, and as judged
    (a span's own failed_share counts its dropped starts; a route's cannot)."""
    req, judged = reqs
    mlo, mhi = req.span(f["start"], f["end"])
    routes = sorted(r for r in pd.unique(req.route[mlo:mhi]) if r != "")
    measured_status = req.status[mlo:mhi]
    codes = np.unique(measured_status[measured_status != 0])
    for at, a, b in request_spans(f, instants, down):
        lo, hi = req.span(a, b)
        L = (b - a) / 1e9
        in_span = np.arange(lo, hi)
        span_routes = req.route[lo:hi]
        for route in [""] + routes:
            idx = in_span if not route else in_span[span_routes == route]
            if at:
                phase_request_rows(out, req, idx, L, definition=qualifier(at, route),
                                   dropped=0 if route else dropped_in(judged, a, b))
            for status, mask in status_selections(req.status[idx], codes):
                status_rows(out, req, idx, mask, L, qualifier(at, route, status))


def read_fault_instants(run_dir: Path, f):
    """(applied, cleared) of a run's fault from its events.csv (docs/analysis.md, "Faults"):
    the first `fault-applied` in time order and the first `fault-cleared` at or after it
    (None without one); None when it was never applied."""
    ev = read_table(run_dir / "events.csv", {"wall_ns": ("int", True), "event": ("str", True)})
    wall = ev["wall_ns"].to_numpy()
    kind = ev["event"].to_numpy()
    order = np.argsort(wall, kind="stable")
    wall, kind = wall[order], kind[order]
    applied_at = wall[kind == "fault-applied"]
    if len(applied_at) == 0:
        return None
    applied = int(applied_at[0])
    cleared_at = wall[(kind == "fault-cleared") & (wall >= applied)]
    return applied, (int(cleared_at[0]) if len(cleared_at) else None)


def compute_run(run_dir: Path):
    """Every row of one run directory, in docs/analysis.md's order: the measured phase, its
    seconds, CPU and memory, the ramp's steps, the fault."""
    run_id, f = read_run_json(run_dir / "run.json")
    sent = read_requests(run_dir / "requests.csv")
    # Every figure reads the requests as the run's rule places them; the verdicts also
    # count its dropped starts; the duration_* rows read requests.csv as it is.
    req = sent.placed(f)
    judged = Judged(sent, f)
    cont = read_containers(run_dir / "containers.csv", f["caps"])
    out = RunRows(run_id, f)
    # the fault's instants, for the qualified rows and the fault's own
    instants = read_fault_instants(run_dir, f) if f["fault_window"] is not None else None
    lo, hi = measured_rows(out, run_dir, f, (req, judged), instants)
    duration_rows(out, sent, f)
    sec_thr, sec_p99 = second_rows(out, req, f["start"], f["end"])
    resource_rows(out, f, req, cont, lo, hi)
    host_rows(out, run_dir / "host.csv", f)
    if f["steps"]:
        ramp_rows(out, f, (req, judged), cont)
    # the fault
    if f["fault_window"] is not None:
        fault_rows(out, run_dir, f, (req, judged), (sec_thr, sec_p99), instants)
        ready_row(out, run_dir, f)
    return out


def measured_rows(out, run_dir, f, reqs, instants):
    """The measured phase's rows (whole, by route, over the fault's spans, by status);
    returns the phase's request span `(lo, hi)`. `reqs`: requests.csv's, and as judged."""
    req, judged = reqs
    ms, me = f["start"], f["end"]
    lo, hi = req.span(ms, me)
    n = hi - lo
    L = (me - ms) / 1e9
    phase_request_rows(out, req, slice(lo, hi), L, offered=f["offered"],
                       dropped=dropped_in(judged, ms, me))
    out.add("dropped_iterations", f["dropped"], "count")
    # Latency from each request's scheduled instant, where the file has it (docs/analysis.md).
    if req.scheduled is not None and n:
        from_schedule = (req.end[lo:hi] - req.scheduled[lo:hi]) / 1e6
        for name, v in zip(("latency_from_schedule_p50", "latency_from_schedule_p99"),
                           percentiles(from_schedule, [P50, P99])):
            out.add(name, v, "ms")
        out.add("latency_from_schedule_max", float(from_schedule.max()), "ms")
    # The run's verdict: its objective windows, and how many breached (not for a ramp).
    if not f["steps"]:
        met = window_verdicts(judged, ms, me, f["W"], f["p99_ms"], f["failed_bound"], True, True)
        out.add("objective_windows", len(met), "count")
        out.add("objective_windows_breached", met.count(False), "count")
    # The same request figures per route (definition `route:<name>`), over the measured
    # phase's requests of that route; a file without routes has none.
    routes = req.route[lo:hi]
    for name in sorted(r for r in pd.unique(routes) if r != ""):
        idx = lo + np.flatnonzero(routes == name)
        phase_request_rows(out, req, idx, L, definition=f"route:{name}")
        out.add("expected_4xx_share", f["expected_4xx"].get(name, 0.0), "ratio",
                definition=f"route:{name}")
    # The same over the fault's spans, and by status (definitions `at:… route:… status:…`).
    down = None
    if f["fault_window"] is not None:
        # read for every fault run, applied or not, as a damaged file is refused either way
        hw, hstate, ours = fault_health(run_dir, f)
        if instants is not None:
            down = first_down(hw, hstate, ours, instants[0], min(observe_end(f, instants), me))
    qualified_rows(out, (req, judged), f, instants, down)
    return lo, hi


def second_rows(out, req, ms, me):
    """The per-second series over the measured phase; returns each second's throughput
    and p99 (the fault's rows read them)."""
    K = max(0, (me - ms) // NS)
    sec_thr = np.zeros(K, dtype=np.int64)
    sec_p50 = np.full(K, np.nan)
    sec_p99 = np.full(K, np.nan)
    sec_failed = np.zeros(K, dtype=np.int64)
    if K:
        slo, shi = req.span(ms, ms + K * NS)
        k = (req.start[slo:shi] - ms) // NS
        d = req.dur[slo:shi]
        sec_thr = np.bincount(k, minlength=K)
        sec_failed = np.bincount(k, weights=req.failed[slo:shi], minlength=K).astype(np.int64)
        order = np.lexsort((d, k))
        ds = d[order]
        first = np.concatenate(([0], np.cumsum(sec_thr)[:-1]))
        has = sec_thr > 0
        for p, arr in ((P50, sec_p50), (P99, sec_p99)):
            r = rank(p, sec_thr[has])
            arr[has] = ds[first[has] + r - 1]
    for k in range(K):
        out.add("second_throughput", int(sec_thr[k]), "1/s", second=k)
        out.add("second_p50", None if np.isnan(sec_p50[k]) else sec_p50[k], "ms", second=k)
        out.add("second_p99", None if np.isnan(sec_p99[k]) else sec_p99[k], "ms", second=k)
        out.add("second_failed", int(sec_failed[k]), "count", second=k)
    return sec_thr, sec_p99


def resource_rows(out, f, req, cont, lo, hi):
    """CPU and memory, efficiency, and the measurement path's CPU over the measured phase."""
    ms, me = f["start"], f["end"]
    cpu_memory_rows(out, cont, ms, me, "measured", None, efficiency_ok=served(req, f, lo, hi))
    for role in PATH_ROLES:
        for name in sorted(c for c, v in f["caps"].items() if v["role"] == role):
            share, _ = cont.cpu(name, ms, me)
            p95 = percentile(share, P95) if len(share) and not np.isnan(share).any() else None
            out.add("path_cpu_p95_pct_of_cap", p95, "%", container=name, definition="measured")


HOST_PARTS = ["interval_s", "busy_s", "iowait_s", "steal_s", "study_s", "feedbench_s", "engine_s"]


def host_rows(out, path: Path, f):
    """The host's CPU used outside the study and stolen by the hypervisor over the measured
    phase, in cores (host.csv; docs/analysis.md, "Host interference"). Nothing when the run
    has no host.csv."""
    if not path.is_file():
        return
    # load1 has no figure here; it is read so that a file the report refuses (a negative
    # load average) is refused here too, and the two never differ on whether a run stands.
    df = read_table(path, {"unix_ns": ("int", True), "status": ("str", True),
                           "logical_cpus": ("int", True), "load1": ("float", False),
                           **{c: ("float", False) for c in HOST_PARTS}})
    for c in HOST_PARTS + ["logical_cpus", "load1"]:
        bad = df[df[c] < 0]
        if len(bad):
            raise InputError(path, int(bad["_line"].iloc[0]),
                             f"{c} {float(bad[c].iloc[0])!r}: a CPU time, count or load of 0 or "
                             "more")
    inside = df[(df.unix_ns >= f["start"]) & (df.unix_ns < f["end"])]
    whole = inside[(inside.status == "ok")].dropna(subset=HOST_PARTS)
    whole = whole[whole.interval_s > 0]
    outside = steal = None
    if len(whole) and inside.logical_cpus.max() > 0:
        span = whole.interval_s.sum()
        used = whole.busy_s - whole.study_s - whole.feedbench_s - whole.engine_s
        outside = float(used.clip(lower=0).sum() / span)
        steal = float(whole.steal_s.sum() / span)
    out.add("host_outside_cores", outside, "cores", definition="measured")
    out.add("host_steal_cores", steal, "cores", definition="measured")


def ramp_rows(out, f, reqs, cont):
    """A step ramp's rows: each step's figures and each definition's verdicts and knees, as
    the run's rule judges them, and CPU and memory at the first breach under
    `objective-windows`. `reqs`: requests.csv's, and as judged."""
    req, judged = reqs
    steps = f["steps"]
    verdicts = {d: [] for d in SATURATION_DEFINITIONS}
    for s in steps:
        a, b, rate = s["start"], s["end"], s["rate"]
        S = (b - a) / 1e9
        sent, dropped, share, p99 = judged.summary(*judged.span(a, b))
        offered = s["offered"] / S if S > 0 else None
        achieved = sent / S if S > 0 else None
        out.add("step_requests", sent, "count", step_rate=rate)
        out.add("step_dropped", dropped, "count", step_rate=rate)
        out.add("step_offered_rate", offered, "1/s", step_rate=rate)
        out.add("step_achieved_rate", achieved, "1/s", step_rate=rate)
        out.add("step_p99", p99, "ms", step_rate=rate)
        out.add("step_failed_share", share, "ratio", step_rate=rate)
        slo, shi = req.span(a, b)
        cpu_memory_rows(out, cont, a, b, "step", rate, efficiency_ok=served(req, f, slo, shi))
        W, p99b, fb = f["W"], f["p99_ms"], f["failed_bound"]
        verdicts["objective-windows"].append(windows_met(judged, a, b, W, p99b, fb, True, True))
        verdicts["every-second"].append(windows_met(judged, a, b, NS, p99b, fb, True, True))
        verdicts["p99-only"].append(windows_met(judged, a, b, W, p99b, fb, True, False))
        verdicts["errors-only"].append(windows_met(judged, a, b, W, p99b, fb, False, True))
        verdicts["throughput-knee"].append(
            achieved is not None and offered is not None and achieved >= 0.98 * offered)
    for d in SATURATION_DEFINITIONS:
        met = verdicts[d]
        for s, v in zip(steps, met):
            out.add("step_met", 1 if v else 0, "count", step_rate=s["rate"], definition=d)
        first, sustained, transients = knees(met, f["confirm"])
        unmet = CENSORED if f["stopped"] else NOT_REACHED

        def below(metric, at):
            """The saturation below the breach at step `at` (None: no breach)."""
            if at is None:
                out.add(metric, steps[-1]["rate"], "1/s", unmet, definition=d)
            elif at == 0:
                out.add(metric, steps[0]["rate"], "1/s", BELOW_FIRST_STEP, definition=d)
            else:
                out.add(metric, steps[at - 1]["rate"], "1/s", definition=d)

        def breach(metric, at):
            if at is None:
                out.add(metric, None, "1/s", unmet, definition=d)
            else:
                out.add(metric, steps[at]["rate"], "1/s", definition=d)

        below("saturation", sustained)
        breach("sustained_breach", sustained)
        below("saturation_before_first_breach", first)
        breach("first_breach", first)
        out.add("transient_steps", transients, "count", definition=d)
    met = verdicts["objective-windows"]
    first = next((i for i, v in enumerate(met) if not v), len(steps) - 1)
    s = steps[first]
    slo, shi = req.span(s["start"], s["end"])
    cpu_memory_rows(out, cont, s["start"], s["end"], "first-breach", s["rate"],
                    efficiency_ok=served(req, f, slo, shi))


FAULT_METRICS = (
    ("detect_balancer_down", "s", ""), ("detect_failed_request", "s", ""),
    ("detect_objective_window", "s", ""), ("time_to_recover", "s", "clear"),
    ("time_to_recover", "s", "restart"), ("fault_failed", "count", ""),
    ("observe_failed", "count", ""), ("fault_worst_p99", "ms", ""),
    ("observe_worst_p99", "ms", ""), ("seconds_below_50pct", "count", ""),
    ("seconds_below_90pct", "count", ""), ("control_throughput", "1/s", ""),
    ("control_p95", "ms", ""), ("control_p99", "ms", ""),
)


def ready_row(out: RunRows, run_dir: Path, f):
    """time_to_ready (docs/analysis.md, "Faults"): for a fault that kills or stops a
    replica, from readiness.csv's first attempt (its smallest start_ns) to the smallest
    end_ns of an attempt answered 200, on the fault proxy's clock alone; `not recorded`
    without readiness.csv."""
    fw = f["fault_window"]
    if fw["injection"] not in RESTARTING_INJECTIONS:
        out.add("time_to_ready", None, "s", NOT_APPLICABLE)
        return
    path = run_dir / "readiness.csv"
    if not path.is_file():
        out.add("time_to_ready", None, "s", NOT_RECORDED)
        return
    probe = read_table(path, {"start_ns": ("int", True), "end_ns": ("int", True),
                              "status": ("int", True)})
    for column, bad, what in (("status", (probe["status"] < 0) | (probe["status"] > 65535),
                               "an HTTP status (0 to 65535)"),
                              ("end_ns", probe["end_ns"] < probe["start_ns"],
                               "an instant not before start_ns")):
        if bad.any():
            line = int(probe["_line"][bad].iloc[0])
            raise InputError(path, line, f"{column} is not {what}")
    value = None
    ok = probe[probe["status"] == 200]
    if len(probe) and len(ok):
        value = (int(ok["end_ns"].min()) - int(probe["start_ns"].min())) / 1e9
    out.add("time_to_ready", value, "s", "" if value is not None else NOT_OBSERVED)


def fault_rows(out: RunRows, run_dir: Path, f, reqs, seconds, instants):
    """The fault's rows; `reqs`: requests.csv's and as judged; `seconds`: the series'
    throughput and p99; `instants` is read_fault_instants's (applied, cleared) or None."""
    req, judged = reqs
    sec_thr, sec_p99 = seconds
    ms, me = f["start"], f["end"]
    fw, rec = f["fault_window"], f["recovery"]
    if instants is None:
        for metric, unit, definition in FAULT_METRICS:
            out.add(metric, None, unit, NOT_OBSERVED, definition=definition)
        return
    applied, cleared = instants
    # Without a `fault-cleared`, the fault lasts to the measured phase's end and the
    # observe window is empty.
    clear_o = cleared if cleared is not None else max(me, applied)
    obs_a = clear_o
    obs_b = observe_end(f, instants)
    # Only a fault that kills or stops a replica has a `restart` origin: a replica marked
    # DOWN while its database link was cut and UP after is no restart (`not applicable`).
    # The health rows this fault reads: its target server's (the part after `backend/`), or
    # every server's for a fault aimed at none. A bystander's UP is no restart.
    hw, hstate, ours = fault_health(run_dir, f)
    restart = None
    if cleared is not None and fw["injection"] in RESTARTING_INJECTIONS:
        up = np.sort(hw[ours & (hstate == "UP") & (hw >= cleared) & (hw < obs_b)])
        restart = int(up[0]) if len(up) else None

    def secs(x):
        return (x - applied) / 1e9

    # detection: the first DOWN it reads
    down = first_down(hw, hstate, ours, applied, min(obs_b, me))
    v = secs(down) if down is not None else None
    out.add("detect_balancer_down", v, "s", "" if v is not None else NOT_OBSERVED)
    fe = req.end[req.failed & (req.end >= applied)]
    first_fail = int(fe.min()) if len(fe) else None
    v = secs(first_fail) if first_fail is not None and first_fail < obs_b else None
    out.add("detect_failed_request", v, "s", "" if v is not None else NOT_OBSERVED)
    W = f["W"]
    step = rec["step"]
    v = None
    if obs_b >= applied:
        # Causal: at each instant e, the judged requests placed in [e - W, e) as a client
        # knew them then: a finished one (end <= e) by its latency and whether it failed, an
        # open one by its age so far, not failed yet; a dropped start failed, no latency.
        e = applied + np.arange((obs_b - applied) // step + 1, dtype=np.int64) * step
        lo, hi = judged.spans(e - W, e)
        for i in range(len(e)):
            l, h, at = lo[i], hi[i], int(e[i])
            sent = judged.sent[l:h]
            if not sent.any():
                v = secs(at)
                break
            done = judged.end[l:h] <= at
            seen = np.where(done, judged.lat[l:h], (at - judged.at[l:h]) / 1e6)
            share = int((judged.failed[l:h] & done).sum()) / (h - l)
            if percentile(seen[sent], P99) > f["p99_ms"] or share > f["failed_bound"]:
                v = secs(at)
                break
    out.add("detect_objective_window", v, "s", "" if v is not None else NOT_OBSERVED)

    # the control
    clo, chi = req.span(ms, applied)
    cn = chi - clo
    clen = (applied - ms) / 1e9
    c_thr = cn / clen if clen > 0 else None
    c_p95, c_p99 = percentiles(req.dur[clo:chi], [P95, P99])
    control_ok = c_thr is not None and c_p95 is not None

    # recovery
    for definition, origin in (("clear", cleared), ("restart", restart)):
        if origin is None:
            if definition == "restart" and fw["injection"] not in RESTARTING_INJECTIONS:
                out.add("time_to_recover", None, "s", NOT_APPLICABLE, definition=definition)
            else:
                out.add("time_to_recover", None, "s", NOT_OBSERVED, definition=definition)
            continue
        if not control_ok:
            out.add("time_to_recover", None, "s", NONE, definition=definition)
            continue
        t = recovery_instant(req, origin, applied, obs_b, rec, c_thr, c_p95, c_p99)
        if t is None:
            out.add("time_to_recover", None, "s", NOT_RECOVERED, definition=definition)
        else:
            out.add("time_to_recover", (t - origin) / 1e9, "s", definition=definition)

    # failures and the worst seconds
    flo, fhi = req.span(applied, clear_o)
    out.add("fault_failed", int(req.failed_in(flo, fhi)), "count")
    olo, ohi = req.span(obs_a, obs_b)
    out.add("observe_failed", int(req.failed_in(olo, ohi)), "count")
    K = len(sec_thr)
    sec_start = ms + np.arange(K, dtype=np.int64) * NS
    for metric, a, b in (("fault_worst_p99", applied, clear_o), ("observe_worst_p99", obs_a, obs_b)):
        sel = (sec_start >= a) & (sec_start < b) & ~np.isnan(sec_p99)
        out.add(metric, float(sec_p99[sel].max()) if sel.any() else None, "ms")
    sel = (sec_start >= applied) & (sec_start < obs_b)
    for metric, frac in (("seconds_below_50pct", 0.5), ("seconds_below_90pct", 0.9)):
        v = int((sec_thr[sel] < frac * c_thr).sum()) if c_thr is not None else None
        out.add(metric, v, "count")
    out.add("control_throughput", c_thr, "1/s")
    out.add("control_p95", c_p95, "ms")
    out.add("control_p99", c_p99, "ms")


def recovery_instant(req: Requests, o, applied, obs_end, rec, c_thr, c_p95, c_p99):
    """The seeds' rule, signed against the origin o: candidates on the grid through o from the
    first at or after `applied`; the search starts at the first window out of control (the
    disruption); the first candidate from there whose hold's windows are all within control
    is the instant. Never out of control: the first candidate."""
    step, window = rec["step"], rec["window"]
    H = rec["hold"] // step
    first = o - (max(o - applied, 0) // step) * step
    if first + window > obs_end:
        return None
    M = (obs_end - window - first) // step + 1  # windows u = first + m·step ending by obs_end
    u = first + np.arange(M, dtype=np.int64) * step
    lo, hi = req.spans(u, u + window)
    cnt = hi - lo
    thr = cnt / (window / 1e9)
    pre = (cnt > 0) & (np.abs(thr - c_thr) <= rec["thr_tol"] * c_thr)
    lim95 = (1 + rec["lat_tol"]) * c_p95
    lim99 = (1 + rec["lat_tol"]) * c_p99
    run, disrupted = 0, False
    for m in range(M):
        ok = bool(pre[m])
        if ok:
            p95, p99 = percentiles(req.dur[lo[m]:hi[m]], [P95, P99])
            ok = p95 <= lim95 and p99 <= lim99
        if not ok:
            run, disrupted = 0, True
            if M - (m + 1) < H + 1:
                return None
            continue
        run += 1
        if disrupted and run == H + 1:
            return int(u[m - H])
    return int(first) if not disrupted and run >= H + 1 else None


# ---------------------------------------------------------------------------------------
# The summary


def splitmix_indices(n: int, resamples: int = BOOTSTRAP_RESAMPLES) -> np.ndarray:
    """The bootstrap's draws for n values: shape (resamples, n). Only a call's mean is
    bootstrapped now (hypotheses.py); the median has an exact interval (median_interval)."""
    i = np.arange(1, resamples * n + 1, dtype=np.uint64)
    z = np.uint64(BOOTSTRAP_SEED) + i * np.uint64(SPLITMIX_GAMMA)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(SPLITMIX_M1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(SPLITMIX_M2)
    z = z ^ (z >> np.uint64(31))
    return (z % np.uint64(n)).astype(np.int64).reshape(resamples, n)


def median_coverage(n: int, k: int) -> Fraction:
    """conf(k) = 1 − 2·P(Bin(n, ½) ≤ k−1), exactly: the chance that [x(k), x(n+1−k)] holds
    the population median. Each value falls below that median with probability ½, whatever
    the (continuous) distribution, so the level is exact and distribution-free."""
    below = sum(math.comb(n, i) for i in range(k))
    return 1 - Fraction(2 * below, 2 ** n)


@functools.lru_cache(maxsize=None)
def median_rank(n: int):
    """(k*, conf(k*)): the largest k in 1 … ⌊(n+1)/2⌋ with conf(k) ≥ 95 %, the narrowest
    interval that keeps the level; k* = 1 (the range, at its own lower level) when even the
    range falls short, as for n ≤ 5."""
    k = 1
    # conf(k) falls as k grows: the first k below the level ends the search
    while k + 1 <= (n + 1) // 2 and median_coverage(n, k + 1) >= MEDIAN_LEVEL:
        k += 1
    return k, median_coverage(n, k)


def median_interval(values):
    """The median's exact interval (x(k*), x(n+1−k*), conf(k*)) over the sorted values, the
    coverage as a float; None for n ≤ 2, too few values for any interval. The values' order
    does not matter."""
    v = sorted(values)
    n = len(v)
    if n < 3:
        return None
    k, conf = median_rank(n)
    return float(v[k - 1]), float(v[n - k]), float(conf)


def median_bound(notes):
    """summary.csv's `bound` of a group whose values carry these notes: "" when every value
    is exact (no note), "at-least" when some are lower bounds (not reached, censored) and
    none upper (below the first step), "at-most" the other way, "both" when both occur."""
    kinds = {"" if not n else ("at-most" if n == BELOW_FIRST_STEP else "at-least")
             for n in notes}
    kinds.discard("")
    return kinds.pop() if len(kinds) == 1 else ("both" if kinds else "")


def summary_rows(groups: dict):
    """groups: key -> {"unit": str, "values": [(run_id, value or None, note)]}. One row per
    group: n, the median and, with n ≥ 3 exact values, its interval and the interval's exact
    coverage; where some values are bounds the median is one too (`bound`), without an
    interval, and with bounds both ways there is no median."""
    for key, g in groups.items():
        vals = [v for _, v, _ in g["values"] if v is not None]
        bound = median_bound(n for _, v, n in g["values"] if v is not None)
        interval = (median_interval(vals) if not bound else None) or (None, None, None)
        mid = median(vals) if bound != "both" else None
        yield list(key) + [g["unit"], str(len(vals)), fmt(mid)] + \
            [fmt(x) for x in interval] + [bound]


def comparison_rows(comparisons):
    """comparisons.csv's rows (COMPARISONS_COLUMNS) of comparison.Family's comparisons, in
    the family's order; every number with `fmt`, an empty field where there is none."""
    for c in comparisons:
        diff = c.difference or (None, None, None)
        ratio = c.ratio or (None, None, None)
        yield [c.metric, c.definition, c.container, c.profile, c.fault, c.a, c.b,
               fmt(c.n_a), fmt(c.n_b), fmt(c.paired), fmt(c.median_a), fmt(c.median_b),
               *map(fmt, diff), *map(fmt, ratio), fmt(c.p), fmt(c.p_min), fmt(c.p_adjusted),
               c.finding, c.higher or "", fmt(c.n), fmt(c.needed), fmt(c.level), c.why or "",
               c.family]


def write_comparisons(path, comparisons):
    with open(path, "w", newline="", encoding="utf-8") as cf:
        w = csv.writer(cf, lineterminator="\n")
        w.writerow(COMPARISONS_COLUMNS)
        for row in comparison_rows(comparisons):
            w.writerow(row)


# ---------------------------------------------------------------------------------------
# The command


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="recompute.py",
        description="Recompute feedbench report's metrics.csv and summary.csv from run "
                    "directories, and with --checks the hypotheses' verdicts.")
    ap.add_argument("--out", required=True, type=Path, help="directory to write the files to")
    ap.add_argument("--checks", type=Path, metavar="FILE",
                    help="checks.json: evaluate its checks and write DIR/verdicts.json")
    ap.add_argument("--metrics", type=Path, metavar="METRICS_CSV",
                    help="evaluate the checks on this metrics.csv's rows instead of on run "
                         "directories (needs --checks; writes only verdicts.json)")
    ap.add_argument("--paired-rounds", action="store_true",
                    help="the plan's order makes rounds (interleaved or shuffled): arms with "
                         "the same repetitions and exact values are compared as pairs "
                         "(comparisons.csv, and the checks' comparisons of two arms)")
    ap.add_argument("runs", nargs="*", type=Path, metavar="RUNDIR")
    args = ap.parse_args(argv)
    if args.metrics is not None and args.runs:
        ap.error("give either --metrics or run directories, not both")
    if args.metrics is not None and args.checks is None:
        ap.error("--metrics needs --checks (it only evaluates checks)")
    if args.metrics is None and not args.runs:
        ap.error("no run directory given (and no --metrics)")

    import hypotheses  # here, so that it finds this module as `recompute` (below)

    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        print(f"recompute.py: {args.out}: cannot create: {e.strerror}", file=sys.stderr)
        return 2
    metrics_path = args.out / "metrics.csv"
    summary_path = args.out / "summary.csv"
    verdicts_path = args.out / "verdicts.json"
    comparisons_path = args.out / "comparisons.csv"
    tmp_metrics = args.out / ".metrics.csv.tmp"
    tmp_summary = args.out / ".summary.csv.tmp"
    tmp_verdicts = args.out / ".verdicts.json.tmp"
    tmp_comparisons = args.out / ".comparisons.csv.tmp"
    temps = (tmp_metrics, tmp_summary, tmp_verdicts, tmp_comparisons)
    groups = {}
    family = comparison.Family()
    arms = {}  # run id -> (arm, profile, fault), of the runs computed
    try:
        checks = hypotheses.read_checks(args.checks) if args.checks is not None else None
        # only the rows the checks read are kept (none without checks)
        wanted = hypotheses.wanted_keys(checks) if checks is not None else set()
        if args.metrics is not None:
            index = hypotheses.read_metrics(args.metrics, wanted)
        else:
            index = hypotheses.RowIndex(wanted)
            compute_runs(args.runs, tmp_metrics, tmp_summary, groups, index, family, arms)
            # the pairs the checks compare are the hypotheses' family (none without checks)
            registered = (hypotheses.registered_pairs(checks, arms) if checks is not None
                          else frozenset())
            write_comparisons(tmp_comparisons,
                              family.comparisons(args.paired_rounds, registered))
        if checks is not None:
            text = hypotheses.verdicts_text(
                hypotheses.verdicts(checks, index, args.paired_rounds))
            with open(tmp_verdicts, "w", encoding="utf-8") as vf:
                vf.write(text)
        if args.metrics is None:
            os.replace(tmp_metrics, metrics_path)
            os.replace(tmp_summary, summary_path)
            os.replace(tmp_comparisons, comparisons_path)
        if checks is not None:
            os.replace(tmp_verdicts, verdicts_path)
    except InputError as e:
        print(f"recompute.py: error: {e}", file=sys.stderr)
        for p in temps:
            p.unlink(missing_ok=True)
        return 2
    except OSError as e:
        print(f"recompute.py: error: {e.filename or ''}: {e.strerror}", file=sys.stderr)
        for p in temps:
            p.unlink(missing_ok=True)
        return 2
    return 0


def compute_runs(runs, tmp_metrics, tmp_summary, groups, index, family=None, arms=None):
    """metrics.csv and summary.csv to their temporary files; the rows the checks read
    (as written) into index, the headline figures' rows (as written) into family
    (comparison.Family), and each run's arm (`contender` or `contender.variant`), profile
    and fault into arms (run id -> (arm, profile, fault)), as its metrics.csv rows name
    them."""
    with open(tmp_metrics, "w", newline="", encoding="utf-8") as mf:
        w = csv.writer(mf, lineterminator="\n")
        w.writerow(METRICS_COLUMNS)
        seen = set()
        for run_dir in runs:
            if not run_dir.is_dir():
                raise InputError(run_dir, None, "not a run directory")
            out = compute_run(run_dir)
            if out.run_id in seen:
                raise InputError(run_dir / "run.json", None,
                                 f"run {out.run_id} is given twice")
            seen.add(out.run_id)
            f = out.frame
            if arms is not None:
                arm = f"{f['contender']}.{f['variant']}" if f["variant"] else f["contender"]
                arms[out.run_id] = (arm, f["profile"], f["fault"])
            head = [out.run_id, f["contender"], f["variant"], f["profile"], f["fault"],
                    f["repetition"]]
            for step_rate, second, container, definition, metric, value, unit, note in out.rows:
                sr = fmt(step_rate)
                v = fmt(value)
                w.writerow(head + [sr, "" if second is None else str(second), container,
                                   definition, metric, v, unit, note])
                if second is None:
                    key = (f["contender"], f["variant"], f["profile"], f["fault"], sr,
                           container, definition, metric)
                    g = groups.setdefault(key, {"unit": unit, "values": []})
                    g["values"].append((out.run_id, value, note))
                    # the checks read the rows as written, as from metrics.csv
                    index.add(out.run_id, metric, definition, container,
                              float(sr) if sr else None, float(v) if v else None, unit, note)
                    if family is not None and not sr and metric in comparison.HEADLINE_METRICS:
                        family.add(out.run_id, f["contender"], f["variant"], f["profile"],
                                   f["fault"], f["repetition"], sr, "", container,
                                   definition, metric, v, note)
            del out
    with open(tmp_summary, "w", newline="", encoding="utf-8") as sf:
        w = csv.writer(sf, lineterminator="\n")
        w.writerow(SUMMARY_COLUMNS)
        for row in summary_rows(groups):
            w.writerow(row)


if __name__ == "__main__":
    # hypotheses.py imports this module as `recompute`: let it be this one, not a second
    # copy with its own InputError.
    sys.modules.setdefault("recompute", sys.modules[__name__])
    sys.exit(main())
