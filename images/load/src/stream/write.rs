//! Writing the output's lines into a byte buffer, allocation-free per row: the generator
//! writes one row per request.

use super::{End, Row, RowRef, Second, COLUMNS, FORMAT_VERSION};
use crate::decimal::digits;

fn push_u64(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(digits(value, &mut [0; 20]).as_bytes());
}

/// Milliseconds with microsecond precision (`12.345`); a negative or non-finite value
/// (never measured) is written as 0.
fn push_millis(out: &mut Vec<u8>, ms: f64) {
    let us = if ms.is_finite() && ms > 0.0 {
        // `as` saturates: an absurd value stays a number.
        (ms * 1000.0).round() as u64
    } else {
        0
    };
    push_u64(out, us / 1000);
    let frac = us % 1000;
    out.extend_from_slice(&[
        b'.',
        b'0' + (frac / 100) as u8,
        b'0' + (frac / 10 % 10) as u8,
        b'0' + (frac % 10) as u8,
    ]);
}

/// A text field: line breaks become spaces (a row is one line); quoted as CSV when it
/// holds a comma or a quote.
fn push_text(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    let special = |b: &u8| matches!(b, b',' | b'"' | b'\n' | b'\r');
    if !bytes.iter().any(special) {
        out.extend_from_slice(bytes);
        return;
    }
    let quote = bytes.iter().any(|&b| b == b',' || b == b'"');
    if quote {
        out.push(b'"');
    }
    for &b in bytes {
        match b {
            b'\n' | b'\r' => out.push(b' '),
            b'"' => out.extend_from_slice(b"\"\""),
            _ => out.push(b),
        }
    }
    if quote {
        out.push(b'"');
    }
}

fn push_key(out: &mut Vec<u8>, key: &str, value: u64) {
    out.push(b' ');
    out.extend_from_slice(key.as_bytes());
    out.push(b'=');
    push_u64(out, value);
}

/// `#feedbench-load format_version=1 scenario_start_ns=…`: the first line.
pub fn write_start(out: &mut Vec<u8>, scenario_start_ns: u64) {
    out.extend_from_slice(b"#feedbench-load");
    push_key(out, "format_version", u64::from(FORMAT_VERSION));
    push_key(out, "scenario_start_ns", scenario_start_ns);
    out.push(b'\n');
}

/// The CSV header, after the first line.
pub fn write_header(out: &mut Vec<u8>) {
    out.extend_from_slice(COLUMNS.join(",").as_bytes());
    out.push(b'\n');
}

/// A request row from borrowed text.
pub fn write_request(out: &mut Vec<u8>, row: &RowRef<'_>) {
    push_u64(out, row.start_ns);
    out.push(b',');
    push_u64(out, row.end_ns);
    out.push(b',');
    push_text(out, row.route);
    out.push(b',');
    push_text(out, row.method);
    out.push(b',');
    push_u64(out, u64::from(row.status));
    out.push(b',');
    push_millis(out, row.duration_ms);
    out.push(b',');
    push_text(out, row.error);
    out.push(b',');
    push_u64(out, row.scheduled_ns);
    out.push(b'\n');
}

/// A request row.
pub fn write_row(out: &mut Vec<u8>, row: &Row) {
    write_request(out, &row.row_ref());
}

/// A `#second` record.
pub fn write_second(out: &mut Vec<u8>, second: &Second) {
    out.extend_from_slice(b"#second");
    push_key(out, "t", second.t);
    push_key(out, "scheduled", second.scheduled);
    push_key(out, "started", second.started);
    push_key(out, "dropped_cap", second.dropped_cap);
    push_key(out, "dropped_late", second.dropped_late);
    out.extend_from_slice(b" max_lag_ms=");
    push_millis(out, second.max_lag_ms);
    push_key(out, "in_flight", second.in_flight);
    push_key(out, "connections", second.connections);
    out.push(b'\n');
}

/// The `#end` record, the last line.
pub fn write_end(out: &mut Vec<u8>, end: &End) {
    out.extend_from_slice(b"#end");
    push_key(out, "requests", end.requests);
    push_key(out, "errors", end.errors);
    push_key(out, "dropped", end.dropped);
    out.extend_from_slice(b" reason=");
    out.extend_from_slice(end.reason.as_str().as_bytes());
    out.push(b'\n');
}
