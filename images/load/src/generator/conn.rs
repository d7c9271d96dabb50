//! A keep-alive connection: one request at a time, written in one system call, its response
//! read and discarded in the task that sent it (no connection task, no channels).

use std::net::SocketAddr;
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::http::{HttpError, Response};

/// Read buffer size; it grows only for a response head longer than this.
const READ_BUF: usize = 4096;

/// A request that got no (whole) response, as the row will say it.
#[derive(Debug)]
pub enum Failure {
    Timeout,
    Refused,
    Dial(String),
    Other(String),
}

impl Failure {
    fn io(what: &str, e: &std::io::Error) -> Failure {
        Failure::Other(format!("{what}: {e}"))
    }

    fn http(e: &HttpError) -> Failure {
        Failure::Other(e.to_string())
    }
}

/// Why an exchange failed, and whether any of the response had come: a request on a reused
/// connection that failed before is sent again on a new one.
#[derive(Debug)]
pub struct ExchangeError {
    pub failure: Failure,
    pub before_response: bool,
}

/// An open connection and its buffers, kept with it between requests.
pub struct Conn {
    stream: TcpStream,
    read: Vec<u8>,
    /// The request being sent (see `http::encode_request`).
    pub write: Vec<u8>,
}

impl Conn {
    /// Connects (no HTTP handshake is needed for HTTP/1.1).
    pub async fn open(addr: SocketAddr) -> Result<Conn, Failure> {
        let stream = TcpStream::connect(addr).await.map_err(|e| match e.kind() {
            std::io::ErrorKind::ConnectionRefused => Failure::Refused,
            _ => Failure::Dial(e.to_string()),
        })?;
        // Requests are written whole; Nagle would only delay them.
        let _ = stream.set_nodelay(true);
        Ok(Conn {
            stream,
            read: Vec::with_capacity(READ_BUF),
            write: Vec::with_capacity(256),
        })
    }

    /// Whether an idle connection can carry a request: nothing has arrived on it since its
    /// last response (a close, or bytes nobody asked for, would have). Checks the readiness
    /// tokio already has from epoll; no system call.
    pub fn idle_usable(&self) -> bool {
        let mut cx = Context::from_waker(Waker::noop());
        matches!(self.stream.poll_read_ready(&mut cx), Poll::Pending)
    }

    /// Sends `self.write` and reads the response to its end; returns the status and whether
    /// the connection can carry another request.
    pub async fn exchange(&mut self, head_request: bool) -> Result<(u16, bool), ExchangeError> {
        let before = |failure| ExchangeError {
            failure,
            before_response: true,
        };
        let during = |failure| ExchangeError {
            failure,
            before_response: false,
        };
        self.stream
            .write_all(&self.write)
            .await
            .map_err(|e| before(Failure::io("write", &e)))?;
        self.read.clear();
        let mut response = Response::new(head_request);
        let mut received = false;
        loop {
            if self.read.capacity() - self.read.len() < READ_BUF / 4 {
                self.read.reserve(READ_BUF);
            }
            let n = match self.stream.read_buf(&mut self.read).await {
                Ok(n) => n,
                Err(e) if received => return Err(during(Failure::io("read", &e))),
                Err(e) => return Err(before(Failure::io("read", &e))),
            };
            if n == 0 {
                return match response.closed() {
                    Ok(()) => Ok((response.status(), false)),
                    Err(e) if received => Err(during(Failure::http(&e))),
                    Err(e) => Err(before(Failure::http(&e))),
                };
            }
            received = true;
            match response.advance(&mut self.read) {
                Ok(true) => return Ok((response.status(), response.keep_alive())),
                Ok(false) => {}
                Err(e) => return Err(during(Failure::http(&e))),
            }
        }
    }
}
