//! Time for the monitors, apart from a run's event clock (`rundir::events`): the tick grid
//! with one monotonic origin shared by every task, wall-clock stamps of each read, the tick a
//! read belongs to, and how late reads are.

use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::watch;
use tokio::time::{interval_at, Instant, Interval, MissedTickBehavior};

/// Nanoseconds since the Unix epoch, now (0 if the clock is before 1970).
pub fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// When a read completed.
#[derive(Debug, Clone, Copy)]
pub struct ReadStamp {
    pub at: Instant,
    pub unix_ns: u64,
    pub offset_s: f64,
}

/// The monitors' shared origin: tick `k` is scheduled at `origin + k * period`.
#[derive(Debug, Clone, Copy)]
pub struct TickGrid {
    pub origin: Instant,
    pub period: Duration,
}

impl TickGrid {
    pub fn new(period: Duration) -> Self {
        TickGrid {
            origin: Instant::now(),
            period,
        }
    }

    pub fn stamp(&self) -> ReadStamp {
        let at = Instant::now();
        ReadStamp {
            at,
            unix_ns: unix_ns(),
            offset_s: at.duration_since(self.origin).as_secs_f64(),
        }
    }

    /// The index of the tick scheduled at `scheduled`.
    pub fn tick(&self, scheduled: Instant) -> u64 {
        let since = scheduled.duration_since(self.origin).as_secs_f64();
        (since / self.period.as_secs_f64()).round() as u64
    }

    /// The ticks of this grid until `stop` changes (or its sender goes): the one loop every
    /// monitor task runs.
    pub fn ticks(&self, stop: watch::Receiver<bool>) -> Ticks {
        let mut interval = interval_at(self.origin, self.period);
        // Skip, not Delay: a late tick does not shift the ones after it, so tick `k` stays at
        // second `k` of the run for every task and the per-second files join; a tick missed
        // while a read hung is left out (a missing `tick`), never made up in a burst.
        interval.set_missed_tick_behavior(MissedTickBehavior::Skip);
        Ticks {
            grid: *self,
            interval,
            stop,
        }
    }
}

/// A monitor's ticks, ended by its stop signal (`TickGrid::ticks`).
pub struct Ticks {
    grid: TickGrid,
    interval: Interval,
    stop: watch::Receiver<bool>,
}

impl Ticks {
    /// The next tick's index and scheduled instant, or `None` once the monitors stop. A stop
    /// is seen before a tick that is due at the same moment.
    pub async fn next(&mut self) -> Option<(u64, Instant)> {
        let scheduled = tokio::select! {
            biased;
            _ = self.stop.changed() => return None,
            t = self.interval.tick() => t,
        };
        if *self.stop.borrow() {
            return None;
        }
        Some((self.grid.tick(scheduled), scheduled))
    }

    /// `work`'s output, or `None` if the monitors stop first: work still out when the run
    /// has ended is dropped with its tick, whose row would fall after the run.
    pub async fn unless_stopped<F: Future>(&mut self, work: F) -> Option<F::Output> {
        tokio::select! {
            biased;
            _ = self.stop.changed() => None,
            out = work => Some(out),
        }
    }
}

/// The worst timing seen by one task.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Timing {
    /// Ticks that were sampled.
    pub ticks: u64,
    /// Ticks the timer skipped because the task was still busy.
    pub skipped: u64,
    /// The latest a read completed after its scheduled time.
    pub max_lateness: Duration,
    last_tick: Option<u64>,
}

impl Timing {
    /// Records a sampled tick and how late its read was.
    pub fn record(&mut self, tick: u64, lateness: Duration) {
        self.ticks += 1;
        if let Some(last) = self.last_tick {
            self.skipped += tick.saturating_sub(last + 1);
        }
        self.last_tick = Some(tick);
        self.max_lateness = self.max_lateness.max(lateness);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_skipped_ticks_and_lateness() {
        let mut t = Timing::default();
        t.record(0, Duration::from_millis(1));
        t.record(1, Duration::from_millis(3));
        t.record(4, Duration::from_millis(2));
        assert_eq!(
            (t.ticks, t.skipped, t.max_lateness),
            (3, 2, Duration::from_millis(3))
        );
    }

    #[tokio::test]
    async fn ticks_end_when_the_monitors_stop_even_with_work_in_flight() {
        let (tx, rx) = watch::channel(false);
        let grid = TickGrid::new(Duration::from_millis(5));
        let mut ticks = grid.ticks(rx);
        // The first tick is due at the origin, so it comes at once.
        assert_eq!(ticks.next().await.map(|(k, _)| k), Some(0));
        assert_eq!(ticks.next().await.map(|(k, _)| k), Some(1));
        // A stop sent once the next tick is due already ends them, and so it does on every
        // call after.
        tokio::time::sleep(Duration::from_millis(20)).await;
        tx.send_replace(true);
        assert_eq!(ticks.next().await, None);
        assert_eq!(ticks.next().await, None);
        // Work still out when the stop comes is given up.
        let (tx, rx) = watch::channel(false);
        let mut ticks = grid.ticks(rx);
        tx.send_replace(true);
        assert_eq!(
            ticks.unless_stopped(std::future::pending::<()>()).await,
            None
        );
        // A sender that goes also ends them.
        let (tx, rx) = watch::channel(false);
        let mut ticks = grid.ticks(rx);
        drop(tx);
        assert_eq!(ticks.next().await, None);
    }

    #[tokio::test]
    async fn ticks_are_rounded_multiples_of_the_period() {
        let c = TickGrid::new(Duration::from_secs(1));
        assert_eq!(c.tick(c.origin), 0);
        assert_eq!(c.tick(c.origin + Duration::from_millis(2999)), 3);
        assert!(unix_ns() > 1_600_000_000_000_000_000);
    }
}
