//! `feedbench audit <PLAN>`: check a study's results against its committed, pre-registered
//! plan and print the deviations, as Markdown for a paper or as JSON.

use std::io::Write;
use std::path::PathBuf;

use clap::ValueEnum;

use super::CliError;
use crate::audit;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AuditFormat {
    /// A "Deviations" section, item by item.
    Markdown,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct AuditArgs {
    /// The plan file, committed in git, e.g. experiments/study.yaml.
    pub plan: PathBuf,
    /// The registration commit (default: the plan file's first commit).
    #[arg(long, value_name = "REV")]
    pub registered: Option<String>,
    /// Where study results are; the study's are in DIR/<study name>/.
    #[arg(long, value_name = "DIR", default_value = "results")]
    pub results: PathBuf,
    #[arg(long, value_enum, default_value = "markdown")]
    pub format: AuditFormat,
}

impl AuditArgs {
    /// Prints the report; exits 1 (an error naming the items) when a departure is
    /// undeclared.
    pub fn exec(self, out: &mut dyn Write) -> Result<(), CliError> {
        let report =
            audit::run(&self.plan, self.registered.as_deref(), &self.results).map_err(|e| {
                if e.bad_input() {
                    CliError::invalid(e.to_string())
                } else {
                    CliError::Failure(e.into())
                }
            })?;
        match self.format {
            AuditFormat::Json => {
                serde_json::to_writer_pretty(&mut *out, &report).map_err(anyhow::Error::from)?;
                writeln!(out)?;
            }
            AuditFormat::Markdown => out.write_all(report.markdown().as_bytes())?,
        }
        out.flush()?;
        let undeclared: Vec<String> = report
            .undeclared()
            .map(|i| format!("{} {}", i.id, i.title))
            .collect();
        if undeclared.is_empty() {
            return Ok(());
        }
        Err(CliError::Failure(anyhow::anyhow!(
            "{} from the registered plan:\n  {}",
            audit::report::count(undeclared.len(), "undeclared departure"),
            undeclared.join("\n  ")
        )))
    }
}
