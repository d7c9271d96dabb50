//! Faults, guards and the analysis' settings: each in range and naming what exists.

use super::profiles::positive;
use super::{p, unknown, Findings};
use crate::plan::expand::resolve_contenders;
use crate::plan::model::{Injection, Plan};
use crate::plan::units::{Duration, Name};

pub(super) fn faults(plan: &Plan, f: &mut Findings) {
    let contenders = resolve_contenders(plan);
    let min_replicas = contenders
        .iter()
        .map(|c| c.replicas)
        .min()
        .unwrap_or(plan.topology.replicas);
    for (name, fault) in &plan.faults {
        let base = p(&["faults", name.as_str()]);
        positive(f, format!("{base}.duration"), fault.duration);
        let ibase = format!("{base}.inject.{}", fault.inject.kind());
        if let Some(link) = fault.inject.link() {
            if !plan.topology.links.contains_key(link) {
                unknown(
                    f,
                    format!("{ibase}.link"),
                    "link",
                    link.as_str(),
                    plan.topology.links.keys().map(Name::as_str),
                );
            }
        }
        if let Some(r) = fault.inject.replica() {
            if r == 0 || r > min_replicas {
                f.error(
                    format!("{ibase}.replica"),
                    format!("replica {r} does not exist; replicas count from 1 to {min_replicas}"),
                );
            }
        }
        match &fault.inject {
            Injection::CpuSteal { cores } => {
                if !(cores.is_finite() && *cores > 0.0) {
                    f.error(
                        format!("{ibase}.cores"),
                        format!("cores must be above 0, found {cores}"),
                    );
                }
            }
            Injection::LinkLatency { latency, .. } => {
                positive(f, format!("{ibase}.latency"), *latency)
            }
            Injection::Toxic {
                toxic_type,
                toxicity,
                attributes,
                ..
            } => {
                if !(0.0..=1.0).contains(toxicity) {
                    f.error(
                        format!("{ibase}.toxicity"),
                        format!("toxicity is a probability from 0 to 1, found {toxicity}"),
                    );
                }
                for key in attributes.keys() {
                    if !toxic_type.attributes().contains(&key.as_str()) {
                        unknown(
                            f,
                            format!("{ibase}.attributes.{key}"),
                            "attribute",
                            key,
                            toxic_type.attributes().iter().copied(),
                        )
                        .at_key();
                    }
                }
            }
            Injection::StopReplica { grace, .. } => positive(f, format!("{ibase}.grace"), *grace),
            Injection::KillReplica { .. }
            | Injection::FreezeReplica { .. }
            | Injection::LinkDown { .. } => {}
        }
    }
}

pub(super) fn guards(plan: &Plan, f: &mut Findings) {
    let g = &plan.guards;
    for (field, v) in [
        ("measurement-cpu-ceiling", g.measurement_cpu_ceiling),
        (
            "measurement-throttle-ceiling",
            g.measurement_throttle_ceiling,
        ),
        ("host-interference", g.host_interference),
    ] {
        if v.percent <= 0.0 || v.percent > 100.0 {
            f.error(
                format!("guards.{field}"),
                format!("expected a share from above 0% to 100%, found {v}"),
            );
        }
    }
    if g.dropped_iterations.percent > 100.0 {
        f.error(
            "guards.dropped-iterations",
            format!("expected at most 100%, found {}", g.dropped_iterations),
        );
    }
}

pub(super) fn analysis(plan: &Plan, f: &mut Findings) {
    let r = &plan.analysis.recovery;
    let base = "analysis.recovery";
    if r.window.millis == 0 {
        f.error(
            format!("{base}.window"),
            "the window must be longer than 0s",
        )
        .hint("the rule judges windows of this length after a fault, e.g. `10s`");
    }
    if r.step.millis == 0 {
        f.error(format!("{base}.step"), "the step must be longer than 0s")
            .hint("candidate instants and windows lie on a grid of this step, e.g. `100ms`");
    } else if r.window.millis > 0 && r.step > r.window {
        f.error(
            format!("{base}.step"),
            format!(
                "the step ({}) is longer than the window ({}), so the windows would leave gaps between them",
                r.step, r.window
            ),
        )
        .hint(format!("make the step at most {}", r.window));
    }
    if r.step.millis > 0 && r.hold.millis % r.step.millis != 0 {
        let below = Duration {
            millis: r.hold.millis - r.hold.millis % r.step.millis,
        };
        let above = Duration {
            millis: below.millis + r.step.millis,
        };
        f.error(
            format!("{base}.hold"),
            format!(
                "the hold ({}) is not a whole multiple of the step ({}): the rule checks the windows at t + j·step for j = 0 … hold/step",
                r.hold, r.step
            ),
        )
        .hint(format!("write {below} or {above}, or change the step"));
    }
    for (field, v, zero) in [
        (
            "throughput-tolerance",
            r.throughput_tolerance,
            "the control's throughput exactly",
        ),
        (
            "latency-tolerance",
            r.latency_tolerance,
            "a p95 and p99 at most the control's",
        ),
    ] {
        if !(0.0..=100.0).contains(&v.percent) {
            f.error(
                format!("{base}.{field}"),
                format!("expected a tolerance from 0% to 100%, found {v}"),
            )
            .hint(format!("0% asks for {zero}"));
        }
    }
    // Only windows that end by the observe window's end count, so the first candidate, the
    // clearing itself, already needs `window + hold` of it.
    if r.window.millis == 0 {
        return;
    }
    let needs = r.window.millis.saturating_add(r.hold.millis);
    for (name, fault) in &plan.faults {
        if fault.observe.millis < needs {
            let needs = Duration { millis: needs };
            f.warn(
                p(&["faults", name.as_str(), "observe"]),
                format!(
                    "the recovery rule needs {needs} after the fault clears (analysis.recovery window + hold), but the observe window is {}: no run of this fault can be found recovered from its clearing",
                    fault.observe
                ),
            )
            .hint(format!(
                "make `observe` at least {needs}, or shorten `analysis.recovery.window` or `hold`"
            ));
        }
    }
}
