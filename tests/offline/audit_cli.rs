//! `feedbench audit` on real git repositories made in temporary directories, with studies
//! written by the ledger's own writers: a clean study passes and lists every run; an
//! undeclared plan edit, a deleted run directory, one edited byte of a raw CSV and a run
//! from an uncommitted plan each fail it, named precisely; declaring the edit passes again.

use crate::common;

use common::audit::{audit, Repo};
use feedbench::audit::fixture::Fixture;
use feedbench::plan::load_file;
use feedbench_core::inputs::runs_now;

const PLAN: &str = "experiments/tiny.yaml";

/// A repository with the minimal plan registered and a study with every run completed.
fn completed() -> (Repo, Fixture) {
    let repo = Repo::with_plan("tests/plans/valid/minimal.yaml", PLAN);
    let (mut f, runs) = Fixture::start(&repo.path(PLAN), &repo.path("results")).unwrap();
    for r in &runs {
        f.complete(r).unwrap();
    }
    (repo, f)
}

fn edit_cap(repo: &Repo) {
    let text = repo.read(PLAN).replace(
        "fault-proxy: {cpus: 0.25, memory: 64MiB}",
        "fault-proxy: {cpus: 0.5, memory: 64MiB}",
    );
    repo.write(PLAN, &text);
}

#[test]
fn a_clean_study_passes_and_lists_every_run() {
    let (repo, _f) = completed();
    let a = audit(repo.dir.path(), &[PLAN, "--format", "json"]);
    assert_eq!(a.code, 0, "{}", a.stderr);
    let j = a.json();
    assert_eq!(j["format_version"], 1);
    assert_eq!(j["study"], "tiny");
    assert_eq!(j["plan_file"], PLAN);
    assert_eq!(j["summary"]["passed"], true);
    assert_eq!(j["summary"]["planned_runs"], 6);
    assert_eq!(j["summary"]["completed_valid"], 6);
    assert_eq!(j["registration"]["subject"], "register the plan");
    let runs = j["runs"].as_array().unwrap();
    assert!(runs.iter().all(|r| r["state"] == "completed-valid"), "{j}");

    let md = audit(repo.dir.path(), &[PLAN]);
    assert_eq!(md.code, 0, "{}", md.stderr);
    assert!(md.stdout.starts_with("## Deviations\n"), "{}", md.stdout);
    for r in runs_now(&load_file(&repo.path(PLAN), None).unwrap()).unwrap() {
        assert!(
            md.stdout
                .contains(&format!("| `{}` | completed valid |", r.id)),
            "{}",
            md.stdout
        );
    }
}

#[test]
fn an_undeclared_plan_edit_fails_until_an_amendment_declares_it() {
    let (repo, mut f) = completed();
    let old = runs_now(&load_file(&repo.path(PLAN), None).unwrap()).unwrap();
    edit_cap(&repo);
    repo.commit("give the fault proxy more CPU");
    let a = audit(repo.dir.path(), &[PLAN, "--format", "json"]);
    assert_eq!(a.code, 1, "{}", a.stderr);
    assert_eq!(
        a.undeclared(),
        [("plan-edit".to_string(), "caps.fault-proxy.cpus".to_string())]
    );
    assert!(
        a.stderr
            .contains("D1 The plan was changed after registration: `caps.fault-proxy.cpus`"),
        "{}",
        a.stderr
    );
    let md = audit(repo.dir.path(), &[PLAN]);
    assert_eq!(md.code, 1);
    assert!(
        md.stdout.contains("`caps.fault-proxy.cpus`: 0.25 → 0.5"),
        "{}",
        md.stdout
    );

    let loaded = load_file(&repo.path(PLAN), None).unwrap();
    f.amend(
        "the fault proxy saturated its 0.25 CPU in the pilot",
        &loaded.plan_hash,
        &old,
        &runs_now(&loaded).unwrap(),
    )
    .unwrap();
    let a = audit(repo.dir.path(), &[PLAN, "--format", "json"]);
    assert_eq!(a.code, 0, "{}\n{}", a.stderr, a.stdout);
    let j = a.json();
    let change = &j["history"][0];
    assert_eq!(change["declared"], true);
    assert_eq!(change["fields"][0]["path"], "caps.fault-proxy.cpus");
    assert_eq!(
        change["amendment"]["reason"],
        "the fault proxy saturated its 0.25 CPU in the pilot"
    );
    assert_eq!(j["deviations"][0]["standing"], "declared");
}

