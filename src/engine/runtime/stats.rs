//! The engine-API source: one `GET /containers/<name>/stats?stream=false&one-shot=true` per
//! container per second, for engines whose cgroup files this process cannot read (remote,
//! or in another mount namespace). Same row shape as the cgroup source; it cannot see OOM
//! kill counts (the stats carry none), and its memory limit without a cap is the host's
//! memory rather than empty.

use bollard::container::{MemoryStats, MemoryStatsStats, Stats, StatsOptions};
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
        memory_rss_bytes: resident(mem),
        memory_working_set_bytes: working_set(mem),
        memory_limit_bytes: mem.limit.filter(|l| *l < 1 << 62),
        oom_kills: None,
        net_rx_bytes: has_net.then_some(rx),
        net_tx_bytes: has_net.then_some(tx),
    })
}

/// Resident anonymous memory from the engine's copy of `memory.stat`: v1 `total_rss` (the
/// cgroup with its descendants), or `rss` where an engine left `total_rss` zero; v2 `anon`.
/// `None` when the stats carry no breakdown.
fn resident(mem: &MemoryStats) -> Option<u64> {
    match mem.stats.as_ref()? {
        MemoryStatsStats::V1(v1) if v1.total_rss > 0 => Some(v1.total_rss),
        MemoryStatsStats::V1(v1) => Some(v1.rss),
        MemoryStatsStats::V2(v2) => Some(v2.anon),
    }
}

/// Working-set memory from the engine's stats: `usage` less the inactive file pages of its
/// copy of `memory.stat` (v1 `total_inactive_file`, v2 `inactive_file`), as the cgroup
/// source computes it (`rundir::samples::working_set`).
fn working_set(mem: &MemoryStats) -> Option<u64> {
    let inactive = match mem.stats.as_ref()? {
        MemoryStatsStats::V1(v1) => v1.total_inactive_file,
        MemoryStatsStats::V2(v2) => v2.inactive_file,
    };
    Some(crate::rundir::samples::working_set(mem.usage?, inactive))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The memory part of a stats answer, as the engine sends it.
    fn memory(json: &str) -> MemoryStats {
        serde_json::from_str(json).expect("memory_stats")
    }

    const V1_KEYS: [&str; 31] = [
        "active_anon",
        "active_file",
        "cache",
        "dirty",
        "hierarchical_memory_limit",
        "inactive_anon",
        "inactive_file",
        "mapped_file",
        "pgfault",
        "pgmajfault",
        "pgpgin",
        "pgpgout",
        "rss",
        "rss_huge",
        "total_active_anon",
        "total_active_file",
        "total_cache",
        "total_dirty",
        "total_inactive_anon",
        "total_inactive_file",
        "total_mapped_file",
        "total_pgfault",
        "total_pgmajfault",
        "total_pgpgin",
        "total_pgpgout",
        "total_rss",
        "total_rss_huge",
        "total_unevictable",
        "total_writeback",
        "unevictable",
        "writeback",
    ];

    fn v1(rss: u64, total_rss: u64) -> String {
        let stats: Vec<String> = V1_KEYS
            .iter()
            .map(|k| {
                let v = match *k {
                    "rss" => rss,
                    "total_rss" => total_rss,
                    "cache" | "total_cache" => 40_000_000,
                    _ => 7,
                };
                format!("\"{k}\":{v}")
            })
            .collect();
        format!(
            "{{\"usage\":48000000,\"max_usage\":50000000,\"limit\":67108864,\"stats\":{{{}}}}}",
            stats.join(",")
        )
    }

    #[test]
    fn resident_memory_from_v1_stats() {
        let m = memory(&v1(5_000_000, 6_000_000));
        assert!(matches!(m.stats, Some(MemoryStatsStats::V1(_))), "{m:?}");
        assert_eq!(m.usage, Some(48_000_000));
        assert_eq!(resident(&m), Some(6_000_000));
        assert_eq!(resident(&memory(&v1(5_000_000, 0))), Some(5_000_000));
        // Working set: usage 48,000,000 less total_inactive_file 7.
        assert_eq!(working_set(&m), Some(47_999_993));
    }

    #[test]
    fn resident_memory_from_v2_stats() {
        let keys = [
            "anon",
            "file",
            "kernel_stack",
            "slab",
            "sock",
            "shmem",
            "file_mapped",
            "file_dirty",
            "file_writeback",
            "anon_thp",
            "inactive_anon",
            "active_anon",
            "inactive_file",
            "active_file",
            "unevictable",
            "slab_reclaimable",
            "slab_unreclaimable",
            "pgfault",
            "pgmajfault",
            "workingset_refault",
            "workingset_activate",
            "workingset_nodereclaim",
            "pgrefill",
            "pgscan",
            "pgsteal",
            "pgactivate",
            "pgdeactivate",
            "pglazyfree",
            "pglazyfreed",
            "thp_fault_alloc",
            "thp_collapse_alloc",
        ];
        let stats: Vec<String> = keys
            .iter()
            .map(|k| format!("\"{k}\":{}", if *k == "anon" { 3_000_000 } else { 9 }))
            .collect();
        let m = memory(&format!(
            "{{\"usage\":20000000,\"limit\":67108864,\"stats\":{{{}}}}}",
            stats.join(",")
        ));
        assert!(matches!(m.stats, Some(MemoryStatsStats::V2(_))), "{m:?}");
        assert_eq!(resident(&m), Some(3_000_000));
        // Working set: usage 20,000,000 less inactive_file 9.
        assert_eq!(working_set(&m), Some(19_999_991));
    }

    #[test]
    fn no_breakdown_no_resident_memory() {
        // A stopped container's stats, and engines (Windows) without the breakdown.
        assert_eq!(resident(&memory("{}")), None);
        assert_eq!(resident(&memory("{\"usage\":1}")), None);
        assert_eq!(working_set(&memory("{\"usage\":1}")), None);
    }
}
