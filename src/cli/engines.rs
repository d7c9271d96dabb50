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

/// Every engine a group uses, reached and identified once, by its index in the engines
/// file, before anything changes.
struct Reached {
    engines: Vec<Option<(Runtime, (String, String))>>,
}

impl Reached {
    /// The engine's client; every engine a group names was reached.
    fn rt(&self, i: usize) -> Runtime {
        self.engines[i]
            .as_ref()
            .map(|(rt, _)| rt.clone())
            .expect("a group's engine was reached")
    }

    /// The engine's identity (its ID and data root).
    fn id(&self, i: usize) -> (String, String) {
        self.engines[i]
            .as_ref()
            .map(|(_, id)| id.clone())
            .expect("a group's engine was reached")
    }
}

/// The engines a group uses: its system engine, and its load generator's when apart.
fn used_by(group: &engines::Group, apart: bool) -> Vec<usize> {
    let mut used = vec![group.system];
    if apart {
        used.push(group.load_generator);
    }
    used
}

/// Reaches the engines of every group and checks them: the local engine (as `DOCKER_HOST`
/// names it) when no engines file was given (`local`). One placement per group, the group
/// whose system engine is the one feedbench builds on first (contenders' gates run there);
/// every other group's system engine is reached through ports published at its address.
/// Images a group's engines lack are copied to them. The runner checks each run's caps
/// against the system engines' cores.
pub async fn reach(
    loaded: &LoadedPlan,
    engines: &Engines,
    local: bool,
) -> Result<Vec<Placement>, CliError> {
    let apart = loaded.plan.placement.load_generator == Apartness::Apart;
    if engines.groups.is_empty() {
        return Err(CliError::invalid(
            "the engines file names no group of engines to run on; add `groups: [{system: NAME}]` (docs/engines.md)"
                .to_string(),
        ));
    }
    let built_on = Runtime::connect().await.map_err(anyhow::Error::from)?;
    let here = identity(&built_on).await?;
    let mut reached = Reached {
        engines: vec![None; engines.engines.len()],
    };
    for group in &engines.groups {
        for i in used_by(group, apart) {
            if reached.engines[i].is_none() {
                let rt = if local {
                    built_on.clone()
                } else {
                    connect(engines, i).await?
                };
                let id = identity(&rt).await?;
                reached.engines[i] = Some((rt, id));
            }
        }
    }
    no_engine_shared(engines, &reached, apart)?;
    let mut order: Vec<usize> = (0..engines.groups.len()).collect();
    order.sort_by_key(|g| reached.id(engines.groups[*g].system) != here);
    if reached.id(engines.groups[order[0]].system) != here {
        let g = engines.groups[order[0]];
        return Err(invalid_at(
            engines,
            g.system,
            "no group's `system` engine is the engine feedbench builds images on: contenders' gates run there, beside the coordinator".to_string(),
            Some("name the local engine as one group's `system`".into()),
        ));
    }
    let (mut facts, needs) = facts_and_needs(loaded, engines, &reached, &order, &here).await?;
    // Refused before anything is changed on an engine: no image copied to an engine that
    // cannot be used.
    refuse(loaded, &facts::check(engines, &facts, &needs))?;
    let placements = place(loaded, engines, &reached, &order, (&built_on, &here), local).await?;
    // Two engines of one host share its cores (and its clock): known by boot id, which a
    // throwaway container of the load generator's image (now on every engine) reads.
    if facts.len() > 1 {
        one_host_or_two(loaded, engines, &reached, &mut facts).await?;
    }
    let checked = facts::check(engines, &facts, &needs);
    for w in &checked.warnings {
        eprintln!("warning: {w}");
    }
    refuse(loaded, &checked)?;
    Ok(placements)
}

/// Groups run at the same time: no engine may serve two, under any name (a failed run's
/// group is reaped while the others run).
fn no_engine_shared(engines: &Engines, reached: &Reached, apart: bool) -> Result<(), CliError> {
    let mut seen: Vec<((String, String), usize, usize)> = Vec::new();
    for (g, group) in engines.groups.iter().enumerate() {
        for i in used_by(group, apart) {
            let id = reached.id(i);
            if let Some((_, h, j)) = seen.iter().find(|(other, h, _)| *other == id && *h != g) {
                let (a, b) = (&engines.engines[*j].name, &engines.engines[i].name);
                return Err(invalid_at(
                    engines,
                    i,
                    format!("engine `{b}` of groups[{g}] and engine `{a}` of groups[{h}] are one engine (the same ID and data root): groups run at the same time and share no engine"),
                    Some("name another engine, or put the two groups' runs in one group".into()),
                ));
            }
            seen.push((id, g, i));
        }
    }
    Ok(())
}

