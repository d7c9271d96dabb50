//! `feedbench topology <PLAN> --run <ID>`: what a run deploys, without deploying it: the
//! containers with their caps and labels as JSON, or the rendered HAProxy configuration.
//! Names and labels carry the instance `00000000`; a study's own instance is random.

use std::io::Write;
use std::path::PathBuf;

use super::CliError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Show {
    /// Containers, caps, labels, files and proxies as JSON.
    Json,
    /// The balancer's rendered haproxy.cfg.
    Haproxy,
}

#[derive(Debug, clap::Args)]
pub struct TopologyArgs {
    /// The plan file.
    pub plan: PathBuf,
    /// The run, by id (see `feedbench plan`).
    #[arg(long)]
    pub run: String,
    #[arg(long, value_enum, default_value = "json")]
    pub show: Show,
}

impl TopologyArgs {
    pub fn exec(self, out: &mut dyn Write) -> Result<(), CliError> {
        let (_, topo) = super::run_topology(
            &self.plan,
            &self.run,
            &crate::spec::topology::Instance::from_bytes([0; 4]),
        )?;
        match self.show {
            Show::Haproxy => out.write_all(topo.haproxy_cfg.as_bytes())?,
            Show::Json => {
                serde_json::to_writer_pretty(&mut *out, &topo).map_err(anyhow::Error::from)?;
                writeln!(out)?;
            }
        }
        Ok(())
    }
}
