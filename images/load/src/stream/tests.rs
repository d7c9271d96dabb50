//! Round trips through the writer and the parser, and damaged lines.

use super::*;

fn row(route: &str, error: &str) -> Row {
    Row {
        start_ns: 1_700_000_000_123_456_789,
        end_ns: 1_700_000_000_223_456_789,
        route: route.into(),
        method: "POST".into(),
        status: 503,
        duration_ms: 98.765,
        error: error.into(),
        scheduled_ns: 1_700_000_000_120_000_000,
    }
}

fn text(write: impl FnOnce(&mut Vec<u8>)) -> String {
    let mut out = Vec::new();
    write(&mut out);
    String::from_utf8(out).expect("UTF-8")
}

#[test]
fn rows_round_trip() {
    for r in [
        row("feed", ""),
        row("feed", "1503"),
        row("a,b", "1000 connection closed, \"early\""),
        row("ünïcode", "1200 dial: no route to host"),
        Row {
            duration_ms: 0.0,
            status: 0,
            ..row("x", "1050 request timeout")
        },
    ] {
        let line = text(|o| write_row(o, &r));
        assert!(line.ends_with('\n') && line.matches('\n').count() == 1);
        assert_eq!(parse_line(&line), Ok(Line::Request(r.clone())), "{line}");
    }
}

#[test]
fn rows_read_as_plain_csv() {
    let r = row("a,b", "1000 said \"no\", twice");
    let line = text(|o| write_row(o, &r));
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(line.as_bytes());
    let record = reader.records().next().expect("a record").expect("CSV");
    assert_eq!(record.len(), COLUMNS.len());
    assert_eq!(&record[2], "a,b");
    assert_eq!(&record[6], "1000 said \"no\", twice");
}

#[test]
fn line_breaks_never_split_a_row() {
    let r = row("feed", "1000 first\nsecond\r\nthird");
    let line = text(|o| write_row(o, &r));
    assert_eq!(line.matches('\n').count(), 1);
    let Ok(Line::Request(back)) = parse_line(&line) else {
        panic!("{line}")
    };
    assert_eq!(back.error, "1000 first second  third");
}

#[test]
fn duration_has_microsecond_precision() {
    let r = Row {
        duration_ms: 1.234_567,
        ..row("a", "")
    };
    let line = text(|o| write_row(o, &r));
    assert!(line.contains(",1.235,"), "{line}");
    let r = Row {
        duration_ms: 1_000_000.5,
        ..row("a", "")
    };
    assert!(text(|o| write_row(o, &r)).contains(",1000000.500,"));
}

#[test]
fn records_round_trip() {
    let start = text(|o| write_start(o, 1_700_000_000_000_000_000));
    assert_eq!(
        start,
        "#feedbench-load format_version=1 scenario_start_ns=1700000000000000000\n"
    );
    assert_eq!(
        parse_line(&start),
        Ok(Line::Start {
            format_version: 1,
            scenario_start_ns: 1_700_000_000_000_000_000
        })
    );
    let header = text(write_header);
    assert_eq!(header, format!("{}\n", COLUMNS.join(",")));
    assert_eq!(parse_line(&header), Ok(Line::Header));
    let second = Second {
        t: 17,
        scheduled: 1000,
        started: 990,
        dropped_cap: 4,
        dropped_late: 6,
        max_lag_ms: 12.5,
        in_flight: 37,
        connections: 40,
    };
    let line = text(|o| write_second(o, &second));
    assert_eq!(line, "#second t=17 scheduled=1000 started=990 dropped_cap=4 dropped_late=6 max_lag_ms=12.500 in_flight=37 connections=40\n");
    assert_eq!(parse_line(&line), Ok(Line::Second(second)));
    for reason in [Reason::Completed, Reason::Interrupted] {
        let end = End {
            requests: 3,
            errors: 1,
            dropped: 2,
            reason,
        };
        let line = text(|o| write_end(o, &end));
        assert_eq!(parse_line(&line), Ok(Line::End(end)));
    }
}

#[test]
fn unknown_keys_are_ignored() {
    let line = "#end requests=1 errors=0 dropped=0 reason=completed later=7";
    assert!(matches!(parse_line(line), Ok(Line::End(_))));
}

#[test]
fn damaged_lines_are_errors() {
    let good = text(|o| write_row(o, &row("a,b", "1000 x, y")));
    // Every truncation of a row, and of each record, is an error or (a prefix that happens
    // to be a whole shorter line) a line: never a panic.
    for cut in 0..good.len() {
        let _ = parse_line(&good[..cut]);
    }
    let cut = &good[..good.len() / 2];
    assert!(parse_line(cut).is_err(), "{cut}");
    let truncated = "1700000000123456789,1700000000223456789,feed,GET";
    assert_eq!(
        parse_line(truncated),
        Err(StreamError::Columns { found: 4 })
    );
    assert_eq!(
        parse_line("1,2,\"open,GET,200,1.0,,3"),
        Err(StreamError::OpenQuote)
    );
    assert_eq!(
        parse_line("1,2,a,GET,2x0,1.0,,3"),
        Err(StreamError::BadValue {
            what: "status",
            text: "2x0".into()
        })
    );
    assert!(parse_line("1,2,a,GET,200,-1,,3").is_err());
    assert!(parse_line("1,2,a,GET,200,NaN,,3").is_err());
    assert!(parse_line("1,2,\"a\"b,GET,200,1,,3").is_err());
    assert!(parse_line("garbage").is_err());
    assert!(parse_line("\u{0}\u{ff}é,,,,,,,").is_err());
    assert_eq!(parse_line(""), Err(StreamError::Empty));
    assert_eq!(
        parse_line("#minute t=1"),
        Err(StreamError::UnknownRecord {
            name: "minute".into()
        })
    );
    assert_eq!(
        parse_line("#second t=1 scheduled=2"),
        Err(StreamError::MissingKey {
            record: "second",
            key: "started"
        })
    );
    assert!(parse_line("#end requests=1 errors=0 dropped=0 reason=maybe").is_err());
    assert!(parse_line("#end requests=1 errors=0 dropped=0 reason=5").is_err());
    assert!(parse_line("#").is_err());
    assert!(parse_line("start_ns,end_ns,route").is_err());
    assert_eq!(
        parse_line("#feedbench-load format_version=2 scenario_start_ns=1"),
        Err(StreamError::Version { found: 2 })
    );
    assert!(parse_line("#feedbench-load format_version=x scenario_start_ns=1").is_err());
}

#[test]
fn errors_say_what_is_wrong() {
    let e = parse_line("1,2,a,GET,200,1.0,,soon").unwrap_err();
    assert_eq!(e.to_string(), "`soon` is not a valid scheduled_ns");
    let e = parse_line("#second t=1").unwrap_err();
    assert_eq!(e.to_string(), "record #second has no `scheduled=`");
}
