//! The supervisor of a run's load, every quarter second until the load generator ends or a
//! guard trips: the fault's steps as they fall due, the live judge and the knee stop, the
//! balancer's health transitions, the host's guards, OOM kills, a measurement path that
//! can no longer stand, the run's images, and progress. Each concern is one method;
//! `until_done` calls them in this order every tick.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::execute::{unreadable_host, EventLog, Running};
use super::follow::{Follower, Look};
use super::guards::{self, HostProbe, Trip};
use super::inject::{perform, undo};
use super::judge::{live_judge, transient, window_judged, Shown};
use super::monitor::{Latest, MonitorHandle};
use super::readiness::{Attempts, ReadinessProbe};
use crate::engine::balancer::{self, Traffic};
use crate::engine::deploy::Deployed;
use crate::engine::fault_proxy::FaultProxy;
use crate::engine::placement::Placement;
use crate::engine::runtime::Runtime;
use crate::rundir::events::RunEvent;
use crate::rundir::frame::RampStop;
use crate::rundir::record::{OomKill, RunRecord};
use crate::rundir::samples::{BalancerRow, SampleStatus};
use crate::spec::faults::{schedule, Action, Edge, Step};
use crate::spec::load::{self, LoadScript};
use crate::spec::topology::{ContainerSpec, Role, RunTopology, FAULT_PROXY_API_PORT, STATS_PORT};
use crate::validity::{path_containers, Binding, Evidence};

/// The load generator under way: its container on its engine (the system's, unless it runs
/// apart), the stream of its output, and when it was started.
pub(super) struct Load<'a> {
    pub lg: &'a Runtime,
    pub container: String,
    pub follower: Follower,
    pub started: Instant,
}

/// What the supervision leaves: where the knee stopped the load, how the live judge's
/// windows are shown, the restarted replica's readiness attempts, and the evidence of a
/// measurement path that could no longer stand with when the load was stopped for it.
pub(super) struct Ended {
    pub stopped: Option<RampStop>,
    pub shown: Vec<Shown>,
    pub readiness: Option<Attempts>,
    pub bound: Option<(Evidence, i128)>,
}

/// What the supervisor has seen and done so far, beside what it reads.
pub(super) struct Supervisor<'s> {
    r: &'s Running<'s>,
    script: &'s LoadScript,
    load: &'s Load<'s>,
    fp: Option<FaultProxy>,
    stats_addr: Option<SocketAddr>,
    measured_at: Instant,
    /// The schedule's end plus 120 s: past it the load generator is killed.
    deadline: Instant,
    measuring: bool,
    steps: std::iter::Peekable<std::vec::IntoIter<Step>>,
    fault_name: String,
    /// Actions applied and not yet cleared, put back if the run ends inside the window.
    applied: Vec<Action>,
    statuses: BTreeMap<String, String>,
    health: watch::Receiver<Vec<BalancerRow>>,
    oom: watch::Receiver<Latest>,
    /// The monitors' reads again, for the binding rule (`oom` marks what it has seen).
    reads: watch::Receiver<Latest>,
    binding: Binding,
    bound: Option<(Evidence, i128)>,
    stops_at_knee: Option<usize>,
    stopped: Option<RampStop>,
    shown: Vec<Shown>,
    /// How many transients the events have told.
    transients_told: usize,
    /// The restarted replica's readiness probe, once its fault cleared.
    readiness: Option<ReadinessProbe>,
    /// A host that cannot be read is said once (it may fail every tick).
    host_unread: bool,
    // Engine calls cost the measured host CPU: the load generator's state is asked once a
    // second, images and progress every five, not at every tick (the tick is fine-grained
    // for the faults' timing).
    last_image_check: Instant,
    last_state_check: Instant,
    last_progress: (Instant, Traffic),
}

