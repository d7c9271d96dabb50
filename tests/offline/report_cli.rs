//! `feedbench report` on a study: the smoke plan committed in a repository, its runs
//! completed with synthetic raw data (twin/tests/gen.py) through the ledger's own writers.
//! The four files and the summary are written, `--verify` agrees and then catches an
//! edited raw value, and bad input gets a clear error with nothing half-written.

use crate::common;

use common::audit::{audit, Repo};
use common::report::{complete_all, generated, report, report_with, study, text, PLAN};
use feedbench::audit::fixture::Fixture;
use feedbench::plan::load_file;
use serde_json::Value;

#[test]
#[ignore = "needs Python with pandas (twin/requirements.txt)"]
fn a_study_reports_verifies_and_catches_an_edit() {
    let gen = tempfile::tempdir().unwrap();
    let (repo, mut f, runs) = study();
    complete_all(&mut f, &runs, &generated(gen.path()));
    let o = report(&repo, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let dir = repo.path("results/smoke/report");
    for file in [
        "index.html",
        "report.md",
        "metrics.csv",
        "summary.csv",
        "metrics.json",
    ] {
        assert!(dir.join(file).is_file(), "no {file}: {}", text(&o));
    }
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains(&f.plan_hash), "the plan hash at the top:\n{md}");
    let head = repo.git(&["rev-parse", "HEAD"]);
    assert!(md.contains(head.trim()), "the registration commit:\n{md}");
    assert!(md.contains("Audit: clean"), "{md}");
    // The appendix: where the study's time went, its parts adding up to the whole.
    let appendix = md
        .split("## Appendix: where the study's time went")
        .nth(1)
        .unwrap_or_else(|| panic!("no appendix:\n{md}"));
    for part in ["| gates |", "| deploy |", "| measuring |", "| waiting |"] {
        assert!(appendix.contains(part), "{appendix}");
    }
    assert!(md.contains("3 runs analysed"), "{md}");
    let h1 = md
        .lines()
        .find(|l| l.starts_with("- Check `saturation(feed-rs)"))
        .unwrap_or_else(|| panic!("{md}"));
    assert_eq!(
        h1,
        "- Check `saturation(feed-rs) >= 20/s and failed(feed-rs, profile: baseline, fault: replica-kill) < 1%`: **supported**"
    );
    assert!(
        md.contains("  - `saturation(feed-rs)` = 30/s (median of 1: `feed-rs/ramp/r1` 30 1/s)"),
        "{md}"
    );
    // The kill's recovery, as the scenario was built to have it.
    let kill = md
        .lines()
        .find(|l| l.contains("replica-kill (kill-replica)"))
        .unwrap();
    assert!(
        kill.contains("| 12 s |") && kill.contains("| 10 s |"),
        "{kill}"
    );
    // The baseline's feed route answered 1.67 % 4xx and declares none: named; its post
    // route answered 100 % against a declared 99.5 %: within a point.
    let over = md
        .lines()
        .find(|l| l.starts_with("**4xx over the declared share:**"))
        .unwrap_or_else(|| panic!("no route named over its 4xx share:\n{md}"));
    assert!(
        over.contains("`feed` in") && !over.contains("`post`"),
        "{over}"
    );
    // The table by route lists routes, not a route's qualified rows (a span's, a status's).
    assert!(!md.contains(" status:"), "{md}");
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("metrics.json")).unwrap()).unwrap();
    assert_eq!(json["format_version"], 1);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        md,
        "markdown is printed"
    );

    let v = report(&repo, &["--verify"]);
    assert_eq!(v.status.code(), Some(0), "{}", text(&v));
    assert!(
        String::from_utf8_lossy(&v.stderr).contains("agrees"),
        "{}",
        text(&v)
    );

    // One latency edited in the kill run's raw data, after the report was written.
    let requests = repo.path("results/smoke/runs/feed-rs_baseline_replica-kill_r1/requests.csv");
    let raw = std::fs::read_to_string(&requests).unwrap();
    let mut lines: Vec<String> = raw.lines().map(String::from).collect();
    let mut cols: Vec<String> = lines[3000].split(',').map(String::from).collect();
    cols[5] = "4000".into();
    lines[3000] = cols.join(",");
    std::fs::write(&requests, lines.join("\n") + "\n").unwrap();
    let v = report(&repo, &["--verify"]);
    assert_eq!(v.status.code(), Some(1), "{}", text(&v));
    let err = String::from_utf8_lossy(&v.stderr);
    assert!(
        err.contains("disagrees") && err.contains("latency_max"),
        "{err}"
    );
}

