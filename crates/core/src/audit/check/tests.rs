//! The audit's checks on studies written with the ledger's own writers, then damaged or
//! departed from one way at a time.

use std::collections::BTreeSet;

use super::audit;
use crate::audit::fixture::Fixture;
use crate::audit::history::{History, PlanVersion, Rev};
use crate::audit::report::{Kind, Report, Standing};
use crate::audit::study::StudyFiles;
use crate::git::Commit;
use crate::ledger::journal::{Event, Evidence};
use crate::ledger::manifest::Git;

const PLAN: &str = include_str!("../../../../../tests/plans/valid/minimal.yaml");

fn edited() -> String {
    let e = PLAN.replace(
        "fault-proxy: {cpus: 0.25, memory: 64MiB}",
        "fault-proxy: {cpus: 0.5, memory: 64MiB}",
    );
    assert_ne!(e, PLAN);
    e
}

fn commit(n: u32) -> Rev {
    Rev::Commit(Commit {
        hash: format!("{n:040x}"),
        date: "2026-12-01T00:00:00+00:00".into(),
        subject: format!("commit {n}"),
    })
}

fn history(texts: &[&str]) -> History {
    History {
        plan_file: "experiments/p.yaml".into(),
        versions: texts
            .iter()
            .enumerate()
            .map(|(i, t)| PlanVersion::from_text(commit(i as u32 + 1), "p.yaml", t))
            .collect(),
    }
}

fn git(clean: bool) -> Git {
    Git {
        commit: Some(format!("{:040x}", 1)),
        path: Some("experiments/p.yaml".into()),
        clean: Some(clean),
    }
}

/// A study `tiny` under `d` of plan version `v`, started and with no run yet.
fn started(v: &PlanVersion, d: &std::path::Path, clean: bool) -> Fixture {
    Fixture::start_with(
        &d.join("tiny"),
        "tiny",
        "experiments/p.yaml",
        v.plan_hash.as_deref().unwrap(),
        git(clean),
        &v.runs,
    )
    .unwrap()
}

/// A study of `h`'s registered plan with every run completed.
fn completed(h: &History, d: &std::path::Path, clean: bool) -> Fixture {
    let v = h.registration();
    let mut f = started(v, d, clean);
    for r in &v.runs {
        f.complete(r).unwrap();
    }
    f
}

fn check(h: &History, f: &Fixture) -> Report {
    audit(h, &StudyFiles::read(&f.dir).unwrap(), "results/tiny")
}

fn undeclared(r: &Report) -> Vec<(Kind, String)> {
    r.undeclared()
        .map(|i| (i.kind, i.subject.clone()))
        .collect()
}

#[test]
fn a_clean_study_passes_and_lists_every_run() {
    let d = tempfile::tempdir().unwrap();
    let h = history(&[PLAN]);
    let f = completed(&h, d.path(), true);
    let r = check(&h, &f);
    assert!(r.summary.passed, "{}", r.markdown());
    assert!(r.deviations.is_empty(), "{}", r.markdown());
    assert_eq!(r.runs.len(), 6);
    assert_eq!(r.summary.completed_valid, 6);
    let md = r.markdown();
    for run in &h.registration().runs {
        assert!(
            md.contains(&format!("| `{}` | completed valid |", run.id)),
            "{md}"
        );
    }
}

#[test]
fn an_undeclared_plan_edit_is_named_by_field_then_declared_by_an_amendment() {
    let d = tempfile::tempdir().unwrap();
    let e = edited();
    let h = history(&[PLAN, &e]);
    let mut f = completed(&h, d.path(), true);
    let r = check(&h, &f);
    assert!(!r.summary.passed);
    assert_eq!(
        undeclared(&r),
        [(Kind::PlanEdit, "caps.fault-proxy.cpus".to_string())]
    );
    let item = &r.deviations[0];
    assert!(item
        .evidence
        .contains(&"`caps.fault-proxy.cpus`: 0.25 → 0.5".to_string()));
    assert_eq!(r.history.len(), 1);
    assert!(!r.history[0].declared);

    let (old, new) = (&h.versions[0], &h.versions[1]);
    let changes = f
        .amend(
            "fault proxy saturated",
            new.plan_hash.as_deref().unwrap(),
            &old.runs,
            &new.runs,
        )
        .unwrap();
    let r = check(&h, &f);
    assert!(r.summary.passed, "{}", r.markdown());
    let c = &r.history[0];
    assert!(c.declared);
    assert_eq!(
        c.amendment.as_ref().unwrap().reason,
        "fault proxy saturated"
    );
    let superseded = changes.iter().filter(|c| c.old_run_hash.is_some()).count();
    assert_eq!(c.superseded.len(), superseded);
    assert_eq!(r.deviations[0].standing, Standing::Declared);
    assert_eq!(r.deviations[0].reason, "fault proxy saturated");
    // The superseded runs are not run under the amended plan: gaps, not departures.
    if superseded > 0 {
        assert_eq!(r.summary.superseded, superseded);
        assert_eq!(r.summary.not_run, 0);
    }
}

