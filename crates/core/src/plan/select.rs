//! Picking runs by id: the `*`/`?` wildcard match behind `feedbench run --only`, and the
//! runs a selection needs (those its runs take a rate from), for a fresh pilot area.

use std::collections::BTreeSet;

use super::RunSpec;

/// Does `pattern` match the whole of `text`? `*` matches any run of characters (none
/// included), `?` exactly one, anything else itself. Run ids are ASCII, so a character is a
/// byte; the match is over bytes.
///
/// Linear scan with one backtrack point: on a mismatch the last `*` seen takes one more byte
/// and the scan resumes after it. An earlier `*` never needs to be revisited, since the last
/// one can absorb whatever it would have, so this is at most O(len(pattern) · len(text)),
/// and O(len(pattern) + len(text)) for patterns with one `*`.
pub fn matches(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let (mut pi, mut ti) = (0, 0);
    // The pattern index just after the last `*`, and the text index it is matched up to.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some(b'*') => {
                pi += 1;
                star = Some((pi, ti));
            }
            Some(&c) if c == b'?' || c == t[ti] => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// The runs `pattern` matches (all without one) and every run they depend on, transitively,
/// in plan order.
pub fn with_dependencies(runs: &[RunSpec], pattern: Option<&str>) -> Vec<RunSpec> {
    let mut wanted: BTreeSet<&str> = runs
        .iter()
        .filter(|r| pattern.is_none_or(|p| matches(p, &r.id)))
        .map(|r| r.id.as_str())
        .collect();
    loop {
        let more: Vec<&str> = runs
            .iter()
            .filter(|r| wanted.contains(r.id.as_str()))
            .flat_map(|r| r.depends_on.iter().map(String::as_str))
            .filter(|d| !wanted.contains(d))
            .collect();
        if more.is_empty() {
            break;
        }
        wanted.extend(more);
    }
    runs.iter()
        .filter(|r| wanted.contains(r.id.as_str()))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn whole_ids_only() {
        assert!(matches("feed-rs/*/r1", "feed-rs/ramp/r1"));
        assert!(matches("*", "x/y/r2"));
        assert!(matches("*", ""));
        assert!(matches("", ""));
        assert!(!matches("", "x"));
        assert!(matches("feed-??/ramp/r1", "feed-rs/ramp/r1"));
        assert!(!matches("feed-??/ramp/r1", "feed-r/ramp/r1"));
        assert!(!matches("feed-rs/*", "feed-py/ramp/r1"));
        assert!(!matches("feed-rs/ramp", "feed-rs/ramp/r1"));
        assert!(!matches("feed-rs/ramp/r1", "feed-rs/ramp"));
        assert!(matches("feed-rs/ramp/r1**", "feed-rs/ramp/r1"));
        assert!(!matches("?", ""));
    }

    #[test]
    fn stars_backtrack_to_the_last_one() {
        assert!(matches(
            "*/baseline+*/r*",
            "feed-rs.indexed/baseline+db-cut/r2"
        ));
        assert!(!matches("*/baseline+*/r*", "feed-rs.indexed/baseline/r2"));
        // The first `*` must not stop at the first `a`, nor the second at the first `b`.
        assert!(matches("*ab*bc", "aaabbbbc"));
        assert!(matches("a*a*a", "aaaaa"));
        assert!(!matches("a*a*a", "aa"));
        assert!(matches("*?", "x"));
        assert!(!matches("*??", "x"));
        assert!(matches("*r1", "feed-rs/ramp/r1"));
        assert!(!matches("*r1", "feed-rs/ramp/r11"));
        assert!(matches("*r1*", "feed-rs/ramp/r11"));
    }

    /// The recursive matcher this replaced took time exponential in the stars here.
    #[test]
    fn many_stars_against_a_long_id_that_does_not_match() {
        let text = "a".repeat(200);
        let pattern = format!("{}b", "*a".repeat(30));
        assert!(!matches(&pattern, &text));
        assert!(matches(&"*a".repeat(30), &text));
        assert!(!matches(&format!("{}b", "*".repeat(30)), &text));
        assert!(matches(&format!("{}?", "*".repeat(30)), &text));
    }

    /// Agrees with the obvious recursive definition on every short pattern and text.
    #[test]
    fn agrees_with_the_recursive_definition() {
        fn reference(p: &[u8], t: &[u8]) -> bool {
            match (p.first(), t.first()) {
                (None, None) => true,
                (Some(b'*'), _) => {
                    reference(&p[1..], t) || (!t.is_empty() && reference(p, &t[1..]))
                }
                (Some(b'?'), Some(_)) => reference(&p[1..], &t[1..]),
                (Some(a), Some(b)) if a == b => reference(&p[1..], &t[1..]),
                _ => false,
            }
        }
        fn all(alphabet: &[u8], max: usize) -> Vec<String> {
            let mut out = vec![String::new()];
            let mut last = vec![String::new()];
            for _ in 0..max {
                last = last
                    .iter()
                    .flat_map(|s| alphabet.iter().map(move |&c| format!("{s}{}", c as char)))
                    .collect();
                out.extend(last.iter().cloned());
            }
            out
        }
        let patterns = all(b"ab*?", 5);
        let texts = all(b"ab", 6);
        for p in &patterns {
            for t in &texts {
                assert_eq!(
                    matches(p, t),
                    reference(p.as_bytes(), t.as_bytes()),
                    "`{p}` against `{t}`"
                );
            }
        }
    }
}

#[cfg(test)]
mod dependency_tests {
    use super::with_dependencies;
    use crate::plan::{expand, load_str, validate::Context};

    #[test]
    fn a_selection_brings_the_ramps_its_rates_come_from() {
        let text = include_str!("../../../../tests/plans/valid/minimal.yaml");
        let ctx = Context {
            host_cores: None,
            exists: None,
        };
        let runs = expand(&load_str("t.yaml", text, &ctx).unwrap().plan);
        let ids = |p| -> Vec<String> {
            with_dependencies(&runs, p)
                .into_iter()
                .map(|r| r.id)
                .collect()
        };
        assert_eq!(
            ids(Some("svc/baseline+db-cut/r2")),
            ["svc/ramp/r2", "svc/baseline+db-cut/r2"]
        );
        assert_eq!(ids(Some("svc/ramp/r1")), ["svc/ramp/r1"]);
        assert!(ids(Some("nothing")).is_empty());
        assert_eq!(ids(None).len(), runs.len());
    }
}
