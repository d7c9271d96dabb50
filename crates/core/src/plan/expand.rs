//! Expansion: contenders × matrix entries × repetitions → runs, each with a stable id, its
//! dependencies and a run hash, in the plan's execution order.

use std::collections::{BTreeMap, HashMap};

use indexmap::IndexMap;
use serde::Serialize;

use super::hash::value_hash;
use super::model::{
    BuildRecipe, Caps, Contender, Fault, Gate, Injection, Objective, Order, Plan, Profile, Service,
    Topology, Workload,
};
use super::units::{Duration, EnvName, EnvValue, ImageRef, Name, Rate, UrlPath};

/// A contender as it runs: a declared contender with one of its variants applied.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct ResolvedContender {
    /// `feed-rs`, or `feed-rs.indexed` for a variant.
    pub name: String,
    pub declared: Name,
    pub variant: Option<Name>,
    pub image: ImageRef,
    pub build: Option<BuildRecipe>,
    pub command: Option<Vec<String>>,
    pub port: u16,
    pub env: IndexMap<EnvName, EnvValue>,
    pub readiness: UrlPath,
    pub liveness: UrlPath,
    pub replicas: u32,
    pub caps: Caps,
    /// The topology's services with this variant's changes applied.
    pub services: IndexMap<Name, Service>,
    /// The contender's gate; every variant inherits it (an arm answers to the same contract,
    /// and a mutant arm is what a gate is there to catch). Not part of the run hash: the gate
    /// judges the contender before its first run, it does not change what a run does.
    #[serde(skip)]
    pub gate: Option<Gate>,
}

/// Every contender that runs, in plan order: variants in place of their contender.
pub fn resolve_contenders(plan: &Plan) -> Vec<ResolvedContender> {
    let mut out = Vec::new();
    for (name, c) in &plan.contenders {
        let base = |variant: Option<&Name>| resolve_one(plan, name, c, variant);
        if c.variants.is_empty() {
            out.push(base(None));
        } else {
            out.extend(c.variants.keys().map(|v| base(Some(v))));
        }
    }
    out
}

fn resolve_one(
    plan: &Plan,
    name: &Name,
    c: &Contender,
    variant: Option<&Name>,
) -> ResolvedContender {
    let mut caps = match &c.caps {
        Some(o) => o.apply(&plan.caps),
        None => plan.caps.clone(),
    };
    let mut env = c.env.clone();
    let mut image = c.image.clone();
    let mut services = plan.topology.services.clone();
    if let Some(v) = variant.and_then(|v| c.variants.get(v)) {
        env.extend(v.env.clone());
        if let Some(i) = &v.image {
            image = i.clone();
        }
        if let Some(o) = &v.caps {
            caps = o.apply(&caps);
        }
        for (svc, o) in &v.services {
            if let Some(s) = services.get_mut(svc) {
                s.env.extend(o.env.clone());
                if let Some(init) = &o.init {
                    s.init = init.clone();
                }
            }
        }
    }
    ResolvedContender {
        name: match variant {
            Some(v) => format!("{name}.{v}"),
            None => name.to_string(),
        },
        declared: name.clone(),
        variant: variant.cloned(),
        image,
        build: c.build.clone(),
        command: c.command.clone(),
        port: c.port,
        env,
        readiness: c.readiness.clone(),
        liveness: c.liveness.clone(),
        replicas: c.replicas.unwrap_or(plan.topology.replicas),
        caps,
        services,
        gate: c.gate.clone(),
    }
}

/// Does a matrix entry's contender selector pick this contender?
pub fn selects(selector: &str, c: &ResolvedContender) -> bool {
    selector == c.name || selector == c.declared.as_str()
}

/// One planned run.
#[derive(Debug, Clone, Serialize)]
pub struct RunSpec {
    /// `feed-rs/baseline+db-latency/r2`.
    pub id: String,
    pub run_hash: String,
    pub contender: String,
    pub profile: String,
    pub fault: Option<String>,
    pub repetition: u32,
    pub depends_on: Vec<String>,
    /// Warm-up plus measured phase; `None` where the length depends on a measurement.
    pub estimated_duration_s: Option<f64>,
    /// The plan paths of the sources (build contexts, init scripts) the run's hash covers;
    /// empty when the inputs were not read.
    #[serde(skip)]
    pub inputs: Vec<String>,
}

