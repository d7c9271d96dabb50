//! `feedbench run <PLAN>`: execute the plan's runs in the plan's order, each into its own
//! directory under results/<study>/runs/, building the images it needs first.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{CliError, Format};
use crate::engine::runtime::Runtime;
use crate::engine::topology::run_slug;
use crate::plan::{expand, load_file, RunSpec};
use crate::run::events::{RunEvent, Stamp};
use crate::run::execute::{execute, Execution, RunRecord, Saturations};

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The plan file.
    pub plan: PathBuf,
    /// Only runs whose id matches this pattern (`*` any characters, `?` one), e.g.
    /// `feed-rs/*/r1`. Runs they depend on must have run before, or match too.
    #[arg(long)]
    pub only: Option<String>,
    /// `json` prints every event as a JSON line on stdout.
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
    /// Where study results go.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// Use the images as they are instead of building missing or stale ones first.
    #[arg(long)]
    pub no_build: bool,
}

/// `*` and `?` glob match over a whole run id.
pub fn glob(pattern: &str, text: &str) -> bool {
    fn go(p: &[u8], t: &[u8]) -> bool {
        match (p.first(), t.first()) {
            (None, None) => true,
            (Some(b'*'), _) => go(&p[1..], t) || (!t.is_empty() && go(p, &t[1..])),
            (Some(b'?'), Some(_)) => go(&p[1..], &t[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &t[1..]),
            _ => false,
        }
    }
    go(pattern.as_bytes(), text.as_bytes())
}

/// Saturations recorded by earlier invocations, from their run.json.
fn recorded(study_dir: &Path, runs: &[RunSpec]) -> Saturations {
    let mut out = Saturations::new();
    for r in runs {
        let path = study_dir
            .join("runs")
            .join(run_slug(&r.id))
            .join("run.json");
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        if json["run_hash"] != r.run_hash.as_str() {
            continue;
        }
        if let Some(rate) = json["saturation"]["rate"].as_f64() {
            out.insert(
                (r.contender.clone(), r.repetition, r.profile.clone()),
                (rate, r.id.clone()),
            );
        }
    }
    out
}

impl RunArgs {
    pub fn exec(self) -> Result<(), CliError> {
        let loaded = load_file(&self.plan, super::host_cores())?;
        let runs = expand(&loaded.plan);
        let selected: Vec<RunSpec> = runs
            .iter()
            .filter(|r| self.only.as_deref().is_none_or(|p| glob(p, &r.id)))
            .cloned()
            .collect();
        if selected.is_empty() {
            return Err(CliError::Invalid(
                format!(
                    "no run of `{}` matches `{}`",
                    loaded.file,
                    self.only.clone().unwrap_or_default()
                ),
                Vec::new(),
            ));
        }
        let study_dir = self.results.join(loaded.plan.study.name.as_str());
        let _lock = crate::run::lock::lock_study(&study_dir, loaded.plan.study.name.as_str())
            .map_err(|e| CliError::Failure(e.into()))?;
        for r in &selected {
            let dir = study_dir.join("runs").join(run_slug(&r.id));
            if dir.exists() {
                return Err(CliError::Invalid(
                    format!("`{}` already holds run `{}`; feedbench never overwrites results (choose other --results or --only)", dir.display(), r.id),
                    Vec::new(),
                ));
            }
        }
        if !self.no_build {
            let recipes = super::images::plan_recipes(&self.plan)?;
            let args = super::images::BuildArgs {
                plan: None,
                force: false,
                only: Vec::new(),
                repo_root: None,
            };
            args.exec_with(recipes).map_err(CliError::Failure)?;
        }
        let json = self.format == Format::Json;
        super::block_on(async move {
            let rt = Runtime::connect().await.map_err(anyhow::Error::from)?;
            let mut measured = recorded(&study_dir, &runs);
            let total = selected.len();
            let allowance = loaded.plan.matrix.setup_allowance.as_secs_f64();
            let estimate = |r: &RunSpec| r.estimated_duration_s.unwrap_or(0.0) + allowance;
            let study_started = std::time::Instant::now();
            let mut failed = 0;
            for (i, run) in selected.iter().enumerate() {
                let dir = study_dir.join("runs").join(run_slug(&run.id));
                eprintln!("[{}/{total}] {} → {}", i + 1, run.id, dir.display());
                let later: f64 = selected[i + 1..].iter().map(estimate).sum();
                let mut observe = |id: &str, stamp: Stamp, event: &RunEvent| {
                    if let (
                        false,
                        RunEvent::Progress {
                            elapsed_s, total_s, ..
                        },
                    ) = (json, event)
                    {
                        let left = (total_s - elapsed_s).max(0.0) + later;
                        let _ = writeln!(
                            std::io::stderr().lock(),
                            "  study: {} elapsed, about {} left",
                            clock(study_started.elapsed().as_secs_f64()),
                            clock(left)
                        );
                    }
                    print_event(json, id, stamp, event)
                };
                let record = tokio::select! {
                    r = execute(&rt, &loaded, run, &measured, &dir, &mut observe) => r.map_err(anyhow::Error::from)?,
                    _ = super::interrupted() => {
                        let removed = rt.clean(Some(loaded.plan.study.name.as_str())).await.map_err(anyhow::Error::from)?;
                        return Err(anyhow::anyhow!(
                            "interrupted during `{}`; removed its {} container(s); its directory `{}` is incomplete",
                            run.id, removed.containers.len(), dir.display()
                        ).into());
                    }
                };
                if let Some(rate) = record.saturation.as_ref().and_then(|s| s.rate) {
                    measured.insert(
                        (run.contender.clone(), run.repetition, run.profile.clone()),
                        (rate, run.id.clone()),
                    );
                }
                summarise(&record);
                if record.execution != Execution::Completed || !record.cleanup_ok {
                    failed += 1;
                }
            }
            if failed > 0 {
                return Err(anyhow::anyhow!("{failed} of {total} run(s) did not complete; see their run.json and events.csv").into());
            }
            Ok(())
        })
    }
}

fn print_event(json: bool, run: &str, stamp: Stamp, event: &RunEvent) {
    if json {
        let mut v = serde_json::to_value(event).unwrap_or_default();
        if let Some(m) = v.as_object_mut() {
            m.insert("run".into(), run.into());
            m.insert(
                "wall_ns".into(),
                serde_json::Value::String(stamp.wall_ns.to_string()),
            );
            m.insert("t_s".into(), stamp.t_s.into());
        }
        let _ = writeln!(std::io::stdout().lock(), "{v}");
    } else {
        let row = crate::run::events::csv_row(stamp, event);
        let fields: Vec<&str> = row.trim_end().splitn(3, ',').collect();
        let _ = writeln!(
            std::io::stderr().lock(),
            "  {:>7.1}s  {}",
            stamp.t_s,
            fields.get(2).unwrap_or(&"").replace(',', " ")
        );
    }
}

fn clock(secs: f64) -> String {
    let t = secs.round() as u64;
    format!("{}h{:02}m{:02}s", t / 3600, t / 60 % 60, t % 60)
}

fn summarise(r: &RunRecord) {
    let mut err = std::io::stderr().lock();
    let outcome = match &r.execution {
        Execution::Completed => "completed".to_string(),
        Execution::Aborted {
            guard,
            figure,
            threshold,
            unit,
            ..
        } => format!("aborted by {guard}: {figure} {unit} against {threshold} {unit}"),
        Execution::Failed { reason } => format!("failed: {reason}"),
    };
    let _ = writeln!(
        err,
        "  {outcome}; cleanup {}",
        if r.cleanup_ok { "ok" } else { "FAILED" }
    );
    if let (Some(l), Some(s)) = (&r.load, r.scheduled_arrivals) {
        let _ = writeln!(
            err,
            "  {} requests of {s:.0} scheduled, {} dropped, {} with an error code (4xx included)",
            l.requests, l.dropped_iterations, l.errors
        );
    }
    if let Some(m) = &r.measured {
        let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1} ms"));
        let _ = writeln!(
            err,
            "  measured phase: {} requests, p50 {}, p99 {}, {:.2}% failed",
            m.requests,
            ms(m.p50_ms),
            ms(m.p99_ms),
            m.failed_share * 100.0
        );
    }
    if let Some(s) = &r.saturation {
        match (s.rate, s.first_breach) {
            (Some(rate), Some(b)) => {
                let _ = writeln!(
                    err,
                    "  saturation {rate} arrivals/s (the objective broke at {b})"
                );
            }
            (Some(rate), None) => {
                let _ = writeln!(
                    err,
                    "  the objective held at every step, up to {rate} arrivals/s"
                );
            }
            (None, _) => {
                let _ = writeln!(err, "  the objective broke at the first step");
            }
        }
    }
    for w in &r.warnings {
        let _ = writeln!(err, "  warning: {w}");
    }
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn globs_match_whole_ids() {
        assert!(glob("feed-rs/*/r1", "feed-rs/ramp/r1"));
        assert!(glob("*", "x/y/r2"));
        assert!(glob("feed-??/ramp/r1", "feed-rs/ramp/r1"));
        assert!(!glob("feed-rs/*", "feed-py/ramp/r1"));
        assert!(!glob("feed-rs/ramp", "feed-rs/ramp/r1"));
    }
}