#[test]
fn a_deleted_run_directory_fails_naming_it() {
    let (repo, f) = completed();
    std::fs::remove_dir_all(f.dir.join("runs/svc_ramp_r2")).unwrap();
    let a = audit(repo.dir.path(), &[PLAN, "--format", "json"]);
    assert_eq!(a.code, 1, "{}", a.stderr);
    assert_eq!(
        a.undeclared(),
        [(
            "vanished-directory".to_string(),
            "runs/svc_ramp_r2".to_string()
        )]
    );
    assert!(
        a.stderr.contains("`runs/svc_ramp_r2` of run `svc/ramp/r2`"),
        "{}",
        a.stderr
    );
}

#[test]
fn one_edited_byte_of_a_raw_csv_fails_naming_the_file() {
    let (repo, f) = completed();
    let csv = f.dir.join("runs/svc_baseline_db-cut_r1/requests.csv");
    let mut bytes = std::fs::read(&csv).unwrap();
    bytes[0] = b'S';
    std::fs::write(&csv, bytes).unwrap();
    let a = audit(repo.dir.path(), &[PLAN, "--format", "json"]);
    assert_eq!(a.code, 1, "{}", a.stderr);
    assert_eq!(
        a.undeclared(),
        [(
            "file-mismatch".to_string(),
            "runs/svc_baseline_db-cut_r1/requests.csv".to_string()
        )]
    );
}

#[test]
fn a_run_from_an_uncommitted_plan_fails_unless_declared() {
    for declare in [false, true] {
        let repo = Repo::with_plan("tests/plans/valid/minimal.yaml", PLAN);
        edit_cap(&repo);
        let (mut f, runs) = Fixture::start(&repo.path(PLAN), &repo.path("results")).unwrap();
        assert_eq!(f.git.clean, Some(false));
        if declare {
            f.declare_uncommitted().unwrap();
        }
        f.complete(&runs[0]).unwrap();
        let a = audit(repo.dir.path(), &[PLAN, "--format", "json"]);
        let hash = f.plan_hash.clone();
        if declare {
            assert_eq!(a.code, 0, "{}\n{}", a.stderr, a.stdout);
            let j = a.json();
            assert_eq!(j["summary"]["declared"], 3, "{j}");
            assert_eq!(j["working_tree"]["plan_hash"], hash.as_str());
            continue;
        }
        assert_eq!(a.code, 1, "{}", a.stderr);
        let found = a.undeclared();
        assert!(
            found.contains(&("uncommitted-plan".into(), format!("plan hash {hash}"))),
            "{found:?}"
        );
        assert!(
            found.contains(&("plan-edit".into(), "caps.fault-proxy.cpus".into())),
            "{found:?}"
        );
        assert!(
            found.contains(&("unplanned-run".into(), runs[0].id.clone())),
            "{found:?}"
        );
    }
}

#[test]
fn registered_names_a_later_registration() {
    let (repo, _f) = completed();
    let first = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
    edit_cap(&repo);
    let second = repo.commit("register again");
    // The study ran the first version; registered at the second, nothing it ran is planned.
    let a = audit(
        repo.dir.path(),
        &[PLAN, "--registered", &second, "--format", "json"],
    );
    assert_eq!(a.code, 1);
    assert_eq!(a.json()["registration"]["hash"], second.as_str());
    let a = audit(repo.dir.path(), &[PLAN, "--registered", &first[..10]]);
    assert_eq!(a.code, 1, "the edit is still undeclared: {}", a.stderr);
}

