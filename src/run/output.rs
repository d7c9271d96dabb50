//! The load generator's output kept once it has ended: the raw file (gzipped), requests.csv
//! converted from it, and the figures the run's record takes from them (the frame, a ramp's
//! saturation, the measured phase's summary).

use std::collections::BTreeMap;
use std::path::Path;

use super::execute::{write, EventLog, ExecuteError, Running};
use super::judge::ramp_terms;
use crate::analysis::judging::Rule;
use crate::analysis::live::LiveRamp;
use crate::analysis::objective::JudgedWindows;
use crate::analysis::routes::{self, Tally};
use crate::analysis::saturation::{self, Saturation};
use crate::engine::runtime::RuntimeError;
use crate::rundir;
use crate::rundir::events::RunEvent;
use crate::rundir::frame::{Frame, FrameInputs, RampStop, Span};
use crate::rundir::record::{Ending, Measured, RunRecord};
use crate::rundir::requests::{self, LoadSummary, RequestsError};
use crate::spec::load::LoadScript;
use crate::validity::Window;

/// Keeps the output `raw` downloaded from the load generator and records what it measured;
/// hands back the requests' start times (for the validity checks), none when there is no
/// output to read (a warning says why) or requests.csv does not read back (the run failed).
pub(super) fn keep(
    r: &Running<'_>,
    script: &LoadScript,
    raw: Result<Vec<u8>, RuntimeError>,
    live: Option<&LiveRamp>,
    stopped: Option<RampStop>,
    events: &mut EventLog<'_>,
    record: &mut RunRecord,
) -> Result<Vec<i128>, ExecuteError> {
    let bytes = match raw {
        Ok(bytes) if !bytes.is_empty() => bytes,
        Ok(_) => {
            record
                .warnings
                .push("the load generator left no output".into());
            return Ok(Vec::new());
        }
        Err(e) => {
            record.warnings.push(e.to_string());
            return Ok(Vec::new());
        }
    };
    write(r.dir, rundir::load_raw(script.generator), &gzip(&bytes))?;
    let summary = match convert(r.dir, script, &bytes)? {
        Ok(summary) => summary,
        Err(e) => {
            record
                .warnings
                .push(format!("cannot read the load generator's output: {e}"));
            return Ok(Vec::new());
        }
    };
    events.emit(RunEvent::LoadFinished {
        requests: summary.requests,
        dropped_iterations: summary.dropped_iterations,
    });
    record.frame = summary.scenario_start_ns.map(|t0| {
        Frame::of(&FrameInputs {
            plan: r.plan,
            run: r.run,
            script,
            topology: r.topo,
            saturations: r.saturations,
            scenario_start_ns: i128::from(t0),
            stopped,
        })
    });
    let measured = record.frame.as_ref().map(|f| f.measured);
    let csv = r.dir.join(rundir::REQUESTS_CSV);
    let (mut reqs, starts, tallies) = match read_requests(&csv, measured, judged_by(record)) {
        Ok(read) => read,
        Err(e) => {
            record.load = Some(summary);
            record.execution = Ending::Failed {
                reason: e.to_string(),
            };
            return Ok(Vec::new());
        }
    };
    if let Some(f) = &record.frame {
        for u in routes::unexpected(&tallies, &f.expected_4xx) {
            record.warnings.push(u.to_string());
        }
        let t0 = summary.scenario_start_ns;
        reqs.extend(f.judged_by.drops(t0, &summary.dropped_per_second));
    }
    record.saturation = record
        .frame
        .as_ref()
        .and_then(|f| ramp_saturation(f, &reqs));
    if let Some(w) = live_differs(live, record.saturation.as_ref()) {
        record.warnings.push(w);
    }
    record.measured = measured_summary(script, &summary, &reqs).map(|mut m| {
        m.windows = record.frame.as_ref().and_then(|f| phase_windows(f, &reqs));
        m
    });
    record.load = Some(summary);
    Ok(starts)
}

/// The rule the run is judged by: its frame's (none without a frame: by start).
fn judged_by(record: &RunRecord) -> Rule {
    record
        .frame
        .as_ref()
        .map(|f| f.judged_by)
        .unwrap_or_default()
}

/// requests.csv converted from the raw output, written beside the copy followed while the
/// load ran and renamed over it: a crash here leaves one whole file or the other. The outer
/// error is the file's; the inner one says the output does not convert.
fn convert(
    dir: &Path,
    script: &LoadScript,
    bytes: &[u8],
) -> Result<Result<LoadSummary, RequestsError>, ExecuteError> {
    let path = dir.join(rundir::REQUESTS_CSV);
    let staged = dir.join(format!(".{}.partial", rundir::REQUESTS_CSV));
    let out = std::fs::File::create(&staged).map_err(|source| ExecuteError::Write {
        path: staged.clone(),
        source,
    })?;
    let converted = requests::convert_for(
        script.generator,
        bytes,
        std::io::BufWriter::new(out),
        &mut |_| false,
    );
    std::fs::rename(&staged, &path).map_err(|source| ExecuteError::Write {
        path: path.clone(),
        source,
    })?;
    Ok(converted)
}

