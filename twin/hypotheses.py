"""The twin's verdicts on the hypotheses' checks (docs/analysis.md, "Hypotheses' verdicts").

Written from docs/analysis.md and docs/plan.md ("Hypotheses' checks") alone: its own lexer
and recursive-descent parser of the check grammar, interval arithmetic, Kleene's logic and
each call's interval (a median's exact order-statistic interval, as summary.csv's; a mean's
percentile bootstrap; none for a min or max), and across the intervals each comparison of
two arms' medians (`f(A) OP k * f(B)`, `f(A) OP f(B) + c`) read through the interval of
their ratio or difference (comparison.py), as comparisons.csv gives a pair. feedbench
gives, in checks.json, each check's text and, per call, the byte span of the call in the
text and the metrics.csv rows it reads (with each run's repetition); the twin writes
verdicts.json (twin/README.md). The pairs of arms the checks compare in those forms are
comparisons.csv's `hypotheses` family (registered_pairs).
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np

import comparison
import recompute as rc
from recompute import InputError

# checks.json's version that the twin reads, and verdicts.json's that it writes.
FORMAT_VERSION = 2
INF = math.inf

STATISTICS = ("median", "mean", "min", "max")
WHICH = ("current", "registered")

# Units glued to a number (docs/plan.md, "Units"), and the factor to the base unit.
# Longest first, so that `/core-s` is not read as `/c...` and `ms` not as `m`.
LITERAL_UNITS = (
    ("/core-s", 1.0), ("/s", 1.0), ("ms", 0.001), ("s", 1.0), ("%", 0.01),
    ("KiB", 1024.0), ("MiB", 1024.0 ** 2), ("GiB", 1024.0 ** 3),
)
# A row's unit (metrics.csv `unit`) to the base unit: `ms` 0.001, `%` 0.01, any other 1.
ROW_UNIT_FACTORS = {"ms": 0.001, "%": 0.01}

COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
KEYWORDS = ("not", "and", "or")


# ---------------------------------------------------------------------------------------
# The check's syntax


class CheckSyntaxError(Exception):
    def __init__(self, pos, message):
        super().__init__(message)
        self.pos = pos
        self.message = message

    def __str__(self):
        return f"at byte {self.pos}: {self.message}"


def _is_letter(c):
    return ("a" <= c <= "z") or ("A" <= c <= "Z")


def _is_digit(c):
    return "0" <= c <= "9"


def _is_segment_char(c):
    return _is_letter(c) or _is_digit(c) or c in "-_"


def _is_status_class(text, i):
    """Whether a status class (`2xx`, `4xx`, `5xx`, …) starts at i: one digit, `xx`, and
    then no letter, digit or `_`."""
    if not (_is_digit(text[i]) and text.startswith("xx", i + 1)):
        return False
    after = i + 3
    return after >= len(text) or not (_is_letter(text[after]) or _is_digit(text[after])
                                      or text[after] == "_")


class Token:
    __slots__ = ("kind", "text", "start", "end", "value", "unit")

    def __init__(self, kind, text, start, end, value=None, unit=""):
        self.kind = kind      # "num", "name", "kw", "op", "end"
        self.text = text
        self.start = start
        self.end = end
        self.value = value    # a number's value in base units
        self.unit = unit      # a number's unit as written (`ms`, `%`), "" for none

    def __repr__(self):
        return f"Token({self.kind}, {self.text!r}, {self.start}, {self.end})"


def tokenize(text: str):
    """The check's tokens, with their byte spans (the text must be ASCII)."""
    try:
        text.encode("ascii")
    except UnicodeEncodeError as e:
        raise CheckSyntaxError(e.start, "a character that is not ASCII") from None
    toks = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n":
            i += 1
            continue
        start = i
        if _is_status_class(text, i):
            # a status class (`5xx`): a name, not a number with a unit
            toks.append(Token("name", text[i:i + 3], i, i + 3))
            i += 3
            continue
        if _is_digit(c):
            while i < n and _is_digit(text[i]):
                i += 1
            if i < n and text[i] == ".":
                if i + 1 < n and _is_digit(text[i + 1]):
                    i += 1
                    while i < n and _is_digit(text[i]):
                        i += 1
                else:
                    raise CheckSyntaxError(i, "a number's `.` must be followed by digits")
            digits = text[start:i]
            factor = 1.0
            suffix = ""
            for unit, f in LITERAL_UNITS:
                if text.startswith(unit, i):
                    after = i + len(unit)
                    # a unit ends where a name could not go on (`5ms` but not `5mss`);
                    # `-` after it is the operator (`2s-1s`)
                    if after < n and (_is_letter(text[after]) or _is_digit(text[after])
                                      or text[after] == "_"):
                        continue
                    factor = f
                    suffix = unit
                    i = after
                    break
            else:
                if i < n and (_is_letter(text[i]) or text[i] == "_"):
                    j = i
                    while j < n and _is_segment_char(text[j]):
                        j += 1
                    raise CheckSyntaxError(i, f"unknown unit `{text[i:j]}`")
            # The literal in base units: the number times its unit's factor, in floating
            # point, as a row's value is (twin/README.md).
            value = float(digits) * factor
            toks.append(Token("num", text[start:i], start, i, value, suffix))
            continue
        if _is_letter(c):
            while True:
                while i < n and _is_segment_char(text[i]):
                    i += 1
                # a dot goes on with a segment (`feed-rs.indexed`); after a dot the
                # segment may start with a digit (`p99.9`)
                if i + 1 < n and text[i] == "." and (_is_letter(text[i + 1]) or _is_digit(text[i + 1])):
                    i += 1
                    continue
                break
            word = text[start:i]
            toks.append(Token("kw" if word in KEYWORDS else "name", word, start, i))
            continue
        two = text[i:i + 2]
        if two in ("<=", ">=", "==", "!="):
            toks.append(Token("op", two, i, i + 2))
            i += 2
            continue
        if c in "<>+-*/(),:":
            toks.append(Token("op", c, i, i + 1))
            i += 1
            continue
        raise CheckSyntaxError(i, f"unexpected character {c!r}")
    toks.append(Token("end", "", n, n))
    return toks


