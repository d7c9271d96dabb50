//! Reading one line of the output. A damaged line (truncated, garbage) is an error that
//! says what is wrong, never a panic: the reader follows a file that may be cut anywhere.

use std::borrow::Cow;
use std::str::FromStr;

use super::{End, Line, Reason, Row, Second, StreamError, COLUMNS, FORMAT_VERSION};

/// Parses one line, with or without its line end.
pub fn parse_line(line: &str) -> Result<Line, StreamError> {
    let line = line.strip_suffix('\n').unwrap_or(line);
    let line = line.strip_suffix('\r').unwrap_or(line);
    if line.is_empty() {
        return Err(StreamError::Empty);
    }
    if let Some(record) = line.strip_prefix('#') {
        return parse_record(record);
    }
    if line.starts_with("start_ns,") {
        return if line.split(',').eq(COLUMNS) {
            Ok(Line::Header)
        } else {
            Err(StreamError::Header { line: line.into() })
        };
    }
    parse_row(line).map(Line::Request)
}

fn number<T: FromStr>(what: &'static str, text: &str) -> Result<T, StreamError> {
    text.parse().map_err(|_| StreamError::BadValue {
        what,
        text: text.into(),
    })
}

/// Milliseconds: a finite number, at least 0.
fn millis(what: &'static str, text: &str) -> Result<f64, StreamError> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(StreamError::BadValue {
            what,
            text: text.into(),
        }),
    }
}

/// The `key=value` words of a record.
struct Words<'a> {
    record: &'static str,
    words: Vec<&'a str>,
}

impl<'a> Words<'a> {
    fn get(&self, key: &'static str) -> Result<&'a str, StreamError> {
        self.words
            .iter()
            .find_map(|w| w.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
            .ok_or(StreamError::MissingKey {
                record: self.record,
                key,
            })
    }

    fn u64(&self, key: &'static str) -> Result<u64, StreamError> {
        number(key, self.get(key)?)
    }
}

fn parse_record(text: &str) -> Result<Line, StreamError> {
    let mut words = text.split_ascii_whitespace();
    let name = words.next().unwrap_or("");
    let record = match name {
        "feedbench-load" => "feedbench-load",
        "second" => "second",
        "end" => "end",
        _ => return Err(StreamError::UnknownRecord { name: name.into() }),
    };
    let w = Words {
        record,
        words: words.collect(),
    };
    match record {
        "feedbench-load" => {
            let format_version = number("format_version", w.get("format_version")?)?;
            if format_version != FORMAT_VERSION {
                return Err(StreamError::Version {
                    found: format_version,
                });
            }
            Ok(Line::Start {
                format_version,
                scenario_start_ns: w.u64("scenario_start_ns")?,
            })
        }
        "second" => Ok(Line::Second(Second {
            t: w.u64("t")?,
            scheduled: w.u64("scheduled")?,
            started: w.u64("started")?,
            dropped_cap: w.u64("dropped_cap")?,
            dropped_late: w.u64("dropped_late")?,
            max_lag_ms: millis("max_lag_ms", w.get("max_lag_ms")?)?,
            in_flight: w.u64("in_flight")?,
            connections: w.u64("connections")?,
        })),
        _ => {
            let reason = match w.get("reason")? {
                "completed" => Reason::Completed,
                "interrupted" => Reason::Interrupted,
                other => {
                    return Err(StreamError::BadValue {
                        what: "reason (completed or interrupted)",
                        text: other.into(),
                    })
                }
            };
            Ok(Line::End(End {
                requests: w.u64("requests")?,
                errors: w.u64("errors")?,
                dropped: w.u64("dropped")?,
                reason,
            }))
        }
    }
}

/// Splits a CSV line: a field is bare text up to the next comma, or quoted with `""` for a
/// quote inside.
fn fields(line: &str) -> Result<Vec<Cow<'_, str>>, StreamError> {
    let mut fields = Vec::with_capacity(COLUMNS.len());
    let mut rest = line;
    loop {
        let Some(mut s) = rest.strip_prefix('"') else {
            match rest.split_once(',') {
                Some((field, after)) => {
                    fields.push(Cow::Borrowed(field));
                    rest = after;
                    continue;
                }
                None => {
                    fields.push(Cow::Borrowed(rest));
                    return Ok(fields);
                }
            }
        };
        let mut field = String::new();
        loop {
            let (text, after) = s.split_once('"').ok_or(StreamError::OpenQuote)?;
            field.push_str(text);
            match after.strip_prefix('"') {
                Some(after) => {
                    field.push('"');
                    s = after;
                }
                None => {
                    s = after;
                    break;
                }
            }
        }
        fields.push(Cow::Owned(field));
        if s.is_empty() {
            return Ok(fields);
        }
        rest = s.strip_prefix(',').ok_or_else(|| StreamError::BadValue {
            what: "quoted field (text after its closing quote)",
            text: line.into(),
        })?;
    }
}

fn parse_row(line: &str) -> Result<Row, StreamError> {
    let f = fields(line)?;
    if f.len() != COLUMNS.len() {
        return Err(StreamError::Columns { found: f.len() });
    }
    let mut f = f.into_iter();
    // Eight fields, counted above.
    let mut next = || f.next().expect("eight fields");
    Ok(Row {
        start_ns: number("start_ns", &next())?,
        end_ns: number("end_ns", &next())?,
        route: next().into_owned(),
        method: next().into_owned(),
        status: number("status", &next())?,
        duration_ms: millis("duration_ms", &next())?,
        error: next().into_owned(),
        scheduled_ns: number("scheduled_ns", &next())?,
    })
}
