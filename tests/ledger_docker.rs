//! The study ledger on the real engine: feedbench SIGKILLed at five moments and resumed each
//! time, a starved fault proxy that invalidates its run, a cap edited after runs completed
//! (refused until declared with --amend, then exactly the touched runs rerun).

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use feedbench::ledger::journal::{self, Event};
use feedbench::ledger::manifest::{verify, Manifest};
use feedbench::ledger::state::Ledger;

static ENGINE: Mutex<()> = Mutex::new(());

fn feedbench(plan: &Path, results: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_feedbench"));
    c.current_dir(common::repo())
        .arg("run")
        .arg(plan)
        .args(["--no-build", "--allow-uncommitted", "--format", "json", "--results"])
        .arg(results)
        .args(extra);
    c
}

/// Runs feedbench and SIGKILLs it at the first stdout line `moment` accepts. Returns
/// whether it was killed (false: it ended first).
fn kill_at(plan: &Path, results: &Path, extra: &[&str], moment: &dyn Fn(&serde_json::Value) -> bool) -> bool {
    let mut child = feedbench(plan, results, extra)
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
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
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

#[test]
fn killed_at_five_moments_and_resumed_every_run_completes_exactly_once() {
    let _turn = ENGINE.lock().unwrap_or_else(|p| p.into_inner());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let Some(engine) = rt.block_on(common::engine()) else {
        return;
    };
    let plan = common::repo().join("tests/plans/docker/ledger.yaml");
    rt.block_on(common::plan_images("tests/plans/docker/ledger.yaml"));
    let results = tempfile::tempdir().unwrap();
    let study = results.path().join("test-ledger");

    type Moment = (&'static str, Box<dyn Fn(&serde_json::Value) -> bool>);
    let moments: Vec<Moment> = vec![
        ("deploy", Box::new(|v| event_is(v, "phase") && v["phase"] == "deploy")),
        ("load", Box::new(|v| event_is(v, "load-started"))),
        ("fault", Box::new(|v| event_is(v, "fault-applied"))),
        ("teardown", Box::new(|v| event_is(v, "phase") && v["phase"] == "teardown")),
        ("between runs", Box::new(|v| v["journal"]["event"] == "run-finished")),
    ];
    let mut hit_a_run = 0;
    for (i, (name, moment)) in moments.iter().enumerate() {
        let extra: &[&str] = if i == 0 { &[] } else { &["--resume"] };
        assert!(kill_at(&plan, results.path(), extra, moment.as_ref()), "never reached {name}");
        // Whether the kill hit a run: a run started and not settled.
        let open = Ledger::fold(journal_of(&study).events()).open_runs();
        assert!(open.len() <= 1, "{open:?}");
        hit_a_run += open.len();
        if *name != "between runs" {
            assert_eq!(open.len(), 1, "the kill at {name} hit no run");
        }
        // Without --resume the study is never touched.
        let refused = feedbench(&plan, results.path(), &[]).output().unwrap();
        assert_eq!(refused.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&refused.stderr).contains("--resume"));
    }
    let last = feedbench(&plan, results.path(), &["--resume"]).output().unwrap();
    assert!(last.status.success(), "{}", String::from_utf8_lossy(&last.stderr));

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

    let s = status(&plan, results.path());
    assert_eq!(s["counts"]["completed valid"], 3, "{s:#}");
    for run in s["runs"].as_array().unwrap() {
        assert_sealed(&study.join(run["dir"].as_str().unwrap()));
    }
    let runs: Vec<PathBuf> = std::fs::read_dir(study.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 3, "{runs:?}");
    assert_eq!(
        std::fs::read_dir(study.join("_interrupted")).unwrap().count(),
        interrupted
    );
    assert_eq!(
        rt.block_on(common::leftovers(&engine, "test-ledger")),
        (vec![], vec![])
    );
}
