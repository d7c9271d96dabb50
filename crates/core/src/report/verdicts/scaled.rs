//! A recovery before its origin, scaled: `5 * recovery(…)` of −1.8 s is −9 s, below which
//! no recovery falls, so a check that multiplies or divides a negative recovery compares
//! nothing it means ("at least five times longer") and is not evaluable (docs/analysis.md,
//! "Recovery").

use super::CallValue;
use crate::plan::check::parse::{ArithOp, Expr};

/// The function whose figures are signed.
const RECOVERY: &str = "recovery";

/// The first `recovery(…)` call below 0 inside an operand of a product or quotient of
/// `expr`, with its value.
pub fn negative_recovery_scaled<'c>(expr: &Expr, calls: &'c [CallValue]) -> Option<&'c CallValue> {
    match expr {
        Expr::Arith(ArithOp::Mul | ArithOp::Div, a, b, _) => negative_recovery_in(a, calls)
            .or_else(|| negative_recovery_in(b, calls))
            .or_else(|| negative_recovery_scaled(a, calls))
            .or_else(|| negative_recovery_scaled(b, calls)),
        Expr::Arith(_, a, b, _)
        | Expr::Compare(_, a, b, _)
        | Expr::And(a, b, _)
        | Expr::Or(a, b, _) => {
            negative_recovery_scaled(a, calls).or_else(|| negative_recovery_scaled(b, calls))
        }
        Expr::Neg(x, _) | Expr::Not(x, _) => negative_recovery_scaled(x, calls),
        Expr::Number(..) | Expr::Call(_) => None,
    }
}

/// A `recovery(…)` call below 0 within the quantity `expr`.
fn negative_recovery_in<'c>(expr: &Expr, calls: &'c [CallValue]) -> Option<&'c CallValue> {
    match expr {
        Expr::Call(c) if c.function.text == RECOVERY => calls
            .iter()
            .find(|v| v.start == c.span.start && v.end == c.span.end)
            .filter(|v| v.value.is_some_and(|i| i.lo < 0.0)),
        Expr::Neg(x, _) => negative_recovery_in(x, calls),
        Expr::Arith(_, a, b, _) => {
            negative_recovery_in(a, calls).or_else(|| negative_recovery_in(b, calls))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::check::parse;
    use crate::report::verdicts::interval::Interval;

    /// The check's calls, in order, with the values given.
    fn calls(check: &str, values: &[f64]) -> Vec<CallValue> {
        let mut spans: Vec<(usize, usize)> = parse::parse(check)
            .unwrap()
            .call_spans()
            .iter()
            .map(|s| (s.start, s.end))
            .collect();
        spans.sort();
        spans
            .into_iter()
            .zip(values)
            .map(|((start, end), &v)| CallValue {
                start,
                end,
                text: check[start..end].to_string(),
                stat: "median".into(),
                unit: "s",
                n: 1,
                value: Some(Interval { lo: v, hi: v }),
                interval: None,
                confidence: None,
                rows: Vec::new(),
                problems: Vec::new(),
                exact: Some(vec![(1, v)]),
            })
            .collect()
    }

    fn found(check: &str, values: &[f64]) -> Option<String> {
        let c = calls(check, values);
        negative_recovery_scaled(&parse::parse(check).unwrap(), &c).map(|v| v.text.clone())
    }

    #[test]
    fn a_multiple_of_a_negative_recovery_is_found_and_a_plain_comparison_is_not() {
        let h3 = "recovery(a, fault: k, origin: restart) < 5s and recovery(b, fault: k, origin: restart) >= 5 * recovery(a, fault: k, origin: restart)";
        assert_eq!(
            found(h3, &[-1.8, 10.0, -1.8]).as_deref(),
            Some("recovery(a, fault: k, origin: restart)")
        );
        // Positive, the multiple means what it says.
        assert_eq!(found(h3, &[0.4, 84.0, 0.4]), None);
        // A negative recovery compared as it is means what it says too.
        assert_eq!(found("recovery(a, fault: k) < 5s", &[-1.8]), None);
        assert_eq!(
            found(
                "recovery(a, fault: k) - recovery(b, fault: k) < 1s",
                &[-1.8, 2.0]
            ),
            None
        );
        // Inside the operand, and on either side of a quotient.
        assert!(found("(recovery(a, fault: k) + 1s) * 2 < 5s", &[-1.8]).is_some());
        assert!(found("10s / recovery(a, fault: k) > 2", &[-1.8]).is_some());
        // Another function below 0 is not a recovery.
        assert_eq!(found("2 * detect(a, fault: k) < 1s", &[-0.5]), None);
    }
}
