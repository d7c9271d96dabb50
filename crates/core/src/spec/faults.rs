//! Faults as a schedule: each planned fault becomes timed actions (apply, clear) against the
//! run's topology. Pure; the executor carries the actions out and records each as an event.

use std::time::Duration;

use serde_json::{json, Value};

use crate::plan::model::{Fault, Injection, Stream};
use crate::spec::topology::Role;

/// One thing to do to the running system.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Send a signal to a container (SIGKILL, SIGTERM).
    Signal {
        role: Role,
        signal: &'static str,
    },
    /// Wait up to `grace` for the container to exit, then SIGKILL it.
    AwaitExit {
        role: Role,
        grace: Duration,
    },
    /// Start a stopped container again (restart after a kill or stop; the co-tenant).
    Start {
        role: Role,
    },
    /// Kill and keep a container (the co-tenant, once its time is up).
    Stop {
        role: Role,
    },
    /// Freeze a container's processes (the cgroup freezer; `docker pause`).
    Freeze {
        role: Role,
    },
    /// Thaw a frozen container (`docker unpause`).
    Thaw {
        role: Role,
    },
    /// Disable or enable a fault-proxy link.
    Link {
        proxy: String,
        enabled: bool,
    },
    AddToxic {
        proxy: String,
        name: String,
        kind: String,
        stream: String,
        toxicity: f64,
        attributes: Value,
    },
    RemoveToxic {
        proxy: String,
        name: String,
    },
}

impl Action {
    /// A short description for the events log.
    pub fn describe(&self) -> (String, String) {
        match self {
            Action::Signal { role, signal } => (signal.to_string(), role.key()),
            Action::AwaitExit { role, grace } => (
                format!("await exit ({}s grace)", grace.as_secs_f64()),
                role.key(),
            ),
            Action::Start { role } => ("start".into(), role.key()),
            Action::Stop { role } => ("stop".into(), role.key()),
            Action::Freeze { role } => ("freeze".into(), role.key()),
            Action::Thaw { role } => ("thaw".into(), role.key()),
            Action::Link { proxy, enabled } => (
                (if *enabled { "link up" } else { "link down" }).into(),
                proxy.clone(),
            ),
            Action::AddToxic { proxy, kind, .. } => (format!("add {kind} toxic"), proxy.clone()),
            Action::RemoveToxic { proxy, name } => (format!("remove toxic {name}"), proxy.clone()),
        }
    }
}

/// Whether an action applies the fault or clears it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    Apply,
    Clear,
}

/// An action at an offset from the start of the measured phase.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub at: Duration,
    pub edge: Edge,
    pub action: Action,
}

impl Step {
    /// Whether this step failing leaves its fault not applied (events.csv's
    /// `fault-apply-failed`, the run's `fault-not-applied` evidence): an applying action,
    /// except an await-exit, which fails when the container outlived its grace and is then
    /// SIGKILLed, down all the same (its samples show it, `validity::effect`). A clearing
    /// action that fails leaves the fault on, which is another matter.
    pub fn failure_unapplies(&self) -> bool {
        self.edge == Edge::Apply && !matches!(self.action, Action::AwaitExit { .. })
    }
}

/// The timed actions of one fault, in time order: what applies it at its `at`, then what
/// clears it at the end of its `duration`.
pub fn schedule(name: &str, fault: &Fault) -> Vec<Step> {
    let at = Duration::from_millis(fault.at.millis);
    let end = at + Duration::from_millis(fault.duration.millis);
    let toxic_name = format!("feedbench-{name}");
    let mut steps: Vec<Step> = applying(&fault.inject, &toxic_name)
        .into_iter()
        .map(|action| Step {
            at,
            edge: Edge::Apply,
            action,
        })
        .collect();
    steps.push(Step {
        at: end,
        edge: Edge::Clear,
        action: clearing(&fault.inject, toxic_name),
    });
    steps
}