impl<'s> Supervisor<'s> {
    pub(super) fn new(
        r: &'s Running<'s>,
        script: &'s LoadScript,
        load: &'s Load<'s>,
        deployed: &Deployed,
        monitors: &MonitorHandle,
    ) -> Self {
        let (plan, run) = (r.plan, r.run);
        let mut steps = run
            .fault
            .as_ref()
            .map(|f| schedule(f, &plan.faults[f.as_str()]))
            .unwrap_or_default();
        steps.sort_by_key(|s| s.at);
        let now = Instant::now();
        Supervisor {
            r,
            script,
            load,
            fp: deployed
                .addr(Role::FaultProxy, FAULT_PROXY_API_PORT)
                .map(|addr| FaultProxy { addr }),
            stats_addr: deployed.addr(Role::Balancer, STATS_PORT),
            measured_at: load.started + Duration::from_secs_f64(script.measured_start_s),
            deadline: load.started + Duration::from_secs_f64(script.duration_s + 120.0),
            measuring: false,
            steps: steps.into_iter().peekable(),
            fault_name: run.fault.clone().unwrap_or_default(),
            applied: Vec::new(),
            statuses: BTreeMap::new(),
            health: monitors.balancer_latest(),
            oom: monitors.latest(),
            reads: monitors.latest(),
            binding: Binding::new(
                &path_containers(r.topo),
                plan.study.objective.window.millis as f64 / 1e3,
                plan.guards.measurement_cpu_ceiling.percent,
            ),
            bound: None,
            stops_at_knee: plan
                .profiles
                .get(run.profile.as_str())
                .and_then(|p| p.stops_at_knee())
                .map(|c| c as usize),
            stopped: None,
            shown: Vec::new(),
            transients_told: 0,
            readiness: None,
            host_unread: false,
            last_image_check: now,
            last_state_check: now,
            last_progress: (now, Traffic::default()),
        }
    }

    /// Supervises until the load generator ends (`None`) or a guard trips.
    pub(super) async fn until_done(
        &mut self,
        probe: &HostProbe,
        events: &mut EventLog<'_>,
        record: &mut RunRecord,
    ) -> Option<Trip> {
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        loop {
            tick.tick().await;
            let now = Instant::now();
            self.phase(now, events);
            self.faults_due(now, events).await;
            let look = self.load.follower.look();
            self.judge(&look, events);
            self.knee(&look, events).await;
            self.health(events);
            if let Some(t) = self.guards(probe, events, record) {
                return Some(t);
            }
            if let Some(t) = self.oom_kills(now, events, record) {
                return Some(t);
            }
            self.binding(events).await;
            if let Some(t) = self.images(now).await {
                return Some(t);
            }
            self.progress(now, &look, events).await;
            if self.load_ended(now, record).await {
                return None;
            }
        }
    }

    /// A fault still applied (the run ended inside its window) is cleared before teardown,
    /// so that its logs describe a system that was put back. Hands back where the knee
    /// stopped the load, how the live judge's windows are shown, and the restarted
    /// replica's readiness probe (when a fault restarted one).
    pub(super) async fn put_back(self) -> Ended {
        for action in self.applied.iter().rev() {
            if let Some(undo) = undo(action) {
                let _ = self.perform(&undo).await;
            }
        }
        let readiness = match &self.readiness {
            Some(p) => Some(p.attempts(self.fp.as_ref()).await),
            None => None,
        };
        Ended {
            stopped: self.stopped,
            shown: self.shown,
            readiness,
            bound: self.bound,
        }
    }

    async fn perform(&self, action: &Action) -> Result<(), String> {
        perform(
            &self.r.placement.system,
            self.r.topo,
            self.fp.as_ref(),
            action,
        )
        .await
    }

    fn phase(&mut self, now: Instant, events: &mut EventLog<'_>) {
        if !self.measuring && now >= self.measured_at {
            self.measuring = true;
            events.emit(RunEvent::Phase {
                phase: "measure".into(),
            });
        }
    }

