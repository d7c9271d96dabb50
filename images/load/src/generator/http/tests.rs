//! The request encoder and the response parser, fed whole and byte by byte.

use super::*;

/// Feeds `wire` in pieces of `step` bytes; returns (status, keep_alive) at the end.
fn parse(wire: &[u8], head_request: bool, step: usize) -> Result<(u16, bool), HttpError> {
    let mut response = Response::new(head_request);
    let mut buf = Vec::new();
    for piece in wire.chunks(step.max(1)) {
        buf.extend_from_slice(piece);
        if response.advance(&mut buf)? {
            return Ok((response.status(), response.keep_alive()));
        }
    }
    response.closed()?;
    Ok((response.status(), response.keep_alive()))
}

/// Parses at every piece size, asserting they agree.
fn parse_all(wire: &[u8], head_request: bool) -> Result<(u16, bool), HttpError> {
    let whole = parse(wire, head_request, wire.len());
    for step in 1..wire.len() {
        assert_eq!(parse(wire, head_request, step), whole, "step {step}");
    }
    whole
}

#[test]
fn content_length_bodies() {
    let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX: y\r\n\r\nhello";
    assert_eq!(parse_all(wire, false), Ok((200, true)));
    let empty = b"HTTP/1.1 503 Service Unavailable\r\ncontent-length:0\r\n\r\n";
    assert_eq!(parse_all(empty, false), Ok((503, true)));
}

#[test]
fn chunked_bodies_with_extensions_and_trailers() {
    let wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n\
        5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\n";
    assert_eq!(parse_all(wire, false), Ok((200, true)));
    let cut = &wire[..wire.len() - 2];
    assert_eq!(parse(cut, false, cut.len()), Err(HttpError::Incomplete));
}

#[test]
fn bodies_to_the_close_end_the_connection() {
    let wire = b"HTTP/1.1 200 OK\r\n\r\nall of this is the body";
    assert_eq!(parse_all(wire, false), Ok((200, false)));
    let coded = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabcdef";
    assert_eq!(parse_all(coded, false), Ok((200, false)));
}

#[test]
fn keep_alive_follows_version_and_connection() {
    let v10 = b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n";
    assert_eq!(parse_all(v10, false), Ok((200, false)));
    let v10_keep = b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n";
    assert_eq!(parse_all(v10_keep, false), Ok((200, true)));
    let close = b"HTTP/1.1 200 OK\r\nConnection: foo, close\r\nContent-Length: 2\r\n\r\nok";
    assert_eq!(parse_all(close, false), Ok((200, false)));
    let extra = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA";
    assert_eq!(parse(extra, false, extra.len()), Ok((200, false)));
}

#[test]
fn responses_without_bodies() {
    let no_content = b"HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n";
    assert_eq!(parse_all(no_content, false), Ok((204, true)));
    let head = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n";
    assert_eq!(parse_all(head, true), Ok((200, true)));
    let not_modified = b"HTTP/1.1 304 Not Modified\r\n\r\n";
    assert_eq!(parse_all(not_modified, false), Ok((304, true)));
}

#[test]
fn interim_responses_are_skipped() {
    let wire = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\n\
        HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
    assert_eq!(parse_all(wire, false), Ok((201, true)));
}

#[test]
fn malformed_responses_are_errors() {
    let cases: [&[u8]; 8] = [
        b"SSH-2.0-OpenSSH\r\n\r\n",
        b"HTTP/1.1 20 OK\r\n\r\n",
        b"HTTP/1.1 2000 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
    ];
    for wire in cases {
        assert!(
            matches!(parse(wire, false, wire.len()), Err(HttpError::Malformed(_))),
            "{}",
            String::from_utf8_lossy(wire)
        );
    }
    let mut huge = b"HTTP/1.1 200 OK\r\n".to_vec();
    huge.extend(std::iter::repeat_n(b'x', MAX_HEAD + 1));
    assert_eq!(parse(&huge, false, 4096), Err(HttpError::HeadTooLarge));
    let cut = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
    assert_eq!(parse(cut, false, cut.len()), Err(HttpError::Incomplete));
    assert_eq!(parse(b"", false, 1), Err(HttpError::Incomplete));
}

#[test]
fn requests_are_whole() {
    let mut out = Vec::new();
    encode_request(&mut out, "GET", "/feed/7?page=2", "balancer:8080", None);
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        String::from_utf8(out.clone()).expect("ASCII"),
        format!("GET /feed/7?page=2 HTTP/1.1\r\nHost: balancer:8080\r\nUser-Agent: feedbench-load/{version}\r\n\r\n")
    );
    encode_request(&mut out, "POST", "/posts", "b", Some(b"{\"a\":1}"));
    let text = String::from_utf8(out.clone()).expect("ASCII");
    assert!(text.ends_with("Content-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}"));
    encode_request(&mut out, "PUT", "/x", "b", None);
    assert!(out.ends_with(b"Content-Length: 0\r\n\r\n"));
    assert!(valid_path("/a/b?c=1&d=%20"));
    assert!(!valid_path("/a b") && !valid_path("a") && !valid_path("/é"));
}

#[test]
fn find_agrees_with_a_plain_search() {
    let plain = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).position(|w| w == needle);
    // Every string of length <= 7 over {a, \r, \n}.
    let alphabet = [b'a', b'\r', b'\n'];
    for len in 0..=7u32 {
        for code in 0..3usize.pow(len) {
            let hay: Vec<u8> = (0..len)
                .map(|i| alphabet[code / 3usize.pow(i) % 3])
                .collect();
            for needle in [&b"\r\n"[..], b"\r\n\r\n"] {
                assert_eq!(find(&hay, needle), plain(&hay, needle), "{hay:?}");
            }
        }
    }
}