#[test]
fn a_deleted_run_directory_is_named() {
    let d = tempfile::tempdir().unwrap();
    let h = history(&[PLAN]);
    let f = completed(&h, d.path(), true);
    std::fs::remove_dir_all(f.dir.join("runs/svc_ramp_r2")).unwrap();
    let r = check(&h, &f);
    assert_eq!(
        undeclared(&r),
        [(Kind::VanishedDirectory, "runs/svc_ramp_r2".to_string())]
    );
    assert!(r.deviations[0].title.contains("`svc/ramp/r2`"));
}

#[test]
fn an_attempt_killed_before_its_directory_looks_for_none() {
    // Attempt 1 of a run was killed before it made `runs/<run>`; attempt 2 made it, and was
    // then set aside (moved to `_invalid_…/`). The name attempt 1's interruption records is
    // attempt 2's directory, gone with it: no directory of attempt 1 vanished.
    let d = tempfile::tempdir().unwrap();
    let h = history(&[PLAN]);
    let v = h.registration();
    let mut f = started(v, d.path(), true);
    let (first, rest) = v.runs.split_first().unwrap();
    f.interrupt_before_its_directory(first).unwrap();
    f.complete(first).unwrap();
    f.invalidate(first, "cpu", Vec::new()).unwrap();
    for r in rest {
        f.complete(r).unwrap();
    }
    let r = check(&h, &f);
    assert!(
        !r.deviations
            .iter()
            .any(|d| d.kind == Kind::VanishedDirectory),
        "{}",
        r.markdown()
    );
    assert!(undeclared(&r).is_empty(), "{}", r.markdown());
}

#[test]
fn one_edited_byte_in_a_raw_csv_is_named() {
    let d = tempfile::tempdir().unwrap();
    let h = history(&[PLAN]);
    let f = completed(&h, d.path(), true);
    let csv = f.dir.join("runs/svc_ramp_r1/requests.csv");
    let mut bytes = std::fs::read(&csv).unwrap();
    let at = bytes.len() - 2;
    bytes[at] = b'1';
    std::fs::write(&csv, bytes).unwrap();
    let r = check(&h, &f);
    assert_eq!(
        undeclared(&r),
        [(
            Kind::FileMismatch,
            "runs/svc_ramp_r1/requests.csv".to_string()
        )]
    );
    assert!(r.deviations[0].evidence[0].starts_with("`requests.csv` changed"));
}

#[test]
fn runs_from_an_uncommitted_plan_fail_unless_declared() {
    let d = tempfile::tempdir().unwrap();
    let h = history(&[PLAN]);
    let f = completed(&h, d.path(), false);
    let r = check(&h, &f);
    let hash = h.registration().plan_hash.clone().unwrap();
    assert_eq!(
        undeclared(&r),
        [(Kind::UncommittedPlan, format!("plan hash {hash}"))]
    );
    let runs = &r.deviations[0].evidence[0];
    assert!(
        runs.starts_with("runs: ") && runs.contains("`svc/ramp/r3`"),
        "{runs}"
    );

    let d = tempfile::tempdir().unwrap();
    let v = h.registration();
    let mut f = started(v, d.path(), false);
    f.declare_uncommitted().unwrap();
    f.complete(&v.runs[0]).unwrap();
    let r = check(&h, &f);
    assert!(r.summary.passed, "{}", r.markdown());
    assert_eq!(r.summary.declared, 1);
    assert_eq!(r.summary.not_run, 5);
}

#[test]
fn runs_of_a_plan_never_committed_are_unplanned() {
    let d = tempfile::tempdir().unwrap();
    let e = edited();
    let h = history(&[PLAN]);
    // The study ran the edited plan, which no commit has.
    let h2 = history(&[&e]);
    let v = h2.registration();
    let mut f = started(v, d.path(), true);
    f.complete(&v.runs[0]).unwrap();
    let r = check(&h, &f);
    let kinds: BTreeSet<Kind> = r.undeclared().map(|i| i.kind).collect();
    assert!(kinds.contains(&Kind::UncommittedPlan), "{}", r.markdown());
    if v.runs[0].run_hash != h.registration().runs[0].run_hash {
        assert!(kinds.contains(&Kind::UnplannedRun), "{}", r.markdown());
    }
}

