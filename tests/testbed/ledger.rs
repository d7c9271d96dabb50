//! The study ledger on the real engine: feedbench SIGKILLed at five moments and resumed each
//! time, then the study audited (clean, then with raw data edited, a plan edit undeclared
//! and declared, a run directory deleted); a starved fault proxy that invalidates its run; a
//! cap edited after runs completed (refused until declared with --amend, then exactly the
//! touched runs rerun); a contender whose gate fails excluded while its sound arm's gate
//! passes and the study goes on.

use crate::common;
use common::audit::{audit, Repo};

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use feedbench::ledger::journal::{self, Event};
use feedbench::ledger::manifest::{verify, Manifest};
use feedbench::ledger::state::Ledger;

/// The ledger plan: the study of the five kills and of the audits after them, and the
/// base of the derived plans.
const LEDGER: &str = "tests/plans/docker/ledger.yaml";

fn feedbench(plan: &Path, results: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_feedbench"));
    c.current_dir(common::repo())
        .arg("run")
        .arg(plan)
        .args([
            "--no-build",
            "--allow-uncommitted",
            "--format",
            "json",
            "--results",
        ])
        .arg(results)
        .args(extra);
    c
}

/// `feedbench run` of the ledger plan as registered in `repo` (committed there with the
/// project's contenders and images, run from it), its results under the repository's
/// `results/`.
fn registered(repo: &Repo, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_feedbench"));
    c.current_dir(repo.path(""))
        .args(["run", LEDGER, "--no-build", "--format", "json"])
        .args(["--results", "results"])
        .args(extra);
    c
}

/// Runs `command` and SIGKILLs it at the first stdout line `moment` accepts. Returns
/// whether it was killed (false: it ended first).
fn kill_at(mut command: Command, moment: &dyn Fn(&serde_json::Value) -> bool) -> bool {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    for line in out.lines() {
        let Ok(line) = line else { break };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        if moment(&v) {
            child.kill().unwrap(); // SIGKILL: no handler, no cleanup
            child.wait().unwrap();
            return true;
        }
    }
    child.wait().unwrap();
    false
}

fn journal_of(study: &Path) -> journal::Journal {
    journal::read(&study.join(journal::FILE)).unwrap()
}

fn status(plan: &Path, results: &Path) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_feedbench"))
        .current_dir(common::repo())
        .arg("status")
        .arg(plan)
        .args(["--format", "json", "--results"])
        .arg(results)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn event_is(v: &serde_json::Value, name: &str) -> bool {
    v["event"] == name
}

fn assert_sealed(dir: &Path) {
    let m = Manifest::read(dir)
        .unwrap()
        .unwrap_or_else(|| panic!("{} has no manifest", dir.display()));
    assert!(verify(dir, &m).unwrap().is_empty(), "{}", dir.display());
}

