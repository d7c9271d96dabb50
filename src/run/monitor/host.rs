//! The host probe: each tick, after the containers, the whole machine's CPU (`/proc/stat`),
//! its load average, feedbench's own CPU (`/proc/self/stat`) and the engine's daemons' (every
//! process named in `rundir::host::ENGINE_PROCESSES`), as the interval since the previous
//! tick. The study's share comes from the same tick's container rows; what is left is the
//! CPU used outside the study (docs/results.md, "host.csv").

use std::collections::BTreeMap;

use tokio::time::Instant;

use super::grid::ReadStamp;
use crate::rundir::host::{
    parse_loadavg, parse_pid_stat, parse_proc_stat, HostRow, ProcStat, ENGINE_PROCESSES,
};

/// The host's counters at one read, in clock ticks.
#[derive(Debug, Clone, Copy)]
struct Read {
    tick: u64,
    at: Instant,
    stat: ProcStat,
    own: u64,
}

pub struct HostProbe {
    /// `USER_HZ`: the clock ticks a second of `/proc/stat` and `/proc/<pid>/stat`.
    hz: u64,
    prev: Option<Read>,
    /// The engine's daemons at the previous read: pid → (start ticks, CPU ticks); `None`
    /// before the first read, or after `/proc` could not be listed.
    engine: Option<BTreeMap<u32, (u64, u64)>>,
}

impl HostProbe {
    pub fn new() -> HostProbe {
        // SAFETY: sysconf reads a constant of the C library; it has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        HostProbe {
            hz: u64::try_from(hz).ok().filter(|h| *h > 0).unwrap_or(100),
            prev: None,
            engine: None,
        }
    }

    fn ns(&self, ticks: u64) -> u64 {
        ticks.saturating_mul(1_000_000_000) / self.hz
    }

    /// This tick's row. `study_ns` is the study's containers' CPU since the previous tick
    /// (`None` when some container's could not be told).
    pub fn sample(&mut self, tick: u64, stamp: ReadStamp, study_ns: Option<u64>) -> HostRow {
        let mut row = HostRow {
            unix_ns: stamp.unix_ns,
            offset_s: stamp.offset_s,
            tick,
            ..Default::default()
        };
        let engine = self.engine_ticks();
        let read = match read_now(tick, stamp.at) {
            Ok(r) => r,
            Err(e) => {
                row.detail = e;
                self.prev = None;
                return row;
            }
        };
        row.ok = true;
        row.logical_cpus = read.stat.logical_cpus;
        match std::fs::read_to_string("/proc/loadavg")
            .map_err(|e| e.to_string())
            .and_then(|t| parse_loadavg(&t))
        {
            Ok(l) => row.load1 = Some(l),
            Err(e) => row.detail = format!("/proc/loadavg: {e}"),
        }
        // Figures of an interval need the previous tick's read: after a skipped or failed
        // one, this row only restarts the count.
        if let Some(p) = self.prev.filter(|p| p.tick + 1 == tick) {
            let d = |now: u64, then: u64| Some(self.ns(now.saturating_sub(then)));
            row.interval_ns = Some(read.at.duration_since(p.at).as_nanos() as u64);
            row.busy_ns = d(read.stat.busy, p.stat.busy);
            row.iowait_ns = d(read.stat.iowait, p.stat.iowait);
            row.steal_ns = d(read.stat.steal, p.stat.steal);
            row.feedbench_ns = d(read.own, p.own);
            row.engine_ns = engine.map(|t| self.ns(t));
            row.study_ns = study_ns;
        }
        self.prev = Some(read);
        row
    }

    /// The engine's daemons' CPU ticks since the previous call, counting only processes seen
    /// both times (a pid with the same start): one that started or ended in between is left
    /// out, and its share shows as used outside the study. `None` on the first call or
    /// when `/proc` cannot be listed; `Some(0)` on a host with no such process.
    fn engine_ticks(&mut self) -> Option<u64> {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            self.engine = None;
            return None;
        };
        let mut now = BTreeMap::new();
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            // A process that exits between the listing and the read is simply not counted.
            let Ok(text) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            if let Ok(p) = parse_pid_stat(&text) {
                if ENGINE_PROCESSES.contains(&p.comm.as_str()) {
                    now.insert(pid, (p.start_ticks, p.cpu_ticks));
                }
            }
        }
        let used = self.engine.as_ref().map(|before| {
            now.iter()
                .filter_map(|(pid, (start, ticks))| match before.get(pid) {
                    Some((s, t)) if s == start => Some(ticks.saturating_sub(*t)),
                    _ => None,
                })
                .sum()
        });
        self.engine = Some(now);
        used
    }
}

/// `/proc/stat` and feedbench's own `/proc/self/stat`, now.
fn read_now(tick: u64, at: Instant) -> Result<Read, String> {
    let read = |p: &str| std::fs::read_to_string(p).map_err(|e| format!("{p}: {e}"));
    let stat = parse_proc_stat(&read("/proc/stat")?).map_err(|e| format!("/proc/stat: {e}"))?;
    let own = parse_pid_stat(&read("/proc/self/stat")?)
        .map_err(|e| format!("/proc/self/stat: {e}"))?
        .cpu_ticks;
    Ok(Read {
        tick,
        at,
        stat,
        own,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp() -> ReadStamp {
        ReadStamp {
            at: Instant::now(),
            unix_ns: 1,
            offset_s: 0.0,
        }
    }

    #[test]
    fn the_first_row_restarts_the_count_and_the_next_has_every_figure() {
        let mut p = HostProbe::new();
        let first = p.sample(0, stamp(), Some(5));
        assert!(first.ok, "{}", first.detail);
        assert!(first.logical_cpus >= 1);
        assert_eq!(
            (first.interval_ns, first.busy_ns, first.study_ns),
            (None, None, None)
        );
        // Burn CPU in this process until the kernel has charged it a tick.
        let own = || {
            parse_pid_stat(&std::fs::read_to_string("/proc/self/stat").unwrap())
                .unwrap()
                .cpu_ticks
        };
        let before = own();
        let mut x = 0u64;
        while own() == before {
            for _ in 0..100_000 {
                x = x.wrapping_add(std::hint::black_box(1));
            }
        }
        let second = p.sample(1, stamp(), Some(5));
        assert!(x > 0);
        assert!(second.interval_ns.is_some_and(|i| i > 0));
        assert!(second.busy_ns.is_some() && second.steal_ns.is_some());
        assert!(second.feedbench_ns.is_some_and(|n| n > 0), "{second:?}");
        assert!(second.engine_ns.is_some());
        assert_eq!(second.study_ns, Some(5));
        // A skipped tick: no interval.
        let third = p.sample(3, stamp(), Some(5));
        assert_eq!((third.interval_ns, third.study_ns), (None, None));
    }
}
