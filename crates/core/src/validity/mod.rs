//! Validity: after a completed run, whether the host was busy outside the study, whether the
//! load generator, the fault proxy or the balancer (rather than the system under test) was
//! the bottleneck, and whether the fault took effect, decided from the run's raw data. Every failed check is a piece of `Evidence`; none means valid.
//!
//! The core (`check`) is pure: parsed samples in, evidence and warnings out. `assess` reads
//! the run directory's CSVs and calls it. docs/results.md, "Validity", says how each figure
//! is recomputed from the files.

mod balancer;
mod binding;
mod caps;
mod cpu;
mod effect;
mod error;
mod host;
mod link;
mod load;
mod oom;
mod read;
mod samples;
mod window;

use std::path::Path;

pub use crate::rundir::host::HostSample;
pub use binding::Binding;
pub use caps::changed as caps_changed;
pub use effect::{Effect, Target, CHECK as FAULT_NOT_APPLIED};
pub use error::ValidityError;
pub use host::{HostRows, CHECK as HOST_INTERFERENCE};
pub use load::Drops;
pub use read::{read_events, read_request_starts, read_samples};
pub use samples::{path_containers, PathContainer, Sample, MEASUREMENT_ROLES};
pub use window::{fault_spans, subtract, EventRow, Window};

pub use crate::evidence::Evidence;
use crate::plan::model::{Guards, Injection};
use crate::rundir::events::FAULT_APPLY_FAILED;
use crate::rundir::requests::LoadSummary;
use crate::spec::load::{LoadScript, Schedule};
use crate::spec::topology::{Role, RunTopology};

/// How far the achieved arrivals may stray from the scheduled ones, either way, in percent.
pub const ARRIVAL_TOLERANCE_PCT: f64 = 2.0;

/// Below this many seconds of fault-free measured window the arrival rate is not checked.
pub const MIN_ARRIVAL_SPAN_S: f64 = 5.0;

/// The thresholds, all in percent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// p95 CPU as a share of the cap.
    pub cpu_ceiling_pct: f64,
    /// Throttled periods as a share of CPU periods.
    pub throttle_ceiling_pct: f64,
    /// Dropped iterations as a share of scheduled arrivals.
    pub dropped_pct: f64,
    /// Achieved against scheduled arrivals, either way.
    pub arrival_tolerance_pct: f64,
    /// CPU used outside the study plus steal, as a share of the host's logical CPUs.
    pub host_interference_pct: f64,
}

impl Limits {
    pub fn from_guards(guards: &Guards) -> Limits {
        Limits {
            cpu_ceiling_pct: guards.measurement_cpu_ceiling.percent,
            throttle_ceiling_pct: guards.measurement_throttle_ceiling.percent,
            dropped_pct: guards.dropped_iterations.percent,
            arrival_tolerance_pct: ARRIVAL_TOLERANCE_PCT,
            host_interference_pct: guards.host_interference.percent,
        }
    }
}

/// What the checks found: evidence (empty = valid) and the checks that could not be
/// evaluated, in words (for the run's warnings; a check that cannot run never passes).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Assessment {
    pub evidence: Vec<Evidence>,
    pub warnings: Vec<String>,
    /// The host's figures over the measured window, where host.csv had them.
    pub host: Option<crate::rundir::host::HostFigures>,
    /// What the probes of a faulted link showed, for a fault on a link (`link`).
    pub link: Option<crate::rundir::links::LinkFigures>,
}

/// What the checks know of the run besides its raw data.
#[derive(Debug, Clone)]
pub struct Run<'a> {
    pub window: Window,
    /// t = 0 of the schedule, unix ns.
    pub scenario_start_ns: i128,
    pub schedule: &'a Schedule,
    /// The measurement-path containers of the topology, with their caps.
    pub containers: &'a [PathContainer],
    /// The starts the load generator dropped, per second; `None` when unknown.
    pub drops: Option<Drops<'a>>,
    /// The run's fault and the container that shows it; `None` without one.
    pub fault: Option<Target>,
}

/// The run's raw data, parsed.
#[derive(Debug, Clone, Default)]
pub struct Data {
    /// containers.csv.
    pub samples: Vec<Sample>,
    /// requests.csv's `start_ns`, unix ns.
    pub request_starts: Vec<i128>,
    /// events.csv.
    pub events: Vec<EventRow>,
    /// host.csv.
    pub host: HostRows,
}