/// The study is registered in a git repository of its own, so that `feedbench audit` can
/// then judge what the kills and resumes left against the committed plan
/// (`audit_the_study_the_kills_left`).
pub fn killed_at_five_moments_and_resumed_every_run_completes_exactly_once() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let engine = rt.block_on(common::engine());
    rt.block_on(common::plan_images(LEDGER));
    let repo = Repo::new();
    repo.copy_project_dirs(&["contenders", "images"]);
    repo.write(".gitignore", "/results/\n");
    let text = std::fs::read_to_string(common::repo().join(LEDGER)).unwrap();
    repo.write(LEDGER, &text);
    repo.commit("register the study");
    let plan = repo.path(LEDGER);
    let results = repo.path("results");
    let study = results.join("test-ledger");

    type Moment = (&'static str, Box<dyn Fn(&serde_json::Value) -> bool>);
    let moments: Vec<Moment> = vec![
        (
            "deploy",
            Box::new(|v| event_is(v, "phase") && v["phase"] == "deploy"),
        ),
        ("load", Box::new(|v| event_is(v, "load-started"))),
        ("fault", Box::new(|v| event_is(v, "fault-applied"))),
        (
            "teardown",
            Box::new(|v| event_is(v, "phase") && v["phase"] == "teardown"),
        ),
        (
            "between runs",
            Box::new(|v| v["journal"]["event"] == "run-finished"),
        ),
    ];
    let mut hit_a_run = 0;
    for (i, (name, moment)) in moments.iter().enumerate() {
        let extra: &[&str] = if i == 0 { &[] } else { &["--resume"] };
        assert!(
            kill_at(registered(&repo, extra), moment.as_ref()),
            "never reached {name}"
        );
        // Whether the kill hit a run: a run started and not settled.
        let open = Ledger::fold(journal_of(&study).events()).open_runs();
        assert!(open.len() <= 1, "{open:?}");
        hit_a_run += open.len();
        if *name != "between runs" {
            assert_eq!(open.len(), 1, "the kill at {name} hit no run");
        }
        // Without --resume the study is never touched.
        let refused = registered(&repo, &[]).output().unwrap();
        assert_eq!(refused.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&refused.stderr).contains("--resume"));
    }
    let last = registered(&repo, &["--resume"]).output().unwrap();
    assert!(
        last.status.success(),
        "{}",
        String::from_utf8_lossy(&last.stderr)
    );

    let j = journal_of(&study);
    assert!(j.undeclared_bad().is_empty(), "{:?}", j.undeclared_bad());
    let finished: Vec<&str> = j
        .events()
        .filter_map(|e| match e {
            Event::RunFinished { run, .. } => Some(run.as_str()),
            _ => None,
        })
        .collect();
    let mut once = finished.clone();
    once.sort();
    once.dedup();
    assert_eq!(finished.len(), 3, "{finished:?}");
    assert_eq!(once.len(), 3, "a run completed twice: {finished:?}");
    let interrupted = j
        .events()
        .filter(|e| matches!(e, Event::RunInterrupted { .. }))
        .count();
    assert_eq!(interrupted, hit_a_run);
    assert!(hit_a_run >= 4);

    let s = status(&plan, &results);
    assert_eq!(s["counts"]["completed valid"], 3, "{s:#}");
    // Where the study's time went, from the journal and the runs' events: every completed
    // run measured 16 s (of which the runs killed mid-run measured some more).
    let t = &s["time"];
    assert!(t["measuring_s"].as_f64().unwrap() >= 3.0 * 15.0, "{t}");
    assert!(
        t["deploy_s"].as_f64().unwrap() > 0.0 && t["teardown_s"].as_f64().unwrap() > 0.0,
        "{t}"
    );
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
    // On failure, the journal and each run directory's phases say which window overlaps.
    let explain = || {
        let journal = std::fs::read_to_string(study.join("journal.jsonl")).unwrap_or_default();
        let mut phases = String::new();
        for area in ["runs", "_interrupted"] {
            for e in std::fs::read_dir(study.join(area))
                .into_iter()
                .flatten()
                .flatten()
            {
                phases.push_str(&format!(
                    "{area}/{}: {:?}\n",
                    e.file_name().to_string_lossy(),
                    feedbench_core::ledger::hours::phases_in(&e.path())
                ));
            }
        }
        format!("{t}\njournal:\n{journal}\nphases:\n{phases}")
    };
    assert!(
        (parts - t["total_s"].as_f64().unwrap()).abs() < 1e-6,
        "{}",
        explain()
    );
    for run in s["runs"].as_array().unwrap() {
        assert_sealed(&study.join(run["dir"].as_str().unwrap()));
    }
    let runs: Vec<PathBuf> = std::fs::read_dir(study.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 3, "{runs:?}");
    // Every interrupted attempt that had made its directory is set aside in _interrupted/;
    // one killed before it made one (the kill between runs can land just after the next
    // run's start is journalled) is recorded with "no directory" and nothing to move.
    let mut set_aside = 0;
    for e in j.events() {
        if let Event::RunInterrupted { dir, found, .. } = e {
            if dir.starts_with("_interrupted/") {
                set_aside += 1;
            } else {
                assert_eq!(found, "no directory", "{dir}");
            }
        }
    }
    assert!(
        set_aside >= 4,
        "{set_aside} of {interrupted} interrupted runs set aside"
    );
    assert_eq!(
        std::fs::read_dir(study.join("_interrupted"))
            .unwrap()
            .count(),
        set_aside
    );
    // The run killed at its fault, 8 s into a load of 10 requests/s, keeps the requests
    // it measured: requests.csv is written as k6's output is followed, not at the end.
    let kept = std::fs::read_dir(study.join("_interrupted"))
        .unwrap()
        .map(|e| {
            let csv = e.unwrap().path().join(feedbench::rundir::REQUESTS_CSV);
            std::fs::read_to_string(csv).map_or(0, |t| t.lines().count().saturating_sub(1))
        })
        .max()
        .unwrap_or(0);
    assert!(
        kept >= 40,
        "the interrupted runs kept at most {kept} requests"
    );
    audit_the_study_the_kills_left(&repo, &text);
    assert_eq!(
        rt.block_on(common::leftovers(&engine, "test-ledger")),
        (vec![], vec![])
    );
}

