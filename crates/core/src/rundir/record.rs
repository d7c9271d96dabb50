//! `run.json`: the run's record, written by the executor when the run ends and read back by
//! the study runner (saturations for later runs), status and the report. Serde both ways;
//! `format_version` says which shape a file has, and fields added later carry
//! `#[serde(default)]` so that older records still read.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::frame::Frame;
use super::requests::LoadSummary;
use super::RUN_JSON;
use crate::analysis::saturation::Saturation;
use crate::evidence::Evidence;
use crate::files::{write_atomic, FileError};

/// The shape of `run.json` this version writes.
pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("cannot read `{path}`: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("`{path}` is not UTF-8 text (byte {offset} is not); the run's record is damaged: restore it from a copy, or `feedbench invalidate` the run to have it run again")]
    NotUtf8 { path: PathBuf, offset: usize },
    #[error("`{path}` line {line}, column {column}: {message} (the run's record is damaged; `feedbench invalidate` the run to have it run again)")]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("`{path}` has format_version {found}; this feedbench reads {FORMAT_VERSION} (use the feedbench that wrote it)")]
    Version { path: PathBuf, found: u32 },
    #[error("cannot serialise the run's record: {0}")]
    Serialise(#[source] serde_json::Error),
    #[error(transparent)]
    Write(#[from] FileError),
}

/// How the run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "execution", rename_all = "kebab-case")]
pub enum Ending {
    Completed,
    Aborted {
        guard: String,
        figure: f64,
        threshold: f64,
        unit: String,
        detail: String,
    },
    Failed {
        reason: String,
    },
}

/// What a run leaves for the record (the run's `run.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub format_version: u32,
    pub run_id: String,
    pub run_hash: String,
    pub plan_hash: String,
    pub execution: Ending,
    pub cleanup_ok: bool,
    /// Rates taken from measured saturations: field, value, and where it came from.
    #[serde(default)]
    pub derived: Vec<Derived>,
    #[serde(default)]
    pub warnings: Vec<String>,
    #[serde(default)]
    pub load: Option<LoadSummary>,
    #[serde(default)]
    pub scheduled_arrivals: Option<f64>,
    #[serde(default)]
    pub monitors: Option<MonitorSummary>,
    /// For a step ramp: every step's verdict and the saturation.
    #[serde(default)]
    pub saturation: Option<Saturation>,
    /// Requests that started in the measured phase (after the warm-up): how many, their
    /// nearest-rank p50 and p99 in ms, and the share that failed (no response or 5xx).
    #[serde(default)]
    pub measured: Option<Measured>,
    /// Measurement-path validity (`validity::check`) of a completed run: one piece of
    /// evidence per failed check; empty when every check passed or none could run (those
    /// are in `warnings`).
    #[serde(rename = "validity_evidence", default)]
    pub validity: Vec<Evidence>,
    /// The run's definition on the wall clock, for the report (completed runs whose
    /// scenario start k6 reported).
    #[serde(default)]
    pub frame: Option<Frame>,
    /// Containers of the system under test killed for memory during the run (a result, not
    /// an abort: the run went on), in the order of their first kill.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub oom_kills: Vec<OomKill>,
    /// The seeded snapshot the database started from (`spec::seed`), when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<crate::spec::seed::Snapshot>,
    /// Every container's caps as the engine reported them at deploy and before teardown
    /// (`rundir::caps`); empty when the run was never deployed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caps: Vec<super::caps::ReadCaps>,
    /// The host over the measured window (host.csv): its CPU used outside the study, steal,
    /// load; absent where the host was not sampled or the window is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<super::host::HostFigures>,
    /// For a fault on a link: what the probes of that link showed before and during it
    /// (links.csv; `validity::link`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<super::links::LinkFigures>,
    pub started_wall_ns: i128,
    pub ended_wall_ns: i128,
}

/// A container of the system under test killed for memory: which, its role, how many
/// times, its memory cap, and when first (seconds since the run's load started).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OomKill {
    pub container: String,
    pub role: String,
    pub kills: u64,
    pub memory_limit_bytes: u64,
    pub first_at_s: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    pub requests: usize,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub failed_share: f64,
    /// The measured phase's objective windows and how many breached, the run's verdict
    /// (`analysis::objective::verdict`); absent for a step ramp, and in a run.json written
    /// before feedbench judged runs by their windows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windows: Option<crate::analysis::objective::JudgedWindows>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Derived {
    pub field: String,
    pub rate: f64,
    pub from: String,
}

