//! A contender's gate: its contract-conformance check, run once against the deployed topology
//! of its first run before that run; the gate container's output and exit decide.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::engine::deploy::{deploy, teardown};
use crate::engine::runtime::Runtime;
use crate::plan::expand::resolve_contenders;
use crate::plan::model::Gate;
use crate::plan::{LoadedPlan, RunSpec};
use crate::rundir::events::{Clock, RunEvent, Stamp};
use crate::spec::topology::{
    gate_container, gated, of_loaded, Instance, RunTopology, TopologyError,
};

/// How much of the gate's output (stdout and stderr, interleaved) is kept: the end of it,
/// where the gate's verdict and its failed expectations are.
pub const OUTPUT_LIMIT: usize = 64 * 1024;

/// How long the topology may take to be ready, as for a run.
const DEPLOY_DEADLINE: Duration = Duration::from_secs(300);

/// How long a killed gate may take to be reported stopped.
const KILL_GRACE: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error("contender `{0}` declares no gate")]
    NoGate(String),
    #[error(transparent)]
    Topology(#[from] TopologyError),
}

/// What a gate found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateOutcome {
    pub passed: bool,
    /// The gate ran to its exit or its timeout: a verdict on the contender. False when it
    /// could not be deployed or started, which says nothing about the contender.
    pub judged: bool,
    /// The gate's exit code; `None` when it did not exit by itself (not started, timed out).
    pub exit_code: Option<i64>,
    /// The end of its stdout and stderr, at most `OUTPUT_LIMIT` bytes.
    pub output: String,
    /// From the gate container's start to its exit (or its kill); 0 when it never started.
    pub seconds: f64,
    pub image: String,
    /// In words: "exit code 0", "exit code 1", "timed out after 5m", "could not deploy: …".
    pub reason: String,
}

impl GateOutcome {
    /// The outcome for a contender that declares no gate: admitted, nothing ran.
    pub fn no_gate() -> Self {
        GateOutcome {
            passed: true,
            judged: true,
            exit_code: None,
            output: String::new(),
            seconds: 0.0,
            image: String::new(),
            reason: "no gate declared".into(),
        }
    }

    /// A gate that could not be run to its end: failed, with the reason.
    pub fn failed(image: &str, reason: impl Into<String>) -> Self {
        GateOutcome {
            passed: false,
            judged: false,
            exit_code: None,
            output: String::new(),
            seconds: 0.0,
            image: image.to_string(),
            reason: reason.into(),
        }
    }
}

/// The deployment a gate runs against: the topology of `run` (the contender's first run)
/// without its fault, under its own id `<contender>/gate`, so its containers and network
/// never meet the run's.
pub fn gate_run(run: &RunSpec) -> RunSpec {
    RunSpec {
        id: format!("{}/gate", run.contender),
        fault: None,
        ..run.clone()
    }
}

/// Deploys the topology of `run` (the contender's first run), runs the contender's gate in
/// one more container on the run's network, and tears everything down whatever happened.
/// A deploy or engine failure is a failed gate with its reason; an error is returned only
/// when there is nothing to run (no gate, or a topology the plan cannot make).
pub async fn run_gate(
    rt: &Runtime,
    loaded: &LoadedPlan,
    run: &RunSpec,
    instance: &Instance,
    observer: &mut dyn FnMut(&str, Stamp, &RunEvent),
) -> Result<GateOutcome, GateError> {
    let plan = &loaded.plan;
    let contender = resolve_contenders(plan)
        .into_iter()
        .find(|c| c.name == run.contender)
        .ok_or_else(|| TopologyError::UnknownContender(run.contender.clone()))?;
    let gate = contender
        .gate
        .clone()
        .ok_or_else(|| GateError::NoGate(contender.name.clone()))?;
    let image = gate
        .image
        .as_ref()
        .unwrap_or(&contender.image)
        .as_str()
        .to_string();
    let gate_spec = gate_run(run);
    let mut topo = of_loaded(loaded, &gate_spec, instance)?;
    let room: Vec<(String, String)> = gate
        .contender_env
        .iter()
        .map(|(k, v)| (k.to_string(), v.as_str().to_string()))
        .collect();
    gated(&mut topo, &room);

    let clock = Clock::start();
    let id = gate_spec.id.clone();
    let mut emit = |event: RunEvent| observer(&id, clock.now(), &event);

    emit(RunEvent::Phase {
        phase: "gate-deploy".into(),
    });
    let mut outcome = match deploy_checked(rt, &topo, plan.caps.allow_oversubscription).await {
        Err(reason) => GateOutcome::failed(&image, format!("could not deploy: {reason}")),
        Ok(()) => {
            emit(RunEvent::Phase {
                phase: "gate".into(),
            });
            let mut outcome = run_container(rt, &topo, &gate, &image, &room).await;
            outcome.output = format!("{}{}", settings_line(&room), outcome.output);
            outcome
        }
    };
    emit(RunEvent::Phase {
        phase: "gate-teardown".into(),
    });
    if let Err(e) = teardown(rt, &topo).await {
        outcome.reason.push_str(&format!("; teardown failed: {e}"));
    }
    emit(RunEvent::Note {
        text: format!(
            "gate {} for `{}` ({}, {:.1} s, {image})",
            if outcome.passed { "passed" } else { "failed" },
            contender.name,
            outcome.reason,
            outcome.seconds
        ),
    });
    Ok(outcome)
}

