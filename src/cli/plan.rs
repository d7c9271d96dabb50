//! `feedbench plan`: validate a plan, expand it into runs, print its hash and the runs, and
//! warn where the newest pilot's sizing says its repetitions fall short
//! (`report::sizing::plan_warnings`).

use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;

use super::{CliError, Format};
use crate::plan::{load_file, Diagnostic, LoadedPlan, RunSpec, Severity};

/// The version of `feedbench plan --format json`'s output.
pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    /// The plan file, e.g. experiments/study.yaml.
    pub plan: PathBuf,
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
    /// An engines file (docs/engines.md): the estimate counts its groups running at once.
    /// Read only; no engine is reached.
    #[command(flatten)]
    pub engines: super::engines::EnginesArg,
    /// Where study results are: the newest pilot of the plan's study there that sized its
    /// repetitions (DIR/<study>/pilots/) is read, and a figure whose registered repetitions
    /// fall short of the plan's smallest effect is warned of.
    #[arg(long, value_name = "DIR", default_value = "results")]
    pub results: PathBuf,
}

impl PlanArgs {
    pub fn exec(self, out: &mut dyn Write) -> Result<(), CliError> {
        let loaded = load_file(&self.plan, super::local_cores())?;
        let (_, runs) = super::planned(&loaded)?;
        let groups = self.engines.read()?.groups.len();
        let study_dir =
            crate::rundir::layout::study_dir(&self.results, loaded.plan.study.name.as_str());
        let sized: Vec<String> = feedbench_core::report::sizing::plan_warnings(
            &study_dir,
            &loaded.plan,
            &loaded.plan_hash,
            &runs,
        )
        .into_iter()
        .map(|w| format!("{}: {w}", loaded.file))
        .collect();
        let mut summary = Summary::new(&loaded, runs, groups);
        summary.warnings.extend(sized.iter().cloned());
        match self.format {
            Format::Json => {
                serde_json::to_writer_pretty(&mut *out, &summary).map_err(anyhow::Error::from)?;
                writeln!(out)?;
            }
            Format::Human => {
                print_human(&summary, out)?;
                let mut err = std::io::stderr().lock();
                // Warnings are advisory; a closed stderr does not fail the command.
                for w in &loaded.warnings {
                    let _ = writeln!(err, "warning: {w}");
                }
                for w in &sized {
                    let _ = writeln!(err, "warning: {w}");
                }
            }
        }
        Ok(())
    }
}

/// What `feedbench plan` reports; `--format json` prints exactly this.
#[derive(Debug, Serialize)]
pub struct Summary {
    pub format_version: u32,
    pub study: String,
    pub registered: String,
    pub plan_hash: String,
    pub runs: Vec<RunSpec>,
    /// Every run's warm-up and measured phase plus the deploy/teardown allowance; runs whose
    /// length depends on a measurement count their allowance only.
    pub estimated_duration_s: f64,
    /// The groups of engines the estimate of the wall time counts (1 without an engines file).
    pub groups: usize,
    /// The study's wall time with `groups` groups running at once (`plan::groups`): the
    /// runs' sum on one group.
    pub estimated_wall_s: f64,
    /// Runs whose length is not known in advance.
    pub runs_of_unknown_length: usize,
    /// Step-ramp runs that stop at their knee (`stop-on-breach`): the estimate counts every
    /// step of theirs, so it is an upper bound.
    pub runs_that_may_stop_early: usize,
    pub warnings: Vec<String>,
}

impl Summary {
    /// The summary of `loaded`, whose runs (hashed with its inputs) are `runs`, run on
    /// `groups` groups of engines.
    pub fn new(loaded: &LoadedPlan, runs: Vec<RunSpec>, groups: usize) -> Self {
        let allowance = loaded.plan.matrix.setup_allowance.as_secs_f64();
        let wall = crate::plan::groups::wall_time(&runs, allowance, groups);
        let estimated = runs
            .iter()
            .map(|r| r.estimated_duration_s.unwrap_or(0.0) + allowance)
            .sum();
        Summary {
            format_version: FORMAT_VERSION,
            study: loaded.plan.study.name.to_string(),
            registered: loaded.plan.study.registered.to_string(),
            plan_hash: loaded.plan_hash.clone(),
            runs_of_unknown_length: runs
                .iter()
                .filter(|r| r.estimated_duration_s.is_none())
                .count(),
            runs_that_may_stop_early: runs
                .iter()
                .filter(|r| r.may_stop_early(&loaded.plan))
                .count(),
            runs,
            estimated_duration_s: estimated,
            groups: groups.max(1),
            estimated_wall_s: wall,
            warnings: loaded
                .warnings
                .iter()
                .filter(|d| d.severity == Severity::Warning)
                .map(Diagnostic::to_string)
                .collect(),
        }
    }
}

fn print_human(s: &Summary, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "study      {} (registered {})", s.study, s.registered)?;
    writeln!(out, "plan hash  {}", s.plan_hash)?;
    writeln!(out)?;
    let id_w = s.runs.iter().map(|r| r.id.len()).max().unwrap_or(3).max(3);
    let dep_w = s
        .runs
        .iter()
        .map(|r| r.depends_on.join(", ").len())
        .max()
        .unwrap_or(10)
        .max(10);
    writeln!(
        out,
        "{:>4}  {:id_w$}  {:dep_w$}  {:>9}  run hash",
        "#", "run", "depends on", "estimate"
    )?;
    for (i, r) in s.runs.iter().enumerate() {
        let deps = if r.depends_on.is_empty() {
            "-".to_string()
        } else {
            r.depends_on.join(", ")
        };
        let est = r
            .estimated_duration_s
            .map_or_else(|| "measured".to_string(), clock);
        writeln!(
            out,
            "{:>4}  {:id_w$}  {deps:dep_w$}  {est:>9}  {}",
            i + 1,
            r.id,
            &r.run_hash[..12]
        )?;
    }
    writeln!(out)?;
    let bound = if s.runs_that_may_stop_early > 0 {
        "at most"
    } else {
        "about"
    };
    write!(
        out,
        "{} runs, {bound} {} including deploy and teardown",
        s.runs.len(),
        clock(s.estimated_duration_s)
    )?;
    if s.runs_that_may_stop_early > 0 {
        write!(
            out,
            " (an upper bound: {} ramp run(s) stop at their knee, counted as running every step)",
            s.runs_that_may_stop_early
        )?;
    }
    if s.runs_of_unknown_length > 0 {
        write!(
            out,
            " ({} run(s) last as long as their measurements need, not counted)",
            s.runs_of_unknown_length
        )?;
    }
    writeln!(out)?;
    if s.groups > 1 {
        writeln!(
            out,
            "on {} groups of engines at once: {bound} {} of wall time (each run waits for the runs it takes a rate from)",
            s.groups,
            clock(s.estimated_wall_s)
        )?;
    }
    if !s.warnings.is_empty() {
        writeln!(out, "{} warning(s), on stderr", s.warnings.len())?;
    }
    Ok(())
}

/// `1h02m03s`-style wall time.
fn clock(secs: f64) -> String {
    let t = secs.round() as u64;
    let (h, m, s) = (t / 3600, t / 60 % 60, t % 60);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, _) => format!("{m}m{s:02}s"),
        _ => format!("{h}h{m:02}m{s:02}s"),
    }
}
