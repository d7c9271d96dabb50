//! The load generator's output followed as it is written (k6's samples, or feedbench-load's
//! stream): streamed out of its container over
//! the engine's API (`tail -F` inside it, so a load generator on another engine is followed
//! the same way), turned into requests.csv as it comes — flushed about once a second, so
//! that a run cut short keeps what it measured — and every request handed to the ramp's
//! live judge (`analysis::live`).
//!
//! What is followed serves the run while it runs. When the load generator has exited, the
//! executor downloads k6's whole file and writes requests.csv from it again: a stream cut
//! by the container's stop may lack its last bytes, the file does not. Those last bytes
//! (k6's final flush) are handed to the live judge too, so that the last window is judged
//! on every request it holds.

use std::io::Read;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use tokio::sync::mpsc::{Receiver, Sender};

use crate::analysis::judging::Rule;
use crate::analysis::live::{LiveRamp, Stop, Transient};
use crate::analysis::saturation::{Request, StepVerdict};
use crate::engine::runtime::Runtime;
use crate::plan::model::LoadGeneratorKind;
use crate::rundir::requests::{self, Seen};
use crate::spec::commands;

/// What the follower shares with the executor's loop.
#[derive(Default)]
struct Shared {
    scenario_start_ns: Option<u64>,
    ramp: Option<LiveRamp>,
    /// Requests (and dropped starts) read before the ramp's judge was set up (its steps
    /// need the scenario's start), with their ends.
    early: Vec<(Request, i128)>,
    requests: u64,
    /// Why the stream or its conversion failed, if it did.
    trouble: Option<String>,
}

pub struct Follower {
    shared: Arc<Mutex<Shared>>,
    /// Ends with the stream, handing back where it stopped and the way to the conversion.
    stream: tokio::task::JoinHandle<Option<(u64, Sender<Vec<u8>>)>>,
    convert: tokio::task::JoinHandle<()>,
}

/// The live figures since the last look.
#[derive(Debug, Default)]
pub struct Look {
    pub scenario_start_ns: Option<u64>,
    pub requests: u64,
    /// Steps judged since the last look, with their index.
    pub judged: Vec<(usize, StepVerdict)>,
    pub stop: Option<Stop>,
    /// Every transient known so far, in step order.
    pub transients: Vec<Transient>,
    /// The latest request end seen (unix ns, the load generator's clock).
    pub watermark: Option<i128>,
    pub trouble: Option<String>,
}

/// A `Read` over the chunks the stream sends; the end of the stream is the end of input.
struct Chunks {
    rx: Receiver<Vec<u8>>,
    chunk: Vec<u8>,
    at: usize,
}

