//! The commands of the containers feedbench itself puts in a run, in one place: the load
//! generator's k6 command line and environment, where its script and raw output live, and
//! the CPU-steal co-tenant's stress-ng arguments. The topology puts them in its container
//! specs; the load script and the executor refer to the same paths.

use std::time::Duration;

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
    ["tail", "-c", "+1", "-F", K6_OUTPUT]
        .map(String::from)
        .to_vec()
}

/// The load generator's command: k6 with per-sample output to `K6_OUTPUT`, and no usage
/// report (k6 would otherwise send one to grafana.com).
pub fn k6_args() -> Vec<String> {
    let out = format!("csv={K6_OUTPUT}");
    [
        "run",
        "--quiet",
        "--no-usage-report",
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
