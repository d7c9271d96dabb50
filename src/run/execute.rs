//! Executing one run: deploy, monitors, load, faults on schedule and guards, then the raw
//! data out of the containers and teardown, whatever happened. Everything the run did is an
//! event; everything it measured is a file in the run's directory.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use indexmap::IndexMap;

use super::follow::Follower;
use super::guards::{self, HostProbe, Trip};
use super::monitor::{self, MonitorOptions, Sampled, Target};
use crate::analysis::live::LiveRamp;
use crate::analysis::saturation::{self, Saturation};
use crate::engine::deploy::{
    check_caps, deploy_placed, save_logs_placed, teardown_placed, DeployError, Seeding,
};
use crate::engine::fault_proxy::FaultProxy;
use crate::engine::placement::Placement;
use crate::engine::runtime::{Runtime, RuntimeError};
use crate::plan::model::Plan;
use crate::plan::units::{Name, Rate};
use crate::plan::{LoadedPlan, RunSpec};
use crate::rundir::events::{csv_row, Clock, RunEvent, Stamp, CSV_HEADER};
use crate::rundir::frame::{Frame, FrameInputs, RampStop};
use crate::rundir::record::{Derived, Ending, Measured, OomKill, RunRecord, FORMAT_VERSION};
use crate::rundir::requests::{self, LoadSummary};
use crate::rundir::{self, health};
use crate::spec::faults::{schedule, Action, Edge};
use crate::spec::load::{self, LoadScript, LoadSpec};
use crate::spec::topology::{
    ContainerSpec, Role, RunTopology, BALANCER_PORT, FAULT_PROXY_API_PORT, STATS_PORT,
};
use crate::validity::{self, Window};

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
    clock: Clock,
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
fn write(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), ExecuteError> {
    Ok(feedbench_core::files::write_atomic(&dir.join(name), bytes)?)
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
    let rt = &placement.system;
    let topo = &placement.topology(topo);
    let mut events = EventLog::new(dir, &run.id, observer)?;
    let mut record = RunRecord {
        format_version: FORMAT_VERSION,
        run_id: run.id.clone(),
        run_hash: run.run_hash.clone(),
        plan_hash: loaded.plan_hash.clone(),
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
        started_wall_ns: events.clock.start_wall_ns(),
        ended_wall_ns: 0,
    };

    let (saturation_map, derived) = match resolve_saturations(plan, run, measured) {
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

    let on_the_run_network = format!("http://{}:{BALANCER_PORT}", Role::Balancer.key());
    let script = load::render(&load_spec(plan, run, &saturation_map, &on_the_run_network))?;
    write(dir, rundir::HAPROXY_CFG, topo.haproxy_cfg.as_bytes())?;
    write(
        dir,
        rundir::load_input(script.generator),
        script.script.as_bytes(),
    )?;
    record.scheduled_arrivals = Some(script.scheduled_arrivals);

    let facts = rt.facts().await?;
    if let Some(w) = check_caps(topo, facts.cores, plan.caps.allow_oversubscription)? {
        events.emit(RunEvent::Note { text: w.clone() });
        record.warnings.push(w);
    }

    // A host already below a guard's floor aborts the run before anything is deployed. A
    // host that cannot be read is said, never passed over in silence.
    let (probe, unguarded) = HostProbe::of(rt, dir).await?;
    if let Some(w) = unguarded {
        events.emit(RunEvent::Note { text: w.clone() });
        record.warnings.push(w);
    }
    if let Some(address) = placement.control {
        events.emit(RunEvent::Note {
            text: format!(
                "the system under test runs on engine `{}` ({address}); the coordinator reaches it at the ports published there, and the host-memory-floor guard reads the coordinator's host",
                placement.system_name
            ),
        });
    }
    match probe.read() {
        Ok(r) => {
            if let Some(t) = guards::check(&plan.guards, &r) {
                abort(&mut events, &mut record, &t);
                record.cleanup_ok = true;
                return finish(dir, record, &events);
            }
        }
        Err(e) => unreadable_host(&mut events, &mut record, &e),
    }
    events.emit(RunEvent::Phase {
        phase: "deploy".into(),
    });
    let outcome = measure(
        placement,
        plan,
        run,
        topo,
        &script,
        &saturation_map,
        dir,
        &probe,
        &mut events,
        &mut record,
    )
    .await;
    events.emit(RunEvent::Phase {
        phase: "teardown".into(),
    });
    let logs = dir.join(rundir::LOGS_DIR);
    if save_logs_placed(placement, topo, &logs).await.is_err() {
        record
            .warnings
            .push("some container logs could not be saved".into());
    }
    // Exact health transitions, from HAProxy's own timestamped log (the 1 Hz stats only
    // bound them to the second).
    if let Ok(log) = std::fs::read_to_string(logs.join(rundir::log_file(&Role::Balancer.key()))) {
        let csv = health::render(&crate::engine::balancer::transitions(&log));
        // Teardown comes next whatever happens here: a failed write is a warning.
        if let Err(e) = write(dir, rundir::HEALTH_CSV, csv.as_bytes()) {
            record.warnings.push(e.to_string());
        }
    }
    record.cleanup_ok = teardown_placed(placement, topo).await.is_ok();
    let request_starts = match outcome {
        Ok(starts) => starts,
        Err(e) => {
            record.execution = Ending::Failed {
                reason: e.to_string(),
            };
            Vec::new()
        }
    };
    if record.execution == Ending::Completed {
        match validity::assess(
            dir,
            topo,
            &script,
            record.load.as_ref(),
            record.scheduled_arrivals,
            request_starts,
            &plan.guards,
            record
                .frame
                .as_ref()
                .and_then(|f| f.stopped)
                .map(|s| s.at_ns),
        ) {
            Ok(a) => {
                for e in &a.evidence {
                    events.emit(RunEvent::Note {
                        text: format!("invalid: {e}"),
                    });
                }
                record.validity = a.evidence;
                record.warnings.extend(a.warnings);
            }
            Err(e) => record.warnings.push(format!("validity not assessed: {e}")),
        }
    }
    finish(dir, record, &events)
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
        max_vus: None,
        generator: plan.topology.load_generator.kind,
        max_lag_ms: plan.topology.load_generator.max_lag().millis,
    }
}