/// The measured phase's figures, by the run's rule: the requests sent that it places after
/// the warm-up and their latency percentiles, as the report's `requests` and `latency_p*`
/// rows, and the failed share of them and the starts dropped there (none by start), as its
/// `failed_share`.
fn measured_summary(
    script: &LoadScript,
    summary: &LoadSummary,
    reqs: &[saturation::Request],
) -> Option<Measured> {
    let from = Window::measured(script, summary)?.start_ns;
    let measured: Vec<&saturation::Request> = reqs.iter().filter(|r| r.at_ns >= from).collect();
    let mut d: Vec<f64> = measured.iter().filter_map(|r| r.latency_ms).collect();
    d.sort_by(f64::total_cmp);
    let failed = measured.iter().filter(|r| r.failed()).count();
    Some(Measured {
        requests: d.len(),
        p50_ms: saturation::percentile(&d, 50.0),
        p99_ms: saturation::percentile(&d, 99.0),
        failed_share: if measured.is_empty() {
            0.0
        } else {
            failed as f64 / measured.len() as f64
        },
        windows: None,
    })
}

/// The measured phase under the windows rule, the run's verdict; `None` for a step ramp,
/// whose verdicts are its steps'.
fn phase_windows(frame: &Frame, reqs: &[saturation::Request]) -> Option<JudgedWindows> {
    if !frame.steps.is_empty() {
        return None;
    }
    let (_, objective) = ramp_terms(frame);
    let m = &frame.measured;
    Some(saturation::phase_windows(
        reqs, m.start_ns, m.end_ns, &objective,
    ))
}

/// The requests as `rule` judges them, their starts (unix ns, for the validity checks)
/// and each route's tally over the measured phase (none without a frame)
/// (`feedbench_core::routes`).
type Read = (Vec<saturation::Request>, Vec<i128>, BTreeMap<String, Tally>);

/// requests.csv as analysis reads it, read once, just after it was written: a row that
/// does not read back fails the run, naming the file and the row.
fn read_requests(
    requests_csv: &Path,
    measured: Option<Span>,
    rule: Rule,
) -> Result<Read, ExecuteError> {
    let file = std::fs::File::open(requests_csv).map_err(|source| ExecuteError::Write {
        path: requests_csv.to_path_buf(),
        source,
    })?;
    let mut reqs = Vec::new();
    let mut starts = Vec::new();
    let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
    for r in requests::read(std::io::BufReader::new(file)) {
        let r = r.map_err(|e| ExecuteError::Requests {
            path: requests_csv.to_path_buf(),
            source: e,
        })?;
        let start_ns = r.start_ns as i128;
        if measured.is_some_and(|m| (m.start_ns..m.end_ns).contains(&start_ns)) {
            if !tallies.contains_key(&r.route) {
                tallies.insert(r.route.clone(), Tally::default());
            }
            if let Some(t) = tallies.get_mut(&r.route) {
                t.add(r.status);
            }
        }
        starts.push(start_ns);
        reqs.push(r.judged(rule));
    }
    Ok((reqs, starts, tallies))
}

/// A warning when the live judgment of the ramp differs from the one made afterwards from
/// requests.csv (requests that reached the judge after their step was judged).
fn live_differs(live: Option<&LiveRamp>, offline: Option<&Saturation>) -> Option<String> {
    let (live, offline) = (live?, offline?);
    let l = live.saturation();
    let differs = l.rate != offline.rate
        || l.first_breach != offline.first_breach
        || l.transients != offline.transients;
    differs.then(|| {
        format!(
            "the ramp judged live (saturation {:?}, first breach {:?}, transients {:?}) differs from requests.csv ({:?}, {:?}, {:?}); {} requests reached the live judge after their step was judged",
            l.rate, l.first_breach, l.transients, offline.rate, offline.first_breach, offline.transients, live.late()
        )
    })
}

/// k6's output as the run directory keeps it.
fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing into memory cannot fail.
    let _ = gz.write_all(bytes);
    gz.finish().unwrap_or_default()
}

/// A step ramp's saturation from its requests, over the frame's steps (the same steps the
/// report judges); `None` for other profiles.
fn ramp_saturation(frame: &Frame, reqs: &[saturation::Request]) -> Option<Saturation> {
    if frame.steps.is_empty() {
        return None;
    }
    let (steps, objective) = ramp_terms(frame);
    Some(saturation::saturation(
        reqs,
        &steps,
        &objective,
        frame.confirm(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_routes_measured_requests_are_tallied_and_every_request_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(rundir::REQUESTS_CSV);
        let mut text = String::from("start_ns,end_ns,route,method,status,duration_ms,error\n");
        // Warm-up (t = 0, 1) then the measured phase [2, 12): post answers 404 at odd t.
        for t in 0..12u64 {
            let (route, status) = if t % 2 == 1 {
                ("post", 404)
            } else {
                ("feed", 200)
            };
            text.push_str(&format!("{t},{},{route},GET,{status},1,\n", t + 1));
        }
        std::fs::write(&path, text).unwrap();
        let measured = Span {
            start_ns: 2,
            end_ns: 12,
            offered_arrivals: 10.0,
        };
        let (reqs, starts, tallies) = read_requests(&path, Some(measured), Rule::ByStart).unwrap();
        assert_eq!(starts, (0..12).collect::<Vec<i128>>());
        assert_eq!(reqs.len(), 12, "the warm-up's requests are kept");
        let t = |route: &str| (tallies[route].requests, tallies[route].status_4xx);
        assert_eq!((t("feed"), t("post")), ((5, 0), (5, 5)));
        // Undeclared, the post route's 404s are named; declared at 100 %, they are not.
        let named = routes::unexpected(&tallies, &BTreeMap::new());
        assert_eq!(named.len(), 1);
        assert_eq!(named[0].route, "post");
        let declared = BTreeMap::from([("post".to_string(), 1.0)]);
        assert!(routes::unexpected(&tallies, &declared).is_empty());
        // Without a frame, nothing is tallied.
        assert!(read_requests(&path, None, Rule::ByStart)
            .unwrap()
            .2
            .is_empty());
    }
}
