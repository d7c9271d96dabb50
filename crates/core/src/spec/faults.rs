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

/// The timed actions of one fault, in time order.
pub fn schedule(name: &str, fault: &Fault) -> Vec<Step> {
    let at = Duration::from_millis(fault.at.millis);
    let end = at + Duration::from_millis(fault.duration.millis);
    let step = |at, edge, action| Step { at, edge, action };
    let toxic_name = format!("feedbench-{name}");
    match &fault.inject {
        Injection::KillReplica { replica } => vec![
            step(
                at,
                Edge::Apply,
                Action::Signal {
                    role: Role::Replica(*replica),
                    signal: "SIGKILL",
                },
            ),
            step(
                end,
                Edge::Clear,
                Action::Start {
                    role: Role::Replica(*replica),
                },
            ),
        ],
        Injection::StopReplica { replica, grace } => vec![
            step(
                at,
                Edge::Apply,
                Action::Signal {
                    role: Role::Replica(*replica),
                    signal: "SIGTERM",
                },
            ),
            step(
                at,
                Edge::Apply,
                Action::AwaitExit {
                    role: Role::Replica(*replica),
                    grace: Duration::from_millis(grace.millis),
                },
            ),
            step(
                end,
                Edge::Clear,
                Action::Start {
                    role: Role::Replica(*replica),
                },
            ),
        ],
        Injection::CpuSteal { .. } => vec![
            step(
                at,
                Edge::Apply,
                Action::Start {
                    role: Role::CoTenant,
                },
            ),
            step(
                end,
                Edge::Clear,
                Action::Stop {
                    role: Role::CoTenant,
                },
            ),
        ],
        Injection::LinkLatency {
            link,
            latency,
            jitter,
        } => vec![
            step(
                at,
                Edge::Apply,
                Action::AddToxic {
                    proxy: link.to_string(),
                    name: toxic_name.clone(),
                    kind: "latency".into(),
                    stream: "downstream".into(),
                    toxicity: 1.0,
                    attributes: json!({"latency": latency.millis, "jitter": jitter.millis}),
                },
            ),
            step(
                end,
                Edge::Clear,
                Action::RemoveToxic {
                    proxy: link.to_string(),
                    name: toxic_name,
                },
            ),
        ],
        Injection::LinkDown { link } => vec![
            step(
                at,
                Edge::Apply,
                Action::Link {
                    proxy: link.to_string(),
                    enabled: false,
                },
            ),
            step(
                end,
                Edge::Clear,
                Action::Link {
                    proxy: link.to_string(),
                    enabled: true,
                },
            ),
        ],
        Injection::Toxic {
            link,
            toxic_type,
            stream,
            toxicity,
            attributes,
        } => vec![
            step(
                at,
                Edge::Apply,
                Action::AddToxic {
                    proxy: link.to_string(),
                    name: toxic_name.clone(),
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
                },
            ),
            step(
                end,
                Edge::Clear,
                Action::RemoveToxic {
                    proxy: link.to_string(),
                    name: toxic_name,
                },
            ),
        ],
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
    fn the_co_tenant_burns_whole_workers_capped_to_the_share() {
        assert_eq!(
            co_tenant_args(0.5, Duration::from_secs(60)),
            ["--cpu", "1", "--timeout", "60s", "--metrics-brief"]
        );
        assert_eq!(co_tenant_args(1.5, Duration::from_secs(60))[1], "2");
    }
}
