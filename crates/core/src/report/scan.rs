//! requests.csv's fast path: a file without a quote character is split on newlines and
//! commas by hand and its numbers parsed straight from the bytes, about five times faster
//! than the general CSV reader (a study's requests are most of what the report reads). A
//! file with a quote anywhere (an error message holding a comma, say) goes to the general
//! reader instead, so no RFC 4180 rule is reimplemented here. Errors name the file, line and
//! column as the general reader's do.

use std::path::Path;

use super::read::{ReadError, Req, Requests, RouteNames};

/// The fields the report needs, by position in the header.
struct Columns {
    start: usize,
    end: usize,
    status: usize,
    duration: usize,
    /// `scheduled_ns`, which only a native load generator's file has.
    scheduled: Option<usize>,
    route: Option<usize>,
    count: usize,
}

fn int(b: &[u8]) -> Option<i128> {
    let (neg, digits) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        _ => (false, b),
    };
    if digits.is_empty() {
        return None;
    }
    // Unix nanoseconds have 19 digits: u64 arithmetic holds them (checked past that).
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    let v = v as i128;
    Some(if neg { -v } else { v })
}

/// Parses `bytes`, the whole of `path`; `None` when the file holds a quote (use the general
/// reader).
pub fn requests(path: &Path, bytes: &[u8]) -> Option<Result<Requests, ReadError>> {
    if memchr::memchr(b'"', bytes).is_some() {
        return None;
    }
    Some(parse(path, bytes))
}

fn parse(path: &Path, bytes: &[u8]) -> Result<Requests, ReadError> {
    let header_end = memchr::memchr(b'\n', bytes).unwrap_or(bytes.len());
    let header: Vec<&[u8]> = trim_cr(&bytes[..header_end])
        .split(|&b| b == b',')
        .collect();
    let find = |name: &'static str| {
        header
            .iter()
            .position(|h| *h == name.as_bytes())
            .ok_or_else(|| ReadError::NoColumn {
                path: path.to_path_buf(),
                column: name,
                file: crate::rundir::REQUESTS_CSV,
            })
    };
    let c = Columns {
        start: find("start_ns")?,
        end: find("end_ns")?,
        status: find("status")?,
        duration: find("duration_ms")?,
        scheduled: find(crate::rundir::requests::SCHEDULED_COLUMN).ok(),
        route: find("route").ok(),
        count: header.len(),
    };
    // Which of the wanted fields each column is (NONE: not wanted).
    const NONE: u8 = u8::MAX;
    let mut slot = vec![NONE; c.count];
    for (k, col) in [
        Some(c.start),
        Some(c.end),
        Some(c.status),
        Some(c.duration),
        c.scheduled,
        c.route,
    ]
    .into_iter()
    .enumerate()
    {
        if let Some(col) = col {
            slot[col] = k as u8;
        }
    }
    let body = bytes.get(header_end + 1..).unwrap_or(&[]);
    let mut out = Vec::with_capacity(body.len() / 48);
    let mut wanted: [&[u8]; 6] = [&[]; 6];
    let mut routes = RouteNames::default();
    let mut field = 0usize;
    let mut from = 0usize;
    let mut line_no: u64 = 1;
    // One pass over the body for both separators: a comma ends a field, a newline ends a
    // field and its row. Text after the final newline is a last row without one.
    let ends = memchr::memchr2_iter(b',', b'\n', body)
        .chain((body.last().is_some_and(|&b| b != b'\n')).then_some(body.len()));
    for i in ends {
        let row_ends = i == body.len() || body[i] == b'\n';
        let mut f = &body[from..i];
        if row_ends {
            f = trim_cr(f);
        }
        if let Some(&k) = slot.get(field) {
            if k != NONE {
                wanted[k as usize] = f;
            }
        }
        field += 1;
        from = i + 1;
        if !row_ends {
            continue;
        }
        line_no += 1;
        if field == 1 && f.is_empty() {
            if from >= body.len() {
                break; // a blank last line
            }
            return Err(bad(path, line_no, "row", "", "a row (the line is blank)"));
        }
        if field != c.count {
            return Err(ReadError::Bad {
                path: path.to_path_buf(),
                line: line_no,
                column: "row",
                value: format!("{field} fields"),
                expected: "as many fields as the header",
            });
        }
        field = 0;
        let mut r = request(path, line_no, &wanted, c.scheduled.is_some())?;
        if c.route.is_some() {
            r.route = routes.id(wanted[5]).ok_or_else(|| {
                bad(
                    path,
                    line_no,
                    "route",
                    &String::from_utf8_lossy(wanted[5]),
                    "one of at most 65,536 routes",
                )
            })?;
        }
        out.push(r);
    }
    Ok(Requests {
        reqs: out,
        routes: routes.into_names(),
    })
}

/// One row's request from its wanted fields (start, end, status, duration, and scheduled
/// when the file has the column); its route is set by the caller.
fn request(path: &Path, line_no: u64, f: &[&[u8]; 6], scheduled: bool) -> Result<Req, ReadError> {
    let text = |i: usize| String::from_utf8_lossy(f[i]).into_owned();
    let start = int(f[0]).ok_or_else(|| bad(path, line_no, "start_ns", &text(0), "an integer"))?;
    let end = int(f[1]).ok_or_else(|| bad(path, line_no, "end_ns", &text(1), "an integer"))?;
    let status = int(f[2]).filter(|s| (0..=999).contains(s)).ok_or_else(|| {
        bad(
            path,
            line_no,
            "status",
            &text(2),
            "an HTTP status (0 to 999)",
        )
    })?;
    let duration = std::str::from_utf8(f[3])
        .ok()
        .and_then(|t| t.parse::<f64>().ok())
        .filter(|v| v.is_finite())
        .ok_or_else(|| bad(path, line_no, "duration_ms", &text(3), "a number"))?;
    let scheduled_ns = if scheduled {
        Some(int(f[4]).ok_or_else(|| bad(path, line_no, "scheduled_ns", &text(4), "an integer"))?)
    } else {
        None
    };
    Ok(Req {
        start_ns: start,
        end_ns: end,
        status: status as u16,
        duration_ms: duration,
        scheduled_ns,
        route: 0,
    })
}

fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn bad(
    path: &Path,
    line: u64,
    column: &'static str,
    value: &str,
    expected: &'static str,
) -> ReadError {
    ReadError::Bad {
        path: path.to_path_buf(),
        line,
        column,
        value: value.to_string(),
        expected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fast_path_reads_what_the_general_reader_reads() {
        let text = "start_ns,end_ns,route,method,status,duration_ms,error\n20,30,a,GET,200,1.5,\n10,15,a,GET,0,0,1212 dial: refused\n";
        let read = requests(Path::new("requests.csv"), text.as_bytes())
            .unwrap()
            .unwrap();
        let r = &read.reqs;
        assert_eq!(r.len(), 2);
        assert_eq!(read.routes, ["a"]);
        assert_eq!(
            (r[0].start_ns, r[0].end_ns, r[0].status, r[0].duration_ms),
            (20, 30, 200, 1.5)
        );
        assert_eq!(r[1].status, 0);
        assert!(
            requests(Path::new("x"), b"a\n\"q\"\n").is_none(),
            "a quote: the general reader"
        );
    }

    #[test]
    fn both_readers_agree_on_line_endings_column_order_and_a_missing_last_newline() {
        let dir = tempfile::tempdir().unwrap();
        let mut state = 3u64;
        let mut rows = Vec::new();
        for i in 0..500u64 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let status = [200, 200, 503, 0, 404][(state >> 40) as usize % 5];
            let start = 1_800_000_000_000_000_000u64 + (state >> 20) % 1_000_000_000;
            let d = (state >> 33) % 100_000;
            rows.push((
                start,
                start + d * 1000,
                status,
                format!("{}.{:03}", d / 1000, d % 1000),
                i,
            ));
        }
        for (eol, last_newline) in [("\n", true), ("\r\n", true), ("\n", false), ("\r\n", false)] {
            // The fast path's file, and the same rows with one quoted error (the general reader's).
            for quoted in [false, true] {
                let mut text =
                    format!("error,duration_ms,status,method,route,end_ns,start_ns{eol}");
                for (k, (start, end, status, d, i)) in rows.iter().enumerate() {
                    let error = if quoted && k == 7 {
                        "\"dial, refused\"".to_string()
                    } else {
                        format!("e{i}")
                    };
                    let route = ["feed", "post", "profile"][*i as usize % 3];
                    text.push_str(&format!("{error},{d},{status},GET,{route},{end},{start}"));
                    if k + 1 < rows.len() || last_newline {
                        text.push_str(eol);
                    }
                }
                let file = dir.path().join(crate::rundir::REQUESTS_CSV);
                std::fs::write(&file, &text).unwrap();
                assert_eq!(requests(&file, text.as_bytes()).is_none(), quoted);
                let read = crate::report::read::requests(dir.path()).unwrap();
                assert_eq!(
                    read.reqs.len(),
                    rows.len(),
                    "{eol:?} {last_newline} {quoted}"
                );
                assert_eq!(read.routes.len(), 3, "{:?}", read.routes);
                type Row = (i128, i128, u16, f64, String);
                let mut want: Vec<Row> = rows
                    .iter()
                    .map(|(s, e, st, d, i)| {
                        let route = ["feed", "post", "profile"][*i as usize % 3];
                        (
                            *s as i128,
                            *e as i128,
                            *st as u16,
                            d.parse().unwrap(),
                            route.into(),
                        )
                    })
                    .collect();
                want.sort_by_key(|w| w.0);
                let got: Vec<Row> = read
                    .reqs
                    .iter()
                    .map(|r| {
                        let route = read.routes[usize::from(r.route)].clone();
                        (r.start_ns, r.end_ns, r.status, r.duration_ms, route)
                    })
                    .collect();
                assert_eq!(
                    got.iter().map(|g| g.0).collect::<Vec<_>>(),
                    want.iter().map(|w| w.0).collect::<Vec<_>>()
                );
                let mut g = got.clone();
                let mut w = want.clone();
                g.sort_by(|a, b| a.partial_cmp(b).unwrap());
                w.sort_by(|a, b| a.partial_cmp(b).unwrap());
                assert_eq!(g, w, "{eol:?} {last_newline} {quoted}");
            }
        }
    }

    #[test]
    fn damage_is_named_with_line_and_column() {
        let h = "start_ns,end_ns,route,method,status,duration_ms,error\n";
        for (body, line, column) in [
            ("1,2,a,GET,200,fast,\n", 2, "duration_ms"),
            ("1,2,a,GET,200,1,\n1,2,a,GET,2000,1,\n", 3, "status"),
            ("1,2,a,GET,200,1\n", 2, "row"),
            ("1,2,a,GET,200,1,\n\n1,2,a,GET,200,1,\n", 3, "row"),
            ("x1,2,a,GET,200,1,\n", 2, "start_ns"),
        ] {
            let e = requests(Path::new("r/requests.csv"), format!("{h}{body}").as_bytes())
                .unwrap()
                .unwrap_err();
            match &e {
                ReadError::Bad {
                    line: l, column: c, ..
                } => {
                    assert_eq!((*l, *c), (line, column), "{e}")
                }
                other => panic!("{other}"),
            }
            assert!(e.to_string().contains("r/requests.csv"), "{e}");
        }
    }
}