/// Deploy, sample, load, inject, guard; the raw data lands in `dir`.
#[allow(clippy::too_many_arguments)]
async fn measure(
    placement: &Placement,
    plan: &Plan,
    run: &RunSpec,
    topo: &RunTopology,
    script: &LoadScript,
    saturations: &IndexMap<Name, f64>,
    dir: &Path,
    probe: &HostProbe,
    events: &mut EventLog<'_>,
    record: &mut RunRecord,
) -> Result<Vec<i128>, ExecuteError> {
    let rt = &placement.system;
    let deployed = deploy_placed(
        placement,
        topo,
        Duration::from_secs(300),
        Some(&dir.join(rundir::LOGS_DIR)),
        Seeding::Snapshot,
    )
    .await?;
    record.seed = deployed.snapshot.clone();
    // Apart, the load generator's target is where the system engine published the
    // balancer, known once it runs: the script is rendered again for it (only its target
    // differs) and the copy in the run directory replaced.
    let script = &match &placement.apart {
        Some(_) => {
            let balancer = topo
                .container(Role::Balancer)
                .map(|c| c.name.clone())
                .unwrap_or_default();
            let at = rt.published(&balancer, BALANCER_PORT).await?;
            let url = feedbench_core::spec::placement::base_url(at);
            events.emit(RunEvent::Note {
                text: format!(
                    "the load generator runs on engine `{}` and reaches the balancer at {url}",
                    placement.name_of(Role::LoadGenerator)
                ),
            });
            let again = load::render(&load_spec(plan, run, saturations, &url))?;
            write(
                dir,
                rundir::load_input(again.generator),
                again.script.as_bytes(),
            )?;
            again
        }
        None => script.clone(),
    };
    let targets: Vec<Sampled> = topo
        .containers
        .iter()
        .map(|c| Sampled {
            target: Target::from(c),
            rt: placement.of(c.role).clone(),
            remote: placement.is_remote(c.role),
        })
        .collect();
    let monitors = monitor::start_placed(
        targets,
        deployed.addr(Role::Balancer, STATS_PORT),
        dir,
        MonitorOptions::default(),
    )
    .await?;
    let mut oom = monitors.latest();
    let mut health = monitors.balancer_latest();

    let loadgen = topo
        .container(Role::LoadGenerator)
        .map(|c| c.name.clone())
        .unwrap_or_default();
    // The load generator's engine: the system's, unless it runs apart.
    let lg = placement.of(Role::LoadGenerator);
    lg.upload(&loadgen, &[script.file()]).await?;
    lg.start(&loadgen).await?;
    let follower = Follower::start(
        lg,
        &loadgen,
        script.generator,
        dir.join(rundir::REQUESTS_CSV),
    );
    let load_started = Instant::now();
    events.emit(RunEvent::LoadStarted {
        scheduled_arrivals: script.scheduled_arrivals,
    });
    events.emit(RunEvent::Phase {
        phase: "warmup".into(),
    });

    let measured_at = load_started + Duration::from_secs_f64(script.measured_start_s);
    let mut steps = run
        .fault
        .as_ref()
        .map(|f| schedule(f, &plan.faults[f.as_str()]))
        .unwrap_or_default();
    steps.sort_by_key(|s| s.at);
    let mut steps = steps.into_iter().peekable();
    let fault_name = run.fault.clone().unwrap_or_default();
    let fp = deployed
        .addr(Role::FaultProxy, FAULT_PROXY_API_PORT)
        .map(|addr| FaultProxy { addr });
    let deadline = load_started + Duration::from_secs_f64(script.duration_s + 120.0);
    let mut measuring = false;
    let mut last_statuses: std::collections::BTreeMap<String, String> = Default::default();
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    let mut last_image_check = Instant::now();
    // Engine calls cost the measured host CPU: the load generator's state is asked once a
    // second, not at every tick (the tick is fine-grained for the faults' timing).
    let mut last_state_check = Instant::now();
    let stats_addr = deployed.addr(Role::Balancer, STATS_PORT);
    let mut last_progress = (Instant::now(), crate::engine::balancer::Traffic::default());
    let mut applied: Vec<Action> = Vec::new();
    let stops_at_knee = plan
        .profiles
        .get(run.profile.as_str())
        .and_then(|p| p.stops_at_knee())
        .map(|c| c as usize);
    let mut stopped: Option<RampStop> = None;
    let mut shown: Vec<Shown> = Vec::new();

    let mut host_unread = false;
    let trip: Option<Trip> = loop {
        tick.tick().await;
        let now = Instant::now();
        if !measuring && now >= measured_at {
            measuring = true;
            events.emit(RunEvent::Phase {
                phase: "measure".into(),
            });
        }
        while let Some(step) = steps.next_if(|s| now >= measured_at + s.at) {
            let (action, target) = step.action.describe();
            match perform(rt, topo, fp.as_ref(), &step.action).await {
                Ok(()) => {
                    events.emit(match step.edge {
                        Edge::Apply => RunEvent::FaultApplied {
                            fault: fault_name.clone(),
                            action,
                            target,
                        },
                        Edge::Clear => RunEvent::FaultCleared {
                            fault: fault_name.clone(),
                            action,
                            target,
                        },
                    });
                    match step.edge {
                        Edge::Apply => applied.push(step.action.clone()),
                        Edge::Clear => applied.clear(),
                    }
                }
                Err(reason) => events.emit(RunEvent::FaultFailed {
                    fault: fault_name.clone(),
                    action,
                    reason,
                }),
            }
        }
        // The load generator's output, as it writes it: the ramp judged step by step.
        let look = follower.look();
        if !follower.judging() {
            if let Some(t0) = look.scenario_start_ns {
                if let Some((judge, windows)) =
                    live_judge(plan, run, script, topo, saturations, t0, stops_at_knee)
                {
                    follower.judge_with(judge);
                    shown = windows;
                }
            }
        }
        for (i, v) in look.judged {
            if let Some(e) = window_judged(i, &v, &shown) {
                events.emit(e);
            }
        }
        // The knee: once the stream is past the last confirming step, the load stops.
        if let (Some(confirm), Some(stop), None) = (stops_at_knee, look.stop, stopped) {
            if look.watermark.is_some_and(|w| w >= stop.at_ns) {
                stopped = Some(RampStop {
                    breach_rate: stop.breach_rate,
                    last_rate: stop.last_rate,
                    at_ns: stop.at_ns,
                });
                events.emit(RunEvent::LoadStopped {
                    reason: format!(
                        "the step at {}/s broke the objective; stopped after {} more step(s), at the end of the step at {}/s (stop-on-breach, confirm-steps {confirm})",
                        stop.breach_rate,
                        stop.last - stop.breach,
                        stop.last_rate
                    ),
                    at_ns: stop.at_ns,
                });
                // k6 stops its scenario on SIGINT and writes out what it has; so does
                // feedbench-load.
                let _ = lg.kill(&loadgen, "SIGINT").await;
            }
        }
        // Health transitions the balancer reports.
        if health.has_changed().unwrap_or(false) {
            for row in health.borrow_and_update().iter() {
                let before = last_statuses.insert(row.server.clone(), row.status.clone());
                if let Some(from) = before.filter(|b| *b != row.status) {
                    events.emit(RunEvent::HealthChanged {
                        server: row.server.clone(),
                        from,
                        to: row.status.clone(),
                    });
                }
            }
        }
        // Guards. A reading that fails is said once (it may fail every tick).
        match probe.read() {
            Ok(r) => {
                if let Some(t) = guards::check(&plan.guards, &r) {
                    break Some(t);
                }
            }
            Err(e) if !host_unread => {
                host_unread = true;
                unreadable_host(events, record, &e);
            }
            Err(_) => {}
        }
        // Counted from the monitors' start. A kill in the system under test is a result: it
        // is recorded and the run goes on. One in the measurement path (or the co-tenant)
        // changes what the run measured: the run stops.
        let kills = oom.borrow_and_update().clone();
        if kills.oom_kills_total > 0 {
            let mut path = Vec::new();
            for (name, &n) in kills.oom_kills.iter().filter(|(_, n)| **n > 0) {
                let Some(c) = topo.containers.iter().find(|c| &c.name == name) else {
                    path.push((name.clone(), n));
                    continue;
                };
                if guards::oom_stops_the_run(c.role) {
                    path.push((name.clone(), n));
                } else if note_oom_kill(record, c, n, now.duration_since(load_started)) {
                    events.emit(RunEvent::OomKilled {
                        container: name.clone(),
                        kills: n,
                        memory_limit_bytes: c.memory_bytes.max(0) as u64,
                    });
                }
            }
            if !path.is_empty() {
                let who: Vec<&str> = path.iter().map(|(c, _)| c.as_str()).collect();
                break Some(guards::oom_trip(
                    &who.join(", "),
                    path.iter().map(|(_, n)| n).sum(),
                ));
            }
        }
        if now.duration_since(last_image_check) >= Duration::from_secs(5) {
            last_image_check = now;
            if let Some(img) = missing_image(placement, topo).await {
                break Some(guards::image_gone_trip(&img));
            }
        }
        if now.duration_since(last_progress.0) >= Duration::from_secs(5) {
            if let Some(t) = match stats_addr {
                Some(a) => crate::engine::balancer::traffic(a, Duration::from_millis(500)).await,
                None => None,
            } {
                let span = now.duration_since(last_progress.0).as_secs_f64();
                let elapsed = now.duration_since(load_started).as_secs_f64();
                // The schedule over the same seconds the balancer counted: on the
                // schedule's clock (from k6's scenario start, once the stream gave it).
                let on_schedule = |at: Instant| match look.scenario_start_ns {
                    Some(t0) => (events.clock.at(at).wall_ns - i128::from(t0)) as f64 / 1e9,
                    None => at.duration_since(load_started).as_secs_f64(),
                };
                events.emit(RunEvent::Progress {
                    elapsed_s: elapsed,
                    total_s: script.duration_s,
                    achieved_rate: t.requests.saturating_sub(last_progress.1.requests) as f64
                        / span,
                    scheduled_rate: load::scheduled_rate_between(
                        script,
                        on_schedule(last_progress.0),
                        on_schedule(now),
                    ),
                    errors: t
                        .responses_5xx
                        .saturating_sub(last_progress.1.responses_5xx),
                    avg_response_ms: t.avg_response_ms,
                });
                last_progress = (now, t);
            }
        }
        if now.duration_since(last_state_check) >= Duration::from_secs(1) {
            last_state_check = now;
            if let Ok((false, _)) = lg.state(&loadgen).await {
                break None;
            }
        }
        if now > deadline {
            record.warnings.push(format!(
                "the load generator ran past its schedule by 120 s; stopped at {:.0} s",
                now.duration_since(load_started).as_secs_f64()
            ));
            let _ = lg.kill(&loadgen, "SIGKILL").await;
            break None;
        }
    };

    if let Some(t) = &trip {
        abort(events, record, t);
        let _ = lg.kill(&loadgen, "SIGKILL").await;
    }
    // A fault still applied (the run ended inside its window) is cleared before teardown,
    // so that its logs describe a system that was put back.
    for action in applied.drain(..).rev() {
        if let Some(undo) = undo(&action) {
            let _ = perform(rt, topo, fp.as_ref(), &undo).await;
        }
    }
    record.monitors = Some(monitors.stop().await?);
    let raw = lg
        .download(
            &loadgen,
            crate::spec::commands::output_path(script.generator),
        )
        .await;
    let (live, last) = follower.finish(raw.as_deref().ok()).await;
    for (i, v) in last {
        if let Some(e) = window_judged(i, &v, &shown) {
            events.emit(e);
        }
    }

    match raw {
        Ok(bytes) if !bytes.is_empty() => {
            write(dir, rundir::load_raw(script.generator), &gzip(&bytes))?;
            let path = dir.join(rundir::REQUESTS_CSV);
            // Written beside the followed copy and renamed over it: a crash here leaves
            // one whole file or the other.
            let staged = dir.join(format!(".{}.partial", rundir::REQUESTS_CSV));
            let out = std::fs::File::create(&staged).map_err(|source| ExecuteError::Write {
                path: staged.clone(),
                source,
            })?;
            let converted = requests::convert_for(
                script.generator,
                bytes.as_slice(),
                std::io::BufWriter::new(out),
                &mut |_| false,
            );
            std::fs::rename(&staged, &path).map_err(|source| ExecuteError::Write {
                path: path.clone(),
                source,
            })?;
            match converted {
                Ok(summary) => {
                    events.emit(RunEvent::LoadFinished {
                        requests: summary.requests,
                        dropped_iterations: summary.dropped_iterations,
                    });
                    let reqs = match read_requests(&path) {
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
                            plan,
                            run,
                            script,
                            topology: topo,
                            saturations,
                            scenario_start_ns: i128::from(t0),
                            stopped,
                        })
                    });
                    record.saturation = record
                        .frame
                        .as_ref()
                        .and_then(|f| ramp_saturation(f, &reqs));
                    if let Some(w) = live_differs(live.as_ref(), record.saturation.as_ref()) {
                        record.warnings.push(w);
                    }
                    record.measured = measured_summary(script, &summary, &reqs);
                    record.load = Some(summary);
                    return Ok(reqs.iter().map(|r| r.start_ns).collect());
                }
                Err(e) => record
                    .warnings
                    .push(format!("cannot read the load generator's output: {e}")),
            }
        }
        Ok(_) => record
            .warnings
            .push("the load generator left no output".into()),
        Err(e) => record.warnings.push(e.to_string()),
    }
    Ok(Vec::new())
}