/// The run's caps against the host, then the deployment; any failure in words.
async fn deploy_checked(rt: &Runtime, topo: &RunTopology, allowed: bool) -> Result<(), String> {
    let facts = rt.facts().await.map_err(|e| e.to_string())?;
    topo.fits(facts.cores, allowed).map_err(|e| e.to_string())?;
    deploy(rt, topo, DEPLOY_DEADLINE, None)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Creates, starts and waits for the gate container, keeps the end of its output and
/// removes it.
async fn run_container(
    rt: &Runtime,
    topo: &RunTopology,
    gate: &Gate,
    image: &str,
    room: &[(String, String)],
) -> GateOutcome {
    let spec = gate_container(topo, image, &gate.command, room);
    let timeout = Duration::from_millis(gate.timeout.millis);
    let mut outcome = GateOutcome::failed(image, String::new());
    let started = Instant::now();
    let result = async {
        rt.create(&spec, &topo.network).await?;
        rt.start(&spec.name).await?;
        let started = Instant::now();
        let exit = rt.wait_exit(&spec.name, timeout).await?;
        let seconds = started.elapsed().as_secs_f64();
        if exit.is_none() {
            // It ran out its time: that is the verdict, whether or not the kill is clean
            // (the container is removed below either way).
            let _ = rt.kill(&spec.name, "SIGKILL").await;
            let _ = rt.wait_exit(&spec.name, KILL_GRACE).await;
        }
        Ok::<_, crate::engine::runtime::RuntimeError>((exit, seconds))
    }
    .await;
    match result {
        Ok((exit, seconds)) => {
            outcome.exit_code = exit;
            outcome.judged = true;
            outcome.seconds = seconds;
            outcome.passed = exit == Some(0);
            outcome.reason = match exit {
                Some(code) => format!("exit code {code}"),
                None => format!("timed out after {}", gate.timeout),
            };
        }
        Err(e) => {
            outcome.seconds = started.elapsed().as_secs_f64();
            outcome.reason = format!("could not run the gate: {e}");
        }
    }
    outcome.output = match rt.output(&spec.name).await {
        Ok(text) => tail(&text, OUTPUT_LIMIT),
        Err(_) => String::new(),
    };
    if let Err(e) = rt.remove_container(&spec.name).await {
        outcome.reason.push_str(&format!("; {e}"));
    }
    outcome
}

/// The first line of a gate's kept output when its replicas ran with settings of the gate's
/// own: a reader of `gates/` must know that the gate judged a deployment the runs never see.
fn settings_line(room: &[(String, String)]) -> String {
    if room.is_empty() {
        return String::new();
    }
    let settings: Vec<String> = room.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!(
        "feedbench: the gated replicas ran with {} (the gate's contender-env, to judge what they answer and not how fast); the runs do not\n",
        settings.join(" ")
    )
}

/// The end of `text`, at most `limit` bytes, cut at a character boundary and marked.
fn tail(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    let mark = |cut: usize| format!("[… {cut} earlier bytes not kept]\n");
    let mut cut = text.len() - limit + mark(text.len()).len();
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    format!("{}{}", mark(cut), &text[cut..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_end_within_the_limit() {
        assert_eq!(tail("short", 64), "short");
        let text = format!("{}{}", "é".repeat(100), "the verdict");
        let kept = tail(&text, 60);
        assert!(kept.len() <= 60, "{} bytes", kept.len());
        assert!(kept.ends_with("the verdict"));
        assert!(kept.starts_with("[… "));
    }

    #[test]
    fn a_gate_with_settings_of_its_own_says_so_first() {
        assert_eq!(settings_line(&[]), "");
        let line = settings_line(&[
            ("SECTION_BUDGET_MS".into(), "5000".into()),
            ("REQUEST_DEADLINE_MS".into(), "10000".into()),
        ]);
        assert!(
            line.starts_with("feedbench: the gated replicas ran with SECTION_BUDGET_MS=5000 REQUEST_DEADLINE_MS=10000 ")
                && line.ends_with("the runs do not\n"),
            "{line}"
        );
    }

    #[test]
    fn outcomes_without_a_gate_run_pass_and_failures_carry_their_reason() {
        let none = GateOutcome::no_gate();
        assert!(none.passed && none.exit_code.is_none());
        let f = GateOutcome::failed("feedbench/gate:dev", "could not deploy: x");
        assert!(!f.passed);
        assert_eq!(f.image, "feedbench/gate:dev");
        assert_eq!(f.reason, "could not deploy: x");
    }

    #[test]
    fn the_gate_deploys_the_first_run_under_its_own_id_without_its_fault() {
        let run = RunSpec {
            id: "feed-rs.c2/baseline+db-cut/r1".into(),
            run_hash: "h".into(),
            contender: "feed-rs.c2".into(),
            profile: "baseline".into(),
            fault: Some("db-cut".into()),
            repetition: 1,
            depends_on: vec![],
            estimated_duration_s: None,
            inputs: vec![],
        };
        let g = gate_run(&run);
        assert_eq!(g.id, "feed-rs.c2/gate");
        assert_eq!(g.fault, None);
        assert_eq!(g.contender, run.contender);
    }
}