impl RunSpec {
    /// Whether the run may end before its estimate: a step ramp that stops at its knee.
    /// Its estimate counts every step, so an estimate over it is an upper bound.
    pub fn may_stop_early(&self, plan: &Plan) -> bool {
        plan.profiles
            .get(self.profile.as_str())
            .is_some_and(|p| p.stops_at_knee().is_some())
    }
}

/// Everything that defines a run; its canonical JSON is what the run hash is taken of.
/// Guards, hypotheses, notes and the run order are not in it: they judge or schedule a run,
/// they do not change what it does.
#[derive(Serialize)]
struct RunDefinition<'a> {
    contender: &'a ResolvedContender,
    topology: TopologyDefinition<'a>,
    workload: &'a Workload,
    objective: &'a Objective,
    profile: (&'a str, &'a Profile),
    fault: Option<(&'a str, &'a Fault)>,
    repetition: u32,
    /// Run hashes of the runs this one takes parameters from.
    depends_on: Vec<String>,
    /// What the executor does beyond the plan's words, where it changed what a run
    /// measures: a step ramp with `stop-on-breach` stops its load at the knee since
    /// `ramp-stops-at-knee` (round 1 ran every step), and goes on past a transient breach
    /// to the first sustained one when `confirm-steps` is above 0 since
    /// `ramp-stops-at-sustained-breach` (before, it stopped `confirm-steps` after the first
    /// breach, refuted or not), so those runs hash differently. Absent for every other run,
    /// whose hash it leaves as it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    executor: Option<&'static str>,
    /// The digests of the source files the run depends on, by plan path (an init script, a
    /// build context): an edit to one changes exactly the runs that use it. Absent where the
    /// inputs were not read (pure tests of the plan alone).
    #[serde(skip_serializing_if = "Option::is_none")]
    inputs: Option<BTreeMap<String, String>>,
    /// The rule the run's objective windows are judged by ([`JUDGED_BY`]): it decides where
    /// a ramp stops and every verdict, so every run judged by it hashes differently from
    /// the runs judged before it was recorded.
    judged_by: &'static str,
    /// Where the roles run, when the plan places them other than the default (the load
    /// generator with the system under test): absent otherwise, so older hashes stand.
    #[serde(skip_serializing_if = "Option::is_none")]
    placement: Option<&'a super::model::Placement>,
}

/// The rule every run's windows are judged by: requests at their scheduled instants, dropped
/// starts failed (`analysis::judging::CURRENT` by name).
pub const JUDGED_BY: &str = "by-schedule";

/// The executor's semantics for step ramps that stop at their knee.
pub const RAMP_STOPS_AT_KNEE: &str = "ramp-stops-at-knee";
/// The executor's semantics for step ramps that stop at their first sustained breach (with
/// `confirm-steps: 0` the first breach is sustained: the same as `ramp-stops-at-knee`).
pub const RAMP_STOPS_AT_SUSTAINED_BREACH: &str = "ramp-stops-at-sustained-breach";

/// The executor semantics a profile's runs hash with.
fn executor_semantics(profile: &Profile) -> Option<&'static str> {
    profile.stops_at_knee().map(|confirm| {
        if confirm == 0 {
            RAMP_STOPS_AT_KNEE
        } else {
            RAMP_STOPS_AT_SUSTAINED_BREACH
        }
    })
}

#[derive(Serialize)]
struct TopologyDefinition<'a> {
    links: &'a IndexMap<Name, super::model::Link>,
    balancer: &'a super::model::Balancer,
    fault_proxy: &'a super::model::Sidecar,
    load_generator: &'a super::model::LoadGenerator,
    /// Only runs with a CPU-steal fault start the co-tenant.
    co_tenant: Option<&'a super::model::Sidecar>,
}

/// A run's id: `<contender>/<profile>[+<fault>]/r<repetition>` (a `Name` never holds `/`
/// or `+`). `RunIdParts::parse` is its one inverse.
pub fn run_id(contender: &str, profile: &str, fault: Option<&str>, repetition: u32) -> String {
    match fault {
        Some(f) => format!("{contender}/{profile}+{f}/r{repetition}"),
        None => format!("{contender}/{profile}/r{repetition}"),
    }
}

