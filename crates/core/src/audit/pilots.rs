//! The study's pilots (`pilots/<NNN>/`, `feedbench pilot`), read for the audit's section
//! "exploration before registration": for each pilot its number, when it ran, its plan hash
//! and whether that is the registered one, its scale, and its runs' states from its own
//! journal. Pilot runs are never the study's runs and trip no check.
//!
//! A damaged area is reported, never followed: nothing under `pilots/` that is a symbolic
//! link is read (so nothing outside the study directory is), a file where a directory
//! should be, an unreadable record or journal are each a problem line naming the path.

use std::path::Path;

use serde::Serialize;

use super::history::{short, History};
use crate::ledger::journal::{self, Event, Journal};
use crate::ledger::pilot::{self, PilotRecord};
use crate::ledger::state::{Ledger, RunState};
use crate::plan::expand::RunIdParts;
use crate::plan::RunSpec;
use crate::rundir::layout::{pilot_number, PILOTS, PILOT_RECORD};

/// A pilot area as read from disk.
#[derive(Debug, Clone)]
pub struct PilotArea {
    /// Relative to the study directory, e.g. `pilots/003`.
    pub dir: String,
    pub number: Option<u32>,
    pub record: Option<PilotRecord>,
    pub journal: Journal,
    /// What could not be read, each naming its path.
    pub problems: Vec<String>,
}

/// Every pilot area of a study directory, and what under `pilots/` is not one.
#[derive(Debug, Clone, Default)]
pub struct PilotAreas {
    pub areas: Vec<PilotArea>,
    pub problems: Vec<String>,
}

/// Whether `path` is a symbolic link, said as a problem (never followed).
fn link(path: &Path, rel: &str) -> Option<String> {
    let m = std::fs::symlink_metadata(path).ok()?;
    m.file_type().is_symlink().then(|| {
        let to = std::fs::read_link(path)
            .map(|t| t.display().to_string())
            .unwrap_or_else(|_| "?".into());
        format!("`{rel}` is a symbolic link (to `{to}`); not followed")
    })
}

impl PilotAreas {
    /// Reads `<study>/pilots/`; never fails: what cannot be read is a problem line.
    pub fn read(study_dir: &Path) -> PilotAreas {
        let mut out = PilotAreas::default();
        let root = study_dir.join(PILOTS);
        let meta = match std::fs::symlink_metadata(&root) {
            Err(_) => return out,
            Ok(m) => m,
        };
        if let Some(p) = link(&root, PILOTS) {
            out.problems.push(p);
            return out;
        }
        if !meta.is_dir() {
            out.problems.push(format!(
                "`{PILOTS}` is not a directory; no pilot can be read"
            ));
            return out;
        }
        let entries = match std::fs::read_dir(&root) {
            Ok(e) => e,
            Err(e) => {
                out.problems
                    .push(format!("`{PILOTS}` cannot be listed: {e}"));
                return out;
            }
        };
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for name in names {
            let rel = format!("{PILOTS}/{name}");
            let path = root.join(&name);
            if let Some(p) = link(&path, &rel) {
                out.problems.push(p);
                continue;
            }
            let number = pilot_number(&name);
            let is_dir = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
            match (number, is_dir) {
                (Some(_), true) => out.areas.push(PilotArea::read(&path, rel, number)),
                (_, false) => out
                    .problems
                    .push(format!("`{rel}` is not a directory, so not a pilot area")),
                (None, true) => out.problems.push(format!(
                    "`{rel}` is not a pilot area: its name is not a pilot number such as `001`"
                )),
            }
        }
        out
    }
}

