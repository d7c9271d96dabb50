//! The inputs digest read from disk and from a commit, and what an edit changes.

use std::path::Path;
use std::process::Command;

use super::tree::{GitTree, WorkingTree};
use super::*;
use crate::plan::load_file;

const PLAN: &str = r#"
study:
  name: inputs
  registered: 2026-12-01
  hypotheses:
    - {id: H1, text: The indexed arm serves more.}
  objective: {p99: 500ms, error-rate: 1%, window: 10s}
contenders:
  app:
    image: local/app:1
    build: {context: ../app}
    port: 8080
    readiness: /readyz
    liveness: /healthz
    variants:
      plain: {}
      indexed:
        services:
          database: {init: [../schema/schema.sql, ../schema/indexed.sql]}
topology:
  replicas: 1
  services:
    database:
      kind: database
      image: local/pg:1
      port: 5432
      init: [../schema/schema.sql]
  links:
    db: {service: database, listen: 15432}
  balancer: {image: local/haproxy:1}
  fault-proxy: {image: local/fp:1}
  load-generator: {image: local/k6:1}
  co-tenant: {image: local/stress:1}
caps:
  replica: {cpus: 0.25, memory: 256MiB}
  database: {cpus: 0.5, memory: 512MiB}
  fault-proxy: {cpus: 0.25, memory: 64MiB}
  balancer: {cpus: 0.25, memory: 64MiB}
  load-generator: {cpus: 0.5, memory: 256MiB}
workload:
  routes:
    feed: {path: "/feed", weight: 1, touches: [db]}
profiles:
  flat:
    constant: {rate: 10, duration: 10s, warmup: 2s}
matrix:
  repetitions: 1
  runs:
    - profile: flat
"#;

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
}

fn study() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    for (p, text) in [
        ("plans/study.yaml", PLAN),
        ("app/Dockerfile", "FROM scratch\n"),
        ("app/src/main.py", "print('hi')\n"),
        ("app/.dockerignore", "*.log\n"),
        ("schema/schema.sql", "create table t (id int);\n"),
        ("schema/indexed.sql", "create index on t (id);\n"),
    ] {
        std::fs::create_dir_all(r.join(p).parent().unwrap()).unwrap();
        std::fs::write(r.join(p), text).unwrap();
    }
    git(r, &["init", "-q"]);
    git(r, &["add", "."]);
    git(r, &["commit", "-q", "-m", "register"]);
    t
}

fn runs_now(root: &Path) -> (Inputs, Vec<crate::plan::RunSpec>) {
    let loaded = load_file(&root.join("plans/study.yaml"), None).unwrap();
    let inputs = Inputs::of_working_tree(&loaded).unwrap();
    let runs = expand(&loaded.plan, &inputs);
    (inputs, runs)
}

#[test]
fn the_working_tree_and_its_commit_read_alike_and_ignored_files_count_for_nothing() {
    let t = study();
    let r = t.path();
    // Ignored by the context's .dockerignore, and untracked: no input.
    std::fs::write(r.join("app/debug.log"), "noise").unwrap();
    let (now, _) = runs_now(r);
    let loaded = load_file(&r.join("plans/study.yaml"), None).unwrap();
    let head = Inputs::read(&loaded.plan, &GitTree::new(r, "HEAD", "plans/study.yaml")).unwrap();
    assert_eq!(now, head);
    let paths: Vec<(&str, &str)> = now
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.role.as_str()))
        .collect();
    assert_eq!(
        paths,
        [
            ("../app/.dockerignore", BUILD_CONTEXT),
            ("../app/Dockerfile", BUILD_CONTEXT),
            ("../app/src/main.py", BUILD_CONTEXT),
            ("../schema/indexed.sql", INIT),
            ("../schema/schema.sql", INIT),
            ("feedbench:templates/haproxy.cfg.j2", TEMPLATE),
            ("feedbench:templates/load.js.j2", TEMPLATE),
        ]
    );
    let schema = &now.files[4];
    assert_eq!(schema.bytes, 25);
    assert_eq!(schema.sha256, sha256_hex(b"create table t (id int);\n"));
    assert_eq!(
        uncommitted(&r.join("plans/study.yaml"), &now).unwrap(),
        Vec::<String>::new()
    );
}

