//! `--engines FILE` on `run` and `pilot`: the engines file read, the plan's placement
//! checked against its groups, and each engine a run uses reached and checked (API
//! version, cgroup version, cores, one host or two) before anything is journalled. Every
//! refusal is bad input (exit 2) at the engines file's line and field.

use std::path::PathBuf;

use feedbench_core::engines::facts::{self, Facts, Need};
use feedbench_core::engines::{self, Context, Engines, EnginesError};

use super::CliError;
use crate::engine::placement::{Apart, Placement};
use crate::engine::runtime::Runtime;
use crate::plan::expand::resolve_contenders;
use crate::plan::model::Apartness;
use crate::plan::LoadedPlan;

#[derive(Debug, Clone, clap::Args)]
pub struct EnginesArg {
    /// The Docker engines the study may use and the groups a run is placed on
    /// (docs/engines.md). Without it: the local engine alone.
    #[arg(long, value_name = "FILE")]
    pub engines: Option<PathBuf>,
}

impl EnginesArg {
    /// The engines file, resolved against its own directory and `DOCKER_CERT_PATH`; the
    /// local engine alone when none is named.
    pub fn read(&self) -> Result<Engines, CliError> {
        let Some(path) = &self.engines else {
            return Ok(Engines::local());
        };
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            CliError::invalid(format!(
                "--engines: cannot read `{file}`: {e}; name an engines file (docs/engines.md)"
            ))
        })?;
        let base = path.parent().map(PathBuf::from).unwrap_or_default();
        let cert_path = std::env::var("DOCKER_CERT_PATH").ok();
        let ctx = Context {
            base_dir: &base,
            docker_cert_path: cert_path.as_deref(),
        };
        engines::load_str(&file, &text, &ctx).map_err(
            |EnginesError::Invalid { file, diagnostics }| {
                CliError::Invalid(format!("`{file}` is not a valid engines file"), diagnostics)
            },
        )
    }
}

/// Refuses, before anything is journalled, a plan whose `placement` the engines cannot
/// satisfy.
pub fn check_placement(loaded: &LoadedPlan, engines: &Engines) -> Result<(), CliError> {
    let problems = engines::check_placement(engines, &loaded.plan.placement);
    if problems.is_empty() {
        return Ok(());
    }
    Err(CliError::invalid(format!(
        "`{}` cannot be placed on these engines: {}",
        loaded.file,
        problems.join("; ")
    )))
}

/// Reaches the engines of the study's group and checks them: the local engine (as
/// `DOCKER_HOST` names it) when no engines file was given (`local`). Where the plan places
/// the load generator apart, its image is copied to its engine when that engine lacks it.
/// The runner checks each run's caps against the system engine's cores.
pub async fn reach(
    loaded: &LoadedPlan,
    engines: &Engines,
    local: bool,
) -> Result<Placement, CliError> {
    if engines.groups.len() > 1 {
        return Err(CliError::invalid(format!(
            "the engines file names {} groups; this feedbench runs a study on one group (runs in parallel across groups are not built yet): name one",
            engines.groups.len()
        )));
    }
    let group = engines.groups[0];
    let apart = loaded.plan.placement.load_generator == Apartness::Apart;
    if !apart && group.load_generator != group.system {
        let (s, l) = engines.names(&group);
        eprintln!(
            "warning: the plan runs the load generator with the system under test (placement `together`): it runs on `{s}`, not on the group's load-generator engine `{l}`"
        );
    }
    let built_on = Runtime::connect().await.map_err(anyhow::Error::from)?;
    let system = if local {
        built_on.clone()
    } else {
        connect(engines, group.system).await?
    };
    let here = identity(&built_on).await?;
    if !local && identity(&system).await? != here {
        let e = &engines.engines[group.system];
        return Err(invalid_at(
            engines,
            group.system,
            format!(
                "engine `{}` is not the engine feedbench builds images on and reaches container networks of; the system under test runs there (only the load generator may be placed elsewhere)",
                e.name
            ),
            Some("name the local engine as the group's `system`".into()),
        ));
    }
    let mut facts = vec![(group.system, facts_of(&system).await?)];
    let mut needs = Vec::new();
    let mut placement = Placement::one(system);
    if !local {
        placement.system_name = engines.engines[group.system].name.clone();
    }
    if apart {
        let l = group.load_generator;
        let system_engine = &engines.engines[group.system];
        if system_engine.address.is_loopback() {
            let message = format!(
                "engine `{}`'s address {} is a loopback address: a load generator on another engine cannot reach the balancer published there",
                system_engine.name, system_engine.address
            );
            let hint = Some("name the address at which the load generator's engine reaches this one, e.g. 10.99.0.1".to_string());
            return Err(match &system_engine.address_site {
                Some(site) => CliError::Invalid(
                    format!(
                        "`{}`: engine `{}` cannot publish for a load generator apart",
                        site.file, system_engine.name
                    ),
                    vec![site.error(message, hint)],
                ),
                None => CliError::invalid(message),
            });
        }
        let rt = connect(engines, l).await?;
        if identity(&rt).await? == here {
            let (s, lg) = engines.names(&group);
            return Err(invalid_at(
                engines,
                l,
                format!("engines `{s}` and `{lg}` are one engine (the same ID and data root): the load generator would not run apart"),
                Some("name another engine as the group's `load-generator`".into()),
            ));
        }
        let image = loaded
            .plan
            .topology
            .load_generator
            .image
            .as_str()
            .to_string();
        facts.push((l, facts_of(&rt).await?));
        let cores = resolve_contenders(&loaded.plan)
            .iter()
            .map(|c| c.caps.load_generator.cpus)
            .fold(0.0, f64::max);
        needs.push(Need {
            engine: l,
            cores,
            what: "the load generator's cap".into(),
        });
        // Refused before anything is changed on an engine: no image copied to an engine
        // that cannot be used.
        refuse(loaded, &facts::check(engines, &facts, &needs))?;
        copy_image(&placement.system, &rt, &image, engines, l).await?;
        let study = loaded.plan.study.name.to_string();
        facts[0].1.boot_id = Some(boot_id(&placement.system, &image, &study).await?);
        facts[1].1.boot_id = Some(boot_id(&rt, &image, &study).await?);
        if facts[0].1.boot_id != facts[1].1.boot_id {
            eprintln!(
                "warning: the load generator's engine `{}` is on another host, with its own clock: its requests are matched to the system's samples by wall time, so keep both hosts' clocks synchronised (NTP)",
                engines.engines[l].name
            );
        }
        placement.apart = Some(Apart {
            rt,
            name: engines.engines[l].name.clone(),
            address: engines.engines[group.system].address,
        });
    }
    let checked = facts::check(engines, &facts, &needs);
    for w in &checked.warnings {
        eprintln!("warning: {w}");
    }
    refuse(loaded, &checked)?;
    Ok(placement)
}

