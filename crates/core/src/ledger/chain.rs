//! The journal's order, proven: each line written since the chain (`format_version` 2)
//! carries `prev`, the sha256 of the line before it (of no bytes, for the first line), so an
//! edit, a deletion, an insertion, a duplicate or a move of a line breaks the link of the
//! line after it; and every line's time is one a host could have written, never far behind
//! the line before it (docs/results.md, "journal.jsonl").
//!
//! The chain proves order against damage and mistakes, not against a forger: it holds no
//! secret, so whoever rewrites a line can rewrite every link after it.

use serde::Serialize;
use sha2::{Digest, Sha256};

/// The version of lines written before the chain, read as they are and counted unchained.
pub const UNCHAINED_VERSION: u32 = 1;

/// 2020-01-01T00:00:00Z: no journal of feedbench was written before it, and a writer whose
/// clock reads earlier refuses to write.
pub const EARLIEST_NS: u128 = 1_577_836_800_000_000_000;
/// How far past the reader's clock a line's time may lie: two hosts' clocks may disagree by
/// seconds, never by a day.
const AHEAD_NS: u128 = 86_400_000_000_000;
/// How far back a line's time may step from the line before it undeclared: the writer
/// declares a larger step of its clock (`clock-stepped-back`) before the line it times.
pub const BACK_NS: u128 = 1_000_000_000;

/// The link a line carries to the line before it: the sha256 of that line's bytes without
/// its line end (`\n`, or `\r\n`, `\r\r\n`… for a journal whose line ends were converted).
pub fn link_of(line: &[u8]) -> String {
    let end = line.iter().rposition(|b| *b != b'\r').map_or(0, |i| i + 1);
    crate::files::hex(&Sha256::digest(&line[..end]))
}

/// A value read from a damaged line, fit to quote: at most 40 characters, escaped.
fn quoted(text: &str) -> String {
    format!("{:?}", text.chars().take(40).collect::<String>())
}

/// Where the journal's order is not what its writers left: a broken link or an impossible
/// time, at its line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Broken {
    pub line: usize,
    pub why: String,
}

impl Broken {
    /// The line as every message names it: `` `journal` line N: why ``.
    pub fn at(&self, journal: impl std::fmt::Display) -> String {
        format!("`{journal}` line {}: {}", self.line, self.why)
    }
}

/// What a parsed line says of its place: its `format_version`, `prev` and `wall_ns`, and
/// whether it declares that the writer's clock stepped back to its time.
pub struct Place<'a> {
    pub version: u32,
    pub prev: Option<&'a str>,
    pub wall_ns: &'a str,
    pub steps_back: bool,
}

/// The checks over the journal's lines, fed in order.
#[derive(Debug, Clone, Default)]
pub struct Chain {
    now_ns: u128,
    /// The line before: its number, its link, and whether it parsed (a link into a line
    /// that does not parse is not checked: that line is named already).
    before: Option<(usize, String, bool)>,
    chained: bool,
    last_time: Option<(usize, u128)>,
    /// The first broken link.
    pub broken: Option<Broken>,
    /// The first impossible time.
    pub clock: Option<Broken>,
    /// Lines written before the chain (`format_version` 1).
    pub unchained: usize,
}

impl Chain {
    /// Checks against `now_ns`, the reader's clock.
    pub fn new(now_ns: u128) -> Chain {
        Chain {
            now_ns,
            ..Chain::default()
        }
    }

    /// Line `n` (1-based, every line in order): its bytes, and what it says of its place
    /// when it parsed (`None` for a line that did not, or holds only white space).
    pub fn line(&mut self, n: usize, raw: &[u8], place: Option<Place>, parsed: bool) {
        if let Some(p) = &place {
            self.link(n, p);
            self.time(n, p);
        }
        self.before = Some((n, link_of(raw), parsed));
    }

    fn link(&mut self, n: usize, p: &Place) {
        if p.version == UNCHAINED_VERSION {
            self.unchained += 1;
            if self.chained {
                self.break_at(n, "it is unchained (format_version 1) after chained lines: an older feedbench wrote it after a newer one, or it was moved".into());
            }
            return;
        }
        self.chained = true;
        let (expected, into) = match &self.before {
            None => (link_of(b""), None),
            Some((_, _, false)) => return,
            Some((m, link, true)) => (link.clone(), Some(*m)),
        };
        if p.prev == Some(expected.as_str()) {
            return;
        }
        let why = match into {
            None => "its `prev` is not the sha256 of no bytes, so it was not the journal's first line: lines before it were deleted".to_string(),
            Some(m) => format!(
                "its `prev` is not the sha256 of line {m}: a line was edited, deleted, inserted, duplicated or moved there"
            ),
        };
        self.break_at(n, why);
    }

    fn break_at(&mut self, line: usize, why: String) {
        self.broken.get_or_insert(Broken { line, why });
    }

