//! The caps: each role's CPUs and memory in range, overrides by contender, the load
//! generator's memory against what its load keeps in flight, and a run's cores against the host's.

use super::{p, Findings};
use crate::plan::expand::{resolve_contenders, ResolvedContender};
use crate::plan::model::{Cap, CappedRole, CapsOverride, LoadGeneratorKind, Plan, ServiceKind};

fn cap(f: &mut Findings, path: String, c: &Cap) {
    if !(c.cpus.is_finite() && c.cpus > 0.0) {
        f.error(
            format!("{path}.cpus"),
            format!("cpus must be above 0, found {}", c.cpus),
        )
        .hint("fractional cores are fine, e.g. 0.5");
    }
    if c.memory.bytes < 6 << 20 {
        f.error(
            format!("{path}.memory"),
            format!(
                "memory must be at least 6MiB (the engine's minimum), found {}",
                c.memory
            ),
        );
    }
}

pub(super) fn caps_override(f: &mut Findings, path: &str, o: &CapsOverride) {
    for (role, c) in o.entries() {
        cap(f, p(&[path, role.key()]), &c);
    }
}

pub(super) fn caps(plan: &Plan, f: &mut Findings) {
    let c = &plan.caps;
    for role in [
        CappedRole::Replica,
        CappedRole::Database,
        CappedRole::ObjectStore,
        CappedRole::FaultProxy,
        CappedRole::Balancer,
        CappedRole::LoadGenerator,
    ] {
        if let Some(x) = c.get(role) {
            cap(f, p(&["caps", role.key()]), &x);
        }
    }
    // A role the topology does not have needs no cap; one it has needs its cap, in `caps`
    // or in the caps of every contender (and variant) that runs.
    let contenders = resolve_contenders(plan);
    for kind in [ServiceKind::Database, ServiceKind::ObjectStore] {
        let role = kind.role();
        let services: Vec<String> = plan
            .topology
            .services
            .iter()
            .filter(|(_, s)| s.kind == kind)
            .map(|(n, _)| format!("`{n}`"))
            .collect();
        let without: Vec<String> = contenders
            .iter()
            .filter(|r| r.caps.get(role).is_none())
            .map(|r| format!("`{}`", r.name))
            .collect();
        if services.is_empty() || without.is_empty() {
            continue;
        }
        let whom = if without.len() == contenders.len() {
            String::new()
        } else {
            format!(" for {}", without.join(", "))
        };
        f.error(
            "caps",
            format!(
                "the topology declares {} but `caps.{}` is missing{whom} (service {})",
                kind.described(),
                role.key(),
                services.join(", ")
            ),
        )
        .hint(format!(
            "add `{}: {{cpus: 1, memory: 512MiB}}` under `caps`",
            role.key()
        ));
    }
}

/// Warns when a profile may keep more requests in flight than the load generator's memory
/// cap holds (`plan::footprint`): every request taking the timeout, as past a knee, the
/// most the load's sizing lets it keep. When even requests within the objective would not
/// fit, the warning says so: the run could not measure the system up to its objective.
pub(super) fn load_generator_memory(plan: &Plan, f: &mut Findings) {
    use crate::plan::footprint::{self, in_flight, timeout_s};
    let kind = plan.topology.load_generator.kind;
    let fp = footprint::of(kind);
    let Some(cap) = resolve_contenders(plan)
        .iter()
        .map(|c| c.caps.load_generator.memory.bytes as f64)
        .reduce(f64::min)
    else {
        return;
    };
    let mib = |b: f64| b / (1024.0 * 1024.0);
    let p99 = plan.study.objective.p99;
    let timeout = timeout_s(p99.as_secs_f64());
    for (name, profile) in &plan.profiles {
        let Some(rate) = footprint::highest_rate(plan, profile) else {
            continue;
        };
        let at_timeout = in_flight(rate, timeout) + 5.0;
        if fp.bytes(rate, at_timeout) <= cap {
            continue;
        }
        let at_objective = in_flight(rate, p99.as_secs_f64()) * 2.0 + 5.0;
        let when = if fp.bytes(rate, at_objective) > cap {
            format!(
                "even with requests within the objective (2 × p99 = {}s each, {at_objective:.0} in flight) it would not fit: the run could not measure the system up to its objective",
                2.0 * p99.as_secs_f64()
            )
        } else {
            "past the knee, as requests slow towards their timeout, it would be OOM-killed or drop starts, and the run would be invalid".to_string()
        };
        let other = match kind {
            LoadGeneratorKind::K6 => LoadGeneratorKind::Native,
            LoadGeneratorKind::Native => LoadGeneratorKind::K6,
        };
        f.warn(
            p(&["profiles", name.as_str()]),
            format!(
                "at {rate:.0} arrivals/s with every request taking the {timeout} s timeout, {} may keep {at_timeout:.0} requests in flight: about {:.0} MiB ({:.0} MiB, plus {:.0} KiB per arrival/s, plus {:.0} KiB per {}; docs/performance.md), above the load generator's {:.0} MiB cap; {when}",
                kind.as_str(),
                mib(fp.bytes(rate, at_timeout)),
                mib(fp.base),
                fp.per_rate / 1024.0,
                fp.per_request / 1024.0,
                fp.unit,
                mib(cap),
            ),
        )
        .hint(format!(
            "raise caps.load-generator.memory to at least {:.0} MiB, lower the profile's rate, or use `kind: {}` ({:.0} MiB for the same requests in flight)",
            mib(fp.bytes(rate, at_timeout)).ceil(),
            other.as_str(),
            mib(footprint::of(other).bytes(rate, at_timeout)).ceil(),
        ));
    }
}

/// A contender whose caps sum to more cores than the host has: warned (deploying refuses
/// unless oversubscription is allowed).
pub(super) fn caps_within_host(contenders: &[ResolvedContender], host: f64, f: &mut Findings) {
    for c in contenders {
        let total = total_cpus(c);
        if total > host {
            let what = if c.caps.allow_oversubscription {
                "allowed by caps.allow-oversubscription"
            } else {
                "deploying will refuse unless caps.allow-oversubscription is true"
            };
            f.warn(p(&["contenders", c.declared.as_str()]), format!(
                "the caps of a `{}` run sum to {total} cores, more than the {host} of the machine feedbench runs on ({what})", c.name
            ));
        }
    }
}

/// Cores one run of this contender reserves: replicas, services and the measurement path.
pub fn total_cpus(c: &ResolvedContender) -> f64 {
    let mut total = f64::from(c.replicas) * c.caps.replica.cpus
        + c.caps.fault_proxy.cpus
        + c.caps.balancer.cpus
        + c.caps.load_generator.cpus;
    for s in c.services.values() {
        total += c.caps.get(s.kind.role()).map_or(0.0, |x| x.cpus);
    }
    (total * 1000.0).round() / 1000.0
}