#[test]
#[ignore = "needs Python with pandas (twin/requirements.txt)"]
fn a_run_missing_a_csv_is_listed_as_not_analysable() {
    let gen = tempfile::tempdir().unwrap();
    let (repo, mut f, runs) = study();
    complete_all(&mut f, &runs, &generated(gen.path()));
    std::fs::remove_file(repo.path("results/smoke/runs/feed-rs_ramp_r1/containers.csv")).unwrap();
    let o = report(&repo, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let md = std::fs::read_to_string(repo.path("results/smoke/report/report.md")).unwrap();
    let line = md
        .lines()
        .find(|l| l.contains("`feed-rs/ramp/r1` | not analysable"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(
        line.contains("containers.csv") && line.contains("is missing"),
        "{line}"
    );
    assert!(md.contains("2 runs analysed"), "{md}");
}

#[test]
fn a_study_without_results_is_refused_and_nothing_is_written() {
    let (repo, _f, _runs) = study();
    let o = report(&repo, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("holds no result that stands") && err.contains("3 not run"),
        "{err}"
    );
    assert!(!repo.path("results/smoke/report").exists());
    // No study directory at all.
    let empty = Repo::new();
    empty.copy_project_dirs(&["contenders", "images"]);
    empty.write(
        PLAN,
        &std::fs::read_to_string(common::repo().join(PLAN)).unwrap(),
    );
    empty.commit("register");
    let o = report(&empty, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn results_under_an_unconnected_plan_hash_are_named() {
    let (repo, f, runs) = study();
    let mut other = Fixture::start_with(
        &repo.path("results/smoke-other/smoke"),
        "smoke",
        PLAN,
        "0123456789abcdef",
        f.git.clone(),
        &runs,
    )
    .unwrap();
    other.complete(&runs[0]).unwrap();
    let o = report(&repo, &["--results", "results/smoke-other"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("0123456789abcdef") && err.contains(&f.plan_hash) && err.contains("--amend"),
        "{err}"
    );
}

#[test]
#[ignore = "needs Python with pandas (twin/requirements.txt)"]
fn an_unwritable_output_directory_is_named_and_the_previous_report_kept() {
    let gen = tempfile::tempdir().unwrap();
    let (repo, mut f, runs) = study();
    complete_all(&mut f, &runs, &generated(gen.path()));
    repo.write("plain-file", "x");
    let o = report(&repo, &["--out", "plain-file/report"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("plain-file/report") && err.contains("--out"),
        "{err}"
    );
    assert_eq!(repo.read("plain-file"), "x");
}

#[test]
#[ignore = "needs Python with pandas (twin/requirements.txt)"]
fn an_edited_check_fails_the_audit_naming_the_hypothesis_and_is_reported_beside_the_registered_one()
{
    let gen = tempfile::tempdir().unwrap();
    let (repo, mut f, runs) = study();
    complete_all(&mut f, &runs, &generated(gen.path()));
    let registered = "saturation(feed-rs) >= 20/s";
    let amended = "saturation(feed-rs) >= 40/s";
    let text0 = repo.read(PLAN);
    assert!(text0.contains(registered));
    repo.write(PLAN, &text0.replace(registered, amended));
    repo.commit("ask more of the ramp");

    let a = audit(repo.dir.path(), &[PLAN]);
    assert_eq!(a.code, 1, "{}", a.stderr);
    assert!(
        a.stderr
            .contains("`study.hypotheses[0].check` (hypothesis H1's check changed)"),
        "{}",
        a.stderr
    );
    assert!(
        a.stdout
            .contains(&format!("hypothesis H1: check was `{registered} and")),
        "{}",
        a.stdout
    );

    let loaded = load_file(&repo.path(PLAN), None).unwrap();
    f.amend(
        "the pilot showed 20/s was too easy",
        &loaded.plan_hash,
        &runs,
        &feedbench_core::inputs::runs_now(&loaded).unwrap(),
    )
    .unwrap();
    let a = audit(repo.dir.path(), &[PLAN, "--format", "json"]);
    assert_eq!(a.code, 0, "{}\n{}", a.stderr, a.stdout);
    assert_eq!(a.json()["deviations"][0]["standing"], "declared");

    let o = report(&repo, &["--verify"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("2 check verdicts"),
        "{}",
        text(&o)
    );
    let md = String::from_utf8_lossy(&o.stdout);
    assert!(
        md.contains("| H1 (check amended after registration) | not supported | – | supported |"),
        "{md}"
    );
    assert!(md.contains(&format!("- Check `{amended} and")), "{md}");
    assert!(
        md.contains(&format!("- Registered check `{registered} and")),
        "{md}"
    );
}

#[test]
fn a_plan_that_does_not_load_now_is_named_and_nothing_is_written() {
    let (repo, mut f, runs) = study();
    f.complete(&runs[0]).unwrap();
    let plan = repo.read(PLAN);
    repo.write(PLAN, &plan.replace("repetitions: 1", "repetitions: one"));
    let o = report(&repo, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("does not load as it is now") && err.contains("matrix.repetitions"),
        "{err}"
    );
    assert!(!repo.path("results/smoke/report").exists());
}

/// A Python that has no packages beyond its standard library (`-I -S`: no site-packages).
fn bare_python(dir: &std::path::Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join("bare-python");
    std::fs::write(&p, "#!/bin/sh\nexec python3 -I -S \"$@\"\n").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[test]
fn verify_with_a_python_lacking_pandas_exits_2_in_one_line_naming_the_install() {
    let (repo, _f, _runs) = study();
    let scratch = tempfile::tempdir().unwrap();
    let bare = bare_python(scratch.path());
    let twin = common::repo().join("twin");
    let o = report_with(
        &repo,
        &["--verify"],
        &[("FEEDBENCH_PYTHON", &bare), ("FEEDBENCH_TWIN", &twin)],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("Traceback"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    let install = format!(
        "`{} -m pip install -r {}`",
        bare.display(),
        twin.join("requirements.txt").display()
    );
    assert!(
        err.contains(&install) && err.contains("No module named"),
        "{err}"
    );
    // checked before any work: nothing was written
    assert!(!repo.path("results/smoke/report").exists());
}

#[test]
#[ignore = "needs Python with pandas (twin/requirements.txt): it makes the twin's environment from PyPI"]
fn verify_makes_the_twins_environment_on_first_use_and_then_verifies() {
    let gen = tempfile::tempdir().unwrap();
    let (repo, mut f, runs) = study();
    complete_all(&mut f, &runs, &generated(gen.path()));
    // a copy of the twin without its environment, as on a fresh machine
    let fresh = tempfile::tempdir().unwrap();
    let twin = fresh.path().join("twin");
    copy_dir(&common::repo().join("twin"), &twin);
    let env: &[(&str, &std::path::Path)] = &[("FEEDBENCH_TWIN", &twin)];
    let o = report_with(&repo, &["--verify"], env);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("the twin's environment is not made yet") && err.contains("agrees"),
        "{err}"
    );
    assert!(twin.join(".venv/bin/python").is_file());
    // the second time it is there: nothing is made again
    let o = report_with(&repo, &["--verify"], env);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("not made yet"),
        "{}",
        text(&o)
    );
}

/// Copies a directory's files, leaving out the environment a checkout may hold.
fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        if name.to_string_lossy().starts_with(".venv") || name == "__pycache__" {
            continue;
        }
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(&name));
        } else {
            std::fs::copy(e.path(), to.join(&name)).unwrap();
        }
    }
}
