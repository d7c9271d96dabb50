//! A check that compares two arms' medians, `f(A) OP k * f(B)` or `f(A) OP f(B) ± c`, read
//! across repetitions through the comparison of the two arms (the interval of the ratio or
//! of the difference, `report::comparison::exact`), not through two intervals made apart
//! (docs/analysis.md, "Checks that compare two arms"). Any other form keeps interval
//! arithmetic.

use std::collections::BTreeSet;

use serde::Serialize;

use super::interval::{compare, Interval};
use super::{CallValue, Resolved};
use crate::plan::check::functions::literal;
use crate::plan::check::parse::{self, ArithOp, CmpOp, Expr};
use crate::plan::check::Span;
use crate::report::comparison::exact::{paired_shift_interval, shift_interval, ShiftInterval};
use crate::report::comparison::{Pair, LEVEL};

/// What the comparison's interval is of.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Form {
    /// `a OP k · b`: the ratio `a / b`, against `k`.
    Ratio,
    /// `a OP b + c`: the difference `a − b`, against `c` (base units).
    Difference,
}

/// A comparison `a OP bound` of two median calls, recognised in a check.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Atom {
    /// The comparison's span in the check.
    pub span: Span,
    pub op: CmpOp,
    pub a: Span,
    pub b: Span,
    pub form: Form,
    /// `k` (ratio) or `c` (difference, in base units).
    pub bound: f64,
}

/// `op` with its sides swapped: `x OP y` is `y flip(OP) x`.
fn flip(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::Le => CmpOp::Ge,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::Ge => CmpOp::Le,
        other => other,
    }
}

/// A plain number's value in base units, and whether it had no unit.
fn number(e: &Expr) -> Option<(f64, bool)> {
    match e {
        Expr::Number(n, unit, _) => Some((n * literal(*unit).1, unit.is_none())),
        _ => None,
    }
}

/// `k · b`, `b · k`, `b` (a difference against 0), `b + c`, `c + b` or `b − c`, with `b`
/// a call.
fn scaled_call(e: &Expr) -> Option<(Span, Form, f64)> {
    let call = |e: &Expr| match e {
        Expr::Call(c) => Some(c.span),
        _ => None,
    };
    if let Some(b) = call(e) {
        return Some((b, Form::Difference, 0.0));
    }
    let Expr::Arith(op, x, y, _) = e else {
        return None;
    };
    let (b, k) = match (call(x), call(y)) {
        (Some(b), None) => (b, number(y)?),
        (None, Some(b)) if *op != ArithOp::Sub => (b, number(x)?),
        _ => return None,
    };
    match op {
        ArithOp::Mul if k.1 => Some((b, Form::Ratio, k.0)),
        ArithOp::Add => Some((b, Form::Difference, k.0)),
        ArithOp::Sub => Some((b, Form::Difference, -k.0)),
        _ => None,
    }
}

/// The comparison `e`, when it has one of the forms, either way round; `Eq` and `Ne` never.
pub fn atom(e: &Expr) -> Option<Atom> {
    let Expr::Compare(op, x, y, span) = e else {
        return None;
    };
    if matches!(op, CmpOp::Eq | CmpOp::Ne) {
        return None;
    }
    let of = |a: &Expr, rest: &Expr, op: CmpOp| {
        let Expr::Call(c) = a else { return None };
        let (b, form, bound) = scaled_call(rest)?;
        Some(Atom {
            span: *span,
            op,
            a: c.span,
            b,
            form,
            bound,
        })
    };
    of(x, y, *op).or_else(|| of(y, x, flip(*op)))
}

/// Every comparison of the forms in `e`, in order.
pub fn atoms(e: &Expr, out: &mut Vec<Atom>) {
    if let Some(a) = atom(e) {
        out.push(a);
        return;
    }
    match e {
        Expr::And(a, b, _) | Expr::Or(a, b, _) => {
            atoms(a, out);
            atoms(b, out);
        }
        Expr::Not(a, _) => atoms(a, out),
        _ => {}
    }
}

/// An atom read through the comparison of its two arms.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Compared {
    /// Byte offsets of the comparison in the check.
    pub start: usize,
    pub end: usize,
    /// The comparison as written.
    pub text: String,
    pub form: Form,
    pub bound: f64,
    /// Paired by round (the plan's order makes rounds and both calls read the same
    /// repetitions).
    pub paired: bool,
    /// The interval of the ratio or difference, with its exact coverage.
    pub interval: ShiftInterval,
    /// `supported`, `not supported` or `undecided` for this comparison.
    pub verdict: Option<bool>,
}

/// Why an atom of a two-arm form is left to interval arithmetic over its calls' intervals
/// (report.md says it under the check).
pub const NOT_MEDIANS: &str = "its two calls are not both `median`";
pub const NOT_EXACT: &str =
    "a value one of its calls reads is a bound or missing, so the rounds cannot be compared";
pub const NOT_POSITIVE: &str = "a value is not above 0, so the two arms have no ratio";
pub const NO_VALUES: &str = "one of its calls reads no value";

