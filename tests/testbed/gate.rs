//! A contender's gate on the real engine: the gate suite passes on both production arms of
//! the study against the study's own topology and caps (and still fails a mutant there), a
//! gate past its timeout is killed, a topology that cannot be deployed is a failed gate;
//! nothing labelled is left afterwards. (The gate passing on feed-rs and failing on its C2
//! mutant inside a study is `ledger::a_contender_failing_its_gate_is_excluded…`.)

use crate::common;

use std::time::Instant;

use feedbench::engine::runtime::Runtime;
use feedbench::plan::{LoadedPlan, RunSpec};
use feedbench::run::gate::{run_gate, GateOutcome};
use feedbench::rundir::events::{RunEvent, Stamp};

fn load(plan: &str) -> (LoadedPlan, Vec<RunSpec>) {
    let loaded = feedbench::plan::load_file(&common::repo().join(plan), None)
        .unwrap_or_else(|e| panic!("{plan}: {e}"));
    let runs = feedbench::plan::expand(&loaded.plan);
    (loaded, runs)
}

/// The deploy probe's plan under a study name of these tests' own, with `gate` as its
/// stand-in contender's gate.
fn probe(gate: &str) -> (LoadedPlan, Vec<RunSpec>) {
    let (mut loaded, _) = load("tests/plans/docker/probe.yaml");
    loaded.plan.study.name = PROBE_STUDY.parse().unwrap();
    let c = loaded.plan.contenders.values_mut().next().unwrap();
    c.gate = Some(serde_yaml::from_str(gate).unwrap());
    let runs = feedbench::plan::expand(&loaded.plan);
    (loaded, runs)
}

const PROBE_STUDY: &str = "test-gate-probe";

/// Runs the gate of `contender` before its first run; prints what it took.
async fn gate(
    rt: &Runtime,
    loaded: &LoadedPlan,
    runs: &[RunSpec],
    contender: &str,
) -> (GateOutcome, Vec<String>) {
    let first = runs
        .iter()
        .find(|r| r.contender == contender)
        .unwrap_or_else(|| panic!("no run of {contender}"));
    let mut phases = Vec::new();
    let mut observe = |id: &str, _: Stamp, e: &RunEvent| {
        if let RunEvent::Phase { phase } = e {
            phases.push(format!("{id} {phase}"));
        }
    };
    let started = Instant::now();
    let outcome = run_gate(
        rt,
        loaded,
        first,
        &feedbench::spec::topology::Instance::for_tests(),
        &mut observe,
    )
    .await
    .unwrap();
    eprintln!(
        "{contender}: gate {} in {:.1} s, {:.1} s with deploy and teardown ({})",
        if outcome.passed { "passed" } else { "failed" },
        outcome.seconds,
        started.elapsed().as_secs_f64(),
        outcome.reason
    );
    // The gate's table of checks and its verdict line.
    for line in outcome.output.lines().filter(|l| {
        l.ends_with(" s]") || l.starts_with("gate passed") || l.starts_with("gate FAILED")
    }) {
        eprintln!("    {line}");
    }
    (outcome, phases)
}

fn assert_nothing_left(rt: &tokio::runtime::Runtime, engine: &Runtime, study: &str) {
    assert_eq!(
        rt.block_on(common::leftovers(engine, study)),
        (vec![], vec![])
    );
}

const STUDY_TEST: &str = "test-gate-study";

/// experiments/study.yaml under a study name of these tests' own, with one more arm: the
/// production schema with clause C2 dropped from feed-rs's visibility rule.
fn study_with_a_production_mutant() -> (LoadedPlan, Vec<RunSpec>) {
    let (mut loaded, _) = load("experiments/study.yaml");
    loaded.plan.study.name = STUDY_TEST.parse().unwrap();
    let rs = loaded.plan.contenders.get_mut("feed-rs").unwrap();
    let mut mutant = rs.variants["production"].clone();
    mutant.env.insert(
        "FEED_MUTANT".parse().unwrap(),
        serde_yaml::from_str("c2").unwrap(),
    );
    rs.variants.insert("production-c2".parse().unwrap(), mutant);
    // It runs where the production arms run: the slow ramp.
    for entry in &mut loaded.plan.matrix.runs {
        if let Some(list) = entry.contenders.as_mut() {
            if list.iter().any(|c| c == "feed-rs.production") {
                list.push("feed-rs.production-c2".into());
            }
        }
    }
    let runs = feedbench::plan::expand(&loaded.plan);
    (loaded, runs)
}

