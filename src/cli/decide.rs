//! `feedbench invalidate <RUN>` and `feedbench skip <RUN>`: a person's decision about a run,
//! with a reason, recorded in the study's journal like feedbench's own.

use std::path::PathBuf;

use super::CliError;
use crate::plan::load_file;
use crate::study::decide;
pub use crate::study::Decision;

#[derive(Debug, clap::Args)]
pub struct DecideArgs {
    /// The run's id, e.g. `feed-rs/baseline+db-latency/r1` (`feedbench status` lists them).
    pub run: String,
    /// Why, in words; it goes into the journal and the audit.
    #[arg(long)]
    pub reason: String,
    /// The study's plan file.
    #[arg(long)]
    pub plan: PathBuf,
    /// Where study results are.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
}

impl DecideArgs {
    pub fn exec(self, decision: Decision) -> Result<(), CliError> {
        if self.reason.trim().is_empty() {
            return Err(CliError::invalid("--reason must say why, in words".into()));
        }
        let loaded = load_file(&self.plan, super::local_cores())?;
        let (_, runs) = super::planned(&loaded)?;
        let Some(spec) = runs.iter().find(|r| r.id == self.run) else {
            return Err(CliError::invalid(format!(
                "`{}` has no run `{}`; `feedbench status {}` lists the runs",
                loaded.file,
                self.run,
                self.plan.display()
            )));
        };
        let events = decide(&self.results, &loaded, &runs, spec, decision, &self.reason)
            .map_err(super::run::study_error)?;
        for event in &events {
            eprintln!("recorded: {}", super::status::describe(event));
        }
        Ok(())
    }
}
