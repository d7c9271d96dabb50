//! The report's own cost against the pandas recomputation's, in one run, on one synthetic
//! study: 69 runs × 100,000 requests (twin/tests/gen.py --big, written once under
//! target/bench-report/ and reused). For each side: wall time and peak resident memory;
//! the report's side is every figure of every run (read once, one run at a time), the
//! summary across repetitions and metrics.csv rendered, the runs read a few at a time on
//! as many threads as there are cores (as `feedbench report` does). Run with
//! `cargo bench --bench report`; FEEDBENCH_BENCH_RUNS and FEEDBENCH_BENCH_REQUESTS change
//! the size. The twin's Python is found as `feedbench report --verify` finds it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use feedbench::report::verify;
use feedbench_core::report::{rows, run, summary};

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// This process's peak resident memory (VmHWM), in MiB.
fn own_peak_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// The largest peak resident memory of any waited-for child, in MiB.
fn children_peak_mib() -> f64 {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct it is given.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    u.ru_maxrss as f64 / 1024.0
}

fn study(root: &Path, runs: usize, requests: usize, python: &str) -> Result<Vec<PathBuf>> {
    let done = root.join(format!("done-{runs}x{requests}"));
    if !done.is_file() {
        let _ = std::fs::remove_dir_all(root);
        std::fs::create_dir_all(root)?;
        eprintln!(
            "writing {runs} runs × {requests} requests into {} …",
            root.display()
        );
        let out = Command::new(python)
            .arg("twin/tests/gen.py")
            .arg(root.join("runs"))
            .args([
                "--big",
                &runs.to_string(),
                "--requests",
                &requests.to_string(),
            ])
            .output()
            .context("running twin/tests/gen.py")?;
        if !out.status.success() {
            bail!("gen.py failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::fs::write(&done, &out.stdout)?;
    }
    Ok(std::fs::read_to_string(&done)?
        .lines()
        .map(PathBuf::from)
        .collect())
}

fn main() -> Result<()> {
    if std::env::args().any(|a| a == "--list") {
        return Ok(());
    }
    let runs = env_or("FEEDBENCH_BENCH_RUNS", 69);
    let requests = env_or("FEEDBENCH_BENCH_REQUESTS", 100_000);
    let python = verify::python(Path::new("twin"));
    let dirs = study(Path::new("target/bench-report"), runs, requests, &python)?;

    let items: Vec<(String, PathBuf)> = dirs
        .iter()
        .map(|d| (d.display().to_string(), d.clone()))
        .collect();
    let t = Instant::now();
    let mut all = Vec::new();
    for f in run::analyse_all(&items, &mut |_, _, _| {}) {
        all.extend(f.map_err(|e| anyhow::anyhow!(e))?.rows);
    }
    let sums = summary::summarise(&all);
    let csv = rows::render(&all);
    let ours = t.elapsed().as_secs_f64();
    let ours_mib = own_peak_mib().unwrap_or(f64::NAN);

    let t = Instant::now();
    let theirs_rows = verify::recompute(&dirs)?;
    let theirs = t.elapsed().as_secs_f64();
    let theirs_mib = children_peak_mib();
    let differ = rows::compare(&all, &theirs_rows).len();

    println!("study: {runs} runs × {requests} requests ({} rows, {} summary rows, metrics.csv {:.1} MiB)", all.len(), sums.len(), csv.len() as f64 / 1048576.0);
    println!("feedbench report figures: {ours:.2} s, peak RSS {ours_mib:.0} MiB");
    println!("pandas recomputation:     {theirs:.2} s, peak RSS {theirs_mib:.0} MiB");
    println!("ratio: {:.1}× ; rows that differ: {differ}", theirs / ours);
    if differ > 0 {
        bail!("the two implementations disagree on {differ} rows");
    }
    Ok(())
}