class Call:
    """A metric function call of a check: its name, arguments and byte span [start, end)
    (from its name to its closing parenthesis), and `spans`: that span, then the span of
    each pair of parentheses around the call alone, inner to outer (`((p99(x)))` has three;
    feedbench names a call by the outermost, docs/plan.md's grammar keeps no parentheses)."""

    __slots__ = ("index", "function", "subject", "args", "start", "end", "spans")

    def __init__(self, index, function, subject, args, start, end):
        self.index = index
        self.function = function
        self.subject = subject
        self.args = args  # name -> the value's text
        self.start = start
        self.end = end
        self.spans = [(start, end)]

    def __repr__(self):
        return f"Call({self.function}, {self.subject}, {self.args}, [{self.start}, {self.end}))"


# The tree: ("num", value, unit) | ("call", index) | ("neg", x) | ("arith", op, a, b)
#         | ("cmp", op, a, b, (start, end)) | ("not", x) | ("and", [x...]) | ("or", [x...])
# A number's value is in base units, its unit as written ("" for none). A comparison's span
# is the byte span of its text, from its left operand's first token to its right operand's
# last, or of the parentheses around it when it stands in some (the outermost pair).
CONDITIONS = ("cmp", "not", "and", "or")


class Parser:
    def __init__(self, text):
        self.text = text
        self.toks = tokenize(text)
        self.i = 0
        self.calls = []

    def peek(self):
        return self.toks[self.i]

    def take(self):
        t = self.toks[self.i]
        self.i += 1
        return t

    def at(self, kind, text=None):
        t = self.toks[self.i]
        return t.kind == kind and (text is None or t.text == text)

    def expect(self, kind, text, what):
        t = self.peek()
        if not self.at(kind, text):
            raise CheckSyntaxError(t.start, f"expected {what}, found {_describe(t)}")
        return self.take()

    def parse(self):
        tree = self.or_()
        t = self.peek()
        if t.kind != "end":
            raise CheckSyntaxError(t.start, f"unexpected {_describe(t)}")
        self.condition(tree, 0, "the check")
        return tree

    def condition(self, node, pos, what):
        if node[0] not in CONDITIONS:
            raise CheckSyntaxError(pos, f"{what} is not a condition")

    def quantity(self, node, pos, what):
        if node[0] in CONDITIONS:
            raise CheckSyntaxError(pos, f"{what} is a condition, not a quantity")

    def or_(self):
        pos = self.peek().start
        items = [self.and_()]
        while self.at("kw", "or"):
            self.take()
            p = self.peek().start
            x = self.and_()
            self.condition(x, p, "an operand of `or`")
            items.append(x)
        if len(items) == 1:
            return items[0]
        self.condition(items[0], pos, "an operand of `or`")
        return ("or", items)

    def and_(self):
        pos = self.peek().start
        items = [self.not_()]
        while self.at("kw", "and"):
            self.take()
            p = self.peek().start
            x = self.not_()
            self.condition(x, p, "an operand of `and`")
            items.append(x)
        if len(items) == 1:
            return items[0]
        self.condition(items[0], pos, "an operand of `and`")
        return ("and", items)

    def not_(self):
        if self.at("kw", "not"):
            self.take()
            p = self.peek().start
            x = self.not_()
            self.condition(x, p, "the operand of `not`")
            return ("not", x)
        return self.comparison()

    def comparison(self):
        pos = self.peek().start
        a = self.sum_()
        t = self.peek()
        if t.kind == "op" and t.text in COMPARISONS:
            self.take()
            p = self.peek().start
            b = self.sum_()
            self.quantity(a, pos, "the left of a comparison")
            self.quantity(b, p, "the right of a comparison")
            u = self.peek()
            if u.kind == "op" and u.text in COMPARISONS:
                raise CheckSyntaxError(u.start, "a chained comparison")
            return ("cmp", t.text, a, b, (pos, self.toks[self.i - 1].end))
        return a

    def sum_(self):
        pos = self.peek().start
        a = self.product()
        while self.peek().kind == "op" and self.peek().text in "+-":
            op = self.take().text
            p = self.peek().start
            b = self.product()
            self.quantity(a, pos, f"the left of `{op}`")
            self.quantity(b, p, f"the right of `{op}`")
            a = ("arith", op, a, b)
        return a

    def product(self):
        pos = self.peek().start
        a = self.unary()
        while self.peek().kind == "op" and self.peek().text in "*/":
            op = self.take().text
            p = self.peek().start
            b = self.unary()
            self.quantity(a, pos, f"the left of `{op}`")
            self.quantity(b, p, f"the right of `{op}`")
            a = ("arith", op, a, b)
        return a

    def unary(self):
        if self.at("op", "-"):
            self.take()
            p = self.peek().start
            x = self.unary()
            self.quantity(x, p, "the operand of `-`")
            return ("neg", x)
        return self.primary()

    def primary(self):
        t = self.peek()
        if t.kind == "num":
            self.take()
            return ("num", t.value, t.unit)
        if t.kind == "op" and t.text == "(":
            self.take()
            x = self.or_()
            close = self.expect("op", ")", "`)`")
            if x[0] == "cmp":
                # a comparison in parentheses spans them
                x = x[:4] + ((t.start, close.end),)
            elif x[0] == "call":
                # so may a call: these parentheses are one more span it is known by
                self.calls[x[1]].spans.append((t.start, close.end))
            return x
        if t.kind == "name":
            self.take()
            self.expect("op", "(", f"`(` after the function `{t.text}`")
            return self.call(t)
        raise CheckSyntaxError(t.start, f"expected a number, a call or `(`, found {_describe(t)}")

    def call(self, fn):
        subject = None
        args = {}
        first = True
        if not self.at("op", ")"):
            while True:
                t = self.peek()
                if t.kind == "name" and self.toks[self.i + 1].kind == "op" \
                        and self.toks[self.i + 1].text == ":":
                    self.take()
                    self.take()
                    v = self.value()
                    if t.text in args:
                        raise CheckSyntaxError(t.start, f"the argument `{t.text}` is given twice")
                    args[t.text] = v
                else:
                    v = self.value()
                    if not first:
                        raise CheckSyntaxError(t.start, "an unnamed argument after the first")
                    subject = v
                first = False
                if self.at("op", ","):
                    self.take()
                    continue
                break
        close = self.expect("op", ")", "`,` or `)`")
        call = Call(len(self.calls), fn.text, subject, args, fn.start, close.end)
        self.calls.append(call)
        return ("call", call.index)

    def value(self):
        t = self.peek()
        if t.kind in ("name", "num"):
            self.take()
            return t.text
        raise CheckSyntaxError(t.start, f"expected a name or a quantity, found {_describe(t)}")