#[test]
fn gaps_are_reported_with_reason_and_evidence_and_do_not_fail() {
    let d = tempfile::tempdir().unwrap();
    let h = history(&[PLAN]);
    let v = h.registration();
    let mut f = started(v, d.path(), true);
    f.complete(&v.runs[0]).unwrap();
    f.complete(&v.runs[1]).unwrap();
    let dir = f
        .invalidate(
            &v.runs[1],
            "fault-proxy CPU",
            vec![Evidence {
                check: "cpu".into(),
                role: "fault-proxy".into(),
                container: Some("tiny-fp".into()),
                figure: "p95 CPU, share of its cap".into(),
                value: 0.98,
                threshold: 0.9,
                unit: "share".into(),
            }],
        )
        .unwrap();
    assert_eq!(dir, "_invalid_fault-proxy-cpu/svc_baseline_db-cut_r1");
    f.skip(&v.runs[2], "host lost").unwrap();
    let r = check(&h, &f);
    assert!(r.summary.passed, "{}", r.markdown());
    assert_eq!(
        (
            r.summary.completed_valid,
            r.summary.invalid,
            r.summary.skipped,
            r.summary.not_run
        ),
        (1, 1, 1, 3)
    );
    let invalid = r
        .deviations
        .iter()
        .find(|i| i.kind == Kind::RunInvalid)
        .unwrap();
    assert_eq!(invalid.reason, "fault-proxy CPU");
    assert!(
        invalid.evidence[0].contains("0.980 share against 0.900"),
        "{:?}",
        invalid.evidence
    );
    assert!(r.deviations.iter().all(|i| i.standing == Standing::Gap));
}

#[test]
fn journal_damage_and_strange_directories_are_named() {
    use std::io::Write;
    let d = tempfile::tempdir().unwrap();
    let h = history(&[PLAN]);
    let f = completed(&h, d.path(), true);
    drop(f);
    let v = h.registration();
    let journal = d.path().join("tiny/journal.jsonl");
    // A torn line a later writer declares, then an edited line nothing declares.
    let mut j = std::fs::OpenOptions::new()
        .append(true)
        .open(&journal)
        .unwrap();
    j.write_all(b"{\"format_version\":1,\"wall").unwrap();
    drop(j);
    let mut f = started(v, d.path(), true);
    f.append(Event::GatePassed {
        contender: "svc".into(),
        image: "example/svc:1".into(),
        seconds: 1.0,
    })
    .unwrap();
    let mut j = std::fs::OpenOptions::new()
        .append(true)
        .open(&journal)
        .unwrap();
    j.write_all(b"edited by hand\n").unwrap();
    std::fs::create_dir_all(f.dir.join("runs/svc_extra")).unwrap();
    std::fs::remove_file(f.dir.join("runs/svc_ramp_r3/manifest.json")).unwrap();
    let r = check(&h, &f);
    let found = undeclared(&r);
    let lines = std::fs::read_to_string(&journal).unwrap().lines().count();
    assert_eq!(
        found,
        [
            (
                Kind::MissingManifest,
                "runs/svc_ramp_r3/manifest.json".to_string()
            ),
            (Kind::UnrecordedDirectory, "runs/svc_extra".to_string()),
            (Kind::BadJournalLine, format!("journal line {lines}")),
        ],
        "{}",
        r.markdown()
    );
    let torn = r
        .deviations
        .iter()
        .find(|i| i.kind == Kind::BadJournalLine && i.standing == Standing::Declared);
    assert!(torn.is_some(), "{}", r.markdown());
}

