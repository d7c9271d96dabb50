//! The generator's output: a UTF-8 text file with '\n' line ends, which feedbench follows
//! (`tail -F`) while it grows and parses line by line.
//!
//! ```text
//! #feedbench-load format_version=1 scenario_start_ns=<u64 unix ns>
//! start_ns,end_ns,route,method,status,duration_ms,error,scheduled_ns
//! <request rows…>
//! #second t=<u64> scheduled=<u64> started=<u64> dropped_cap=<u64> dropped_late=<u64> max_lag_ms=<f64> in_flight=<u64> connections=<u64>
//! #end requests=<u64> errors=<u64> dropped=<u64> reason=<completed|interrupted>
//! ```
//!
//! Rows and records come in the order they happen. A line is either a CSV row (its first
//! field is a number, so never starts with `#`) or a `#` record of `key=value` words. Every
//! field is one line: the writer turns line breaks into spaces and quotes a field holding a
//! comma or a quote, as CSV does. Readers ignore keys they do not know, so a record may gain
//! keys within a format version.

mod parse;
mod write;

use serde::{Deserialize, Serialize};
use thiserror::Error;

pub use parse::parse_line;
pub use write::{write_end, write_header, write_request, write_row, write_second, write_start};

/// The output format this library writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// The request rows' columns, in order (the header line).
pub const COLUMNS: [&str; 8] = [
    "start_ns",
    "end_ns",
    "route",
    "method",
    "status",
    "duration_ms",
    "error",
    "scheduled_ns",
];

/// One line of the output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Line {
    /// The first line: the format and t = 0 of the schedule (unix ns).
    Start {
        format_version: u32,
        scenario_start_ns: u64,
    },
    /// The CSV header ([`COLUMNS`]).
    Header,
    Request(Row),
    Second(Second),
    End(End),
}

/// One request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Unix ns when the generator took the iteration from the schedule and began it
    /// (before getting a connection).
    pub start_ns: u64,
    /// Unix ns when the response's last byte arrived or the request failed.
    pub end_ns: u64,
    pub route: String,
    pub method: String,
    /// The HTTP status; 0 when no response came.
    pub status: u16,
    /// From the first byte sent (after any connection set-up) to end_ns; written with
    /// microsecond precision. end_ns − start_ns − duration is the connection wait and
    /// set-up, as k6's http_req_blocked.
    pub duration_ms: f64,
    /// Empty for a response below 400; `1000 + status` (k6's error_code) from 400 on; for a
    /// failure without a response a k6-like code and message (`1050 request timeout`,
    /// `1212 dial: connection refused`, `1200 dial: …`, `1000 …`).
    pub error: String,
    /// The scenario start plus the iteration's scheduled offset (unix ns).
    pub scheduled_ns: u64,
}

/// A request row with borrowed text, for writing without allocating.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowRef<'a> {
    pub start_ns: u64,
    pub end_ns: u64,
    pub route: &'a str,
    pub method: &'a str,
    pub status: u16,
    pub duration_ms: f64,
    pub error: &'a str,
    pub scheduled_ns: u64,
}

impl Row {
    /// The row as borrowed text.
    pub fn row_ref(&self) -> RowRef<'_> {
        RowRef {
            start_ns: self.start_ns,
            end_ns: self.end_ns,
            route: &self.route,
            method: &self.method,
            status: self.status,
            duration_ms: self.duration_ms,
            error: &self.error,
            scheduled_ns: self.scheduled_ns,
        }
    }
}

/// What happened to the iterations of one whole second of the schedule.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Second {
    /// The second [t, t + 1) from the scenario start.
    pub t: u64,
    /// Iterations scheduled in it (taken from the schedule: on an interrupted run's last
    /// second, those taken before the interruption).
    pub scheduled: u64,
    /// Of those, started (sent).
    pub started: u64,
    /// Dropped because every connection was busy and the cap reached.
    pub dropped_cap: u64,
    /// Dropped because their start was later than max_lag_ms behind schedule.
    pub dropped_late: u64,
    /// The largest start lag (ms) among them.
    pub max_lag_ms: f64,
    /// The most requests in flight, and open connections, during that second (wall time).
    pub in_flight: u64,
    pub connections: u64,
}

/// The last line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct End {
    /// Request rows written.
    pub requests: u64,
    /// Of those, rows with an error.
    pub errors: u64,
    /// Iterations dropped (cap and late together).
    pub dropped: u64,
    pub reason: Reason,
}

/// Why the generator stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reason {
    /// The schedule ran to its end.
    Completed,
    /// SIGINT or SIGTERM stopped it early.
    Interrupted,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Completed => "completed",
            Reason::Interrupted => "interrupted",
        }
    }
}

/// A line the parser cannot read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum StreamError {
    #[error("an empty line")]
    Empty,
    #[error("unknown record `#{name}` (expected #feedbench-load, #second or #end)")]
    UnknownRecord { name: String },
    #[error("record #{record} has no `{key}=`")]
    MissingKey {
        record: &'static str,
        key: &'static str,
    },
    #[error("`{text}` is not a valid {what}")]
    BadValue { what: &'static str, text: String },
    #[error("format_version {found} is not read here: this reader reads format_version {FORMAT_VERSION}")]
    Version { found: u32 },
    #[error("a request row with {found} columns instead of {} (a truncated or damaged line?)", COLUMNS.len())]
    Columns { found: usize },
    #[error("a request row with a quote left open (a truncated line?)")]
    OpenQuote,
    #[error("a header that is not feedbench-load's: `{line}`")]
    Header { line: String },
}

#[cfg(test)]
mod tests;