/// Every check, in order: the host's interference, CPU, throttling, dropped iterations,
/// arrival rate, OOM kills, the fault's effect.
pub fn check(run: &Run, data: &Data, limits: &Limits) -> Assessment {
    let mut out = Assessment::default();
    // First: on a host busy outside the study, what the other checks find may be its doing,
    // and the run is set aside under its name.
    host::check_host(
        &data.host,
        run.window,
        limits.host_interference_pct,
        &mut out,
    );
    let containers = samples::with_sampled(run.containers, &data.samples);
    let rows: Vec<(&PathContainer, Vec<&Sample>)> = containers
        .iter()
        .map(|c| (c, samples::rows_of(&data.samples, &c.name)))
        .collect();
    for (c, rows) in &rows {
        if rows.is_empty() {
            out.warnings.push(format!(
                "validity: containers.csv has no rows of {} ({}); its cpu, throttling and oom \
                 checks were not evaluated",
                c.role, c.name
            ));
        }
    }
    let present = rows.iter().filter(|(_, r)| !r.is_empty());
    for (c, r) in present.clone() {
        cpu::check_cpu(c, r, run.window, limits.cpu_ceiling_pct, &mut out);
    }
    for (c, r) in present.clone() {
        cpu::check_throttling(c, r, run.window, limits.throttle_ceiling_pct, &mut out);
    }
    let loadgen = containers
        .iter()
        .find(|c| c.role == "load-generator")
        .map(|c| c.name.clone());
    // Whether the generator's own CPU or throttling check failed: then its drops at the
    // connection cap are its own, not the system under test's.
    let generator_failed = out.evidence.iter().any(|e| e.role == "load-generator");
    load::check_dropped(
        run,
        loadgen.clone(),
        limits.dropped_pct,
        generator_failed,
        &mut out,
    );
    let faults = fault_spans(&data.events);
    load::check_arrivals(
        run,
        &data.request_starts,
        &faults,
        (loadgen, generator_failed),
        limits.arrival_tolerance_pct,
        &mut out,
    );
    for (c, r) in present {
        oom::check_oom(c, r, &mut out);
    }
    check_fault(run.fault.as_ref(), data, &mut out);
    out
}

/// The fault's check (`effect::check_fault`), from the container's rows and the events.
fn check_fault(target: Option<&Target>, data: &Data, out: &mut Assessment) {
    let rows = target.map_or_else(Vec::new, |t| samples::rows_of(&data.samples, &t.container));
    effect::check_fault(target, &rows, &data.events, out);
}

/// The fault judged from the files beside the samples: a link's from links.csv, a killed or
/// stopped replica's from health.csv. Both paths of `assess` end with it.
fn check_fault_files(
    dir: &Path,
    facts: &Facts<'_>,
    target: Option<&Target>,
    events: &[EventRow],
    out: &mut Assessment,
) {
    check_link(dir, facts, target, events, out);
    check_taken_out(dir, facts, target, events, out);
}

/// A fault on a link, judged from links.csv (`link::check_link`) unless an action applying
/// it was refused, which `check_fault` makes the evidence. A damaged links.csv costs this
/// check alone, said in a warning.
fn check_link(
    dir: &Path,
    facts: &Facts<'_>,
    target: Option<&Target>,
    events: &[EventRow],
    out: &mut Assessment,
) {
    let Some(inject) = facts.fault.filter(|f| f.link().is_some()) else {
        return;
    };
    if events.iter().any(|e| e.event == FAULT_APPLY_FAILED) {
        return;
    }
    match crate::rundir::links::read(dir) {
        Ok(rows) => {
            let proxy = target.map(|t| t.container.as_str());
            link::check_link(inject, rows.as_deref(), events, proxy, out);
        }
        Err(e) => out.warnings.push(format!(
            "validity: {FAULT_NOT_APPLIED} of fault-proxy not evaluated: {e}"
        )),
    }
}

/// A killed or stopped replica taken out by the balancer, judged from health.csv
/// (`balancer::check_taken_out`) unless a refused action or its samples are evidence
/// already (a missing DOWN would say the same again); where the samples could not tell, the
/// balancer's DOWN still can. A missing or damaged health.csv costs this check alone, said
/// in a warning; a damaged readiness.csv leaves the span at the clear, and a DOWN not found
/// there is not evaluated (it may have come while the replica booted).
fn check_taken_out(
    dir: &Path,
    facts: &Facts<'_>,
    target: Option<&Target>,
    events: &[EventRow],
    out: &mut Assessment,
) {
    let Some(target) = target.filter(|t| t.effect == Some(Effect::Down)) else {
        return;
    };
    if out.evidence.iter().any(|e| e.check == FAULT_NOT_APPLIED) {
        return;
    }
    let rows = crate::rundir::health::read(dir).map_err(|e| e.to_string());
    let unready_until = match crate::rundir::readiness::read(dir) {
        Ok(attempts) => {
            Ok(attempts.and_then(|a| balancer::unready_until(&a, &target.role, events)))
        }
        Err(e) => Err(e.to_string()),
    };
    let balancer = facts
        .topo
        .container(Role::Balancer)
        .map(|c| c.name.as_str());
    balancer::check_taken_out(
        target,
        rows.as_deref().map_err(Clone::clone),
        events,
        unready_until,
        &facts.topo.balancer_check,
        balancer,
        out,
    );
}

