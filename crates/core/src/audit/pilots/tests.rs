//! Pilot areas written with the ledger's own writers, then damaged one way at a time: the
//! audit lists each pilot apart from the study's runs, reports what it cannot read with its
//! path, never follows a link out of the study directory, and the study's audit still works.

use super::*;
use crate::audit::check::audit;
use crate::audit::fixture::Fixture;
use crate::audit::history::{PlanVersion, Rev};
use crate::audit::study::StudyFiles;
use crate::git::Commit;
use crate::ledger::manifest::Git;

const PLAN: &str = include_str!("../../../../../tests/plans/valid/minimal.yaml");

fn history() -> History {
    let rev = Rev::Commit(Commit {
        hash: format!("{:040x}", 1),
        date: "2026-12-01T00:00:00+00:00".into(),
        subject: "register".into(),
    });
    History {
        plan_file: "experiments/p.yaml".into(),
        versions: vec![PlanVersion::from_text(rev, "p.yaml", PLAN)],
    }
}

fn git(clean: bool) -> Git {
    Git {
        commit: Some(format!("{:040x}", 1)),
        path: Some("experiments/p.yaml".into()),
        clean: Some(clean),
    }
}

/// A study directory `tiny` with no run of its own, and two pilots: the first of the
/// registered plan at 0.25 (one run valid, one invalid), the second of an edited,
/// uncommitted plan at 0.5 that never finished its run.
fn two_pilots(d: &Path) -> (History, std::path::PathBuf) {
    let h = history();
    let v = h.registration();
    let study = d.join("tiny");
    let runs: Vec<RunSpec> = v.runs.iter().take(2).cloned().collect();
    let mut p = Fixture::pilot(
        &study,
        "tiny",
        "experiments/p.yaml",
        v.plan_hash.as_deref().unwrap(),
        git(true),
        &runs,
        0.25,
        Some("svc/*/r1"),
    )
    .unwrap();
    p.complete(&runs[0]).unwrap();
    p.complete(&runs[1]).unwrap();
    p.invalidate(&runs[1], "fault-proxy CPU", Vec::new())
        .unwrap();
    let mut p = Fixture::pilot(
        &study,
        "tiny",
        "experiments/p.yaml",
        &"e".repeat(64),
        git(false),
        &runs[..1],
        0.5,
        None,
    )
    .unwrap();
    p.append(Event::RunStarted {
        run: runs[0].id.clone(),
        run_hash: runs[0].run_hash.clone(),
        attempt: 1,
        dir: "runs/svc_ramp_r1".into(),
    })
    .unwrap();
    (h, study)
}

#[test]
fn pilots_are_listed_apart_and_trip_nothing() {
    let d = tempfile::tempdir().unwrap();
    let (h, study) = two_pilots(d.path());
    let files = StudyFiles::read(&study).unwrap();
    let r = audit(&h, &files, "results/tiny");
    // The study proper: no run of its own, every planned run a gap, nothing undeclared.
    assert!(r.summary.passed, "{}", r.markdown());
    assert_eq!(r.summary.completed_valid, 0);
    assert_eq!(r.summary.gaps, 1, "{}", r.markdown());
    assert!(r.runs.iter().all(|s| s.attempts == 0));
    assert!(files.run_dirs.is_empty());
    let x = &r.exploration;
    assert!(x.problems.is_empty(), "{:?}", x.problems);
    assert_eq!(x.pilots.len(), 2);
    let (a, b) = (&x.pilots[0], &x.pilots[1]);
    assert_eq!((a.number, a.dir.as_str()), (Some(1), "pilots/001"));
    assert_eq!(a.name.as_deref(), Some("tiny.pilot-1"));
    assert_eq!(a.differs_from_registered, Some(false));
    assert_eq!(a.scale, Some(0.25));
    assert_eq!(a.only.as_deref(), Some("svc/*/r1"));
    assert_eq!(
        (
            a.runs.selected,
            a.runs.completed,
            a.runs.valid,
            a.runs.invalid,
            a.runs.not_completed
        ),
        (2, 2, 1, 1, 0)
    );
    assert!(a.started.as_deref().is_some_and(|s| s.ends_with(" UTC")));
    assert_eq!((b.number, b.differs_from_registered), (Some(2), Some(true)));
    assert_eq!(b.git_clean, Some(false));
    assert_eq!((b.runs.selected, b.runs.not_completed), (1, 1));
    let md = r.markdown();
    assert!(
        md.contains("\n### Exploration before registration\n"),
        "{md}"
    );
    assert!(md.contains("- Pilot 1 (`pilots/001`): ran "), "{md}");
    assert!(md.contains("the registered plan, committed; scale 0.25, `--only svc/*/r1`; 2 run(s): 2 completed, 1 valid, 1 invalid, 0 not completed."), "{md}");
    assert!(md.contains("`eeeeeeeeeeee`, not the registered plan, with uncommitted changes; scale 0.5; 1 run(s): 0 completed, 0 valid, 0 invalid, 1 not completed."), "{md}");
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["exploration"]["pilots"][0]["runs"]["valid"], 1);
}