/// `feedbench audit` over the study the kills and resumes left: clean (each interruption is
/// the journal's own record), then with a byte of raw data edited, with a plan edit before
/// and after it is declared by `run --amend`, and with a run directory deleted.
fn audit_the_study_the_kills_left(repo: &Repo, text: &str) {
    let root = repo.path("");
    let a = audit(&root, &[LEDGER, "--format", "json"]);
    assert_eq!(a.code, 0, "{}\n{}", a.stdout, a.stderr);
    let runs = a.json()["runs"].as_array().unwrap().clone();
    assert_eq!(runs.len(), 3, "{runs:?}");
    let md = audit(&root, &[LEDGER]);
    assert_eq!(md.code, 0, "{}", md.stderr);
    assert!(
        md.stdout.contains("feed-rs/steady+db-latency/r1"),
        "{}",
        md.stdout
    );

    // One byte of a raw CSV.
    let study = repo.path("results/test-ledger");
    let csv = study.join("runs/feed-rs_steady_db-latency_r1/requests.csv");
    let original = std::fs::read(&csv).unwrap();
    let mut edited = original.clone();
    let last = edited.len() - 2;
    edited[last] = if edited[last] == b'1' { b'2' } else { b'1' };
    std::fs::write(&csv, &edited).unwrap();
    let a = audit(&root, &[LEDGER, "--format", "json"]);
    assert_eq!(a.code, 1);
    let undeclared = a.undeclared();
    assert!(
        undeclared
            .iter()
            .any(|(k, s)| k == "file-mismatch"
                && s == "runs/feed-rs_steady_db-latency_r1/requests.csv")
            && a.stdout.contains("changed: sha256"),
        "{undeclared:?}"
    );
    std::fs::write(&csv, &original).unwrap();
    assert_eq!(audit(&root, &[LEDGER]).code, 0);

    // An undeclared plan edit, then the same edit declared.
    repo.write(
        LEDGER,
        &text.replace("fault-proxy: {cpus: 0.2,", "fault-proxy: {cpus: 0.25,"),
    );
    repo.commit("raise the fault proxy's cap");
    let a = audit(&root, &[LEDGER, "--format", "json"]);
    assert_eq!(a.code, 1);
    assert!(
        a.undeclared().iter().any(|(k, _)| k == "plan-edit"),
        "{:?}",
        a.undeclared()
    );
    assert!(a.stdout.contains("caps.fault-proxy.cpus"), "{}", a.stdout);
    let refused = registered(repo, &["--resume"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--amend"));
    let amended = registered(
        repo,
        &[
            "--amend",
            "fault proxy cap raised to 0.25 CPU",
            "--only",
            "*/r1",
        ],
    )
    .output()
    .unwrap();
    assert!(
        amended.status.success(),
        "{}",
        String::from_utf8_lossy(&amended.stderr)
    );
    let a = audit(&root, &[LEDGER, "--format", "json"]);
    // r2 and r3 were superseded and not run again (--only): gaps, not departures.
    assert_eq!(a.code, 0, "{}\n{}", a.stdout, a.stderr);
    assert!(a.stdout.contains("fault proxy cap raised to 0.25 CPU"));

    // A run directory deleted.
    std::fs::remove_dir_all(study.join("runs/feed-rs_steady_db-latency_r1")).unwrap();
    let a = audit(&root, &[LEDGER, "--format", "json"]);
    assert_eq!(a.code, 1);
    assert!(
        a.undeclared()
            .iter()
            .any(|(k, s)| k == "vanished-directory" && s.contains("feed-rs_steady_db-latency_r1")),
        "{:?}",
        a.undeclared()
    );
}

/// The ledger plan, edited, in a directory of its own (paths made absolute).
fn derived_plan(dir: &Path, edits: &[(&str, &str)]) -> PathBuf {
    let root = common::repo();
    let mut text = std::fs::read_to_string(root.join(LEDGER))
        .unwrap()
        .replace("../../../", &format!("{}/", root.display()));
    for (from, to) in edits {
        assert!(text.contains(from), "the ledger plan has no `{from}`");
        text = text.replace(from, to);
    }
    let path = dir.join("plan.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

fn events(study: &Path) -> Vec<Event> {
    journal_of(study).events().cloned().collect()
}

pub fn a_starved_fault_proxy_invalidates_its_run_with_the_figure() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let engine = rt.block_on(common::engine());
    rt.block_on(common::plan_images(LEDGER));
    let tmp = tempfile::tempdir().unwrap();
    let plan = derived_plan(
        tmp.path(),
        &[
            ("name: test-ledger", "name: test-starved"),
            // 40/s costs the proxy about 0.011 cores (several database round trips each):
            // at a 0.02 cap its p95 hovered near the 80 % ceiling and once stayed under it
            // (a CI run); at 0.01 the demand exceeds the cap.
            ("fault-proxy: {cpus: 0.2,", "fault-proxy: {cpus: 0.01,"),
            ("rate: 10, duration: 16s", "rate: 40, duration: 16s"),
            ("repetitions: 3", "repetitions: 1"),
        ],
    );
    let results = tmp.path().join("results");
    let out = feedbench(&plan, &results, &[]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let study = results.join("test-starved");
    let invalidated: Vec<Event> = events(&study)
        .into_iter()
        .filter(|e| matches!(e, Event::RunInvalidated { .. }))
        .collect();
    let [Event::RunInvalidated {
        dir,
        reason,
        evidence,
        ..
    }] = invalidated.as_slice()
    else {
        panic!("one invalidation expected: {invalidated:?}");
    };
    assert!(dir.starts_with(&format!("_invalid_{reason}/")), "{dir}");
    assert!(reason.starts_with("fault-proxy-"), "{reason}");
    let cpu = evidence
        .iter()
        .find(|e| e.role == "fault-proxy" && e.check == "cpu")
        .unwrap_or_else(|| panic!("no fault-proxy CPU evidence: {evidence:?}"));
    assert!(cpu.value > cpu.threshold, "{cpu}");
    assert_eq!(cpu.threshold, 80.0);
    assert!(cpu.container.as_deref().unwrap().ends_with("-fault-proxy"));
    assert!(cpu.figure.contains("CPU"), "{cpu}");
    assert_sealed(&study.join(dir));
    assert!(!study.join("runs/feed-rs_steady_db-latency_r1").exists());
    // An invalid run is not run again by --resume while the plan stays as it is.
    let again = feedbench(&plan, &results, &["--resume"]).output().unwrap();
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert!(!events(&study)
        .iter()
        .any(|e| matches!(e, Event::RunStarted { attempt: 2, .. })));
    assert_eq!(
        rt.block_on(common::leftovers(&engine, "test-starved")),
        (vec![], vec![])
    );
}

pub fn an_edited_cap_is_refused_until_amended_then_exactly_its_runs_rerun() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let engine = rt.block_on(common::engine());
    rt.block_on(common::plan_images(LEDGER));
    let tmp = tempfile::tempdir().unwrap();
    let arms = "    liveness: /healthz\n    variants:\n      a: {description: one}\n      b: {description: two, caps: {replica: {cpus: 0.3, memory: 128MiB}}}\n";
    let base = [
        ("name: test-ledger", "name: test-amend"),
        ("    liveness: /healthz\n", arms),
        ("repetitions: 3", "repetitions: 1"),
        ("      fault: db-latency\n", ""),
        // What is asserted is the ledger's (refusal, amendment, which runs run again), not
        // the runs' figures: one objective window of load is enough, and the fault's
        // schedule, which needed 16 s, is gone.
        ("duration: 16s", "duration: 5s"),
    ];
    let plan = derived_plan(tmp.path(), &base);
    let results = tmp.path().join("results");
    let study = results.join("test-amend");
    let first = feedbench(&plan, &results, &[]).output().unwrap();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let kept = study.join("runs/feed-rs.a_steady_r1");
    let kept_manifest = std::fs::read(kept.join("manifest.json")).unwrap();

    let mut edited = base.to_vec();
    edited.push((
        "caps: {replica: {cpus: 0.3,",
        "caps: {replica: {cpus: 0.35,",
    ));
    derived_plan(tmp.path(), &edited);
    let refused = feedbench(&plan, &results, &["--resume"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--amend"), "{stderr}");
    assert!(stderr.contains("feed-rs.b/steady/r1"), "{stderr}");
    assert!(!stderr.contains("feed-rs.a/steady/r1"), "{stderr}");

    let amended = feedbench(
        &plan,
        &results,
        &["--amend", "replica cap of arm b raised to 0.35 CPU"],
    )
    .output()
    .unwrap();
    assert!(
        amended.status.success(),
        "{}",
        String::from_utf8_lossy(&amended.stderr)
    );
    let ev = events(&study);
    let started: Vec<&str> = ev
        .iter()
        .filter_map(|e| match e {
            Event::RunStarted { run, .. } => Some(run.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        started,
        [
            "feed-rs.a/steady/r1",
            "feed-rs.b/steady/r1",
            "feed-rs.b/steady/r1"
        ]
    );
    let superseded: Vec<&str> = ev
        .iter()
        .filter_map(|e| match e {
            Event::RunSuperseded { run, amendment, .. } => {
                assert_eq!(amendment, "replica cap of arm b raised to 0.35 CPU");
                Some(run.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(superseded, ["feed-rs.b/steady/r1"]);
    assert!(ev
        .iter()
        .any(|e| matches!(e, Event::PlanAmended { changes, .. } if changes.len() == 1)));
    assert_eq!(
        std::fs::read(kept.join("manifest.json")).unwrap(),
        kept_manifest
    );
    assert!(study
        .join("_superseded/feed-rs.b_steady_r1/manifest.json")
        .exists());
    assert_sealed(&study.join("runs/feed-rs.b_steady_r1"));
    assert_eq!(
        rt.block_on(common::leftovers(&engine, "test-amend")),
        (vec![], vec![])
    );
}

pub fn a_contender_failing_its_gate_is_excluded_and_the_study_goes_on() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let engine = rt.block_on(common::engine());
    let plan = common::repo().join("tests/plans/docker/gate.yaml");
    rt.block_on(common::plan_images("tests/plans/docker/gate.yaml"));
    let results = tempfile::tempdir().unwrap();
    let out = feedbench(&plan, results.path(), &[]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let study = results.path().join("test-gate");
    let ev = events(&study);
    assert!(ev
        .iter()
        .any(|e| matches!(e, Event::GatePassed { contender, image, .. }
        if contender == "feed-rs.sound" && image == "feedbench/gate:dev")));
    // The sound arm's gate: deployed, run and torn down as phases of its own, its suite run
    // against the balancer, its output kept.
    let phases: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| event_is(v, "phase") && v["run"] == "feed-rs.sound/gate")
        .map(|v| v["phase"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(phases, ["gate-deploy", "gate", "gate-teardown"], "{stderr}");
    let sound = std::fs::read_to_string(study.join("gates/feed-rs.sound.log")).unwrap();
    assert!(sound.contains("gate: http://balancer:8080"), "{sound}");
    assert!(sound.contains("gate passed"), "{sound}");
    let excluded = ev
        .iter()
        .find_map(|e| match e {
            Event::ContenderExcluded {
                contender,
                exit_code,
                output,
                reason,
                runs,
                ..
            } => Some((
                contender.clone(),
                *exit_code,
                output.clone(),
                reason.clone(),
                runs.clone(),
            )),
            _ => None,
        })
        .expect("the mutant is excluded");
    assert_eq!(excluded.0, "feed-rs.mutant-c2");
    assert_eq!(excluded.1, Some(1));
    assert!(
        excluded.3.starts_with("exit code 1; output in "),
        "{}",
        excluded.3
    );
    assert!(excluded.2.contains("visibility   FAILED"), "{}", excluded.2);
    // The report names a draft that the mutant served although clause C2 hides it.
    assert!(
        excluded
            .2
            .lines()
            .any(|l| l.contains("[visibility]") && l.contains("C2 draft")),
        "{}",
        excluded.2
    );
    assert_eq!(excluded.4, ["feed-rs.mutant-c2/steady/r1"]);
    // The sound arm ran; the mutant's run is skipped with the gate's reason.
    let s = status(&plan, results.path());
    let by_run = |id: &str| {
        s["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["run"] == id)
            .unwrap()
            .clone()
    };
    assert_eq!(
        by_run("feed-rs.sound/steady/r1")["state"],
        "completed-valid",
        "{s:#}"
    );
    assert_eq!(
        by_run("feed-rs.mutant-c2/steady/r1")["state"],
        "skipped",
        "{s:#}"
    );
    assert!(study.join("gates/feed-rs.mutant-c2.log").exists());
    assert_eq!(
        rt.block_on(common::leftovers(&engine, "test-gate")),
        (vec![], vec![])
    );
}
