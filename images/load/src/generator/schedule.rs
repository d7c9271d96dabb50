//! The open-model loop: start each iteration at its instant whatever the server does, or
//! drop it and count it; never queue it.
//!
//! One timer wakes the loop at the earliest of: the next iteration's instant, the next whole
//! second, the deadline of the oldest request in flight, the schedule's end. At each
//! wake-up it starts every iteration that is due, aborts the requests past their deadline
//! (their rows say `1050 request timeout`), and at each second writes the seconds that
//! passed and flushes the rows to the file.

use std::sync::Arc;
use std::time::{Duration, Instant};

use feedbench_load::arrivals::Arrivals;
use feedbench_load::draws;
use feedbench_load::stream::{write_end, End, Reason};

use super::error::Error;
use super::output::Output;
use super::request::{self, Job};
use super::seconds::Taken;
use super::shared::Shared;
use super::wake::{Signals, Timer};

/// How late a start may be so that one wake-up starts several: as tokio's own timer, which
/// rounds every sleep up to the millisecond. Each wake-up costs more CPU than a request.
const SLACK_S: f64 = 0.001;
/// The most iterations one wake-up waits to start together.
const MAX_BATCH: u64 = 64;

/// The offset to wake at for iteration n: that of the last iteration within SLACK_S after
/// it, so that they start together; none after the schedule.
fn coalesced(arrivals: &Arrivals, n: u64) -> Option<f64> {
    let first = arrivals.offset(n)?;
    let mut last = first;
    for m in n + 1..n + MAX_BATCH {
        match arrivals.offset(m) {
            Some(o) if o <= first + SLACK_S => last = o,
            _ => break,
        }
    }
    Some(last)
}

/// The scheduler's own state.
struct Scheduler<'a> {
    shared: Arc<Shared>,
    output: Output<'a>,
    timer: Timer,
    /// The deadline of the oldest request in flight, as of the last sweep.
    next_deadline: Option<Instant>,
    /// The next whole second (from the start) to tick at.
    next_second: u64,
}

/// Runs the schedule, waits for the requests in flight, writes the end; returns why it ended.
pub async fn run(
    shared: Arc<Shared>,
    output: Output<'_>,
    mut signals: Signals,
    timer: Timer,
) -> Result<Reason, Error> {
    let mut s = Scheduler {
        shared,
        output,
        timer,
        next_deadline: None,
        next_second: 1,
    };
    // The first two lines at once: the follower learns the scenario's start.
    s.output.flush(&s.shared)?;
    let reason = s.take_the_schedule(&mut signals).await?;
    let (clock, timeout) = (s.shared.ctx.clock, s.shared.ctx.timeout);
    // Requests in flight have their own deadlines; after the schedule, wait a second more.
    let grace = match reason {
        Reason::Completed => timeout + Duration::from_secs(1),
        Reason::Interrupted => timeout,
    };
    s.drain(&mut signals, Instant::now() + grace).await?;
    let now = Instant::now();
    let last = match reason {
        Reason::Completed => usize::MAX,
        // The second under way when interrupted, with what it had taken by then.
        Reason::Interrupted => clock.wall_s(now) as usize + 1,
    };
    s.tick(now, last)?;
    {
        let mut state = s.shared.state();
        // Requests still in flight are dropped with the runtime, unrecorded.
        state.closed = true;
        let end = End {
            requests: state.requests,
            errors: state.errors,
            dropped: state.dropped,
            reason,
        };
        write_end(&mut state.out, &end);
    }
    s.output.flush(&s.shared)?;
    Ok(reason)
}

