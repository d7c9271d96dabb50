//! The rows the monitors record, and their tidy CSV form (one header, one observation per
//! line; see docs/results.md, "containers.csv and balancer.csv").

use std::fmt::Write as _;

/// Whether a container sample holds counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleStatus {
    /// The counters were read.
    Ok,
    /// The container is not running (not started yet, killed, exited or removed): a gap.
    Down,
    /// The container runs but its counters could not be read.
    Error,
}

impl SampleStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SampleStatus::Ok => "ok",
            SampleStatus::Down => "down",
            SampleStatus::Error => "error",
        }
    }
}

/// The counters of one read; every one is cumulative except the memory figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    pub cpu_usage_ns: Option<u64>,
    pub cpu_user_ns: Option<u64>,
    pub cpu_system_ns: Option<u64>,
    pub cpu_periods: Option<u64>,
    pub cpu_throttled_periods: Option<u64>,
    pub cpu_throttled_ns: Option<u64>,
    /// Memory charged to the cgroup, page cache included.
    pub memory_bytes: Option<u64>,
    /// Resident anonymous memory, without page cache: v1 `memory.stat` `total_rss`, v2
    /// `anon`.
    pub memory_rss_bytes: Option<u64>,
    /// Working-set memory: `memory_bytes` less inactive file pages (v1 `memory.stat`
    /// `total_inactive_file`, v2 `inactive_file`), as `docker stats` and the kubelet compute
    /// it; `None` when `memory.stat` has no inactive-file figure.
    pub memory_working_set_bytes: Option<u64>,
    /// `None`: no limit (or unknown).
    pub memory_limit_bytes: Option<u64>,
    pub oom_kills: Option<u64>,
    pub net_rx_bytes: Option<u64>,
    pub net_tx_bytes: Option<u64>,
}

/// Working-set memory: the cgroup's usage (v1 `memory.usage_in_bytes`, v2
/// `memory.current`) less its inactive file pages, as `docker stats` and the kubelet compute
/// it; the usage itself when the inactive pages are not below it. The page cache the kernel
/// would reclaim first is out; anonymous memory, kernel memory and the active page cache a
/// process keeps touching are in.
pub fn working_set(usage: u64, inactive_file: u64) -> u64 {
    if inactive_file < usage {
        usage - inactive_file
    } else {
        usage
    }
}

/// One container at one second.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerRow {
    /// Wall-clock time of the read, ns since the Unix epoch.
    pub unix_ns: u64,
    /// Monotonic seconds since the monitors started, at the read.
    pub offset_s: f64,
    /// The scheduled second the read belongs to (0, 1, 2, …); a missing number is a skipped
    /// tick. `offset_s - tick` is the read's lateness.
    pub tick: u64,
    pub container: String,
    pub role: String,
    /// `cgroup` or `engine-api`.
    pub source: &'static str,
    pub status: SampleStatus,
    pub counters: Counters,
    /// Why a row is `down` or `error`; empty when `ok`.
    pub detail: String,
}

/// One HAProxy server at one second, or (with `server` empty and `error` set) a failed poll.
#[derive(Debug, Clone, PartialEq)]
pub struct BalancerRow {
    pub unix_ns: u64,
    pub offset_s: f64,
    pub tick: u64,
    pub backend: String,
    pub server: String,
    pub status: String,
    pub check_status: String,
    pub current_sessions: Option<u64>,
    pub retries: Option<u64>,
    pub redispatches: Option<u64>,
    pub responses_5xx: Option<u64>,
    pub error: String,
}

pub const CONTAINERS_HEADER: &str = "unix_ns,offset_s,tick,container,role,source,status,\
cpu_usage_s,cpu_user_s,cpu_system_s,cpu_periods,cpu_throttled_periods,cpu_throttled_s,\
memory_bytes,memory_rss_bytes,memory_working_set_bytes,memory_limit_bytes,oom_kills,\
net_rx_bytes,net_tx_bytes,detail";

pub const BALANCER_HEADER: &str = "unix_ns,offset_s,tick,backend,server,status,check_status,\
current_sessions,retries,redispatches,responses_5xx,error";

/// A field quoted as RFC 4180 wants when it holds a comma, quote or line break (also used
/// by the report's metrics.csv).
pub fn text(out: &mut String, s: &str) {
    if s.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&s.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(s);
    }
}

fn num(out: &mut String, v: Option<u64>) {
    if let Some(v) = v {
        let _ = write!(out, "{v}");
    }
}

