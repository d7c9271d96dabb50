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

/// `k · b`, `b · k`, `b`, `b + c`, `c + b` or `b − c`, with `b` a call.
fn scaled_call(e: &Expr) -> Option<(Span, Form, f64)> {
    let call = |e: &Expr| match e {
        Expr::Call(c) => Some(c.span),
        _ => None,
    };
    if let Some(b) = call(e) {
        return Some((b, Form::Ratio, 1.0));
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

/// The atom's comparison, when both calls are medians of exact values and (for a ratio)
/// every value is above 0; `None` keeps interval arithmetic.
pub fn read(src: &str, atom: &Atom, calls: &[CallValue], paired_rounds: bool) -> Option<Compared> {
    let find = |s: Span| calls.iter().find(|c| c.start == s.start && c.end == s.end);
    let (a, b) = (find(atom.a)?, find(atom.b)?);
    if a.stat != "median" || b.stat != "median" {
        return None;
    }
    let (xa, xb) = (a.exact.as_deref()?, b.exact.as_deref()?);
    let reps = |x: &[(u32, f64)]| x.iter().map(|v| v.0).collect::<Vec<_>>();
    let paired = paired_rounds && reps(xa) == reps(xb);
    let values = |x: &[(u32, f64)]| x.iter().map(|v| v.1).collect::<Vec<_>>();
    let (va, vb) = (values(xa), values(xb));
    let interval = match atom.form {
        Form::Ratio => {
            if !va.iter().chain(&vb).all(|v| *v > 0.0) {
                return None;
            }
            let ln = |v: &[f64]| v.iter().map(|x| x.ln()).collect::<Vec<_>>();
            let i = if paired {
                let r: Vec<f64> = va.iter().zip(&vb).map(|(x, y)| (x / y).ln()).collect();
                paired_shift_interval(&r, LEVEL)?
            } else {
                shift_interval(&ln(&va), &ln(&vb), LEVEL)?
            };
            ShiftInterval {
                lo: i.lo.exp(),
                hi: i.hi.exp(),
                confidence: i.confidence,
            }
        }
        Form::Difference if paired => {
            let d: Vec<f64> = va.iter().zip(&vb).map(|(x, y)| x - y).collect();
            paired_shift_interval(&d, LEVEL)?
        }
        Form::Difference => shift_interval(&va, &vb, LEVEL)?,
    };
    let verdict = compare(
        atom.op,
        Interval {
            lo: interval.lo,
            hi: interval.hi,
        },
        Interval::point(atom.bound),
    );
    Some(Compared {
        start: atom.span.start,
        end: atom.span.end,
        text: src.get(atom.span.start..atom.span.end)?.to_string(),
        form: atom.form,
        bound: atom.bound,
        paired,
        interval,
        verdict,
    })
}

/// The pairs the checks compare in one of the forms (every statement of every check,
/// current and registered): the hypotheses' family of comparisons.
pub fn registered_pairs(checks: &[Resolved]) -> BTreeSet<Pair> {
    let mut out = BTreeSet::new();
    for r in checks.iter().filter(|r| r.unresolved.is_none()) {
        let Ok(expr) = parse::parse(&r.check) else {
            continue;
        };
        let mut found = Vec::new();
        atoms(&expr, &mut found);
        let figure = |s: Span| {
            r.calls
                .iter()
                .find(|c| c.start == s.start && c.end == s.end)
                .map(|c| &c.figure)
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
