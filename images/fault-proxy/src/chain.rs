//! Per-connection toxic state: turns each chunk read into timed output events.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::toxic::{Kind, Stream, Toxic};

/// The toxics of one proxy, per direction, in the order they were added.
#[derive(Debug, Default, Clone)]
pub struct ToxicSet {
    /// Toxics acting on client-to-upstream data.
    pub upstream: Vec<Arc<Toxic>>,
    /// Toxics acting on upstream-to-client data.
    pub downstream: Vec<Arc<Toxic>>,
}

impl ToxicSet {
    /// The toxics of one direction.
    pub fn for_stream(&self, stream: Stream) -> &[Arc<Toxic>] {
        match stream {
            Stream::Upstream => &self.upstream,
            Stream::Downstream => &self.downstream,
        }
    }
}

/// What the writer side of a direction must do.
#[derive(Debug, PartialEq, Eq)]
pub enum Action {
    /// Write these bytes.
    Data(Vec<u8>),
    /// The reader hit end of stream: half-close the writer.
    Eof,
    /// Close the whole connection (both sockets).
    Close,
    /// Reset the whole connection (TCP RST on both sockets).
    Reset,
}

/// An action due at an instant.
#[derive(Debug)]
pub struct Event {
    /// When the action is due.
    pub at: Instant,
    /// What to do.
    pub action: Action,
}

/// One toxic as seen by one connection direction.
struct Slot {
    toxic: Arc<Toxic>,
    /// Whether the toxicity roll made this toxic apply to this connection.
    active: bool,
    /// When the toxic became active here (the timeout toxic counts from it).
    since: Instant,
    /// Bytes let through so far (limit_data).
    transmitted: i64,
    /// When the bandwidth budget is free again (bandwidth).
    free_at: Instant,
    /// When the pending reset fires (reset_peer).
    reset_at: Option<Instant>,
}

impl Slot {
    fn new(toxic: Arc<Toxic>, now: Instant) -> Slot {
        Slot {
            active: roll(toxic.toxicity),
            toxic,
            since: now,
            transmitted: 0,
            free_at: now,
            reset_at: None,
        }
    }
}

fn roll(toxicity: f64) -> bool {
    toxicity >= 1.0 || (toxicity > 0.0 && fastrand::f64() < toxicity)
}

fn ms(v: i64) -> Duration {
    Duration::from_millis(v.max(0).unsigned_abs())
}

/// The toxics applying to one direction of one connection, with their state.
pub struct Chain {
    stream: Stream,
    slots: Vec<Slot>,
}

impl Chain {
    /// An empty chain for one direction.
    pub fn new(stream: Stream) -> Chain {
        Chain {
            stream,
            slots: Vec::new(),
        }
    }

    /// Takes the proxy's current toxics. Kept toxics keep their state;
    /// updated ones re-roll their toxicity, as Toxiproxy restarts them.
    /// Returns true when a removed toxic requires closing the connection
    /// (a timeout toxic has dropped data, so the stream is broken).
    pub fn reload(&mut self, set: &ToxicSet, now: Instant) -> bool {
        let mut old = std::mem::take(&mut self.slots);
        for toxic in set.for_stream(self.stream) {
            let slot = match old.iter().position(|s| s.toxic.id == toxic.id) {
                Some(pos) => {
                    let mut slot = old.swap_remove(pos);
                    if slot.toxic.version != toxic.version {
                        slot.active = roll(toxic.toxicity);
                        slot.since = now;
                        slot.reset_at = None;
                    }
                    slot.toxic = Arc::clone(toxic);
                    slot
                }
                None => Slot::new(Arc::clone(toxic), now),
            };
            self.slots.push(slot);
        }
        old.iter()
            .any(|s| s.active && matches!(s.toxic.kind, Kind::Timeout { .. }))
    }

    /// True when no toxic applies, so data may be copied straight through.
    pub fn is_idle(&self) -> bool {
        !self.slots.iter().any(|s| s.active)
    }

    /// True when some applying toxic delays data (so queued data must wait).
    pub fn delays(&self) -> bool {
        self.active().any(|s| {
            matches!(
                s.toxic.kind,
                Kind::Latency { .. } | Kind::Bandwidth { .. } | Kind::Slicer { .. }
            )
        })
    }

    fn active(&self) -> impl Iterator<Item = &Slot> {
        self.slots.iter().filter(|s| s.active)
    }

    /// The next instant a timer (timeout close, pending reset) fires.
    pub fn next_timer(&self) -> Option<Instant> {
        self.active().filter_map(timer).min()
    }

    /// The close or reset whose timer has fired by `now`, if any.
    pub fn due_timer(&self, now: Instant) -> Option<Action> {
        for slot in self.active() {
            if timer(slot).is_some_and(|at| at <= now) {
                return Some(match slot.toxic.kind {
                    Kind::ResetPeer { .. } => Action::Reset,
                    _ => Action::Close,
                });
            }
        }
        None
    }