def _describe(t):
    if t.kind == "end":
        return "the end of the check"
    return f"`{t.text}`"


def parse_check(text: str):
    """The check's tree and its calls (in text order, each with its byte span)."""
    p = Parser(text)
    tree = p.parse()
    return tree, p.calls


# ---------------------------------------------------------------------------------------
# Intervals and Kleene's logic


def _sum(x, y, lower):
    s = x + y
    if math.isnan(s):  # +inf + -inf: the widest end
        return -INF if lower else INF
    return s


def iv_add(a, b):
    return (_sum(a[0], b[0], True), _sum(a[1], b[1], False))


def iv_neg(a):
    return (-a[1], -a[0])


def iv_sub(a, b):
    return iv_add(a, iv_neg(b))


def _mul(x, y):
    if x == 0 or y == 0:  # a product of 0 and an infinity is 0
        return 0.0
    return x * y


def iv_mul(a, b):
    p = [_mul(x, y) for x in a for y in b]
    return (min(p), max(p))


def _recip(x):
    return 0.0 if math.isinf(x) else 1.0 / x


def iv_div(a, b):
    if b[0] <= 0 <= b[1]:
        return (-INF, INF)
    return iv_mul(a, (_recip(b[1]), _recip(b[0])))


def compare(op, a, b):
    """True, False or None (unknown)."""
    if op == "<":
        return True if a[1] < b[0] else False if a[0] >= b[1] else None
    if op == "<=":
        return True if a[1] <= b[0] else False if a[0] > b[1] else None
    if op == ">":
        return compare("<", b, a)
    if op == ">=":
        return compare("<=", b, a)
    if op == "==":
        if a[0] == a[1] == b[0] == b[1]:
            return True
        if a[1] < b[0] or b[1] < a[0]:
            return False
        return None
    if op == "!=":
        return k_not(compare("==", a, b))
    raise ValueError(op)


def k_not(x):
    return None if x is None else not x


def k_and(xs):
    if any(x is False for x in xs):
        return False
    if all(x is True for x in xs):
        return True
    return None


def k_or(xs):
    if any(x is True for x in xs):
        return True
    if all(x is False for x in xs):
        return False
    return None


ARITH = {"+": iv_add, "-": iv_sub, "*": iv_mul, "/": iv_div}


def evaluate(node, values, decided=None):
    """The node's value: an interval (lo, hi), or True / False / None for a condition.
    values: call index -> interval. decided: a comparison's span -> True / False / None,
    for the comparisons decided otherwise than by interval arithmetic (two arms read
    through their comparison's interval); every other comparison compares its sides."""
    kind = node[0]
    if kind == "num":
        return (node[1], node[1])
    if kind == "call":
        return values[node[1]]
    if kind == "neg":
        return iv_neg(evaluate(node[1], values, decided))
    if kind == "arith":
        return ARITH[node[1]](evaluate(node[2], values, decided),
                              evaluate(node[3], values, decided))
    if kind == "cmp":
        if decided is not None and node[4] in decided:
            return decided[node[4]]
        return compare(node[1], evaluate(node[2], values, decided),
                       evaluate(node[3], values, decided))
    if kind == "not":
        return k_not(evaluate(node[1], values, decided))
    if kind == "and":
        return k_and([evaluate(x, values, decided) for x in node[1]])
    if kind == "or":
        return k_or([evaluate(x, values, decided) for x in node[1]])
    raise ValueError(kind)


