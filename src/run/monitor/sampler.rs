//! The container sampler: one task, one tick a second, one row per container per tick,
//! from the cgroup files or the engine's stats API. A container that is not running gives
//! a `down` row (a gap), and sampling resumes when it runs again.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::cgroup::{CgroupFiles, Layout};
use super::csv::CsvFile;
use super::error::MonitorError;
use super::grid::{TickGrid, Timing};
use super::host::HostProbe;
use super::oom::OomTracker;
use super::{ContainerSummary, Latest, Target};
use crate::engine::runtime::{ApiReading, Runtime};
use crate::rundir::samples::{ContainerRow, Counters, SampleStatus};

/// Where the counters come from, once chosen.
#[derive(Debug, Clone)]
pub enum Reader {
    Cgroup(Arc<Layout>),
    Api,
}

impl Reader {
    fn name(&self) -> &'static str {
        match self {
            Reader::Cgroup(_) => "cgroup",
            Reader::Api => "engine-api",
        }
    }
}

/// How one probe reads its container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// As the sampler's reader does.
    Reader,
    /// Through its engine's stats API.
    Api,
    /// Its cgroup files if this host has them (looked for when it runs), else the API:
    /// a container on another engine, which may be of this host or of another.
    CgroupElseApi,
}

/// One container's sampling state, on the engine it runs on.
pub struct Probe {
    pub target: Target,
    rt: Runtime,
    via: Via,
    pub files: Option<CgroupFiles>,
    oom: OomTracker,
    last_read: Option<(u64, Instant)>,
    summary: ContainerSummary,
    /// On another engine whose containers this host may not have (`Sampled::remote`, unless
    /// its cgroup was found here): counted in the host's study figure only while it is read
    /// from this host's cgroups.
    remote: bool,
    /// The tick of the last read and what it told of the container's CPU, for the host's
    /// study figure; `None` before the first read and after a cgroup was lost.
    last_cpu: Option<(u64, CpuRead)>,
}

/// What one read told of a container's CPU counter.
#[derive(Debug, Clone, Copy, PartialEq)]
enum CpuRead {
    /// Running, with its counter (ns).
    Counter(u64),
    /// Not running: nothing ran.
    Down,
    /// The read failed, or gave no counter.
    Unknown,
}

impl Probe {
    pub fn new(
        target: Target,
        (rt, remote): (Runtime, bool),
        via: Via,
        files: Option<CgroupFiles>,
    ) -> Probe {
        let summary = ContainerSummary {
            name: target.name.clone(),
            role: target.role.clone(),
            ..Default::default()
        };
        Probe {
            target,
            rt,
            via,
            files,
            oom: OomTracker::default(),
            last_read: None,
            summary,
            remote,
            last_cpu: None,
        }
    }

    /// Whether its container runs on this host: on the coordinator's engine, or on another
    /// engine whose cgroups this host has.
    fn on_host(&self) -> bool {
        !self.remote || self.via != Via::Api
    }

    /// Its CPU since the previous tick, from this tick's counters: `Some(0)` for a container
    /// of another host; `None` when it cannot be told: no read at the previous tick, one
    /// that failed, a counter that went back or a cgroup found anew (a restart in between),
    /// or a container that went down since (its last part is lost).
    fn cpu_since(&mut self, tick: u64, status: SampleStatus, c: &Counters) -> Option<u64> {
        if !self.on_host() {
            return Some(0);
        }
        let now = match (status, c.cpu_usage_ns) {
            (SampleStatus::Ok, Some(n)) => CpuRead::Counter(n),
            (SampleStatus::Down, _) => CpuRead::Down,
            _ => CpuRead::Unknown,
        };
        let then = match self.last_cpu {
            Some((t, read)) if t + 1 == tick => read,
            _ => CpuRead::Unknown,
        };
        let used = match (then, now) {
            (CpuRead::Counter(a), CpuRead::Counter(b)) if b >= a => Some(b - a),
            // Down at both reads: nothing ran.
            (CpuRead::Down, CpuRead::Down) => Some(0),
            // Started since the previous read: all its CPU is this interval's.
            (CpuRead::Down, CpuRead::Counter(b)) => Some(b),
            _ => None,
        };
        self.last_cpu = Some((tick, now));
        used
    }

