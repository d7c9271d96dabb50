//! Caps: every container of the runs the report compares ran under the caps its plan gave
//! it (`--cpus` and memory as planned, no cpuset), read back at deploy (the manifest's
//! `caps`); and within one comparison, each role ran under the same caps in every run, or
//! the plan asked for the difference (a variant's own caps: declared). A container whose
//! caps are not its plan's is an undeclared departure, and so is a difference between runs
//! that comes from one.

use std::collections::BTreeMap;

use super::{comparisons, Draft};
use crate::audit::report::{Kind, Standing};
use crate::audit::study::StudyFiles;
use crate::ledger::manifest::Manifest;
use crate::rundir::caps::ReadCaps;

/// `` `run` attempt n: `container` ran under … (planned …) ``.
fn line(m: &Manifest, c: &ReadCaps) -> String {
    format!(
        "`{}` attempt {}: `{}` ran under {} (planned {})",
        m.run_id, m.attempt, c.container, c.deploy, c.planned
    )
}

/// Containers that ran under caps their plan did not give them.
fn not_planned(m: &Manifest) -> Option<Draft> {
    let off: Vec<String> = m
        .caps
        .iter()
        .filter(|c| !c.deploy.same_as(&c.planned))
        .map(|c| line(m, c))
        .collect();
    (!off.is_empty()).then(|| Draft {
        kind: Kind::CapsNotPlanned,
        standing: Standing::Undeclared,
        subject: m.run_id.clone(),
        title: format!("Run `{}` ran under caps its plan did not give it", m.run_id),
        reason: "what it measured is not what the plan asked for: rerun it under the plan's caps"
            .into(),
        evidence: off,
    })
}

/// The roles of one comparison whose caps differ between its runs.
fn differing(comparison: &str, runs: &[&Manifest]) -> Vec<Draft> {
    let mut by_role: BTreeMap<&str, Vec<(&Manifest, &ReadCaps)>> = BTreeMap::new();
    for m in runs {
        for c in &m.caps {
            by_role.entry(c.role.as_str()).or_default().push((m, c));
        }
    }
    by_role
        .into_iter()
        .filter(|(_, read)| read.iter().any(|(_, c)| !c.deploy.same_as(&read[0].1.deploy)))
        .map(|(role, read)| {
            let planned = read.iter().all(|(_, c)| c.deploy.same_as(&c.planned));
            Draft {
                kind: Kind::CapsDiffer,
                standing: if planned { Standing::Declared } else { Standing::Undeclared },
                subject: format!("{comparison} {role}"),
                title: format!(
                    "The runs of comparison `{comparison}` ran their {role} under different caps"
                ),
                reason: if planned {
                    "the plan gives these runs' contenders different caps (a variant's own): the comparison is of the caps too".into()
                } else {
                    "a difference between these runs may be their caps' as much as the contenders': rerun them under the plan's caps".into()
                },
                evidence: read.iter().map(|(m, c)| line(m, c)).collect(),
            }
        })
        .collect()
}

pub(super) fn check(study: &StudyFiles) -> Vec<Draft> {
    let mut drafts = Vec::new();
    for (comparison, runs) in comparisons(study) {
        drafts.extend(runs.iter().filter_map(|m| not_planned(m)));
        drafts.extend(differing(comparison, &runs));
    }
    drafts
}
