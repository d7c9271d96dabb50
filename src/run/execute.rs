//! Executing one run: deploy, monitors, load, faults on schedule and guards, then the raw
//! data out of the containers and teardown, whatever happened. Everything the run did is an
//! event; everything it measured is a file in the run's directory.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use indexmap::IndexMap;

use super::caps;
use super::follow::Follower;
use super::guards::{self, HostProbe, Trip};
use super::judge::window_judged;
use super::monitor::{self, LinkTarget, MonitorHandle, MonitorOptions, Sampled, Target};
use super::output;
use super::readiness;
use super::supervise::{Load, Supervisor};
use crate::engine::deploy::{
    deploy_placed, save_logs_placed, teardown_placed, DeployError, Deployed, Seeding,
};
use crate::engine::placement::Placement;
use crate::engine::runtime::RuntimeError;
use crate::plan::model::Plan;
use crate::plan::units::{Name, Rate};
use crate::plan::{LoadedPlan, RunSpec};
use crate::rundir::events::{csv_row, Clock, RunEvent, Stamp, CSV_HEADER};
use crate::rundir::record::{Derived, Ending, RunRecord, FORMAT_VERSION};
use crate::rundir::requests;
use crate::rundir::{self, health};
use crate::spec::commands;
use crate::spec::load::{self, LoadScript, LoadSpec};
use crate::spec::topology::{Role, RunTopology, BALANCER_PORT, STATS_PORT};
use crate::validity;

