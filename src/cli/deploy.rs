//! `feedbench deploy <PLAN> --run <ID>`: deploy one run's topology and leave it up for
//! inspection. Ctrl-C or SIGTERM during the deploy tears it down.

use std::path::PathBuf;
use std::time::Duration;

use super::CliError;
use crate::engine::deploy::{deploy_with, teardown, Seeding};
use crate::engine::runtime::Runtime;
use crate::spec::topology::{Role, BALANCER_PORT, FAULT_PROXY_API_PORT, STATS_PORT};

#[derive(Debug, clap::Args)]
pub struct DeployArgs {
    /// The plan file.
    pub plan: PathBuf,
    /// The run to deploy, by id (see `feedbench plan`), e.g. `feed-rs/ramp/r1`.
    #[arg(long)]
    pub run: String,
    /// How long the whole topology may take to become ready, in seconds.
    #[arg(long, default_value_t = 180)]
    pub deadline: u64,
    /// How a database with init scripts starts: from a copy of its seeded snapshot (seeded
    /// once per seeding input), or running its scripts (what `feedbench run` did before).
    #[arg(long, value_enum, default_value_t = SeedingArg::Snapshot)]
    pub seeding: SeedingArg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SeedingArg {
    Snapshot,
    Scripts,
}

impl DeployArgs {
    pub fn exec(self) -> Result<(), CliError> {
        // Its own instance, so that it touches no study's containers; `clean --instance`
        // removes it.
        let instance = crate::study::fresh_instance()?;
        eprintln!("deploying under instance {instance}");
        let (loaded, topo) = super::run_topology(&self.plan, &self.run, &instance)?;
        let allowed = loaded.plan.caps.allow_oversubscription;
        let seeding = match self.seeding {
            SeedingArg::Snapshot => Seeding::Snapshot,
            SeedingArg::Scripts => Seeding::Scripts,
        };
        super::block_on(async move {
            let rt = Runtime::connect().await.map_err(anyhow::Error::from)?;
            let facts = rt.facts().await.map_err(anyhow::Error::from)?;
            if let Some(warning) = topo
                .fits(facts.cores, allowed)
                .map_err(anyhow::Error::from)?
            {
                eprintln!("warning: {warning}");
            }
            eprintln!(
                "deploying {} ({} containers) on network {}",
                topo.run_id,
                topo.containers.len(),
                topo.network
            );
            let logs = std::env::temp_dir().join(format!("{}-logs", topo.network));
            let outcome = tokio::select! {
                r = deploy_with(&rt, &topo, Duration::from_secs(self.deadline), Some(&logs), seeding) => Some(r),
                _ = super::interrupted() => None,
            };
            match outcome {
                Some(Ok(d)) => {
                    let at = |role, port| {
                        d.addr(role, port)
                            .map(|a| a.to_string())
                            .unwrap_or_default()
                    };
                    println!("ready in {:.1} s", d.ready_after.as_secs_f64());
                    if let Some(s) = &d.snapshot {
                        println!(
                            "database     from snapshot {} ({}, copied in {:.1} s)",
                            s.template,
                            if s.seeded_now {
                                format!("seeded now in {:.1} s", s.seed_s)
                            } else {
                                "seeded before".to_string()
                            },
                            s.copy_s
                        );
                    }
                    println!("balancer     http://{}/", at(Role::Balancer, BALANCER_PORT));
                    println!(
                        "stats        http://{}/stats",
                        at(Role::Balancer, STATS_PORT)
                    );
                    println!(
                        "fault proxy  http://{}/proxies",
                        at(Role::FaultProxy, FAULT_PROXY_API_PORT)
                    );
                    println!("tear down    feedbench clean --study {}", topo.study);
                    Ok(())
                }
                Some(Err(e)) => {
                    let _ = teardown(&rt, &topo).await;
                    Err(anyhow::Error::from(e).into())
                }
                None => {
                    teardown(&rt, &topo).await.map_err(anyhow::Error::from)?;
                    Err(anyhow::anyhow!("interrupted; the run's containers were removed").into())
                }
            }
        })
    }
}
