//! The plan's history and its declarations: every change between consecutive versions of the
//! plan file, and the `plan-amended` (or, for a working tree, `uncommitted-plan`) event that
//! declares it, if any.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{hash_or_none, quoted, Draft, Entries};
use crate::audit::history::{diff, short, stated_hypotheses, History, PlanVersion, Rev};
use crate::audit::report::{Amendment, Change, Kind, Standing, Superseded};
use crate::ledger::journal::Event;

/// One change of the plan: its item, and its entry in the report's history, whose
/// `deviation` is left empty for `audit` to fill once the items are numbered.
pub(super) struct PlanEdit {
    pub draft: Draft,
    pub change: Change,
}

/// The plan's changes since registration, oldest first, each with its declaration.
pub(super) fn check(
    history: &History,
    entries: &Entries,
    declared_uncommitted: &BTreeMap<&str, usize>,
) -> Vec<PlanEdit> {
    let amendments = amendments(entries);
    let superseded = superseded(entries);
    let vs = &history.versions;
    let mut edits = Vec::new();
    for i in 1..vs.len() {
        let (a, b) = (&vs[i - 1], &vs[i]);
        if a.plan_hash.is_some() && a.plan_hash == b.plan_hash && a.inputs_digest == b.inputs_digest
        {
            continue;
        }
        let amendment = covering(&amendments, vs, i);
        // The runs an amendment superseded carry its reason.
        let gone: Vec<Superseded> = amendment
            .as_ref()
            .map(|m| {
                superseded
                    .iter()
                    .filter(|(reason, _)| *reason == m.reason)
                    .map(|(_, s)| s.clone())
                    .collect()
            })
            .unwrap_or_default();
        edits.push(edit(history, (a, b), amendment, gone, declared_uncommitted));
    }
    edits
}

/// The amendment that declares the change into version `i`: one from any earlier version to
/// this or any later one (one amendment may declare several commits at once). A version is
/// known by its plan hash and, where the amendment recorded it, by its inputs' digest.
fn covering(amendments: &[Amendment], vs: &[PlanVersion], i: usize) -> Option<Amendment> {
    let has = |range: &[PlanVersion], h: &str, inputs: &Option<String>| {
        range.iter().any(|v| {
            v.plan_hash.as_deref() == Some(h) && (inputs.is_none() || v.inputs_digest == *inputs)
        })
    };
    amendments
        .iter()
        .find(|m| {
            has(&vs[..i], &m.old_plan_hash, &m.old_inputs_digest)
                && has(&vs[i..], &m.new_plan_hash, &m.new_inputs_digest)
        })
        .cloned()
}

/// The change from version `a` to `b`: its fields and input files, its evidence and how it
/// stands.
fn edit(
    history: &History,
    (a, b): (&PlanVersion, &PlanVersion),
    amendment: Option<Amendment>,
    gone: Vec<Superseded>,
    declared_uncommitted: &BTreeMap<&str, usize>,
) -> PlanEdit {
    // Input files whose content changed; only when both versions' inputs were read.
    let files = match (&a.inputs_digest, &b.inputs_digest) {
        (Some(x), Some(y)) if x != y => crate::inputs::changed(&a.inputs, &b.inputs),
        _ => Vec::new(),
    };
    let fields = match (&a.document, &b.document) {
        (Some(x), Some(y)) => diff(x, y),
        _ => Vec::new(),
    };
    let mut paths: Vec<&str> = fields.iter().map(|f| f.path.as_str()).collect();
    paths.extend(files.iter().map(|f| f.path.as_str()));
    if paths.is_empty() {
        paths.push(history.plan_file.as_str());
    }
    let mut evidence = vec![format!(
        "{}{}: plan hash {} → {}",
        b.rev.label(),
        match &b.rev {
            Rev::Commit(c) => format!(" ({}, \"{}\")", c.date, c.subject),
            Rev::WorkingTree => " (not committed)".into(),
        },
        hash_or_none(&a.plan_hash),
        hash_or_none(&b.plan_hash)
    )];
    evidence.extend(fields.iter().map(ToString::to_string));
    if !files.is_empty() {
        evidence.push(format!(
            "inputs digest {} → {}",
            hash_or_none(&a.inputs_digest),
            hash_or_none(&b.inputs_digest)
        ));
        evidence.extend(files.iter().map(|f| format!("input {f}")));
    }
    let predictions = hypotheses_changed(a.document.as_ref(), b.document.as_ref());
    evidence.extend(predictions.iter().map(|(_, line)| line.clone()));
    if let Some(err) = &b.error {
        evidence.push(format!(
            "the plan at {} does not load: {err}",
            b.rev.label()
        ));
    }
    let (standing, reason) = match &amendment {
        Some(m) => {
            evidence.extend(amendment_evidence(m, &gone));
            (Standing::Declared, m.reason.clone())
        }
        None => undeclared(a, b, declared_uncommitted, &mut evidence),
    };
    let what = match (b.rev.committed(), fields.is_empty() && !files.is_empty()) {
        (true, false) => "The plan was changed after registration",
        (false, false) => "The plan file has uncommitted changes",
        (true, true) => "An input of the plan was changed after registration",
        (false, true) => "An input of the plan has uncommitted changes",
    };
    let title = if predictions.is_empty() {
        format!("{what}: {}", quoted(&paths))
    } else {
        let named: Vec<&str> = predictions.iter().map(|(n, _)| n.as_str()).collect();
        format!("{what}: {} ({})", quoted(&paths), named.join("; "))
    };
    PlanEdit {
        draft: Draft {
            kind: Kind::PlanEdit,
            standing,
            title,
            subject: paths.join(", "),
            reason,
            evidence,
        },
        change: Change {
            deviation: String::new(),
            from: a.rev.clone(),
            to: b.rev.clone(),
            old_plan_hash: a.plan_hash.clone(),
            new_plan_hash: b.plan_hash.clone(),
            fields,
            declared: amendment.is_some(),
            amendment,
            superseded: gone,
        },
    }
}