#[derive(Debug, thiserror::Error)]
pub enum ExecuteError {
    #[error("the run directory `{0}` already exists; feedbench never overwrites results")]
    Exists(PathBuf),
    #[error("cannot write `{path}`: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    File(#[from] feedbench_core::files::FileError),
    #[error(transparent)]
    Script(#[from] load::ScriptError),
    #[error(transparent)]
    Deploy(#[from] DeployError),
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    #[error(transparent)]
    Monitor(#[from] monitor::MonitorError),
    #[error(transparent)]
    Record(#[from] crate::rundir::record::RecordError),
    #[error("`{path}` does not read back: {source}")]
    Requests {
        path: PathBuf,
        source: requests::RequestsError,
    },
}

/// Saturations measured earlier in the study, by (contender, repetition, profile).
pub type Saturations = IndexMap<(String, u32, String), (f64, String)>;

/// Writes events to events.csv (flushed at once) and hands them to an observer.
pub struct EventLog<'a> {
    pub(super) clock: Clock,
    file: std::fs::File,
    observer: &'a mut dyn FnMut(&str, Stamp, &RunEvent),
    run_id: String,
    /// The first failed append to events.csv, for the run's warnings.
    lost: Option<String>,
}

impl<'a> EventLog<'a> {
    fn new(
        dir: &Path,
        run_id: &str,
        observer: &'a mut dyn FnMut(&str, Stamp, &RunEvent),
    ) -> Result<Self, ExecuteError> {
        let path = dir.join(rundir::EVENTS_CSV);
        let mut file = std::fs::File::create(&path).map_err(|source| ExecuteError::Write {
            path: path.clone(),
            source,
        })?;
        use std::io::Write;
        file.write_all(CSV_HEADER.as_bytes())
            .map_err(|source| ExecuteError::Write { path, source })?;
        Ok(EventLog {
            clock: Clock::start(),
            file,
            observer,
            run_id: run_id.to_string(),
            lost: None,
        })
    }

    pub fn emit(&mut self, event: RunEvent) {
        use std::io::Write;
        let stamp = self.clock.now();
        // The events file is evidence; a failed write is not fatal, but the run's record
        // says so (the first failure, with what it lost from).
        if !matches!(event, RunEvent::Progress { .. }) {
            if let Err(e) = self.file.write_all(csv_row(stamp, &event).as_bytes()) {
                self.lost.get_or_insert_with(|| {
                    format!(
                        "cannot append to {} from the {} event on: {e}",
                        rundir::EVENTS_CSV,
                        event.kind()
                    )
                });
            }
        }
        (self.observer)(&self.run_id, stamp, &event);
    }
}

/// The rates of a run's profile that derive from saturations, resolved.
pub fn resolve_saturations(
    plan: &Plan,
    run: &RunSpec,
    measured: &Saturations,
) -> Result<(IndexMap<Name, f64>, Vec<Derived>), String> {
    let profile = &plan.profiles[run.profile.as_str()];
    let mut map = IndexMap::new();
    let mut derived = Vec::new();
    for (field, rate) in profile.rates() {
        if let Rate::OfSaturation { profile: from, .. } = rate {
            let key = (run.contender.clone(), run.repetition, from.to_string());
            let (value, source) = measured.get(&key).ok_or_else(|| {
                format!(
                    "`{}` has no measured saturation from `{from}` in repetition {}",
                    run.contender, run.repetition
                )
            })?;
            map.insert(from.clone(), *value);
            derived.push(Derived {
                field: field.to_string(),
                rate: load::resolve(rate, &map).unwrap_or(0.0),
                from: format!(
                    "{rate} = {} × saturation {value} measured by {source}",
                    rate_share(rate)
                ),
            });
        }
    }
    Ok((map, derived))
}

fn rate_share(rate: &Rate) -> String {
    match rate {
        Rate::OfSaturation { share, .. } => share.to_string(),
        Rate::Fixed(_) => String::new(),
    }
}

/// Writes a whole file of the run atomically (`files::write_atomic`).
pub(super) fn write(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), ExecuteError> {
    Ok(feedbench_core::files::write_atomic(&dir.join(name), bytes)?)
}

/// What every part of a run's execution reads: the run, the plan it is of, where it is
/// placed, the saturations its rates derive from, and its directory.
pub(super) struct Running<'a> {
    pub placement: &'a Placement,
    pub plan: &'a Plan,
    pub run: &'a RunSpec,
    pub topo: &'a RunTopology,
    pub saturations: &'a IndexMap<Name, f64>,
    pub dir: &'a Path,
}

impl<'a> Running<'a> {
    /// The injection of the run's fault, if it has one.
    fn injection(&self) -> Option<&'a crate::plan::model::Injection> {
        let name = self.run.fault.as_ref()?;
        self.plan.faults.get(name.as_str()).map(|f| &f.inject)
    }
}

/// Executes one run, deployed as `topo` (its topology, built once by the caller) placed on
/// the engines of `placement`, into `dir` (which must not exist yet).
#[allow(clippy::too_many_arguments)]
pub async fn execute(
    placement: &Placement,
    loaded: &LoadedPlan,
    run: &RunSpec,
    topo: &RunTopology,
    measured: &Saturations,
    dir: &Path,
    observer: &mut dyn FnMut(&str, Stamp, &RunEvent),
) -> Result<RunRecord, ExecuteError> {
    if dir.exists() {
        return Err(ExecuteError::Exists(dir.to_path_buf()));
    }
    std::fs::create_dir_all(dir).map_err(|source| ExecuteError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    let plan = &loaded.plan;
    let topo = &placement.topology(topo);
    let mut events = EventLog::new(dir, &run.id, observer)?;
    let started = events.clock.start_wall_ns();
    let mut record = begun(&run.id, &run.run_hash, &loaded.plan_hash, started);
    let (saturations, derived) = match resolve_saturations(plan, run, measured) {
        Ok(x) => x,
        Err(reason) => {
            record.execution = Ending::Failed { reason };
            record.cleanup_ok = true;
            return finish(dir, record, &events);
        }
    };
    for d in &derived {
        events.emit(RunEvent::Note {
            text: format!("{}: {} arrivals/s ({})", d.field, d.rate, d.from),
        });
    }
    record.derived = derived;
    let r = Running {
        placement,
        plan,
        run,
        topo,
        saturations: &saturations,
        dir,
    };
    let on_the_run_network = format!("http://{}:{BALANCER_PORT}", Role::Balancer.key());
    let script = load::render(&load_spec(plan, run, &saturations, &on_the_run_network))?;
    write(dir, rundir::HAPROXY_CFG, topo.haproxy_cfg.as_bytes())?;
    write(
        dir,
        rundir::load_input(script.generator),
        script.script.as_bytes(),
    )?;
    record.scheduled_arrivals = Some(script.scheduled_arrivals);
    let Some(probe) = preflight(&r, &mut events, &mut record).await? else {
        record.cleanup_ok = true;
        return finish(dir, record, &events);
    };
    events.emit(RunEvent::Phase {
        phase: "deploy".into(),
    });
    let outcome = measure(&r, &script, &probe, &mut events, &mut record).await;
    events.emit(RunEvent::Phase {
        phase: "teardown".into(),
    });
    take_down(&r, &mut record).await;
    match outcome {
        Ok((starts, cut)) if record.execution == Ending::Completed => {
            assess(&r, &script, starts, cut, &mut events, &mut record)
        }
        Ok(_) => {}
        Err(e) => {
            record.execution = Ending::Failed {
                reason: e.to_string(),
            }
        }
    }
    finish(dir, record, &events)
}

/// Before anything is deployed: the caps against the engine's cores (a warning when they
/// oversubscribe and the plan allows it), and the host's guards. A host already below a
/// guard's floor aborts the run (`None`); a host that cannot be read is said, never passed
/// over in silence.
async fn preflight(
    r: &Running<'_>,
    events: &mut EventLog<'_>,
    record: &mut RunRecord,
) -> Result<Option<HostProbe>, ExecuteError> {
    let rt = &r.placement.system;
    let facts = rt.facts().await?;
    let allowed = r.plan.caps.allow_oversubscription;
    if let Some(w) = r
        .topo
        .fits(facts.cores, allowed)
        .map_err(DeployError::from)?
    {
        events.emit(RunEvent::Note { text: w.clone() });
        record.warnings.push(w);
    }
    let (probe, unguarded) = HostProbe::of(facts.data_root.clone(), r.dir);
    if let Some(w) = unguarded {
        events.emit(RunEvent::Note { text: w.clone() });
        record.warnings.push(w);
    }
    if let Some(address) = r.placement.control {
        events.emit(RunEvent::Note {
            text: format!(
                "the system under test runs on engine `{}` ({address}); the coordinator reaches it at the ports published there, and the host-memory-floor guard reads the coordinator's host",
                r.placement.system_name
            ),
        });
    }
    match probe.read() {
        Ok(reading) => {
            if let Some(t) = guards::check(&r.plan.guards, &reading) {
                abort(events, record, &t);
                return Ok(None);
            }
        }
        Err(e) => unreadable_host(events, record, &e),
    }
    Ok(Some(probe))
}

/// The containers' logs saved, the balancer's exact health transitions written, and the
/// run taken down, whatever happened before.
async fn take_down(r: &Running<'_>, record: &mut RunRecord) {
    let logs = r.dir.join(rundir::LOGS_DIR);
    let balancer_log = match save_logs_placed(r.placement, r.topo, &logs).await {
        Ok(saved) if saved.unread.contains(&Role::Balancer) => {
            record
                .warnings
                .push("the balancer's log could not be read from its engine: no health.csv".into());
            None
        }
        Ok(saved) => saved.balancer,
        Err(_) => {
            record
                .warnings
                .push("some container logs could not be saved".into());
            None
        }
    };
    // Exact health transitions, from HAProxy's own timestamped log (the 1 Hz stats only
    // bound them to the second); none from a log that was not read, whose absence of
    // transitions would be taken for the balancer's.
    if let Some(log) = balancer_log {
        let csv = health::render(&crate::engine::balancer::transitions(&log));
        // Teardown comes next whatever happens here: a failed write is a warning.
        if let Err(e) = write(r.dir, rundir::HEALTH_CSV, csv.as_bytes()) {
            record.warnings.push(e.to_string());
        }
    }
    caps::at_teardown(r, record).await;
    record.cleanup_ok = teardown_placed(r.placement, r.topo).await.is_ok();
}

/// The validity checks of a completed run, up to `cut` when the supervisor stopped the load
/// for a measurement path that could no longer stand (its evidence is in the record
/// already), and whether its fault took effect: each piece of evidence against it is a
/// note and goes into the record.
fn assess(
    r: &Running<'_>,
    script: &LoadScript,
    request_starts: Vec<i128>,
    cut: Option<i128>,
    events: &mut EventLog<'_>,
    record: &mut RunRecord,
) {
    record.validity.extend(validity::caps_changed(&record.caps));
    let until = match (checked_until(record), cut) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let facts = validity::Facts {
        topo: r.topo,
        script,
        load: record.load.as_ref(),
        guards: &r.plan.guards,
        fault: r.injection(),
        checked_until_ns: until,
    };
    match validity::assess(r.dir, &facts, request_starts) {
        Ok(a) => {
            for e in &a.evidence {
                events.emit(RunEvent::Note {
                    text: format!("invalid: {e}"),
                });
            }
            record.validity.extend(a.evidence);
            record.warnings.extend(a.warnings);
            record.host = a.host;
            record.link = a.link;
        }
        Err(e) => record.warnings.push(format!("validity not assessed: {e}")),
    }
}

/// Where the testbed's checks of a ramp stopped at its knee end: at the end of its first
/// breaching step (what the load generator could not send past it is the system's result),
/// or at the stop when no breach was recorded; `None` for every other run.
fn checked_until(record: &RunRecord) -> Option<i128> {
    let frame = record.frame.as_ref()?;
    let stop = frame.stopped?;
    let first = record.saturation.as_ref().and_then(|s| s.first_breach);
    let breach_end = frame
        .steps
        .iter()
        .find(|s| Some(s.rate) == first)
        .map(|s| s.end_ns);
    Some(breach_end.unwrap_or(stop.at_ns).min(stop.at_ns))
}

/// Stamps the run's end and writes its record; a record that cannot be written fails the
/// run (settle then finds no record and aborts it with this reason).
fn finish(dir: &Path, mut record: RunRecord, events: &EventLog) -> Result<RunRecord, ExecuteError> {
    record.ended_wall_ns = events.clock.now().wall_ns;
    record.warnings.extend(events.lost.clone());
    record.write(dir)?;
    Ok(record)
}

/// What the run's load script is rendered from; `base_url` is where the load generator
/// finds the balancer.
fn load_spec<'a>(
    plan: &'a Plan,
    run: &RunSpec,
    saturation: &'a IndexMap<Name, f64>,
    base_url: &'a str,
) -> LoadSpec<'a> {
    let profile = &plan.profiles[run.profile.as_str()];
    LoadSpec {
        profile,
        workload: plan.workload_of(profile),
        objective: &plan.study.objective,
        saturation,
        base_url,
        seed: u64::from(run.repetition),
        max_vus: plan.topology.load_generator.max_in_flight,
        generator: plan.topology.load_generator.kind,
        max_lag_ms: plan.topology.load_generator.max_lag().millis,
    }
}