# ---------------------------------------------------------------------------------------
# A call's value: the statistic over the repetitions, and its interval


def statistic(stat, values):
    """median (the middle value, or the mean of the two middle ones), mean, min or max of a
    non-empty list, in floating point; the mean sums in the given order."""
    if stat == "median":
        v = sorted(values)
        n = len(v)
        return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
    if stat == "mean":
        s = 0.0
        for x in values:
            s += x
        return s / len(values)
    if stat == "min":
        return min(values)
    if stat == "max":
        return max(values)
    raise ValueError(stat)


def resample_means(drawn: np.ndarray) -> np.ndarray:
    """The mean of each row of drawn (R, n), as statistic("mean", …) computes it for one:
    summed in draw order, one addition at a time."""
    acc = drawn[:, 0].copy()
    for j in range(1, drawn.shape[1]):
        acc += drawn[:, j]
    return acc / drawn.shape[1]


_INDEX_CACHE = {}


def bootstrap_mean(values, p: Fraction) -> float:
    """The percentile bootstrap of the mean: 10,000 resamples of n indices (SplitMix64 from
    the seed, `next() mod n`), the nearest-rank p-th percentile of their means. values in
    the given order."""
    n = len(values)
    idx = _INDEX_CACHE.get(n)
    if idx is None:
        idx = _INDEX_CACHE[n] = rc.splitmix_indices(n)
    drawn = np.asarray(values, dtype=float)[idx]
    means = np.sort(resample_means(drawn))
    return float(means[rc.rank(p, len(means)) - 1])


def call_interval(stat, lows, highs):
    """(interval, confidence) of a call with n ≥ 3 rows, or (None, None).

    median: x(k*) of the sorted lows to x(n+1−k*) of the sorted highs, summary.csv's exact
    interval, with its exact coverage. mean: the percentile bootstrap, the lows' 2.5th to the
    highs' 97.5th percentile; its 95 % is nominal, not an exact coverage, so no confidence.
    min, max: none, a sample's extreme has no interval."""
    if len(lows) < 3 or stat in ("min", "max"):
        return None, None
    if stat == "median":
        lo, _, confidence = rc.median_interval(lows)
        _, hi, _ = rc.median_interval(highs)
        return (lo, hi), confidence
    return (bootstrap_mean(lows, rc.P2_5), bootstrap_mean(highs, rc.P97_5)), None


def first_breach_key(run):
    """The key of the row that an `at_first_breach` spec's step rate is read from."""
    return (run, "first_breach", "objective-windows", "")


class RowIndex:
    """metrics.csv's rows without `second`, by (run, metric, definition, container)."""

    def __init__(self, wanted=None):
        self.wanted = wanted  # a set of keys to keep, or None for every row
        self.rows = {}

    def add(self, run, metric, definition, container, step_rate, value, unit, note):
        key = (run, metric, definition, container)
        if self.wanted is not None and key not in self.wanted:
            return
        self.rows.setdefault(key, []).append((step_rate, value, unit, note))

    def first_breach(self, run):
        """The run's first breach under objective-windows (its row with metric
        `first_breach`, no container, no step rate), or None when there is no such row,
        more than one, or its value is empty (not reached, censored)."""
        rows = [r for r in self.rows.get(first_breach_key(run), []) if r[0] is None]
        if len(rows) != 1 or rows[0][1] is None:
            return None
        return rows[0][1]

    def find(self, spec):
        rows = self.rows.get((spec["run"], spec["metric"], spec["definition"], spec["container"]), [])
        if spec["at_first_breach"]:
            # the row at the step of the run's first breach; none if it never breached
            rate = self.first_breach(spec["run"])
            if rate is None:
                return []
            return [r for r in rows if r[0] is not None and r[0] == rate]
        if spec["step_rate"] is None:
            return [r for r in rows if r[0] is None]
        return [r for r in rows if r[0] is not None and r[0] == spec["step_rate"]]


def base_value(value, unit):
    """A row's value in base units: the value times its unit's factor."""
    return value * ROW_UNIT_FACTORS.get(unit, 1.0)


def row_interval(value, unit, note):
    v = base_value(value, unit)
    if note == rc.BELOW_FIRST_STEP:
        return (0.0, v)
    return (v, INF) if note else (v, v)


class CallValue:
    """What a call gives: its verdicts.json entry (`out`), its value and interval (None when
    it has none), and its repetitions' values `exact`, [(repetition, base value)] in row
    order, when every row is exact (no note), else None."""

    __slots__ = ("out", "value", "interval", "exact")

    def __init__(self, out, value=None, interval=None, exact=None):
        self.out, self.value, self.interval, self.exact = out, value, interval, exact