/// Each engine's facts (once), and what the plan needs of each: a group's system engine
/// must be reachable at a non-loopback address when the load generator runs apart or the
/// engine is another's; a load generator apart runs on an engine of its own, with cores
/// for its cap.
async fn facts_and_needs(
    loaded: &LoadedPlan,
    engines: &Engines,
    reached: &Reached,
    order: &[usize],
    here: &(String, String),
) -> Result<(Vec<(usize, Facts)>, Vec<Need>), CliError> {
    let apart = loaded.plan.placement.load_generator == Apartness::Apart;
    let mut facts = Vec::new();
    let mut needs = Vec::new();
    for &g in order {
        let group = engines.groups[g];
        if !apart && group.load_generator != group.system {
            let (s, l) = engines.names(&group);
            eprintln!(
                "warning: the plan runs the load generator with the system under test (placement `together`): it runs on `{s}`, not on the group's load-generator engine `{l}`"
            );
        }
        let system_engine = &engines.engines[group.system];
        let remote = reached.id(group.system) != *here;
        if (apart || remote) && system_engine.address.is_loopback() {
            let why = if remote {
                "the coordinator reaches the system under test on another engine at the ports it publishes there"
            } else {
                "a load generator on another engine cannot reach the balancer published there"
            };
            return Err(loopback(system_engine, why));
        }
        if !facts.iter().any(|(i, _)| *i == group.system) {
            facts.push((group.system, facts_of(&reached.rt(group.system)).await?));
        }
        if !apart {
            continue;
        }
        let l = group.load_generator;
        if reached.id(l) == reached.id(group.system) {
            let (s, lg) = engines.names(&group);
            return Err(invalid_at(
                engines,
                l,
                format!("engines `{s}` and `{lg}` are one engine (the same ID and data root): the load generator would not run apart"),
                Some("name another engine as the group's `load-generator`".into()),
            ));
        }
        if !facts.iter().any(|(i, _)| *i == l) {
            facts.push((l, facts_of(&reached.rt(l)).await?));
        }
        let cores = resolve_contenders(&loaded.plan)
            .iter()
            .map(|c| c.caps.load_generator.cpus)
            .fold(0.0, f64::max);
        needs.push(Need {
            engine: l,
            cores,
            what: "the load generator's cap".into(),
        });
    }
    Ok((facts, needs))
}

/// One placement per group, in `order`: the study's images copied to a system engine that
/// is another's (reached at its address), the load generator's image to its engine apart.
async fn place(
    loaded: &LoadedPlan,
    engines: &Engines,
    reached: &Reached,
    order: &[usize],
    (built_on, here): (&Runtime, &(String, String)),
    local: bool,
) -> Result<Vec<Placement>, CliError> {
    let apart = loaded.plan.placement.load_generator == Apartness::Apart;
    let lg_image = loaded.plan.topology.load_generator.image.as_str();
    let mut placements = Vec::new();
    for &g in order {
        let group = engines.groups[g];
        let system = reached.rt(group.system);
        let remote = reached.id(group.system) != *here;
        if remote {
            for image in study_images(loaded)? {
                copy_image(built_on, &system, &image, engines, group.system).await?;
            }
        }
        let mut placement = Placement::one(system);
        if !local {
            placement.system_name = engines.engines[group.system].name.clone();
        }
        if remote {
            placement.control = Some(engines.engines[group.system].address);
            placement.host_shared = Some(format!(
                "the run's system engine `{}` is not the one feedbench runs beside: this \
                 host's processors may not be the run's",
                engines.engines[group.system].name
            ));
        }
        if order.len() > 1 {
            placement.host_shared.get_or_insert(format!(
                "the study's {} groups run at once, on engines that may share this host: \
                 another group's containers would count as used outside the study",
                order.len()
            ));
        }
        if apart {
            let l = group.load_generator;
            let rt = reached.rt(l);
            copy_image(built_on, &rt, lg_image, engines, l).await?;
            placement.apart = Some(Apart {
                rt,
                name: engines.engines[l].name.clone(),
                address: engines.engines[group.system].address,
            });
        }
        placements.push(placement);
    }
    Ok(placements)
}

/// Each engine's boot id, read by a throwaway container of the load generator's image (now
/// on every engine), into its facts; a warning when they differ: two hosts, two clocks.
async fn one_host_or_two(
    loaded: &LoadedPlan,
    engines: &Engines,
    reached: &Reached,
    facts: &mut [(usize, Facts)],
) -> Result<(), CliError> {
    let lg_image = loaded.plan.topology.load_generator.image.as_str();
    let study = loaded.plan.study.name.to_string();
    for (i, f) in facts.iter_mut() {
        f.boot_id = Some(boot_id(&reached.rt(*i), lg_image, &study).await?);
    }
    let first = facts[0].1.boot_id.clone();
    if let Some((i, _)) = facts.iter().find(|(_, f)| f.boot_id != first) {
        eprintln!(
            "warning: engine `{}` is on another host than `{}`, with its own clock: a load generator's requests are matched to the system's samples by wall time, so keep the hosts' clocks synchronised (NTP)",
            engines.engines[*i].name, engines.engines[facts[0].0].name
        );
    }
    Ok(())
}

/// Bad input at a system engine's `address`: a loopback address cannot be reached from
/// another engine, or from the coordinator when the engine is another's.
fn loopback(e: &feedbench_core::engines::Engine, why: &str) -> CliError {
    let message = format!(
        "engine `{}`'s address {} is a loopback address: {why}",
        e.name, e.address
    );
    let hint = Some(
        "name the address at which the other engines and the coordinator reach this one, e.g. 10.99.0.1"
            .to_string(),
    );
    match &e.address_site {
        Some(site) => CliError::Invalid(
            format!("`{}`: engine `{}` cannot publish there", site.file, e.name),
            vec![site.error(message, hint)],
        ),
        None => CliError::invalid(message),
    }
}

/// The images of every run's topology (replicas, balancer, database, fault proxy, load
/// generator, co-tenant): what a system engine other than the build engine must hold.
fn study_images(loaded: &LoadedPlan) -> Result<Vec<String>, CliError> {
    let mut out = std::collections::BTreeSet::new();
    // Only the images are wanted: the instance the names would carry does not matter.
    let any = crate::spec::topology::Instance::from_bytes([0; 4]);
    for run in crate::plan::expand(&loaded.plan) {
        let topo = crate::spec::topology::of_loaded(loaded, &run, &any)
            .map_err(|e| CliError::invalid(format!("`{}`: run `{}`: {e}", loaded.file, run.id)))?;
        out.extend(topo.containers.into_iter().map(|c| c.image));
    }
    Ok(out.into_iter().collect())
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
