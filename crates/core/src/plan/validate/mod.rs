//! Semantic checks of a typed plan: ranges, cross-references, dependencies, and warnings.
//! Every finding carries the field path it is about; `load` turns paths into positions.

mod caps;
mod faults;
mod matrix;
mod profiles;
mod services;

use std::collections::HashSet;

pub use caps::total_cpus;

use super::de::suggest;
use super::model::Plan;
use super::yaml::join_key;
use super::Severity;

/// What validation may know about the world, passed in so the core stays pure.
pub struct Context<'a> {
    /// Cores of the machine feedbench runs on, for the oversubscription warning (a warning:
    /// `run` checks caps against the cores the engine reports).
    pub host_cores: Option<f64>,
    /// Whether a path relative to the plan file exists (init scripts, build contexts).
    pub exists: Option<&'a dyn Fn(&str) -> bool>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub severity: Severity,
    pub path: String,
    pub message: String,
    pub hint: Option<String>,
    /// Point at the key rather than the value (for names that are wrong).
    pub at_key: bool,
    /// A byte offset inside the value's string: where in a hypothesis' check the problem is.
    pub offset: Option<usize>,
}

#[derive(Default)]
struct Findings(Vec<Finding>);

impl Findings {
    fn error(&mut self, path: impl Into<String>, message: impl Into<String>) -> &mut Finding {
        self.push(Severity::Error, path.into(), message.into())
    }
    fn warn(&mut self, path: impl Into<String>, message: impl Into<String>) -> &mut Finding {
        self.push(Severity::Warning, path.into(), message.into())
    }
    fn push(&mut self, severity: Severity, path: String, message: String) -> &mut Finding {
        self.0.push(Finding {
            severity,
            path,
            message,
            hint: None,
            at_key: false,
            offset: None,
        });
        self.0.last_mut().expect("just pushed")
    }
}

impl Finding {
    fn hint(&mut self, hint: impl Into<String>) -> &mut Self {
        self.hint = Some(hint.into());
        self
    }
    fn at_key(&mut self) -> &mut Self {
        self.at_key = true;
        self
    }
}

/// A field path: `parts[0]` is a path already, the rest are keys appended to it.
fn p(parts: &[&str]) -> String {
    parts[1..]
        .iter()
        .fold(parts[0].to_string(), |acc, k| join_key(&acc, k))
}

/// "unknown X `y`" with a did-you-mean over the known names.
fn unknown<'a, 'f>(
    f: &'f mut Findings,
    path: String,
    what: &str,
    found: &str,
    known: impl Iterator<Item = &'a str>,
) -> &'f mut Finding {
    let known: Vec<&str> = known.collect();
    let hint = suggest(found, &known, what);
    f.error(path, format!("unknown {what} `{found}`"))
        .hint(hint)
}

/// Checks a plan; returns errors and warnings, errors first.
pub fn validate(plan: &Plan, ctx: &Context) -> Vec<Finding> {
    let mut f = Findings::default();
    study(plan, &mut f);
    caps::caps(plan, &mut f);
    services::topology(plan, ctx, &mut f);
    services::contenders(plan, ctx, &mut f);
    profiles::workloads(plan, &mut f);
    profiles::profiles(plan, &mut f);
    faults::faults(plan, &mut f);
    faults::guards(plan, &mut f);
    faults::analysis(plan, &mut f);
    matrix::matrix(plan, ctx, &mut f);
    caps::load_generator_memory(plan, &mut f);
    let mut all = f.0;
    all.sort_by_key(|x| x.severity != Severity::Error);
    all
}

fn study(plan: &Plan, f: &mut Findings) {
    let s = &plan.study;
    if s.hypotheses.is_empty() {
        f.error(
            "study.hypotheses",
            "a study states at least one hypothesis before any run",
        )
        .hint("add `- {id: H1, text: \"...\"}`: pre-registration means writing it down first");
    }
    let mut seen = HashSet::new();
    for (i, h) in s.hypotheses.iter().enumerate() {
        let path = format!("study.hypotheses[{i}]");
        if h.id.trim().is_empty() {
            f.error(
                format!("{path}.id"),
                "a hypothesis needs an id, e.g. \"H1\"",
            );
        } else if !seen.insert(h.id.as_str()) {
            f.error(
                format!("{path}.id"),
                format!("the hypothesis id `{}` is used twice", h.id),
            );
        }
        if h.text.trim().is_empty() {
            f.error(format!("{path}.text"), "a hypothesis needs its text");
        }
        if let Some(text) = &h.check {
            if let Err(errors) = super::check::check(plan, text) {
                for e in errors {
                    let finding = f.error(format!("{path}.check"), e.message);
                    finding.hint = e.hint;
                    finding.offset = Some(e.span.start);
                }
            }
        }
    }
    let o = &s.objective;
    if o.p99.millis == 0 {
        f.error("study.objective.p99", "the p99 bound must be above 0");
    }
    if o.window.millis < 1000 {
        f.error(
            "study.objective.window",
            "the evaluation window must be at least 1s",
        );
    }
    if o.error_rate.percent > 100.0 {
        f.error(
            "study.objective.error-rate",
            format!("an error rate of {} is above 100%", o.error_rate),
        );
    }
}

#[cfg(test)]
mod tests;
