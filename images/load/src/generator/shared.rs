//! What the scheduler and the request tasks share, on the one runtime thread.
//!
//! Everything lives in one `Arc` behind one mutex, so that request tasks are plain
//! `tokio::spawn`ed ones; the runtime is current-thread, so the mutex is never contended.
//! No lock is held across an `.await`.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::Notify;
use tokio::task::AbortHandle;

use feedbench_load::plan::LoadPlan;

use super::conn::Conn;
use super::seconds::Seconds;

/// t = 0 of the schedule, on the monotonic clock and as unix time. Every timestamp written
/// is derived from the monotonic clock, so they never go backwards.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    pub base: Instant,
    pub start_ns: u64,
}

impl Clock {
    /// Starts the scenario now.
    pub fn start() -> Clock {
        let base = Instant::now();
        let unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Clock {
            base,
            start_ns: u64::try_from(unix.as_nanos()).unwrap_or(u64::MAX),
        }
    }

    /// Unix ns of a monotonic instant.
    pub fn unix_ns(&self, at: Instant) -> u64 {
        let since = at.saturating_duration_since(self.base).as_nanos();
        self.start_ns
            .saturating_add(u64::try_from(since).unwrap_or(u64::MAX))
    }

    /// The instant of a scheduled offset (s).
    pub fn at(&self, offset_s: f64) -> Instant {
        // Offsets of a checked plan are finite and >= 0; cap them at ~30 years for `+`.
        self.base + Duration::from_secs_f64(offset_s.clamp(0.0, 1e9))
    }

    /// Whole seconds of wall time since the start.
    pub fn wall_s(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.base).as_secs()
    }
}

/// What does not change during the run.
pub struct Ctx {
    pub plan: LoadPlan,
    pub addr: SocketAddr,
    /// base_url's `host[:port]`, for the `Host` header.
    pub authority: String,
    pub timeout: Duration,
    pub max_lag: Duration,
    pub clock: Clock,
}

/// What the scheduler and the tasks change.
pub struct State {
    /// Idle keep-alive connections, most recently used last (taken LIFO, so that a few
    /// hot connections carry the load and the rest can time out on the server).
    pub idle: Vec<Conn>,
    /// Requests started and not finished; each holds one connection (or is opening it).
    pub in_flight: u64,
    /// Output not yet written to the file.
    pub out: Vec<u8>,
    pub requests: u64,
    pub errors: u64,
    pub dropped: u64,
    pub seconds: Seconds,
    /// Set once `#end` is written: nothing is recorded after it.
    pub closed: bool,
    pub flights: Flights,
}

/// The requests in flight by deadline, to abort them at it (see `schedule`).
///
/// All share one timeout and start in order, so their deadlines are in order too: a queue,
/// not a heap. A finished request drops its abort handle at once (a handle keeps the
/// task's memory), and its entry leaves the queue when it reaches the front.
#[derive(Debug, Default)]
pub struct Flights {
    queue: VecDeque<(Instant, Option<AbortHandle>)>,
    /// The id of the queue's front entry.
    first: u64,
}

impl Flights {
    /// Adds a request due to end by `deadline`; returns its id.
    pub fn add(&mut self, deadline: Instant) -> u64 {
        self.queue.push_back((deadline, None));
        self.first + self.queue.len() as u64 - 1
    }

    fn entry(&mut self, id: u64) -> Option<&mut (Instant, Option<AbortHandle>)> {
        let i = usize::try_from(id.checked_sub(self.first)?).ok()?;
        self.queue.get_mut(i)
    }

    /// The task of request `id` has been spawned.
    pub fn started(&mut self, id: u64, task: AbortHandle) {
        if let Some(entry) = self.entry(id) {
            entry.1 = Some(task);
        }
    }

    /// Request `id` has recorded its row.
    pub fn finished(&mut self, id: u64) {
        if let Some(entry) = self.entry(id) {
            entry.1 = None;
        }
    }

    /// Aborts the requests past their deadline (each records its timeout as its task is
    /// dropped) and forgets finished ones; returns the next deadline.
    pub fn sweep(&mut self, now: Instant) -> Option<Instant> {
        while let Some((deadline, task)) = self.queue.front_mut() {
            match task.take() {
                Some(live) if *deadline > now => {
                    *task = Some(live);
                    return Some(*deadline);
                }
                Some(late) => late.abort(),
                None => {}
            }
            self.queue.pop_front();
            self.first += 1;
        }
        None
    }
}

impl State {
    /// Open connections: the idle ones and one per request in flight.
    pub fn connections(&self) -> u64 {
        self.idle.len() as u64 + self.in_flight
    }

    /// The most recently used idle connection still open.
    pub fn take_idle(&mut self) -> Option<Conn> {
        while let Some(conn) = self.idle.pop() {
            if conn.idle_usable() {
                return Some(conn);
            }
        }
        None
    }

    /// Closes idle connections the server has closed.
    pub fn prune_idle(&mut self) {
        self.idle.retain(Conn::idle_usable);
    }
}

/// The one shared value.
pub struct Shared {
    pub ctx: Ctx,
    pub state: Mutex<State>,
    /// Signalled when the last request in flight finishes.
    pub drained: Notify,
}

impl Shared {
    /// The state, locked (a panicked holder's poison is ignored: the counts stay usable).
    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
