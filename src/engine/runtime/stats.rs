//! The engine-API source: one `GET /containers/<name>/stats?stream=false&one-shot=true` per
//! container per second, for engines whose cgroup files this process cannot read (remote,
//! or in another mount namespace). Same row shape as the cgroup source; it cannot see OOM
//! kill counts (the stats carry none), and its memory limit without a cap is the host's
//! memory rather than empty.

use bollard::container::{Stats, StatsOptions};
use bollard::errors::Error as DockerError;
use futures_util::StreamExt;

use super::Runtime;
use crate::rundir::samples::Counters;

/// What one stats request gave.
#[derive(Debug)]
pub enum ApiReading {
    Counters(Counters),
    /// The engine answered for a container that is not running (zeroed stats) or absent.
    NotRunning,
    Failed(String),
}

impl Runtime {
    /// One one-shot stats reading of container `name`.
    pub async fn stats_once(&self, name: &str) -> ApiReading {
        read(self, name).await
    }
}

async fn read(rt: &Runtime, name: &str) -> ApiReading {
    let options = StatsOptions {
        stream: false,
        one_shot: true,
    };
    let mut stream = rt.docker.stats(name, Some(options));
    match stream.next().await {
        Some(Ok(s)) => counters(&s).map_or(ApiReading::NotRunning, ApiReading::Counters),
        Some(Err(DockerError::DockerResponseServerError {
            status_code: 404, ..
        })) => ApiReading::NotRunning,
        Some(Err(e)) => ApiReading::Failed(e.to_string()),
        None => ApiReading::Failed("the engine sent no stats".into()),
    }
}

/// The counters of a running container's stats; `None` for the zeroed stats the engine
/// returns for a stopped one (read time `0001-01-01…`).
fn counters(s: &Stats) -> Option<Counters> {
    if s.read.starts_with("0001-") {
        return None;
    }
    let cpu = &s.cpu_stats;
    let mem = &s.memory_stats;
    // Engines before API 1.21 send one `network`; later ones a map of interfaces.
    let (rx, tx) = s
        .networks
        .iter()
        .flat_map(|m| m.values())
        .chain(s.network.iter())
        .fold((0u64, 0u64), |(r, t), n| {
            (r.saturating_add(n.rx_bytes), t.saturating_add(n.tx_bytes))
        });
    let has_net = s.networks.as_ref().is_some_and(|n| !n.is_empty()) || s.network.is_some();
    Some(Counters {
        cpu_usage_ns: Some(cpu.cpu_usage.total_usage),
        cpu_user_ns: Some(cpu.cpu_usage.usage_in_usermode),
        cpu_system_ns: Some(cpu.cpu_usage.usage_in_kernelmode),
        cpu_periods: Some(cpu.throttling_data.periods),
        cpu_throttled_periods: Some(cpu.throttling_data.throttled_periods),
        cpu_throttled_ns: Some(cpu.throttling_data.throttled_time),
        memory_bytes: mem.usage,
        memory_limit_bytes: mem.limit.filter(|l| *l < 1 << 62),
        oom_kills: None,
        net_rx_bytes: has_net.then_some(rx),
        net_tx_bytes: has_net.then_some(tx),
    })
}