/// The check's refusals, if any, as one bad-input error.
fn refuse(loaded: &LoadedPlan, checked: &facts::Checked) -> Result<(), CliError> {
    if checked.errors.is_empty() {
        return Ok(());
    }
    Err(CliError::invalid(format!(
        "the engines cannot run `{}`:\n{}",
        loaded.file,
        checked.errors.join("\n")
    )))
}

async fn identity(rt: &Runtime) -> Result<(String, String), CliError> {
    Ok(rt.identity().await.map_err(anyhow::Error::from)?)
}

async fn boot_id(rt: &Runtime, image: &str, study: &str) -> Result<String, CliError> {
    Ok(rt
        .boot_id(image, study)
        .await
        .map_err(anyhow::Error::from)?)
}

/// The image on `to` as it is on `from`: copied through the engine API when `to` lacks it
/// or has another image under its name, and checked by image ID.
async fn copy_image(
    from: &Runtime,
    to: &Runtime,
    image: &str,
    engines: &Engines,
    i: usize,
) -> Result<(), CliError> {
    let Some(want) = from.image_id(image).await else {
        return Err(CliError::invalid(format!(
            "image `{image}` is not on the engine feedbench builds on; build it (`feedbench images build`, or leave out --no-build)"
        )));
    };
    if to.image_id(image).await.as_deref() == Some(want.as_str()) {
        return Ok(());
    }
    let name = &engines.engines[i].name;
    eprintln!("copying image `{image}` to engine `{name}`");
    let got = crate::images::copy(from.docker(), to.docker(), image)
        .await
        .map_err(anyhow::Error::from)?;
    if got != want {
        return Err(CliError::Failure(anyhow::anyhow!(
            "image `{image}` on engine `{name}` is {got} after the copy, not {want}"
        )));
    }
    Ok(())
}

/// Every engine of the file, reached, by name: what `clean` removes from.
pub async fn connect_all(engines: &Engines) -> Result<Vec<(String, Runtime)>, CliError> {
    let mut out = Vec::new();
    for (i, e) in engines.engines.iter().enumerate() {
        out.push((e.name.clone(), connect(engines, i).await?));
    }
    Ok(out)
}

async fn connect(engines: &Engines, i: usize) -> Result<Runtime, CliError> {
    Runtime::connect_to(&engines.engines[i])
        .await
        .map_err(|e| invalid_at(engines, i, e.to_string(), None))
}

async fn facts_of(rt: &Runtime) -> Result<Facts, CliError> {
    let f = rt.facts().await.map_err(anyhow::Error::from)?;
    Ok(Facts {
        api_version: rt.api_version().await.map_err(anyhow::Error::from)?,
        cgroup_version: f.cgroup_version,
        cores: f.cores,
        boot_id: None,
    })
}

/// Bad input at engine `i`'s endpoint in the engines file.
fn invalid_at(engines: &Engines, i: usize, message: String, hint: Option<String>) -> CliError {
    let e = &engines.engines[i];
    match &e.site {
        Some(site) => CliError::Invalid(
            format!("`{}`: engine `{}` cannot be used", site.file, e.name),
            vec![site.error(message, hint)],
        ),
        None => CliError::invalid(message),
    }
}
