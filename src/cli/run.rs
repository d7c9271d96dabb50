//! `feedbench run`: executing a plan. Not built yet; it says so instead of pretending.

use std::path::PathBuf;

use super::CliError;

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The plan file.
    pub plan: PathBuf,
    /// Carry on after an interruption.
    #[arg(long)]
    pub resume: bool,
}

impl RunArgs {
    pub fn exec(self) -> Result<(), CliError> {
        let loaded = crate::plan::load_file(&self.plan, super::host_cores())?;
        let runs = crate::plan::expand(&loaded.plan);
        Err(CliError::Failure(anyhow::anyhow!(
            "`feedbench run` cannot execute runs yet: deploying, loading and recording are still being built.\n\
             The plan `{}` is valid ({} runs, plan hash {}); `feedbench plan {}` shows them.",
            loaded.file,
            runs.len(),
            loaded.plan_hash,
            loaded.file
        )))
    }
}
