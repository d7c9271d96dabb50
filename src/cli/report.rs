//! `feedbench report <PLAN>`: the study's answers from its raw data (docs/analysis.md),
//! written to `results/<study>/report/`; with `--verify`, checked against the independent
//! recomputation.

use std::io::Write;
use std::path::PathBuf;

use clap::ValueEnum;

use super::CliError;
use crate::report::{self as output, verify};
use feedbench_core::report::{self, rows::Difference};
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

impl ReportArgs {
    pub fn exec(self, out: &mut dyn Write) -> Result<(), CliError> {
        // the twin's environment first: what it lacks is said before any work is done
        let twin = if self.verify {
            Some(
                verify::Twin::ready(&mut std::io::stderr()).map_err(|e| match e {
                    verify::VerifyError::Env(_) | verify::VerifyError::NoTwin(_) => {
                        CliError::invalid(e.to_string())
                    }
                    e => CliError::Failure(e.into()),
                })?,
            )
        } else {
            None
        };
        let req = report::Request {
            plan: &self.plan,
            registered: self.registered.as_deref(),
            results: &self.results,
        };
        let mut err = std::io::stderr();
        let mut progress = |done: usize, total: usize, run: &str| {
            if total >= 2 {
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
        let dir = self
            .out
            .clone()
            .unwrap_or_else(|| self.results.join(&built.study).join(REPORT_DIR));
        let metrics = dir.join(METRICS_CSV);
        let write_first = !self.verify || !metrics.is_file();
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
        let (d, v) = verify::verify(&twin, &metrics, &built).map_err(|e| match e {
            // The report's own metrics.csv is damaged, or not a file: bad input.
            verify::VerifyError::Rows(r) if r.path() == metrics => CliError::invalid(format!(
                "{r}; `feedbench report` without --verify writes it again"
            )),
            e => CliError::Failure(e.into()),
        })?;
        let evaluated = verify::evaluations(&built).len();
        if d.is_empty() && v.is_empty() {
            eprintln!(
                "verified: the recomputation agrees with `{}` on all {} rows and {evaluated} check verdicts",
                metrics.display(),
                built.metrics.len()
            );
            return Ok(());
        }
        let mut why = Vec::new();
        if !d.is_empty() {
            why.push(format!(
                "on {} rows (a raw file changed after the report was written, or the two implementations differ):{}",
                d.len(),
                differences(&d)
            ));
        }
        if !v.is_empty() {
            why.push(format!(
                "on {} points of the hypotheses' verdicts:{}",
                v.len(),
                differences(&v)
            ));
        }
        Err(CliError::Failure(anyhow::anyhow!(
            "the recomputation disagrees with `{}` {}",
            metrics.display(),
            why.join("; and ")
        )))
    }
}
