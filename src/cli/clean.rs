//! `feedbench clean [--study NAME]`: remove every container, network and volume carrying
//! feedbench's labels, also after feedbench itself was killed.

use super::CliError;
use crate::engine::runtime::Runtime;

#[derive(Debug, clap::Args)]
pub struct CleanArgs {
    /// Only what belongs to this study.
    #[arg(long)]
    pub study: Option<String>,
}

impl CleanArgs {
    pub fn exec(self) -> Result<(), CliError> {
        super::block_on(async move {
            let rt = Runtime::connect().await.map_err(anyhow::Error::from)?;
            let removed = rt
                .clean(self.study.as_deref())
                .await
                .map_err(anyhow::Error::from)?;
            println!(
                "removed {} container(s), {} network(s), {} volume(s)",
                removed.containers.len(),
                removed.networks.len(),
                removed.volumes.len()
            );
            Ok(())
        })
    }
}
