//! A pilot's study: selected runs of a plan, shortened by a scale (`plan::scale`), run by the
//! study runner itself into an area of their own under the study's directory
//! (`pilots/<NNN>/`, `ledger::pilot`), with its own journal, under a name no study has
//! (`<study>.pilot-<n>`). `open_area` claims the area, records the pilot and gives the plan
//! its pilot name; the caller then opens a `Session` with `StudyRequest::dir` set to it.
//! When its runs are done, `size` reads those that stand and writes the pilot's sizing
//! (`report::sizing`) into the area.

use std::path::{Path, PathBuf};

use crate::ledger::journal::unix_ns;
use crate::ledger::manifest::Git;
use crate::ledger::pilot::{self, PilotRecord, PilotRun};
use crate::plan::scale::Scale;
use crate::plan::units::Name;
use crate::plan::{LoadedPlan, RunSpec};
use crate::rundir::layout::{pilot_study, PILOT_SIZING};
use feedbench_core::report::{run::analyse_all, sizing};

use super::StudyError;

/// A pilot ready to run: its area claimed and recorded, its plan scaled and renamed.
#[derive(Debug)]
pub struct Pilot {
    pub number: u32,
    /// `results/<study>/pilots/<NNN>/`.
    pub dir: PathBuf,
    /// The scaled plan, its study named `<study>.pilot-<n>`, with the plan file's hash.
    pub loaded: LoadedPlan,
    pub record: PilotRecord,
}

/// What a pilot is made of: the scaled plan (validated), its runs and those to run.
pub struct PilotRequest<'a> {
    pub scaled: &'a LoadedPlan,
    /// The plan file's bytes as loaded: copied into the area.
    pub plan_text: &'a [u8],
    pub scale: Scale,
    /// The repetitions of each arm in place of the plan's, when given.
    pub repetitions: Option<u32>,
    pub only: Option<&'a str>,
    /// The runs to run, with those they take a rate from, in plan order.
    pub selected: &'a [RunSpec],
    /// Where study directories go (`results/`).
    pub results: &'a Path,
    /// The plan file's git state (it need not be committed).
    pub git: &'a Git,
}

/// Claims the next pilot area of the plan's study under `results`, writes its record and
/// its copy of the plan file, and names the plan's study after the pilot.
pub fn open_area(request: &PilotRequest<'_>) -> Result<Pilot, StudyError> {
    let study = request.scaled.plan.study.name.to_string();
    let study_dir = crate::rundir::layout::study_dir(request.results, &study);
    let (number, dir) = pilot::claim(&study_dir)?;
    let name = pilot_study(&study, number);
    let record = PilotRecord {
        format_version: pilot::FORMAT_VERSION,
        number,
        study,
        name: name.clone(),
        plan_file: request
            .git
            .path
            .clone()
            .unwrap_or_else(|| request.scaled.file.clone()),
        plan_hash: request.scaled.plan_hash.clone(),
        git: request.git.clone(),
        scale: request.scale.get(),
        only: request.only.map(str::to_string),
        repetitions: request.repetitions,
        runs: request
            .selected
            .iter()
            .map(|r| PilotRun {
                run: r.id.clone(),
                run_hash: r.run_hash.clone(),
            })
            .collect(),
        created_wall_ns: unix_ns().to_string(),
    };
    pilot::write(&dir, &record, request.plan_text)?;
    let mut loaded = request.scaled.clone();
    loaded.plan.study.name = Name::outside_rules(name);
    Ok(Pilot {
        number,
        dir,
        loaded,
        record,
    })
}

/// The pilot's sizing from its runs that stand: each headline figure's spread and the
/// repetitions the plan's smallest effect needs (`report::sizing`), written atomically as
/// `sizing.json` in its area, returned with that file's path; `None`, and nothing written, when no run stands (a refused
/// or interrupted pilot). `runs` are the scaled plan's, every one of them (which arms each
/// entry compares sets the level). A standing run that cannot be read is named in
/// `left_out`, never skipped in silence.
pub fn size(
    pilot: &Pilot,
    runs: &[RunSpec],
) -> Result<Option<(std::path::PathBuf, sizing::Sizing)>, StudyError> {
    let journal = crate::ledger::journal::read(&pilot.dir.join(crate::ledger::journal::FILE))?;
    let ledger = crate::ledger::state::Ledger::fold(journal.events());
    let mut left_out = Vec::new();
    let mut items = Vec::new();
    for (run, rel) in ledger.standing_dirs() {
        match crate::confine::inside(&pilot.dir, &rel) {
            Ok(path) => items.push((run, path)),
            Err(why) => left_out.push(format!("{run}: {why}")),
        }
    }
    let mut rows = Vec::new();
    for ((run, _), analysed) in items.iter().zip(analyse_all(&items, &mut |_, _, _| {})) {
        match analysed {
            Ok(figures) => rows.extend(figures.rows),
            Err(why) => left_out.push(format!("{run}: {why}")),
        }
    }
    let mut found = sizing::size(
        &sizing::Pilot {
            number: pilot.number,
            plan_hash: &pilot.record.plan_hash,
            plan: &pilot.loaded.plan,
            runs,
        },
        &rows,
    );
    found.left_out = left_out;
    if items.is_empty() {
        return Ok(None);
    }
    let mut json = serde_json::to_vec_pretty(&found)
        .map_err(|e| StudyError::Unfinished(format!("cannot write the pilot's sizing: {e}")))?;
    json.push(b'\n');
    let file = pilot.dir.join(PILOT_SIZING);
    feedbench_core::files::write_atomic(&file, &json)?;
    Ok(Some((file, found)))
}