#[test]
fn bad_input_exits_2_naming_the_file_and_the_fix() {
    let (repo, _f) = completed();
    let a = audit(repo.dir.path(), &["experiments/nope.yaml"]);
    assert_eq!(a.code, 2);
    assert!(
        a.stderr
            .contains("cannot read the plan `experiments/nope.yaml`"),
        "{}",
        a.stderr
    );

    let a = audit(repo.dir.path(), &[PLAN, "--registered", "no-such-rev"]);
    assert_eq!(a.code, 2);
    assert!(
        a.stderr.contains("`no-such-rev` names no commit"),
        "{}",
        a.stderr
    );

    let a = audit(repo.dir.path(), &[PLAN, "--results", "elsewhere"]);
    assert_eq!(a.code, 2);
    assert!(
        a.stderr.contains("no study directory `elsewhere/tiny`"),
        "{}",
        a.stderr
    );

    repo.write("experiments/new.yaml", &repo.read(PLAN));
    let a = audit(repo.dir.path(), &["experiments/new.yaml"]);
    assert_eq!(a.code, 2);
    assert!(
        a.stderr
            .contains("`experiments/new.yaml` has never been committed"),
        "{}",
        a.stderr
    );

    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("p.yaml"), repo.read(PLAN)).unwrap();
    let a = audit(outside.path(), &["p.yaml"]);
    assert_eq!(a.code, 2);
    assert!(
        a.stderr.contains("`p.yaml` is not in a git repository"),
        "{}",
        a.stderr
    );
}

/// The Markdown example of docs/audit.md:
/// `cargo test --test offline audit_cli:: -- --ignored --nocapture docs_example`.
#[test]
#[ignore = "prints the docs' example"]
fn docs_example() {
    use feedbench::ledger::journal::Evidence;
    let repo = Repo::with_plan("tests/plans/valid/minimal.yaml", PLAN);
    let (mut f, runs) = Fixture::start(&repo.path(PLAN), &repo.path("results")).unwrap();
    let run = |id: &str| runs.iter().find(|r| r.id == id).unwrap().clone();
    f.complete(&run("svc/ramp/r1")).unwrap();
    f.complete(&run("svc/baseline+db-cut/r1")).unwrap();
    f.invalidate(
        &run("svc/baseline+db-cut/r1"),
        "fault-proxy CPU",
        vec![Evidence {
            check: "cpu".into(),
            role: "fault-proxy".into(),
            container: Some("tiny-svc-baseline-db-cut-r1-fault-proxy".into()),
            figure: "p95 CPU over the measured window, share of its cap".into(),
            value: 0.97,
            threshold: 0.9,
            unit: "share".into(),
        }],
    )
    .unwrap();
    edit_cap(&repo);
    repo.commit("Give the fault proxy 0.5 CPU");
    let loaded = load_file(&repo.path(PLAN), None).unwrap();
    let new_runs = runs_now(&loaded).unwrap();
    f.amend(
        "the fault proxy saturated its 0.25 CPU cap (run svc/baseline+db-cut/r1 invalid)",
        &loaded.plan_hash,
        &runs,
        &new_runs,
    )
    .unwrap();
    let run = |id: &str| new_runs.iter().find(|r| r.id == id).unwrap().clone();
    for id in ["svc/ramp/r1", "svc/baseline+db-cut/r1", "svc/ramp/r2"] {
        f.complete(&run(id)).unwrap();
    }
    f.skip(
        &run("svc/baseline+db-cut/r2"),
        "the host was needed for another study",
    )
    .unwrap();
    let csv = f.dir.join("runs/svc_ramp_r2/requests.csv");
    let text = std::fs::read_to_string(&csv)
        .unwrap()
        .replace("4500", "4400");
    std::fs::write(&csv, text).unwrap();
    let a = audit(repo.dir.path(), &[PLAN]);
    println!("exit {}\n{}\n--- stderr\n{}", a.code, a.stdout, a.stderr);
    let j = audit(repo.dir.path(), &[PLAN, "--format", "json"]);
    println!("--- json\n{}", j.stdout);
}

