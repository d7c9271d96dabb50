//! Journals edited by a test as text, their chain written again after the edit: what a
//! writer of the edited content would have written, so the test exercises what the journal
//! says rather than its chain (`ledger::chain`).

use feedbench_core::ledger::chain::link_of;

/// `text` with every chained line's `prev` set to the link of the line before it as it now
/// stands; lines without `prev` (version 1) are left as they are.
pub fn rechained(text: &str) -> String {
    const KEY: &str = "\"prev\":\"";
    let mut prev = link_of(b"");
    let mut out = String::new();
    for line in text.lines() {
        let value = line.find(KEY).map(|at| at + KEY.len()).and_then(|start| {
            let len = line[start..].find('"')?;
            Some((start, start + len))
        });
        let line = match value {
            Some((start, end)) => format!("{}{prev}{}", &line[..start], &line[end..]),
            None => line.to_string(),
        };
        prev = link_of(line.as_bytes());
        out.push_str(&line);
        out.push('\n');
    }
    out
}
