//! The monitors of a run: a sampler that records every container's CPU, throttling, memory,
//! OOM kills and network counters each second (`containers.csv`) and, where the engine is
//! local, the host's own CPU, steal and load and who used them (`host.csv`); and a poller that
//! records HAProxy's per-server state each second (`balancer.csv`). Each runs in its own task
//! on a shared one-second grid; the latest samples are published for live guards. The cgroup
//! reads are done inline in the sampler task: they are in-memory kernel files that answer
//! in microseconds (ten containers cost about 0.08% of a core, docs/performance.md).
//!
//! ```text
//! let handle = monitor::start(&rt, targets, Some(stats_addr), &run_dir).await?;
//! let mut latest = handle.latest();          // watch: the last row per container
//! // … the run …
//! let summary = handle.stop().await?;        // samples, seconds covered, jitter
//! ```

mod cgroup;
mod csv;
mod error;
mod grid;
mod host;
mod link;
mod oom;
mod parse;
mod poller;
mod sampler;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use crate::rundir::samples::{
    BalancerRow, ContainerRow, Counters, SampleStatus, BALANCER_HEADER, CONTAINERS_HEADER,
};
pub use cgroup::Layout;
pub use error::MonitorError;
pub use link::LinkTarget;
pub use sampler::Rows;

use crate::engine::runtime::Runtime;
use crate::spec::topology::ContainerSpec;
use cgroup::CgroupFiles;
use csv::CsvFile;
use grid::TickGrid;
use sampler::{Probe, Reader, SamplerReport, Via};

pub use crate::rundir::host::HOST_HEADER;
pub use crate::rundir::links::LINKS_HEADER;
pub use crate::rundir::record::{BalancerSummary, ContainerSummary, MonitorSummary, Source};
pub use crate::rundir::{BALANCER_CSV, CONTAINERS_CSV, HOST_CSV, LINKS_CSV};

/// A container to sample: its name and its role (the `feedbench.role` label's value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub name: String,
    pub role: String,
}

