//! Whether a run's fault took effect (docs/results.md, "Validity", `fault-not-applied`): an
//! applying action the engine or the fault proxy refused (`fault-apply-failed`) shows it did
//! not, for any fault; a fault on a container is then judged from that container's own
//! samples while the fault was on, since a `fault-applied` event says the engine accepted
//! the action, not that the container felt it. A link fault the proxy accepted is judged
//! from the link's probes (`validity::link`).
//!
//! - a kill or stop: the replica read `down` at least once;
//! - a freeze: the replica's CPU counter stood still (at most `FROZEN_CORES` of a core);
//! - CPU steal: the co-tenant burned at least `STEAL_SHARE` of the cores asked.
//!
//! Each figure is over the samples read inside the fault's span (`Span`): from the last
//! `fault-applied` of the fault (for a stop, the replica's exit) to its `fault-cleared`, the
//! CPU figures up to half a second before that end. A span too short for the monitors'
//! reads, a fault still on when the run ended (put back without an event), or reads that
//! could not tell (errors) are not evaluated, and say so.

use super::cpu;
use super::samples::Sample;
use super::window::{EventRow, Window};
use super::{Assessment, Evidence};
use crate::plan::model::Injection;
use crate::rundir::events::FAULT_APPLY_FAILED;
use crate::rundir::samples::SampleStatus;
use crate::spec::topology::{Role, RunTopology};

/// The check's name, in evidence and in the directory a run is set aside to.
pub const CHECK: &str = "fault-not-applied";

/// A frozen container may show this much CPU, in cores, over its freeze: the counter's
/// last tick before the freeze landing after it was read.
pub const FROZEN_CORES: f64 = 0.01;

/// The share of the asked cores a co-tenant must burn for its steal to count as done.
pub const STEAL_SHARE: f64 = 0.8;

/// The CPU figures leave out the reads of the span's last half second: the clearing action
/// (a thaw, the co-tenant's kill) is done before its `fault-cleared` is stamped, and a read
/// between the two sees the fault already gone.
const CLEARING_NS: i128 = 500_000_000;

/// A down container is told by a read once a second: a shorter span may hold none.
const MIN_DOWN_NS: i128 = 2_000_000_000;

/// Where a fault's effect is judged, from events.csv (any order).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Span {
    /// Never applied.
    None,
    /// Applied at `start_ns` and not cleared by an event: the run ended inside it.
    Open { start_ns: i128 },
    /// From the last `fault-applied` before the first `fault-cleared` that follows one, to
    /// that `fault-cleared`.
    Closed(Window),
}

/// The fault's span in `events`.
pub fn span_of(events: &[EventRow]) -> Span {
    let mut sorted: Vec<&EventRow> = events.iter().collect();
    sorted.sort_by_key(|e| e.wall_ns);
    let mut applied = None;
    for e in sorted {
        match (e.event.as_str(), applied) {
            ("fault-applied", _) => applied = Some(e.wall_ns),
            ("fault-cleared", Some(start_ns)) => {
                return Span::Closed(Window {
                    start_ns,
                    end_ns: e.wall_ns,
                })
            }
            _ => {}
        }
    }
    applied.map_or(Span::None, |start_ns| Span::Open { start_ns })
}

/// What a fault must show in its container's samples.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Killed or stopped: not running.
    Down,
    /// Frozen: running, burning nothing.
    Frozen,
    /// Burning `cores` on the replicas' CPUs.
    Burns { cores: f64 },
}

/// A run's fault: what it must show in its container's samples, and where.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// `None` for a fault on a link, whose effect on the traffic is not read from samples.
    pub effect: Option<Effect>,
    /// The container's role key, e.g. `replica-1`; `fault-proxy` for a link.
    pub role: String,
    pub container: String,
}

/// The fault's effect and the container that shows it (the fault proxy's, for a fault on a
/// link); `None` for a container the topology lacks.
pub fn target_of(inject: &Injection, topo: &RunTopology) -> Option<Target> {
    let (effect, role) = match inject {
        Injection::KillReplica { replica } | Injection::StopReplica { replica, .. } => {
            (Some(Effect::Down), Role::Replica(*replica))
        }
        Injection::FreezeReplica { replica } => (Some(Effect::Frozen), Role::Replica(*replica)),
        Injection::CpuSteal { cores } => (Some(Effect::Burns { cores: *cores }), Role::CoTenant),
        Injection::LinkLatency { .. } | Injection::LinkDown { .. } | Injection::Toxic { .. } => {
            (None, Role::FaultProxy)
        }
    };
    let container = topo.container(role)?.name.clone();
    Some(Target {
        effect,
        role: role.key(),
        container,
    })
}