    /// The source this probe reads: the sampler's, unless it is read through the API.
    fn source(&self, reader: &Reader) -> &'static str {
        if self.via == Via::Api {
            Reader::Api.name()
        } else {
            reader.name()
        }
    }

    async fn sample(&mut self, reader: &Reader) -> (SampleStatus, Counters, String) {
        let rt = self.rt.clone();
        let rt = &rt;
        match (reader, self.via) {
            (Reader::Cgroup(layout), Via::Reader | Via::CgroupElseApi) => {
                self.sample_cgroup(layout, rt).await
            }
            _ => match rt.stats_once(&self.target.name).await {
                ApiReading::Counters(c) => {
                    self.oom.up();
                    (SampleStatus::Ok, c, String::new())
                }
                ApiReading::NotRunning => self.down(rt).await,
                ApiReading::Failed(e) => (SampleStatus::Error, Counters::default(), e),
            },
        }
    }

    async fn sample_cgroup(
        &mut self,
        layout: &Layout,
        rt: &Runtime,
    ) -> (SampleStatus, Counters, String) {
        let mut lost = false;
        if let Some(files) = &mut self.files {
            match files.read() {
                Ok(c) => return self.ok(c),
                // Its cgroup is gone: the container stopped, perhaps restarted since; its
                // counter starts again, so no difference with the last is its CPU.
                Err(_) => {
                    self.files = None;
                    self.last_cpu = None;
                    lost = true;
                }
            }
        }
        let state = match rt.container_state(&self.target.name).await {
            Ok(s) => s,
            Err(e) => return (SampleStatus::Error, Counters::default(), e.to_string()),
        };
        if !state.running || state.pid <= 0 {
            return self.down_with(state.oom_killed, state.detail);
        }
        let mut files = match CgroupFiles::open(layout, &state.id, state.pid) {
            Ok(f) => f,
            // Not on this host: from now on through its engine's API.
            Err(_) if self.via == Via::CgroupElseApi => {
                self.via = Via::Api;
                return Box::pin(self.sample(&Reader::Api)).await;
            }
            Err(e) => return (SampleStatus::Error, Counters::default(), e),
        };
        match files.read() {
            Ok(c) => {
                if lost {
                    self.oom.restarted();
                }
                self.files = Some(files);
                self.ok(c)
            }
            Err(e) => (SampleStatus::Error, Counters::default(), e.to_string()),
        }
    }

    fn ok(&mut self, c: Counters) -> (SampleStatus, Counters, String) {
        match c.oom_kills {
            Some(k) => self.oom.observe(k),
            None => self.oom.up(),
        }
        (SampleStatus::Ok, c, String::new())
    }

    async fn down(&mut self, rt: &Runtime) -> (SampleStatus, Counters, String) {
        match rt.container_state(&self.target.name).await {
            Ok(s) => self.down_with(s.oom_killed, s.detail),
            Err(e) => self.down_with(false, format!("not running ({e})")),
        }
    }

    fn down_with(&mut self, oom_killed: bool, detail: String) -> (SampleStatus, Counters, String) {
        self.oom.down(oom_killed);
        (SampleStatus::Down, Counters::default(), detail)
    }
}

/// What the sampler task hands back when it stops.
pub struct SamplerReport {
    pub timing: Timing,
    pub first_offset_s: Option<f64>,
    pub last_offset_s: Option<f64>,
    pub containers: Vec<ContainerSummary>,
    pub oom_kills_total: u64,
}

pub struct Sampler {
    pub reader: Reader,
    pub probes: Vec<Probe>,
    pub clock: TickGrid,
    pub out: CsvFile,
    pub latest: watch::Sender<Latest>,
    /// The host's probe and host.csv, when the engine is local.
    pub host: Option<(HostProbe, CsvFile)>,
}

impl Sampler {
    /// Samples every second until `stop` turns true (or its sender goes), on the grid's
    /// ticks (`TickGrid::ticks`: a tick missed while a read hung is left out, never made up).
    pub async fn run(mut self, stop: watch::Receiver<bool>) -> Result<SamplerReport, MonitorError> {
        let period = self.clock.period;
        let mut timing = Timing::default();
        let (mut first, mut last) = (None, None);
        let mut ticks = self.clock.ticks(stop);
        while let Some((tick, scheduled)) = ticks.next().await {
            let (reader, clock) = (&self.reader, self.clock);
            let readings =
                futures_util::future::join_all(self.probes.iter_mut().map(|p| async move {
                    let r = p.sample(reader).await;
                    (p, r, clock.stamp())
                }))
                .await;
            let mut latest = Latest {
                tick: Some(tick),
                ..Default::default()
            };
            let mut lateness = Duration::ZERO;
            let mut study_ns = Some(0u64);
            for (p, (status, counters, detail), stamp) in readings {
                let used = p.cpu_since(tick, status, &counters);
                study_ns = study_ns.zip(used).map(|(a, b)| a + b);
                lateness = lateness.max(stamp.at.saturating_duration_since(scheduled));
                p.summary.count(status);
                if let Some((t, at)) = p.last_read {
                    if t + 1 == tick {
                        let err = stamp.at.duration_since(at).as_secs_f64() - period.as_secs_f64();
                        p.summary.max_interval_error_s =
                            p.summary.max_interval_error_s.max(err.abs());
                    }
                }
                p.last_read = Some((tick, stamp.at));
                let row = ContainerRow {
                    unix_ns: stamp.unix_ns,
                    offset_s: stamp.offset_s,
                    tick,
                    container: p.target.name.clone(),
                    role: p.target.role.clone(),
                    source: p.source(reader),
                    status,
                    counters,
                    detail,
                };
                row.write_csv(&mut self.out.batch);
                latest.oom_kills.insert(p.target.name.clone(), p.oom.total);
                latest.oom_kills_total += p.oom.total;
                latest.rows.insert(p.target.name.clone(), row);
                first = first.or(Some(stamp.offset_s));
                last = Some(stamp.offset_s);
            }
            timing.record(tick, lateness);
            self.latest.send_replace(latest);
            self.out.flush_batch()?;
            if let Some((probe, out)) = &mut self.host {
                probe
                    .sample(tick, clock.stamp(), study_ns)
                    .write_csv(&mut out.batch);
                out.flush_batch()?;
            }
        }
        let oom_kills_total = self.probes.iter().map(|p| p.oom.total).sum();
        Ok(SamplerReport {
            timing,
            first_offset_s: first,
            last_offset_s: last,
            containers: self.probes.into_iter().map(|p| p.summary).collect(),
            oom_kills_total,
        })
    }
}

/// The latest row per container, keyed by name (for tests and guards).
pub type Rows = BTreeMap<String, ContainerRow>;