#[test]
fn an_edited_init_script_changes_exactly_the_runs_that_use_it() {
    let t = study();
    let r = t.path();
    let (before, runs_before) = runs_now(r);
    std::fs::write(
        r.join("schema/indexed.sql"),
        "create index on t (id desc);\n",
    )
    .unwrap();
    let (after, runs_after) = runs_now(r);
    let hash = |runs: &[crate::plan::RunSpec], id: &str| {
        runs.iter().find(|x| x.id == id).unwrap().run_hash.clone()
    };
    assert_eq!(
        hash(&runs_before, "app.plain/flat/r1"),
        hash(&runs_after, "app.plain/flat/r1")
    );
    assert_ne!(
        hash(&runs_before, "app.indexed/flat/r1"),
        hash(&runs_after, "app.indexed/flat/r1")
    );
    assert_ne!(before.digest(), after.digest());
    let changes = changed(&before.files, &after.files);
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].path, "../schema/indexed.sql");
    assert_eq!(
        uncommitted(&r.join("plans/study.yaml"), &after).unwrap(),
        ["../schema/indexed.sql"]
    );
    // The manifest of the plain arm records no file of the indexed arm.
    let plain = runs_after
        .iter()
        .find(|x| x.id == "app.plain/flat/r1")
        .unwrap();
    let files = after.files_of(&plain.inputs);
    assert!(
        files.iter().all(|f| f.path != "../schema/indexed.sql"),
        "{files:?}"
    );
    assert!(files.iter().any(|f| f.path == "../schema/schema.sql"));
}

#[test]
fn a_context_file_edit_or_a_new_file_changes_the_contenders_runs() {
    let t = study();
    let r = t.path();
    let (_, a) = runs_now(r);
    std::fs::write(r.join("app/src/extra.py"), "x = 1\n").unwrap();
    let (now, b) = runs_now(r);
    assert!(a.iter().zip(&b).all(|(x, y)| x.run_hash != y.run_hash));
    assert_eq!(
        uncommitted(&r.join("plans/study.yaml"), &now).unwrap(),
        ["../app/src/extra.py"]
    );
}

#[test]
fn a_missing_input_is_named_with_the_field_and_the_tree() {
    let t = study();
    let r = t.path();
    // Loading checks that it exists; a file gone after that (or at a commit) is named here.
    let loaded = load_file(&r.join("plans/study.yaml"), None).unwrap();
    std::fs::remove_file(r.join("schema/indexed.sql")).unwrap();
    let e = Inputs::read(&loaded.plan, &WorkingTree::new(&r.join("plans"))).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("`../schema/indexed.sql`"), "{msg}");
    assert!(
        msg.contains("contenders.app.variants.indexed.services.database.init[1]"),
        "{msg}"
    );
    assert!(msg.contains("the working tree"), "{msg}");
    assert!(e.bad_input());
}

#[test]
fn absolute_paths_are_read_where_they_point() {
    let t = study();
    let r = t.path();
    let abs = r.canonicalize().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let text = PLAN
        .replace("../app", &abs.join("app").to_string_lossy())
        .replace("../schema", &abs.join("schema").to_string_lossy());
    std::fs::write(elsewhere.path().join("p.yaml"), text).unwrap();
    let loaded = load_file(&elsewhere.path().join("p.yaml"), None).unwrap();
    let inputs = Inputs::of_working_tree(&loaded).unwrap();
    let main = format!("{}/app/src/main.py", abs.display());
    let f = inputs
        .files
        .iter()
        .find(|f| f.path == main)
        .expect("read by its absolute path");
    assert_eq!(f.sha256, sha256_hex(b"print('hi')\n"));
}