def call_value(call, index: RowIndex) -> CallValue:
    """The call's entry of verdicts.json, its value and interval, and its exact values."""
    out = {"start": call["start"], "end": call["end"], "evaluable": False, "n": 0,
           "low": None, "high": None, "ci_low": None, "ci_high": None, "confidence": None}
    found = []
    for spec in call["rows"]:
        rows = index.find(spec)
        if len(rows) != 1:
            return CallValue(out)
        found.append(rows[0])
    out["n"] = len(found)
    if call["not_standing"] or not found or any(r[1] is None for r in found):
        return CallValue(out)
    ivs = [row_interval(value, unit, note) for _, value, unit, note in found]
    lows = [lo for lo, _ in ivs]
    highs = [hi for _, hi in ivs]
    stat = call["stat"]
    value = (statistic(stat, lows), statistic(stat, highs))
    out.update(evaluable=True, low=value[0], high=value[1])
    interval, confidence = call_interval(stat, lows, highs)
    if interval is not None:
        out.update(ci_low=interval[0], ci_high=interval[1], confidence=confidence)
    exact = None
    if all(note == "" for _, _, _, note in found):
        exact = [(spec["repetition"], base_value(v, unit))
                 for spec, (_, v, unit, _) in zip(call["rows"], found)]
    return CallValue(out, value, interval, exact)


# ---------------------------------------------------------------------------------------
# Checks that compare two arms (docs/analysis.md, "Checks that compare two arms")

# `x OP y` is `y FLIPPED[OP] x`; `==` and `!=` never compare two arms.
FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
RATIO, DIFFERENCE = "ratio", "difference"


class TwoArms:
    """A comparison of the check read as `f(A) OP bound` on the ratio A / B (form "ratio",
    bound k) or on the difference A − B (form "difference", bound c in base units): the
    comparison's span, OP (after turning it round, if the check has B's side first), and
    the call indices of A and B."""

    __slots__ = ("span", "op", "a", "b", "form", "bound")

    def __init__(self, span, op, a, b, form, bound):
        self.span, self.op, self.a, self.b = span, op, a, b
        self.form, self.bound = form, bound

    def __repr__(self):
        return (f"TwoArms({self.span}, {self.op!r}, {self.a}, {self.b}, {self.form}, "
                f"{self.bound!r})")


def _arm_b(node):
    """(B's call index, form, bound) when node is `k * f(B)` or `f(B) * k` (a ratio; k a
    number without a unit), `f(B)` alone (a difference against 0), or `f(B) + c`,
    `c + f(B)` or `f(B) - c` (a difference, against c or −c; c a number with any unit, in
    base units); else None."""
    if node[0] == "call":
        return node[1], DIFFERENCE, 0.0
    if node[0] != "arith":
        return None
    op, x, y = node[1], node[2], node[3]
    if x[0] == "call" and y[0] == "num":
        call, num = x, y
    elif y[0] == "call" and x[0] == "num" and op != "-":  # `c - f(B)` is not a form
        call, num = y, x
    else:
        return None
    if op == "*" and num[2] == "":
        return call[1], RATIO, num[1]
    if op == "+":
        return call[1], DIFFERENCE, num[1]
    if op == "-":
        return call[1], DIFFERENCE, -num[1]
    return None


def two_arms(node):
    """The comparisons of two arms in node, in the order of the text: each comparison
    (under `and`, `or` and `not`) with `<`, `<=`, `>` or `>=`, a call on one side and on the
    other a form of _arm_b, tried as written and then turned round (`k * f(B) < f(A)` is
    `f(A) > k * f(B)`)."""
    kind = node[0]
    if kind == "cmp":
        op, left, right, span = node[1], node[2], node[3], node[4]
        if op not in FLIPPED:
            return []
        for a, rest, o in ((left, right, op), (right, left, FLIPPED[op])):
            if a[0] != "call":
                continue
            b = _arm_b(rest)
            if b is not None:
                return [TwoArms(span, o, a[1], *b)]
        return []
    if kind in ("and", "or"):
        return [x for item in node[1] for x in two_arms(item)]
    if kind == "not":
        return two_arms(node[1])
    return []


def _by_repetition(exact):
    """{repetition: value} of a call's exact values, or None when a repetition repeats."""
    reps = {r: v for r, v in exact}
    return reps if len(reps) == len(exact) else None


def arms_interval(form, exact_a, exact_b, paired_rounds):
    """(paired, (low, high, confidence)) of A / B (form "ratio") or A − B ("difference"),
    as comparisons.csv gives a pair, or None when there is none to give (a ratio with a
    value not above 0, or a non-finite ratio or difference). exact_a, exact_b:
    [(repetition, base value)].

    Paired, with paired_rounds and the same repetitions in both (each once), matched by
    repetition: the Walsh-average interval of ln(a_r / b_r), exponentiated, or of a_r − b_r.
    Unpaired: the Hodges–Lehmann interval of ln a_i − ln b_j, exponentiated, or of
    a_i − b_j. At DEFAULT_LEVEL (95 %), or the widest interval at its own coverage."""
    va = [v for _, v in exact_a]
    vb = [v for _, v in exact_b]
    if not va or not vb:
        return None
    if form == RATIO and not all(v > 0 for v in va + vb):
        return None
    ra, rb = _by_repetition(exact_a), _by_repetition(exact_b)
    paired = (paired_rounds and ra is not None and rb is not None
              and set(ra) == set(rb))
    level = comparison.DEFAULT_LEVEL
    try:
        if paired:
            reps = sorted(ra)
            if form == RATIO:
                lo, hi, conf = comparison.paired_shift_interval(
                    [math.log(ra[r] / rb[r]) for r in reps], level)
            else:
                lo, hi, conf = comparison.paired_shift_interval(
                    [ra[r] - rb[r] for r in reps], level)
        elif form == RATIO:
            lo, hi, conf = comparison.shift_interval(
                [math.log(v) for v in va], [math.log(v) for v in vb], level)
        else:
            lo, hi, conf = comparison.shift_interval(va, vb, level)
    except ValueError:
        # a difference or ratio beyond the doubles (an infinity): no interval to read
        return None
    if form == RATIO:
        lo, hi = math.exp(lo), math.exp(hi)
    return paired, (lo, hi, conf)


