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
