//! docs/architecture.md names modules that exist: every module path it spells, in backticks
//! or at the head of a line of its diagram (`run::execute`, `analysis::objective::met`), is a
//! module of the binary (`src/`) or of the core (`crates/core/src/`), or an item declared in
//! one (its last segment). A path that starts with a type (`StudyRequest::dir`) is not a
//! module path and is left out. A module renamed, moved or removed fails here until the
//! document follows it.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The module paths a text spells: in backticks, and at the head of a diagram line.
fn module_paths(text: &str) -> Vec<String> {
    let is_path = |s: &str| {
        s.contains("::")
            && s.split("::").all(|seg| {
                !seg.is_empty()
                    && seg
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            })
    };
    let mut out = Vec::new();
    for (i, quoted) in text.split('`').enumerate() {
        if i % 2 == 1 && is_path(quoted) {
            out.push(quoted.to_string());
        }
    }
    for line in text.lines() {
        let head = line.trim_start_matches(|c: char| c.is_whitespace() || "│▼◆".contains(c));
        let word = head.split_whitespace().next().unwrap_or("");
        let word = word.trim_end_matches(':');
        if is_path(word) {
            out.push(word.to_string());
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Whether `text` declares an item named `name` (the whole name: `fn met` is not `fn meter`).
fn declares(text: &str, name: &str) -> bool {
    let word_ends = |rest: &str| {
        !rest
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    };
    [
        "fn", "struct", "enum", "mod", "const", "trait", "type", "static",
    ]
    .iter()
    .any(|k| {
        let decl = format!("{k} {name}");
        text.match_indices(&decl)
            .any(|(i, _)| word_ends(&text[i + decl.len()..]))
    })
}

/// Whether `path` is a module under `root`, or an item of one.
fn resolves_in(root: &Path, path: &str) -> bool {
    let segments: Vec<&str> = path.split("::").collect();
    let (mut dir, mut file, mut i) = (root.to_path_buf(), None, 0);
    while i < segments.len() {
        let next = dir.join(segments[i]);
        let found = [next.with_extension("rs"), next.join("mod.rs")]
            .into_iter()
            .find(|f| f.is_file());
        let Some(f) = found else { break };
        file = Some(f);
        dir = next;
        i += 1;
    }
    match (file, &segments[i..]) {
        (Some(_), []) => true,
        (Some(f), [item]) => declares(&std::fs::read_to_string(f).unwrap(), item),
        _ => false,
    }
}

fn resolves(path: &str) -> bool {
    let path = path.strip_prefix("feedbench::").unwrap_or(path);
    [repo().join("src"), repo().join("crates/core/src")]
        .iter()
        .any(|root| resolves_in(root, path))
}

#[test]
fn every_module_path_in_the_architecture_exists() {
    let text = std::fs::read_to_string(repo().join("docs/architecture.md")).unwrap();
    let paths = module_paths(&text);
    assert!(paths.len() > 40, "too few paths found: {paths:?}");
    let missing: Vec<&String> = paths.iter().filter(|p| !resolves(p)).collect();
    assert!(
        missing.is_empty(),
        "docs/architecture.md names modules that do not exist: {missing:?}"
    );
}

#[test]
fn the_check_finds_paths_and_refuses_a_missing_module_or_item() {
    let text = "`run::execute` and `StudyRequest::dir`\n   ◆ rundir::events  typed\n`run::nowhere`, `analysis::objective::met`, `analysis::objective::nothing`";
    assert_eq!(
        module_paths(text),
        [
            "analysis::objective::met",
            "analysis::objective::nothing",
            "run::execute",
            "run::nowhere",
            "rundir::events"
        ]
    );
    assert!(resolves("run::execute") && resolves("rundir::events"));
    assert!(resolves("analysis::objective::met"));
    assert!(!resolves("run::nowhere") && !resolves("analysis::objective::nothing"));
    assert!(declares("pub fn meter() {}\npub fn met(", "met"));
    assert!(!declares("pub fn meter() {}", "met"));
}
