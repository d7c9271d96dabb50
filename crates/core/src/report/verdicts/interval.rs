//! A check evaluated over intervals (docs/analysis.md, "Hypotheses' verdicts"): each
//! quantity is `[lo, hi]` in its dimension's base unit, a comparison is true, false or
//! unknown, and `and`, `or`, `not` are Kleene's. A point is an interval whose ends agree, so
//! one evaluator gives both the verdict and the verdict across the bootstrap interval.

use crate::plan::check::functions::literal;
use crate::plan::check::parse::{ArithOp, CmpOp, Expr};
use crate::plan::check::Span;

/// A closed interval; the ends may be infinite.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
}

/// JSON has no infinity: an infinite end is written `"+inf"` or `"-inf"`.
pub fn end_json(v: f64) -> serde_json::Value {
    if v == f64::INFINITY {
        "+inf".into()
    } else if v == f64::NEG_INFINITY {
        "-inf".into()
    } else {
        v.into()
    }
}

impl serde::Serialize for Interval {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Interval", 2)?;
        st.serialize_field("lo", &end_json(self.lo))?;
        st.serialize_field("hi", &end_json(self.hi))?;
        st.end()
    }
}

impl Interval {
    pub fn point(v: f64) -> Interval {
        Interval { lo: v, hi: v }
    }

    pub const WHOLE: Interval = Interval {
        lo: f64::NEG_INFINITY,
        hi: f64::INFINITY,
    };

    pub fn plus(self, b: Interval) -> Interval {
        Interval {
            lo: self.lo + b.lo,
            hi: self.hi + b.hi,
        }
        .sane()
    }

    fn neg(self) -> Interval {
        Interval {
            lo: -self.hi,
            hi: -self.lo,
        }
    }

    pub fn times(self, b: Interval) -> Interval {
        // A product of 0 and an infinity is 0: a factor known to be 0 makes the product 0.
        let p = |x: f64, y: f64| if x == 0.0 || y == 0.0 { 0.0 } else { x * y };
        let c = [
            p(self.lo, b.lo),
            p(self.lo, b.hi),
            p(self.hi, b.lo),
            p(self.hi, b.hi),
        ];
        Interval {
            lo: c.iter().copied().fold(f64::INFINITY, f64::min),
            hi: c.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }

    fn div(self, b: Interval) -> Interval {
        if b.lo <= 0.0 && 0.0 <= b.hi {
            return Interval::WHOLE;
        }
        self.times(Interval {
            lo: 1.0 / b.hi,
            hi: 1.0 / b.lo,
        })
    }

    /// `∞ - ∞` has no value: the sum could be anything.
    fn sane(self) -> Interval {
        if self.lo.is_nan() || self.hi.is_nan() {
            Interval::WHOLE
        } else {
            self
        }
    }
}

pub fn compare(op: CmpOp, a: Interval, b: Interval) -> Option<bool> {
    let less = |a: Interval, b: Interval| -> Option<bool> {
        if a.hi < b.lo {
            Some(true)
        } else if a.lo >= b.hi {
            Some(false)
        } else {
            None
        }
    };
    let at_most = |a: Interval, b: Interval| -> Option<bool> {
        if a.hi <= b.lo {
            Some(true)
        } else if a.lo > b.hi {
            Some(false)
        } else {
            None
        }
    };
    let equal = || -> Option<bool> {
        if a.lo == a.hi && b.lo == b.hi && a.lo == b.lo {
            Some(true)
        } else if a.hi < b.lo || b.hi < a.lo {
            Some(false)
        } else {
            None
        }
    };
    match op {
        CmpOp::Lt => less(a, b),
        CmpOp::Le => at_most(a, b),
        CmpOp::Gt => less(b, a),
        CmpOp::Ge => at_most(b, a),
        CmpOp::Eq => equal(),
        CmpOp::Ne => equal().map(|e| !e),
    }
}

/// The value of a quantity, or of a condition (`None`: unknown).
enum Value {
    Quantity(Interval),
    Condition(Option<bool>),
}

/// Evaluates a checked expression; `call` gives each call's interval by its span. The
/// plan's checker has already refused a quantity where a condition belongs and the reverse.
pub fn evaluate(expr: &Expr, call: &dyn Fn(Span) -> Interval) -> Option<bool> {
    evaluate_atoms(expr, call, &|_| None)
}

/// As [`evaluate`], with `atom` deciding a comparison itself where it gives `Some`
/// (a comparison of two arms read through their comparison's interval).
pub fn evaluate_atoms(expr: &Expr, call: &dyn Fn(Span) -> Interval, atom: Atoms) -> Option<bool> {
    let at = At { call, atom };
    match at.value(expr) {
        Value::Condition(c) => c,
        Value::Quantity(_) => None,
    }
}

/// Decides a comparison by its span, or leaves it to interval arithmetic (`None`).
pub type Atoms<'a> = &'a dyn Fn(Span) -> Option<Option<bool>>;

/// How calls and comparisons are valued.
struct At<'a> {
    call: &'a dyn Fn(Span) -> Interval,
    atom: Atoms<'a>,
}

