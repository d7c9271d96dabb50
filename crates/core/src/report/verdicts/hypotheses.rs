//! The study's hypotheses with their verdicts: each as the plan states it now, and, where
//! the registration commit states another check (or none, or the hypothesis is gone), the
//! registered one beside it, so that a changed prediction never passes silently.

use serde::Serialize;

use super::{evaluate, resolve, Evaluation, Resolved, RowIndex, Standing, CURRENT, REGISTERED};
use crate::audit::history::{stated_hypotheses, History};
use crate::plan::Plan;

/// How a hypothesis stands against its registration.
pub const AS_REGISTERED: &str = "as registered";
pub const AMENDED: &str = "check amended after registration";
pub const ADDED: &str = "added after registration";
pub const REMOVED: &str = "removed after registration";

/// One hypothesis in the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HypothesisVerdict {
    pub id: String,
    pub text: String,
    pub standing: &'static str,
    /// The check as the plan states it now, evaluated.
    pub check: Option<Evaluation>,
    /// When the registration differs: the check it registered (`None`: none).
    pub registered_check: Option<String>,
    pub registered: Option<Evaluation>,
}

impl HypothesisVerdict {
    /// Its evaluations, current first.
    pub fn evaluations(&self) -> impl Iterator<Item = &Evaluation> {
        self.check.iter().chain(self.registered.iter())
    }
}

/// Every hypothesis's verdict, and the resolved checks (what the twin is given);
/// `paired_rounds` as the report's comparisons pair them (`comparison::paired_rounds`).
pub fn judge(
    plan: &Plan,
    history: &History,
    runs: &Standing,
    index: &RowIndex,
    paired_rounds: bool,
) -> (Vec<HypothesisVerdict>, Vec<Resolved>) {
    let registered = stated_hypotheses(history.registration().document.as_ref());
    let mut resolved = Vec::new();
    // `as_registered`: whether this statement is the one registered before the runs.
    let mut run = |id: &str, which: &str, src: &str, as_registered: bool| {
        let mut r = resolve(plan, id, which, src, runs);
        r.registered = as_registered;
        let e = evaluate(&r, index, paired_rounds);
        resolved.push(r);
        e
    };
    let mut out = Vec::new();
    for h in &plan.study.hypotheses {
        let stated = registered.get(&h.id).map(|(_, c)| c);
        let as_registered = stated == Some(&h.check);
        let check = h
            .check
            .as_deref()
            .map(|src| run(&h.id, CURRENT, src, as_registered));
        let (standing, registered_check, registered_eval) = match stated {
            None => (ADDED, None, None),
            Some(_) if as_registered => (AS_REGISTERED, None, None),
            Some(c) => (
                AMENDED,
                c.clone(),
                c.as_deref().map(|src| run(&h.id, REGISTERED, src, true)),
            ),
        };
        out.push(HypothesisVerdict {
            id: h.id.clone(),
            text: h.text.clone(),
            standing,
            check,
            registered_check,
            registered: registered_eval,
        });
    }
    for (id, (text, c)) in &registered {
        if plan.study.hypotheses.iter().any(|h| h.id == *id) {
            continue;
        }
        out.push(HypothesisVerdict {
            id: id.clone(),
            text: text.clone(),
            standing: REMOVED,
            check: None,
            registered_check: c.clone(),
            registered: c.as_deref().map(|src| run(id, REGISTERED, src, true)),
        });
    }
    (out, resolved)
}
