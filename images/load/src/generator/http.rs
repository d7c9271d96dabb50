//! HTTP/1.1 on the wire, without I/O: a request's bytes, and a parser that finds where a
//! response ends (status, framing, keep-alive) while its body is discarded.
//!
//! A general client (hyper) costs about twice the CPU per request here: a connection task,
//! channels between it and the request, a header map per request. The generator needs only
//! this much: one request at a time per connection, bodies never kept.

use std::io::Write;

use thiserror::Error;

/// The longest response head (status line and headers) accepted.
const MAX_HEAD: usize = 64 * 1024;
/// The longest chunk-size or trailer line accepted.
const MAX_LINE: usize = 4 * 1024;

/// A response the parser cannot follow.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HttpError {
    #[error("malformed response: {0}")]
    Malformed(&'static str),
    #[error("response head longer than 64 KiB")]
    HeadTooLarge,
    #[error("connection closed before the response was complete")]
    Incomplete,
}

/// Whether a request path can go on the request line as it is: visible ASCII, no spaces.
pub fn valid_path(path: &str) -> bool {
    path.starts_with('/') && path.bytes().all(|b| (0x21..0x7f).contains(&b))
}

/// Writes a whole request into `out` (cleared first), body included: one write sends it.
pub fn encode_request(
    out: &mut Vec<u8>,
    method: &str,
    path: &str,
    authority: &str,
    body: Option<&[u8]>,
) {
    out.clear();
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    out.extend_from_slice(authority.as_bytes());
    out.extend_from_slice(b"\r\nUser-Agent: feedbench-load/");
    out.extend_from_slice(env!("CARGO_PKG_VERSION").as_bytes());
    out.extend_from_slice(b"\r\n");
    match body {
        Some(body) => {
            out.extend_from_slice(b"Content-Type: application/json\r\n");
            // Writing into a Vec cannot fail.
            let _ = write!(out, "Content-Length: {}\r\n\r\n", body.len());
            out.extend_from_slice(body);
        }
        // A method that carries a body says it has none (as hyper and Go's client do).
        None if matches!(method, "POST" | "PUT" | "PATCH") => {
            out.extend_from_slice(b"Content-Length: 0\r\n\r\n");
        }
        None => out.extend_from_slice(b"\r\n"),
    }
}

/// Where the parser is in a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    /// Body bytes still to skip (Content-Length framing).
    Body(u64),
    ChunkSize,
    ChunkData(u64),
    /// The CRLF after a chunk's data.
    ChunkEnd,
    Trailer,
    /// No length: the body runs to the connection's close.
    UntilClose,
    Done,
}

/// One response being read.
#[derive(Debug, Clone)]
pub struct Response {
    state: State,
    head_request: bool,
    status: u16,
    keep_alive: bool,
}

/// Where `needle` (CRLF or CRLFCRLF) starts in `hay`. A byte that is neither CR nor LF
/// cannot be in a match, so the search skips past it by the needle's length.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let k = needle.len();
    let mut end = k;
    while end <= hay.len() {
        let last = hay[end - 1];
        if last != b'\r' && last != b'\n' {
            end += k;
        } else if &hay[end - k..end] == needle {
            return Some(end - k);
        } else {
            end += 1;
        }
    }
    None
}

fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace());
    let end = bytes.iter().rposition(|b| !b.is_ascii_whitespace());
    match (start, end) {
        (Some(s), Some(e)) => &bytes[s..=e],
        _ => &[],
    }
}

impl Response {
    /// A response to a request of that method (a HEAD response has no body).
    pub fn new(head_request: bool) -> Response {
        Response {
            state: State::Head,
            head_request,
            status: 0,
            keep_alive: false,
        }
    }

    pub fn status(&self) -> u16 {
        self.status
    }

    /// Whether the connection can carry another request once the response has ended.
    pub fn keep_alive(&self) -> bool {
        self.keep_alive && self.state == State::Done
    }

    /// Consumes the bytes of `buf` that belong to the response (they are removed); true
    /// once it has ended.
    pub fn advance(&mut self, buf: &mut Vec<u8>) -> Result<bool, HttpError> {
        let mut at = 0;
        let done = loop {
            let rest = &buf[at..];
            match self.state {
                State::Head => {
                    let Some(end) = find(rest, b"\r\n\r\n") else {
                        if rest.len() > MAX_HEAD {
                            return Err(HttpError::HeadTooLarge);
                        }
                        break false;
                    };
                    self.head(&rest[..end])?;
                    at += end + 4;
                }
                State::Body(0) => self.state = State::Done,
                State::Body(n) | State::ChunkData(n) => {
                    if rest.is_empty() {
                        break false;
                    }
                    let take = n.min(rest.len() as u64);
                    at += take as usize;
                    self.state = match (self.state, n - take) {
                        (State::ChunkData(_), 0) => State::ChunkEnd,
                        (State::ChunkData(_), left) => State::ChunkData(left),
                        (_, left) => State::Body(left),
                    };
                }
                State::ChunkSize => {
                    let Some(end) = line_end(rest)? else {
                        break false;
                    };
                    let size = chunk_size(&rest[..end])?;
                    at += end + 2;
                    self.state = match size {
                        0 => State::Trailer,
                        n => State::ChunkData(n),
                    };
                }
                State::ChunkEnd => {
                    if rest.len() < 2 {
                        break false;
                    }
                    if &rest[..2] != b"\r\n" {
                        return Err(HttpError::Malformed("no CRLF after a chunk"));
                    }
                    at += 2;
                    self.state = State::ChunkSize;
                }
                State::Trailer => {
                    let Some(end) = line_end(rest)? else {
                        break false;
                    };
                    at += end + 2;
                    if end == 0 {
                        self.state = State::Done;
                    }
                }
                State::UntilClose => {
                    at = buf.len();
                    break false;
                }
                State::Done => {
                    // Bytes after the response were not asked for: the connection is spent.
                    if at < buf.len() {
                        self.keep_alive = false;
                        at = buf.len();
                    }
                    break true;
                }
            }
        };
        buf.drain(..at);
        Ok(done)
    }

