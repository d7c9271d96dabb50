//! One owner for the study directory's file names: every name `rundir` defines is spelled
//! as a string literal in `crates/core/src/rundir/` alone. Other modules use the constants.
//! Test code (files named tests.rs, and everything after a file's `#[cfg(test)]`) is exempt,
//! as are the docs and outside recomputations.

use std::path::{Path, PathBuf};

use feedbench::rundir::{self, layout};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The names a reader or writer of a study directory might spell.
fn names() -> Vec<&'static str> {
    let mut v = rundir::FILE_NAMES.to_vec();
    v.extend([
        rundir::LOGS_DIR,
        layout::LOCK,
        layout::GATES,
        layout::RUNS,
        layout::INTERRUPTED,
        layout::ABORTED,
        layout::SUPERSEDED,
        layout::PILOTS,
        layout::PILOT_RECORD,
        layout::PILOT_PLAN,
    ]);
    v
}

/// Where a name is spelled outside the owner: `file:line: "name"`.
fn spelled_outside(root: &Path) -> Vec<String> {
    let owner = root.join("crates/core/src/rundir");
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("crates/core/src"), &mut files);
    let mut found = Vec::new();
    for f in files {
        if f.starts_with(&owner) || f.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("#[cfg(test)]") {
                break;
            }
            if line.trim_start().starts_with("//") {
                continue;
            }
            for name in names() {
                // A file name anywhere; a bare word (`runs`, `logs`) only as a path part,
                // since it is also an ordinary word (a JSON key, say).
                let needle = if name.contains('.') {
                    format!("\"{name}\"")
                } else {
                    format!("join(\"{name}\")")
                };
                if line.contains(&needle) {
                    found.push(format!("{}:{}: \"{name}\"", f.display(), i + 1));
                }
            }
        }
    }
    found
}

#[test]
fn study_directory_names_are_spelled_in_rundir_alone() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let found = spelled_outside(&root);
    assert!(
        found.is_empty(),
        "use the constants of feedbench_core::rundir instead:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_finds_a_name_spelled_elsewhere() {
    let root = tempfile::tempdir().unwrap();
    for d in ["src/run", "crates/core/src/rundir"] {
        std::fs::create_dir_all(root.path().join(d)).unwrap();
    }
    std::fs::write(
        root.path().join("crates/core/src/rundir/mod.rs"),
        "pub const X: &str = \"requests.csv\";\n",
    )
    .unwrap();
    std::fs::write(
        root.path().join("src/run/x.rs"),
        "fn f() { open(\"events.csv\") }\nfn g() { j[\"runs\"]; d.join(\"logs\") }\n#[cfg(test)]\nmod tests { \"run.json\" }\n",
    )
    .unwrap();
    let found = spelled_outside(root.path());
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].ends_with("x.rs:1: \"events.csv\""), "{found:?}");
    assert!(found[1].ends_with("x.rs:2: \"logs\""), "{found:?}");
}