/// Deploy, sample, load, supervise; the raw data lands in the run's directory. Hands back
/// the requests' start times for the validity checks, and when the load was stopped for a
/// measurement path that could no longer stand (its evidence goes into the record).
async fn measure(
    r: &Running<'_>,
    script: &LoadScript,
    probe: &HostProbe,
    events: &mut EventLog<'_>,
    record: &mut RunRecord,
) -> Result<(Vec<i128>, Option<i128>), ExecuteError> {
    let logs = r.dir.join(rundir::LOGS_DIR);
    let deployed = deploy_placed(
        r.placement,
        r.topo,
        Duration::from_secs(300),
        Some(&logs),
        Seeding::Snapshot,
    )
    .await?;
    record.seed = deployed.snapshot.clone();
    let script = &placed_script(r, script, events).await?;
    let monitors = start_monitors(r, &deployed).await?;
    if let Some(why) = &r.placement.host_shared {
        record.warnings.push(format!("host: not sampled: {why}"));
    }
    let load = start_load(r, script, events).await?;
    caps::at_start(r, record).await;
    let mut supervisor = Supervisor::new(r, script, &load, &deployed, &monitors);
    if let Some(t) = supervisor.until_done(probe, events, record).await {
        abort(events, record, &t);
        let _ = load.lg.kill(&load.container, "SIGKILL").await;
    }
    let ended = supervisor.put_back().await;
    if r.injection().is_some_and(|f| f.restarts_replica()) {
        readiness::keep(r.dir, ended.readiness, record);
    }
    let (stopped, shown) = (ended.stopped, ended.shown);
    let cut = ended.bound.map(|(evidence, at_ns)| {
        record.validity.push(evidence);
        at_ns
    });
    record.monitors = Some(monitors.stop().await?);
    let raw = load
        .lg
        .download(&load.container, commands::output_path(script.generator))
        .await;
    let (live, last) = load.follower.finish(raw.as_deref().ok()).await;
    for (i, v) in last {
        if let Some(e) = window_judged(i, &v, &shown) {
            events.emit(e);
        }
    }
    let starts = output::keep(r, script, raw, live.as_ref(), stopped, events, record)?;
    Ok((starts, cut))
}