#[test]
fn runs_of_one_comparison_on_hosts_that_differ_are_named_with_each_runs_engines() {
    use crate::ledger::manifest::{EngineHost, Manifest};
    let d = tempfile::tempdir().unwrap();
    let h = history(&[PLAN]);
    let f = completed(&h, d.path(), true);
    // The same facts under engine names are the same hosts.
    let rename = |run: &str, engines: &dyn Fn(&Manifest) -> Vec<EngineHost>| {
        let dir = f.dir.join("runs").join(run);
        let mut m = Manifest::read(&dir).unwrap().unwrap();
        m.engines = engines(&m);
        m.seal(&dir).unwrap();
    };
    let same = |m: &Manifest| {
        vec![EngineHost {
            name: "here".into(),
            host: m.host.clone(),
        }]
    };
    rename("svc_ramp_r1", &same);
    assert!(check(&h, &f).summary.passed, "{}", check(&h, &f).markdown());
    // A load generator on a host of another kernel, in one run of the ramp comparison.
    rename("svc_ramp_r2", &|m: &Manifest| {
        let mut other = m.host.clone();
        other.kernel = "6.9".into();
        vec![
            EngineHost {
                name: "here".into(),
                host: m.host.clone(),
            },
            EngineHost {
                name: "second".into(),
                host: other,
            },
        ]
    });
    let r = check(&h, &f);
    assert_eq!(
        undeclared(&r),
        [(Kind::HostsDiffer, "ramp".to_string())],
        "{}",
        r.markdown()
    );
    let item = r
        .deviations
        .iter()
        .find(|i| i.kind == Kind::HostsDiffer)
        .unwrap();
    assert!(
        item.evidence.iter().any(
            |e| e.contains("`svc/ramp/r2` attempt 1 ran on `here` (2 cores")
                && e.contains("and `second` (2 cores, 1024 MiB, kernel 6.9")
        ),
        "{:?}",
        item.evidence
    );
    assert!(!r.summary.passed);
}

#[test]
fn a_journal_begun_before_the_chain_passes_and_is_said_to_be_unchained() {
    let d = tempfile::tempdir().unwrap();
    let h = history(&[PLAN]);
    // A line of format_version 1, as a feedbench before the chain wrote it; this one
    // carries the study on, each of its lines linked from that line.
    std::fs::create_dir_all(d.path().join("tiny")).unwrap();
    let old = format!(
        "{{\"format_version\":1,\"wall_ns\":\"{}\",\"event\":\"gate-passed\",\"contender\":\"svc\",\"image\":\"example/svc:1\",\"seconds\":1.0}}\n",
        crate::ledger::journal::unix_ns()
    );
    std::fs::write(d.path().join("tiny/journal.jsonl"), old).unwrap();
    let f = completed(&h, d.path(), true);
    let r = check(&h, &f);
    assert!(undeclared(&r).is_empty(), "{}", r.markdown());
    assert_eq!(r.unchained_journal_lines, 1);
    assert!(
        r.markdown().contains(
            "1 journal line was written before the journal's lines were chained (format_version 1)"
        ),
        "{}",
        r.markdown()
    );
}

#[test]
fn caps_not_as_planned_or_different_within_a_comparison_are_named_with_both_caps() {
    use crate::ledger::manifest::Manifest;
    use crate::rundir::caps::{Caps, ReadCaps};
    let d = tempfile::tempdir().unwrap();
    let h = history(&[PLAN]);
    let f = completed(&h, d.path(), true);
    let cpus = |c: f64| Caps {
        nano_cpus: (c * 1e9) as i64,
        memory_bytes: 64 << 20,
        ..Caps::default()
    };
    let set = |run: &str, planned: f64, deploy: f64| {
        let dir = f.dir.join("runs").join(run);
        let mut m = Manifest::read(&dir).unwrap().unwrap();
        m.caps = vec![ReadCaps {
            container: format!("fb-tiny-{run}-balancer"),
            role: "balancer".into(),
            planned: cpus(planned),
            deploy: cpus(deploy),
            teardown: Some(cpus(deploy)),
        }];
        m.seal(&dir).unwrap();
    };
    set("svc_ramp_r1", 0.5, 0.5);
    set("svc_ramp_r2", 0.5, 0.5);
    assert!(
        check(&h, &f).deviations.is_empty(),
        "{}",
        check(&h, &f).markdown()
    );
    // One balancer under a quarter of a core where its plan gave half.
    set("svc_ramp_r2", 0.5, 0.25);
    let r = check(&h, &f);
    assert_eq!(
        undeclared(&r),
        [
            (Kind::CapsNotPlanned, "svc/ramp/r2".to_string()),
            (Kind::CapsDiffer, "ramp balancer".to_string()),
        ],
        "{}",
        r.markdown()
    );
    let differ = r
        .deviations
        .iter()
        .find(|i| i.kind == Kind::CapsDiffer)
        .unwrap();
    assert!(
        differ.evidence.iter().any(|e| e
            == "`svc/ramp/r2` attempt 1: `fb-tiny-svc_ramp_r2-balancer` ran under 0.25 CPUs, 64 MiB (planned 0.5 CPUs, 64 MiB)"),
        "{:?}",
        differ.evidence
    );
    assert!(differ
        .evidence
        .iter()
        .any(|e| e.contains("`svc/ramp/r1` attempt 1") && e.contains("ran under 0.5 CPUs")));
    // The same difference asked for by the plan is declared.
    set("svc_ramp_r2", 0.25, 0.25);
    let r = check(&h, &f);
    assert!(r.summary.passed, "{}", r.markdown());
    let differ = r
        .deviations
        .iter()
        .find(|i| i.kind == Kind::CapsDiffer)
        .unwrap();
    assert_eq!(differ.standing, Standing::Declared);
}

