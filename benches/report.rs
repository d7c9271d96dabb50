//! The report's own cost against the pandas recomputation's, in one run, on one synthetic
//! study: 69 runs × 100,000 requests (twin/tests/gen.py --big, written once under
//! target/bench-report/ and reused). For each side: wall time and peak resident memory;
//! the report's side is every figure of every run (read once, on as many threads as there
//! are cores, as `feedbench report` does), the summary across repetitions, and the whole
//! report directory rendered and written. The sides alternate for FEEDBENCH_BENCH_ROUNDS
//! rounds (3 by default). Run with `cargo bench --bench report`; FEEDBENCH_BENCH_RUNS and
//! FEEDBENCH_BENCH_REQUESTS change the size. The twin's Python is found as
//! `feedbench report --verify` finds it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use feedbench::report::verify;
use feedbench_core::report::rows::{self, Row};
use feedbench_core::report::{run, StudyReport};

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

/// This process's CPU time so far (user and system), in seconds.
fn own_cpu_s() -> f64 {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct it is given.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    s(u.ru_utime) + s(u.ru_stime)
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

/// The report's side, once: every run's figures, the summary, and every file of the report
/// directory rendered and written (plots, report.md, index.html, metrics.csv, summary.csv,
/// metrics.json). Only the audit is left out: it reads the journal and git, not requests.
fn ours(items: &[(String, PathBuf)], out: &Path) -> Result<(f64, Vec<Row>, usize, usize)> {
    let t = Instant::now();
    let cpu = own_cpu_s();
    let mut runs = Vec::new();
    for f in run::analyse_all(items, &mut |_, _, _| {}) {
        runs.push(f.map_err(|e| anyhow::anyhow!(e))?);
    }
    let analysed = t.elapsed().as_secs_f64();
    let report = StudyReport::of_runs("bench", runs, items.iter().map(|i| i.1.clone()).collect());
    let summarised = t.elapsed().as_secs_f64();
    feedbench::report::write_all(&report, out)?;
    let secs = t.elapsed().as_secs_f64();
    eprintln!(
        "  the report's phases: runs analysed {analysed:.2} s, summary {:.2} s, files written {:.2} s; CPU {:.2} s",
        summarised - analysed,
        secs - summarised,
        own_cpu_s() - cpu
    );
    let csv = std::fs::metadata(out.join(feedbench_core::rundir::METRICS_CSV))?.len() as usize;
    Ok((secs, report.metrics, report.summary.len(), csv))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<()> {
    if std::env::args().any(|a| a == "--list") {
        return Ok(());
    }
    let runs = env_or("FEEDBENCH_BENCH_RUNS", 69);
    let requests = env_or("FEEDBENCH_BENCH_REQUESTS", 100_000);
    let rounds = env_or("FEEDBENCH_BENCH_ROUNDS", 3).max(1);
    let twin = verify::Twin::ready(&mut std::io::stderr())?;
    let python = twin.python.clone();
    let root = Path::new("target/bench-report");
    let dirs = study(root, runs, requests, &python)?;
    let items: Vec<(String, PathBuf)> = dirs
        .iter()
        .map(|d| (d.display().to_string(), d.clone()))
        .collect();

    // Every file once, untimed, so that neither side pays for a cold page cache.
    for d in &dirs {
        for f in std::fs::read_dir(d)? {
            let f = f?.path();
            if f.is_file() {
                std::hint::black_box(std::fs::read(&f)?);
            }
        }
    }
    // The two sides alternate, round after round, so that a noisy spell on this shared
    // machine falls on both; the ratio of the medians is what is reported. Peak memory is
    // the first round's: the recomputation runs first, while this process is still small
    // (a child's peak counts what it inherited at fork), and this process's own peak is
    // then all the report's.
    let (mut our_times, mut their_times) = (Vec::new(), Vec::new());
    let mut memory = (f64::NAN, f64::NAN);
    for round in 1..=rounds {
        let t = Instant::now();
        let theirs_rows = twin.recompute(&dirs, None, &[], false)?.rows;
        let theirs = t.elapsed().as_secs_f64();
        let (secs, rows, summary_rows, csv) = ours(&items, &root.join("report"))?;
        if round == 1 {
            memory = (own_peak_mib().unwrap_or(f64::NAN), children_peak_mib());
            println!(
                "study: {runs} runs × {requests} requests ({} rows, {summary_rows} summary rows, metrics.csv {:.1} MiB)",
                rows.len(),
                csv as f64 / 1048576.0
            );
        }
        let differ = rows::compare(&rows, &theirs_rows).len();
        println!(
            "round {round}: feedbench report {secs:.2} s, pandas recomputation {theirs:.2} s: {:.1}×; rows that differ: {differ}",
            theirs / secs
        );
        if differ > 0 {
            bail!("the two implementations disagree on {differ} rows");
        }
        our_times.push(secs);
        their_times.push(theirs);
    }
    println!(
        "peak RSS (round 1): feedbench report {:.0} MiB, pandas recomputation {:.0} MiB",
        memory.0, memory.1
    );
    let (o, t) = (median(our_times), median(their_times));
    println!("median of {rounds}: feedbench report {o:.2} s, pandas recomputation {t:.2} s, ratio {:.1}×", t / o);
    Ok(())
}
