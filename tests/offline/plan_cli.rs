//! `feedbench plan` and `feedbench schema` on real plan files: valid plans expand, invalid
//! plans fail with their expected diagnostics, hashes are stable where they must be.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value as Json;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn feedbench() -> Command {
    let mut c = Command::cargo_bin("feedbench").unwrap();
    c.current_dir(repo());
    c
}

fn plan_json(path: &Path) -> Json {
    let out = feedbench()
        .args(["plan", "--format", "json"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn every_invalid_plan_exits_2_naming_line_column_and_field() {
    let dir = repo().join("tests/plans/invalid");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 40, "only {} invalid plans", files.len());
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let expect = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# expect: "))
            .unwrap_or_else(|| panic!("{} has no `# expect:` first line", file.display()));
        let rel = format!(
            "tests/plans/invalid/{}",
            file.file_name().unwrap().to_string_lossy()
        );
        let out = feedbench().args(["plan", &rel]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{rel}: {stderr}");
        assert!(
            stderr.contains(&format!("error: {rel}:{expect}")),
            "{rel}: expected `{expect}`, got:\n{stderr}"
        );
        assert!(!stderr.contains("panicked"), "{rel}: {stderr}");
    }
}

/// Issue 15 asks `feedbench plan` to refuse at least 15 wrong hypothesis checks, each with
/// its message and position; the walk above checks each one's `# expect:` line.
#[test]
fn at_least_fifteen_wrong_checks_are_refused_at_their_position() {
    let dir = repo().join("tests/plans/invalid");
    let checks = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap_or_default())
        .filter(|text| {
            text.lines().next().is_some_and(|l| {
                l.starts_with("# expect: ")
                    && l.contains(": study.hypotheses[")
                    && l.contains("].check: ")
            })
        })
        .count();
    assert!(checks >= 15, "only {checks} wrong checks");
}

/// The plan's checks name the report's rows by the report's own words; the core's layering
/// keeps the two lists apart, so this holds them together.
#[test]
fn checks_name_the_saturation_definitions_and_replicas_row_as_the_report_writes_them() {
    use feedbench_core::plan::check::functions;
    use feedbench_core::report;
    assert_eq!(functions::DEFINITIONS, report::ramp::DEFINITIONS);
    assert_eq!(functions::REPLICAS, report::usage::REPLICAS);
}

#[test]
fn a_missing_plan_file_is_bad_input() {
    let out = feedbench()
        .args(["plan", "experiments/nope.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("cannot read the plan `experiments/nope.yaml`"));
}

#[test]
fn usage_errors_exit_2() {
    let out = feedbench()
        .args(["plan", "--format", "xml", "x.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Contenders as the plan expands them: each variant, or the contender itself.
fn expanded_contenders(doc: &serde_yaml::Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (name, c) in doc["contenders"].as_mapping().unwrap() {
        let name = name.as_str().unwrap().to_string();
        match c.get("variants").and_then(|v| v.as_mapping()) {
            Some(vs) => {
                for v in vs.keys() {
                    out.push((name.clone(), format!("{name}.{}", v.as_str().unwrap())));
                }
            }
            None => out.push((name.clone(), name.clone())),
        }
    }
    out
}

#[test]
fn the_study_expands_into_contenders_times_entries_times_repetitions() {
    let path = repo().join("experiments/study.yaml");
    let doc: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let contenders = expanded_contenders(&doc);
    let reps = doc["matrix"]["repetitions"].as_u64().unwrap() as usize;
    let mut expected = 0;
    for entry in doc["matrix"]["runs"].as_sequence().unwrap() {
        expected += match entry.get("contenders") {
            None => contenders.len(),
            Some(sel) => {
                let sel: Vec<&str> = sel
                    .as_sequence()
                    .unwrap()
                    .iter()
                    .map(|s| s.as_str().unwrap())
                    .collect();
                contenders
                    .iter()
                    .filter(|(d, n)| sel.contains(&d.as_str()) || sel.contains(&n.as_str()))
                    .count()
            }
        } * reps;
    }

    let json = plan_json(&path);
    assert_eq!(json["format_version"], 1);
    assert_eq!(json["study"], "feed-runtimes");
    let hash = json["plan_hash"].as_str().unwrap();
    assert!(
        hash.len() == 64
            && hash
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    );
    let runs = json["runs"].as_array().unwrap();
    assert_eq!(runs.len(), expected);
    assert!(json["estimated_duration_s"].as_f64().unwrap() > 0.0);
    assert!(json["warnings"].is_array());
    let mut seen = std::collections::HashSet::new();
    let mut position = HashMap::new();
    for (i, r) in runs.iter().enumerate() {
        let id = r["id"].as_str().unwrap();
        assert!(seen.insert(id.to_string()), "duplicate run id {id}");
        position.insert(id.to_string(), i);
        assert_eq!(r["run_hash"].as_str().unwrap().len(), 64);
        assert!(r["fault"].is_null() || r["fault"].is_string());
        assert!(r["repetition"].as_u64().unwrap() >= 1);
        let expect_id = match r["fault"].as_str() {
            Some(f) => format!(
                "{}/{}+{f}/r{}",
                r["contender"].as_str().unwrap(),
                r["profile"].as_str().unwrap(),
                r["repetition"]
            ),
            None => format!(
                "{}/{}/r{}",
                r["contender"].as_str().unwrap(),
                r["profile"].as_str().unwrap(),
                r["repetition"]
            ),
        };
        assert_eq!(id, expect_id);
    }
    // A baseline at 70% of saturation depends on the same contender's ramp in the same
    // repetition, and runs after it.
    for (i, r) in runs.iter().enumerate() {
        let deps: Vec<&str> = r["depends_on"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_str().unwrap())
            .collect();
        if ["ramp", "ramp-slow", "ramp-hot"].contains(&r["profile"].as_str().unwrap()) {
            assert!(deps.is_empty());
        } else {
            let ramp = format!(
                "{}/ramp/r{}",
                r["contender"].as_str().unwrap(),
                r["repetition"]
            );
            assert_eq!(deps, vec![ramp.as_str()]);
            assert!(position[&ramp] < i, "{} runs before its ramp", r["id"]);
        }
    }

    let human = feedbench()
        .args(["plan", "experiments/study.yaml"])
        .output()
        .unwrap();
    assert!(human.status.success());
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains(&format!("plan hash  {hash}")));
    // The study's ramps stop at their knee: the estimate is an upper bound.
    assert!(
        text.contains(&format!("{expected} runs, at most ")),
        "{text}"
    );
    assert!(text.contains("feed-rs.indexed/baseline+db-cut/r2"));
}

/// A copy of a plan in a temporary tree laid out like the repository, so that its relative
/// paths (init scripts, build contexts) resolve.
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("experiments")).unwrap();
        // The plan's inputs as in the project: its build contexts, init scripts and the
        // workspace's lock file, which the cargo-built images' sources include.
        for sub in ["contenders", "images", "Cargo.lock"] {
            std::os::unix::fs::symlink(repo().join(sub), dir.path().join(sub)).unwrap();
        }
        Scratch { dir }
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.dir.path().join("experiments").join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

/// Reverses the key order of every mapping.
fn reverse_keys(v: &serde_yaml::Value) -> serde_yaml::Value {
    match v {
        serde_yaml::Value::Mapping(m) => {
            let mut out = serde_yaml::Mapping::new();
            for (k, val) in m.iter().collect::<Vec<_>>().into_iter().rev() {
                out.insert(k.clone(), reverse_keys(val));
            }
            serde_yaml::Value::Mapping(out)
        }
        serde_yaml::Value::Sequence(s) => {
            serde_yaml::Value::Sequence(s.iter().map(reverse_keys).collect())
        }
        other => other.clone(),
    }
}

fn run_hashes(json: &Json) -> HashMap<String, String> {
    json["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_string(),
                r["run_hash"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn formatting_key_order_and_comments_do_not_change_the_plan_hash() {
    let original = plan_json(&repo().join("experiments/study.yaml"));
    let text = std::fs::read_to_string(repo().join("experiments/study.yaml")).unwrap();
    let doc: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    // Re-emitted: block style instead of flow, other quoting, keys reversed, the whole
    // document indented by three spaces, and a comment on every key that opens a block.
    let emitted = serde_yaml::to_string(&reverse_keys(&doc)).unwrap();
    let mut rewritten = String::from("# rewritten by a test\n\n");
    for line in emitted.lines() {
        rewritten.push_str("   ");
        rewritten.push_str(line);
        if line.ends_with(':') {
            rewritten.push_str("   # a comment");
        }
        rewritten.push('\n');
    }
    assert_ne!(rewritten, text);
    let scratch = Scratch::new();
    let again = plan_json(&scratch.write("study.yaml", &rewritten));
    assert_eq!(original["plan_hash"], again["plan_hash"]);
    assert_eq!(run_hashes(&original), run_hashes(&again));
}

/// Applies `edit` to the study's document and returns (plan hash changed, changed run ids).
fn edit_study(edit: impl FnOnce(&mut serde_yaml::Value)) -> (bool, Vec<String>, usize) {
    let original = plan_json(&repo().join("experiments/study.yaml"));
    let text = std::fs::read_to_string(repo().join("experiments/study.yaml")).unwrap();
    let mut doc: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    edit(&mut doc);
    let scratch = Scratch::new();
    let edited = plan_json(&scratch.write("study.yaml", &serde_yaml::to_string(&doc).unwrap()));
    let (before, after) = (run_hashes(&original), run_hashes(&edited));
    assert_eq!(before.len(), after.len());
    let mut changed: Vec<String> = before
        .iter()
        .filter(|(id, h)| after[*id] != **h)
        .map(|(id, _)| id.clone())
        .collect();
    changed.sort();
    (
        original["plan_hash"] != edited["plan_hash"],
        changed,
        before.len(),
    )
}

#[test]
fn one_contenders_cap_changes_only_that_contenders_run_hashes() {
    let (plan_changed, changed, total) = edit_study(|doc| {
        doc["contenders"]["feed-py"]["caps"] =
            serde_yaml::from_str("{replica: {cpus: 0.3, memory: 512MiB}}").unwrap();
    });
    assert!(plan_changed);
    assert!(!changed.is_empty() && changed.len() < total);
    let expected: Vec<String> = {
        let json = plan_json(&repo().join("experiments/study.yaml"));
        let mut v: Vec<String> = run_hashes(&json)
            .into_keys()
            .filter(|id| id.starts_with("feed-py."))
            .collect();
        v.sort();
        v
    };
    assert_eq!(changed, expected);
}

#[test]
fn one_faults_window_changes_only_its_runs() {
    let (plan_changed, changed, _) = edit_study(|doc| {
        doc["faults"]["db-cut"]["observe"] = "2m30s".into();
    });
    assert!(plan_changed);
    assert!(!changed.is_empty());
    assert!(
        changed.iter().all(|id| id.contains("+db-cut/")),
        "{changed:?}"
    );
}

#[test]
fn a_shared_cap_changes_every_run_hash_and_a_note_changes_none() {
    let (plan_changed, changed, total) = edit_study(|doc| {
        doc["caps"]["database"]["cpus"] = 0.75.into();
    });
    assert!(plan_changed);
    assert_eq!(changed.len(), total);
    let (plan_changed, changed, _) = edit_study(|doc| {
        doc["study"]["notes"] = "Edited notes.".into();
    });
    assert!(plan_changed, "any change of value changes the plan hash");
    assert!(
        changed.is_empty(),
        "notes do not define any run: {changed:?}"
    );
}

#[test]
fn a_named_workload_changes_only_the_runs_of_the_profiles_that_send_it() {
    let warm = "{routes: {feed: {path: \"/feed?viewer={viewer}\", weight: 1, touches: [db]}}, \
               ids: {viewer: {min: 1, max: 50}}}";
    // Declared but sent by no profile: the plan changes, no run does.
    let (plan_changed, changed, _) = edit_study(|doc| {
        doc["workloads"]["warm"] = serde_yaml::from_str(warm).unwrap();
    });
    assert!(plan_changed);
    assert!(changed.is_empty(), "{changed:?}");
    // Sent by the soak profile: exactly the soak runs change (no run takes its rate from a
    // soak, so nothing downstream moves).
    let (plan_changed, changed, _) = edit_study(|doc| {
        doc["workloads"]["warm"] = serde_yaml::from_str(warm).unwrap();
        doc["profiles"]["soak"]["soak"]["workload"] = "warm".into();
    });
    assert!(plan_changed);
    let soaks: Vec<String> = {
        let json = plan_json(&repo().join("experiments/study.yaml"));
        let mut v: Vec<String> = run_hashes(&json)
            .into_keys()
            .filter(|id| id.contains("/soak/"))
            .collect();
        v.sort();
        v
    };
    assert!(!soaks.is_empty());
    assert_eq!(changed, soaks);
}

#[test]
fn placing_the_load_generator_apart_changes_every_run_hash_and_the_default_none() {
    let (plan_changed, changed, total) = edit_study(|doc| {
        doc["placement"] = serde_yaml::from_str("{load-generator: apart}").unwrap();
    });
    assert!(plan_changed);
    assert_eq!(
        changed.len(),
        total,
        "placement is method: in every run's hash"
    );
    let (plan_changed, changed, _) = edit_study(|doc| {
        doc["placement"] = serde_yaml::from_str("{load-generator: together}").unwrap();
    });
    assert!(plan_changed, "any change of value changes the plan hash");
    assert!(changed.is_empty(), "the default, written out: {changed:?}");
}

#[test]
fn a_plan_placing_the_load_generator_apart_is_refused_on_one_engine_before_anything_is_written() {
    let text = std::fs::read_to_string(repo().join("experiments/smoke.yaml")).unwrap();
    let scratch = Scratch::new();
    let plan = scratch.write(
        "smoke.yaml",
        &format!("{text}\nplacement: {{load-generator: apart}}\n"),
    );
    let results = scratch.dir.path().join("results");
    for command in ["run", "pilot"] {
        let out = feedbench()
            .arg(command)
            .arg(&plan)
            .arg("--results")
            .arg(&results)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
        assert!(
            stderr.contains("cannot be placed on these engines")
                && stderr.contains("group 0 runs it on `local`"),
            "{command}: {stderr}"
        );
        assert!(!results.exists(), "{command} wrote results");
    }
}

#[test]
fn a_gates_change_changes_the_plan_hash_and_no_run_hash() {
    // The gate judges a contender before its first run; it does not change what a run does.
    let (plan_changed, changed, _) = edit_study(|doc| {
        doc["contenders"]["feed-rs"]["gate"]["timeout"] = "7m".into();
    });
    assert!(plan_changed);
    assert!(changed.is_empty(), "{changed:?}");
}

#[test]
fn the_analysis_settings_change_the_plan_hash_and_no_run_hash() {
    // They are pre-registered with the plan; they judge what a run recorded, they do not
    // change what a run does.
    let (plan_changed, changed, _) = edit_study(|doc| {
        doc["analysis"] = serde_yaml::from_str("{recovery: {hold: 20s}}").unwrap();
    });
    assert!(plan_changed);
    assert!(changed.is_empty(), "{changed:?}");
    let (plan_changed, changed, _) = edit_study(|doc| {
        doc["analysis"] =
            serde_yaml::from_str("{recovery: {throughput-tolerance: 2%, latency-tolerance: 0%}}")
                .unwrap();
    });
    assert!(plan_changed);
    assert!(changed.is_empty(), "{changed:?}");
}

#[test]
fn a_plan_without_an_analysis_section_keeps_the_hash_it_was_registered_with() {
    // The hash is of the document as written, so a section it does not write adds nothing
    // to it: the registered study hashes as it did before the section existed. (Pinned
    // again when its hypotheses got their checks, as the study was calibrated, and when the
    // freeze and H7 were added by amendment, each before any run of it.)
    let path = repo().join("experiments/study.yaml");
    let doc: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(doc.get("analysis").is_none());
    assert_eq!(
        plan_json(&path)["plan_hash"],
        "5da47113c3f5665799307617a010ebd8136a8bbbeb88c3de27c6ab993e9aa067",
        "experiments/study.yaml is registered: its plan hash must not change"
    );
}

#[test]
fn a_ramps_change_reaches_the_runs_that_depend_on_it() {
    let (_, changed, _) = edit_study(|doc| {
        doc["profiles"]["ramp"]["step-ramp"]["max"] = 120.into();
    });
    // Baselines do not name the ramp's fields; they change through their dependency's hash.
    assert!(
        changed.iter().any(|id| id.contains("/baseline")),
        "dependent runs must change too"
    );
}

/// A study of two static web servers: no database, no object store, and no cap for either.
#[test]
fn a_plan_without_a_database_plans_and_shows_a_topology_without_one() {
    let plan = repo().join("tests/plans/valid/static-web.yaml");
    let text = std::fs::read_to_string(&plan).unwrap();
    let doc: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    assert!(doc["caps"].get("database").is_none());
    assert!(doc["topology"]["services"].as_mapping().unwrap().is_empty());
    let json = plan_json(&plan);
    let runs = json["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 12);
    for run in runs {
        let id = run["id"].as_str().unwrap();
        let out = feedbench()
            .args(["topology", "tests/plans/valid/static-web.yaml", "--run", id])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{id}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let topo: Json = serde_json::from_slice(&out.stdout).unwrap();
        let roles: Vec<String> = topo["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| match &c["role"] {
                Json::String(s) => s.clone(),
                other => other.as_object().unwrap().keys().next().unwrap().clone(),
            })
            .collect();
        assert_eq!(
            roles,
            [
                "fault-proxy",
                "replica",
                "replica",
                "balancer",
                "load-generator"
            ],
            "{id}"
        );
        assert_eq!(topo["proxies"], serde_json::json!([]), "{id}");
    }
}

#[test]
fn the_committed_schema_is_current() {
    let out = feedbench().arg("schema").output().unwrap();
    assert!(out.status.success());
    let committed = std::fs::read_to_string(repo().join("schemas/plan.schema.json")).unwrap();
    assert!(
        committed == String::from_utf8_lossy(&out.stdout),
        "schemas/plan.schema.json is stale: run `cargo run -- schema > schemas/plan.schema.json`"
    );
}

#[test]
fn every_example_plan_is_valid_and_points_editors_at_the_schema() {
    for dir in ["experiments", "tests/plans/valid"] {
        for entry in std::fs::read_dir(repo().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "yaml") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(
                text.starts_with("# yaml-language-server: $schema="),
                "{} does not name the schema on its first line",
                path.display()
            );
            plan_json(&path);
        }
    }
}

#[test]
fn the_estimate_is_an_upper_bound_when_ramps_may_stop_at_their_knee() {
    let json = plan_json(&repo().join("experiments/smoke.yaml"));
    assert_eq!(json["runs_that_may_stop_early"], 1, "{json:#}");
    let out = feedbench()
        .args(["plan", "experiments/smoke.yaml"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("3 runs, at most ") && text.contains("1 ramp run(s) stop at their knee"),
        "{text}"
    );
    // Every run of the ledger's plan has a fixed length: the estimate is just that.
    let out = feedbench()
        .args(["plan", "tests/plans/docker/ledger.yaml"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("3 runs, about ") && !text.contains("upper bound"),
        "{text}"
    );
}

/// `plan --engines FILE` reads the engines file (reaching none of its engines) and prints the
/// wall time on its groups at once; a file it cannot use is bad input naming its field.
#[test]
fn plan_with_an_engines_file_estimates_the_wall_time_on_its_groups() {
    let dir = tempfile::tempdir().unwrap();
    let engines = |groups: &str| {
        let path = dir.path().join(format!("engines-{}.yaml", groups.len()));
        std::fs::write(
            &path,
            format!(
                "format_version: 1\nengines:\n  here: {{endpoint: \"unix:///var/run/docker.sock\", address: 10.99.0.1}}\n  second: {{endpoint: \"unix:///nonexistent/docker.sock\", address: 10.99.0.2}}\ngroups:\n{groups}"
            ),
        )
        .unwrap();
        path
    };
    let plan = "tests/plans/docker/parallel.yaml";
    let json = |file: &Path| -> Json {
        let out = feedbench()
            .args(["plan", plan, "--format", "json", "--engines"])
            .arg(file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let one = plan_json(&repo().join(plan));
    assert_eq!(one["groups"], 1);
    assert_eq!(one["estimated_wall_s"], one["estimated_duration_s"]);
    let two = json(&engines("  - {system: here}\n  - {system: second}\n"));
    assert_eq!(two["groups"], 2);
    assert_eq!(two["estimated_duration_s"], one["estimated_duration_s"]);
    // Both ramps at once, then both baselines: half the sum, these four runs being alike.
    let (sum, wall) = (
        two["estimated_duration_s"].as_f64().unwrap(),
        two["estimated_wall_s"].as_f64().unwrap(),
    );
    assert!((wall - sum / 2.0).abs() < 1e-6, "{wall} of {sum}");
    let out = feedbench()
        .args(["plan", plan, "--engines"])
        .arg(engines("  - {system: here}\n  - {system: second}\n"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("on 2 groups of engines at once: at most 1m50s of wall time"),
        "{text}"
    );
    // An engine in two groups is refused at its field, exit 2.
    let out = feedbench()
        .args(["plan", plan, "--engines"])
        .arg(engines(
            "  - {system: here}\n  - {system: here, load-generator: second}\n",
        ))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("groups[1]"), "{err}");
}

/// A sizing as a pilot of the smoke plan writes it: one arm's p99 on the ramp.
fn smoke_sizing(log_sd: f64) -> feedbench_core::report::sizing::Sizing {
    use feedbench_core::report::sizing::{Sizing, Spread, FORMAT_VERSION};
    Sizing {
        format_version: FORMAT_VERSION,
        pilot: 2,
        plan_hash: "0".repeat(64),
        repetitions: 3,
        paired: false,
        comparisons: 0,
        level: 0.05,
        smallest_effect: Some(0.1),
        spreads: vec![Spread {
            metric: "latency_p99".into(),
            definition: String::new(),
            container: String::new(),
            profile: "ramp".into(),
            fault: String::new(),
            arm: "feed-rs".into(),
            values: vec![100.0, 110.0, 121.0],
            median: Some(110.0),
            log_sd: Some(log_sd),
            why_not: None,
            needed: None,
        }],
        left_out: Vec::new(),
    }
}

/// The newest pilot's sizing is read from `--results`: a figure the registered repetitions
/// cannot show the plan's smallest effect on is warned of, naming the figure, the pilot and
/// what it needs; a damaged sizing is named; `--format json` carries the same warnings.
#[test]
fn plan_warns_when_the_newest_pilots_spread_needs_more_repetitions() {
    let results = tempfile::tempdir().unwrap();
    let area = results.path().join("smoke/pilots/002");
    std::fs::create_dir_all(&area).unwrap();
    std::fs::create_dir_all(results.path().join("smoke/pilots/003")).unwrap();
    let sizing = area.join(feedbench_core::rundir::layout::PILOT_SIZING);
    std::fs::write(&sizing, serde_json::to_vec(&smoke_sizing(0.095)).unwrap()).unwrap();
    let plan = |format: &str| {
        let out = feedbench()
            .args([
                "plan",
                "experiments/smoke.yaml",
                "--format",
                format,
                "--results",
            ])
            .arg(results.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (_, stderr) = plan("human");
    let warned: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("fall short"))
        .collect();
    assert_eq!(warned.len(), 1, "{stderr}");
    let w = warned[0];
    assert!(
        w.starts_with("warning: experiments/smoke.yaml: matrix.repetitions: 1 repetition(s) fall short for latency_p99 of feed-rs on ramp: its spread across pilot 2's 3 repetitions"),
        "{w}"
    );
    // The fabricated sizing's plan hash is no version of the plan's.
    assert!(
        w.contains(&format!(
            "`{}`, of an earlier version of the plan;",
            sizing.display()
        )),
        "{w}"
    );
    assert!(w.contains("sd of ln 0.095) needs ") && w.contains(" of each arm to show the plan's smallest effect, 10%, in 80% of studies at level 0.0500"), "{w}");
    let (stdout, _) = plan("json");
    let json: Json = serde_json::from_str(&stdout).unwrap();
    assert!(
        json["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x.as_str() == Some(&w["warning: ".len()..])),
        "{json}"
    );
    // Damaged: named, and the plan still plans.
    std::fs::write(&sizing, "{\"format_version\": 1, \"pilot\"").unwrap();
    let (_, stderr) = plan("human");
    assert!(
        stderr.contains(&format!("`{}` cannot be read (", sizing.display())),
        "{stderr}"
    );
    // Without a pilot's sizing, nothing is said of sizing.
    std::fs::remove_file(&sizing).unwrap();
    let (_, stderr) = plan("human");
    assert!(
        !stderr.contains("sizing") && !stderr.contains("fall short"),
        "{stderr}"
    );
}
