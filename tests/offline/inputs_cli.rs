//! The registration covers a plan's inputs: `feedbench run` refuses an input file that
//! differs from its commit or that no commit holds, naming it, before anything is written.

use crate::common;

use std::process::Command;

use common::audit::Repo;

fn run(repo: &Repo, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_feedbench"))
        .current_dir(repo.dir.path())
        .args(["run", "experiments/smoke.yaml", "--no-build"])
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn an_edited_or_untracked_input_is_refused_by_name_and_nothing_is_written() {
    let repo = Repo::with_project_plan("smoke.yaml");
    let sql = repo.path("contenders/schema/indexed.sql");
    let mut text = std::fs::read_to_string(&sql).unwrap();
    text.push_str("-- not committed\n");
    std::fs::write(&sql, text).unwrap();
    std::fs::write(repo.path("contenders/feed-rs/src/extra.rs"), "// new\n").unwrap();
    let out = run(&repo, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("input files its runs depend on are not"),
        "{err}"
    );
    assert!(
        err.contains("  ../contenders/schema/indexed.sql\n"),
        "{err}"
    );
    assert!(
        err.contains("  ../contenders/feed-rs/src/extra.rs"),
        "{err}"
    );
    assert!(err.contains("--allow-uncommitted"), "{err}");
    assert!(!repo.path("results").exists());
}

#[test]
fn a_file_the_context_leaves_out_is_no_input() {
    let repo = Repo::with_project_plan("smoke.yaml");
    // __pycache__ is left out of every build context, so it is no input to commit.
    std::fs::create_dir_all(repo.path("contenders/feed-rs/src/__pycache__")).unwrap();
    std::fs::write(repo.path("contenders/feed-rs/src/__pycache__/x.pyc"), "x").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_feedbench"))
        .current_dir(repo.dir.path())
        .args(["plan", "experiments/smoke.yaml", "--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan = repo.path("experiments/smoke.yaml");
    let loaded = feedbench::plan::load_file(&plan, None).unwrap();
    let inputs = feedbench_core::inputs::Inputs::of_working_tree(&loaded).unwrap();
    assert!(inputs.files.iter().all(|f| !f.path.contains("__pycache__")));
    assert_eq!(
        feedbench_core::inputs::uncommitted(&plan, &inputs).unwrap(),
        Vec::<String>::new()
    );
}

/// An init script edited and committed after runs completed: `run --resume` exits 2 before
/// touching the engine, naming the file and exactly the runs of the arms that run it.
#[test]
fn a_committed_init_script_edit_is_refused_naming_exactly_its_runs() {
    let repo = Repo::with_project_plan("example-study.yaml");
    let plan = repo.path("experiments/example-study.yaml");
    let (mut f, runs) =
        feedbench::audit::fixture::Fixture::start(&plan, &repo.path("results")).unwrap();
    for r in &runs {
        f.complete(r).unwrap();
    }
    let sql = repo.path("contenders/schema/production.sql");
    let mut script = std::fs::read_to_string(&sql).unwrap();
    script.push_str("-- one more index\n");
    std::fs::write(&sql, script).unwrap();
    repo.commit("one more index in production");

    let out = Command::new(env!("CARGO_BIN_EXE_feedbench"))
        .current_dir(repo.dir.path())
        .args([
            "run",
            "experiments/example-study.yaml",
            "--resume",
            "--no-build",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`../contenders/schema/production.sql`: sha256"),
        "{err}"
    );
    let named: Vec<&str> = err
        .lines()
        .filter(|l| l.ends_with("(its definition changed)"))
        .map(|l| l.trim().split(' ').next().unwrap())
        .collect();
    let production: Vec<&str> = runs
        .iter()
        .filter(|r| r.contender.ends_with(".production"))
        .map(|r| r.id.as_str())
        .collect();
    assert_eq!(production.len(), 2);
    let mut named_sorted = named.clone();
    named_sorted.sort();
    let mut expected = production.clone();
    expected.sort();
    assert_eq!(named_sorted, expected, "{err}");
    assert!(err.contains("--amend"), "{err}");
}
