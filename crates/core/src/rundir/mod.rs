//! The study directory, `results/<study>/`, and the run directory within it,
//! `runs/<run>/`: the one module that names their files and owns the typed rows and
//! records written to them. Writers (the executor, the monitors, settle) and readers
//! (validity, status, the audit, the report) go through these names; no file name is
//! spelled anywhere else (tests/offline/run_directory_names.rs checks it). docs/results.md
//! describes every file.

pub mod caps;
pub mod events;
pub mod frame;
pub mod health;
pub mod host;
pub mod instance;
pub mod layout;
pub mod links;
pub mod native;
pub mod readiness;
pub mod record;
pub mod requests;
pub mod samples;
pub mod table;

/// The run's record (`record::RunRecord`).
pub const RUN_JSON: &str = "run.json";
/// The run's seal: what defined it, how it ended, every other file's sha256.
pub const MANIFEST_JSON: &str = "manifest.json";
/// What happened during the run, on one clock (`events::RunEvent`).
pub const EVENTS_CSV: &str = "events.csv";
/// One row per request (`requests::Request`).
pub const REQUESTS_CSV: &str = "requests.csv";
/// One sample per container per second (`samples::ContainerRow`).
pub const CONTAINERS_CSV: &str = "containers.csv";
/// One row per HAProxy server per second (`samples::BalancerRow`).
pub const BALANCER_CSV: &str = "balancer.csv";
/// The host's own sample each second: its CPU, steal, load, and who used it (`host::HostRow`).
pub const HOST_CSV: &str = "host.csv";
/// The balancer's server state changes from its own log (`health::HealthRow`).
pub const HEALTH_CSV: &str = "health.csv";
/// A restarted replica's readiness probe, attempt by attempt (`readiness::ReadinessRow`).
pub const READINESS_CSV: &str = "readiness.csv";
/// The database links probed through the fault proxy once a second (`links::LinkRow`).
pub const LINKS_CSV: &str = "links.csv";
/// The balancer's configuration as rendered for the run.
pub const HAPROXY_CFG: &str = "haproxy.cfg";
/// The k6 script as rendered for the run.
pub const LOAD_JS: &str = "load.js";
/// k6's raw per-metric output, gzipped, as k6 wrote it.
pub const K6_CSV_GZ: &str = "k6.csv.gz";
/// feedbench-load's plan as rendered for the run (a native load generator's `load.js`).
pub const LOAD_JSON: &str = "load.json";
/// feedbench-load's raw output stream, gzipped, as it wrote it (a native `k6.csv.gz`).
pub const LOAD_STREAM_GZ: &str = "load-stream.csv.gz";
/// Every container's output, one file per role.
pub const LOGS_DIR: &str = "logs";

/// The report's directory in the study directory (`feedbench report`, docs/analysis.md).
pub const REPORT_DIR: &str = "report";
/// The report's files.
pub const INDEX_HTML: &str = "index.html";
pub const REPORT_MD: &str = "report.md";
pub const METRICS_CSV: &str = "metrics.csv";
pub const SUMMARY_CSV: &str = "summary.csv";
pub const COMPARISONS_CSV: &str = "comparisons.csv";
pub const METRICS_JSON: &str = "metrics.json";

/// Every file name above, for checks that no other module spells one.
pub const FILE_NAMES: [&str; 22] = [
    RUN_JSON,
    MANIFEST_JSON,
    EVENTS_CSV,
    REQUESTS_CSV,
    CONTAINERS_CSV,
    BALANCER_CSV,
    HOST_CSV,
    HEALTH_CSV,
    READINESS_CSV,
    LINKS_CSV,
    HAPROXY_CFG,
    LOAD_JS,
    K6_CSV_GZ,
    LOAD_JSON,
    LOAD_STREAM_GZ,
    layout::JOURNAL,
    INDEX_HTML,
    REPORT_MD,
    METRICS_CSV,
    SUMMARY_CSV,
    COMPARISONS_CSV,
    METRICS_JSON,
];

/// A container's log file under `logs/`, by its role's key.
pub fn log_file(role: &str) -> String {
    format!("{role}.log")
}

/// The run directory's copy of the load generator's input (the rendered script or plan).
pub fn load_input(kind: crate::plan::model::LoadGeneratorKind) -> &'static str {
    match kind {
        crate::plan::model::LoadGeneratorKind::K6 => LOAD_JS,
        crate::plan::model::LoadGeneratorKind::Native => LOAD_JSON,
    }
}

/// The run directory's gzipped copy of the load generator's raw output.
pub fn load_raw(kind: crate::plan::model::LoadGeneratorKind) -> &'static str {
    match kind {
        crate::plan::model::LoadGeneratorKind::K6 => K6_CSV_GZ,
        crate::plan::model::LoadGeneratorKind::Native => LOAD_STREAM_GZ,
    }
}
