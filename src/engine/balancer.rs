//! HAProxy's stats, read from its CSV endpoint: per-server status and counters.

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
        assert_eq!((rows[0].current_sessions, rows[0].retries, rows[0].redispatches, rows[0].responses_5xx), (2, 1, 1, 4));
        assert_eq!((rows[1].status.as_str(), rows[1].check_status.as_str()), ("DOWN", "L4CON"));
        assert!(parse_stats_csv("no header").is_err());
    }
}
