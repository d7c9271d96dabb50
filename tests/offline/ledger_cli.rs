//! The ledger's commands without the engine: what `run` refuses before it deploys anything
//! (an uncommitted plan, a study with results and no --resume, a plan changed under
//! completed runs, an --amend with nothing to amend), and `status`, `skip` and `invalidate`
//! over a journal written with the ledger's own writer.

use std::path::PathBuf;

use super::common;
use assert_cmd::Command;
use feedbench::ledger::journal::{self, Event, Writer};
use feedbench::plan::{load_file, RunSpec};

struct Study {
    dir: tempfile::TempDir,
    plan: PathBuf,
    plan_hash: String,
    runs: Vec<RunSpec>,
}

impl Study {
    /// minimal.yaml in a temporary directory (not in git), with results beside it.
    fn new() -> Study {
        let dir = tempfile::tempdir().unwrap();
        let plan = dir.path().join("plan.yaml");
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        std::fs::copy(root.join("tests/plans/valid/minimal.yaml"), &plan).unwrap();
        let loaded = load_file(&plan, None).unwrap();
        let runs = feedbench_core::inputs::runs_now(&loaded).unwrap();
        Study {
            dir,
            plan,
            plan_hash: loaded.plan_hash,
            runs,
        }
    }

    fn results(&self) -> PathBuf {
        self.dir.path().join("results")
    }

    fn study(&self) -> PathBuf {
        self.results().join("tiny")
    }

    /// Journals a study start and `n` completed runs, each with a sealed directory.
    fn completed(&self, n: usize) {
        std::fs::create_dir_all(self.study()).unwrap();
        let mut w = Writer::open(&self.study().join(journal::FILE)).unwrap();
        w.append(Event::StudyStarted {
            plan_file: "plan.yaml".into(),
            plan_hash: self.plan_hash.clone(),
            feedbench_version: "test".into(),
            git_commit: None,
            git_clean: None,
            resume: false,
            runs_planned: self.runs.len(),
            runs_to_do: Vec::new(),
        })
        .unwrap();
        for r in &self.runs[..n] {
            let dir = format!("runs/{}", r.id.replace(['/', '+'], "_"));
            w.append(Event::RunStarted {
                run: r.id.clone(),
                run_hash: r.run_hash.clone(),
                attempt: 1,
                dir: dir.clone(),
            })
            .unwrap();
            let path = self.study().join(&dir);
            std::fs::create_dir_all(&path).unwrap();
            std::fs::write(path.join("requests.csv"), "start_ns\n1\n").unwrap();
            w.append(Event::RunFinished {
                run: r.id.clone(),
                run_hash: r.run_hash.clone(),
                attempt: 1,
                dir,
                objective: None,
                cleanup_ok: true,
            })
            .unwrap();
        }
    }

