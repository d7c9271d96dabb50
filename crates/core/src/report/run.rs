//! One run's figures: its files read once, every row of docs/analysis.md computed from
//! them, plus the per-second series and the fault's instants the plots draw.

use std::path::Path;

use super::faults::{self, Instants};
use super::latency::{self, Second};
use super::out::Out;
use super::read::{self, ReadError};
use super::rows::{Row, RunKey};
use super::{judged, ramp, usage};
use crate::analysis::objective::{self, JudgedWindows};
use crate::rundir::frame::Frame;
use crate::rundir::record::RunRecord;

/// What the report keeps of a run: its rows, and what its plots need.
#[derive(Debug, Clone)]
pub struct RunFigures {
    pub key: RunKey,
    pub frame: Frame,
    pub rows: Vec<Row>,
    pub seconds: Vec<Second>,
    pub instants: Option<Instants>,
    /// Per container role, `(second since the measured start, CPU % of cap)`.
    pub cpu: Vec<(String, Vec<(f64, f64)>)>,
    /// Containers of the system under test killed for memory (run.json's `oom_kills`).
    pub oom_kills: Vec<crate::rundir::record::OomKill>,
    /// The objective verdict the run's manifest recorded (the journal's `run-finished`),
    /// shown beside the windows verdict the report computes where they differ.
    pub recorded_objective: Option<String>,
    /// The server whose DOWN `detect_balancer_down` reads (`faults::seen_down`).
    pub seen_down: Option<String>,
}

impl RunFigures {
    /// The run's objective verdict by the windows rule (`analysis::objective::verdict`), from
    /// its `requests`, `objective_windows` and `objective_windows_breached` rows; None for a
    /// step ramp or a run without a measured request.
    pub fn objective_verdict(&self) -> Option<&'static str> {
        let count = |metric: &str| {
            self.rows
                .iter()
                .find(|r| {
                    r.metric == metric
                        && r.definition.is_empty()
                        && r.container.is_empty()
                        && r.step_rate.is_none()
                        && r.second.is_none()
                })
                .and_then(|r| r.value)
                .map(|v| v as usize)
        };
        let windows = match (
            count("objective_windows"),
            count("objective_windows_breached"),
        ) {
            (Some(windows), Some(breached)) => Some(JudgedWindows { windows, breached }),
            _ => None,
        };
        objective::verdict(
            count("requests").unwrap_or(0),
            windows,
            !self.frame.steps.is_empty(),
        )
    }
}

