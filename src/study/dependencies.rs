//! What a run needs from runs before it: the saturations measured by ramps that stand
//! (read from their records once, then added as runs finish), and whether a run it takes a
//! figure from has not stood yet or never will.

use std::path::Path;

use super::StudyError;
use crate::ledger::state::{Ledger, RunState};
use crate::plan::RunSpec;
use crate::run::execute::Saturations;
use crate::rundir::record::RunRecord;

/// The run `run` takes a figure from that does not stand: its id, and its state's label
/// when it never will (invalid, skipped), `None` when it has just not completed yet.
pub(super) fn blocked_by(
    ledger: &Ledger,
    runs: &[RunSpec],
    run: &RunSpec,
) -> Option<(String, Option<&'static str>)> {
    let status = ledger.status(runs);
    let state_of = |id: &str| status.iter().find(|s| s.run == id).map(|s| s.state.clone());
    let mut blocked = None;
    for d in &run.depends_on {
        match state_of(d) {
            Some(RunState::CompletedValid { .. }) => {}
            Some(s @ (RunState::Invalid { .. } | RunState::Skipped { .. })) => {
                blocked = Some((d.clone(), Some(s.label())));
            }
            _ => blocked = Some((d.clone(), None)),
        }
    }
    blocked
}

/// Saturations measured by runs that stand (completed and valid), from their run.json:
/// read once when the study loop starts; each run finished afterwards adds its own. A
/// record that does not read is an error naming the file: later runs would otherwise take
/// their rate from nothing.
pub(super) fn recorded(
    study_dir: &Path,
    ledger: &Ledger,
    runs: &[RunSpec],
) -> Result<Saturations, StudyError> {
    let mut out = Saturations::new();
    for (r, s) in runs.iter().zip(ledger.status(runs)) {
        let RunState::CompletedValid { dir, .. } = &s.state else {
            continue;
        };
        let record = RunRecord::read(&study_dir.join(dir))?;
        if let Some(sat) = &record.saturation {
            if let Some(rate) = sat.rate {
                remember(&mut out, r, rate, sat.sustained_breach.is_some());
            }
        }
    }
    Ok(out)
}

/// Adds the saturation `r` measured (read at its first sustained breach: a transient does
/// not set the rate later runs take). A ramp with no sustained breach did not find
/// saturation: its top step is a lower bound, and every rate taken from it says so.
pub(super) fn remember(out: &mut Saturations, r: &RunSpec, rate: f64, breached: bool) {
    let source = if breached {
        r.id.clone()
    } else {
        format!(
            "{} (a lower bound: no breach of the objective was sustained up to the ramp's top)",
            r.id
        )
    };
    out.insert(
        (r.contender.clone(), r.repetition, r.profile.clone()),
        (rate, source),
    );
}
