//! `feedbench report <PLAN>`: the study's answers from its raw data (docs/analysis.md),
//! written to `results/<study>/report/`; with `--verify`, checked against the independent
//! recomputation.

use std::io::Write;
use std::path::PathBuf;

use clap::ValueEnum;

use super::CliError;
use crate::report::{self as output, verify};
use feedbench_core::report::{
    self,
    rows::{self, Difference},
};
use feedbench_core::rundir::{METRICS_CSV, REPORT_DIR, REPORT_MD};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// report.md, as written.
    Markdown,
    /// metrics.json, as written.
    Json,
}

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The plan file, committed in git, e.g. experiments/study.yaml.
    pub plan: PathBuf,
    /// Where study results are; the study's are in DIR/<study name>/.
    #[arg(long, value_name = "DIR", default_value = "results")]
    pub results: PathBuf,
    /// Where the report goes (default: DIR/<study name>/report/).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// What is printed on stdout; the files are always written.
    #[arg(long, value_enum, default_value = "markdown")]
    pub format: ReportFormat,
    /// The registration commit (default: the plan file's first commit).
    #[arg(long, value_name = "REV")]
    pub registered: Option<String>,
    /// Recompute every figure with the independent twin (twin/recompute.py) from the raw
    /// data on disk and compare with the report's metrics.csv on disk (written first when
    /// there is none); exits 1 on any disagreement.
    #[arg(long)]
    pub verify: bool,
}

fn differences(d: &[Difference]) -> String {
    let mut s = String::new();
    for x in d.iter().take(20) {
        s.push_str(&format!(
            "\n  {}: report {}, recomputation {}",
            x.row, x.ours, x.theirs
        ));
    }
    if d.len() > 20 {
        s.push_str(&format!("\n  … and {} more", d.len() - 20));
    }
    s
}

/// The report's metrics.csv as written; damaged, or not a file, it is bad input.
fn read_back(metrics: &std::path::Path) -> Result<Vec<rows::Row>, CliError> {
    rows::read(metrics).map_err(|r| {
        CliError::invalid(format!(
            "{r}; `feedbench report` without --verify writes it again"
        ))
    })
}

/// The twin's environment, made on first use; what it lacks is bad input, named.
fn twin() -> Result<verify::Twin, CliError> {
    verify::Twin::ready(&mut std::io::stderr()).map_err(|e| match e {
        verify::VerifyError::Env(_) | verify::VerifyError::NoTwin(_) => {
            CliError::invalid(e.to_string())
        }
        e => CliError::Failure(e.into()),
    })
}

impl ReportArgs {
    /// Where the report goes: `--out`, else the study's directory's `report/`, the study
    /// named by `study` or, before the report is built, by the plan when it loads (`None`
    /// when it does not: building it says why).
    fn report_dir(&self, study: Option<&str>) -> Option<PathBuf> {
        if let Some(out) = &self.out {
            return Some(out.clone());
        }
        let name = match study {
            Some(name) => name.to_string(),
            None => feedbench_core::plan::load_file(&self.plan, None)
                .ok()?
                .plan
                .study
                .name
                .to_string(),
        };
        Some(crate::rundir::layout::study_dir(&self.results, &name).join(REPORT_DIR))
    }

    pub fn exec(self, out: &mut dyn Write) -> Result<(), CliError> {
        // With --verify, before any work: the report's own metrics.csv read back where there
        // is one (a damaged one is bad input, named), then the twin's environment made ready.
        let (ours, twin) = match self.verify {
            true => {
                let ours = match self.report_dir(None) {
                    Some(dir) if dir.join(METRICS_CSV).exists() => {
                        Some(read_back(&dir.join(METRICS_CSV))?)
                    }
                    _ => None,
                };
                (ours, Some(twin()?))
            }
            false => (None, None),
        };
        let req = report::Request {
            plan: &self.plan,
            registered: self.registered.as_deref(),
            results: &self.results,
        };
        let mut err = std::io::stderr();
        // A counter rewritten in place is for a person at a terminal, not for a log.
        let terminal = std::io::IsTerminal::is_terminal(&err);
        let mut progress = |done: usize, total: usize, run: &str| {
            if terminal && total >= 2 {
                let _ = write!(err, "\rreading runs: {done}/{total} {run:<48}");
                if done == total {
                    let _ = writeln!(err);
                }
            }
        };
        let built = report::build(&req, &mut progress).map_err(|e| {
            if e.bad_input() {
                CliError::invalid(e.to_string())
            } else {
                CliError::Failure(e.into())
            }
        })?;
        let dir = self.report_dir(Some(&built.study)).unwrap_or_default();
        let metrics = dir.join(METRICS_CSV);
        let write_first = ours.is_none();
        if write_first {
            output::write_all(&built, &dir).map_err(|e| CliError::Failure(e.into()))?;
            eprintln!(
                "report: {}",
                dir.join(feedbench_core::rundir::INDEX_HTML).display()
            );
            match self.format {
                ReportFormat::Markdown => {
                    out.write_all(&std::fs::read(dir.join(REPORT_MD))?)?;
                }
                ReportFormat::Json => {
                    serde_json::to_writer_pretty(&mut *out, &built).map_err(anyhow::Error::from)?;
                    writeln!(out)?;
                }
            }
        }
        let Some(twin) = twin else {
            return Ok(());
        };
        let ours = match ours {
            Some(rows) => rows,
            None => read_back(&metrics)?,
        };
        let found =
            verify::verify(&twin, &ours, &built).map_err(|e| CliError::Failure(e.into()))?;
        let (d, v, c) = (&found.rows, &found.verdicts, &found.comparisons);
        let evaluated = verify::evaluations(&built).len();
        if d.is_empty() && v.is_empty() && c.is_empty() {
            eprintln!(
                "verified: the recomputation agrees with `{}` on all {} rows, {evaluated} check verdicts and {} comparisons",
                metrics.display(),
                built.metrics.len(),
                built.comparisons.len()
            );
            return Ok(());
        }
        let mut why = Vec::new();
        if !d.is_empty() {
            why.push(format!(
                "on {} rows (a raw file changed after the report was written, or the two implementations differ):{}",
                d.len(),
                differences(d)
            ));
        }
        if !v.is_empty() {
            why.push(format!(
                "on {} points of the hypotheses' verdicts:{}",
                v.len(),
                differences(v)
            ));
        }
        if !c.is_empty() {
            why.push(format!(
                "on {} cells of comparisons.csv:{}",
                c.len(),
                differences(c)
            ));
        }
        Err(CliError::Failure(anyhow::anyhow!(
            "the recomputation disagrees with `{}` {}",
            metrics.display(),
            why.join("; and ")
        )))
    }
}
