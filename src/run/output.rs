//! The load generator's output kept once it has ended: the raw file (gzipped), requests.csv
//! converted from it, and the figures the run's record takes from them (the frame, a ramp's
//! saturation, the measured phase's summary).

use std::path::Path;

use super::execute::{write, EventLog, ExecuteError, Running};
use super::judge::ramp_terms;
use crate::analysis::live::LiveRamp;
use crate::analysis::objective::JudgedWindows;
use crate::analysis::saturation::{self, Saturation};
use crate::engine::runtime::RuntimeError;
use crate::rundir;
use crate::rundir::events::RunEvent;
use crate::rundir::frame::{Frame, FrameInputs, RampStop};
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
    let reqs = match read_requests(&r.dir.join(rundir::REQUESTS_CSV)) {
        Ok(reqs) => reqs,
        Err(e) => {
            record.load = Some(summary);
            record.execution = Ending::Failed {
                reason: e.to_string(),
            };
            return Ok(Vec::new());
        }
    };
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
    Ok(reqs.iter().map(|r| r.start_ns).collect())
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

/// The measured phase's figures: requests that started after the warm-up.
fn measured_summary(
    script: &LoadScript,
    summary: &LoadSummary,
    reqs: &[saturation::Request],
) -> Option<Measured> {
    let from = Window::measured(script, summary)?.start_ns;
    let measured: Vec<&saturation::Request> = reqs.iter().filter(|r| r.start_ns >= from).collect();
    let mut d: Vec<f64> = measured.iter().map(|r| r.duration_ms).collect();
    d.sort_by(f64::total_cmp);
    let failed = measured.iter().filter(|r| r.failed()).count();
    Some(Measured {
        requests: measured.len(),
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

/// requests.csv as analysis reads it, read once, just after it was written: a row that
/// does not read back fails the run, naming the file and the row.
fn read_requests(requests_csv: &Path) -> Result<Vec<saturation::Request>, ExecuteError> {
    let file = std::fs::File::open(requests_csv).map_err(|source| ExecuteError::Write {
        path: requests_csv.to_path_buf(),
        source,
    })?;
    requests::read(std::io::BufReader::new(file))
        .map(|r| {
            let r = r.map_err(|e| ExecuteError::Requests {
                path: requests_csv.to_path_buf(),
                source: e,
            })?;
            Ok(saturation::Request {
                start_ns: r.start_ns as i128,
                duration_ms: r.duration_ms,
                status: r.status,
            })
        })
        .collect()
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