impl Scheduler<'_> {
    /// Starts every iteration at its instant until the schedule ends or a signal comes.
    async fn take_the_schedule(&mut self, signals: &mut Signals) -> Result<Reason, Error> {
        let clock = self.shared.ctx.clock;
        let arrivals = Arrivals::new(&self.shared.ctx.plan.schedule);
        let end_at = clock.at(arrivals.duration_s());
        let mut n = 0;
        let stop = signals.recv();
        tokio::pin!(stop);
        loop {
            let now = Instant::now();
            while let Some(offset) = arrivals.offset(n) {
                let at = clock.at(offset);
                if at > now {
                    break;
                }
                self.start(n, offset, at);
                n += 1;
            }
            let now = Instant::now();
            self.sweep(now);
            self.tick_if_due(now)?;
            let next = match coalesced(&arrivals, n) {
                Some(offset) => clock.at(offset),
                None if now >= end_at => return Ok(Reason::Completed),
                None => end_at,
            };
            self.timer.arm(self.wake(next))?;
            tokio::select! {
                biased;
                _ = &mut stop => return Ok(Reason::Interrupted),
                fired = self.timer.fired() => fired?,
            }
        }
    }

    /// Waits until no request is in flight, `until` passes or a signal comes.
    async fn drain(&mut self, signals: &mut Signals, until: Instant) -> Result<(), Error> {
        let shared = self.shared.clone();
        let stop = signals.recv();
        tokio::pin!(stop);
        loop {
            // Made before the check, so that a notification in between is kept.
            let drained = shared.drained.notified();
            let now = Instant::now();
            self.sweep(now);
            if shared.state().in_flight == 0 || now >= until {
                return Ok(());
            }
            self.tick_if_due(now)?;
            self.timer.arm(self.wake(until))?;
            tokio::select! {
                _ = drained => {}
                _ = &mut stop => return Ok(()),
                fired = self.timer.fired() => fired?,
            }
        }
    }

    /// The earliest of `next`, the next second and the oldest deadline.
    fn wake(&self, next: Instant) -> Instant {
        let second = self.shared.ctx.clock.base + Duration::from_secs(self.next_second);
        let deadline = self.next_deadline;
        deadline.map_or(next, |d| d.min(next)).min(second)
    }

    /// Aborts the requests past their deadline; forgets finished ones at the front. An
    /// aborted task records its timeout row as it is dropped.
    fn sweep(&mut self, now: Instant) {
        self.next_deadline = self.shared.state().flights.sweep(now);
    }

    /// Ticks once the wall clock has entered a new second.
    fn tick_if_due(&mut self, now: Instant) -> Result<(), Error> {
        let wall_s = self.shared.ctx.clock.wall_s(now);
        if wall_s < self.next_second {
            return Ok(());
        }
        self.next_second = wall_s + 1;
        self.tick(now, wall_s as usize)
    }

    /// Notes the levels, writes the records of the seconds before `written_end`, closes
    /// idle connections the server closed, and flushes.
    fn tick(&mut self, now: Instant, written_end: usize) -> Result<(), Error> {
        {
            let mut state = self.shared.state();
            state.prune_idle();
            let (in_flight, connections) = (state.in_flight, state.connections());
            let wall_s = self.shared.ctx.clock.wall_s(now);
            let state = &mut *state;
            state.seconds.levels(wall_s, in_flight, connections);
            state.seconds.write_through(written_end, &mut state.out);
        }
        self.output.flush(&self.shared)
    }

    /// Takes iteration n: drops it if late or if no connection can be had, else starts it.
    fn start(&mut self, n: u64, offset: f64, at: Instant) {
        let ctx = &self.shared.ctx;
        let now = Instant::now();
        let lag = now.saturating_duration_since(at);
        let lag_ms = lag.as_secs_f64() * 1e3;
        let mut state = self.shared.state();
        if lag > ctx.max_lag {
            state.seconds.taken(offset, lag_ms, Taken::Late);
            state.dropped += 1;
            return;
        }
        let conn = state.take_idle();
        if conn.is_none() && state.connections() >= u64::from(ctx.plan.max_connections) {
            state.seconds.taken(offset, lag_ms, Taken::Cap);
            state.dropped += 1;
            return;
        }
        let flight = state.flights.add(now + ctx.timeout);
        state.in_flight += 1;
        state.seconds.taken(offset, lag_ms, Taken::Started);
        let (in_flight, connections) = (state.in_flight, state.connections());
        state
            .seconds
            .levels(ctx.clock.wall_s(now), in_flight, connections);
        drop(state);
        let drawn = draws::request(&ctx.plan, n);
        let scheduled_ns = ctx
            .clock
            .start_ns
            .saturating_add((offset * 1e9).round() as u64);
        let job = Job {
            flight,
            route: drawn.route,
            path: drawn.path,
            body: drawn.body,
            scheduled_ns,
            start: now,
            conn,
        };
        let task = tokio::spawn(request::run(self.shared.clone(), job));
        // The task cannot have run yet: it is polled only once this one yields.
        self.shared
            .state()
            .flights
            .started(flight, task.abort_handle());
    }
}