#[test]
fn runs_settled_after_an_engine_shared_line_are_declared_with_the_other_study() {
    let h = history(&[PLAN]);
    let d = tempfile::tempdir().unwrap();
    let v = h.registration();
    assert!(
        v.runs.len() >= 3,
        "the plan has runs before, after and in the next invocation"
    );
    let mut f = started(v, d.path(), true);
    f.complete(&v.runs[0]).unwrap();
    // Another study came to the engine; the runs settled after the line, up to the next
    // invocation, are named.
    f.append(Event::EngineShared {
        engine: "local".into(),
        with: "study `other` (instance 0a1b2c3d, feedbench pid 7, results `/r/other`)".into(),
    })
    .unwrap();
    f.complete(&v.runs[1]).unwrap();
    f.append(Event::StudyStarted {
        plan_file: "experiments/p.yaml".into(),
        plan_hash: v.plan_hash.clone().unwrap(),
        feedbench_version: "0".into(),
        git_commit: Some(format!("{:040x}", 1)),
        git_clean: Some(true),
        resume: true,
        runs_planned: v.runs.len(),
        runs_to_do: v.runs[2..].iter().map(|r| r.id.clone()).collect(),
    })
    .unwrap();
    for r in &v.runs[2..] {
        f.complete(r).unwrap();
    }
    let r = check(&h, &f);
    assert!(r.summary.passed, "declared: {}", r.markdown());
    let items: Vec<_> = r
        .deviations
        .iter()
        .filter(|i| i.kind == Kind::EngineShared)
        .collect();
    assert_eq!(items.len(), 1, "{}", r.markdown());
    assert_eq!(items[0].standing, Standing::Declared);
    let evidence = items[0].evidence.join("\n");
    assert!(
        evidence.contains("engine `local` shared with study `other`"),
        "{evidence}"
    );
    let named = |run: &crate::plan::RunSpec| evidence.contains(&format!("`{}`", run.id));
    assert!(!named(&v.runs[0]) && named(&v.runs[1]), "{evidence}");
    assert!(!v.runs[2..].iter().any(named), "{evidence}");
}

#[test]
fn a_processor_is_compared_only_where_every_run_of_the_comparison_recorded_it() {
    use crate::ledger::manifest::{Cpu, EngineHost, Manifest};
    let d = tempfile::tempdir().unwrap();
    let h = history(&[PLAN]);
    let f = completed(&h, d.path(), true);
    let with_cpu = |run: &str, governor: &str| {
        let dir = f.dir.join("runs").join(run);
        let mut m = Manifest::read(&dir).unwrap().unwrap();
        let mut host = m.host.clone();
        host.cpu = Some(Cpu {
            model: Some("AMD EPYC".into()),
            logical: 2,
            cores: Some(2),
            sockets: Some(1),
            smt: Some(false),
            governor: Some(governor.into()),
        });
        m.engines = vec![EngineHost {
            name: "here".into(),
            host,
        }];
        m.seal(&dir).unwrap();
    };
    // One run of the ramp comparison recorded its processor, the other was written before:
    // no difference is made of what one of them does not say.
    with_cpu("svc_ramp_r1", "performance");
    let r = check(&h, &f);
    assert!(r.summary.passed, "{}", r.markdown());
    // All three recorded it, one under another governor: the hosts differ, and say how.
    with_cpu("svc_ramp_r2", "powersave");
    let r = check(&h, &f);
    assert!(r.summary.passed, "r3 says nothing yet: {}", r.markdown());
    with_cpu("svc_ramp_r3", "performance");
    let r = check(&h, &f);
    assert_eq!(
        undeclared(&r),
        [(Kind::HostsDiffer, "ramp".to_string())],
        "{}",
        r.markdown()
    );
    let item = r
        .deviations
        .iter()
        .find(|i| i.kind == Kind::HostsDiffer)
        .unwrap();
    assert!(
        item.evidence.iter().any(|e| e
            .contains("CPU AMD EPYC (2 logical, 2 cores, 1 sockets, SMT off, governor powersave)")),
        "{:?}",
        item.evidence
    );
}