/// The fault's check: an applying action the engine or the proxy refused (events.csv's
/// `fault-apply-failed`) is the evidence by itself, whatever the fault and whether or not
/// its container is known (`target`; the role is then `fault`); otherwise the effect, where
/// it is read from the container's samples (`check_effect`).
pub fn check_fault(
    target: Option<&Target>,
    rows: &[&Sample],
    events: &[EventRow],
    out: &mut Assessment,
) {
    let refused = events
        .iter()
        .filter(|e| e.event == FAULT_APPLY_FAILED)
        .count();
    if refused > 0 {
        out.evidence.push(Evidence {
            check: CHECK.into(),
            role: target.map_or_else(|| "fault".into(), |t| t.role.clone()),
            container: target.map(|t| t.container.clone()),
            figure: "actions applying the fault that failed (events.csv, fault-apply-failed)"
                .into(),
            value: refused as f64,
            threshold: 0.0,
            unit: "actions".into(),
        });
    } else if let Some(t) = target {
        if let Some(effect) = &t.effect {
            check_effect(effect, t, rows, span_of(events), out);
        }
    }
}

/// Checks `effect` in `rows` (the target's container's samples, in read order) over `span`.
fn check_effect(
    effect: &Effect,
    target: &Target,
    rows: &[&Sample],
    span: Span,
    out: &mut Assessment,
) {
    let say = |out: &mut Assessment, why: &dyn std::fmt::Display| {
        out.warnings.push(format!(
            "validity: {CHECK} of {} ({}) not evaluated: {why}",
            target.role, target.container
        ))
    };
    let span = match span {
        Span::Closed(w) => w,
        Span::None => return say(out, &"the fault was never applied"),
        Span::Open { .. } => return say(out, &"the fault was still on when the run ended"),
    };
    let found = match *effect {
        Effect::Down => down(rows, span),
        Effect::Frozen => cores_used(rows, span).map(|value| {
            (value > FROZEN_CORES).then_some(Shortfall {
                figure: "CPU used while frozen",
                value,
                threshold: FROZEN_CORES,
                unit: "cores",
            })
        }),
        Effect::Burns { cores: asked } => cores_used(rows, span).map(|value| {
            (value < asked * STEAL_SHARE).then_some(Shortfall {
                figure: "CPU the co-tenant burned while stealing",
                value,
                threshold: asked * STEAL_SHARE,
                unit: "cores",
            })
        }),
    };
    match found {
        Err(why) => say(out, &why),
        Ok(None) => {}
        Ok(Some(s)) => out.evidence.push(Evidence {
            check: CHECK.into(),
            role: target.role.clone(),
            container: Some(target.container.clone()),
            figure: s.figure.into(),
            value: s.value,
            threshold: s.threshold,
            unit: s.unit.into(),
        }),
    }
}

/// The figure by which a fault's effect fell short.
struct Shortfall {
    figure: &'static str,
    value: f64,
    threshold: f64,
    unit: &'static str,
}

/// What a check found: `Ok(None)` the effect was shown, `Ok(Some(_))` it was not, `Err` why
/// it could not be told.
type Found = Result<Option<Shortfall>, String>;

/// A kill or stop: one `down` read inside the span shows it; with none, an `ok` read shows it
/// did not happen, provided the span was long enough for a read.
fn down(rows: &[&Sample], span: Window) -> Found {
    let has = |status| {
        rows.iter()
            .any(|s| s.status == status && span.start_ns <= s.unix_ns && s.unix_ns <= span.end_ns)
    };
    if has(SampleStatus::Down) {
        return Ok(None);
    }
    if span.end_ns - span.start_ns < MIN_DOWN_NS {
        let s = span.len_s();
        return Err(format!(
            "down {s:.1} s, too short for two of the monitors' reads"
        ));
    }
    if !has(SampleStatus::Ok) {
        return Err("no read while the fault was on could be taken".into());
    }
    Ok(Some(Shortfall {
        figure: "reads showing the container down while it was to be killed or stopped",
        value: 0.0,
        threshold: 1.0,
        unit: "reads",
    }))
}