/// A run id read back into its parts, as `run_id` made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunIdParts<'a> {
    pub contender: &'a str,
    /// The profile and the fault as the id spells them (`baseline+db-cut`): the runs of one
    /// comparison share it across contenders and repetitions.
    pub comparison: &'a str,
    pub profile: &'a str,
    pub fault: Option<&'a str>,
    pub repetition: u32,
}

impl<'a> RunIdParts<'a> {
    /// `None` for what `run_id` cannot have made (a journal or manifest edited by hand).
    pub fn parse(id: &'a str) -> Option<RunIdParts<'a>> {
        let mut parts = id.split('/');
        let (contender, comparison, rep) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || contender.is_empty() || comparison.is_empty() {
            return None;
        }
        let repetition = rep.strip_prefix('r')?.parse().ok()?;
        let (profile, fault) = match comparison.split_once('+') {
            Some((p, f)) if !p.is_empty() && !f.is_empty() => (p, Some(f)),
            Some(_) => return None,
            None => (comparison, None),
        };
        Some(RunIdParts {
            contender,
            comparison,
            profile,
            fault,
            repetition,
        })
    }

    /// The contender of a run id; an id `run_id` cannot have made is its own contender, so
    /// that no exclusion or gate of a real contender reaches it.
    pub fn contender_of(id: &'a str) -> &'a str {
        Self::parse(id).map_or(id, |p| p.contender)
    }
}

/// The step ramps a profile's rates are derived from.
pub fn profile_dependencies(profile: &Profile) -> Vec<&Name> {
    profile
        .rates()
        .into_iter()
        .filter_map(|(_, r)| r.dependency())
        .collect()
}

/// Warm-up and measured length of a profile, where its rates are known in advance.
pub fn profile_length(profile: &Profile) -> (Duration, Option<Duration>) {
    let measured = match profile {
        Profile::StepRamp {
            start: Rate::Fixed(start),
            max: Rate::Fixed(max),
            step,
            step_duration,
            ..
        } => Some(Duration {
            millis: Profile::ramp_steps(*start, *step, *max).saturating_mul(step_duration.millis),
        }),
        Profile::StepRamp { .. } => None,
        Profile::Constant { duration, .. } | Profile::Soak { duration, .. } => Some(*duration),
        Profile::Diurnal { period, cycles, .. } => Some(Duration {
            millis: period.millis.saturating_mul(u64::from(*cycles)),
        }),
    };
    (profile.warmup(), measured)
}

/// Expands a validated plan into its runs, in execution order, hashing the plan alone:
/// for tests of the plan's own semantics. Every command that records or compares run hashes
/// uses `inputs::expand`, with the plan's inputs.
pub fn expand(plan: &Plan) -> Vec<RunSpec> {
    expand_with(plan, None)
}

/// The digests of the source files a run depends on, by plan path, from its contender and
/// whether the run starts the co-tenant: what `inputs::Inputs::of_run` answers.
pub type RunInputs<'a> = &'a dyn Fn(&ResolvedContender, bool) -> BTreeMap<String, String>;

/// Expands a validated plan into its runs, in execution order; each run's hash covers the
/// digests `inputs` gives for it (the `inputs` module's `expand` passes them).
pub fn expand_with(plan: &Plan, inputs: Option<RunInputs>) -> Vec<RunSpec> {
    let contenders = resolve_contenders(plan);
    // (contender index, entry index, repetition) in declaration order.
    let mut cells = Vec::new();
    for rep in 1..=plan.matrix.repetitions {
        for (ei, entry) in plan.matrix.runs.iter().enumerate() {
            for (ci, c) in contenders.iter().enumerate() {
                let picked = match &entry.contenders {
                    None => true,
                    Some(sel) => sel.iter().any(|s| selects(s, c)),
                };
                if picked {
                    cells.push((ci, ei, rep));
                }
            }
        }
    }
    match &plan.matrix.order {
        Order::Interleaved => {}
        Order::Sequential => cells.sort_by_key(|&(ci, ei, rep)| (ci, rep, ei)),
        Order::Shuffled { seed } => {
            cells.sort_by_key(|&(ci, ei, rep)| (rep, ci, ei));
            let mut rng = SplitMix64(*seed);
            let mut start = 0;
            while start < cells.len() {
                let rep = cells[start].2;
                let end = start + cells[start..].iter().take_while(|c| c.2 == rep).count();
                rng.shuffle(&mut cells[start..end]);
                start = end;
            }
        }
    }

    // Resolve ids and dependencies first, then hashes in dependency order.
    let ids: Vec<String> = cells
        .iter()
        .map(|&(ci, ei, rep)| {
            let e = &plan.matrix.runs[ei];
            run_id(
                &contenders[ci].name,
                e.profile.as_str(),
                e.fault.as_ref().map(Name::as_str),
                rep,
            )
        })
        .collect();
    let index_of: HashMap<&str, usize> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i))
        .collect();
    let deps: Vec<Vec<usize>> = cells
        .iter()
        .map(|&(ci, ei, rep)| {
            let profile = &plan.profiles[&plan.matrix.runs[ei].profile];
            let mut d: Vec<usize> = profile_dependencies(profile)
                .into_iter()
                .filter_map(|p| {
                    index_of
                        .get(run_id(&contenders[ci].name, p.as_str(), None, rep).as_str())
                        .copied()
                })
                .collect();
            d.sort_unstable();
            d.dedup();
            d
        })
        .collect();
    let order = dependencies_first(&deps);