    /// Runs a chunk read at `now` through the toxics, queueing the results
    /// in order. Returns the bytes queued and whether the chain has ended
    /// the stream (limit_data reached), after which nothing more is read.
    pub fn process(
        &mut self,
        data: &[u8],
        now: Instant,
        out: &mut VecDeque<Event>,
    ) -> (usize, bool) {
        let mut pieces: Vec<(Instant, Vec<u8>)> = vec![(now, data.to_vec())];
        let mut close = false;
        for slot in self.slots.iter_mut().filter(|s| s.active) {
            match slot.toxic.kind {
                Kind::Latency { latency, jitter } => {
                    let jitter = if jitter > 0 {
                        fastrand::i64(-jitter..jitter)
                    } else {
                        0
                    };
                    let delay = ms(latency.saturating_add(jitter));
                    pieces.iter_mut().for_each(|p| p.0 += delay);
                }
                Kind::Bandwidth { rate } if rate > 0 => {
                    pieces = throttle(pieces, rate, &mut slot.free_at);
                }
                Kind::Slicer {
                    average_size,
                    size_variation,
                    delay,
                } => {
                    pieces = slice(pieces, average_size, size_variation, delay);
                }
                Kind::LimitData { bytes } => {
                    let mut remaining = usize::try_from(bytes - slot.transmitted).unwrap_or(0);
                    for piece in pieces.iter_mut() {
                        piece.1.truncate(remaining);
                        remaining -= piece.1.len();
                        slot.transmitted += piece.1.len() as i64;
                    }
                    pieces.retain(|p| !p.1.is_empty());
                    close |= slot.transmitted >= bytes;
                }
                Kind::Timeout { .. } => pieces.clear(),
                Kind::ResetPeer { timeout } => {
                    pieces.clear();
                    slot.reset_at.get_or_insert(now + ms(timeout));
                }
                Kind::Bandwidth { .. } | Kind::SlowClose { .. } => {}
            }
        }
        let mut queued = 0;
        for (at, bytes) in pieces {
            queued += bytes.len();
            push(out, at, Action::Data(bytes));
        }
        if close {
            push(out, now, Action::Close);
        }
        (queued, close)
    }

    /// Queues the end of stream, after queued data and any slow_close delay.
    pub fn eof(&self, now: Instant, out: &mut VecDeque<Event>) {
        let delay: Duration = self
            .active()
            .filter_map(|s| match s.toxic.kind {
                Kind::SlowClose { delay } => Some(ms(delay)),
                _ => None,
            })
            .sum();
        let at = out.back().map_or(now, |e| e.at.max(now));
        out.push_back(Event {
            at: at + delay,
            action: Action::Eof,
        });
    }
}

fn timer(slot: &Slot) -> Option<Instant> {
    match slot.toxic.kind {
        Kind::Timeout { timeout } if timeout > 0 => Some(slot.since + ms(timeout)),
        Kind::ResetPeer { .. } => slot.reset_at,
        _ => None,
    }
}

/// Queues an action no earlier than the last one: a TCP stream keeps order.
fn push(out: &mut VecDeque<Event>, at: Instant, action: Action) {
    let at = out.back().map_or(at, |e| e.at.max(at));
    out.push_back(Event { at, action });
}

/// Spaces pieces so that at most `rate` KB (1000 bytes) pass per second,
/// in parts of at most 100 ms worth of data, as Toxiproxy does.
fn throttle(
    pieces: Vec<(Instant, Vec<u8>)>,
    rate: i64,
    free_at: &mut Instant,
) -> Vec<(Instant, Vec<u8>)> {
    let rate = rate.unsigned_abs();
    let part = usize::try_from(rate.saturating_mul(100)).unwrap_or(usize::MAX);
    let mut out = Vec::with_capacity(pieces.len());
    for (at, bytes) in pieces {
        for chunk in bytes.chunks(part) {
            let start = at.max(*free_at);
            let nanos = (chunk.len() as u64).saturating_mul(1_000_000) / rate;
            *free_at = start + Duration::from_nanos(nanos);
            out.push((*free_at, chunk.to_vec()));
        }
    }
    out
}

/// Cuts pieces into slices `delay` microseconds apart.
fn slice(
    pieces: Vec<(Instant, Vec<u8>)>,
    average: i64,
    variation: i64,
    delay: i64,
) -> Vec<(Instant, Vec<u8>)> {
    let step = Duration::from_micros(delay.max(0).unsigned_abs());
    let mut out = Vec::new();
    for (at, bytes) in pieces {
        let mut cuts = vec![0];
        cut_points(
            0,
            bytes.len(),
            average.max(1) as usize,
            variation.max(0) as usize,
            &mut cuts,
        );
        for (i, w) in cuts.windows(2).enumerate() {
            out.push((at + step * i as u32, bytes[w[0]..w[1]].to_vec()));
        }
    }
    out
}