/// What `assess` knows of a completed run besides its directory.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    pub topo: &'a RunTopology,
    pub script: &'a LoadScript,
    /// requests.csv's summary; without it the measured window is unknown.
    pub load: Option<&'a LoadSummary>,
    pub guards: &'a Guards,
    /// The run's fault, if any.
    pub fault: Option<&'a Injection>,
    /// For a ramp stopped at its knee, the end of its first breaching step.
    pub checked_until_ns: Option<i128>,
}

/// Reads the run directory's containers.csv, events.csv and host.csv (and, for a fault,
/// links.csv or health.csv) and checks them with the
/// requests' start times (requests.csv's `start_ns`, which the executor has read already).
/// A ramp stopped at its knee is judged up to `checked_until_ns`, the end of its first
/// breaching step: past it, what the load generator could not send is the system under
/// test's result. An unreadable file is an error: the caller records it as a warning, never
/// as a valid run. A run whose measured window is unknown has only its fault checked, and a
/// warning that the rest was not.
pub fn assess(
    dir: &Path,
    facts: &Facts<'_>,
    request_starts: Vec<i128>,
) -> Result<Assessment, ValidityError> {
    let data = Data {
        samples: read_samples(&dir.join(crate::rundir::CONTAINERS_CSV))?,
        request_starts,
        events: read_events(&dir.join(crate::rundir::EVENTS_CSV))?,
        // A damaged host.csv costs the host's check alone, never the measurement path's.
        host: match crate::rundir::host::read(dir) {
            Ok(Some(rows)) => HostRows::Read(rows),
            Ok(None) => HostRows::Absent,
            Err(e) => HostRows::Unreadable(e.to_string()),
        },
    };
    let fault = facts.fault.and_then(|f| effect::target_of(f, facts.topo));
    let mut out = Assessment::default();
    if let (Some(f), None) = (facts.fault, &fault) {
        out.warnings.push(format!(
            "validity: {FAULT_NOT_APPLIED} of the {} fault not evaluated: the run's topology \
             has not its container",
            f.kind()
        ));
    }
    let (load, window) = match measured(facts) {
        Ok(found) => found,
        Err(e) => {
            // The fault's check needs no window: a refused fault is evidence all the same.
            check_fault(fault.as_ref(), &data, &mut out);
            check_fault_files(dir, facts, fault.as_ref(), &data.events, &mut out);
            out.warnings.push(format!(
                "validity: the measurement path was not assessed: {e}"
            ));
            return Ok(out);
        }
    };
    let containers = path_containers(facts.topo);
    let run = Run {
        window,
        scenario_start_ns: load.scenario_start_ns.map_or(0, i128::from),
        schedule: &facts.script.schedule,
        containers: &containers,
        drops: Some(Drops {
            per_second: &load.dropped_per_second,
            late_per_second: load
                .generator
                .is_some()
                .then_some(&load.late_per_second[..]),
        }),
        fault,
    };
    let checked = check(&run, &data, &Limits::from_guards(facts.guards));
    out.evidence.extend(checked.evidence);
    out.warnings.extend(checked.warnings);
    out.host = checked.host;
    // Last, so that the measurement path's evidence, first, names where a run is set aside.
    check_fault_files(dir, facts, run.fault.as_ref(), &data.events, &mut out);
    Ok(out)
}

/// The run's load summary and its measured window, up to `checked_until_ns`.
fn measured<'a>(facts: &Facts<'a>) -> Result<(&'a LoadSummary, Window), ValidityError> {
    let load = facts.load.ok_or(ValidityError::NoWindow("load summary"))?;
    let mut window =
        Window::measured(facts.script, load).ok_or(ValidityError::NoWindow("scenario start"))?;
    if let Some(at) = facts.checked_until_ns {
        window.end_ns = window.end_ns.min(at).max(window.start_ns);
    }
    Ok((load, window))
}

/// A short, directory-safe reason from the first evidence, e.g. `fault-proxy-cpu`.
pub fn reason(evidence: &[Evidence]) -> String {
    let Some(e) = evidence.first() else {
        return "unspecified".into();
    };
    let raw = format!("{}-{}", e.role, e.check).to_ascii_lowercase();
    let mut out = String::new();
    for c in raw.chars() {
        let c = if c.is_ascii_alphanumeric() { c } else { '-' };
        if !(c == '-' && (out.is_empty() || out.ends_with('-'))) {
            out.push(c);
        }
    }
    let out = out.trim_end_matches('-');
    if out.is_empty() {
        "unspecified".into()
    } else {
        out.into()
    }
}

#[cfg(test)]
mod tests;
