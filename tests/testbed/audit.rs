//! `feedbench audit` over the results of real runs: a small study registered in a git
//! repository of its own, run on the engine, then audited clean, with a byte of raw data
//! edited, with a run directory deleted, and with a plan edit before and after it is
//! declared by `run --amend`.

use crate::common;

use std::process::Command;

use common::audit::{audit, Repo};

const PLAN: &str = "tests/plans/docker/ledger.yaml";

fn run(repo: &Repo, extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_feedbench"))
        .current_dir(repo.path(""))
        .args(["run", PLAN, "--no-build", "--results", "results"])
        .args(extra)
        .output()
        .unwrap()
}

pub fn audits_of_a_real_study_name_each_departure() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let engine = rt.block_on(common::engine());
    rt.block_on(common::plan_images(PLAN));
    let text = std::fs::read_to_string(common::repo().join(PLAN))
        .unwrap()
        .replace("name: test-ledger", "name: test-audit")
        .replace("repetitions: 3", "repetitions: 2");
    let repo = Repo::new();
    repo.copy_project_dirs(&["contenders", "images"]);
    repo.write(".gitignore", "/results/\n");
    repo.write(PLAN, &text);
    repo.commit("register the study");

    let out = run(&repo, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let a = audit(&repo.path(""), &[PLAN, "--format", "json"]);
    assert_eq!(a.code, 0, "{}\n{}", a.stdout, a.stderr);
    let runs = a.json()["runs"].as_array().unwrap().clone();
    assert_eq!(runs.len(), 2, "{runs:?}");
    let md = audit(&repo.path(""), &[PLAN]);
    assert_eq!(md.code, 0, "{}", md.stderr);
    assert!(
        md.stdout.contains("feed-rs/steady+db-latency/r1"),
        "{}",
        md.stdout
    );

    // One byte of a raw CSV.
    let study = repo.path("results/test-audit");
    let csv = study.join("runs/feed-rs_steady_db-latency_r1/requests.csv");
    let original = std::fs::read(&csv).unwrap();
    let mut edited = original.clone();
    let last = edited.len() - 2;
    edited[last] = if edited[last] == b'1' { b'2' } else { b'1' };
    std::fs::write(&csv, &edited).unwrap();
    let a = audit(&repo.path(""), &[PLAN, "--format", "json"]);
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
    assert_eq!(audit(&repo.path(""), &[PLAN]).code, 0);

    // An undeclared plan edit, then the same edit declared.
    repo.write(
        PLAN,
        &text.replace("fault-proxy: {cpus: 0.2,", "fault-proxy: {cpus: 0.25,"),
    );
    repo.commit("raise the fault proxy's cap");
    let a = audit(&repo.path(""), &[PLAN, "--format", "json"]);
    assert_eq!(a.code, 1);
    assert!(
        a.undeclared().iter().any(|(k, _)| k == "plan-edit"),
        "{:?}",
        a.undeclared()
    );
    assert!(a.stdout.contains("caps.fault-proxy.cpus"), "{}", a.stdout);
    let refused = run(&repo, &["--resume"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--amend"));
    let amended = run(
        &repo,
        &[
            "--amend",
            "fault proxy cap raised to 0.25 CPU",
            "--only",
            "*/r1",
        ],
    );
    assert!(
        amended.status.success(),
        "{}",
        String::from_utf8_lossy(&amended.stderr)
    );
    let a = audit(&repo.path(""), &[PLAN, "--format", "json"]);
    // r2 was superseded and not run again (--only): a gap, not a departure.
    assert_eq!(a.code, 0, "{}\n{}", a.stdout, a.stderr);
    assert!(a.stdout.contains("fault proxy cap raised to 0.25 CPU"));

    // A run directory deleted.
    std::fs::remove_dir_all(study.join("runs/feed-rs_steady_db-latency_r1")).unwrap();
    let a = audit(&repo.path(""), &[PLAN, "--format", "json"]);
    assert_eq!(a.code, 1);
    assert!(
        a.undeclared()
            .iter()
            .any(|(k, s)| k == "vanished-directory" && s.contains("feed-rs_steady_db-latency_r1")),
        "{:?}",
        a.undeclared()
    );
    assert_eq!(
        rt.block_on(common::leftovers(&engine, "test-audit")),
        (vec![], vec![])
    );
}