    let mut hashes: Vec<Option<String>> = vec![None; cells.len()];
    let mut sources: Vec<Vec<String>> = vec![Vec::new(); cells.len()];
    for &i in &order {
        let (ci, ei, rep) = cells[i];
        let entry = &plan.matrix.runs[ei];
        let profile = &plan.profiles[&entry.profile];
        let fault = entry.fault.as_ref().map(|f| (f.as_str(), &plan.faults[f]));
        let def = RunDefinition {
            contender: &contenders[ci],
            topology: topology_definition(&plan.topology, fault.map(|f| f.1)),
            workload: plan.workload_of(profile),
            objective: &plan.study.objective,
            profile: (entry.profile.as_str(), profile),
            fault,
            repetition: rep,
            depends_on: deps[i]
                .iter()
                .map(|&d| hashes[d].clone().unwrap_or_default())
                .collect(),
            executor: executor_semantics(profile),
            judged_by: JUDGED_BY,
            inputs: inputs.map(|of_run| of_run(&contenders[ci], steals(fault))),
            placement: (!plan.placement.is_default()).then_some(&plan.placement),
        };
        hashes[i] = Some(value_hash(&def));
        sources[i] = def.inputs.iter().flat_map(|m| m.keys().cloned()).collect();
    }

    order
        .into_iter()
        .map(|i| {
            let (ci, ei, rep) = cells[i];
            let entry = &plan.matrix.runs[ei];
            let (warmup, measured) = profile_length(&plan.profiles[&entry.profile]);
            RunSpec {
                id: ids[i].clone(),
                run_hash: hashes[i].clone().unwrap_or_default(),
                contender: contenders[ci].name.clone(),
                profile: entry.profile.to_string(),
                fault: entry.fault.as_ref().map(Name::to_string),
                repetition: rep,
                depends_on: deps[i].iter().map(|&d| ids[d].clone()).collect(),
                estimated_duration_s: measured.map(|m| warmup.as_secs_f64() + m.as_secs_f64()),
                inputs: std::mem::take(&mut sources[i]),
            }
        })
        .collect()
}

/// Whether a run with this fault starts the co-tenant.
fn steals(fault: Option<(&str, &Fault)>) -> bool {
    matches!(fault.map(|f| &f.1.inject), Some(Injection::CpuSteal { .. }))
}

fn topology_definition<'a>(t: &'a Topology, fault: Option<&Fault>) -> TopologyDefinition<'a> {
    let steals = steals(fault.map(|f| ("", f)));
    TopologyDefinition {
        links: &t.links,
        balancer: &t.balancer,
        fault_proxy: &t.fault_proxy,
        load_generator: &t.load_generator,
        co_tenant: steals.then_some(&t.co_tenant),
    }
}