/// The atom's comparison, when both calls are medians of exact values and (for a ratio)
/// every value is above 0; otherwise why it keeps interval arithmetic (one of the reasons
/// above).
pub fn read(
    src: &str,
    atom: &Atom,
    calls: &[CallValue],
    paired_rounds: bool,
) -> Result<Compared, &'static str> {
    let find = |s: Span| {
        calls
            .iter()
            .find(|c| c.start == s.start && c.end == s.end)
            .ok_or(NO_VALUES)
    };
    let (a, b) = (find(atom.a)?, find(atom.b)?);
    if a.stat != "median" || b.stat != "median" {
        return Err(NOT_MEDIANS);
    }
    let (xa, xb) = match (a.exact.as_deref(), b.exact.as_deref()) {
        (Some(xa), Some(xb)) => (xa, xb),
        _ => return Err(NOT_EXACT),
    };
    let reps = |x: &[(u32, f64)]| x.iter().map(|v| v.0).collect::<Vec<_>>();
    let paired = paired_rounds && reps(xa) == reps(xb);
    let values = |x: &[(u32, f64)]| x.iter().map(|v| v.1).collect::<Vec<_>>();
    let (va, vb) = (values(xa), values(xb));
    if atom.form == Form::Ratio && !va.iter().chain(&vb).all(|v| *v > 0.0) {
        return Err(NOT_POSITIVE);
    }
    let mut interval = shift(atom.form, &va, &vb, paired).ok_or(NO_VALUES)?;
    // The logarithm and its inverse cost the last bits (3·b comes back 3.0000000000000004·b):
    // an end that close to the bound is the bound.
    for end in [&mut interval.lo, &mut interval.hi] {
        if (*end - atom.bound).abs() <= 1e-9 * (1.0 + atom.bound.abs()) {
            *end = atom.bound;
        }
    }
    let decided = compare(
        atom.op,
        Interval {
            lo: interval.lo,
            hi: interval.hi,
        },
        Interval::point(atom.bound),
    );
    // The interval is of the shift between the arms (the centre of the round ratios, say),
    // which can fall on the other side of the bound than the medians do: never claimed
    // against the check's own verdict on the medians.
    let (ma, mb) = match (a.value, b.value) {
        (Some(ma), Some(mb)) => (ma.lo, Interval::point(mb.lo)),
        _ => return Err(NO_VALUES),
    };
    let scaled = match atom.form {
        Form::Ratio => Interval::point(atom.bound).times(mb),
        Form::Difference => mb.plus(Interval::point(atom.bound)),
    };
    let point = compare(atom.op, Interval::point(ma), scaled);
    Ok(Compared {
        start: atom.span.start,
        end: atom.span.end,
        text: span_text(src, atom.span),
        form: atom.form,
        bound: atom.bound,
        paired,
        interval,
        verdict: decided.filter(|d| point == Some(*d)),
    })
}

/// The comparison as written (empty should the span not lie in the check).
pub fn span_text(src: &str, span: Span) -> String {
    src.get(span.start..span.end)
        .unwrap_or_default()
        .to_string()
}

/// The interval of the ratio `a / b` (every value above 0: `read` sees to it) or of the difference `a − b`,
/// paired by round or not.
fn shift(form: Form, a: &[f64], b: &[f64], paired: bool) -> Option<ShiftInterval> {
    match form {
        Form::Ratio => {
            let ln = |v: &[f64]| v.iter().map(|x| x.ln()).collect::<Vec<_>>();
            let i = if paired {
                let r: Vec<f64> = a.iter().zip(b).map(|(x, y)| (x / y).ln()).collect();
                paired_shift_interval(&r, LEVEL)?
            } else {
                shift_interval(&ln(a), &ln(b), LEVEL)?
            };
            Some(ShiftInterval {
                lo: i.lo.exp(),
                hi: i.hi.exp(),
                confidence: i.confidence,
            })
        }
        Form::Difference if paired => {
            let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
            paired_shift_interval(&d, LEVEL)
        }
        Form::Difference => shift_interval(a, b, LEVEL),
    }
}

/// The pairs the registered statements of the checks compare in one of the forms, calls
/// over the whole measured phase on one figure: the hypotheses' family of comparisons.
/// A check added or amended after the runs registers nothing, so that no pair can be moved
/// into the smaller family after its p is seen.
pub fn registered_pairs(checks: &[Resolved]) -> BTreeSet<Pair> {
    let mut out = BTreeSet::new();
    for r in checks
        .iter()
        .filter(|r| r.registered && r.unresolved.is_none())
    {
        let Ok(expr) = parse::parse(&r.check) else {
            continue;
        };
        let mut found = Vec::new();
        atoms(&expr, &mut found);
        let figure = |s: Span| {
            r.calls
                .iter()
                .find(|c| c.start == s.start && c.end == s.end)
                .and_then(|c| c.figure.as_ref())
        };
        for atom in found {
            let (Some(a), Some(b)) = (figure(atom.a), figure(atom.b)) else {
                continue;
            };
            let same = (&a.metric, &a.definition, &a.container, &a.profile, &a.fault)
                == (&b.metric, &b.definition, &b.container, &b.profile, &b.fault);
            if same && a.arm != b.arm {
                let (x, y) = if a.arm < b.arm { (a, b) } else { (b, a) };
                out.insert(Pair {
                    metric: x.metric.clone(),
                    definition: x.definition.clone(),
                    container: x.container.clone(),
                    profile: x.profile.clone(),
                    fault: x.fault.clone(),
                    a: x.arm.clone(),
                    b: y.arm.clone(),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
