//! `run.json`'s `frame`: the run's definition placed on the wall clock (the measured phase,
//! the ramp's steps, the objective, the fault, the caps, the recovery rule's settings).
//! The executor writes it once the k6 scenario's start is known; the report and its
//! recomputation take it as given and compute every figure from the CSVs
//! (docs/analysis.md).

use std::collections::BTreeMap;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::plan::expand::RunSpec;
use crate::plan::model::{Plan, Profile};
use crate::plan::units::Name;
use crate::spec::load::{self, LoadScript};
use crate::spec::topology::{Role, RunTopology};

/// A span of unix nanoseconds `[start_ns, end_ns)` and the arrivals the schedule offered in it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Span {
    pub start_ns: i128,
    pub end_ns: i128,
    pub offered_arrivals: f64,
}

impl Span {
    pub fn contains(&self, t_ns: i128) -> bool {
        t_ns >= self.start_ns && t_ns < self.end_ns
    }

    /// Length in seconds.
    pub fn len_s(&self) -> f64 {
        (self.end_ns - self.start_ns).max(0) as f64 / 1e9
    }
}

/// One step of a step ramp.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FrameStep {
    pub rate: f64,
    pub start_ns: i128,
    pub end_ns: i128,
    pub offered_arrivals: f64,
}

impl FrameStep {
    pub fn span(&self) -> Span {
        Span {
            start_ns: self.start_ns,
            end_ns: self.end_ns,
            offered_arrivals: self.offered_arrivals,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FrameObjective {
    pub p99_ms: f64,
    /// 0 to 1.
    pub failed_share: f64,
    pub window_ns: i128,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultWindow {
    pub name: String,
    /// The injection's kind, as the plan spells it (`kill-replica`, `link-latency`, …).
    pub injection: String,
    pub observe_ns: i128,
    /// The balancer's server the fault is aimed at, as the balancer names it (`replica-2`),
    /// for a fault on one replica; `None` for faults on a link or on every replica (and in
    /// run.json files written before it was recorded: then any server's rows are read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
}

impl FaultWindow {
    /// Faults after which a replica has to come back (the `restart` origin applies).
    pub fn restarts_a_replica(&self) -> bool {
        matches!(self.injection.as_str(), "kill-replica" | "stop-replica")
    }

    /// Whether a health.csv row's server is the one this fault reads: its target's, or any
    /// server's for a fault aimed at none.
    pub fn reads_server(&self, row: &super::health::HealthRow) -> bool {
        match &self.server {
            None => true,
            Some(target) => row.server_name() == target,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cap {
    /// The role as containers.csv spells it.
    pub role: String,
    /// The CPU cap, in cores.
    pub cpus: f64,
}

/// The recovery rule's settings (plan `analysis.recovery`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RecoveryRule {
    pub window_ns: i128,
    pub step_ns: i128,
    pub hold_ns: i128,
    pub throughput_tolerance: f64,
    pub latency_tolerance: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Frame {
    pub contender: String,
    pub variant: Option<String>,
    pub profile: String,
    pub fault: Option<String>,
    pub repetition: u32,
    pub measured: Span,
    #[serde(default)]
    pub steps: Vec<FrameStep>,
    pub objective: FrameObjective,
    pub fault_window: Option<FaultWindow>,
    /// By container name.
    pub caps: BTreeMap<String, Cap>,
    pub recovery: RecoveryRule,
    /// Set when the ramp's load was stopped at its knee: the steps and the measured phase
    /// above end there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<RampStop>,
    /// A step ramp's `confirm-steps`: how many steps after a breach must break the
    /// objective too for it to be sustained. Absent for other profiles, and in run.json
    /// files written before breaches were confirmed (read as 0: the first breach is the
    /// sustained one, as those ramps were judged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm_steps: Option<usize>,
    /// The routes of the profile's workload that declare an expected 4xx share (a ratio),
    /// by name. Absent in run.json files written before routes declared one.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub expected_4xx: BTreeMap<String, f64>,
    /// The rule the run's windows are judged by (`analysis::judging`): `by-schedule` for
    /// every run since it was recorded; absent in older run.json files, which were judged
    /// `by-start`.
    #[serde(default)]
    pub judged_by: crate::analysis::judging::Rule,
}

/// A step ramp stopped at its knee (`stop-on-breach`): judged live, the first step of the
/// sustained breach and the last step run (the breach and its `confirm-steps`), and where
/// the measured phase ends (the last step's end, unix ns; the load ran on until that step
/// was judged).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RampStop {
    pub breach_rate: f64,
    pub last_rate: f64,
    pub at_ns: i128,
}

/// What the frame is made from: the plan, the run, its rendered load and topology, and the
/// saturations its rates were resolved with.
pub struct FrameInputs<'a> {
    pub plan: &'a Plan,
    pub run: &'a RunSpec,
    pub script: &'a LoadScript,
    pub topology: &'a RunTopology,
    pub saturations: &'a IndexMap<Name, f64>,
    /// t = 0 of the schedule (k6's scenario start), unix ns.
    pub scenario_start_ns: i128,
    /// The ramp's stop at its knee, when it stopped.
    pub stopped: Option<RampStop>,
}

/// The declared expected 4xx shares of the routes of `profile`'s workload, as ratios.
fn expected_4xx(plan: &Plan, profile: &str) -> BTreeMap<String, f64> {
    let Some(p) = plan.profiles.get(profile) else {
        return BTreeMap::new();
    };
    plan.workload_of(p)
        .routes
        .iter()
        .filter_map(|(name, r)| Some((name.to_string(), r.expected_4xx?.fraction())))
        .collect()
}

fn ns(s: f64) -> i128 {
    (s * 1e9).round() as i128
}

impl Frame {
    /// The run's frame. The measured phase starts at the scenario's start plus the
    /// warm-up and ends with the schedule, or where a ramp stopped at its knee; a step
    /// ramp's steps follow one another from the measured phase's start, up to that end.
    pub fn of(i: &FrameInputs<'_>) -> Frame {
        let (plan, script, t0) = (i.plan, i.script, i.scenario_start_ns);
        let schedule = &script.schedule;
        let offered = |a: i128, b: i128| {
            schedule.arrivals_between((a - t0) as f64 / 1e9, (b - t0) as f64 / 1e9)
        };
        let measured_start = t0 + ns(script.measured_start_s);
        let measured_end = match i.stopped {
            Some(stop) => stop.at_ns.min(t0 + ns(schedule.duration_s())),
            None => t0 + ns(schedule.duration_s()),
        };
        let mut steps = Vec::new();
        if let Some(Profile::StepRamp {
            start,
            step,
            step_duration,
            max,
            ..
        }) = plan.profiles.get(i.run.profile.as_str())
        {
            if let (Ok(start), Ok(max)) = (
                load::resolve(start, i.saturations),
                load::resolve(max, i.saturations),
            ) {
                let step_ns = step_duration.millis as i128 * 1_000_000;
                for k in 0..Profile::ramp_steps(start, *step, max) as i128 {
                    let (a, b) = (
                        measured_start + k * step_ns,
                        measured_start + (k + 1) * step_ns,
                    );
                    if b > measured_end {
                        break; // not run: the ramp stopped before it
                    }
                    steps.push(FrameStep {
                        rate: start + *step * k as f64,
                        start_ns: a,
                        end_ns: b,
                        offered_arrivals: offered(a, b),
                    });
                }
            }
        }
        let o = &plan.study.objective;
        let fault_window = i.run.fault.as_ref().and_then(|f| {
            plan.faults.get(f.as_str()).map(|fault| FaultWindow {
                name: f.clone(),
                injection: fault.inject.kind().to_string(),
                observe_ns: fault.observe.millis as i128 * 1_000_000,
                server: fault.inject.replica().map(|n| Role::Replica(n).key()),
            })
        });
        let caps = i
            .topology
            .containers
            .iter()
            .map(|c| {
                (
                    c.name.clone(),
                    Cap {
                        role: c.role.key(),
                        cpus: c.nano_cpus as f64 / 1e9,
                    },
                )
            })
            .collect();
        let (contender, variant) = split_variant(&i.run.contender);
        let r = &plan.analysis.recovery;
        Frame {
            contender,
            variant,
            profile: i.run.profile.clone(),
            fault: i.run.fault.clone(),
            repetition: i.run.repetition,
            measured: Span {
                start_ns: measured_start,
                end_ns: measured_end,
                offered_arrivals: offered(measured_start, measured_end),
            },
            steps,
            objective: FrameObjective {
                p99_ms: o.p99.millis as f64,
                failed_share: o.error_rate.fraction(),
                window_ns: o.window.millis as i128 * 1_000_000,
            },
            fault_window,
            caps,
            recovery: RecoveryRule {
                window_ns: r.window_ns(),
                step_ns: r.step_ns(),
                hold_ns: r.hold_ns(),
                throughput_tolerance: r.throughput_fraction(),
                latency_tolerance: r.latency_fraction(),
            },
            stopped: i.stopped,
            confirm_steps: plan
                .profiles
                .get(i.run.profile.as_str())
                .and_then(|p| p.confirm_steps())
                .map(|c| c as usize),
            expected_4xx: expected_4xx(plan, &i.run.profile),
            judged_by: crate::analysis::judging::CURRENT,
        }
    }

    /// The `confirm-steps` the ramp's breaches are judged with (docs/analysis.md).
    pub fn confirm(&self) -> usize {
        self.confirm_steps.unwrap_or(0)
    }
}

/// A contender's name split at its variant: `feed-go.cache` → (`feed-go`, Some(`cache`)).
pub fn split_variant(contender: &str) -> (String, Option<String>) {
    match contender.split_once('.') {
        Some((c, v)) => (c.to_string(), Some(v.to_string())),
        None => (contender.to_string(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_split_at_the_dot() {
        assert_eq!(split_variant("feed-rs"), ("feed-rs".into(), None));
        assert_eq!(
            split_variant("feed-go.cache"),
            ("feed-go".into(), Some("cache".into()))
        );
    }

    #[test]
    fn spans_are_half_open() {
        let s = Span {
            start_ns: 10,
            end_ns: 20,
            offered_arrivals: 1.0,
        };
        assert!(s.contains(10) && s.contains(19) && !s.contains(20));
        assert_eq!(s.len_s(), 1e-8);
    }
}
