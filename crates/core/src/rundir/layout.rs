//! Where things are under `results/<study>/`: the journal, the lock, gate logs, `runs/<run>/`
//! for runs that stand, and the areas runs are moved to when they do not
//! (`_invalid_<reason>/`, `_interrupted/`, `_aborted/`, `_superseded/`). Nothing is deleted
//! or overwritten: a name already taken gets `.2`, `.3`… (`unused`, read back by
//! `is_copy_of`). Paths in the journal are relative to the study directory. A pilot's area,
//! `pilots/<NNN>/`, is laid out as a study directory, with its record and its plan's copy.

use std::path::{Path, PathBuf};

pub use crate::files::{is_copy_of, unused};
use crate::plan::expand::run_slug;

/// The study's journal (`ledger::journal`).
pub const JOURNAL: &str = "journal.jsonl";
/// Held by the one feedbench command working on the study.
pub const LOCK: &str = ".lock";
/// Gate outputs, one file per contender and gate run.
pub const GATES: &str = "gates";
pub const RUNS: &str = "runs";
pub const INTERRUPTED: &str = "_interrupted";
pub const ABORTED: &str = "_aborted";
pub const SUPERSEDED: &str = "_superseded";
/// The study's pilots (`feedbench pilot`), one area each, apart from the study's own runs
/// (not `_…`: the audit reads every `_…` directory as a study's run area).
pub const PILOTS: &str = "pilots";
/// A pilot area's record: what ran, from which plan, at which scale (`ledger::pilot`).
pub const PILOT_RECORD: &str = "pilot.json";
/// A pilot area's copy of the plan file as it was when the pilot ran.
pub const PILOT_PLAN: &str = "plan.yaml";
/// A pilot area's sizing: each headline figure's spread and the repetitions it calls for
/// (`report::sizing`), written when its runs are done.
pub const PILOT_SIZING: &str = "sizing.json";

/// A study's directory, `results/<study>/`, under the results directory: the one place the
/// two are put together (tests/offline/honest_paths.rs holds every other to it).
pub fn study_dir(results: &Path, study: &str) -> PathBuf {
    results.join(study)
}

/// The area of pilot `n` of the study in `study`: `pilots/003/`.
pub fn pilot_dir(study: &Path, n: u32) -> PathBuf {
    study.join(PILOTS).join(format!("{n:03}"))
}

/// The sizing of pilot `n` of the study in `study`: `pilots/003/sizing.json`.
pub fn pilot_sizing(study: &Path, n: u32) -> PathBuf {
    pilot_dir(study, n).join(PILOT_SIZING)
}

/// The pilot number an area's directory name spells (`003` → 3), if it spells one.
pub fn pilot_number(name: &str) -> Option<u32> {
    if name.len() >= 3 && name.bytes().all(|b| b.is_ascii_digit()) {
        name.parse().ok().filter(|&n| n > 0)
    } else {
        None
    }
}

/// The name pilot `n` of `study` runs under (its containers, network and labels):
/// `<study>.pilot-<n>`. A plan's study name has no `.`, so no study's own runs, and no
/// other study's, can ever carry it.
pub fn pilot_study(study: &str, n: u32) -> String {
    format!("{study}.pilot-{n}")
}

/// The directory of a run that stands (or is under way).
pub fn run_dir(study: &Path, run: &str) -> PathBuf {
    study.join(RUNS).join(run_slug(run))
}

/// The area an invalid run is moved to; the reason is made a safe directory name.
pub fn invalid_area(reason: &str) -> String {
    let slug: String = reason
        .chars()
        .map(|c| match c {
            'a'..='z' | '0'..='9' | '-' => c,
            'A'..='Z' => c.to_ascii_lowercase(),
            _ => '-',
        })
        .collect();
    format!("_invalid_{}", slug.trim_matches('-'))
}

/// Where a run's directory goes in `area`.
pub fn aside(study: &Path, area: &str, run: &str) -> PathBuf {
    study.join(area).join(run_slug(run))
}

/// Where the output of `contender`'s gate goes: `gates/<contender>.log`, or `.log.2`… when
/// the gate ran before.
pub fn gate_log(study: &Path, contender: &str) -> PathBuf {
    unused(&study.join(GATES).join(format!("{contender}.log")))
}

/// `path` relative to the study directory, with `/`, for the journal.
pub fn relative(study: &Path, path: &Path) -> String {
    path.strip_prefix(study)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn areas_are_safe_names() {
        assert_eq!(invalid_area("fault-proxy CPU"), "_invalid_fault-proxy-cpu");
        assert_eq!(invalid_area("by person: x/y"), "_invalid_by-person--x-y");
        let s = Path::new("/r/smoke");
        assert_eq!(
            relative(s, &run_dir(s, "feed-rs/ramp/r1")),
            "runs/feed-rs_ramp_r1"
        );
    }

    #[test]
    fn pilot_areas_are_numbered_apart_from_the_runs() {
        let s = Path::new("/r/smoke");
        assert_eq!(relative(s, &pilot_dir(s, 3)), "pilots/003");
        assert_eq!(relative(s, &pilot_dir(s, 1234)), "pilots/1234");
        assert_eq!(pilot_number("003"), Some(3));
        assert_eq!(pilot_number("1234"), Some(1234));
        for name in ["3", "03", "000", "00a", "", "003.2", "-01"] {
            assert_eq!(pilot_number(name), None, "{name}");
        }
        assert_eq!(pilot_study("smoke", 3), "smoke.pilot-3");
        assert!(pilot_study("smoke", 3)
            .parse::<crate::plan::units::Name>()
            .is_err());
        assert!(!PILOTS.starts_with('_') && PILOTS != RUNS);
    }

    #[test]
    fn copies_are_numbered_and_recognised() {
        let d = tempfile::tempdir().unwrap();
        let first = unused(&d.path().join("a_b_r1"));
        assert_eq!(first, d.path().join("a_b_r1"));
        std::fs::create_dir(&first).unwrap();
        let second = unused(&first);
        assert_eq!(second, d.path().join("a_b_r1.2"));
        std::fs::create_dir(&second).unwrap();
        assert_eq!(unused(&first), d.path().join("a_b_r1.3"));
        for name in ["a_b_r1", "a_b_r1.2", "a_b_r1.17"] {
            assert!(is_copy_of(name, "a_b_r1"), "{name}");
        }
        for name in ["a_b_r10", "a_b_r1.", "a_b_r1.x", "a_b_r1.1", "a_b_r"] {
            assert!(!is_copy_of(name, "a_b_r1"), "{name}");
        }
        std::fs::create_dir(d.path().join(GATES)).unwrap();
        std::fs::write(d.path().join(GATES).join("feed-rs.log"), "").unwrap();
        assert_eq!(
            gate_log(d.path(), "feed-rs"),
            d.path().join(GATES).join("feed-rs.log.2")
        );
    }
}
