//! HAProxy's stats, read from its CSV endpoint: per-server status and counters.

use crate::rundir::health::{self, HealthRow};

use std::net::SocketAddr;
use std::time::Duration;

use super::http::{request, HttpError};

/// One server row of HAProxy's stats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStat {
    pub backend: String,
    pub server: String,
    /// `UP`, `DOWN`, `UP 1/2`, `NOLB`, `MAINT`, …
    pub status: String,
    /// The last check's status, e.g. `L7OK`, `L4CON`.
    pub check_status: String,
    pub current_sessions: u64,
    pub retries: u64,
    pub redispatches: u64,
    pub responses_5xx: u64,
}

/// Parses `/stats;csv`: the header names the columns, so their order does not matter.
pub fn parse_stats_csv(text: &str) -> Result<Vec<ServerStat>, String> {
    let mut lines = text.lines();
    let header = lines
        .next()
        .and_then(|h| h.strip_prefix("# "))
        .ok_or("the stats have no `# pxname,…` header")?;
    let cols: Vec<&str> = header.split(',').collect();
    let col = |name: &str| {
        cols.iter()
            .position(|c| *c == name)
            .ok_or_else(|| format!("the stats have no `{name}` column"))
    };
    let (px, sv, st, chk, scur, wretr, wredis, h5) = (
        col("pxname")?,
        col("svname")?,
        col("status")?,
        col("check_status")?,
        col("scur")?,
        col("wretr")?,
        col("wredis")?,
        col("hrsp_5xx")?,
    );
    let num = |f: &[&str], i: usize| f.get(i).and_then(|v| v.parse().ok()).unwrap_or(0);
    Ok(lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f.len() > sv && !matches!(f[sv], "FRONTEND" | "BACKEND"))
        .map(|f| ServerStat {
            backend: f[px].to_string(),
            server: f[sv].to_string(),
            status: f.get(st).unwrap_or(&"").to_string(),
            check_status: f.get(chk).unwrap_or(&"").to_string(),
            current_sessions: num(&f, scur),
            retries: num(&f, wretr),
            redispatches: num(&f, wredis),
            responses_5xx: num(&f, h5),
        })
        .collect())
}

/// The frontend's traffic counters and the backend's recent response time.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Traffic {
    /// HTTP requests the frontend received, ever.
    pub requests: u64,
    /// 5xx responses the frontend sent, ever.
    pub responses_5xx: u64,
    /// The backend's average response time over its last 1024 requests, in ms (`rtime`).
    pub avg_response_ms: u64,
}

/// Reads the traffic figures from `/stats;csv` text (the `contenders` frontend and the
/// `replicas` backend of feedbench's configuration).
pub fn parse_traffic(text: &str) -> Option<Traffic> {
    let mut lines = text.lines();
    let cols: Vec<&str> = lines.next()?.strip_prefix("# ")?.split(',').collect();
    let col = |name: &str| cols.iter().position(|c| *c == name);
    let (px, sv, req, h5, rtime) = (
        col("pxname")?,
        col("svname")?,
        col("req_tot")?,
        col("hrsp_5xx")?,
        col("rtime")?,
    );
    let mut t = Traffic::default();
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        match (f.get(px).copied(), f.get(sv).copied()) {
            (Some("contenders"), Some("FRONTEND")) => {
                t.requests = num(req);
                t.responses_5xx = num(h5);
            }
            (Some("replicas"), Some("BACKEND")) => t.avg_response_ms = num(rtime),
            _ => {}
        }
    }
    Some(t)
}

pub async fn traffic(addr: SocketAddr, timeout: Duration) -> Option<Traffic> {
    let r = request(addr, "GET", "/stats;csv", None, timeout)
        .await
        .ok()?;
    parse_traffic(&r.text())
}