/// Where container counters come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// The cgroup files when this process can see them (a local engine), else the API.
    #[default]
    Auto,
    /// The host's cgroup and proc files: cheap and exact; needs a local engine.
    Cgroup,
    /// The engine's stats API, one-shot: works with a remote engine.
    EngineApi,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ContainerSummary {
    pub name: String,
    pub role: String,
    /// Rows with counters.
    pub ok: u64,
    /// Rows while the container was not running.
    pub down: u64,
    /// Rows whose counters could not be read.
    pub error: u64,
    /// The largest |time between two consecutive reads − period|, in seconds.
    pub max_interval_error_s: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BalancerSummary {
    pub polls: u64,
    pub failed: u64,
    pub skipped_ticks: u64,
    pub max_lateness_s: f64,
}

/// What the monitors recorded.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MonitorSummary {
    /// `cgroup` or `engine-api`.
    pub source: Source,
    /// The cgroup layout read, when the source is `cgroup`.
    pub layout: Option<String>,
    pub ticks: u64,
    pub skipped_ticks: u64,
    /// From the first read to the last, in seconds.
    pub seconds_covered: f64,
    /// The latest a tick's last read completed after the tick's scheduled time, in seconds.
    pub max_lateness_s: f64,
    /// The largest interval error of any container, in seconds.
    pub max_interval_error_s: f64,
    pub containers: Vec<ContainerSummary>,
    pub oom_kills_total: u64,
    pub balancer: Option<BalancerSummary>,
}

impl ContainerSummary {
    /// Counts one row of this container by its status.
    pub fn count(&mut self, s: super::samples::SampleStatus) {
        use super::samples::SampleStatus;
        match s {
            SampleStatus::Ok => self.ok += 1,
            SampleStatus::Down => self.down += 1,
            SampleStatus::Error => self.error += 1,
        }
    }
}

impl RunRecord {
    /// Reads `dir/run.json`.
    pub fn read(dir: &Path) -> Result<RunRecord, RecordError> {
        let path = dir.join(RUN_JSON);
        let bytes = crate::confine::read(&path).map_err(|source| RecordError::Read {
            path: path.clone(),
            source,
        })?;
        let text = String::from_utf8(bytes).map_err(|e| RecordError::NotUtf8 {
            path: path.clone(),
            offset: e.utf8_error().valid_up_to(),
        })?;
        Self::parse(&path, &text)
    }

    /// Parses a record's text; `path` only names it in errors.
    pub fn parse(path: &Path, text: &str) -> Result<RunRecord, RecordError> {
        let parse = |e: serde_json::Error| RecordError::Parse {
            path: path.to_path_buf(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        };
        #[derive(Deserialize)]
        struct Version {
            format_version: u32,
        }
        let v: Version = serde_json::from_str(text).map_err(parse)?;
        if v.format_version != FORMAT_VERSION {
            return Err(RecordError::Version {
                path: path.to_path_buf(),
                found: v.format_version,
            });
        }
        serde_json::from_str(text).map_err(parse)
    }

    /// Writes `dir/run.json` atomically.
    pub fn write(&self, dir: &Path) -> Result<(), RecordError> {
        let json = serde_json::to_vec_pretty(self).map_err(RecordError::Serialise)?;
        Ok(write_atomic(&dir.join(RUN_JSON), &json)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> RunRecord {
        RunRecord {
            format_version: FORMAT_VERSION,
            run_id: "feed-rs/ramp/r1".into(),
            run_hash: "rh".into(),
            plan_hash: "ph".into(),
            execution: Ending::Aborted {
                guard: "host-memory".into(),
                figure: 1.0,
                threshold: 2.0,
                unit: "GiB".into(),
                detail: "low".into(),
            },
            cleanup_ok: true,
            derived: vec![],
            warnings: vec!["w".into()],
            load: Some(LoadSummary::default()),
            scheduled_arrivals: Some(10.0),
            monitors: Some(MonitorSummary::default()),
            saturation: None,
            measured: None,
            validity: vec![],
            frame: None,
            oom_kills: Vec::new(),
            seed: None,
            caps: Vec::new(),
            host: None,
            link: None,
            started_wall_ns: 1,
            ended_wall_ns: 2,
        }
    }

    #[test]
    fn a_record_reads_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let r = record();
        r.write(dir.path()).unwrap();
        assert_eq!(RunRecord::read(dir.path()).unwrap(), r);
        let text = std::fs::read_to_string(dir.path().join(RUN_JSON)).unwrap();
        assert!(text.contains("\"execution\": \"aborted\""), "{text}");
        assert!(text.contains("\"guard\": \"host-memory\""), "{text}");
    }

    #[test]
    fn fields_added_later_may_be_absent() {
        let text = r#"{"format_version":1,"run_id":"a","run_hash":"h","plan_hash":"p",
            "execution":{"execution":"completed"},"cleanup_ok":true,"started_wall_ns":1,"ended_wall_ns":2}"#;
        let r = RunRecord::parse(Path::new("run.json"), text).unwrap();
        assert_eq!(r.execution, Ending::Completed);
        assert!(r.saturation.is_none() && r.validity.is_empty());
    }

    #[test]
    fn a_damaged_record_is_named_with_its_line() {
        let e = RunRecord::parse(
            Path::new("x/run.json"),
            "{\n\"format_version\": 1,\n\"run_id\": 3}",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("x/run.json") && e.contains("line 3"), "{e}");
        let e = RunRecord::parse(Path::new("run.json"), r#"{"format_version": 9}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("format_version 9"), "{e}");
    }
}