    /// The connection closed: that ends a body running to the close, and is an error
    /// anywhere else.
    pub fn closed(&mut self) -> Result<(), HttpError> {
        match self.state {
            State::UntilClose => {
                self.state = State::Done;
                self.keep_alive = false;
                Ok(())
            }
            State::Done => Ok(()),
            _ => Err(HttpError::Incomplete),
        }
    }

    /// Reads the status line and headers; sets the body's framing.
    fn head(&mut self, head: &[u8]) -> Result<(), HttpError> {
        let mut lines = head
            .split(|&b| b == b'\n')
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
        let status_line = lines.next().unwrap_or_default();
        let version = match status_line.get(..9) {
            Some(b"HTTP/1.1 ") => 1,
            Some(b"HTTP/1.0 ") => 0,
            _ => return Err(HttpError::Malformed("no HTTP/1.x status line")),
        };
        let status = status_line
            .get(9..12)
            .filter(|d| d.iter().all(u8::is_ascii_digit))
            .filter(|_| status_line.get(12).is_none_or(|&b| b == b' '))
            .map(|d| d.iter().fold(0u16, |v, &b| v * 10 + u16::from(b - b'0')))
            .ok_or(HttpError::Malformed("no three-digit status"))?;
        let (mut length, mut chunked, mut other_coding) = (None, false, false);
        let mut keep_alive = version == 1;
        for line in lines {
            let colon = line
                .iter()
                .position(|&b| b == b':')
                .ok_or(HttpError::Malformed("a header line without a colon"))?;
            let (name, value) = (trim(&line[..colon]), trim(&line[colon + 1..]));
            if name.eq_ignore_ascii_case(b"content-length") {
                let n = std::str::from_utf8(value)
                    .ok()
                    .and_then(|v| v.parse::<u64>().ok())
                    .ok_or(HttpError::Malformed("a bad content-length"))?;
                if length.is_some_and(|l| l != n) {
                    return Err(HttpError::Malformed("two content-lengths"));
                }
                length = Some(n);
            } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
                // Chunked must be the last coding; any other leaves the body to the close.
                let last = value.split(|&b| b == b',').next_back().map(trim);
                chunked = last.is_some_and(|c| c.eq_ignore_ascii_case(b"chunked"));
                other_coding = !chunked;
            } else if name.eq_ignore_ascii_case(b"connection") {
                for token in value.split(|&b| b == b',').map(trim) {
                    if token.eq_ignore_ascii_case(b"close") {
                        keep_alive = false;
                    } else if token.eq_ignore_ascii_case(b"keep-alive") {
                        keep_alive = true;
                    }
                }
            }
        }
        if status == 101 {
            return Err(HttpError::Malformed("101 Switching Protocols"));
        }
        if (100..200).contains(&status) {
            // An interim response (100 Continue, 103 Early Hints): the real one follows.
            self.state = State::Head;
            return Ok(());
        }
        self.status = status;
        self.keep_alive = keep_alive;
        self.state = if self.head_request || status == 204 || status == 304 {
            State::Body(0)
        } else if chunked {
            State::ChunkSize
        } else if other_coding {
            State::UntilClose
        } else {
            match length {
                Some(n) => State::Body(n),
                None => State::UntilClose,
            }
        };
        if self.state == State::UntilClose {
            self.keep_alive = false;
        }
        Ok(())
    }
}

/// The end of a CRLF-terminated line at the start of `rest`, if it is all there.
fn line_end(rest: &[u8]) -> Result<Option<usize>, HttpError> {
    match find(rest, b"\r\n") {
        Some(end) => Ok(Some(end)),
        None if rest.len() > MAX_LINE => Err(HttpError::Malformed("a chunk line too long")),
        None => Ok(None),
    }
}

/// A chunk-size line: hex digits, then maybe `;extensions`.
fn chunk_size(line: &[u8]) -> Result<u64, HttpError> {
    let bad = HttpError::Malformed("a bad chunk size");
    let hex = trim(line.split(|&b| b == b';').next().unwrap_or_default());
    if hex.is_empty() || hex.len() > 15 {
        return Err(bad);
    }
    let text = std::str::from_utf8(hex).map_err(|_| bad.clone())?;
    u64::from_str_radix(text, 16).map_err(|_| bad)
}

#[cfg(test)]
mod tests;