/// The script as the load generator runs it. Apart, its target is where the system engine
/// published the balancer, known once it runs: the script is rendered again for it (only
/// its target differs) and the copy in the run directory replaced.
async fn placed_script(
    r: &Running<'_>,
    script: &LoadScript,
    events: &mut EventLog<'_>,
) -> Result<LoadScript, ExecuteError> {
    if r.placement.apart.is_none() {
        return Ok(script.clone());
    }
    let balancer = r
        .topo
        .container(Role::Balancer)
        .map(|c| c.name.clone())
        .unwrap_or_default();
    let at = r
        .placement
        .system
        .published(&balancer, BALANCER_PORT)
        .await?;
    let url = feedbench_core::spec::placement::base_url(at);
    events.emit(RunEvent::Note {
        text: format!(
            "the load generator runs on engine `{}` and reaches the balancer at {url}",
            r.placement.name_of(Role::LoadGenerator)
        ),
    });
    let again = load::render(&load_spec(r.plan, r.run, r.saturations, &url))?;
    write(
        r.dir,
        rundir::load_input(again.generator),
        again.script.as_bytes(),
    )?;
    Ok(again)
}

/// Every container of the run sampled on its own engine, the balancer's stats, and each
/// database link probed through the fault proxy.
async fn start_monitors(
    r: &Running<'_>,
    deployed: &Deployed,
) -> Result<MonitorHandle, ExecuteError> {
    let targets: Vec<Sampled> = r
        .topo
        .containers
        .iter()
        .map(|c| Sampled {
            target: Target::from(c),
            rt: r.placement.of(c.role).clone(),
            remote: r.placement.is_remote(c.role),
        })
        .collect();
    // At the fault proxy's address on the run's network, or where it publishes the link
    // for a coordinator off that network (`spec::placement::controlled`).
    let links = r
        .topo
        .database_links()
        .into_iter()
        .filter_map(|(link, port)| {
            Some(LinkTarget {
                link: link.to_string(),
                addr: deployed.addr(Role::FaultProxy, port)?,
            })
        })
        .collect();
    Ok(monitor::start_placed(
        targets,
        deployed.addr(Role::Balancer, STATS_PORT),
        links,
        r.dir,
        MonitorOptions {
            host: r.placement.host_shared.is_none(),
            ..MonitorOptions::default()
        },
    )
    .await?)
}