/// The actions that apply an injection, in order.
fn applying(inject: &Injection, toxic_name: &str) -> Vec<Action> {
    match inject {
        Injection::KillReplica { replica } => vec![Action::Signal {
            role: Role::Replica(*replica),
            signal: "SIGKILL",
        }],
        Injection::StopReplica { replica, grace } => vec![
            Action::Signal {
                role: Role::Replica(*replica),
                signal: "SIGTERM",
            },
            Action::AwaitExit {
                role: Role::Replica(*replica),
                grace: Duration::from_millis(grace.millis),
            },
        ],
        Injection::FreezeReplica { replica } => vec![Action::Freeze {
            role: Role::Replica(*replica),
        }],
        Injection::CpuSteal { .. } => vec![Action::Start {
            role: Role::CoTenant,
        }],
        Injection::LinkLatency {
            link,
            latency,
            jitter,
        } => vec![Action::AddToxic {
            proxy: link.to_string(),
            name: toxic_name.to_string(),
            kind: "latency".into(),
            stream: "downstream".into(),
            toxicity: 1.0,
            attributes: json!({"latency": latency.millis, "jitter": jitter.millis}),
        }],
        Injection::LinkDown { link } => vec![Action::Link {
            proxy: link.to_string(),
            enabled: false,
        }],
        Injection::Toxic {
            link,
            toxic_type,
            stream,
            toxicity,
            attributes,
        } => vec![Action::AddToxic {
            proxy: link.to_string(),
            name: toxic_name.to_string(),
            kind: serde_json::to_value(toxic_type)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default(),
            stream: match stream {
                Stream::Upstream => "upstream".into(),
                Stream::Downstream => "downstream".into(),
            },
            toxicity: *toxicity,
            attributes: json!(attributes),
        }],
    }
}

