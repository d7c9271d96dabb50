//! Mutations of a study's files, the corpus's vocabulary: a journal line or a JSON file
//! edited as JSON, bytes flipped, cut or inserted, a file swapped for a directory, a link,
//! a named pipe.

use feedbench_core::ledger::chain::link_of;
use serde_json::Value;

use super::{mkfifo, Study};

pub const JOURNAL: &str = "journal.jsonl";

/// The journal's lines as JSON (every line of a fresh study parses).
pub fn lines(s: &Study) -> Vec<Value> {
    String::from_utf8(s.read(JOURNAL))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Writes the journal's lines as a writer would have written them: each chained line
/// (`format_version` 2) linked to the line written before it. The corpus's content cases
/// test what a journal says, not its chain.
pub fn set_lines(s: &Study, lines: &[Value]) {
    let mut text = String::new();
    let mut prev = link_of(b"");
    for l in lines {
        let mut l = l.clone();
        if l["format_version"] == 2 {
            l["prev"] = prev.clone().into();
        }
        let line = serde_json::to_string(&l).unwrap();
        prev = link_of(line.as_bytes());
        text.push_str(&line);
        text.push('\n');
    }
    s.write(JOURNAL, text.as_bytes());
}

/// The journal's lines as they are on disk, line ends left out.
pub fn raw_lines(s: &Study) -> Vec<String> {
    String::from_utf8(s.read(JOURNAL))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Writes the journal's lines back as they are, each with the link it carries: lines
/// moved, duplicated or dropped this way break the chain, as they would on disk.
pub fn set_raw_lines(s: &Study, lines: &[String]) {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    s.write(JOURNAL, text.as_bytes());
}

/// Edits journal line `n` (1-based) as JSON, the chain written again after it.
pub fn edit_line(s: &Study, n: usize, f: impl FnOnce(&mut Value)) {
    let mut ls = lines(s);
    f(&mut ls[n - 1]);
    set_lines(s, &ls);
}

/// Edits a JSON file of the study (e.g. a manifest) as JSON, written back pretty.
pub fn edit_json(s: &Study, rel: &str, f: impl FnOnce(&mut Value)) {
    let mut v: Value = serde_json::from_slice(&s.read(rel)).unwrap();
    f(&mut v);
    s.write(rel, &serde_json::to_vec_pretty(&v).unwrap());
}

/// Edits a file's bytes.
pub fn bytes(s: &Study, rel: &str, f: impl FnOnce(&mut Vec<u8>)) {
    let mut b = s.read(rel);
    f(&mut b);
    s.write(rel, &b);
}

/// Replaces the text `from` (its first occurrence) with the bytes `to`.
pub fn replace(s: &Study, rel: &str, from: &str, to: &[u8]) {
    bytes(s, rel, |b| {
        let at = b
            .windows(from.len())
            .position(|w| w == from.as_bytes())
            .unwrap_or_else(|| panic!("no `{from}` in {rel}"));
        b.splice(at..at + from.len(), to.iter().copied());
    });
}

/// Inserts `text` after the first `after` and cuts the file in the middle of its first
/// multibyte character: a write torn mid-character.
pub fn cut_mid_char(s: &Study, rel: &str, after: &str, text: &str) {
    replace(s, rel, after, format!("{after}{text}").as_bytes());
    bytes(s, rel, |b| {
        let at = b.windows(2).position(|w| w[0] >= 0xc0).unwrap();
        b.truncate(at + 1);
    });
}

/// Replaces a file with a directory of the same name (holding one file).
pub fn directory(s: &Study, rel: &str) {
    let p = s.path(rel);
    std::fs::remove_file(&p).unwrap();
    std::fs::create_dir(&p).unwrap();
    std::fs::write(p.join("x"), b"x").unwrap();
}

/// Replaces a file with a named pipe inside the study directory.
pub fn fifo(s: &Study, rel: &str) {
    let p = s.path(rel);
    std::fs::remove_file(&p).unwrap();
    mkfifo(&p);
}

/// A string of `n` multibyte characters.
pub fn multibyte(n: usize) -> String {
    "é✓𝄞".chars().cycle().take(n).collect()
}
