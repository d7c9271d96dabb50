//! Hypotheses' checks: a small typed expression over the report's metrics that states a
//! hypothesis so that a machine can judge it. Lexed and parsed with byte offsets, then
//! checked against the plan (names, units, and that the matrix has the runs it reads)
//! when the plan loads, so a check that can never be judged is refused before any run.
//! docs/plan.md, "Hypotheses' checks", has the grammar, the functions and the errors.

pub mod functions;
pub mod lex;
pub mod locate;
pub mod parse;
pub mod types;

pub use functions::{Dim, FUNCTIONS};
pub use parse::{parse, Expr};
pub use types::{check, Query};

/// A byte range in the check string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Self {
        Span { start, end }
    }
}

/// What is wrong with a check, and where in it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct CheckError {
    pub span: Span,
    pub message: String,
    pub hint: Option<String>,
}

impl CheckError {
    pub fn new(span: Span, message: impl Into<String>) -> Self {
        CheckError {
            span,
            message: message.into(),
            hint: None,
        }
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use crate::plan::{expand, load_str, validate::Context, LoadError, LoadedPlan};

    const PLAN: &str = include_str!("../../../../../tests/plans/valid/hypotheses.yaml");
    const H1: &str = "saturation(feed-rs.indexed) >= 5 * saturation(feed-rs.production)";

    fn load(text: &str) -> Result<LoadedPlan, Vec<String>> {
        let ctx = Context {
            host_cores: None,
            exists: None,
        };
        load_str("t.yaml", text, &ctx).map_err(|e| match e {
            LoadError::Invalid { diagnostics, .. } => {
                diagnostics.iter().map(|d| d.to_string()).collect()
            }
            e => vec![e.to_string()],
        })
    }

    #[test]
    fn a_check_is_in_the_plan_hash_and_in_no_run_hash() {
        let runs = |l: &LoadedPlan| -> Vec<(String, String)> {
            expand(&l.plan)
                .into_iter()
                .map(|r| (r.id, r.run_hash))
                .collect()
        };
        let before = load(PLAN).unwrap();
        assert!(PLAN.contains(H1));
        let changed = load(&PLAN.replace(H1, &H1.replace("5 *", "4 *"))).unwrap();
        let without = load(&PLAN.replace(&format!("      check: {H1}\n"), "")).unwrap();
        assert_ne!(before.plan_hash, changed.plan_hash);
        assert_ne!(before.plan_hash, without.plan_hash);
        assert_eq!(runs(&before), runs(&changed));
        assert_eq!(runs(&before), runs(&without));
        assert!(!runs(&before).is_empty());
    }

    #[test]
    fn errors_stand_where_the_check_goes_wrong_in_the_file() {
        let wrong = |from: &str, to: &str| {
            assert!(PLAN.contains(from), "{from}");
            load(&PLAN.replacen(from, to, 1)).unwrap_err()
        };
        // A plain scalar on line 12.
        assert_eq!(
            wrong("saturation(feed-rs.production)", "saturation(feed-rs.prod)"),
            ["t.yaml:12:68: study.hypotheses[0].check: unknown variant `prod` of `feed-rs`\n  hint: did you mean `production`? (the variants are: `indexed`, `production`)"]
        );
        // The second line of a folded block scalar.
        assert_eq!(
            wrong("and cpu(replica-1,", "and cpu(replica,"),
            ["t.yaml:17:17: study.hypotheses[1].check: unknown role `replica`\n  hint: did you mean `replicas`? (the roles are: `replicas`, `replica-1`, `replica-2`, `database`, `balancer`, `fault-proxy`, `load-generator`)"]
        );
        // Inside double quotes, and inside single quotes.
        assert_eq!(
            wrong("origin: restart", "origin: restrat")[0]
                .split('\n')
                .next(),
            Some("t.yaml:20:70: study.hypotheses[2].check: unknown origin `restrat`")
        );
        assert_eq!(
            wrong("fault: db-latency) < 1%'", "fault: db-latency) < 1ms'")[0],
            "t.yaml:23:79: study.hypotheses[3].check: compares a share (`%`) with a duration (`ms`, `s`)\n  hint: both sides must measure the same thing, e.g. `1%`"
        );
        // A literal block scalar's second line.
        assert_eq!(
            wrong("stat: max) < 256MiB", "stat: max) < 256")[0].split('\n').next(),
            Some("t.yaml:33:57: study.hypotheses[5].check: compares a size (`KiB`, `MiB`, `GiB`) with a plain number")
        );
    }
}
