//! The plan's schema and hash checked by tools nobody on the project wrote: Python's
//! `jsonschema` validates every example plan against schemas/plan.schema.json, and the plan
//! hash is recomputed from docs/plan.md's recipe with ruamel.yaml and the `jcs` package.
//! The tests need those Python packages, so they are `#[ignore]`d: `-- --include-ignored`
//! runs them (scripts/test does, after installing tests/python/requirements.txt), and they
//! fail when a package is missing.

use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Python tools; panics, saying how to install them, when they are missing.
fn python() -> Command {
    let probe = Command::new("python3")
        .args(["-c", "import jsonschema, jcs, ruamel.yaml"])
        .output();
    match probe {
        Ok(o) if o.status.success() => {
            let mut c = Command::new("python3");
            c.current_dir(repo()).arg("tests/python/plan_tools.py");
            c
        }
        other => {
            let why = match other {
                Ok(o) => String::from_utf8_lossy(&o.stderr).into_owned(),
                Err(e) => e.to_string(),
            };
            panic!(
                "this test needs python3 with jsonschema, jcs and ruamel.yaml ({why}); \
                 `pip install -r tests/python/requirements.txt`"
            )
        }
    }
}

fn plans() -> Vec<String> {
    let mut out = Vec::new();
    for dir in ["experiments", "tests/plans/valid"] {
        for e in std::fs::read_dir(repo().join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "yaml") {
                out.push(format!(
                    "{dir}/{}",
                    p.file_name().unwrap().to_string_lossy()
                ));
            }
        }
    }
    out.sort();
    out
}

#[test]
#[ignore = "needs python3 with jsonschema, jcs and ruamel.yaml"]
fn jsonschema_accepts_every_example_plan() {
    let mut py = python();
    let out = py
        .arg("validate")
        .arg("schemas/plan.schema.json")
        .args(plans())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
#[ignore = "needs python3 with jsonschema, jcs and ruamel.yaml"]
fn jsonschema_rejects_plans_the_schema_can_judge() {
    for bad in [
        "unknown-top-level-field",
        "bad-duration",
        "unknown-fault-kind",
        "bad-memory-unit",
    ] {
        let mut py = python();
        let out = py
            .arg("validate")
            .arg("schemas/plan.schema.json")
            .arg(format!("tests/plans/invalid/{bad}.yaml"))
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(1),
            "{bad}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

#[test]
#[ignore = "needs python3 with jsonschema, jcs and ruamel.yaml"]
fn the_plan_hash_recipe_reproduces_in_python() {
    let mut py = python();
    let out = py.arg("hash").args(plans()).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for line in text.lines() {
        let (hash, plan) = line.split_once("  ").unwrap();
        let ours = Command::new(env!("CARGO_BIN_EXE_feedbench"))
            .current_dir(repo())
            .args(["plan", "--format", "json", plan])
            .output()
            .unwrap();
        let json: serde_json::Value = serde_json::from_slice(&ours.stdout).unwrap();
        assert_eq!(json["plan_hash"], hash, "{plan}");
    }
    assert_eq!(text.lines().count(), plans().len());
}
