//! Studies that cannot touch each other: two clones' studies of one plan started at once on
//! one engine (two results directories, as two clones have): exactly one runs, the other is
//! refused naming it; with `--share-engine` both run under instances of their own and leave
//! nothing; what an instance no feedbench runs left is named with the `clean` command that
//! removes it (tests/plans/docker/instances.yaml).

use crate::common::{self, report::text};
use crate::run::json_run;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

const PLAN: &str = "tests/plans/docker/instances.yaml";
const STUDY: &str = "test-instances";
const RUN: &str = "queue_steady_r1";
/// The instance of a leftover no feedbench runs, made by the test.
const STALE: &str = "0badc0de";

fn start(results: &Path, share: bool) -> Child {
    let mut cmd = json_run(PLAN, results);
    if share {
        cmd.arg("--share-engine");
    }
    cmd.stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Both ended, each with its stderr.
fn both(a: Child, b: Child) -> [Output; 2] {
    [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()]
}

fn instance_of(results: &Path) -> String {
    feedbench_core::rundir::instance::read(&results.join(STUDY), STUDY)
        .unwrap()
        .expect("a study that ran records its instance")
        .instance
        .to_string()
}

/// A container as a killed feedbench of another instance would leave it: the study's labels,
/// never started.
fn leave_stale_container() {
    let out = Command::new("docker")
        .args(["create", "--name", &format!("fb-{STUDY}-{STALE}-left")])
        .args(["--label", &format!("feedbench.study={STUDY}")])
        .args(["--label", &format!("feedbench.instance={STALE}")])
        .args(["--label", "feedbench.role=replica"])
        .arg("feedbench/queue-server:dev")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

pub fn two_studies_of_one_plan_at_once_one_is_refused_and_with_share_engine_both_run_apart() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let engine = rt.block_on(common::engine());
    rt.block_on(common::plan_images(PLAN));
    rt.block_on(engine.clean(&feedbench::engine::runtime::Scope::study(STUDY)))
        .unwrap();
    leave_stale_container();

    // Started at once, without the flag: one runs, the other is refused naming it.
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let outs = both(start(one.path(), false), start(two.path(), false));
    let codes: Vec<Option<i32>> = outs.iter().map(|o| o.status.code()).collect();
    let err = |i: usize| String::from_utf8_lossy(&outs[i].stderr).into_owned();
    let ran = match codes.as_slice() {
        [Some(0), Some(2)] => 0,
        [Some(2), Some(0)] => 1,
        _ => panic!("{codes:?}\n--- first:\n{}\n--- second:\n{}", err(0), err(1)),
    };
    let dirs = [one.path(), two.path()];
    let (winner, refused) = (dirs[ran], err(1 - ran));
    assert!(
        winner.join(STUDY).join("runs").join(RUN).is_dir(),
        "{}",
        err(ran)
    );
    let named = format!(
        "is in use by study `{STUDY}` (instance {}",
        instance_of(winner)
    );
    assert!(refused.contains(&named), "{refused}");
    assert!(
        refused.contains(&winner.join(STUDY).display().to_string()),
        "{refused}"
    );
    assert!(refused.contains("--share-engine"), "{refused}");
    // The runner named the stale instance with the command that removes it, and left it.
    let clean = format!("`feedbench clean --instance {STALE}`");
    assert!(err(ran).contains(&clean), "{}", err(ran));
    let cleaned = Command::new(env!("CARGO_BIN_EXE_feedbench"))
        .args(["clean", "--instance", STALE])
        .output()
        .unwrap();
    assert!(cleaned.status.success(), "{}", text(&cleaned));
    assert!(
        String::from_utf8_lossy(&cleaned.stdout).contains("removed 1 container(s)"),
        "{}",
        text(&cleaned)
    );

    // With the flag, both run, each under its own instance, and both runs stand.
    let (three, four) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let outs = both(start(three.path(), true), start(four.path(), true));
    for (o, dir) in outs.iter().zip([three.path(), four.path()]) {
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{stderr}");
        assert!(dir.join(STUDY).join("runs").join(RUN).is_dir(), "{stderr}");
    }
    assert_ne!(instance_of(three.path()), instance_of(four.path()));
    // The later start declared the earlier study as it began; the earlier declares the
    // later one if it saw it before its run was settled (it may have ended first). Every
    // declaration names the other study's instance.
    let journal = |dir: &Path| {
        let path = dir.join(STUDY).join(feedbench_core::ledger::journal::FILE);
        std::fs::read_to_string(path).unwrap()
    };
    let mut declared = 0;
    for (me, other) in [(three.path(), four.path()), (four.path(), three.path())] {
        let text = journal(me);
        let shared: Vec<&str> = text
            .lines()
            .filter(|l| l.contains(r#""event":"engine-shared""#))
            .collect();
        let named = format!("(instance {}", instance_of(other));
        assert!(shared.iter().all(|l| l.contains(&named)), "{text}");
        declared += shared.len();
    }
    assert!(declared >= 1, "neither study declared the other");
    assert_eq!(
        rt.block_on(common::leftovers(&engine, STUDY)),
        (vec![], vec![])
    );
}
