//! `feedbench pilot` on the real engine: two repetitions of one short run of the deploy
//! probe's plan at half its length, into the study's first pilot area under the pilot's own
//! name, sized from their spread (`sizing.json`, and its JSON line); the study's
//! own directory gets no journal, and `feedbench audit` lists the pilot under "exploration
//! before registration".

use crate::common;

use std::process::Command;

use common::audit::{audit, Repo};
use feedbench::ledger::journal::{self, Event};
use feedbench::ledger::manifest::Manifest;
use feedbench::rundir::layout::{pilot_dir, PILOT_PLAN, PILOT_RECORD, PILOT_SIZING};
use feedbench_core::report::sizing;

const PLAN: &str = "tests/plans/docker/probe.yaml";

pub fn a_pilot_at_half_scale_runs_apart_from_the_study_and_the_audit_lists_it() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let engine = rt.block_on(common::engine());
    rt.block_on(common::plan_images(PLAN));
    let text = std::fs::read_to_string(common::repo().join(PLAN))
        .unwrap()
        .replace("name: test-probe", "name: test-pilot");
    assert!(text.contains("constant: {rate: 5, duration: 10s}"));
    let repo = Repo::new();
    repo.copy_project_dirs(&["contenders", "images"]);
    repo.write(".gitignore", "/results/\n");
    repo.write(PLAN, &text);
    repo.commit("register the probe study");

    let out = Command::new(env!("CARGO_BIN_EXE_feedbench"))
        .current_dir(repo.path(""))
        .args(["pilot", PLAN, "--scale", "0.5", "--only", "static/*"])
        .args(["--repetitions", "2"])
        .args(["--no-build", "--results", "results", "--format", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout
            .lines()
            .next()
            .unwrap_or_default()
            .contains("\"event\":\"pilot-opened\""),
        "{stdout}"
    );

    // Sized from the two repetitions: the line printed is the file written.
    let sized: serde_json::Value = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["event"] == "pilot-sized")
        .unwrap_or_else(|| panic!("no pilot-sized line: {stdout}"));
    let file = repo
        .path("results/test-pilot")
        .join("pilots/001")
        .join(PILOT_SIZING);
    let sizing = sizing::parse(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(serde_json::to_value(&sizing).unwrap(), sized["sizing"]);
    assert_eq!((sizing.pilot, sizing.repetitions), (1, 2));
    assert!(sizing.left_out.is_empty(), "{:?}", sizing.left_out);
    let p99 = sizing
        .spreads
        .iter()
        .find(|s| s.metric == "latency_p99" && s.arm == "static")
        .unwrap_or_else(|| panic!("{sizing:?}"));
    assert_eq!(p99.values.len(), 2, "{p99:?}");
    assert!(p99.log_sd.is_some_and(|sd| sd >= 0.0), "{p99:?}");
    // The plan declares no smallest effect: spreads, and nothing needed.
    assert!(sizing.spreads.iter().all(|s| s.needed.is_none()));

    let study = repo.path("results/test-pilot");
    let area = pilot_dir(&study, 1);
    assert!(
        !study.join(journal::FILE).exists(),
        "the study has no journal"
    );
    assert_eq!(
        std::fs::read_to_string(area.join(PILOT_PLAN)).unwrap(),
        text
    );
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(area.join(PILOT_RECORD)).unwrap()).unwrap();
    assert_eq!(record["format_version"], 1);
    assert_eq!(record["scale"], 0.5);
    assert_eq!(record["name"], "test-pilot.pilot-1");
    assert_eq!(record["git"]["clean"], true);
    assert_eq!(record["repetitions"], 2);
    let j = journal::read(&area.join(journal::FILE)).unwrap();
    let finished: Vec<&str> = j
        .events()
        .filter_map(|e| match e {
            Event::RunFinished { dir, .. } | Event::RunInvalidated { dir, .. } => {
                Some(dir.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(finished.len(), 2, "{:?}", j.entries);
    let run_dir = area.join(finished[0]);
    let m = Manifest::read(&run_dir).unwrap().unwrap();
    assert_eq!(m.study, "test-pilot.pilot-1");
    assert!(
        m.images
            .iter()
            .all(|i| i.container.starts_with("fb-test-pilot.pilot-1-")),
        "{:?}",
        m.images
    );
    // The 10 s constant load measured for 5 s.
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run_dir.join(feedbench::rundir::RUN_JSON)).unwrap())
            .unwrap();
    let measured = &run["frame"]["measured"];
    let span_s =
        (measured["end_ns"].as_f64().unwrap() - measured["start_ns"].as_f64().unwrap()) / 1e9;
    assert!(
        (4.5..=5.5).contains(&span_s),
        "measured for {span_s} s: {run}"
    );

    let a = audit(&repo.path(""), &[PLAN, "--format", "json"]);
    assert_eq!(a.code, 0, "{}\n{}", a.stdout, a.stderr);
    let j = a.json();
    assert_eq!(
        j["summary"]["completed_valid"], 0,
        "no run of the study's own"
    );
    let p = &j["exploration"]["pilots"][0];
    assert_eq!(p["number"], 1, "{j}");
    assert_eq!(p["differs_from_registered"], false);
    assert_eq!(p["scale"], 0.5);
    assert_eq!(p["runs"]["completed"], 2, "{p}");
    let md = audit(&repo.path(""), &[PLAN]);
    assert!(
        md.stdout.contains("### Exploration before registration")
            && md.stdout.contains("- Pilot 1 (`pilots/001`)"),
        "{}",
        md.stdout
    );

    for study in ["test-pilot.pilot-1", "test-pilot"] {
        assert_eq!(
            rt.block_on(common::leftovers(&engine, study)),
            (vec![], vec![]),
            "{study}"
        );
    }
}