/// Nanoseconds as exact decimal seconds.
fn secs(out: &mut String, ns: Option<u64>) {
    if let Some(ns) = ns {
        let _ = write!(out, "{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000);
    }
}

impl ContainerRow {
    /// Appends the row's CSV line, with its newline.
    pub fn write_csv(&self, out: &mut String) {
        let c = &self.counters;
        let _ = write!(out, "{},{:.6},{},", self.unix_ns, self.offset_s, self.tick);
        text(out, &self.container);
        out.push(',');
        text(out, &self.role);
        let _ = write!(out, ",{},{},", self.source, self.status.as_str());
        secs(out, c.cpu_usage_ns);
        out.push(',');
        secs(out, c.cpu_user_ns);
        out.push(',');
        secs(out, c.cpu_system_ns);
        out.push(',');
        num(out, c.cpu_periods);
        out.push(',');
        num(out, c.cpu_throttled_periods);
        out.push(',');
        secs(out, c.cpu_throttled_ns);
        for v in [
            c.memory_bytes,
            c.memory_rss_bytes,
            c.memory_working_set_bytes,
            c.memory_limit_bytes,
            c.oom_kills,
            c.net_rx_bytes,
            c.net_tx_bytes,
        ] {
            out.push(',');
            num(out, v);
        }
        out.push(',');
        text(out, &self.detail);
        out.push('\n');
    }
}

impl BalancerRow {
    /// Appends the row's CSV line, with its newline.
    pub fn write_csv(&self, out: &mut String) {
        let _ = write!(out, "{},{:.6},{}", self.unix_ns, self.offset_s, self.tick);
        for s in [
            &self.backend,
            &self.server,
            &self.status,
            &self.check_status,
        ] {
            out.push(',');
            text(out, s);
        }
        for v in [
            self.current_sessions,
            self.retries,
            self.redispatches,
            self.responses_5xx,
        ] {
            out.push(',');
            num(out, v);
        }
        out.push(',');
        text(out, &self.error);
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_rows_match_the_header() {
        let row = ContainerRow {
            unix_ns: 1_700_000_000_123_456_789,
            offset_s: 2.0012,
            tick: 2,
            container: "fb-s-r-replica-1".into(),
            role: "replica".into(),
            source: "cgroup",
            status: SampleStatus::Ok,
            counters: Counters {
                cpu_usage_ns: Some(1_500_000_001),
                cpu_throttled_ns: Some(42),
                memory_bytes: Some(4096),
                memory_rss_bytes: Some(1024),
                memory_working_set_bytes: Some(2048),
                ..Default::default()
            },
            detail: String::new(),
        };
        let mut line = String::new();
        row.write_csv(&mut line);
        assert_eq!(
            line,
            "1700000000123456789,2.001200,2,fb-s-r-replica-1,replica,cgroup,ok,1.500000001,,,,,0.000000042,4096,1024,2048,,,,,\n"
        );
        assert_eq!(
            line.split(',').count(),
            CONTAINERS_HEADER.split(',').count()
        );
        let by_name: Vec<(&str, &str)> = CONTAINERS_HEADER
            .split(',')
            .zip(line.trim_end().split(','))
            .collect();
        let at = by_name
            .iter()
            .position(|(k, _)| *k == "memory_bytes")
            .unwrap();
        assert_eq!(
            &by_name[at..at + 4],
            &[
                ("memory_bytes", "4096"),
                ("memory_rss_bytes", "1024"),
                ("memory_working_set_bytes", "2048"),
                ("memory_limit_bytes", "")
            ]
        );
        let down = ContainerRow {
            status: SampleStatus::Down,
            detail: "exited, code 137".into(),
            counters: Counters::default(),
            ..row
        };
        line.clear();
        down.write_csv(&mut line);
        assert!(
            line.ends_with(",down,,,,,,,,,,,,,,\"exited, code 137\"\n"),
            "{line}"
        );
    }

    #[test]
    fn balancer_rows_match_the_header() {
        let row = BalancerRow {
            unix_ns: 1,
            offset_s: 0.5,
            tick: 0,
            backend: "replicas".into(),
            server: "replica-1".into(),
            status: "UP".into(),
            check_status: "L7OK".into(),
            current_sessions: Some(3),
            retries: Some(0),
            redispatches: Some(1),
            responses_5xx: Some(7),
            error: String::new(),
        };
        let mut line = String::new();
        row.write_csv(&mut line);
        assert_eq!(line, "1,0.500000,0,replicas,replica-1,UP,L7OK,3,0,1,7,\n");
        assert_eq!(line.split(',').count(), BALANCER_HEADER.split(',').count());
    }
}