    fn time(&mut self, n: usize, p: &Place) {
        let why = match p.wall_ns.parse::<u128>() {
            Err(_) => Some(format!(
                "its wall_ns {} is not a time in unix ns",
                quoted(p.wall_ns)
            )),
            Ok(t) if t < EARLIEST_NS => Some(format!(
                "its wall_ns {t} is before 2020-01-01, when no journal of feedbench was written"
            )),
            Ok(t) if t > self.now_ns.saturating_add(AHEAD_NS) => Some(format!(
                "its wall_ns {t} is more than a day past this host's clock ({})",
                self.now_ns
            )),
            Ok(t) => {
                let back = self
                    .last_time
                    .filter(|(_, last)| !p.steps_back && t.saturating_add(BACK_NS) < *last)
                    .map(|(m, last)| {
                        format!(
                            "it is {:.3} s earlier than line {m} and no clock-stepped-back declares it: lines written later stand before it",
                            (last - t) as f64 / 1e9
                        )
                    });
                self.last_time = Some((n, t));
                back
            }
        };
        if let Some(why) = why {
            self.clock.get_or_insert(Broken { line: n, why });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u128 = 1_800_000_000_000_000_000;

    /// Feeds chained lines `(raw, prev, wall_ns)`.
    fn fed(lines: &[(&str, &str, &str)]) -> Chain {
        let mut c = Chain::new(NOW);
        for (i, (raw, prev, wall)) in lines.iter().enumerate() {
            let place = Place {
                version: 2,
                prev: Some(prev),
                wall_ns: wall,
                steps_back: false,
            };
            c.line(i + 1, raw.as_bytes(), Some(place), true);
        }
        c
    }

    #[test]
    fn links_hold_in_order_and_break_where_a_line_was_taken_out_or_moved() {
        let first = link_of(b"");
        let (a, b) = ("line a", "line b");
        let t = "1790000000000000000";
        let whole = fed(&[(a, &first, t), (b, &link_of(a.as_bytes()), t)]);
        assert_eq!((whole.broken, whole.clock), (None, None));
        // Line a deleted: b's link names a line that is not there.
        let cut = fed(&[(b, &link_of(a.as_bytes()), t)]);
        assert_eq!(cut.broken.map(|b| b.line), Some(1));
        // Moved: b before a.
        let moved = fed(&[(b, &link_of(a.as_bytes()), t), (a, &first, t)]);
        assert_eq!(moved.broken.map(|b| b.line), Some(1));
        // A CRLF line end is no edit, nor one converted twice.
        assert_eq!(link_of(b"line a\r"), link_of(b"line a"));
        assert_eq!(link_of(b"line a\r\r"), link_of(b"line a"));
    }

    #[test]
    fn a_link_into_a_line_that_does_not_parse_is_left_to_that_line() {
        let mut c = Chain::new(NOW);
        c.line(1, b"not json", None, false);
        let place = Place {
            version: 2,
            prev: Some("0"),
            wall_ns: "1790000000000000000",
            steps_back: false,
        };
        c.line(2, b"x", Some(place), true);
        assert_eq!(c.broken, None);
    }

    #[test]
    fn impossible_and_backward_times_are_named_at_their_first_line() {
        let first = link_of(b"");
        let old = fed(&[("a", &first, "12")]);
        assert!(old.clock.unwrap().why.contains("before 2020"));
        let ahead = (NOW + 2 * AHEAD_NS).to_string();
        let future = fed(&[("a", &first, &ahead)]);
        assert!(future.clock.unwrap().why.contains("more than a day past"));
        let word = fed(&[("a", &first, "soon")]);
        assert!(word.clock.unwrap().why.contains("not a time"));
        // 0.5 s back is a clock corrected; 2 s back, lines moved.
        let l = link_of(b"a");
        let slewed = fed(&[
            ("a", &first, "1790000002000000000"),
            ("b", &l, "1790000001500000000"),
        ]);
        assert_eq!(slewed.clock, None);
        let back = fed(&[
            ("a", &first, "1790000002000000000"),
            ("b", &l, "1790000000000000000"),
        ]);
        assert_eq!(
            back.clock,
            Some(Broken {
                line: 2,
                why: "it is 2.000 s earlier than line 1 and no clock-stepped-back declares it: \
                      lines written later stand before it"
                    .into()
            })
        );
    }

    #[test]
    fn a_step_back_the_writer_declares_is_no_impossible_time() {
        let mut c = Chain::new(NOW);
        let at = |wall_ns, steps_back| Place {
            version: 1,
            prev: None,
            wall_ns,
            steps_back,
        };
        c.line(1, b"a", Some(at("1790000009000000000", false)), true);
        c.line(2, b"b", Some(at("1790000000000000000", true)), true);
        c.line(3, b"c", Some(at("1790000000100000000", false)), true);
        assert_eq!(c.clock, None);
    }

    #[test]
    fn unchained_lines_are_counted_and_may_not_follow_chained_ones() {
        let mut c = Chain::new(NOW);
        let t = "1790000000000000000";
        let old = |prev| Place {
            version: 1,
            prev,
            wall_ns: t,
            steps_back: false,
        };
        c.line(1, b"old", Some(old(None)), true);
        // The chain starts on the first line written since, linked to the last old line.
        let link = link_of(b"old");
        let new = Place {
            version: 2,
            prev: Some(&link),
            wall_ns: t,
            steps_back: false,
        };
        c.line(2, b"new", Some(new), true);
        assert_eq!((c.unchained, c.broken.clone()), (1, None));
        c.line(3, b"old again", Some(old(None)), true);
        assert_eq!(c.broken.map(|b| b.line), Some(3));
    }
}