/// Records `kills` of a container of the system under test; true when they are new (the
/// first kill, or more than were recorded), so that each is reported once.
fn note_oom_kill(
    record: &mut RunRecord,
    c: &ContainerSpec,
    kills: u64,
    since_load: Duration,
) -> bool {
    match record.oom_kills.iter_mut().find(|k| k.container == c.name) {
        Some(k) if k.kills >= kills => false,
        Some(k) => {
            k.kills = kills;
            true
        }
        None => {
            record.oom_kills.push(OomKill {
                container: c.name.clone(),
                role: c.role.key(),
                kills,
                memory_limit_bytes: c.memory_bytes.max(0) as u64,
                first_at_s: since_load.as_secs_f64(),
            });
            true
        }
    }
}

/// The host could not be read for the guards: a note and a warning in run.json, since the
/// memory and disk floors were not watched while it lasted.
fn unreadable_host(events: &mut EventLog<'_>, record: &mut RunRecord, e: &std::io::Error) {
    let w = format!("the host could not be read for the guards ({e}): its memory and disk floors were not watched");
    events.emit(RunEvent::Note { text: w.clone() });
    record.warnings.push(w);
}

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

/// The first image of the run the engine says it no longer has (an engine that does not
/// answer is not taken for a missing image: the guard only trips on the engine's word).
async fn missing_image(placement: &Placement, topo: &RunTopology) -> Option<String> {
    for c in &topo.containers {
        if let Ok(false) = placement.of(c.role).has_image(&c.image).await {
            return Some(c.image.clone());
        }
    }
    None
}