SNAP = 1e-9


def snap(x, bound):
    """x, or the bound exactly when x is within 1e-9 · (1 + |bound|) of it: ln and exp cost
    the last bits (A = 3 · B exactly comes back as 3.0000000000000004)."""
    return bound if abs(x - bound) <= SNAP * (1 + abs(bound)) else x


def point_holds(arms: TwoArms, a: CallValue, b: CallValue):
    """The comparison decided on the two calls' point values (the medians of their exact
    values, base units), as interval arithmetic decides it: a ratio compares mA with
    k · mB, a difference mA with mB + c."""
    ma = statistic("median", [v for _, v in a.exact])
    mb = statistic("median", [v for _, v in b.exact])
    if arms.form == RATIO:
        right = iv_mul((arms.bound, arms.bound), (mb, mb))
    else:
        right = iv_add((mb, mb), (arms.bound, arms.bound))
    return compare(arms.op, (ma, ma), right)


def compared(arms: TwoArms, calls, paired_rounds):
    """The entry of verdicts.json's `compared` for a comparison of two arms, and its
    verdict (True, False or None), or None when the comparison keeps interval arithmetic:
    unless both calls are medians whose every row is exact (and, for a ratio, above 0).
    calls: call index -> (stat, CallValue)."""
    (stat_a, a), (stat_b, b) = calls[arms.a], calls[arms.b]
    if stat_a != "median" or stat_b != "median" or a.exact is None or b.exact is None:
        return None
    got = arms_interval(arms.form, a.exact, b.exact, paired_rounds)
    if got is None:
        return None
    paired, (lo, hi, conf) = got
    # each end within 1e-9 · (1 + |bound|) of the bound is the bound, then the interval
    # against it: `<=` true when hi <= k, false when lo > k, …
    lo, hi = snap(lo, arms.bound), snap(hi, arms.bound)
    holds = compare(arms.op, (lo, hi), (arms.bound, arms.bound))
    # never against the point verdict: the interval is of the shift between the arms (a
    # pseudo-median), which can fall on the other side of the bound than the medians' own
    if holds is not None and point_holds(arms, a, b) is not holds:
        holds = None
    entry = {"start": arms.span[0], "end": arms.span[1], "form": arms.form,
             "bound": arms.bound, "paired": paired, "low": lo, "high": hi,
             "confidence": conf, "verdict": INTERVAL_VERDICT[holds]}
    return entry, holds


def call_figure(call, arms):
    """The figure and arm a call reads, (metric, definition, container, profile, fault,
    arm), as comparisons.csv keys a pair: its rows' metric, definition and container, and
    its runs' arm (`contender` or `contender.variant`), profile and fault (arms: run id ->
    (arm, profile, fault), as metrics.csv's rows of the run name them). None when the call
    reads no row of a known run, or its rows read more than one figure, or it is not of
    the whole run (a row at a step rate, or `at:` the first breach)."""
    if any(spec["step_rate"] is not None or spec["at_first_breach"] for spec in call["rows"]):
        return None
    figures = {(spec["metric"], spec["definition"], spec["container"],
                arms[spec["run"]][1], arms[spec["run"]][2], arms[spec["run"]][0])
               for spec in call["rows"] if spec["run"] in arms}
    return figures.pop() if len(figures) == 1 else None


def registered_pairs(checks, arms):
    """The pairs of arms the checks compare, comparisons.csv's `hypotheses` family
    (docs/analysis.md, "Two families and Holm's correction"): from every resolved check
    registered before the runs (`registered` true), each comparison of two arms (two_arms: the form alone, whatever
    its calls' statistics or values) whose two calls read the same metric, definition,
    container, profile and fault and two different arms. Each pair is (metric, definition,
    container, profile, fault, a, b), a before b by name (byte order), as
    comparison.Family names its comparisons. arms: run id -> (arm, profile, fault)."""
    out = set()
    for check in checks:
        if check["unresolved"] is not None or not check["registered"]:
            continue
        calls = {call["index"]: call for call in check["calls"]}
        for arms_of in two_arms(check["tree"]):
            fa = call_figure(calls[arms_of.a], arms)
            fb = call_figure(calls[arms_of.b], arms)
            if fa is None or fb is None or fa[:5] != fb[:5] or fa[5] == fb[5]:
                continue
            out.add(fa[:5] + tuple(sorted((fa[5], fb[5]))))
    return frozenset(out)


