//! `feedbench clean [--study NAME] [--instance ID] [--engines FILE]`: remove every
//! container, network and volume carrying feedbench's labels (of one study, one study
//! instance, or all), also after feedbench itself was killed, on the local engine or on every
//! engine an engines file names.

use super::CliError;
use crate::engine::runtime::{Runtime, Scope};
use crate::spec::topology::Instance;

#[derive(Debug, clap::Args)]
pub struct CleanArgs {
    /// Only what belongs to this study.
    #[arg(long)]
    pub study: Option<String>,
    /// Only what belongs to this study instance (the id `feedbench run` warns of, and
    /// `results/<study>/instance.json` records).
    #[arg(long, value_parser = Instance::parse)]
    pub instance: Option<Instance>,
    #[command(flatten)]
    pub engines: super::engines::EnginesArg,
}

impl CleanArgs {
    pub fn exec(self) -> Result<(), CliError> {
        let engines = self.engines.read()?;
        let scope = Scope {
            study: self.study.clone(),
            instance: self.instance.clone(),
        };
        super::block_on(async move {
            let reached: Vec<(String, Runtime)> = match self.engines.engines {
                None => vec![(
                    feedbench_core::engines::LOCAL_NAME.to_string(),
                    Runtime::connect().await.map_err(anyhow::Error::from)?,
                )],
                Some(_) => super::engines::connect_all(&engines).await?,
            };
            let several = reached.len() > 1;
            for (name, rt) in reached {
                let removed = rt.clean(&scope).await.map_err(anyhow::Error::from)?;
                let on = if several {
                    format!("engine `{name}`: ")
                } else {
                    String::new()
                };
                println!(
                    "{on}removed {} container(s), {} network(s), {} volume(s)",
                    removed.containers.len(),
                    removed.networks.len(),
                    removed.volumes.len()
                );
            }
            Ok(())
        })
    }
}