    fn feedbench(&self, args: &[&str]) -> (i32, String, String) {
        let out = Command::cargo_bin("feedbench")
            .unwrap()
            .current_dir(self.dir.path())
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn events(&self) -> Vec<Event> {
        journal::read(&self.study().join(journal::FILE))
            .unwrap()
            .events()
            .cloned()
            .collect()
    }
}

#[test]
fn a_plan_outside_git_is_refused_unless_allowed() {
    let s = Study::new();
    let (code, _, err) = s.feedbench(&["run", "plan.yaml", "--results", "results"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is not in a git repository"), "{err}");
    assert!(err.contains("--allow-uncommitted"), "{err}");
    assert!(!s.results().exists(), "nothing is written");
}

#[test]
fn a_study_with_results_needs_resume() {
    let s = Study::new();
    s.completed(1);
    let before = std::fs::read(s.study().join(journal::FILE)).unwrap();
    let (code, _, err) = s.feedbench(&[
        "run",
        "plan.yaml",
        "--results",
        "results",
        "--allow-uncommitted",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--resume"), "{err}");
    assert_eq!(
        std::fs::read(s.study().join(journal::FILE)).unwrap(),
        before
    );
}

#[test]
fn a_changed_plan_is_refused_naming_amend_and_the_touched_runs() {
    let s = Study::new();
    s.completed(2);
    let text = std::fs::read_to_string(&s.plan).unwrap();
    std::fs::write(
        &s.plan,
        text.replace("step-duration: 10s, max: 30", "step-duration: 10s, max: 40"),
    )
    .unwrap();
    let (code, _, err) = s.feedbench(&[
        "run",
        "plan.yaml",
        "--results",
        "results",
        "--allow-uncommitted",
        "--resume",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--amend"), "{err}");
    // The ramp changed, and with it the baseline, whose run hash includes the ramp's.
    assert!(
        err.contains("svc/ramp/r1 (its definition changed)"),
        "{err}"
    );
    assert!(
        err.contains("svc/baseline+db-cut/r1 (its definition changed)"),
        "{err}"
    );
    assert_eq!(s.events().len(), 5, "nothing is journalled");
}

#[test]
fn amend_with_nothing_changed_is_refused() {
    let s = Study::new();
    s.completed(1);
    let (code, _, err) = s.feedbench(&[
        "run",
        "plan.yaml",
        "--results",
        "results",
        "--allow-uncommitted",
        "--amend",
        "x",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("nothing to amend"), "{err}");
}

#[test]
fn status_lists_every_planned_run_with_counts() {
    let s = Study::new();
    s.completed(2);
    let (code, out, err) = s.feedbench(&["status", "plan.yaml"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("svc/ramp/r1"), "{out}");
    assert!(out.contains("2 completed valid, 4 not run"), "{out}");
    let (code, out, _) = s.feedbench(&["status", "plan.yaml", "--format", "json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["format_version"], 1);
    assert_eq!(v["runs"].as_array().unwrap().len(), 6);
    assert_eq!(v["runs"][0]["state"], "completed-valid");
    assert_eq!(v["counts"]["not run"], 4);
    // Where the time went: the parts add up to the whole.
    let t = &v["time"];
    let parts: f64 = [
        "gates_s",
        "deploy_s",
        "warmup_s",
        "measuring_s",
        "teardown_s",
        "settling_s",
        "waiting_s",
    ]
    .iter()
    .map(|k| t[k].as_f64().unwrap())
    .sum();
    assert!((parts - t["total_s"].as_f64().unwrap()).abs() < 1e-6, "{t}");
}

#[test]
fn a_person_invalidates_a_completed_run_and_skips_one_not_run() {
    let s = Study::new();
    s.completed(1);
    let (code, _, err) = s.feedbench(&[
        "invalidate",
        "svc/ramp/r1",
        "--reason",
        "host was swapping",
        "--plan",
        "plan.yaml",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(!s.study().join("runs/svc_ramp_r1").exists());
    assert!(s
        .study()
        .join("_invalid_by-person/svc_ramp_r1/requests.csv")
        .exists());
    assert!(matches!(
        s.events().last().unwrap(),
        Event::RunInvalidated { run, reason, dir, .. }
            if run == "svc/ramp/r1" && reason == "host was swapping" && dir == "_invalid_by-person/svc_ramp_r1"
    ));
    // Not twice, and a run not run cannot be invalidated, nor a completed one skipped.
    let (code, _, err) = s.feedbench(&[
        "invalidate",
        "svc/ramp/r1",
        "--reason",
        "x",
        "--plan",
        "plan.yaml",
    ]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = s.feedbench(&[
        "skip",
        "svc/ramp/r2",
        "--reason",
        "out of time",
        "--plan",
        "plan.yaml",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        matches!(s.events().last().unwrap(), Event::RunSkipped { run, .. } if run == "svc/ramp/r2")
    );
    let (code, _, err) = s.feedbench(&[
        "skip",
        "svc/ramp/r2",
        "--reason",
        "again",
        "--plan",
        "plan.yaml",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is skipped"), "{err}");
    let (code, _, err) = s.feedbench(&[
        "skip",
        "svc/nope/r1",
        "--reason",
        "x",
        "--plan",
        "plan.yaml",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("has no run `svc/nope/r1`"), "{err}");
    let (_, out, _) = s.feedbench(&["status", "plan.yaml"]);
    assert!(out.contains("1 invalid, 4 not run, 1 skipped"), "{out}");
}

#[test]
#[ignore = "needs the Docker engine: the caps are held against its host's cores"]
fn caps_beyond_the_host_are_refused_before_anything_is_recorded() {
    let s = Study::new();
    s.completed(1);
    let text = std::fs::read_to_string(&s.plan).unwrap();
    std::fs::write(
        &s.plan,
        text.replace("replica: {cpus: 0.25,", "replica: {cpus: 64,"),
    )
    .unwrap();
    let before = std::fs::read(s.study().join(journal::FILE)).unwrap();
    let (code, _, err) = s.feedbench(&[
        "run",
        "plan.yaml",
        "--results",
        "results",
        "--allow-uncommitted",
        "--no-build",
        "--amend",
        "bigger replicas",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("allow-oversubscription"), "{err}");
    assert_eq!(
        std::fs::read(s.study().join(journal::FILE)).unwrap(),
        before,
        "neither the amendment nor anything else is journalled"
    );
}

/// Invalidating a ramp by hand sets aside the baseline that took its rate from the ramp's
/// saturation: moved to `_superseded/` and journalled, never silently kept.
#[test]
fn invalidating_a_ramp_supersedes_the_runs_that_took_its_rate() {
    let s = Study::new();
    s.completed(2);
    assert!(s.study().join("runs/svc_baseline_db-cut_r1").exists());
    let (code, _, err) = s.feedbench(&[
        "invalidate",
        "svc/ramp/r1",
        "--reason",
        "the load generator was the bottleneck",
        "--plan",
        "plan.yaml",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("recorded: deviation: svc/baseline+db-cut/r1 superseded: `svc/ramp/r1`"),
        "{err}"
    );
    assert!(!s.study().join("runs/svc_baseline_db-cut_r1").exists());
    assert!(s
        .study()
        .join("_superseded/svc_baseline_db-cut_r1/requests.csv")
        .exists());
    assert!(matches!(
        s.events().last().unwrap(),
        Event::RunSupersededByDependency { run, dependency, reason, dir, .. }
            if run == "svc/baseline+db-cut/r1"
                && dependency == "svc/ramp/r1"
                && reason == "the load generator was the bottleneck"
                && dir == "_superseded/svc_baseline_db-cut_r1"
    ));
    let (_, out, _) = s.feedbench(&["status", "plan.yaml"]);
    assert!(out.contains("1 invalid, 4 not run, 1 superseded"), "{out}");
    assert!(
        out.contains("`svc/ramp/r1`, which it took a figure from, was set aside"),
        "{out}"
    );
    // The second repetition's results are untouched.
    let (code, _, err) = s.feedbench(&[
        "skip",
        "svc/ramp/r2",
        "--reason",
        "out of time",
        "--plan",
        "plan.yaml",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("superseded"), "{err}");
}

/// A journal that names a dependent result's directory outside the study: invalidating the
/// ramp it depends on is refused whole, before anything moves.
#[test]
fn a_dependents_directory_outside_the_study_refuses_the_decision_before_anything_moves() {
    let s = Study::new();
    s.completed(2);
    let outside = s.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("keep"), "not the study's").unwrap();
    let path = s.study().join(journal::FILE);
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "\"dir\":\"runs/svc_baseline_db-cut_r1\"",
        "\"dir\":\"../../outside\"",
    );
    assert!(text.contains("../../outside"));
    std::fs::write(&path, common::journal::rechained(&text)).unwrap();
    let (code, _, err) = s.feedbench(&[
        "invalidate",
        "svc/ramp/r1",
        "--reason",
        "x",
        "--plan",
        "plan.yaml",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("which takes a figure from `svc/ramp/r1`"),
        "{err}"
    );
    assert!(s.study().join("runs/svc_ramp_r1").exists());
    assert!(outside.join("keep").exists());
}

/// A journal that names a run's directory outside the study: a resume, which would move
/// it (an unsettled run aside, a superseded result to `_superseded/`), refuses before
/// anything moves or is written.
#[test]
fn a_resume_never_moves_a_directory_the_journal_places_outside_the_study() {
    for (event, what) in [
        ("run-finished", "a standing result"),
        ("run-started", "an unsettled run"),
    ] {
        let s = Study::new();
        s.completed(1);
        let outside = s.dir.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("keep"), "not the study's").unwrap();
        let path = s.study().join(journal::FILE);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<String> = text
            .lines()
            .map(|l| {
                if l.contains(&format!("\"event\":\"{event}\"")) {
                    l.replace("\"dir\":\"runs/svc_ramp_r1\"", "\"dir\":\"../../outside\"")
                } else if event == "run-started" && l.contains("\"event\":\"run-finished\"") {
                    String::new()
                } else {
                    l.to_string()
                }
            })
            .filter(|l| !l.is_empty())
            .collect();
        std::fs::write(
            &path,
            common::journal::rechained(&(lines.join("\n") + "\n")),
        )
        .unwrap();
        let before = std::fs::read(&path).unwrap();
        let (code, _, err) = s.feedbench(&[
            "run",
            "plan.yaml",
            "--resume",
            "--allow-uncommitted",
            "--no-build",
        ]);
        assert_eq!(code, 2, "{what}: {err}");
        assert!(
            err.contains("names `../../outside` as the directory of `svc/ramp/r1`"),
            "{what}: {err}"
        );
        assert!(outside.join("keep").exists(), "{what}");
        assert_eq!(
            std::fs::read(&path).unwrap(),
            before,
            "{what}: the journal was written"
        );
    }
}