def negative_recovery_scaled(node, values, recovery):
    """Whether a product or quotient scales a recovery(…) below 0 (`recovery` holds the
    indices of the check's recovery calls): 5 × −1.8 s compares nothing a hypothesis means,
    and the check is not evaluable (docs/analysis.md, "Recovery")."""
    def scaled(n):
        kind = n[0]
        if kind == "arith" and n[1] in ("*", "/"):
            return inside(n[2]) or inside(n[3]) or scaled(n[2]) or scaled(n[3])
        if kind in ("arith", "cmp"):
            return scaled(n[2]) or scaled(n[3])
        if kind in ("neg", "not"):
            return scaled(n[1])
        if kind in ("and", "or"):
            return any(scaled(x) for x in n[1])
        return False

    def inside(n):
        kind = n[0]
        if kind == "call":
            return n[1] in recovery and values[n[1]][0] < 0
        if kind == "neg":
            return inside(n[1])
        if kind == "arith":
            return inside(n[2]) or inside(n[3])
        return False

    return scaled(node)


VERDICT = {True: "supported", False: "not supported", None: "not evaluable"}
INTERVAL_VERDICT = {True: "supported", False: "not supported", None: "undecided"}


def verdict(check, index: RowIndex, paired_rounds=False):
    """One entry of verdicts.json for one parsed check of checks.json. paired_rounds: the
    plan's order makes rounds (--paired-rounds), so two arms with the same repetitions
    are compared by round."""
    entry = {"hypothesis": check["hypothesis"], "which": check["which"],
             "verdict": "not evaluable", "interval": None, "calls": [], "compared": []}
    if check["unresolved"] is not None:
        return entry
    values, intervals, given = {}, {}, {}
    for call in check["calls"]:
        cv = call_value(call, index)
        entry["calls"].append(cv.out)
        values[call["index"]] = cv.value
        intervals[call["index"]] = cv.interval
        given[call["index"]] = (call["stat"], cv)
    if any(v is None for v in values.values()):
        return entry
    if negative_recovery_scaled(check["tree"], values, check["recovery_calls"]):
        return entry
    entry["verdict"] = VERDICT[evaluate(check["tree"], values)]
    if all(iv is not None for iv in intervals.values()):
        # across the intervals: a comparison of two arms' medians by its own interval
        decided = {}
        for arms in two_arms(check["tree"]):
            got = compared(arms, given, paired_rounds)
            if got is not None:
                entry["compared"].append(got[0])
                decided[arms.span] = got[1]
        entry["interval"] = INTERVAL_VERDICT[evaluate(check["tree"], intervals, decided)]
    return entry


def verdicts(checks, index: RowIndex, paired_rounds=False):
    return {"format_version": FORMAT_VERSION,
            "verdicts": [verdict(c, index, paired_rounds) for c in checks]}


def _json_number(x):
    if x is None or isinstance(x, (bool, int, str)):
        return x
    if math.isnan(x):
        raise ValueError("NaN in a verdict")
    if math.isinf(x):
        return "+inf" if x > 0 else "-inf"
    return x + 0.0  # -0.0 as 0.0


def verdicts_text(doc) -> str:
    def conv(o):
        if isinstance(o, dict):
            return {k: conv(v) for k, v in o.items()}
        if isinstance(o, list):
            return [conv(v) for v in o]
        if isinstance(o, float):
            return _json_number(o)
        return o
    return json.dumps(conv(doc), indent=2, allow_nan=False) + "\n"


# ---------------------------------------------------------------------------------------
# Reading checks.json


def _field(path, obj, key, where):
    if not isinstance(obj, dict):
        raise InputError(path, None, f"{where} is not an object")
    if key not in obj:
        raise InputError(path, None, f"no field {where}.{key}" if where else f"no field {key}")
    return obj[key]


def _string(path, obj, key, where, nullable=False):
    v = _field(path, obj, key, where)
    if v is None and nullable:
        return None
    if not isinstance(v, str):
        raise InputError(path, None, f"{where}.{key} is not a string: {json.dumps(v)}")
    return v


def _int(path, obj, key, where):
    v = _field(path, obj, key, where)
    if isinstance(v, bool) or not isinstance(v, int):
        raise InputError(path, None, f"{where}.{key} is not an integer: {json.dumps(v)}")
    return v


def _list(path, obj, key, where):
    v = _field(path, obj, key, where)
    if not isinstance(v, list):
        raise InputError(path, None, f"{where}.{key} is not a list: {json.dumps(v)}")
    return v


def read_checks(path: Path):
    """checks.json, validated, each check parsed and its calls matched to their entries."""
    path = Path(path)
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
        raise InputError(path, None, "is not a JSON object")
    fv = _field(path, doc, "format_version", "")
    if fv != FORMAT_VERSION or isinstance(fv, bool):
        raise InputError(path, None,
                         f"format_version is {json.dumps(fv)}, the twin reads {FORMAT_VERSION}")
    checks = []
    for i, c in enumerate(_list(path, doc, "checks", "")):
        checks.append(_read_check(path, c, f"checks[{i}]"))
    return checks