    /// The fault's steps whose time has come, performed in order, each an event.
    async fn faults_due(&mut self, now: Instant, events: &mut EventLog<'_>) {
        let measured_at = self.measured_at;
        while let Some(step) = self.steps.next_if(|s| now >= measured_at + s.at) {
            let (action, target) = step.action.describe();
            let fault = self.fault_name.clone();
            if let (
                Edge::Clear,
                Action::Start {
                    role: role @ Role::Replica(_),
                },
            ) = (step.edge, &step.action)
            {
                self.restarting(*role, events).await;
            }
            match self.perform(&step.action).await {
                Ok(()) => {
                    events.emit(match step.edge {
                        Edge::Apply => RunEvent::FaultApplied {
                            fault,
                            action,
                            target,
                        },
                        Edge::Clear => RunEvent::FaultCleared {
                            fault,
                            action,
                            target,
                        },
                    });
                    match step.edge {
                        Edge::Apply => self.applied.push(step.action),
                        Edge::Clear => self.applied.clear(),
                    }
                }
                Err(reason) if step.failure_unapplies() => {
                    events.emit(RunEvent::FaultApplyFailed {
                        fault,
                        action,
                        reason,
                    })
                }
                Err(reason) => events.emit(RunEvent::FaultFailed {
                    fault,
                    action,
                    reason,
                }),
            }
        }
    }

    /// A killed or stopped replica about to be started again: the origin of its
    /// `time_to_ready`, and its readiness probe started (for the fault's observe window).
    async fn restarting(&mut self, role: Role, events: &mut EventLog<'_>) {
        events.emit(RunEvent::ReplicaStarting {
            replica: role.key(),
        });
        let observe = self
            .r
            .plan
            .faults
            .get(self.fault_name.as_str())
            .map_or(Duration::ZERO, |f| Duration::from_millis(f.observe.millis));
        self.readiness =
            Some(ReadinessProbe::start(self.fp.as_ref(), self.r.topo, role, observe).await);
    }

    /// The load generator's output, as it writes it: judged window by window (a ramp step
    /// by step) once the stream gives the scenario's start.
    fn judge(&mut self, look: &Look, events: &mut EventLog<'_>) {
        let follower = &self.load.follower;
        if !follower.judging() {
            if let Some(t0) = look.scenario_start_ns {
                let r = self.r;
                if let Some((judge, windows)) = live_judge(
                    r.plan,
                    r.run,
                    self.script,
                    r.topo,
                    r.saturations,
                    t0,
                    self.stops_at_knee.is_some(),
                ) {
                    follower.judge_with(judge);
                    self.shown = windows;
                }
            }
        }
        for (i, v) in &look.judged {
            if let Some(e) = window_judged(*i, v, &self.shown) {
                events.emit(e);
            }
        }
        for t in look
            .transients
            .get(self.transients_told..)
            .unwrap_or_default()
        {
            events.emit(transient(t));
        }
        self.transients_told = self.transients_told.max(look.transients.len());
    }

    /// The knee: once the breach's confirmations are judged (the stream is then past the
    /// last confirming step), the load stops.
    async fn knee(&mut self, look: &Look, events: &mut EventLog<'_>) {
        let (Some(confirm), Some(stop), None) = (self.stops_at_knee, look.stop, self.stopped)
        else {
            return;
        };
        if look.watermark.is_none_or(|w| w < stop.at_ns) {
            return;
        }
        self.stopped = Some(RampStop {
            breach_rate: stop.breach_rate,
            last_rate: stop.last_rate,
            at_ns: stop.at_ns,
        });
        let reason = format!(
            "the step at {}/s broke the objective and {} more step(s) confirmed it; the measured phase ends with the step at {}/s (stop-on-breach, confirm-steps {confirm})",
            stop.breach_rate,
            stop.last - stop.breach,
            stop.last_rate
        );
        self.stop_load(reason, stop.at_ns, events).await;
    }