/// Appends the ends of the slices of `start..end` (Toxiproxy's slicer split:
/// halve around the middle, +/- the variation, until slices are small enough).
/// Terminates because `variation < average` is validated, so both halves shrink.
fn cut_points(start: usize, end: usize, average: usize, variation: usize, cuts: &mut Vec<usize>) {
    let len = end - start;
    if len <= average + variation {
        cuts.push(end);
        return;
    }
    let offset = if variation > 0 {
        fastrand::i64(-(variation as i64)..variation as i64)
    } else {
        0
    };
    let mid = (start + len / 2)
        .saturating_add_signed(offset as isize)
        .clamp(start + 1, end - 1);
    cut_points(start, mid, average, variation, cuts);
    cut_points(mid, end, average, variation, cuts);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toxic::Toxic;

    fn set(stream: Stream, body: &str) -> ToxicSet {
        let t = Arc::new(Toxic::from_create_body(body.as_bytes(), |_| false).unwrap());
        let mut s = ToxicSet::default();
        match stream {
            Stream::Upstream => s.upstream.push(t),
            Stream::Downstream => s.downstream.push(t),
        }
        s
    }

    #[test]
    fn latency_delays_chunk() {
        let mut c = Chain::new(Stream::Downstream);
        c.reload(
            &set(
                Stream::Downstream,
                r#"{"type":"latency","attributes":{"latency":100}}"#,
            ),
            Instant::now(),
        );
        let now = Instant::now();
        let mut q = VecDeque::new();
        c.process(b"abc", now, &mut q);
        assert_eq!(q[0].at, now + Duration::from_millis(100));
    }

    #[test]
    fn other_direction_is_idle() {
        let mut c = Chain::new(Stream::Upstream);
        c.reload(
            &set(Stream::Downstream, r#"{"type":"latency"}"#),
            Instant::now(),
        );
        assert!(c.is_idle());
    }

    #[test]
    fn limit_data_truncates_then_closes() {
        let mut c = Chain::new(Stream::Downstream);
        c.reload(
            &set(
                Stream::Downstream,
                r#"{"type":"limit_data","attributes":{"bytes":5}}"#,
            ),
            Instant::now(),
        );
        let mut q = VecDeque::new();
        assert_eq!(c.process(b"abc", Instant::now(), &mut q), (3, false));
        assert_eq!(c.process(b"defgh", Instant::now(), &mut q), (2, true));
        let actions: Vec<_> = q.into_iter().map(|e| e.action).collect();
        assert_eq!(
            actions,
            vec![
                Action::Data(b"abc".to_vec()),
                Action::Data(b"de".to_vec()),
                Action::Close
            ]
        );
    }

    #[test]
    fn slicer_keeps_every_byte_in_order() {
        let mut c = Chain::new(Stream::Downstream);
        c.reload(
            &set(Stream::Downstream, r#"{"type":"slicer","attributes":{"average_size":10,"size_variation":4,"delay":0}}"#),
            Instant::now(),
        );
        let data: Vec<u8> = (0..=255).collect();
        let mut q = VecDeque::new();
        c.process(&data, Instant::now(), &mut q);
        assert!(q.len() > 10);
        let mut joined = Vec::new();
        for e in q {
            if let Action::Data(d) = e.action {
                assert!(d.len() <= 14);
                joined.extend(d);
            }
        }
        assert_eq!(joined, data);
    }

    #[test]
    fn bandwidth_spaces_data() {
        let mut c = Chain::new(Stream::Downstream);
        c.reload(
            &set(
                Stream::Downstream,
                r#"{"type":"bandwidth","attributes":{"rate":1}}"#,
            ),
            Instant::now(),
        );
        let now = Instant::now();
        let mut q = VecDeque::new();
        c.process(&[0u8; 250], now, &mut q);
        assert_eq!(q.len(), 3);
        assert_eq!(q[2].at, now + Duration::from_millis(250));
    }

    #[test]
    fn timeout_drops_and_removal_closes() {
        let mut c = Chain::new(Stream::Downstream);
        let now = Instant::now();
        c.reload(
            &set(
                Stream::Downstream,
                r#"{"type":"timeout","attributes":{"timeout":50}}"#,
            ),
            now,
        );
        let mut q = VecDeque::new();
        c.process(b"abc", now, &mut q);
        assert!(q.is_empty());
        assert_eq!(c.next_timer(), Some(now + Duration::from_millis(50)));
        assert_eq!(
            c.due_timer(now + Duration::from_millis(60)),
            Some(Action::Close)
        );
        assert!(c.reload(&ToxicSet::default(), now));
    }

    #[test]
    fn zero_toxicity_never_applies() {
        let mut c = Chain::new(Stream::Downstream);
        c.reload(
            &set(Stream::Downstream, r#"{"type":"latency","toxicity":0}"#),
            Instant::now(),
        );
        assert!(c.is_idle());
    }
}