/// Cores used over the span up to its last `CLEARING_NS`, as the `cpu` check counts them:
/// the CPU of the pairs of consecutive `ok` reads inside, weighted by their seconds; a pair
/// whose counter went back (a restarted cgroup) is left out.
fn cores_used(rows: &[&Sample], span: Window) -> Result<f64, String> {
    let settled = Window {
        start_ns: span.start_ns,
        end_ns: span.end_ns - CLEARING_NS,
    };
    let (mut used, mut seconds) = (0.0, 0.0);
    for (a, b) in cpu::pairs(rows, settled) {
        if let Some(cores) = cpu::cores(a, b) {
            let dt = b.offset_s - a.offset_s;
            used += cores * dt;
            seconds += dt;
        }
    }
    if seconds > 0.0 {
        Ok(used / seconds)
    } else {
        Err("no two consecutive `ok` reads with CPU counters (the second not below the first) in the fault's span".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i128 = 1_000_000_000;

    fn read(t: i128, status: SampleStatus, cpu: Option<f64>) -> Sample {
        Sample {
            unix_ns: t * S,
            offset_s: t as f64,
            container: "c".into(),
            role: "replica-1".into(),
            status,
            cpu_usage_s: cpu,
            cpu_periods: None,
            cpu_throttled_periods: None,
            oom_kills: None,
            detail: String::new(),
        }
    }

    fn run(effect: Effect, rows: &[Sample]) -> Assessment {
        let mut out = Assessment::default();
        let refs: Vec<&Sample> = rows.iter().collect();
        let span = Span::Closed(Window {
            start_ns: 10 * S,
            end_ns: 15 * S,
        });
        check_effect(&effect, &target(), &refs, span, &mut out);
        out
    }

    fn target() -> Target {
        Target {
            effect: None,
            role: "replica-1".into(),
            container: "c".into(),
        }
    }

    fn ok(t: i128, cpu: f64) -> Sample {
        read(t, SampleStatus::Ok, Some(cpu))
    }

    #[test]
    fn a_kill_is_shown_by_one_down_read_inside_its_span_and_not_by_one_outside() {
        let seen = [ok(9, 1.0), read(11, SampleStatus::Down, None), ok(16, 2.0)];
        assert_eq!(run(Effect::Down, &seen), Assessment::default());
        let unseen = [read(9, SampleStatus::Down, None), ok(11, 1.0), ok(14, 1.2)];
        let out = run(Effect::Down, &unseen);
        assert_eq!(out.evidence.len(), 1, "{out:?}");
        assert_eq!(out.evidence[0].check, "fault-not-applied");
        assert_eq!(
            super::super::reason(&out.evidence),
            "replica-1-fault-not-applied"
        );
    }

    #[test]
    fn a_kill_read_only_as_errors_or_too_short_for_a_read_is_not_evaluated() {
        let errors = [
            read(11, SampleStatus::Error, None),
            read(13, SampleStatus::Error, None),
        ];
        let out = run(Effect::Down, &errors);
        assert!(
            out.evidence.is_empty() && out.warnings.len() == 1,
            "{out:?}"
        );
        // A stop whose replica drained past the fault's duration: down 0.3 s before its start.
        let mut out = Assessment::default();
        let short = Span::Closed(Window {
            start_ns: 10 * S,
            end_ns: 10 * S + 300_000_000,
        });
        let rows = [ok(10, 1.0)];
        let refs: Vec<&Sample> = rows.iter().collect();
        check_effect(&Effect::Down, &target(), &refs, short, &mut out);
        assert!(out.evidence.is_empty(), "{out:?}");
        assert!(out.warnings[0].contains("down 0.3 s"), "{out:?}");
    }

    #[test]
    fn the_span_runs_from_the_last_application_to_the_clearing_and_an_open_one_is_not_judged() {
        let ev = |t: i128, event: &str| EventRow {
            wall_ns: t * S,
            event: event.into(),
        };
        // A stop: SIGTERM at 10 s, the exit seen at 14 s, the start at 15 s.
        let stop = [
            ev(15, "fault-cleared"),
            ev(10, "fault-applied"),
            ev(14, "fault-applied"),
            ev(3, "phase"),
        ];
        assert_eq!(
            span_of(&stop),
            Span::Closed(Window {
                start_ns: 14 * S,
                end_ns: 15 * S
            })
        );
        assert_eq!(span_of(&stop[1..]), Span::Open { start_ns: 14 * S });
        assert_eq!(span_of(&stop[3..]), Span::None);
        // A freeze the run ended inside (thawed by the put-back, with no event): the reads
        // after the thaw are no evidence either way.
        let mut out = Assessment::default();
        let rows = [ok(10, 1.0), ok(12, 1.5)];
        let refs: Vec<&Sample> = rows.iter().collect();
        let open = Span::Open { start_ns: 10 * S };
        check_effect(&Effect::Frozen, &target(), &refs, open, &mut out);
        assert!(
            out.evidence.is_empty() && out.warnings.len() == 1,
            "{out:?}"
        );
    }

    #[test]
    fn a_freeze_is_a_cpu_counter_that_stood_still_while_it_lasted() {
        // The run's figures: 1.449 s from the first read in the freeze to the last.
        let frozen = [
            ok(9, 1.36),
            ok(10, 1.449),
            ok(12, 1.449),
            ok(14, 1.449),
            ok(16, 1.5),
        ];
        assert_eq!(run(Effect::Frozen, &frozen), Assessment::default());
        // A read at the span's very end may have seen the thaw: it is not counted.
        let frozen = [ok(10, 1.449), ok(12, 1.449), ok(14, 1.449), ok(15, 1.6)];
        assert_eq!(run(Effect::Frozen, &frozen), Assessment::default());
        // Ignored by the engine: the replica went on at 0.15 of a core.
        let running = [ok(10, 1.0), ok(12, 1.3), ok(14, 1.6)];
        let out = run(Effect::Frozen, &running);
        assert_eq!(out.evidence.len(), 1, "{out:?}");
        assert!((out.evidence[0].value - 0.15).abs() < 1e-9, "{out:?}");
        // One read inside: not evaluated, said so, never passed silently.
        let out = run(Effect::Frozen, &[ok(9, 1.0), ok(12, 1.0)]);
        assert!(
            out.evidence.is_empty() && out.warnings.len() == 1,
            "{out:?}"
        );
    }

    #[test]
    fn a_steal_counts_when_the_co_tenant_burned_most_of_what_was_asked() {
        let burned = [ok(10, 0.0), ok(12, 0.9), ok(14, 1.8)];
        assert!(run(Effect::Burns { cores: 0.5 }, &burned)
            .evidence
            .is_empty());
        let idle = [ok(10, 0.0), ok(12, 0.2), ok(14, 0.4)];
        let out = run(Effect::Burns { cores: 0.5 }, &idle);
        assert_eq!(out.evidence.len(), 1, "{out:?}");
        assert!((out.evidence[0].value - 0.1).abs() < 1e-9);
        assert!((out.evidence[0].threshold - 0.4).abs() < 1e-9);
        // The pair across a restarted counter is skipped.
        let restarted = [ok(10, 5.0), ok(12, 5.9), ok(13, 0.0), ok(14, 0.9)];
        assert!(run(Effect::Burns { cores: 0.5 }, &restarted)
            .evidence
            .is_empty());
    }

    #[test]
    fn a_refused_applying_action_is_the_evidence_whatever_the_samples_and_only_it_on_a_link() {
        let ev = |t: i128, event: &str| EventRow {
            wall_ns: t * S,
            event: event.into(),
        };
        let kill = Target {
            effect: Some(Effect::Down),
            ..target()
        };
        // The engine refused the kill: no fault-applied, and the replica ran on.
        let rows = [ok(10, 1.0), ok(12, 1.5)];
        let refs: Vec<&Sample> = rows.iter().collect();
        let mut out = Assessment::default();
        check_fault(Some(&kill), &refs, &[ev(10, FAULT_APPLY_FAILED)], &mut out);
        assert_eq!(out.evidence.len(), 1, "{out:?}");
        assert_eq!(
            (out.evidence[0].value, out.evidence[0].unit.as_str()),
            (1.0, "actions")
        );
        assert!(out.warnings.is_empty(), "{out:?}");
        // A stop whose replica outlived its grace was SIGKILLed: a plain fault-failed, and
        // its down read shows the fault.
        let stop = [
            ev(10, "fault-applied"),
            ev(13, "fault-failed"),
            ev(16, "fault-cleared"),
        ];
        let rows = [ok(9, 1.0), read(14, SampleStatus::Down, None)];
        let refs: Vec<&Sample> = rows.iter().collect();
        let mut out = Assessment::default();
        check_fault(Some(&kill), &refs, &stop, &mut out);
        assert_eq!(out, Assessment::default());
        // A link fault: a refused toxic is the evidence; an accepted one is not read here.
        let link = Target {
            effect: None,
            role: "fault-proxy".into(),
            container: "fp".into(),
        };
        let mut out = Assessment::default();
        check_fault(Some(&link), &[], &[ev(10, FAULT_APPLY_FAILED)], &mut out);
        assert_eq!(
            super::super::reason(&out.evidence),
            "fault-proxy-fault-not-applied"
        );
        // A refusal of a fault whose container the topology lacks is evidence all the same.
        let mut out = Assessment::default();
        check_fault(None, &[], &[ev(10, FAULT_APPLY_FAILED)], &mut out);
        assert_eq!(
            super::super::reason(&out.evidence),
            "fault-fault-not-applied"
        );
        let mut out = Assessment::default();
        check_fault(
            Some(&link),
            &[],
            &[ev(10, "fault-applied"), ev(15, "fault-cleared")],
            &mut out,
        );
        assert_eq!(out, Assessment::default());
    }
}