    /// Stops the load for `reason`, as of `at_ns`: the one way a rule ends the measured
    /// phase early (the knee, the binding rule).
    async fn stop_load(&self, reason: String, at_ns: i128, events: &mut EventLog<'_>) {
        events.emit(RunEvent::LoadStopped { reason, at_ns });
        // k6 stops its scenario on SIGINT and writes out what it has; so does
        // feedbench-load.
        let _ = self.load.lg.kill(&self.load.container, "SIGINT").await;
    }

    /// Health transitions the balancer reports.
    fn health(&mut self, events: &mut EventLog<'_>) {
        if !self.health.has_changed().unwrap_or(false) {
            return;
        }
        for row in self.health.borrow_and_update().iter() {
            let before = self.statuses.insert(row.server.clone(), row.status.clone());
            if let Some(from) = before.filter(|b| *b != row.status) {
                events.emit(RunEvent::HealthChanged {
                    server: row.server.clone(),
                    from,
                    to: row.status.clone(),
                });
            }
        }
    }

    /// The host's guards; a reading that fails is said once.
    fn guards(
        &mut self,
        probe: &HostProbe,
        events: &mut EventLog<'_>,
        record: &mut RunRecord,
    ) -> Option<Trip> {
        match probe.read() {
            Ok(r) => guards::check(&self.r.plan.guards, &r),
            Err(e) => {
                if !self.host_unread {
                    self.host_unread = true;
                    unreadable_host(events, record, &e);
                }
                None
            }
        }
    }

    /// OOM kills, counted from the monitors' start. A kill in the system under test is a
    /// result: it is recorded and the run goes on. One in the measurement path (or the
    /// co-tenant) changes what the run measured: the run stops.
    fn oom_kills(
        &mut self,
        now: Instant,
        events: &mut EventLog<'_>,
        record: &mut RunRecord,
    ) -> Option<Trip> {
        let kills = self.oom.borrow_and_update().clone();
        if kills.oom_kills_total == 0 {
            return None;
        }
        let mut path = Vec::new();
        for (name, &n) in kills.oom_kills.iter().filter(|(_, n)| **n > 0) {
            let Some(c) = self.r.topo.containers.iter().find(|c| &c.name == name) else {
                path.push((name.clone(), n));
                continue;
            };
            if guards::oom_stops_the_run(c.role) {
                path.push((name.clone(), n));
            } else if note_oom_kill(record, c, n, now.duration_since(self.load.started)) {
                events.emit(RunEvent::OomKilled {
                    container: name.clone(),
                    kills: n,
                    memory_limit_bytes: c.memory_bytes.max(0) as u64,
                });
            }
        }
        (!path.is_empty()).then(|| {
            let who: Vec<&str> = path.iter().map(|(c, _)| c.as_str()).collect();
            guards::oom_trip(&who.join(", "), path.iter().map(|(_, n)| n).sum())
        })
    }

    /// The measurement path's CPU, each new read of the measured phase fed to the binding
    /// rule: at its first evidence the load stops (as at a knee) and the run is to be set
    /// aside with it.
    async fn binding(&mut self, events: &mut EventLog<'_>) {
        if !self.measuring || self.bound.is_some() || !self.reads.has_changed().unwrap_or(false) {
            return;
        }
        // Read in place (the guard is let go before anything is awaited), not copied.
        let evidence = {
            let latest = self.reads.borrow_and_update();
            let binding = &mut self.binding;
            latest.rows.values().find_map(|row| {
                let cpu = (row.status == SampleStatus::Ok)
                    .then_some(row.counters.cpu_usage_ns)
                    .flatten();
                binding.read(&row.container, row.offset_s, cpu)
            })
        };
        let Some(e) = evidence else {
            return;
        };
        let at_ns = events.clock.now().wall_ns;
        let reason = format!("the measurement path can no longer stand: {e}");
        self.bound = Some((e, at_ns));
        self.stop_load(reason, at_ns, events).await;
    }