impl Read for Chunks {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at >= self.chunk.len() {
            match self.rx.blocking_recv() {
                Some(c) => {
                    self.chunk = c;
                    self.at = 0;
                }
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.chunk.len() - self.at);
        buf[..n].copy_from_slice(&self.chunk[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

impl Shared {
    /// What the conversion read, judged by `rule` and handed to the ramp's judge (or kept
    /// until it is set up).
    fn seen(&mut self, seen: Seen<'_>, rule: Rule) {
        match seen {
            Seen::ScenarioStart(ns) => self.scenario_start_ns = Some(ns),
            Seen::Request(r) => {
                self.requests += 1;
                self.judge(r.judged(rule), i128::from(r.end_ns));
            }
            Seen::Dropped { second, count } => {
                let start = self.scenario_start_ns.map(i128::from);
                // A drop's instant is its end too: it never ran.
                if let Some(at) = start.and_then(|t0| rule.dropped_at(t0, second)) {
                    for _ in 0..count {
                        self.judge(Request::dropped(at), at);
                    }
                }
            }
        }
    }

    fn judge(&mut self, r: Request, end_ns: i128) {
        match self.ramp.as_mut() {
            Some(ramp) => ramp.push(r, end_ns),
            None => self.early.push((r, end_ns)),
        }
    }
}

fn lock(shared: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    // A panic while holding the lock leaves plain data: keep using it.
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

impl Follower {
    /// Starts following the load generator `container` (already started) of `kind`,
    /// writing `requests_csv` as requests come, and judging them by `rule`.
    pub fn start(
        rt: &Runtime,
        container: &str,
        kind: LoadGeneratorKind,
        requests_csv: PathBuf,
        rule: Rule,
    ) -> Follower {
        let shared = Arc::new(Mutex::new(Shared::default()));
        let (tx, rx) = tokio::sync::mpsc::channel::<Vec<u8>>(256);
        let stream = tokio::spawn(stream(
            rt.clone(),
            container.to_string(),
            kind,
            tx,
            shared.clone(),
        ));
        let s = shared.clone();
        let convert = tokio::task::spawn_blocking(move || {
            let out = match std::fs::File::create(&requests_csv) {
                Ok(f) => f,
                Err(e) => {
                    lock(&s).trouble =
                        Some(format!("cannot write `{}`: {e}", requests_csv.display()));
                    return;
                }
            };
            let input = Chunks {
                rx,
                chunk: Vec::new(),
                at: 0,
            };
            let mut flushed = Instant::now();
            let result = requests::convert_for(kind, input, out, &mut |seen| {
                lock(&s).seen(seen, rule);
                let flush = flushed.elapsed() >= Duration::from_secs(1);
                if flush {
                    flushed = Instant::now();
                }
                flush
            });
            if let Err(e) = result {
                lock(&s).trouble = Some(e.to_string());
            }
        });
        Follower {
            shared,
            stream,
            convert,
        }
    }

    /// Sets up the ramp's judge (once the scenario's start is known): the requests read so
    /// far are handed to it first.
    pub fn judge_with(&self, mut ramp: LiveRamp) {
        let mut g = lock(&self.shared);
        for (r, end) in std::mem::take(&mut g.early) {
            ramp.push(r, end);
        }
        g.ramp = Some(ramp);
    }

    pub fn judging(&self) -> bool {
        lock(&self.shared).ramp.is_some()
    }

    /// Judges what the stream has completed and tells what is new.
    pub fn look(&self) -> Look {
        let mut g = lock(&self.shared);
        let (judged, stop, transients, watermark) = match g.ramp.as_mut() {
            Some(r) => (r.advance(), r.stop(), r.transients(), r.watermark()),
            None => (Vec::new(), None, Vec::new(), None),
        };
        Look {
            scenario_start_ns: g.scenario_start_ns,
            requests: g.requests,
            judged,
            stop,
            transients,
            watermark,
            trouble: g.trouble.clone(),
        }
    }

    /// The load generator has exited: reads what is left of the stream and, from `whole`
    /// (k6's whole file, downloaded), the bytes the stream did not bring; judges every step
    /// not judged yet and hands back the judge.
    pub async fn finish(
        self,
        whole: Option<&[u8]>,
    ) -> (Option<LiveRamp>, Vec<(usize, StepVerdict)>) {
        // The stream ends with the container; a stream still open after this long is
        // stuck, and what it would add the downloaded file has.
        let mut stream = self.stream;
        match tokio::time::timeout(Duration::from_secs(10), &mut stream).await {
            Ok(Ok(Some((offset, tx)))) => {
                let rest = whole.and_then(|w| w.get(usize::try_from(offset).ok()?..));
                if let Some(rest) = rest.filter(|r| !r.is_empty()) {
                    let _ = tx.send(rest.to_vec()).await;
                }
            }
            Ok(_) => {}
            Err(_) => stream.abort(),
        }
        let _ = self.convert.await;
        let mut g = lock(&self.shared);
        let mut ramp = g.ramp.take();
        let last = ramp.as_mut().map(|r| r.finish()).unwrap_or_default();
        (ramp, last)
    }
}

/// Streams the load generator's output file from its first byte into `tx`; when the stream breaks while
/// the container still runs, follows again from the byte it had reached. Once the
/// container has stopped, hands back how many bytes it sent, and `tx`.
async fn stream(
    rt: Runtime,
    container: String,
    kind: LoadGeneratorKind,
    tx: Sender<Vec<u8>>,
    shared: Arc<Mutex<Shared>>,
) -> Option<(u64, Sender<Vec<u8>>)> {
    let mut offset: u64 = 0;
    loop {
        let mut argv = commands::follow_args(kind);
        // `tail -c +N` starts at byte N, counted from 1.
        if let Some(a) = argv.iter_mut().find(|a| a.as_str() == "+1") {
            *a = format!("+{}", offset + 1);
        }
        match rt.exec_stream(&container, &argv).await {
            Ok(s) => {
                let mut s = Box::pin(s);
                while let Some(chunk) = s.next().await {
                    match chunk {
                        Ok(bytes) => {
                            offset += bytes.len() as u64;
                            if tx.send(bytes).await.is_err() {
                                return None;
                            }
                        }
                        Err(e) => {
                            lock(&shared).trouble = Some(e.to_string());
                            break;
                        }
                    }
                }
            }
            Err(e) => lock(&shared).trouble = Some(e.to_string()),
        }
        match rt.state(&container).await {
            Ok((true, _)) => tokio::time::sleep(Duration::from_millis(200)).await,
            _ => return Some((offset, tx)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_are_judged_at_their_seconds_start_once_the_scenario_start_is_known() {
        let t0: u64 = 1_000_000_000_000;
        let mut s = Shared::default();
        // A drop told before the scenario's start cannot be placed (the converters tell
        // none so); after it, each drop is a failed request at its second's start.
        s.seen(
            Seen::Dropped {
                second: 1,
                count: 1,
            },
            Rule::BySchedule,
        );
        assert!(s.early.is_empty());
        s.seen(Seen::ScenarioStart(t0), Rule::BySchedule);
        s.seen(
            Seen::Dropped {
                second: 2,
                count: 3,
            },
            Rule::BySchedule,
        );
        let at = i128::from(t0) + 2_000_000_000;
        assert_eq!(s.early.len(), 3);
        assert!(s
            .early
            .iter()
            .all(|(r, end)| r.at_ns == at && *end == at && r.failed()));
        assert_eq!(s.requests, 0, "a dropped start is no request");
        // Judged by start, drops count in no window.
        s.seen(
            Seen::Dropped {
                second: 3,
                count: 2,
            },
            Rule::ByStart,
        );
        assert_eq!(s.early.len(), 3);
    }
}
