//! `feedbench topology <PLAN> --run <ID>`: what a run deploys, without deploying it: the
//! containers with their caps and labels as JSON, or the rendered HAProxy configuration.

use std::io::Write;
use std::path::PathBuf;

use super::CliError;
use crate::engine::topology::topology;
use crate::plan::{expand, load_file};

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
        let loaded = load_file(&self.plan, None)?;
        let runs = expand(&loaded.plan);
        let Some(run) = runs.iter().find(|r| r.id == self.run) else {
            let ids: Vec<&str> = runs.iter().map(|r| r.id.as_str()).collect();
            let hint = crate::plan::de::suggest(&self.run, &ids, "run");
            return Err(CliError::Invalid(
                format!("the plan has no run `{}`; {hint}", self.run),
                Vec::new(),
            ));
        };
        let base = loaded.base_dir.clone();
        let read = move |rel: &str| std::fs::read(base.join(rel)).map_err(|e| e.to_string());
        let topo = topology(&loaded.plan, run, &read).map_err(|e| CliError::Failure(e.into()))?;
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