    /// An image of the run the engine no longer has, asked every five seconds.
    async fn images(&mut self, now: Instant) -> Option<Trip> {
        if now.duration_since(self.last_image_check) < Duration::from_secs(5) {
            return None;
        }
        self.last_image_check = now;
        let img = missing_image(self.r.placement, self.r.topo).await?;
        Some(guards::image_gone_trip(&img))
    }

    /// Progress every five seconds: the rate the balancer counted against the schedule's.
    async fn progress(&mut self, now: Instant, look: &Look, events: &mut EventLog<'_>) {
        if now.duration_since(self.last_progress.0) < Duration::from_secs(5) {
            return;
        }
        let Some(addr) = self.stats_addr else {
            return;
        };
        let Some(t) = balancer::traffic(addr, Duration::from_millis(500)).await else {
            return;
        };
        let (since, before) = &self.last_progress;
        let span = now.duration_since(*since).as_secs_f64();
        let started = self.load.started;
        // The schedule over the same seconds the balancer counted: on the schedule's clock
        // (from the scenario's start, once the stream gave it).
        let on_schedule = |at: Instant| match look.scenario_start_ns {
            Some(t0) => (events.clock.at(at).wall_ns - i128::from(t0)) as f64 / 1e9,
            None => at.duration_since(started).as_secs_f64(),
        };
        let scheduled_rate =
            load::scheduled_rate_between(self.script, on_schedule(*since), on_schedule(now));
        events.emit(RunEvent::Progress {
            elapsed_s: now.duration_since(started).as_secs_f64(),
            total_s: self.script.duration_s,
            achieved_rate: t.requests.saturating_sub(before.requests) as f64 / span,
            scheduled_rate,
            errors: t.responses_5xx.saturating_sub(before.responses_5xx),
            avg_response_ms: t.avg_response_ms,
        });
        self.last_progress = (now, t);
    }

    /// Whether the load generator has ended (its state asked once a second), or ran past
    /// its schedule by 120 s and was killed.
    async fn load_ended(&mut self, now: Instant, record: &mut RunRecord) -> bool {
        let Load { lg, container, .. } = self.load;
        if now.duration_since(self.last_state_check) >= Duration::from_secs(1) {
            self.last_state_check = now;
            if let Ok((false, _)) = lg.state(container).await {
                return true;
            }
        }
        if now > self.deadline {
            record.warnings.push(format!(
                "the load generator ran past its schedule by 120 s; stopped at {:.0} s",
                now.duration_since(self.load.started).as_secs_f64()
            ));
            let _ = lg.kill(container, "SIGKILL").await;
            return true;
        }
        false
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::topology::{Attach, Readiness};

    fn replica() -> ContainerSpec {
        ContainerSpec {
            name: "fb-s-a_b_r1-replica-1".into(),
            role: Role::Replica(1),
            image: "feedbench/feed-rs:x".into(),
            env: Vec::new(),
            cmd: None,
            nano_cpus: 1_000_000_000,
            memory_bytes: 256 << 20,
            labels: Default::default(),
            files: Vec::new(),
            mounts: Vec::new(),
            stage: 1,
            readiness: Readiness::Tcp(8080),
            attach: Attach::Run,
        }
    }

    /// The monitors report a running total: a kill is recorded once, with when it came
    /// first; the same total again is not news, a higher one is.
    #[test]
    fn an_oom_kill_is_news_once_per_new_total_and_keeps_its_first_time() {
        let mut record = crate::run::execute::begun("a/b/r1", "h", "p", 0);
        let c = replica();
        assert!(note_oom_kill(&mut record, &c, 1, Duration::from_secs(12)));
        assert!(!note_oom_kill(&mut record, &c, 1, Duration::from_secs(13)));
        assert!(note_oom_kill(&mut record, &c, 2, Duration::from_secs(20)));
        assert_eq!(
            record.oom_kills,
            vec![OomKill {
                container: c.name.clone(),
                role: "replica-1".into(),
                kills: 2,
                memory_limit_bytes: 256 << 20,
                first_at_s: 12.0,
            }]
        );
    }
}