impl From<&ContainerSpec> for Target {
    fn from(c: &ContainerSpec) -> Target {
        Target {
            name: c.name.clone(),
            role: c.role.key(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MonitorOptions {
    pub source: Source,
    /// How containers on another engine (`Sampled::remote`) are read: `Auto` takes their
    /// cgroup files where this host has them (two engines of one host) and the engine's
    /// stats API where it does not; `EngineApi` always the API.
    pub remote_source: Source,
    /// One second unless a test wants otherwise.
    pub period: Duration,
    /// Whether to sample the host too (host.csv): where it is the run's alone.
    pub host: bool,
}

impl Default for MonitorOptions {
    fn default() -> Self {
        MonitorOptions {
            source: Source::Auto,
            remote_source: Source::Auto,
            period: Duration::from_secs(1),
            host: true,
        }
    }
}

/// The latest tick's samples, for live guards.
#[derive(Debug, Clone, Default)]
pub struct Latest {
    pub tick: Option<u64>,
    pub rows: Rows,
    /// OOM kills per container since the monitors started (across restarts).
    pub oom_kills: std::collections::BTreeMap<String, u64>,
    pub oom_kills_total: u64,
}

/// The running monitors. Dropping the handle stops them too, without a summary.
pub struct MonitorHandle {
    stop: watch::Sender<bool>,
    sampler: Option<JoinHandle<Result<SamplerReport, MonitorError>>>,
    poller: Option<JoinHandle<Result<BalancerSummary, MonitorError>>>,
    prober: Option<JoinHandle<Result<(), MonitorError>>>,
    latest: watch::Receiver<Latest>,
    balancer_latest: watch::Receiver<Vec<BalancerRow>>,
    source: Source,
    layout: Option<String>,
}

/// Starts the monitors with the default options (automatic source, one second).
pub async fn start(
    rt: &Runtime,
    targets: Vec<Target>,
    balancer_stats: Option<SocketAddr>,
    out_dir: &Path,
) -> Result<MonitorHandle, MonitorError> {
    start_with(
        rt,
        targets,
        balancer_stats,
        out_dir,
        MonitorOptions::default(),
    )
    .await
}

/// Starts the monitors: writes `containers.csv` (and `balancer.csv` when `balancer_stats`
/// is given) in `out_dir`; the first tick is now.
pub async fn start_with(
    rt: &Runtime,
    targets: Vec<Target>,
    balancer_stats: Option<SocketAddr>,
    out_dir: &Path,
    options: MonitorOptions,
) -> Result<MonitorHandle, MonitorError> {
    let targets = targets
        .into_iter()
        .map(|target| Sampled {
            target,
            rt: rt.clone(),
            remote: false,
        })
        .collect();
    start_placed(targets, balancer_stats, Vec::new(), out_dir, options).await
}

/// A container to sample, on the engine it runs on.
#[derive(Clone)]
pub struct Sampled {
    pub target: Target,
    pub rt: Runtime,
    /// On an engine other than the coordinator's (a load generator placed apart): read as
    /// `MonitorOptions::remote_source` says.
    pub remote: bool,
}

/// [`start_with`], each target sampled on its own engine, and `links` probed (`links.csv`,
/// written only where there is a link to probe).
pub async fn start_placed(
    targets: Vec<Sampled>,
    balancer_stats: Option<SocketAddr>,
    links: Vec<LinkTarget>,
    out_dir: &Path,
    options: MonitorOptions,
) -> Result<MonitorHandle, MonitorError> {
    std::fs::create_dir_all(out_dir).map_err(|source| MonitorError::OutputDir {
        path: out_dir.to_path_buf(),
        source,
    })?;
    let (reader, probes) = choose_reader(targets, &options).await?;
    let (source, layout) = match &reader {
        Reader::Cgroup(l) => (Source::Cgroup, Some(l.describe())),
        Reader::Api => (Source::EngineApi, None),
    };
    let containers_csv = CsvFile::create(&out_dir.join(CONTAINERS_CSV), CONTAINERS_HEADER)?;
    let balancer_csv = match balancer_stats {
        Some(_) => Some(CsvFile::create(
            &out_dir.join(BALANCER_CSV),
            BALANCER_HEADER,
        )?),
        None => None,
    };
    // The host is sampled where it is the engine's: not through a remote DOCKER_HOST.
    let host = match options.host && !engine_is_remote() {
        false => None,
        true => Some((
            host::HostProbe::new(),
            CsvFile::create(&out_dir.join(HOST_CSV), HOST_HEADER)?,
        )),
    };
    // Created with the other files, before any task starts.
    let links_csv = match links.is_empty() {
        true => None,
        false => Some(CsvFile::create(&out_dir.join(LINKS_CSV), LINKS_HEADER)?),
    };
    let clock = TickGrid::new(options.period);
    let (stop, stop_rx) = watch::channel(false);
    let (latest_tx, latest) = watch::channel(Latest::default());
    let (balancer_tx, balancer_latest) = watch::channel(Vec::new());
    let s = sampler::Sampler {
        reader,
        probes,
        clock,
        out: containers_csv,
        latest: latest_tx,
        host,
    };
    let sampler = Some(tokio::spawn(s.run(stop_rx.clone())));
    let poller = match (balancer_stats, balancer_csv) {
        (Some(addr), Some(out)) => {
            let p = poller::Poller {
                addr,
                clock,
                out,
                latest: balancer_tx,
            };
            Some(tokio::spawn(p.run(stop_rx.clone())))
        }
        _ => None,
    };
    let prober = links_csv.map(|out| {
        let p = link::Prober {
            targets: links,
            clock,
            out,
        };
        tokio::spawn(p.run(stop_rx))
    });
    Ok(MonitorHandle {
        stop,
        sampler,
        poller,
        prober,
        latest,
        balancer_latest,
        source,
        layout,
    })
}

/// Whether DOCKER_HOST names an engine on another machine (whose host this one cannot read).
fn engine_is_remote() -> bool {
    std::env::var("DOCKER_HOST").is_ok_and(|h| !h.is_empty() && !h.starts_with("unix://"))
}

/// Picks the source and prepares one probe per target (with its cgroup files open when
/// the container runs). `Auto` falls back to the API when DOCKER_HOST names a remote
/// engine, when this host's cgroups cannot be read, or when a running target's cgroup is
/// not where a local engine would put it.
async fn choose_reader(
    targets: Vec<Sampled>,
    options: &MonitorOptions,
) -> Result<(Reader, Vec<Probe>), MonitorError> {
    let choice = options.source;
    let remote_api = options.remote_source == Source::EngineApi;
    let remote = engine_is_remote();
    let api = |targets: Vec<Sampled>| {
        (
            Reader::Api,
            targets
                .into_iter()
                .map(|s| Probe::new(s.target, (s.rt, s.remote), Via::Api, None))
                .collect(),
        )
    };
    let layout = match (choice, remote) {
        (Source::EngineApi, _) | (Source::Auto, true) => return Ok(api(targets)),
        _ => match Layout::detect() {
            Ok(l) => Arc::new(l),
            Err(_) if choice == Source::Auto => return Ok(api(targets)),
            Err(e) => return Err(MonitorError::Layout(e)),
        },
    };
    let mut probes = Vec::with_capacity(targets.len());
    for s in &targets {
        let t = &s.target;
        let via = match (s.remote, remote_api) {
            (true, true) => {
                // Read through its engine's API as told; whether it runs on this host (its
                // cgroup is here) decides only whether the host's figures count it as the
                // study's.
                let state = s.rt.container_state(&t.name).await?;
                let here = state.running
                    && state.pid > 0
                    && CgroupFiles::open(&layout, &state.id, state.pid).is_ok();
                probes.push(Probe::new(t.clone(), (s.rt.clone(), !here), Via::Api, None));
                continue;
            }
            (true, false) => Via::CgroupElseApi,
            (false, _) => Via::Reader,
        };
        let state = s.rt.container_state(&t.name).await?;
        let files = if state.running && state.pid > 0 {
            match CgroupFiles::open(&layout, &state.id, state.pid) {
                Ok(f) => Some(f),
                Err(_) if via == Via::CgroupElseApi => {
                    probes.push(Probe::new(
                        t.clone(),
                        (s.rt.clone(), s.remote),
                        Via::Api,
                        None,
                    ));
                    continue;
                }
                Err(_) if choice == Source::Auto => return Ok(api(targets)),
                Err(reason) => {
                    return Err(MonitorError::NoCgroup {
                        name: t.name.clone(),
                        reason,
                    })
                }
            }
        } else {
            None
        };
        probes.push(Probe::new(t.clone(), (s.rt.clone(), s.remote), via, files));
    }
    Ok((Reader::Cgroup(layout), probes))
}

impl MonitorHandle {
    /// The last row per container, updated every tick.
    pub fn latest(&self) -> watch::Receiver<Latest> {
        self.latest.clone()
    }

    /// The balancer's server rows of the last poll (one row with `error` when it failed).
    pub fn balancer_latest(&self) -> watch::Receiver<Vec<BalancerRow>> {
        self.balancer_latest.clone()
    }

    /// The source in use: `Cgroup` or `EngineApi`.
    pub fn source(&self) -> Source {
        self.source
    }

    /// Stops both tasks after their current tick; the CSV files are complete when it returns.
    pub async fn stop(mut self) -> Result<MonitorSummary, MonitorError> {
        self.stop.send_replace(true);
        let join = |e: tokio::task::JoinError, task| MonitorError::Task {
            task,
            reason: e.to_string(),
        };
        let report = match self.sampler.take() {
            Some(h) => h.await.map_err(|e| join(e, "container"))??,
            None => {
                return Err(MonitorError::Task {
                    task: "container",
                    reason: "already stopped".into(),
                })
            }
        };
        let balancer = match self.poller.take() {
            Some(h) => Some(h.await.map_err(|e| join(e, "balancer"))??),
            None => None,
        };
        if let Some(h) = self.prober.take() {
            h.await.map_err(|e| join(e, "link"))??;
        }
        let max_interval_error_s = report
            .containers
            .iter()
            .map(|c| c.max_interval_error_s)
            .fold(0.0, f64::max);
        Ok(MonitorSummary {
            source: self.source,
            layout: self.layout.take(),
            ticks: report.timing.ticks,
            skipped_ticks: report.timing.skipped,
            seconds_covered: match (report.first_offset_s, report.last_offset_s) {
                (Some(a), Some(b)) => b - a,
                _ => 0.0,
            },
            max_lateness_s: report.timing.max_lateness.as_secs_f64(),
            max_interval_error_s,
            containers: report.containers,
            oom_kills_total: report.oom_kills_total,
            balancer,
        })
    }
}

impl Drop for MonitorHandle {
    fn drop(&mut self) {
        self.stop.send_replace(true);
    }
}