pub fn both_production_arms_pass_the_gate_on_the_studys_topology_and_a_mutant_still_fails() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let engine = rt.block_on(common::engine());
    rt.block_on(common::plan_images("experiments/study.yaml"));
    let (mut loaded, runs) = study_with_a_production_mutant();
    for contender in ["feed-rs.production", "feed-py.production"] {
        let (outcome, _) = rt.block_on(gate(&engine, &loaded, &runs, contender));
        assert!(
            outcome.passed,
            "{contender}: {}\n{}",
            outcome.reason, outcome.output
        );
        // The gate said that it gave the sections room, and which.
        assert!(
            outcome
                .output
                .starts_with("feedbench: the gated replicas ran with SECTION_BUDGET_MS="),
            "{}",
            outcome.output
        );
        // The feed's content was compared, section by section, not skipped as degraded.
        assert!(
            outcome
                .output
                .lines()
                .any(|l| l.trim_start().starts_with("feed ") && l.contains(" ok ")),
            "{}",
            outcome.output
        );
        assert_nothing_left(&rt, &engine, STUDY_TEST);
    }
    // The mutant need fail only where it differs: its gate runs the visibility check (and
    // health, which waits for it to answer), not the other checks a sound arm passes above,
    // whose 40 s proved nothing about the mutant.
    let suite = loaded.plan.contenders.get_mut("feed-rs").unwrap();
    let command = &mut suite.gate.as_mut().expect("feed-rs has a gate").command;
    command.extend(["--only".to_string(), "health,visibility".to_string()]);
    let (mutant, _) = rt.block_on(gate(&engine, &loaded, &runs, "feed-rs.production-c2"));
    assert!(!mutant.passed, "{}", mutant.output);
    assert_eq!(mutant.exit_code, Some(1), "{}", mutant.output);
    assert!(
        mutant
            .output
            .lines()
            .any(|l| l.contains("[visibility]") && l.contains("C2 draft")),
        "{}",
        mutant.output
    );
    assert_nothing_left(&rt, &engine, STUDY_TEST);
}

pub fn a_gate_past_its_timeout_is_killed_and_fails() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let engine = rt.block_on(common::engine());
    rt.block_on(common::infrastructure_images());
    let (loaded, runs) =
        probe("{command: [/bin/sh, -c, 'echo waiting for nothing; sleep 60'], timeout: 2s}");
    let (outcome, _) = rt.block_on(gate(&engine, &loaded, &runs, "static"));
    assert!(!outcome.passed);
    assert_eq!(outcome.exit_code, None);
    assert_eq!(outcome.reason, "timed out after 2s");
    // The gate ran in the contender's own image, and its output was kept.
    assert_eq!(outcome.image, "feedbench/base:bookworm");
    assert_eq!(outcome.output.trim(), "waiting for nothing");
    assert!(
        (2.0..10.0).contains(&outcome.seconds),
        "{} s",
        outcome.seconds
    );
    assert_nothing_left(&rt, &engine, PROBE_STUDY);
}

pub fn a_topology_that_cannot_be_deployed_is_a_failed_gate() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let engine = rt.block_on(common::engine());
    rt.block_on(common::infrastructure_images());
    let (mut loaded, runs) = probe("{command: [/bin/true]}");
    loaded.plan.topology.balancer.image = "feedbench/absent:none".parse().unwrap();
    let (outcome, _) = rt.block_on(gate(&engine, &loaded, &runs, "static"));
    assert!(!outcome.passed);
    assert_eq!(outcome.exit_code, None);
    assert!(
        outcome.reason.starts_with("could not deploy: ")
            && outcome.reason.contains("feedbench/absent:none"),
        "{}",
        outcome.reason
    );
    assert_nothing_left(&rt, &engine, PROBE_STUDY);
}
