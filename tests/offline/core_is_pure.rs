//! The core crate's purity, checked by the compiler's own dependency graph: `cargo tree`
//! of `feedbench-core` (normal and build edges) holds no async runtime, engine client or
//! HTTP client. The same listing of the binary crate must hold them, so the check is known
//! to see what it looks for.

use std::path::PathBuf;
use std::process::Command;

const FORBIDDEN: [&str; 5] = ["tokio", "bollard", "hyper", "reqwest", "futures-util"];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The crate names in `cargo tree -p PACKAGE -e normal,build`, one per line.
fn tree(package: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(repo())
        .args(["tree", "--offline", "--locked", "-p", package])
        .args(["-e", "normal,build", "--prefix", "none", "--format", "{p}"])
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo tree -p {package} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn the_core_crate_depends_on_no_async_runtime_engine_or_http_client() {
    let core = tree("feedbench-core");
    assert!(core.iter().any(|c| c == "serde"), "{core:?}");
    for name in FORBIDDEN {
        assert!(
            !core.iter().any(|c| c == name),
            "feedbench-core depends on {name}: {core:?}"
        );
    }
    let binary = tree("feedbench");
    for name in ["tokio", "bollard"] {
        assert!(
            binary.iter().any(|c| c == name),
            "the listing of the binary crate should hold {name}: {binary:?}"
        );
    }
}

#[test]
fn the_pure_modules_live_in_the_core_crate() {
    let src = repo().join("crates/core/src");
    for module in [
        "plan", "spec", "rundir", "validity", "analysis", "ledger", "audit",
    ] {
        assert!(src.join(module).join("mod.rs").is_file(), "{module}");
        assert!(
            !repo().join("src").join(module).exists(),
            "src/{module} should be in the core crate"
        );
    }
}

/// Which core module may use which: each arrow points down, so the core has no cycle. A
/// module not listed, or a use not allowed, fails with the file that makes it.
const MAY_USE: [(&str, &[&str]); 14] = [
    ("confine", &[]),
    ("evidence", &[]),
    ("files", &[]),
    ("git", &[]),
    ("plan", &[]),
    ("analysis", &["plan"]),
    ("spec", &["plan"]),
    ("engines", &["plan"]),
    ("inputs", &["plan", "spec", "git", "files"]),
    (
        "rundir",
        &["plan", "analysis", "spec", "evidence", "files", "confine"],
    ),
    (
        "validity",
        &["plan", "analysis", "evidence", "spec", "rundir"],
    ),
    (
        "ledger",
        &[
            "plan", "evidence", "files", "git", "rundir", "confine", "inputs", "engines",
        ],
    ),
    (
        "audit",
        &[
            "plan", "ledger", "git", "rundir", "files", "evidence", "confine", "inputs",
        ],
    ),
    (
        "report",
        &[
            "plan", "analysis", "spec", "rundir", "ledger", "audit", "git", "files", "evidence",
            "confine",
        ],
    ),
];

#[test]
fn the_core_modules_depend_downwards_only() {
    let src = repo().join("crates/core/src");
    let mut seen = Vec::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if name == "lib" {
            continue;
        }
        let allowed = MAY_USE
            .iter()
            .find(|(m, _)| *m == name)
            .unwrap_or_else(|| panic!("core module `{name}` is not in MAY_USE"))
            .1;
        seen.push(name.clone());
        let mut files = Vec::new();
        let mut stack = vec![path];
        while let Some(p) = stack.pop() {
            if p.is_dir() {
                stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            for (i, _) in text.match_indices("crate::") {
                let used: String = text[i + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                assert!(
                    used == name || allowed.contains(&used.as_str()),
                    "{} uses crate::{used}, which `{name}` may not (allowed: {allowed:?})",
                    f.display()
                );
            }
        }
    }
    assert_eq!(seen.len(), MAY_USE.len(), "{seen:?}");
}