/// The script given to the load generator, which is started on its engine and followed
/// into requests.csv as it writes.
async fn start_load<'a>(
    r: &Running<'a>,
    script: &LoadScript,
    events: &mut EventLog<'_>,
) -> Result<Load<'a>, ExecuteError> {
    let container = r
        .topo
        .container(Role::LoadGenerator)
        .map(|c| c.name.clone())
        .unwrap_or_default();
    let lg = r.placement.of(Role::LoadGenerator);
    lg.upload(&container, &[script.file()]).await?;
    lg.start(&container).await?;
    let follower = Follower::start(
        lg,
        &container,
        script.generator,
        r.dir.join(rundir::REQUESTS_CSV),
        // The rule the run's frame records (`Frame::of`), known before the frame is.
        crate::analysis::judging::CURRENT,
    );
    let started = Instant::now();
    events.emit(RunEvent::LoadStarted {
        scheduled_arrivals: script.scheduled_arrivals,
    });
    events.emit(RunEvent::Phase {
        phase: "warmup".into(),
    });
    Ok(Load {
        lg,
        container,
        follower,
        started,
    })
}

/// The host could not be read for the guards: a note and a warning in run.json, since the
/// memory and disk floors were not watched while it lasted.
pub(super) fn unreadable_host(
    events: &mut EventLog<'_>,
    record: &mut RunRecord,
    e: &std::io::Error,
) {
    let w = format!("the host could not be read for the guards ({e}): its memory and disk floors were not watched");
    events.emit(RunEvent::Note { text: w.clone() });
    record.warnings.push(w);
}

/// A guard tripped: the event, and the run's ending.
fn abort(events: &mut EventLog<'_>, record: &mut RunRecord, t: &Trip) {
    events.emit(RunEvent::GuardTripped {
        guard: t.guard.into(),
        figure: t.figure,
        threshold: t.threshold,
        unit: t.unit.into(),
        detail: t.detail.clone(),
    });
    record.execution = Ending::Aborted {
        guard: t.guard.into(),
        figure: t.figure,
        threshold: t.threshold,
        unit: t.unit.into(),
        detail: t.detail.clone(),
    };
}

/// The record of a run just begun: completed until something says otherwise.
pub(super) fn begun(
    run_id: &str,
    run_hash: &str,
    plan_hash: &str,
    started_wall_ns: i128,
) -> RunRecord {
    RunRecord {
        format_version: FORMAT_VERSION,
        run_id: run_id.to_string(),
        run_hash: run_hash.to_string(),
        plan_hash: plan_hash.to_string(),
        execution: Ending::Completed,
        cleanup_ok: false,
        derived: Vec::new(),
        warnings: Vec::new(),
        load: None,
        scheduled_arrivals: None,
        monitors: None,
        saturation: None,
        measured: None,
        validity: Vec::new(),
        frame: None,
        oom_kills: Vec::new(),
        seed: None,
        caps: Vec::new(),
        host: None,
        link: None,
        started_wall_ns,
        ended_wall_ns: 0,
    }
}