/// A stable topological order: the earliest run whose dependencies are done goes next, so
/// the chosen order is kept wherever dependencies allow. Validation has ruled out cycles;
/// any left are appended in order rather than dropped.
fn dependencies_first(deps: &[Vec<usize>]) -> Vec<usize> {
    let n = deps.len();
    let mut done = vec![false; n];
    let mut out = Vec::with_capacity(n);
    let mut ready: BTreeMap<usize, ()> = BTreeMap::new();
    let mut waiting: Vec<usize> = (0..n).map(|i| deps[i].len()).collect();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, d) in deps.iter().enumerate() {
        for &j in d {
            dependents[j].push(i);
        }
        if d.is_empty() {
            ready.insert(i, ());
        }
    }
    while let Some((&i, _)) = ready.iter().next() {
        ready.remove(&i);
        done[i] = true;
        out.push(i);
        for &k in &dependents[i] {
            waiting[k] -= 1;
            if waiting[k] == 0 {
                ready.insert(k, ());
            }
        }
    }
    out.extend((0..n).filter(|&i| !done[i]));
    out
}

/// SplitMix64: a tiny generator written out here so that a recorded seed gives the same
/// order in every feedbench version (docs/plan.md states the algorithm; the report's
/// bootstrap uses it too, docs/analysis.md).
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Fisher–Yates, from the last element down; `j = next() % (i + 1)`.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = (self.next_u64() % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }
}

/// `feed-rs.indexed/baseline+db-cut/r2` → `feed-rs.indexed_baseline_db-cut_r2`: the run id in
/// the alphabet container, network and directory names allow (the run directory
/// `runs/<slug>/` and every container of the run are named from it).
pub fn run_slug(run_id: &str) -> String {
    run_id
        .chars()
        .map(|c| match c {
            'a'..='z' | '0'..='9' | '-' | '.' => c,
            _ => '_',
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_id_reads_back_into_the_parts_it_was_made_of() {
        for (c, p, f, r) in [
            ("feed-rs.indexed", "baseline", Some("db-cut"), 2),
            ("feed-py", "ramp", None, 1),
        ] {
            let id = run_id(c, p, f, r);
            let parts = RunIdParts::parse(&id).unwrap();
            assert_eq!(
                (
                    parts.contender,
                    parts.profile,
                    parts.fault,
                    parts.repetition
                ),
                (c, p, f, r)
            );
        }
        let parts = RunIdParts::parse("feed-rs/baseline+db-cut/r3").unwrap();
        assert_eq!(parts.comparison, "baseline+db-cut");
        for bad in [
            "",
            "feed-rs",
            "feed-rs/ramp",
            "feed-rs/ramp/1",
            "feed-rs/ramp/rx",
            "feed-rs/ramp/r1/more",
            "/ramp/r1",
            "feed-rs//r1",
            "feed-rs/ramp+/r1",
            "feed-rs/+db-cut/r1",
        ] {
            assert_eq!(RunIdParts::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn dependencies_come_first_and_order_is_kept_otherwise() {
        // 0 depends on 2; 1 is free.
        let order = dependencies_first(&[vec![2], vec![], vec![]]);
        assert_eq!(order, vec![1, 2, 0]);
    }

    #[test]
    fn a_ramp_that_stops_at_a_confirmed_breach_hashes_as_a_new_semantic() {
        let ramp = |extra: serde_json::Value| -> Profile {
            let mut p =
                serde_json::json!({"start": "10", "step": 10, "step-duration": "10s", "max": "40"});
            p.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            serde_json::from_value(serde_json::json!({ "step-ramp": p })).unwrap()
        };
        use serde_json::json;
        assert_eq!(
            executor_semantics(&ramp(json!({}))),
            Some(RAMP_STOPS_AT_SUSTAINED_BREACH)
        );
        assert_eq!(
            executor_semantics(&ramp(json!({"confirm-steps": 0}))),
            Some(RAMP_STOPS_AT_KNEE)
        );
        assert_eq!(
            executor_semantics(&ramp(json!({"stop-on-breach": false, "confirm-steps": 2}))),
            None
        );
    }

    #[test]
    fn splitmix_is_the_reference_sequence() {
        // First outputs of SplitMix64 seeded with 1234567 (reference C implementation).
        let mut r = SplitMix64(1234567);
        assert_eq!(r.next_u64(), 6457827717110365317);
        assert_eq!(r.next_u64(), 3203168211198807973);
    }
}
