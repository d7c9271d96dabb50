//! A contender's gate in the study: run once, before any run of the study, on the
//! testbed; its output kept under `gates/`; a pass journalled, a failure journalled as the
//! contender's exclusion (with the output), and a gate that could not run recorded against
//! nobody.

use super::interrupt::Interrupt;
use super::reporter::StudyEvent;
use super::runner::StudyRequest;
use super::session::Session;
use super::testbed::Testbed;
use super::StudyError;
use crate::ledger::journal::Event;
use crate::ledger::state::Ledger;
use crate::plan::{LoadedPlan, RunSpec};
use crate::rundir::events::{RunEvent, Stamp};
use crate::rundir::layout;
use feedbench_core::files;

/// Runs a contender's gate before any run: its output is kept under `gates/`, and a
/// failure excludes the contender's runs with a deviation that carries the output. A gate
/// that could not run is nobody's verdict: nothing is recorded and the study stops.
pub(super) async fn gate<T: Testbed>(
    session: &mut Session<'_>,
    testbed: &T,
    interrupt: &mut Interrupt,
    request: &StudyRequest<'_>,
    run: &RunSpec,
) -> Result<(), StudyError> {
    session.report(StudyEvent::GateStarted {
        contender: &run.contender,
    });
    let outcome = {
        let instance = session.instance.clone();
        let reporter = session.reporter();
        let mut observe = |id: &str, stamp: Stamp, event: &RunEvent| {
            reporter.report(StudyEvent::Run {
                run: id,
                stamp,
                event,
            })
        };
        tokio::select! {
            r = testbed.gate(request.loaded, run, &instance, &mut observe) => Some(r?),
            _ = interrupt.wait() => None,
        }
    };
    let Some(outcome) = outcome else {
        testbed.reap(&session.instance).await?;
        return Err(StudyError::Unfinished(format!(
            "interrupted during the gate of `{}`; nothing was recorded for it",
            run.contender
        )));
    };
    let gates = session.dir.join(layout::GATES);
    std::fs::create_dir_all(&gates).map_err(files::fail("create", &gates))?;
    let path = layout::gate_log(&session.dir, &run.contender);
    files::write_atomic(&path, outcome.output.as_bytes())?;
    if !outcome.judged {
        return Err(StudyError::Unfinished(format!(
            "the gate of `{}` could not run: {}; nothing was recorded against the contender. Fix the cause, then `feedbench run --resume`",
            run.contender, outcome.reason
        )));
    }
    if outcome.passed {
        session.log(Event::GatePassed {
            contender: run.contender.clone(),
            image: outcome.image.clone(),
            seconds: outcome.seconds,
        })
    } else {
        let output = session.relative(&path);
        session.log(Event::ContenderExcluded {
            contender: run.contender.clone(),
            image: outcome.image.clone(),
            exit_code: outcome.exit_code,
            reason: format!("{}; output in {output}", outcome.reason),
            output: outcome.output.clone(),
            runs: request
                .runs
                .iter()
                .filter(|r| r.contender == run.contender)
                .map(|r| r.id.clone())
                .collect(),
        })
    }
}

/// Whether the contender declares a gate that has not passed (nor failed) in this study.
pub(super) fn needs_gate(loaded: &LoadedPlan, contender: &str, ledger: &Ledger) -> bool {
    !ledger.gate_passed.contains(contender)
        && !ledger.excluded.contains_key(contender)
        && crate::plan::expand::resolve_contenders(&loaded.plan)
            .iter()
            .any(|c| c.name == contender && c.gate.is_some())
}