#[test]
fn the_smoke_plan_audits_in_a_repository_linking_the_project() {
    let repo = Repo::with_project_plan("smoke.yaml");
    // Relative paths resolve as in the project, so the plan loads with its file checks, and
    // its inputs are committed with it.
    assert!(repo
        .git(&["ls-files"])
        .contains("contenders/schema/indexed.sql"));
    let (mut f, runs) =
        Fixture::start(&repo.path("experiments/smoke.yaml"), &repo.path("results")).unwrap();
    assert_eq!(f.git.clean, Some(true));
    f.complete(&runs[0]).unwrap();
    let a = audit(
        repo.dir.path(),
        &["experiments/smoke.yaml", "--format", "json"],
    );
    assert_eq!(a.code, 0, "{}", a.stderr);
    assert_eq!(a.json()["summary"]["completed_valid"], 1);
}

/// A manifest damaged by hand: its run hash holds multibyte characters (one straddling the
/// 12th byte, where the audit shortens hashes). The audit names the departure and exits 1,
/// never panics (exit 101).
#[test]
fn a_multibyte_run_hash_in_a_manifest_is_a_departure_not_a_panic() {
    let (repo, f) = completed();
    let manifest = f.dir.join("runs/svc_baseline_db-cut_r1/manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    m["run_hash"] = serde_json::Value::String("0123456789aé€😀".repeat(3));
    std::fs::write(&manifest, serde_json::to_string_pretty(&m).unwrap()).unwrap();
    for format in ["json", "markdown"] {
        let a = audit(repo.dir.path(), &[PLAN, "--format", format]);
        assert_eq!(a.code, 1, "{}\n{}", a.stdout, a.stderr);
        assert!(!a.stderr.contains("panicked"), "{}", a.stderr);
        assert!(a.stdout.contains("svc/baseline+db-cut/r1"), "{}", a.stdout);
    }
}

/// An init script edited after registration: the audit fails naming the file until an
/// amendment declares the edit; once declared (and the runs it touched run again) it passes.
#[test]
fn an_edited_init_script_is_an_undeclared_departure_until_amended() {
    let repo = Repo::with_project_plan("smoke.yaml");
    let plan = repo.path("experiments/smoke.yaml");
    let (mut f, runs) = Fixture::start(&plan, &repo.path("results")).unwrap();
    for r in &runs {
        f.complete(r).unwrap();
    }
    let m = feedbench::ledger::manifest::Manifest::read(
        &repo.path("results/smoke/runs/feed-rs_ramp_r1"),
    )
    .unwrap()
    .unwrap();
    let indexed = m
        .inputs
        .iter()
        .find(|i| i.path == "../contenders/schema/indexed.sql")
        .expect("the manifest records the init script");
    assert_eq!(indexed.role, "init");
    assert_eq!(
        indexed.bytes,
        std::fs::metadata(repo.path("contenders/schema/indexed.sql"))
            .unwrap()
            .len()
    );
    assert_eq!(audit(repo.dir.path(), &["experiments/smoke.yaml"]).code, 0);

    let sql = repo.path("contenders/schema/indexed.sql");
    let mut script = std::fs::read_to_string(&sql).unwrap();
    script.push_str("-- a later index\n");
    std::fs::write(&sql, script).unwrap();
    repo.commit("tune the index");
    let a = audit(repo.dir.path(), &["experiments/smoke.yaml"]);
    assert!(
        a.stdout.contains("takes the plan's inputs from digest"),
        "{}",
        a.stdout
    );
    assert_eq!(a.code, 1, "{}", a.stderr);
    assert!(
        a.stderr.contains(
            "An input of the plan was changed after registration: `../contenders/schema/indexed.sql`"
        ),
        "{}",
        a.stderr
    );

    let status = std::process::Command::new(env!("CARGO_BIN_EXE_feedbench"))
        .current_dir(repo.dir.path())
        .args(["status", "experiments/smoke.yaml"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.contains("input changed since it was recorded: `../contenders/schema/indexed.sql`"),
        "{text}"
    );
    let loaded = load_file(&plan, None).unwrap();
    let new_runs = runs_now(&loaded).unwrap();
    assert!(runs
        .iter()
        .zip(&new_runs)
        .all(|(a, b)| a.run_hash != b.run_hash));
    f.amend("a later index", &loaded.plan_hash, &runs, &new_runs)
        .unwrap();
    for r in &new_runs {
        f.complete(r).unwrap();
    }
    let a = audit(
        repo.dir.path(),
        &["experiments/smoke.yaml", "--format", "json"],
    );
    assert_eq!(a.code, 0, "{}\n{}", a.stderr, a.stdout);
    let j = a.json();
    assert_eq!(j["history"][0]["declared"], true, "{j}");
    assert_eq!(j["summary"]["completed_valid"], 3, "{j}");
}

fn replica(id: &str) -> feedbench::ledger::manifest::Image {
    feedbench::ledger::manifest::Image {
        role: "replica".into(),
        container: "fb-smoke-replica-1".into(),
        image: "feedbench/feed-rs:dev".into(),
        image_id: Some(id.into()),
        engine: None,
    }
}

/// A contender's image rebuilt mid-study: from unchanged sources it is a declared rebuild
/// naming both image IDs; from changed sources (run with --allow-uncommitted) nothing
/// declares, it is an undeclared departure naming the changed files.
#[test]
fn a_rebuilt_image_is_benign_from_unchanged_sources_and_a_departure_from_changed_ones() {
    let repo = Repo::with_project_plan("smoke.yaml");
    let plan = repo.path("experiments/smoke.yaml");
    let (mut f, runs) = Fixture::start(&plan, &repo.path("results")).unwrap();
    let (a, b, c) = (
        format!("sha256:{}", "a".repeat(64)),
        format!("sha256:{}", "b".repeat(64)),
        format!("sha256:{}", "c".repeat(64)),
    );
    f.images = vec![replica(&a)];
    f.complete(&runs[0]).unwrap();
    // Pruned and rebuilt from the same files: another ID.
    f.images = vec![replica(&b)];
    f.complete(&runs[1]).unwrap();
    let out = audit(
        repo.dir.path(),
        &["experiments/smoke.yaml", "--format", "json"],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let j = out.json();
    let rebuilt: Vec<&serde_json::Value> = j["deviations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"] == "image-rebuilt")
        .collect();
    assert_eq!(rebuilt.len(), 1, "{j}");
    assert_eq!(rebuilt[0]["standing"], "declared");
    let evidence = rebuilt[0]["evidence"].to_string();
    assert!(
        evidence.contains("sha256:aaaaaaaaaaaa") && evidence.contains("sha256:bbbbbbbbbbbb"),
        "{evidence}"
    );

    // A source file of the contender edited and run uncommitted, rebuilt: another ID.
    let main = repo.path("contenders/feed-rs/src/main.rs");
    let mut source = std::fs::read_to_string(&main).unwrap();
    source.push_str("// changed\n");
    std::fs::write(&main, source).unwrap();
    let loaded = load_file(&plan, None).unwrap();
    f.inputs = feedbench_core::inputs::Inputs::of_working_tree(&loaded).unwrap();
    f.declare_uncommitted().unwrap();
    let now = runs_now(&loaded).unwrap();
    f.images = vec![replica(&c)];
    f.complete(&now[2]).unwrap();
    let out = audit(repo.dir.path(), &["experiments/smoke.yaml"]);
    assert_eq!(out.code, 1, "{}\n{}", out.stderr, out.stdout);
    assert!(
        out.stderr.contains(
            "The image feedbench/feed-rs:dev was rebuilt from changed sources: `../contenders/feed-rs/src/main.rs`"
        ),
        "{}",
        out.stderr
    );
}
