//! The balancer poller: HAProxy's `/stats;csv` every second, one row per server, in its own
//! task so that a slow or dead balancer never delays the container samples.

use std::net::SocketAddr;

use tokio::sync::watch;

use super::csv::CsvFile;
use super::error::MonitorError;
use super::grid::{TickGrid, Timing};
use super::BalancerSummary;
use crate::engine::balancer::stats;
use crate::rundir::samples::BalancerRow;

pub struct Poller {
    pub addr: SocketAddr,
    pub clock: TickGrid,
    pub out: CsvFile,
    pub latest: watch::Sender<Vec<BalancerRow>>,
}

impl Poller {
    /// Polls until `stop`, on the sampler's grid (`TickGrid::ticks`). A poll gets 80% of a
    /// period, so a hung balancer costs one tick, never a queue of them.
    pub async fn run(
        mut self,
        stop: watch::Receiver<bool>,
    ) -> Result<BalancerSummary, MonitorError> {
        let timeout = self.clock.period.mul_f64(0.8);
        let mut timing = Timing::default();
        let mut summary = BalancerSummary::default();
        let mut ticks = self.clock.ticks(stop);
        while let Some((tick, scheduled)) = ticks.next().await {
            let result = stats(self.addr, timeout).await;
            let stamp = self.clock.stamp();
            timing.record(tick, stamp.at.saturating_duration_since(scheduled));
            let row = |backend: String, server: String| BalancerRow {
                unix_ns: stamp.unix_ns,
                offset_s: stamp.offset_s,
                tick,
                backend,
                server,
                status: String::new(),
                check_status: String::new(),
                current_sessions: None,
                retries: None,
                redispatches: None,
                responses_5xx: None,
                error: String::new(),
            };
            let rows: Vec<BalancerRow> = match result {
                Ok(servers) => {
                    summary.polls += 1;
                    servers
                        .into_iter()
                        .map(|s| BalancerRow {
                            status: s.status,
                            check_status: s.check_status,
                            current_sessions: Some(s.current_sessions),
                            retries: Some(s.retries),
                            redispatches: Some(s.redispatches),
                            responses_5xx: Some(s.responses_5xx),
                            ..row(s.backend, s.server)
                        })
                        .collect()
                }
                Err(e) => {
                    summary.failed += 1;
                    vec![BalancerRow {
                        error: e,
                        ..row(String::new(), String::new())
                    }]
                }
            };
            for r in &rows {
                r.write_csv(&mut self.out.batch);
            }
            self.latest.send_replace(rows);
            self.out.flush_batch()?;
        }
        summary.skipped_ticks = timing.skipped;
        summary.max_lateness_s = timing.max_lateness.as_secs_f64();
        Ok(summary)
    }
}
