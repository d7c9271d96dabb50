//! One direction of a proxied connection: reads, applies toxics, writes.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{ReadHalf, WriteHalf};
use tokio::sync::watch;
use tokio::time::{sleep_until, Instant};

use crate::chain::{Action, Chain, Event, ToxicSet};
use crate::toxic::Stream;

/// Read buffer per direction (Toxiproxy uses 32 KiB too).
const BUF_SIZE: usize = 32 * 1024;
/// Stop reading while this many bytes wait in the queue (backpressure).
const MAX_QUEUED: usize = 1 << 20;

/// How a direction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// End of stream was forwarded; the other direction may go on.
    Finished,
    /// The whole connection must be closed.
    Close,
    /// The whole connection must be reset (TCP RST).
    Reset,
}

fn error_outcome(e: &io::Error) -> Outcome {
    match e.kind() {
        io::ErrorKind::ConnectionReset => Outcome::Reset,
        _ => Outcome::Close,
    }
}

/// Forwards one direction of a connection through the proxy's toxics.
pub struct Pump<'a> {
    reader: ReadHalf<'a>,
    writer: WriteHalf<'a>,
    toxics: watch::Receiver<Arc<ToxicSet>>,
    chain: Chain,
    queue: VecDeque<Event>,
    queued: usize,
    read_done: bool,
    buf: Box<[u8]>,
}

impl<'a> Pump<'a> {
    /// A pump reading `reader` and writing `writer`, for direction `stream`.
    pub fn new(
        stream: Stream,
        reader: ReadHalf<'a>,
        writer: WriteHalf<'a>,
        toxics: watch::Receiver<Arc<ToxicSet>>,
    ) -> Pump<'a> {
        Pump {
            reader,
            writer,
            toxics,
            chain: Chain::new(stream),
            queue: VecDeque::new(),
            queued: 0,
            read_done: false,
            buf: vec![0; BUF_SIZE].into_boxed_slice(),
        }
    }

    /// Runs until this direction ends.
    pub async fn run(mut self) -> Outcome {
        let set = Arc::clone(&self.toxics.borrow_and_update());
        self.chain.reload(&set, Instant::now().into_std());
        loop {
            let step = if self.chain.is_idle() && self.queue.is_empty() {
                self.fast_step().await
            } else {
                self.slow_step().await
            };
            if let Some(outcome) = step {
                return outcome;
            }
        }
    }

    /// No toxic applies: copy a chunk straight through.
    async fn fast_step(&mut self) -> Option<Outcome> {
        tokio::select! {
            biased;
            changed = self.toxics.changed() => self.on_change(changed.is_ok()),
            read = self.reader.read(&mut self.buf) => match read {
                Ok(0) => {
                    let _ = self.writer.shutdown().await;
                    Some(Outcome::Finished)
                }
                Ok(n) => self.writer.write_all(&self.buf[..n]).await.err().map(|e| error_outcome(&e)),
                Err(e) => Some(error_outcome(&e)),
            },
        }
    }

    /// Toxics apply or data waits: write what is due, then wait for the next
    /// due event, a read, or a toxic change.
    async fn slow_step(&mut self) -> Option<Outcome> {
        let now = Instant::now().into_std();
        if let Some(action) = self.chain.due_timer(now) {
            return Some(outcome_of(action));
        }
        while self.queue.front().is_some_and(|e| e.at <= now) {
            let event = self.queue.pop_front()?;
            match event.action {
                Action::Data(bytes) => {
                    self.queued -= bytes.len();
                    if let Err(e) = self.writer.write_all(&bytes).await {
                        return Some(error_outcome(&e));
                    }
                }
                Action::Eof => {
                    let _ = self.writer.shutdown().await;
                    return Some(Outcome::Finished);
                }
                other => return Some(outcome_of(other)),
            }
        }
        let wake = match (self.queue.front().map(|e| e.at), self.chain.next_timer()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let can_read = !self.read_done && self.queued < MAX_QUEUED;
        tokio::select! {
            biased;
            changed = self.toxics.changed() => self.on_change(changed.is_ok()),
            _ = sleep_until(wake.unwrap_or(now).into()), if wake.is_some() => None,
            read = self.reader.read(&mut self.buf), if can_read => {
                let now = Instant::now().into_std();
                match read {
                    Ok(0) => {
                        self.read_done = true;
                        self.chain.eof(now, &mut self.queue);
                        None
                    }
                    Ok(n) => {
                        let (queued, ended) = self.chain.process(&self.buf[..n], now, &mut self.queue);
                        self.queued += queued;
                        self.read_done |= ended;
                        None
                    }
                    Err(e) => Some(error_outcome(&e)),
                }
            }
        }
    }

    /// The proxy's toxics changed (or the proxy is gone: `alive` false).
    fn on_change(&mut self, alive: bool) -> Option<Outcome> {
        if !alive {
            return Some(Outcome::Close);
        }
        let set = Arc::clone(&self.toxics.borrow_and_update());
        let now = Instant::now().into_std();
        if self.chain.reload(&set, now) {
            return Some(Outcome::Close);
        }
        if !self.chain.delays() {
            // Like Toxiproxy, removing a delaying toxic lets held data go now.
            self.queue.iter_mut().for_each(|e| e.at = e.at.min(now));
        }
        None
    }
}

fn outcome_of(action: Action) -> Outcome {
    match action {
        Action::Reset => Outcome::Reset,
        _ => Outcome::Close,
    }
}