/// The action that clears an injection: a replica started again or thawed, the co-tenant
/// stopped, the toxic removed, the link enabled.
fn clearing(inject: &Injection, toxic_name: String) -> Action {
    match inject {
        Injection::KillReplica { replica } | Injection::StopReplica { replica, .. } => {
            Action::Start {
                role: Role::Replica(*replica),
            }
        }
        Injection::FreezeReplica { replica } => Action::Thaw {
            role: Role::Replica(*replica),
        },
        Injection::CpuSteal { .. } => Action::Stop {
            role: Role::CoTenant,
        },
        Injection::LinkLatency { link, .. } | Injection::Toxic { link, .. } => {
            Action::RemoveToxic {
                proxy: link.to_string(),
                name: toxic_name,
            }
        }
        Injection::LinkDown { link } => Action::Link {
            proxy: link.to_string(),
            enabled: true,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::units::Duration as PlanDuration;
    use crate::spec::commands::co_tenant_args;

    fn fault(inject: Injection) -> Fault {
        Fault {
            at: PlanDuration::from_secs(120),
            duration: PlanDuration::from_secs(15),
            observe: PlanDuration::from_secs(165),
            inject,
        }
    }

    #[test]
    fn only_an_applying_step_other_than_a_wait_for_exit_leaves_its_fault_unapplied() {
        // Every fault but the stop applies in one action and clears in one.
        let injections = [
            Injection::KillReplica { replica: 1 },
            Injection::FreezeReplica { replica: 1 },
            Injection::CpuSteal { cores: 0.5 },
            Injection::LinkDown {
                link: "db".parse().unwrap(),
            },
        ];
        for inject in injections {
            let steps = schedule("f", &fault(inject.clone()));
            let unapplies: Vec<bool> = steps.iter().map(Step::failure_unapplies).collect();
            assert_eq!(unapplies, [true, false], "{inject:?}");
        }
        // The stop: SIGTERM, the wait for the exit (a SIGKILL at its end), the start.
        let stop = schedule(
            "f",
            &fault(Injection::StopReplica {
                replica: 1,
                grace: PlanDuration::from_secs(5),
            }),
        );
        assert_eq!(
            stop.iter().map(Step::failure_unapplies).collect::<Vec<_>>(),
            [true, false, false]
        );
    }

    #[test]
    fn a_link_cut_disables_then_enables_its_proxy() {
        let s = schedule(
            "db-cut",
            &fault(Injection::LinkDown {
                link: "db".parse().unwrap(),
            }),
        );
        assert_eq!(s.len(), 2);
        assert_eq!(
            (s[0].at, s[0].edge),
            (Duration::from_secs(120), Edge::Apply)
        );
        assert_eq!(
            s[0].action,
            Action::Link {
                proxy: "db".into(),
                enabled: false
            }
        );
        assert_eq!(
            (s[1].at, s[1].edge),
            (Duration::from_secs(135), Edge::Clear)
        );
    }

    #[test]
    fn latency_is_a_named_toxic_removed_at_the_end() {
        let s = schedule(
            "db-latency",
            &fault(Injection::LinkLatency {
                link: "db".parse().unwrap(),
                latency: PlanDuration { millis: 100 },
                jitter: PlanDuration::default(),
            }),
        );
        match &s[0].action {
            Action::AddToxic {
                name,
                kind,
                attributes,
                ..
            } => {
                assert_eq!(
                    (name.as_str(), kind.as_str()),
                    ("feedbench-db-latency", "latency")
                );
                assert_eq!(attributes["latency"], 100);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            s[1].action,
            Action::RemoveToxic {
                proxy: "db".into(),
                name: "feedbench-db-latency".into()
            }
        );
    }

    #[test]
    fn a_kill_restarts_after_its_duration() {
        let s = schedule("kill", &fault(Injection::KillReplica { replica: 2 }));
        assert_eq!(
            s[0].action,
            Action::Signal {
                role: Role::Replica(2),
                signal: "SIGKILL"
            }
        );
        assert_eq!(
            s[1],
            Step {
                at: Duration::from_secs(135),
                edge: Edge::Clear,
                action: Action::Start {
                    role: Role::Replica(2)
                }
            }
        );
    }

    #[test]
    fn a_freeze_freezes_its_replica_and_thaws_it_after_its_duration() {
        let s = schedule("freeze", &fault(Injection::FreezeReplica { replica: 2 }));
        let role = Role::Replica(2);
        assert_eq!(
            s,
            [
                Step {
                    at: Duration::from_secs(120),
                    edge: Edge::Apply,
                    action: Action::Freeze { role },
                },
                Step {
                    at: Duration::from_secs(135),
                    edge: Edge::Clear,
                    action: Action::Thaw { role },
                },
            ]
        );
        assert_eq!(
            s[0].action.describe(),
            ("freeze".into(), "replica-2".into())
        );
        assert_eq!(s[1].action.describe(), ("thaw".into(), "replica-2".into()));
    }

    #[test]
    fn a_stop_signals_then_awaits_the_exit_and_starts_the_replica_again() {
        let s = schedule(
            "stop",
            &fault(Injection::StopReplica {
                replica: 1,
                grace: PlanDuration::from_secs(10),
            }),
        );
        let role = Role::Replica(1);
        assert_eq!(
            s,
            [
                Step {
                    at: Duration::from_secs(120),
                    edge: Edge::Apply,
                    action: Action::Signal {
                        role,
                        signal: "SIGTERM"
                    },
                },
                Step {
                    at: Duration::from_secs(120),
                    edge: Edge::Apply,
                    action: Action::AwaitExit {
                        role,
                        grace: Duration::from_secs(10)
                    },
                },
                Step {
                    at: Duration::from_secs(135),
                    edge: Edge::Clear,
                    action: Action::Start { role },
                },
            ]
        );
    }

    #[test]
    fn the_co_tenant_starts_and_stops_with_its_window() {
        let s = schedule("steal", &fault(Injection::CpuSteal { cores: 0.5 }));
        let kinds: Vec<(Edge, &Action)> = s.iter().map(|x| (x.edge, &x.action)).collect();
        assert_eq!(
            kinds,
            [
                (
                    Edge::Apply,
                    &Action::Start {
                        role: Role::CoTenant
                    }
                ),
                (
                    Edge::Clear,
                    &Action::Stop {
                        role: Role::CoTenant
                    }
                ),
            ]
        );
    }

    #[test]
    fn the_co_tenant_burns_whole_workers_capped_to_the_share() {
        assert_eq!(
            co_tenant_args(0.5, Duration::from_secs(60)),
            ["--cpu", "1", "--timeout", "60s", "--metrics-brief"]
        );
        assert_eq!(co_tenant_args(1.5, Duration::from_secs(60))[1], "2");
    }
}
