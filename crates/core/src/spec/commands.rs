//! The commands of the containers feedbench itself puts in a run, in one place: the load
//! generator's command line and environment (k6's or feedbench-load's), where its input and
//! raw output live, and the CPU-steal co-tenant's stress-ng arguments. The topology puts
//! them in its container specs; the load's rendering and the executor refer to the same
//! paths.

use std::time::Duration;

use crate::plan::model::LoadGeneratorKind;

/// Where the load generator's script goes.
pub const LOAD_SCRIPT: &str = "/feedbench/load.js";

/// Where k6 writes its raw samples inside the load-generator container: its home, the one
/// directory user k6 (uid 12345) can write. Plain CSV, not gzipped: the executor follows
/// the file as k6 writes it (`k6_follow_args`), which a gzip stream flushed only at its
/// end would not allow; the run directory keeps it gzipped (`k6.csv.gz`), compressed by
/// feedbench outside the measurement path.
pub const K6_OUTPUT: &str = "/home/k6/k6.csv";

/// The command run inside the load-generator container to follow `K6_OUTPUT` from its
/// first byte as k6 writes it (coreutils `tail`; `-F` waits for the file to appear). Its
/// standard output streams over the engine's API, so a load generator on another engine
/// is followed the same way.
pub fn k6_follow_args() -> Vec<String> {
    follow_args(LoadGeneratorKind::K6)
}

/// The load generator's command: k6 with per-sample output to `K6_OUTPUT`, no usage
/// report (k6 would otherwise send one to grafana.com), and no REST API server (an empty
/// `--address`): feedbench does not use it, and on a host network (a load generator placed
/// apart) it would listen on that host's port 6565.
pub fn k6_args() -> Vec<String> {
    let out = format!("csv={K6_OUTPUT}");
    [
        "run",
        "--quiet",
        "--no-usage-report",
        "--address",
        "",
        "--out",
        &out,
        LOAD_SCRIPT,
    ]
    .map(String::from)
    .to_vec()
}

/// The load generator's environment: nanosecond timestamps in the CSV output.
pub fn k6_env() -> Vec<(String, String)> {
    vec![
        ("K6_CSV_TIME_FORMAT".into(), "unix_nano".into()),
        ("K6_NO_USAGE_REPORT".into(), "true".into()),
    ]
}

/// Where feedbench-load reads its plan (`feedbench_load::plan::LoadPlan`, JSON).
pub const NATIVE_PLAN: &str = "/feedbench/load.json";

/// Where feedbench-load writes its output stream (`feedbench_load::stream`) inside its
/// container: the home of its user (uid 12345), as with k6. Followed as it grows, like k6's.
pub const NATIVE_OUTPUT: &str = "/home/load/load.csv";

/// Where the load generator of `kind` reads its input (the file `spec::load` renders).
pub fn input_path(kind: LoadGeneratorKind) -> &'static str {
    match kind {
        LoadGeneratorKind::K6 => LOAD_SCRIPT,
        LoadGeneratorKind::Native => NATIVE_PLAN,
    }
}

/// Where the load generator of `kind` writes its raw output.
pub fn output_path(kind: LoadGeneratorKind) -> &'static str {
    match kind {
        LoadGeneratorKind::K6 => K6_OUTPUT,
        LoadGeneratorKind::Native => NATIVE_OUTPUT,
    }
}

/// The command that follows the raw output of `kind` from its first byte (see
/// `k6_follow_args`).
pub fn follow_args(kind: LoadGeneratorKind) -> Vec<String> {
    ["tail", "-c", "+1", "-F", output_path(kind)]
        .map(String::from)
        .to_vec()
}

/// The load generator's command line.
pub fn args(kind: LoadGeneratorKind) -> Vec<String> {
    match kind {
        LoadGeneratorKind::K6 => k6_args(),
        LoadGeneratorKind::Native => ["--plan", NATIVE_PLAN, "--out", NATIVE_OUTPUT]
            .map(String::from)
            .to_vec(),
    }
}

/// The load generator's environment.
pub fn env(kind: LoadGeneratorKind) -> Vec<(String, String)> {
    match kind {
        LoadGeneratorKind::K6 => k6_env(),
        LoadGeneratorKind::Native => Vec::new(),
    }
}

/// The co-tenant's stress-ng arguments: enough workers to burn `cores`, capped by the
/// engine to exactly `cores`, for at most the fault's duration.
pub fn co_tenant_args(cores: f64, duration: Duration) -> Vec<String> {
    let workers = cores.ceil().max(1.0) as u32;
    vec![
        "--cpu".into(),
        workers.to_string(),
        "--timeout".into(),
        format!("{}s", duration.as_secs().max(1)),
        "--metrics-brief".into(),
    ]
}
