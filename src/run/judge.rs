//! The live judge of a run's windows: a step ramp's steps, or any other profile's measured
//! phase cut into objective windows, judged as the load generator's output streams in, and
//! each judged window as the events show it.

use indexmap::IndexMap;

use crate::analysis::live::{LiveRamp, Transient};
use crate::analysis::saturation;
use crate::plan::model::Plan;
use crate::plan::units::Name;
use crate::plan::RunSpec;
use crate::rundir::events::RunEvent;
use crate::rundir::frame::{Frame, FrameInputs};
use crate::spec::load::{self, LoadScript};
use crate::spec::topology::RunTopology;

/// How a judged window is shown: its step's rate (ramps), its span in seconds since the
/// scenario's start, the rate the schedule offered over it, and the objective's bounds.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shown {
    step_rate: Option<f64>,
    from_s: f64,
    to_s: f64,
    offered_rate: f64,
    p99_bound_ms: f64,
    failed_bound: f64,
}

/// The live judge, from the frame the scenario's start `t0` fixes: a step ramp's steps, or
/// for any other profile the measured phase cut into objective windows (judged and shown,
/// never stopped); a window is complete once the stream is past its end by the request
/// timeout plus two seconds (k6 writes its samples once a second), plus feedbench-load's
/// maximum lag (its requests are placed at their scheduled instants). `stops`: the ramp's load
/// stops at its first sustained breach.
#[allow(clippy::too_many_arguments)]
pub(super) fn live_judge(
    plan: &Plan,
    run: &RunSpec,
    script: &LoadScript,
    topo: &RunTopology,
    saturations: &IndexMap<Name, f64>,
    t0: u64,
    stops: bool,
) -> Option<(LiveRamp, Vec<Shown>)> {
    let t0 = i128::from(t0);
    let frame = Frame::of(&FrameInputs {
        plan,
        run,
        script,
        topology: topo,
        saturations,
        scenario_start_ns: t0,
        stopped: None,
    });
    let (mut steps, objective) = ramp_terms(&frame);
    let ramp = !steps.is_empty();
    let secs = |ns: i128| (ns - t0) as f64 / 1e9;
    if !ramp {
        let w = objective.window_ns;
        let m = frame.measured;
        let mut a = m.start_ns;
        while w > 0 && a + w <= m.end_ns {
            let rate = load::scheduled_rate_between(script, secs(a), secs(a + w));
            steps.push(saturation::Step {
                rate,
                start_ns: a,
                end_ns: a + w,
            });
            a += w;
        }
    }
    if steps.is_empty() {
        return None;
    }
    let shown = steps
        .iter()
        .map(|s| Shown {
            step_rate: ramp.then_some(s.rate),
            from_s: secs(s.start_ns),
            to_s: secs(s.end_ns),
            offered_rate: load::scheduled_rate_between(script, secs(s.start_ns), secs(s.end_ns)),
            p99_bound_ms: objective.p99_ms,
            failed_bound: objective.error_rate,
        })
        .collect();
    // A request is placed at its scheduled instant where the generator records one: it
    // may start up to the maximum lag after it (a later one is dropped), then time out.
    let lag_s = match script.generator {
        crate::plan::model::LoadGeneratorKind::Native => {
            plan.topology.load_generator.max_lag().millis as f64 / 1e3
        }
        _ => 0.0,
    };
    let settle_ns = ((script.request_timeout_s + lag_s + 2.0) * 1e9) as i128;
    let confirm = frame.confirm();
    Some((
        LiveRamp::new(steps, objective, settle_ns, confirm, stops && ramp),
        shown,
    ))
}

/// The event of a transient: the step that broke the objective, and the later step that met
/// it again.
pub(super) fn transient(t: &Transient) -> RunEvent {
    RunEvent::RampTransient {
        step_rate: t.breached.rate,
        p99_ms: t.breached.p99_ms,
        failed_share: t.breached.error_rate,
        met_at_rate: t.met_again.rate,
    }
}

/// The event of window `i`, judged `v`.
pub(super) fn window_judged(
    i: usize,
    v: &saturation::StepVerdict,
    shown: &[Shown],
) -> Option<RunEvent> {
    let s = shown.get(i)?;
    let len = s.to_s - s.from_s;
    Some(RunEvent::WindowJudged {
        step_rate: s.step_rate,
        from_s: s.from_s,
        to_s: s.to_s,
        requests: v.requests,
        offered_rate: s.offered_rate,
        achieved_rate: if len > 0.0 {
            v.requests as f64 / len
        } else {
            0.0
        },
        p99_ms: v.p99_ms,
        p99_bound_ms: s.p99_bound_ms,
        failed_share: v.error_rate,
        failed_bound: s.failed_bound,
        met: v.met,
    })
}

/// The steps and objective of a frame, as the saturation rule takes them.
pub(super) fn ramp_terms(frame: &Frame) -> (Vec<saturation::Step>, saturation::Objective) {
    let steps = frame
        .steps
        .iter()
        .map(|s| saturation::Step {
            rate: s.rate,
            start_ns: s.start_ns,
            end_ns: s.end_ns,
        })
        .collect();
    let o = &frame.objective;
    (
        steps,
        saturation::Objective {
            p99_ms: o.p99_ms,
            error_rate: o.failed_share,
            window_ns: o.window_ns,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(rate: f64, met: bool) -> saturation::StepVerdict {
        saturation::StepVerdict {
            rate,
            requests: 100,
            dropped: 0,
            p99_ms: Some(if met { 10.0 } else { 900.0 }),
            error_rate: 0.0,
            met,
            windows: 2,
        }
    }

    #[test]
    fn a_transient_names_its_step_and_the_step_that_met_the_objective_again() {
        let t = Transient {
            step: 1,
            breached: verdict(40.0, false),
            met_again: verdict(80.0, true),
        };
        let RunEvent::RampTransient {
            step_rate,
            p99_ms,
            met_at_rate,
            ..
        } = transient(&t)
        else {
            panic!("not a transient");
        };
        assert_eq!((step_rate, p99_ms, met_at_rate), (40.0, Some(900.0), 80.0));
    }
}