/// What puts an applied action back, when the run ends inside a fault's window.
fn undo(action: &Action) -> Option<Action> {
    match action {
        Action::Signal { role, .. } | Action::AwaitExit { role, .. } => {
            Some(Action::Start { role: *role })
        }
        Action::Start {
            role: Role::CoTenant,
        } => Some(Action::Stop {
            role: Role::CoTenant,
        }),
        Action::Link {
            proxy,
            enabled: false,
        } => Some(Action::Link {
            proxy: proxy.clone(),
            enabled: true,
        }),
        Action::AddToxic { proxy, name, .. } => Some(Action::RemoveToxic {
            proxy: proxy.clone(),
            name: name.clone(),
        }),
        _ => None,
    }
}

async fn perform(
    rt: &Runtime,
    topo: &RunTopology,
    fp: Option<&FaultProxy>,
    action: &Action,
) -> Result<(), String> {
    let name = |role: Role| {
        topo.container(role)
            .map(|c| c.name.clone())
            .ok_or_else(|| format!("the run has no {}", role.key()))
    };
    let proxy = || fp.ok_or_else(|| "the fault proxy has no address".to_string());
    match action {
        Action::Signal { role, signal } => rt
            .kill(&name(*role)?, signal)
            .await
            .map_err(|e| e.to_string()),
        Action::AwaitExit { role, grace } => {
            let n = name(*role)?;
            let until = Instant::now() + *grace;
            while Instant::now() < until {
                if let Ok((false, _)) = rt.state(&n).await {
                    return Ok(());
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            rt.kill(&n, "SIGKILL").await.map_err(|e| e.to_string())?;
            Err(format!(
                "`{n}` did not exit within {:.1} s of SIGTERM and was killed",
                grace.as_secs_f64()
            ))
        }
        Action::Start { role } => rt.start(&name(*role)?).await.map_err(|e| e.to_string()),
        Action::Stop { role } => rt
            .kill(&name(*role)?, "SIGKILL")
            .await
            .map_err(|e| e.to_string()),
        Action::Link { proxy: p, enabled } => proxy()?
            .set_enabled(p, *enabled)
            .await
            .map_err(|e| e.to_string()),
        Action::AddToxic {
            proxy: p,
            name: n,
            kind,
            stream,
            toxicity,
            attributes,
        } => proxy()?
            .add_toxic(p, n, kind, stream, *toxicity, attributes.clone())
            .await
            .map_err(|e| e.to_string()),
        Action::RemoveToxic { proxy: p, name: n } => {
            proxy()?.remove_toxic(p, n).await.map_err(|e| e.to_string())
        }
    }
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
    })
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

/// How a judged window is shown: its step's rate (ramps), its span in seconds since the
/// scenario's start, the rate the schedule offered over it, and the objective's bounds.
#[derive(Debug, Clone, Copy)]
struct Shown {
    step_rate: Option<f64>,
    from_s: f64,
    to_s: f64,
    offered_rate: f64,
    p99_bound_ms: f64,
    failed_bound: f64,
}

/// The live judge, from the frame the scenario's start `t0` fixes: a step ramp's steps, or
/// for any other profile the measured phase cut into objective windows (judged and shown,
/// never stopped); a window is complete once the stream is past its end by the request
/// timeout plus two seconds (k6 writes its samples once a second).
#[allow(clippy::too_many_arguments)]
fn live_judge(
    plan: &Plan,
    run: &RunSpec,
    script: &LoadScript,
    topo: &RunTopology,
    saturations: &IndexMap<Name, f64>,
    t0: u64,
    confirm: Option<usize>,
) -> Option<(LiveRamp, Vec<Shown>)> {
    let t0 = i128::from(t0);
    let frame = Frame::of(&FrameInputs {
        plan,
        run,
        script,
        topology: topo,
        saturations,
        scenario_start_ns: t0,
        stopped: None,
    });
    let (mut steps, objective) = ramp_terms(&frame);
    let ramp = !steps.is_empty();
    let secs = |ns: i128| (ns - t0) as f64 / 1e9;
    if !ramp {
        let w = objective.window_ns;
        let m = frame.measured;
        let mut a = m.start_ns;
        while w > 0 && a + w <= m.end_ns {
            let rate = load::scheduled_rate_between(script, secs(a), secs(a + w));
            steps.push(saturation::Step {
                rate,
                start_ns: a,
                end_ns: a + w,
            });
            a += w;
        }
    }
    if steps.is_empty() {
        return None;
    }
    let shown = steps
        .iter()
        .map(|s| Shown {
            step_rate: ramp.then_some(s.rate),
            from_s: secs(s.start_ns),
            to_s: secs(s.end_ns),
            offered_rate: load::scheduled_rate_between(script, secs(s.start_ns), secs(s.end_ns)),
            p99_bound_ms: objective.p99_ms,
            failed_bound: objective.error_rate,
        })
        .collect();
    let settle_ns = ((script.request_timeout_s + 2.0) * 1e9) as i128;
    Some((LiveRamp::new(steps, objective, settle_ns, confirm), shown))
}

fn window_judged(i: usize, v: &saturation::StepVerdict, shown: &[Shown]) -> Option<RunEvent> {
    let s = shown.get(i)?;
    let len = s.to_s - s.from_s;
    Some(RunEvent::WindowJudged {
        step_rate: s.step_rate,
        from_s: s.from_s,
        to_s: s.to_s,
        requests: v.requests,
        offered_rate: s.offered_rate,
        achieved_rate: if len > 0.0 {
            v.requests as f64 / len
        } else {
            0.0
        },
        p99_ms: v.p99_ms,
        p99_bound_ms: s.p99_bound_ms,
        failed_share: v.error_rate,
        failed_bound: s.failed_bound,
        met: v.met,
    })
}

/// A warning when the live judgment of the ramp differs from the one made afterwards from
/// requests.csv (requests that reached the judge after their step was judged).
fn live_differs(live: Option<&LiveRamp>, offline: Option<&Saturation>) -> Option<String> {
    let (live, offline) = (live?, offline?);
    let l = live.saturation();
    (l.rate != offline.rate || l.first_breach != offline.first_breach).then(|| {
        format!(
            "the ramp judged live (saturation {:?}, first breach {:?}) differs from requests.csv ({:?}, {:?}); {} requests reached the live judge after their step was judged",
            l.rate, l.first_breach, offline.rate, offline.first_breach, live.late()
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

/// The steps and objective of a frame, as the saturation rule takes them.
fn ramp_terms(frame: &Frame) -> (Vec<saturation::Step>, saturation::Objective) {
    let steps = frame
        .steps
        .iter()
        .map(|s| saturation::Step {
            rate: s.rate,
            start_ns: s.start_ns,
            end_ns: s.end_ns,
        })
        .collect();
    let o = &frame.objective;
    (
        steps,
        saturation::Objective {
            p99_ms: o.p99_ms,
            error_rate: o.failed_share,
            window_ns: o.window_ns,
        },
    )
}

/// A step ramp's saturation from its requests, over the frame's steps (the same steps the
/// report judges); `None` for other profiles.
fn ramp_saturation(frame: &Frame, reqs: &[saturation::Request]) -> Option<Saturation> {
    if frame.steps.is_empty() {
        return None;
    }
    let (steps, objective) = ramp_terms(frame);
    Some(saturation::saturation(reqs, &steps, &objective))
}