#[test]
fn a_study_without_pilots_has_no_section() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("tiny")).unwrap();
    let r = audit(
        &history(),
        &StudyFiles::read(&d.path().join("tiny")).unwrap(),
        "results/tiny",
    );
    assert!(r.exploration.pilots.is_empty() && r.exploration.problems.is_empty());
    assert!(!r.markdown().contains("Exploration"));
}

#[test]
fn damaged_areas_are_reported_with_their_path_and_never_followed() {
    let d = tempfile::tempdir().unwrap();
    let (h, study) = two_pilots(d.path());
    let pilots = study.join(PILOTS);
    // Outside the study directory: a pilot area a link would lead to.
    let outside = d.path().join("elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join(PILOT_RECORD), "{\"format_version\": 1}").unwrap();
    std::os::unix::fs::symlink(&outside, pilots.join("003")).unwrap();
    // A file where an area should be; a directory that is no pilot number.
    std::fs::write(pilots.join("004"), "").unwrap();
    std::fs::create_dir(pilots.join("notes")).unwrap();
    // Pilot 1's journal replaced by a directory; pilot 2's record by a link outside.
    let j1 = pilots.join("001").join(journal::FILE);
    std::fs::remove_file(&j1).unwrap();
    std::fs::create_dir(&j1).unwrap();
    let r2 = pilots.join("002").join(PILOT_RECORD);
    std::fs::remove_file(&r2).unwrap();
    std::os::unix::fs::symlink(outside.join(PILOT_RECORD), &r2).unwrap();
    // A pilot with a record that does not parse and a torn journal.
    let five = pilots.join("005");
    std::fs::create_dir(&five).unwrap();
    std::fs::write(five.join(PILOT_RECORD), "{not json").unwrap();
    std::fs::write(five.join(journal::FILE), "{\"format_version\"").unwrap();

    let r = audit(&h, &StudyFiles::read(&study).unwrap(), "results/tiny");
    assert!(r.summary.passed, "{}", r.markdown());
    let x = &r.exploration;
    let all: Vec<&String> = x
        .problems
        .iter()
        .chain(x.pilots.iter().flat_map(|p| &p.problems))
        .collect();
    let has = |needle: &str| all.iter().any(|p| p.contains(needle));
    assert!(has("`pilots/003` is a symbolic link"), "{all:?}");
    assert!(has("`pilots/004` is not a directory"), "{all:?}");
    assert!(has("`pilots/notes` is not a pilot area"), "{all:?}");
    assert!(has("`pilots/001/journal.jsonl` cannot be read"), "{all:?}");
    assert!(has("`pilots/002/pilot.json` is a symbolic link"), "{all:?}");
    assert!(has("`pilots/005/pilot.json` does not read"), "{all:?}");
    assert!(
        has("`pilots/005/journal.jsonl` line 1 does not parse"),
        "{all:?}"
    );
    assert_eq!(
        x.pilots.iter().map(|p| p.dir.as_str()).collect::<Vec<_>>(),
        ["pilots/001", "pilots/002", "pilots/005"]
    );
    // Pilot 2 still counts its run from its journal, without its record.
    let two = &x.pilots[1];
    assert_eq!((two.scale, two.runs.selected), (None, 1));
    assert!(r
        .markdown()
        .contains("Unreadable: `pilots/003` is a symbolic link"));

    // `pilots` itself a link out, or a file: one line, and the study's audit stands.
    std::fs::rename(&pilots, d.path().join("moved")).unwrap();
    std::os::unix::fs::symlink(d.path().join("moved"), &pilots).unwrap();
    let r = audit(&h, &StudyFiles::read(&study).unwrap(), "results/tiny");
    assert!(r.exploration.pilots.is_empty());
    assert!(r.exploration.problems[0].starts_with("`pilots` is a symbolic link"));
    std::fs::remove_file(&pilots).unwrap();
    std::fs::write(&pilots, "").unwrap();
    let r = audit(&h, &StudyFiles::read(&study).unwrap(), "results/tiny");
    assert_eq!(
        r.exploration.problems,
        ["`pilots` is not a directory; no pilot can be read"]
    );
    assert!(r.summary.passed);
}

#[test]
fn times_are_utc() {
    assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
    assert_eq!(utc(1_796_083_200_000_000_000), "2026-12-01 00:00:00 UTC");
    assert_eq!(utc(951_827_696_000_000_000), "2000-02-29 12:34:56 UTC");
}
