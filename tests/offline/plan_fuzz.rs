//! The loader never panics: arbitrary bytes, arbitrary YAML-shaped documents, and mutations
//! of the real study plan all end in a plan or in diagnostics.

use feedbench::plan::validate::Context;
use feedbench::plan::{load_str, LoadError};
use proptest::prelude::*;

fn load(text: &str) -> Result<(), Vec<String>> {
    let ctx = Context {
        host_cores: Some(2.0),
        exists: None,
    };
    match load_str("fuzz.yaml", text, &ctx) {
        Ok(_) => Ok(()),
        Err(LoadError::Invalid { diagnostics, .. }) => {
            // Every diagnostic is placed somewhere real.
            for d in &diagnostics {
                assert!(d.line >= 1 && d.column >= 1, "{d}");
            }
            Err(diagnostics.iter().map(|d| d.to_string()).collect())
        }
        Err(e) => panic!("unexpected error kind: {e}"),
    }
}

const KEYS: &[&str] = &[
    "study",
    "name",
    "contenders",
    "topology",
    "caps",
    "workload",
    "profiles",
    "faults",
    "analysis",
    "recovery",
    "hold",
    "window",
    "matrix",
    "runs",
    "profile",
    "fault",
    "inject",
    "link",
    "step-ramp",
    "constant",
    "rate",
    "cpus",
    "memory",
    "replica",
    "image",
    "port",
    "env",
    "variants",
    "order",
    "shuffled",
    "seed",
    "<<",
    "? x",
    "-",
    "&a",
    "*a",
];
const SCALARS: &[&str] = &[
    "",
    "~",
    "0",
    "-1",
    "1e309",
    ".nan",
    "0x",
    "0o9",
    "70% of ramp",
    "15s",
    "512MiB",
    "1%",
    "'q'",
    "\"d\"",
    "{{ links.db.host }}",
    "[",
    "]",
    "{",
    "}",
    "!!int x",
    "!t v",
    "*nope",
    "9007199254740993",
    "ünï",
    "|",
    ">",
    "%YAML 1.2",
    "---",
    "...",
];

/// YAML-shaped text: nested mappings and sequences of plan-like keys and awkward scalars.
fn yamlish() -> impl Strategy<Value = String> {
    let leaf = prop::sample::select(SCALARS).prop_map(|s| s.to_string());
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec((prop::sample::select(KEYS), inner.clone()), 0..6).prop_map(
                |kv| {
                    let body: Vec<String> = kv
                        .into_iter()
                        .map(|(k, v)| format!("{k}: {}", v.replace('\n', "\n  ")))
                        .collect();
                    format!("\n  {}", body.join("\n  "))
                }
            ),
            prop::collection::vec(inner.clone(), 0..5).prop_map(|items| {
                format!(
                    "\n- {}",
                    items
                        .iter()
                        .map(|i| i.replace('\n', "\n  "))
                        .collect::<Vec<_>>()
                        .join("\n- ")
                )
            }),
            prop::collection::vec(inner, 0..4).prop_map(|items| format!("[{}]", items.join(", "))),
        ]
    })
    .prop_map(|s| format!("root: {s}\n"))
}

fn study() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/experiments/study.yaml"
    ))
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_do_not_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = load(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn arbitrary_yaml_does_not_panic(text in yamlish()) {
        let _ = load(&text);
    }

    #[test]
    fn mutated_study_plans_do_not_panic(
        edits in prop::collection::vec((any::<prop::sample::Index>(), prop::sample::select(SCALARS)), 1..4),
        drop_line in any::<prop::sample::Index>(),
    ) {
        let mut text = study();
        for (at, with) in edits {
            // Replace the token after a `: ` with an awkward scalar.
            let spots: Vec<usize> = text.match_indices(": ").map(|(i, _)| i + 2).collect();
            let at = spots[at.index(spots.len())];
            let end = text[at..].find(['\n', ',', '}']).map_or(text.len(), |e| at + e);
            text.replace_range(at..end, with);
        }
        let mut lines: Vec<&str> = text.lines().collect();
        let i = drop_line.index(lines.len());
        lines.remove(i);
        let _ = load(&lines.join("\n"));
    }
}

#[test]
fn the_study_itself_loads() {
    assert_eq!(load(&study()), Ok(()));
}

#[test]
fn deep_nesting_and_alias_bombs_are_refused_not_fatal() {
    let deep = format!("a: {}{}\n", "[".repeat(10_000), "]".repeat(10_000));
    assert!(load(&deep).is_err());
    let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
        let p = i - 1;
        bomb.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    let err = load(&bomb).unwrap_err();
    assert!(err[0].contains("more than"), "{err:?}");
}