/// Why a standing run could not be analysed.
#[derive(Debug, thiserror::Error)]
pub enum NotAnalysable {
    #[error("its run.json has no frame (written by an older feedbench, or k6 reported no scenario start)")]
    NoFrame,
    #[error(transparent)]
    File(#[from] ReadError),
    #[error("its run.json's frame.expected_4xx.{route} is {value}, not a ratio from 0 to 1")]
    Expected4xx { route: String, value: f64 },
}

pub fn key_of(run: &str, frame: &Frame) -> RunKey {
    RunKey {
        run: run.to_string(),
        contender: frame.contender.clone(),
        variant: frame.variant.clone().unwrap_or_default(),
        profile: frame.profile.clone(),
        fault: frame.fault.clone().unwrap_or_default(),
        repetition: frame.repetition,
    }
}

/// Reads the run directory's files (each once) and computes every figure.
pub fn analyse(dir: &Path, record: &RunRecord) -> Result<RunFigures, NotAnalysable> {
    let frame = record.frame.clone().ok_or(NotAnalysable::NoFrame)?;
    if let Some((route, &value)) = frame
        .expected_4xx
        .iter()
        .find(|(_, v)| !(0.0..=1.0).contains(*v))
    {
        return Err(NotAnalysable::Expected4xx {
            route: route.clone(),
            value,
        });
    }
    let read::Requests { reqs: sent, routes } = read::requests(dir)?;
    // Every figure reads the requests as the run's rule places them; the verdicts also
    // count its dropped starts; the `duration_*` rows read requests.csv as it is.
    let reqs = judged::placed(frame.judged_by, &sent);
    let judged = judged::requests(frame.judged_by, &reqs, record.load.as_ref());
    let samples = read::samples(dir)?;
    let events = read::events(dir)?;
    let health = if frame.fault_window.is_some() {
        read::health(dir)?
    } else {
        Vec::new()
    };
    // Only a replica started again is probed: another run's file would be read by nothing.
    let readiness = match &frame.fault_window {
        Some(f) if f.restarts_a_replica() => read::readiness(dir)?,
        _ => None,
    };
    let key = key_of(&record.run_id, &frame);
    let mut out = Out::new(key.clone());
    let m = frame.measured;
    let answers = latency::Answers::of(&reqs, &routes, &frame.expected_4xx);
    latency::measured(
        &mut out,
        &answers,
        &routes,
        &m,
        (&judged, record.load.as_ref().map(|l| l.dropped_iterations)),
    );
    let instants = faults::instants(&frame, &events, &health);
    let spans = latency::request_spans(&m, instants.as_ref());
    latency::duration_rows(&mut out, &sent, &m);
    latency::qualified_rows(&mut out, (&reqs, &judged), &routes, &spans);
    if frame.steps.is_empty() {
        ramp::phase_rows(&mut out, &judged, &m, &frame.objective);
    }
    let seconds = latency::series(&reqs, &m);
    latency::series_rows(&mut out, &seconds);

    let usage = usage::prepare(&samples, &frame.caps);
    let mut x = out.under("measured");
    usage::rows(&mut x, &usage, &frame.caps, &answers, m.start_ns, m.end_ns);
    out.absorb(x);
    usage::path_rows(&mut out, &usage, &frame.caps, m.start_ns, m.end_ns);
    if let Some(host) = crate::rundir::host::read(dir)? {
        usage::host_rows(&mut out, &host, m.start_ns, m.end_ns);
    }

    if !frame.steps.is_empty() {
        let look = ramp::rows(
            &mut out,
            &judged,
            &frame.steps,
            &frame.objective,
            ramp::Reading {
                stopped: frame.stopped.is_some(),
                confirm: frame.confirm(),
            },
        );
        for s in &frame.steps {
            let mut x = out.under("step").at_step(s.rate);
            usage::rows(&mut x, &usage, &frame.caps, &answers, s.start_ns, s.end_ns);
            out.absorb(x);
        }
        if let Some(i) = look {
            let s = frame.steps[i];
            let mut x = out.under("first-breach").at_step(s.rate);
            usage::rows(&mut x, &usage, &frame.caps, &answers, s.start_ns, s.end_ns);
            out.absorb(x);
        }
    }
    faults::rows(
        &mut out,
        &frame,
        (&reqs, &judged),
        &events,
        &health,
        &seconds,
    );
    faults::ready_row(&mut out, &frame, readiness.as_deref());
    let seen_down = faults::seen_down(&frame, &events, &health);
    let cpu = frame
        .caps
        .iter()
        .map(|(name, cap)| (cap.role.clone(), usage[name].shares_since(m.start_ns)))
        .collect();
    Ok(RunFigures {
        key,
        frame,
        rows: out.rows,
        seconds,
        instants,
        cpu,
        oom_kills: record.oom_kills.clone(),
        recorded_objective: None,
        seen_down,
    })
}

/// Reads and analyses each run directory (with its record) on as many threads as there
/// are cores (at most 4), each thread taking the next run as it finishes one, so memory
/// holds the requests of only as many runs as there are threads. The results come back in
/// the order of `dirs`; `progress(done, total, run)` is called on this thread as runs
/// finish.
pub fn analyse_all(
    dirs: &[(String, std::path::PathBuf)],
    progress: &mut dyn FnMut(usize, usize, &str),
) -> Vec<Result<RunFigures, String>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get().min(4))
        .min(dirs.len().max(1));
    let next = AtomicUsize::new(0);
    let mut out: Vec<Option<Result<RunFigures, String>>> = (0..dirs.len()).map(|_| None).collect();
    progress(0, dirs.len(), dirs.first().map_or("", |d| d.0.as_str()));
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel();
        for _ in 0..threads {
            let tx = tx.clone();
            let next = &next;
            s.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((_, path)) = dirs.get(i) else {
                    break;
                };
                let analysed = std::panic::catch_unwind(|| {
                    let record = RunRecord::read(path).map_err(|e| e.to_string())?;
                    analyse(path, &record).map_err(|e| e.to_string())
                })
                .unwrap_or_else(|_| Err("the analysis stopped unexpectedly".into()));
                if tx.send((i, analysed)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        for (done, (i, analysed)) in rx.iter().enumerate() {
            out[i] = Some(analysed);
            progress(done + 1, dirs.len(), &dirs[i].0);
        }
    });
    out.into_iter()
        .map(|r| r.unwrap_or_else(|| Err("the analysis stopped unexpectedly".into())))
        .collect()
}
