//! The stream's conversion on literal streams: the format is pinned here as written in
//! docs/load-generator.md, not by feedbench-load's own writer.

use super::*;
use crate::rundir::requests::read;

const STREAM: &str = "\
#feedbench-load format_version=1 scenario_start_ns=1796010650000000000
start_ns,end_ns,route,method,status,duration_ms,error,scheduled_ns
1796010650000100000,1796010650001300000,feed,GET,200,1.100000,,1796010650000000000
1796010650100200000,1796010650100900000,post,POST,500,0.600000,1500,1796010650100000000
#second t=0 scheduled=10 started=8 dropped_cap=1 dropped_late=1 max_lag_ms=260.5 in_flight=3 connections=4
1796010651000000000,1796010656000000000,feed,GET,0,5000.000000,\"1050 request timeout, after 5s\",1796010651000000000
#second t=1 scheduled=10 started=10 dropped_cap=0 dropped_late=0 max_lag_ms=0.2 in_flight=5 connections=5
#end requests=3 errors=2 dropped=2 reason=completed
";

fn run(input: &[u8]) -> Result<(LoadSummary, Vec<Request>, String), RequestsError> {
    let mut out = Vec::new();
    let mut starts = Vec::new();
    let mut rows = 0;
    let mut told: Vec<u64> = Vec::new();
    let summary = convert_with(input, &mut out, &mut |s| {
        match s {
            Seen::ScenarioStart(ns) => starts.push(ns),
            Seen::Request(_) => rows += 1,
            Seen::Dropped { second, count } => {
                let i = second as usize;
                told.resize(told.len().max(i + 1), 0);
                told[i] += count;
            }
        }
        false
    })?;
    assert_eq!(starts.len(), 1);
    assert_eq!(rows, summary.requests);
    // The drops told as they were read are the summary's, second by second.
    let mut counted = summary.dropped_per_second.clone();
    counted.truncate(told.len());
    assert_eq!(told, counted);
    let text = String::from_utf8(out.clone()).expect("utf-8");
    let back = read(out.as_slice())
        .collect::<Result<Vec<_>, _>>()
        .expect("reads back");
    Ok((summary, back, text))
}

#[test]
fn rows_pass_through_with_their_scheduled_instant() {
    let (s, rows, text) = run(STREAM.as_bytes()).unwrap();
    assert!(
        text.starts_with("start_ns,end_ns,route,method,status,duration_ms,error,scheduled_ns\n")
    );
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[1].error, "1500");
    assert_eq!(rows[2].error, "1050 request timeout, after 5s");
    assert_eq!(rows[0].scheduled_ns, Some(1796010650000000000));
    assert_eq!((s.requests, s.errors), (3, 2));
    assert_eq!(s.scenario_start_ns, Some(1796010650000000000));
    assert_eq!(s.generator.as_deref(), Some("native"));
    assert_eq!(s.ended.as_deref(), Some("completed"));
}

#[test]
fn seconds_become_dropped_starts_lags_and_concurrency() {
    let (s, _, _) = run(STREAM.as_bytes()).unwrap();
    assert_eq!(s.dropped_per_second, vec![2, 0]);
    assert_eq!(s.late_per_second, vec![1, 0]);
    assert_eq!(s.max_lag_ms_per_second, vec![260.5, 0.2]);
    assert_eq!(s.dropped_iterations, 2);
    assert_eq!((s.max_vus, s.max_vus_max), (5, 5));
}

#[test]
fn a_gzipped_stream_reads_the_same() {
    use std::io::Write as _;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(STREAM.as_bytes()).unwrap();
    let (s, rows, _) = run(&gz.finish().unwrap()).unwrap();
    assert_eq!((s.requests, rows.len()), (3, 3));
}

#[test]
fn a_last_line_cut_off_keeps_the_rows_before_it() {
    let cut = &STREAM[..STREAM.find("#second t=1").unwrap() + 20];
    let (s, rows, _) = run(cut.as_bytes()).unwrap();
    assert_eq!(rows.len(), 3);
    assert!(s.truncated.as_deref().unwrap().contains("line 7"), "{s:?}");
    assert_eq!(s.ended, None);
}

#[test]
fn a_damaged_line_in_the_middle_is_an_error_naming_it() {
    let damaged = STREAM.replace("feed,GET,200,1.100000", "feed,GET,2x0,1.100000");
    let e = run(damaged.as_bytes()).unwrap_err();
    assert!(matches!(e, RequestsError::Stream { line: 3, .. }), "{e}");
    let garbage = STREAM.replace("#second t=0", "#sekond t=0");
    let e = run(garbage.as_bytes()).unwrap_err();
    assert!(matches!(e, RequestsError::Stream { line: 5, .. }), "{e}");
}

#[test]
fn a_second_years_away_allocates_nothing() {
    let far = STREAM.replace("#second t=1 ", "#second t=99999999999 ");
    let (s, _, _) = run(far.as_bytes()).unwrap();
    assert_eq!(s.dropped_per_second.len(), 1);
}