impl At<'_> {
    fn quantity(&self, e: &Expr) -> Interval {
        match self.value(e) {
            Value::Quantity(q) => q,
            Value::Condition(_) => Interval::WHOLE,
        }
    }

    fn condition(&self, e: &Expr) -> Option<bool> {
        match self.value(e) {
            Value::Condition(c) => c,
            Value::Quantity(_) => None,
        }
    }

    fn value(&self, e: &Expr) -> Value {
        match e {
            Expr::Number(n, unit, _) => Value::Quantity(Interval::point(n * literal(*unit).1)),
            Expr::Call(c) => Value::Quantity((self.call)(c.span)),
            Expr::Neg(a, _) => Value::Quantity(self.quantity(a).neg()),
            Expr::Arith(op, a, b, _) => {
                let (a, b) = (self.quantity(a), self.quantity(b));
                Value::Quantity(match op {
                    ArithOp::Add => a.plus(b),
                    ArithOp::Sub => a.plus(b.neg()),
                    ArithOp::Mul => a.times(b),
                    ArithOp::Div => a.div(b),
                })
            }
            Expr::Compare(op, a, b, span) => Value::Condition(
                (self.atom)(*span)
                    .unwrap_or_else(|| compare(*op, self.quantity(a), self.quantity(b))),
            ),
            Expr::Not(a, _) => Value::Condition(self.condition(a).map(|c| !c)),
            Expr::And(a, b, _) => Value::Condition(match (self.condition(a), self.condition(b)) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            }),
            Expr::Or(a, b, _) => Value::Condition(match (self.condition(a), self.condition(b)) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::check::parse;

    const INF: f64 = f64::INFINITY;

    /// Evaluates `src` with the calls given in order of appearance.
    fn eval(src: &str, calls: &[(f64, f64)]) -> Option<bool> {
        let expr = parse(src).unwrap();
        let spans = expr.call_spans();
        evaluate(&expr, &|s| {
            let i = spans.iter().position(|x| *x == s).unwrap();
            Interval {
                lo: calls[i].0,
                hi: calls[i].1,
            }
        })
    }

    #[test]
    fn points_compare_exactly_and_literals_are_in_base_units() {
        assert_eq!(eval("p99(a) < 500ms", &[(0.499, 0.499)]), Some(true));
        assert_eq!(eval("p99(a) < 500ms", &[(0.5, 0.5)]), Some(false));
        assert_eq!(eval("p99(a) <= 0.5s", &[(0.5, 0.5)]), Some(true));
        assert_eq!(eval("failed(a) < 1%", &[(0.0099, 0.0099)]), Some(true));
        assert_eq!(eval("memory(a) < 1KiB", &[(1023.0, 1023.0)]), Some(true));
        assert_eq!(
            eval("p99(a) == p99(b)", &[(1.0, 1.0), (1.0, 1.0)]),
            Some(true)
        );
        assert_eq!(
            eval("p99(a) != p99(b)", &[(1.0, 1.0), (1.0, 1.0)]),
            Some(false)
        );
    }

    #[test]
    fn a_lower_bound_decides_only_what_it_can() {
        let bound = [(40.0, INF)];
        assert_eq!(eval("saturation(a) >= 20/s", &bound), Some(true));
        assert_eq!(eval("saturation(a) < 20/s", &bound), Some(false));
        assert_eq!(eval("saturation(a) >= 50/s", &bound), None);
        assert_eq!(eval("saturation(a) == 40/s", &bound), None);
        assert_eq!(
            eval(
                "saturation(a) >= 5 * saturation(b)",
                &[(40.0, INF), (5.0, 5.0)]
            ),
            Some(true)
        );
        assert_eq!(
            eval(
                "saturation(a) >= 5 * saturation(b)",
                &[(10.0, 10.0), (5.0, INF)]
            ),
            Some(false)
        );
        assert_eq!(
            eval(
                "saturation(a) / saturation(b) >= 5",
                &[(40.0, INF), (40.0, INF)]
            ),
            None
        );
    }

    #[test]
    fn intervals_overlap_to_unknown_and_kleene_logic_keeps_what_is_known() {
        let a = (1.0, 3.0);
        assert_eq!(eval("p99(a) < 4s", &[a]), Some(true));
        assert_eq!(eval("p99(a) < 2s", &[a]), None);
        assert_eq!(eval("p99(a) > 3s", &[a]), Some(false));
        assert_eq!(eval("p99(a) >= 3s", &[a]), None);
        assert_eq!(
            eval("p99(a) < 2s and p99(b) > 5s", &[a, (1.0, 1.0)]),
            Some(false)
        );
        assert_eq!(
            eval("p99(a) < 2s or p99(b) < 5s", &[a, (1.0, 1.0)]),
            Some(true)
        );
        assert_eq!(eval("not p99(a) < 2s", &[a]), None);
        assert_eq!(eval("not p99(a) < 4s", &[a]), Some(false));
    }

    #[test]
    fn arithmetic_takes_the_widest_ends_and_a_divisor_around_zero_is_anything() {
        assert_eq!(
            eval("p99(a) - p99(b) <= 2s", &[(1.0, 3.0), (1.0, 2.0)]),
            Some(true)
        );
        assert_eq!(
            eval("p99(a) - p99(b) < 2s", &[(1.0, 3.0), (1.0, 2.0)]),
            None
        );
        assert_eq!(eval("-p99(a) < -0.5s", &[(1.0, 3.0)]), Some(true));
        assert_eq!(eval("p99(a) * 2 >= 2s", &[(1.0, 3.0)]), Some(true));
        assert_eq!(eval("p99(a) / p99(b) > 0", &[(1.0, 1.0), (0.0, 1.0)]), None);
        assert_eq!(eval("p99(a) / 2 == 0.5s", &[(1.0, 1.0)]), Some(true));
        assert_eq!(eval("0 * saturation(a) == 0/s", &[(1.0, INF)]), Some(true));
        assert_eq!(
            eval(
                "saturation(a) - saturation(b) > 0/s",
                &[(1.0, INF), (1.0, INF)]
            ),
            None
        );
    }
}
