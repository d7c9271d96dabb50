//! The link prober: every database link's listener on the fault proxy, probed once a second
//! on the monitors' grid, in its own task (`links.csv`, `rundir::links`). A probe connects
//! as a contender does, sends PostgreSQL's SSLRequest (the protocol's first message, which
//! the server answers with one byte before any authentication) and times that byte: the
//! link's round trip through the proxy, its toxics included. The server forks a backend
//! for it and logs nothing when the client leaves after the answer.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::timeout;

use super::csv::CsvFile;
use super::error::MonitorError;
use super::grid::TickGrid;
use crate::rundir::links::{LinkRow, Outcome};

/// PostgreSQL's SSLRequest: length 8, code 80877103.
const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f];

/// A probe waits this long for its answer, so that a slow link is measured rather than timed
/// out; a latency near it leaves too few answers in a fault to judge, which is said.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// A link to probe: its name in the plan and where the coordinator reaches its listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkTarget {
    pub link: String,
    pub addr: SocketAddr,
}

pub struct Prober {
    pub targets: Vec<LinkTarget>,
    pub clock: TickGrid,
    pub out: CsvFile,
}

impl Prober {
    /// Probes every link each tick until `stop`; a tick whose probes outlast the period is
    /// followed by the next one due, so a slow link never builds a queue, and `stop` is not
    /// kept waiting by a probe in flight.
    pub async fn run(mut self, stop: watch::Receiver<bool>) -> Result<(), MonitorError> {
        let mut ticks = self.clock.ticks(stop);
        while let Some((tick, _)) = ticks.next().await {
            let stamp = self.clock.stamp();
            let probes = self.targets.iter().map(|t| probe(t.addr, PROBE_TIMEOUT));
            let Some(results) = ticks
                .unless_stopped(futures_util::future::join_all(probes))
                .await
            else {
                break;
            };
            for (t, (outcome, round_trip_ns, detail)) in self.targets.iter().zip(results) {
                LinkRow {
                    unix_ns: i128::from(stamp.unix_ns),
                    offset_s: stamp.offset_s,
                    tick,
                    link: t.link.clone(),
                    outcome,
                    round_trip_ns,
                    detail,
                }
                .write_csv(&mut self.out.batch);
            }
            self.out.flush_batch()?;
        }
        Ok(())
    }
}

/// One probe of the listener at `addr`: its outcome, the round trip when answered, and
/// what went wrong otherwise.
pub async fn probe(addr: SocketAddr, limit: Duration) -> (Outcome, Option<u64>, String) {
    let start = Instant::now();
    let exchange = async {
        let mut s = TcpStream::connect(addr).await.map_err(|e| ("connect", e))?;
        let _ = s.set_nodelay(true);
        s.write_all(&SSL_REQUEST).await.map_err(|e| ("send", e))?;
        let mut answer = [0u8; 1];
        let n = s.read(&mut answer).await.map_err(|e| ("answer", e))?;
        Ok::<(usize, u8), (&str, std::io::Error)>((n, answer[0]))
    };
    match timeout(limit, exchange).await {
        Err(_) => (
            Outcome::Timeout,
            None,
            format!("no answer within {} s", limit.as_secs_f64()),
        ),
        Ok(Ok((0, _))) => (Outcome::Closed, None, "closed before the answer".into()),
        // PostgreSQL answers an SSLRequest `S` (it will) or `N` (it will not).
        Ok(Ok((_, b'S' | b'N'))) => (
            Outcome::Ok,
            Some(u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)),
            String::new(),
        ),
        Ok(Ok((_, other))) => (
            Outcome::Error,
            None,
            format!("answered {other:#04x}, not PostgreSQL's S or N"),
        ),
        Ok(Err((step, e))) => {
            let outcome = match e.kind() {
                std::io::ErrorKind::ConnectionRefused => Outcome::Refused,
                std::io::ErrorKind::ConnectionReset
                | std::io::ErrorKind::ConnectionAborted
                | std::io::ErrorKind::BrokenPipe
                | std::io::ErrorKind::UnexpectedEof => Outcome::Closed,
                _ => Outcome::Error,
            };
            (outcome, None, format!("{step}: {e}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    /// A listener that answers the SSLRequest with `N` after `delay`, as PostgreSQL behind
    /// a latency would.
    async fn server(delay: Duration) -> SocketAddr {
        answering(delay, b'N').await
    }

    async fn answering(delay: Duration, byte: u8) -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                tokio::spawn(async move {
                    let mut req = [0u8; 8];
                    if s.read_exact(&mut req).await.is_ok() && req == SSL_REQUEST {
                        tokio::time::sleep(delay).await;
                        let _ = s.write_all(&[byte]).await;
                    }
                });
            }
        });
        addr
    }

    #[tokio::test]
    async fn an_answer_is_timed_and_a_closed_or_refused_link_is_named() {
        let fast = server(Duration::ZERO).await;
        let slow = server(Duration::from_millis(150)).await;
        let (o, rt, _) = probe(fast, PROBE_TIMEOUT).await;
        assert_eq!(o, Outcome::Ok);
        let (o, slow_rt, _) = probe(slow, PROBE_TIMEOUT).await;
        assert_eq!(o, Outcome::Ok);
        // The delay is a lower bound whatever the machine's load.
        assert!(slow_rt.unwrap() >= 150_000_000, "{slow_rt:?} {rt:?}");

        // A listener that closes what it accepts, and then none at all.
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let closing = l.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((s, _)) = l.accept().await {
                drop(s);
            }
        });
        let (o, rt, detail) = probe(closing, PROBE_TIMEOUT).await;
        assert!(matches!(o, Outcome::Closed), "{o:?} {detail}");
        assert_eq!(rt, None);
        // Bound and held but not listening: a connection to it is refused.
        let held = tokio::net::TcpSocket::new_v4().unwrap();
        held.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let (o, _, detail) = probe(held.local_addr().unwrap(), PROBE_TIMEOUT).await;
        assert_eq!(o, Outcome::Refused, "{detail}");

        // Something that is not PostgreSQL answers, and is not counted as the link's answer.
        let other = answering(Duration::ZERO, b'H').await;
        let (o, rt, detail) = probe(other, PROBE_TIMEOUT).await;
        assert_eq!((o, rt), (Outcome::Error, None), "{detail}");
        assert!(detail.contains("0x48"), "{detail}");

        // A listener that never answers.
        let silent = server(Duration::from_secs(3600)).await;
        let (o, _, detail) = probe(silent, Duration::from_millis(200)).await;
        assert_eq!(o, Outcome::Timeout, "{detail}");
    }
}
