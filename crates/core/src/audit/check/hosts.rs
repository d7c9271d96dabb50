//! Host facts: the runs of one comparison (one profile, one fault, every contender and
//! repetition) ran on engines whose hosts report the same facts (cores, memory, kernel,
//! cgroup version, engine version, and the processor where every run recorded it: model,
//! logical CPUs, cores, sockets, SMT, governor), for the system under test and for the load generator
//! alike. Runs compared across hosts that differ compare the hosts too; the ledger has no
//! way to declare that, so it is an undeclared departure naming each run's engines.

use super::{comparisons, Draft};
use crate::audit::report::{Kind, Standing};
use crate::audit::study::StudyFiles;
use crate::ledger::manifest::{Host, Manifest};

/// A run's hosts, the system's first: its `engines`, or its `host` alone in manifests
/// written before runs were placed on several engines.
fn hosts(m: &Manifest) -> Vec<(&str, &Host)> {
    if m.engines.is_empty() {
        vec![("the engine", &m.host)]
    } else {
        m.engines
            .iter()
            .map(|e| (e.name.as_str(), &e.host))
            .collect()
    }
}

fn describe(h: &Host) -> String {
    // A figure no host has (a damaged manifest) is written short.
    let cores = if h.cores.abs() < 1e6 {
        h.cores.to_string()
    } else {
        format!("{:e}", h.cores)
    };
    let cpu = h.cpu.as_ref().map_or(String::new(), |c| {
        let or = |v: Option<String>| v.unwrap_or_else(|| "?".into());
        format!(
            ", CPU {} ({} logical, {} cores, {} sockets, SMT {}, governor {})",
            or(c.model.clone()),
            c.logical,
            or(c.cores.map(|n| n.to_string())),
            or(c.sockets.map(|n| n.to_string())),
            or(c.smt.map(|on| if on { "on" } else { "off" }.to_string())),
            or(c.governor.clone())
        )
    });
    format!(
        "{cores} cores, {} MiB, kernel {}, cgroup v{}, engine {}{cpu}",
        h.memory_bytes >> 20,
        h.kernel,
        h.cgroup_version,
        h.engine_version
    )
}

pub(super) fn check(study: &StudyFiles) -> Vec<Draft> {
    let mut drafts = Vec::new();
    for (comparison, runs) in comparisons(study) {
        let first = hosts(runs[0]);
        // The processor is compared only where every run recorded it: a manifest written
        // before it was read says nothing of it, which is no difference.
        let all_cpu = runs
            .iter()
            .all(|m| hosts(m).iter().all(|(_, h)| h.cpu.is_some()));
        let facts = |h: &[(&str, &Host)]| {
            h.iter()
                .map(|(_, h)| Host {
                    cpu: h.cpu.clone().filter(|_| all_cpu),
                    ..(*h).clone()
                })
                .collect::<Vec<_>>()
        };
        if runs.iter().all(|m| facts(&hosts(m)) == facts(&first)) {
            continue;
        }
        let evidence = runs
            .iter()
            .map(|m| {
                let on: Vec<String> = hosts(m)
                    .iter()
                    .map(|(name, h)| format!("`{name}` ({})", describe(h)))
                    .collect();
                format!(
                    "`{}` attempt {} ran on {}",
                    m.run_id,
                    m.attempt,
                    on.join(" and ")
                )
            })
            .collect();
        drafts.push(Draft {
            kind: Kind::HostsDiffer,
            standing: Standing::Undeclared,
            subject: comparison.to_string(),
            title: format!("The runs of comparison `{comparison}` ran on hosts that differ"),
            reason: "a difference between these runs may be the hosts' as much as the contenders': rerun them on engines whose hosts report the same facts".into(),
            evidence,
        });
    }
    drafts
}