/// How a change no amendment declares stands: declared when a working tree was run with
/// `--allow-uncommitted` at its plan hash (only a working tree can be run uncommitted: a
/// commit's change needs an amendment), else undeclared, saying what would declare it.
fn undeclared(
    a: &PlanVersion,
    b: &PlanVersion,
    declared_uncommitted: &BTreeMap<&str, usize>,
    evidence: &mut Vec<String>,
) -> (Standing, String) {
    let uncommitted = b
        .plan_hash
        .as_deref()
        .and_then(|h| declared_uncommitted.get(h));
    match uncommitted {
        Some(line) if !b.rev.committed() => {
            evidence.push(format!(
                "journal line {line}: uncommitted-plan with plan hash {}",
                hash_or_none(&b.plan_hash)
            ));
            (
                Standing::Declared,
                "the plan was run uncommitted, with --allow-uncommitted".to_string(),
            )
        }
        _ if a.plan_hash == b.plan_hash => (
            Standing::Undeclared,
            format!(
                "none recorded: no plan-amended event in the journal takes the plan's \
             inputs from digest {} to {}; declare the change as an amendment with its \
             reason (feedbench run --amend) or revert it",
                hash_or_none(&a.inputs_digest),
                hash_or_none(&b.inputs_digest)
            ),
        ),
        _ => (
            Standing::Undeclared,
            format!(
                "none recorded: no plan-amended event in the journal takes the plan from \
             hash {} to {}; declare the change as an amendment with its reason \
             (feedbench run --amend) or revert it",
                hash_or_none(&a.plan_hash),
                hash_or_none(&b.plan_hash)
            ),
        ),
    }
}

/// The predictions a change touched, by hypothesis id (not by position, which an insertion
/// shifts): `(what, the evidence line)`, e.g. `hypothesis H1's check changed` with both
/// checks. A changed prediction is named, never only a field path.
fn hypotheses_changed(old: Option<&Value>, new: Option<&Value>) -> Vec<(String, String)> {
    let (a, b) = (stated_hypotheses(old), stated_hypotheses(new));
    let check = |c: &Option<String>| {
        c.as_deref()
            .map_or("(no check)".into(), |c| format!("`{c}`"))
    };
    let mut out = Vec::new();
    for (id, (text, c)) in &a {
        match b.get(id) {
            None => out.push((
                format!("hypothesis {id} removed"),
                format!(
                    "hypothesis {id} removed: it stated \"{text}\", check {}",
                    check(c)
                ),
            )),
            Some((text2, c2)) => {
                if c != c2 {
                    out.push((
                        format!("hypothesis {id}'s check changed"),
                        format!("hypothesis {id}: check was {}, now {}", check(c), check(c2)),
                    ));
                }
                if text != text2 {
                    out.push((
                        format!("hypothesis {id}'s text changed"),
                        format!("hypothesis {id}: text was \"{text}\", now \"{text2}\""),
                    ));
                }
            }
        }
    }
    for (id, (text, c)) in &b {
        if !a.contains_key(id) {
            out.push((
                format!("hypothesis {id} added"),
                format!("hypothesis {id} added: \"{text}\", check {}", check(c)),
            ));
        }
    }
    out
}

/// The journal lines of an amendment and of the runs it superseded.
fn amendment_evidence(m: &Amendment, gone: &[Superseded]) -> Vec<String> {
    let mut evidence = vec![format!(
        "journal line {}: plan-amended, plan hash {} → {}{}",
        m.line,
        short(&m.old_plan_hash),
        short(&m.new_plan_hash),
        m.git_commit
            .as_deref()
            .map_or(String::new(), |c| format!(", at commit {}", short(c)))
    )];
    if gone.is_empty() {
        evidence.push("no run superseded".into());
    }
    for s in gone {
        evidence.push(format!(
            "journal line {}: superseded run `{}` (run hash {}, attempt {}{})",
            s.line,
            s.run,
            short(&s.run_hash),
            s.attempt,
            s.dir
                .as_deref()
                .map_or(String::new(), |d| format!(", now in `{d}`"))
        ));
    }
    evidence
}

/// The journal's `plan-amended` events.
fn amendments(entries: &Entries) -> Vec<Amendment> {
    entries
        .iter()
        .filter_map(|(line, e)| match e {
            Event::PlanAmended {
                reason,
                old_plan_hash,
                new_plan_hash,
                git_commit,
                changes,
                old_inputs_digest,
                new_inputs_digest,
                ..
            } => Some(Amendment {
                line: *line,
                reason: reason.clone(),
                old_plan_hash: old_plan_hash.clone(),
                new_plan_hash: new_plan_hash.clone(),
                git_commit: git_commit.clone(),
                changes: changes.clone(),
                old_inputs_digest: old_inputs_digest.clone(),
                new_inputs_digest: new_inputs_digest.clone(),
            }),
            _ => None,
        })
        .collect()
}

/// The journal's `run-superseded` events, each with the reason of the amendment that
/// superseded it.
fn superseded(entries: &Entries) -> Vec<(String, Superseded)> {
    entries
        .iter()
        .filter_map(|(line, e)| match e {
            Event::RunSuperseded {
                run,
                run_hash,
                attempt,
                dir,
                amendment,
            } => Some((
                amendment.clone(),
                Superseded {
                    line: *line,
                    run: run.clone(),
                    run_hash: run_hash.clone(),
                    attempt: *attempt,
                    dir: dir.clone(),
                },
            )),
            _ => None,
        })
        .collect()
}