def _read_check(path, c, where):
    out = {
        "hypothesis": _string(path, c, "hypothesis", where),
        "which": _string(path, c, "which", where),
        "check": _string(path, c, "check", where),
        "unresolved": _string(path, c, "unresolved", where, nullable=True),
        "registered": _field(path, c, "registered", where),
    }
    if not isinstance(out["registered"], bool):
        raise InputError(path, None, f"{where}.registered is not true or false: "
                                     f"{json.dumps(out['registered'])}")
    if out["which"] not in WHICH:
        raise InputError(path, None, f"{where}.which is {json.dumps(out['which'])}, "
                                     f"not `current` or `registered`")
    raw_calls = _list(path, c, "calls", where)
    calls = [_read_call(path, k, f"{where}.calls[{j}]") for j, k in enumerate(raw_calls)]
    if out["unresolved"] is not None:
        # A check that no longer resolves is not evaluated, so it is not parsed either.
        if calls:
            raise InputError(path, None, f"{where}: a check that does not resolve has calls")
        out["calls"] = []
        out["recovery_calls"] = set()
        return out
    text = out["check"]
    try:
        tree, parsed = parse_check(text)
    except CheckSyntaxError as e:
        raise InputError(path, None, f"{where}.check: unparsable check {e}: {text!r}") from None
    # Each call of the text has exactly one entry, found by its span: the call's own or
    # that of parentheses around it alone (any pair, feedbench gives the outermost), white
    # space inside the span around it aside.
    byte_len = len(text.encode("utf-8"))
    entry_of = {}
    for j, call in enumerate(calls):
        w = f"{where}.calls[{j}]"
        s, e = call["start"], call["end"]
        if not (0 <= s < e <= byte_len):
            raise InputError(path, None, f"{w}: the span [{s}, {e}) is outside the check "
                                         f"({byte_len} bytes)")
        ws = s + (len(text[s:e]) - len(text[s:e].lstrip()))
        we = e - (len(text[s:e]) - len(text[s:e].rstrip()))
        hit = [p for p in parsed if (ws, we) in p.spans]
        if not hit:
            raise InputError(path, None, f"{w}: the span [{s}, {e}) is not on a call of the "
                                         f"check: {text[s:e]!r}")
        if hit[0].index in entry_of:
            raise InputError(path, None, f"{w}: the call {text[ws:we]!r} has two entries "
                                         f"(calls[{entry_of[hit[0].index]}] and calls[{j}])")
        entry_of[hit[0].index] = j
        call["index"] = hit[0].index
    for p in parsed:
        if p.index not in entry_of:
            # named by the span feedbench would give it (its outermost parentheses, if any)
            ps, pe = p.spans[-1]
            raise InputError(path, None, f"{where}: the call {text[p.start:p.end]!r} at "
                                         f"[{ps}, {pe}) has no entry in calls")
    out["tree"] = tree
    out["calls"] = calls
    out["recovery_calls"] = {p.index for p in parsed if p.function == "recovery"}
    return out


def _read_call(path, k, where):
    call = {"start": _int(path, k, "start", where), "end": _int(path, k, "end", where),
            "stat": _string(path, k, "stat", where)}
    if call["stat"] not in STATISTICS:
        raise InputError(path, None, f"{where}.stat is {json.dumps(call['stat'])}, not one of "
                                     + ", ".join(STATISTICS))
    rows = []
    for r, row in enumerate(_list(path, k, "rows", where)):
        w = f"{where}.rows[{r}]"
        spec = {key: _string(path, row, key, w)
                for key in ("run", "metric", "definition", "container")}
        sr = _field(path, row, "step_rate", w)
        if sr is not None and (isinstance(sr, bool) or not isinstance(sr, (int, float))):
            raise InputError(path, None, f"{w}.step_rate is not a number or null: {json.dumps(sr)}")
        spec["step_rate"] = None if sr is None else float(sr)
        at_fb = _field(path, row, "at_first_breach", w)
        if not isinstance(at_fb, bool):
            raise InputError(path, None,
                             f"{w}.at_first_breach is not true or false: {json.dumps(at_fb)}")
        spec["at_first_breach"] = at_fb
        rep = _int(path, row, "repetition", w)
        if rep < 0:
            raise InputError(path, None, f"{w}.repetition is negative: {rep}")
        spec["repetition"] = rep
        rows.append(spec)
    call["rows"] = rows
    ns = _list(path, k, "not_standing", where)
    for s, item in enumerate(ns):
        if not isinstance(item, str):
            raise InputError(path, None, f"{where}.not_standing[{s}] is not a string: {json.dumps(item)}")
    call["not_standing"] = ns
    return call


def wanted_keys(checks):
    """The keys of the rows the checks read: each spec's, and for a spec at the first
    breach, its run's first_breach row as well."""
    keys = set()
    for c in checks:
        for call in c["calls"]:
            for spec in call["rows"]:
                keys.add((spec["run"], spec["metric"], spec["definition"], spec["container"]))
                if spec["at_first_breach"]:
                    keys.add(first_breach_key(spec["run"]))
    return keys


# ---------------------------------------------------------------------------------------
# Reading metrics.csv (the --metrics mode)


def read_metrics(path: Path, wanted=None) -> RowIndex:
    df = rc.read_table(Path(path), {
        "run": ("str", True), "metric": ("str", True), "definition": ("str", False),
        "container": ("str", False), "step_rate": ("float", False), "second": ("str", False),
        "value": ("float", False), "unit": ("str", False), "note": ("str", False),
    })
    index = RowIndex(wanted)
    for run, metric, definition, container, sr, second, value, unit, note in zip(
            df["run"], df["metric"], df["definition"], df["container"], df["step_rate"],
            df["second"], df["value"], df["unit"], df["note"]):
        if second != "":
            continue
        index.add(run, metric, definition, container,
                  None if np.isnan(sr) else float(sr),
                  None if np.isnan(value) else float(value), unit, note)
    return index
