//! Helpers for the report's tests: the smoke plan committed in a repository, its runs
//! completed through the ledger's own writers with synthetic raw data written by
//! twin/tests/gen.py (known answers), and `feedbench report` run in it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::audit::Repo;
use super::repo as project;
use feedbench::audit::fixture::Fixture;
use feedbench::plan::RunSpec;
use serde_json::Value;

pub const PLAN: &str = "experiments/smoke.yaml";

/// The twin, its environment made as `report --verify` makes it (a test that calls this is
/// `#[ignore = "needs Python with pandas …"]`: it fails when the packages cannot be had).
pub fn twin() -> feedbench::report::verify::Twin {
    feedbench::report::verify::Twin::ready(&mut std::io::stderr())
        .unwrap_or_else(|e| panic!("the twin's environment: {e}"))
}

pub fn python() -> String {
    twin().python
}

/// Every figure of the run directories, as `feedbench report` computes them.
pub fn analysed(dirs: &[PathBuf]) -> Vec<feedbench_core::report::rows::Row> {
    dirs.iter()
        .flat_map(|d| {
            let record = feedbench_core::rundir::record::RunRecord::read(d).unwrap();
            feedbench_core::report::run::analyse(d, &record)
                .unwrap()
                .rows
        })
        .collect()
}

/// The twin's figures of the run directories are `ours`, row for row.
pub fn assert_the_twin_agrees(dirs: &[PathBuf], ours: &[feedbench_core::report::rows::Row]) {
    let theirs = twin().recompute(dirs, None, &[], false).unwrap().rows;
    let d = feedbench_core::report::rows::compare(ours, &theirs);
    assert!(
        d.is_empty(),
        "{} rows differ, e.g. {:#?}",
        d.len(),
        &d[..d.len().min(10)]
    );
}

/// Each hypothesis of `plan` resolved against `standing` and evaluated from `rows`: its
/// evaluation by id, and the resolved checks (for the twin).
pub fn judge_all(
    plan: &feedbench_core::plan::model::Plan,
    standing: &feedbench_core::report::verdicts::Standing,
    rows: &[feedbench_core::report::rows::Row],
) -> (
    Vec<(String, feedbench_core::report::verdicts::Evaluation)>,
    Vec<feedbench_core::report::verdicts::Resolved>,
) {
    use feedbench_core::report::verdicts::{evaluate, resolve, RowIndex, CURRENT};
    let index = RowIndex::new(rows);
    let paired = feedbench_core::report::comparison::paired_rounds(&plan.matrix.order);
    let mut out = Vec::new();
    let mut resolved = Vec::new();
    for h in &plan.study.hypotheses {
        let r = resolve(plan, &h.id, CURRENT, h.check.as_deref().unwrap(), standing);
        out.push((h.id.clone(), evaluate(&r, &index, paired)));
        resolved.push(r);
    }
    (out, resolved)
}

/// The generator's run directories, by what they hold.
pub fn generated(root: &Path) -> Vec<PathBuf> {
    generate(root, &[])
}

/// Two arms (indexed, and production 1.5× slower) of three repetitions each.
pub fn generated_arms(root: &Path) -> Vec<PathBuf> {
    generate(root, &["--arms"])
}

/// Native runs judged by schedule: a generator's stall, dropped starts, late starts.
pub fn generated_schedule(root: &Path) -> Vec<PathBuf> {
    generate(root, &["--schedule"])
}

/// The generator's runs for tests/plans/valid/findings.yaml.
pub fn generated_findings(root: &Path) -> Vec<PathBuf> {
    generate(root, &["--findings"])
}

fn generate(root: &Path, args: &[&str]) -> Vec<PathBuf> {
    let out = Command::new(python())
        .arg(project().join("twin/tests/gen.py"))
        .arg(root)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(PathBuf::from)
        .collect()
}

/// A run directory's files, with run.json's run and frame renamed to `run`.
pub fn files_for(source: &Path, run: &RunSpec) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(source).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let mut bytes = std::fs::read(&p).unwrap();
        if name == "run.json" {
            let mut v: Value = serde_json::from_slice(&bytes).unwrap();
            v["run_id"] = run.id.clone().into();
            let f = &mut v["frame"];
            f["contender"] = "feed-rs".into();
            f["variant"] = Value::Null;
            f["profile"] = run.profile.clone().into();
            f["repetition"] = run.repetition.into();
            bytes = serde_json::to_vec_pretty(&v).unwrap();
        }
        out.push((name, bytes));
    }
    out
}

/// A repository with the smoke plan committed and a study directory started.
pub fn study() -> (Repo, Fixture, Vec<RunSpec>) {
    let repo = Repo::new();
    repo.copy_project_dirs(&["contenders", "images"]);
    let text = std::fs::read_to_string(project().join(PLAN)).unwrap();
    repo.write(PLAN, &text);
    repo.commit("register the smoke plan");
    let (f, runs) = Fixture::start(&repo.path(PLAN), &repo.path("results")).unwrap();
    (repo, f, runs)
}

/// Completes every planned run with generated data: the ramp from the ramp scenario, the
/// kill from the kill scenario, the latency run from a constant run.
pub fn complete_all(f: &mut Fixture, runs: &[RunSpec], gen: &[PathBuf]) {
    let pick = |needle: &str| {
        gen.iter()
            .find(|p| p.to_string_lossy().contains(needle))
            .unwrap_or_else(|| panic!("no generated {needle}"))
    };
    for run in runs {
        let source = if run.profile == "ramp" {
            pick("_ramp_r1")
        } else if run.fault.as_deref() == Some("replica-kill") {
            pick("replica-kill")
        } else {
            pick("_baseline_r1")
        };
        f.complete_with(run, &files_for(source, run)).unwrap();
    }
}

/// `feedbench report PLAN ARGS` in `repo`, with the project's twin (whose environment
/// `--verify` makes on first use).
pub fn report(repo: &Repo, args: &[&str]) -> Output {
    report_with(repo, args, &[("FEEDBENCH_TWIN", &project().join("twin"))])
}

/// The same with these environment variables set (and no `FEEDBENCH_PYTHON` but theirs).
pub fn report_with(repo: &Repo, args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_feedbench"));
    cmd.current_dir(repo.dir.path())
        .arg("report")
        .arg(PLAN)
        .args(args);
    cmd.env_remove("FEEDBENCH_PYTHON");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

pub fn text(o: &Output) -> String {
    format!(
        "exit {:?}\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}
