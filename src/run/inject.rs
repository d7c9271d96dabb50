//! A fault's actions performed on the run's containers (signals, starts, stops, freezes) and on the
//! fault proxy (links and toxics), and what puts each back.

use std::time::{Duration, Instant};

use crate::engine::fault_proxy::FaultProxy;
use crate::engine::runtime::Runtime;
use crate::spec::faults::Action;
use crate::spec::topology::{Role, RunTopology};

/// What puts an applied action back, when the run ends inside a fault's window.
pub(super) fn undo(action: &Action) -> Option<Action> {
    match action {
        Action::Signal { role, .. } | Action::AwaitExit { role, .. } => {
            Some(Action::Start { role: *role })
        }
        Action::Start {
            role: Role::CoTenant,
        } => Some(Action::Stop {
            role: Role::CoTenant,
        }),
        Action::Freeze { role } => Some(Action::Thaw { role: *role }),
        Action::Link {
            proxy,
            enabled: false,
        } => Some(Action::Link {
            proxy: proxy.clone(),
            enabled: true,
        }),
        Action::AddToxic { proxy, name, .. } => Some(Action::RemoveToxic {
            proxy: proxy.clone(),
            name: name.clone(),
        }),
        _ => None,
    }
}

/// Performs one action; the error is the reason the fault-failed event gives.
pub(super) async fn perform(
    rt: &Runtime,
    topo: &RunTopology,
    fp: Option<&FaultProxy>,
    action: &Action,
) -> Result<(), String> {
    let name = |role: Role| {
        topo.container(role)
            .map(|c| c.name.clone())
            .ok_or_else(|| format!("the run has no {}", role.key()))
    };
    let proxy = || fp.ok_or_else(|| "the fault proxy has no address".to_string());
    match action {
        Action::Signal { role, signal } => rt
            .kill(&name(*role)?, signal)
            .await
            .map_err(|e| e.to_string()),
        Action::AwaitExit { role, grace } => {
            let n = name(*role)?;
            let until = Instant::now() + *grace;
            while Instant::now() < until {
                if let Ok((false, _)) = rt.state(&n).await {
                    return Ok(());
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            rt.kill(&n, "SIGKILL").await.map_err(|e| e.to_string())?;
            Err(format!(
                "`{n}` did not exit within {:.1} s of SIGTERM and was killed",
                grace.as_secs_f64()
            ))
        }
        Action::Start { role } => rt.start(&name(*role)?).await.map_err(|e| e.to_string()),
        Action::Stop { role } => rt
            .kill(&name(*role)?, "SIGKILL")
            .await
            .map_err(|e| e.to_string()),
        Action::Freeze { role } => rt.freeze(&name(*role)?).await.map_err(|e| e.to_string()),
        Action::Thaw { role } => rt.thaw(&name(*role)?).await.map_err(|e| e.to_string()),
        Action::Link { proxy: p, enabled } => proxy()?
            .set_enabled(p, *enabled)
            .await
            .map_err(|e| e.to_string()),
        Action::AddToxic {
            proxy: p,
            name: n,
            kind,
            stream,
            toxicity,
            attributes,
        } => proxy()?
            .add_toxic(p, n, kind, stream, *toxicity, attributes.clone())
            .await
            .map_err(|e| e.to_string()),
        Action::RemoveToxic { proxy: p, name: n } => {
            proxy()?.remove_toxic(p, n).await.map_err(|e| e.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What each applying action leaves behind is put back by the action that clears it;
    /// an action that itself puts something back has nothing to undo.
    #[test]
    fn each_applying_action_is_put_back_and_a_clearing_one_is_not_undone() {
        let link = |enabled| Action::Link {
            proxy: "db".into(),
            enabled,
        };
        let cases = [
            (
                Action::Signal {
                    role: Role::Replica(1),
                    signal: "SIGKILL",
                },
                Some(Action::Start {
                    role: Role::Replica(1),
                }),
            ),
            (
                Action::AwaitExit {
                    role: Role::Database,
                    grace: Duration::from_secs(5),
                },
                Some(Action::Start {
                    role: Role::Database,
                }),
            ),
            (
                Action::Start {
                    role: Role::CoTenant,
                },
                Some(Action::Stop {
                    role: Role::CoTenant,
                }),
            ),
            (
                Action::Freeze {
                    role: Role::Replica(1),
                },
                Some(Action::Thaw {
                    role: Role::Replica(1),
                }),
            ),
            (
                Action::Thaw {
                    role: Role::Replica(1),
                },
                None,
            ),
            (link(false), Some(link(true))),
            (
                Action::AddToxic {
                    proxy: "db".into(),
                    name: "feedbench-slow".into(),
                    kind: "latency".into(),
                    stream: "downstream".into(),
                    toxicity: 1.0,
                    attributes: serde_json::json!({"latency": 200}),
                },
                Some(Action::RemoveToxic {
                    proxy: "db".into(),
                    name: "feedbench-slow".into(),
                }),
            ),
            (link(true), None),
            (
                Action::RemoveToxic {
                    proxy: "db".into(),
                    name: "feedbench-slow".into(),
                },
                None,
            ),
            (
                Action::Start {
                    role: Role::Replica(1),
                },
                None,
            ),
            (
                Action::Stop {
                    role: Role::CoTenant,
                },
                None,
            ),
        ];
        for (action, put_back) in cases {
            assert_eq!(undo(&action), put_back, "{action:?}");
        }
    }
}