impl PilotArea {
    fn read(path: &Path, dir: String, number: Option<u32>) -> PilotArea {
        let mut problems = Vec::new();
        let record_rel = format!("{dir}/{PILOT_RECORD}");
        let record_path = path.join(PILOT_RECORD);
        let record = if let Some(p) = link(&record_path, &record_rel) {
            problems.push(p);
            None
        } else {
            match crate::confine::read(&record_path) {
                Ok(bytes) => match pilot::parse(&bytes) {
                    Ok(r) => Some(r),
                    Err(e) => {
                        problems.push(format!("`{record_rel}` does not read: {e}"));
                        None
                    }
                },
                Err(e) => {
                    problems.push(format!("`{record_rel}` cannot be read: {e}"));
                    None
                }
            }
        };
        let journal_rel = format!("{dir}/{}", journal::FILE);
        let journal_path = path.join(journal::FILE);
        let journal = if let Some(p) = link(&journal_path, &journal_rel) {
            problems.push(p);
            Journal::default()
        } else {
            match journal::read(&journal_path) {
                Ok(j) => j,
                Err(e) => {
                    problems.push(format!("`{journal_rel}` cannot be read: {}", e.source));
                    Journal::default()
                }
            }
        };
        for b in journal.undeclared_bad() {
            problems.push(b.at(&journal_rel));
        }
        for b in journal.disorder() {
            problems.push(b.at(&journal_rel));
        }
        PilotArea {
            dir,
            number,
            record,
            journal,
            problems,
        }
    }
}

/// One pilot, as the audit lists it.
#[derive(Debug, Clone, Serialize)]
pub struct Pilot {
    /// Relative to the study directory, e.g. `pilots/003`.
    pub dir: String,
    pub number: Option<u32>,
    /// The name its runs ran under, e.g. `smoke.pilot-3`.
    pub name: Option<String>,
    /// Its journal's first and last lines (or its record's creation), UTC.
    pub started: Option<String>,
    pub ended: Option<String>,
    pub plan_file: Option<String>,
    pub plan_hash: Option<String>,
    /// Whether its plan differed from the registered one (null when it cannot be told).
    pub differs_from_registered: Option<bool>,
    /// The plan file's git state when the pilot ran.
    pub git_commit: Option<String>,
    pub git_clean: Option<bool>,
    pub scale: Option<f64>,
    pub only: Option<String>,
    pub runs: PilotRuns,
    /// What could not be read, each naming its path.
    pub problems: Vec<String>,
}

/// A pilot's runs by state, from its own journal.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PilotRuns {
    pub selected: usize,
    /// Ran to their end: valid or invalid.
    pub completed: usize,
    pub valid: usize,
    pub invalid: usize,
    /// Aborted, interrupted, skipped or never started.
    pub not_completed: usize,
}

/// The section: every pilot, and what under `pilots/` is not one.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Exploration {
    pub pilots: Vec<Pilot>,
    pub problems: Vec<String>,
}