/// Fetches and parses the stats.
pub async fn stats(addr: SocketAddr, timeout: Duration) -> Result<Vec<ServerStat>, String> {
    let r = request(addr, "GET", "/stats;csv", None, timeout)
        .await
        .map_err(|e: HttpError| e.to_string())?;
    if r.status != 200 {
        return Err(format!("the stats page answered {}", r.status));
    }
    parse_stats_csv(&r.text())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_server_rows_by_column_name() {
        let csv = "# pxname,svname,qcur,scur,wretr,wredis,status,check_status,hrsp_5xx,\n\
                   contenders,FRONTEND,,3,,,OPEN,,0,\n\
                   replicas,replica-1,0,2,1,1,UP,L7OK,4,\n\
                   replicas,replica-2,0,0,0,0,DOWN,L4CON,0,\n\
                   replicas,BACKEND,0,2,1,1,UP,,4,\n";
        let rows = parse_stats_csv(csv).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].server, "replica-1");
        assert_eq!(
            (
                rows[0].current_sessions,
                rows[0].retries,
                rows[0].redispatches,
                rows[0].responses_5xx
            ),
            (2, 1, 1, 4)
        );
        assert_eq!(
            (rows[1].status.as_str(), rows[1].check_status.as_str()),
            ("DOWN", "L4CON")
        );
        assert!(parse_stats_csv("no header").is_err());
    }
}

/// A server's state change as HAProxy logged it (`option log-health-checks`).
/// Reads "Server <backend>/<server> is UP|DOWN" lines from a timestamped container log
/// (`2026-11-30T04:22:25.018058980Z …`). Each change appears once (HAProxy prints it to
/// two outputs; repeats at the same instant are dropped).
pub fn transitions(log: &str) -> Vec<HealthRow> {
    let mut out: Vec<HealthRow> = Vec::new();
    for line in log.lines() {
        let Some((stamp, text)) = line.split_once(' ') else {
            continue;
        };
        let Some(rest) = text.split("Server ").nth(1) else {
            continue;
        };
        let Some((name, tail)) = rest.split_once(" is ") else {
            continue;
        };
        let state = if tail.starts_with("UP") {
            "UP"
        } else if tail.starts_with("DOWN") {
            "DOWN"
        } else {
            continue;
        };
        let Some(wall_ns) = rfc3339_ns(stamp) else {
            continue;
        };
        let server = health::server_name(name).to_string();
        let repeat = out
            .iter()
            .rev()
            .find(|t| t.server == server)
            .is_some_and(|t| t.state == state && (wall_ns - t.wall_ns).abs() < 1_000_000);
        if !repeat {
            out.push(HealthRow {
                wall_ns,
                server,
                state: state.to_string(),
            });
        }
    }
    out
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction]Z` as unix nanoseconds.
pub fn rfc3339_ns(s: &str) -> Option<i128> {
    let s = s.strip_suffix('Z')?;
    let (date, time) = s.split_once('T')?;
    let mut d = date.split('-').map(|x| x.parse::<i64>());
    let (y, m, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut t = hms.split(':').map(|x| x.parse::<i64>());
    let (h, mi, sec) = (t.next()?.ok()?, t.next()?.ok()?, t.next()?.ok()?);
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let mut nanos: i128 = 0;
    if !frac.is_empty() {
        let digits: String = frac.chars().take(9).collect();
        nanos = digits.parse::<i128>().ok()? * 10i128.pow(9 - digits.len() as u32);
    }
    Some(((days * 86_400 + h * 3600 + mi * 60 + sec) as i128) * 1_000_000_000 + nanos)
}

#[cfg(test)]
mod log_tests {
    use super::*;

    #[test]
    fn timestamps_and_transitions_are_read_from_the_log() {
        assert_eq!(
            rfc3339_ns("1970-01-02T00:00:01.5Z"),
            Some(86_401_500_000_000)
        );
        assert_eq!(
            rfc3339_ns("2026-11-30T04:22:23.327022523Z"),
            Some(1_796_012_543_327_022_523)
        );
        let log = "2026-11-30T04:22:25.018058980Z Server replicas/replica-1 is DOWN. 1 active left.\n\
                   2026-11-30T04:22:25.018263206Z [WARNING]  (8) : Server replicas/replica-1 is DOWN. 1 active left.\n\
                   2026-11-30T04:22:25.100000000Z Health check for server replicas/replica-1 failed, status: 0/1 DOWN.\n\
                   2026-11-30T04:22:32.037496092Z [WARNING]  (8) : Server replicas/replica-1 is UP. 2 active.\n";
        let t = transitions(log);
        assert_eq!(t.len(), 2);
        assert_eq!(
            (t[0].server.as_str(), t[0].state.as_str()),
            ("replica-1", "DOWN")
        );
        assert_eq!(t[1].wall_ns - t[0].wall_ns, 7_019_437_112);
    }
}