/// Unix ns as `YYYY-MM-DD HH:MM:SS UTC`.
pub fn utc(ns: u128) -> String {
    let secs = (ns / 1_000_000_000) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn wall(ns: &str) -> Option<String> {
    ns.parse::<u128>().ok().map(utc)
}

/// The runs a pilot was to run: its record's, or those its journal started.
fn specs(area: &PilotArea) -> Vec<RunSpec> {
    let pairs: Vec<(String, String)> = match &area.record {
        Some(r) => r
            .runs
            .iter()
            .map(|x| (x.run.clone(), x.run_hash.clone()))
            .collect(),
        None => {
            let mut seen: Vec<(String, String)> = Vec::new();
            for e in area.journal.events() {
                if let Event::RunStarted { run, run_hash, .. } = e {
                    seen.retain(|(r, _)| r != run);
                    seen.push((run.clone(), run_hash.clone()));
                }
            }
            seen
        }
    };
    pairs
        .into_iter()
        .map(|(id, run_hash)| {
            // The ledger's fold reads the id, the hash and the contender (whose gate may have
            // excluded it); the contender is read from the id as the fold reads journals, and
            // the other parts are the id's own, empty for one `run_id` cannot have made.
            let parts = RunIdParts::parse(&id);
            RunSpec {
                contender: RunIdParts::contender_of(&id).to_string(),
                profile: parts.map_or("", |p| p.profile).to_string(),
                fault: parts.and_then(|p| p.fault).map(str::to_string),
                repetition: parts.map_or(0, |p| p.repetition),
                depends_on: Vec::new(),
                estimated_duration_s: None,
                inputs: Vec::new(),
                id,
                run_hash,
            }
        })
        .collect()
}

fn runs(area: &PilotArea) -> PilotRuns {
    let specs = specs(area);
    let status = Ledger::fold(area.journal.events()).status(&specs);
    let valid = status
        .iter()
        .filter(|s| matches!(s.state, RunState::CompletedValid { .. }))
        .count();
    let invalid = status
        .iter()
        .filter(|s| matches!(s.state, RunState::Invalid { .. }))
        .count();
    PilotRuns {
        selected: specs.len(),
        completed: valid + invalid,
        valid,
        invalid,
        not_completed: specs.len() - valid - invalid,
    }
}

/// The section of the audit, from the areas read and the plan's history.
pub fn exploration(history: &History, areas: &PilotAreas) -> Exploration {
    let registered = history.registration().plan_hash.as_deref();
    let pilots = areas
        .areas
        .iter()
        .map(|a| {
            let r = a.record.as_ref();
            let plan_hash = r.map(|r| r.plan_hash.clone()).or_else(|| {
                a.journal.events().find_map(|e| match e {
                    Event::StudyStarted { plan_hash, .. } => Some(plan_hash.clone()),
                    _ => None,
                })
            });
            let first = a.journal.entries.first().map(|(_, e)| e.wall_ns.as_str());
            let last = a.journal.entries.last().map(|(_, e)| e.wall_ns.as_str());
            Pilot {
                dir: a.dir.clone(),
                number: a.number,
                name: r.map(|r| r.name.clone()),
                started: first
                    .or(r.map(|r| r.created_wall_ns.as_str()))
                    .and_then(wall),
                ended: last.and_then(wall),
                plan_file: r.map(|r| r.plan_file.clone()),
                differs_from_registered: match (&plan_hash, registered) {
                    (Some(p), Some(reg)) => Some(p != reg),
                    _ => None,
                },
                plan_hash,
                git_commit: r.and_then(|r| r.git.commit.clone()),
                git_clean: r.and_then(|r| r.git.clean),
                scale: r.map(|r| r.scale),
                only: r.and_then(|r| r.only.clone()),
                runs: runs(a),
                problems: a.problems.clone(),
            }
        })
        .collect();
    Exploration {
        pilots,
        problems: areas.problems.clone(),
    }
}

impl Pilot {
    /// One line of the Markdown section.
    pub fn line(&self) -> String {
        let number = self
            .number
            .map_or_else(|| self.dir.clone(), |n| format!("Pilot {n}"));
        let when = match (&self.started, &self.ended) {
            (Some(s), Some(e)) if s != e => format!("ran {s} to {e}"),
            (Some(s), _) => format!("ran {s}"),
            _ => "never started".into(),
        };
        let plan = match (&self.plan_hash, self.differs_from_registered) {
            (Some(h), Some(false)) => format!("plan hash `{}`, the registered plan", short(h)),
            (Some(h), Some(true)) => {
                format!("plan hash `{}`, not the registered plan", short(h))
            }
            (Some(h), None) => format!("plan hash `{}`", short(h)),
            (None, _) => "plan hash unknown".into(),
        };
        let git = match self.git_clean {
            Some(true) => ", committed",
            Some(false) => ", with uncommitted changes",
            None => "",
        };
        let scale = self
            .scale
            .map_or_else(|| "scale unknown".into(), |s| format!("scale {s}"));
        let only = self
            .only
            .as_deref()
            .map(|o| format!(", `--only {o}`"))
            .unwrap_or_default();
        let r = &self.runs;
        let mut s = format!(
            "{number} (`{}`): {when}; {plan}{git}; {scale}{only}; {} run(s): {} completed, {} valid, {} invalid, {} not completed.",
            self.dir, r.selected, r.completed, r.valid, r.invalid, r.not_completed
        );
        for p in &self.problems {
            s.push_str(&format!(" Unreadable: {p}."));
        }
        s
    }
}

#[cfg(test)]
mod tests;
