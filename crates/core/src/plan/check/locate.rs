//! From a byte offset inside a check to the line and column in the plan file, given where
//! the YAML scalar holding the check starts.
//!
//! Exact for plain, single-quoted and double-quoted scalars on one line, for plain scalars
//! folded over several lines, and for block scalars (`|`, `>`, `>-`, …) without blank
//! lines inside. A blank line inside a folded scalar folds to one character instead of two,
//! so a position after it may be a column off; a quoted scalar over several lines is placed
//! on its first line, at the column it would have if the check were on that line.

use crate::plan::yaml::Mark;

/// A source line's piece that a run of the check's text comes from.
struct Segment<'a> {
    line: usize,
    /// 1-based column (in characters) of `text`'s first character.
    column: usize,
    text: &'a str,
}

/// The position of the check's byte `offset`, the scalar's value starting at `value`.
pub fn locate(source: &str, value: Mark, offset: usize) -> Mark {
    let lines: Vec<&str> = source
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let Some(first) = lines.get(value.line.saturating_sub(1)) else {
        return value;
    };
    let Some((start, indicator)) = first.char_indices().nth(value.column.saturating_sub(1)) else {
        return value;
    };
    if matches!(indicator, '\'' | '"') {
        return quoted(&first[start..], indicator, value, offset);
    }
    // The parser marks a block scalar at its first content line, not at its header.
    let header = lines[..value.line - 1]
        .iter()
        .rev()
        .find(|l| !l.trim().is_empty());
    if header.is_some_and(|h| is_block_header(h)) {
        return walk(&block(&lines, value), offset).unwrap_or(value);
    }
    walk(&plain(&lines, value, &first[start..]), offset).unwrap_or(value)
}

/// Does the line end in a block scalar's header: `|` or `>`, its chomping and indentation
/// indicators, and maybe a comment?
fn is_block_header(line: &str) -> bool {
    let code = match line.find(" #") {
        Some(i) => &line[..i],
        None => line,
    };
    let code = code
        .trim_end()
        .trim_end_matches(['-', '+', '1', '2', '3', '4', '5', '6', '7', '8', '9']);
    code.ends_with(['|', '>']) && code[..code.len() - 1].trim_end().ends_with([':', '-', '?'])
}

/// A quoted scalar: decode its escapes up to `offset`, counting the source's characters.
fn quoted(text: &str, quote: char, value: Mark, offset: usize) -> Mark {
    let mut chars = text.chars().skip(1).peekable();
    let mut column = value.column + 1;
    let mut content = 0;
    while content < offset {
        let Some(c) = chars.next() else {
            // The scalar goes on to the next line: place it as if it did not.
            return Mark {
                line: value.line,
                column: value.column + 1 + offset,
            };
        };
        let (decoded, source_chars) = match (quote, c) {
            ('\'', '\'') if chars.peek() == Some(&'\'') => {
                chars.next();
                (1, 2)
            }
            ('\'', '\'') | ('"', '"') => break,
            ('"', '\\') => {
                let e = chars.next().unwrap_or('\\');
                let hex = match e {
                    'x' => 2,
                    'u' => 4,
                    'U' => 8,
                    _ => 0,
                };
                let digits: String = (0..hex).filter_map(|_| chars.next()).collect();
                let decoded = u32::from_str_radix(&digits, 16)
                    .ok()
                    .and_then(char::from_u32)
                    .map_or(1, char::len_utf8);
                (decoded, 2 + hex)
            }
            (_, c) => (c.len_utf8(), 1),
        };
        content += decoded;
        column += source_chars;
    }
    Mark {
        line: value.line,
        column,
    }
}

/// A plain scalar: its first line from `value`, then continuation lines without their
/// indentation, each line folded into one space.
fn plain<'a>(lines: &[&'a str], value: Mark, first: &'a str) -> Vec<Segment<'a>> {
    let mut out = vec![Segment {
        line: value.line,
        column: value.column,
        text: first.trim_end(),
    }];
    for (i, l) in lines.iter().enumerate().skip(value.line) {
        let text = l.trim();
        // A blank line ends the walk: it folds to a line break, rare in a check.
        if text.is_empty() || text.starts_with('#') || !l.starts_with([' ', '\t']) {
            break;
        }
        let indent = l.chars().take_while(|c| c.is_whitespace()).count();
        out.push(Segment {
            line: i + 1,
            column: indent + 1,
            text,
        });
    }
    out
}

/// A block scalar's lines from its first, at that line's indentation.
fn block<'a>(lines: &[&'a str], value: Mark) -> Vec<Segment<'a>> {
    let rest = lines.get(value.line - 1..).unwrap_or(&[]);
    let indent = value.column - 1;
    let mut out = Vec::new();
    for (i, l) in rest.iter().enumerate() {
        let lead = l.len() - l.trim_start_matches(' ').len();
        if !l.trim().is_empty() && lead < indent {
            break;
        }
        out.push(Segment {
            line: value.line + i,
            column: indent + 1,
            text: l.get(indent..).unwrap_or(""),
        });
    }
    out
}

/// Walks the segments, one separator character between each, to the one holding `offset`.
fn walk(segments: &[Segment], offset: usize) -> Option<Mark> {
    let mut left = offset;
    let mut last = None;
    for s in segments {
        if left <= s.text.len() {
            let within = s.text.get(..left).map_or(left, |t| t.chars().count());
            return Some(Mark {
                line: s.line,
                column: s.column + within,
            });
        }
        left -= s.text.len() + 1;
        if s.text.is_empty() {
            continue;
        }
        last = Some(Mark {
            line: s.line,
            column: s.column + s.text.chars().count(),
        });
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::yaml::{parse, Positions};

    /// Where the `x` of the check stands, found by the yaml parser's own mark for `k`.
    fn at(doc: &str) -> (Mark, Mark) {
        let root = parse(doc).unwrap();
        let value = Positions::index(&root).value("k");
        let crate::plan::yaml::Value::Map(e) = &root.value else {
            panic!()
        };
        let crate::plan::yaml::Value::Str(s) = &e[0].value.value else {
            panic!("{e:?}")
        };
        let offset = s.find('x').unwrap();
        let expected = doc
            .lines()
            .enumerate()
            .find_map(|(i, l)| {
                l.chars().position(|c| c == 'x').map(|c| Mark {
                    line: i + 1,
                    column: c + 1,
                })
            })
            .unwrap();
        (locate(doc, value, offset), expected)
    }

    #[test]
    fn single_line_scalars_are_placed_exactly() {
        for doc in [
            "k: ab >= x\n",
            "k: 'ab >= x'\n",
            "k: 'a''b >= x'\n",
            "k: \"a\\\"b >= x\"\n",
            "k: \"a\\u00e9b >= x\"\n",
            "k: \"é >= x\"\n",
            "k:   ab >= x   # comment\n",
        ] {
            let (got, want) = at(doc);
            assert_eq!(got, want, "{doc}");
        }
    }

    #[test]
    fn folded_and_block_scalars_are_placed_on_their_line() {
        for doc in [
            "k: >-\n  ab >= 5\n  and x < 1\n",
            "k: |\n    ab >= 5\n    and x < 1\n",
            "k: ab >= 5\n  and x < 1\n",
            "k: >\n  ab\n    c x\n",
        ] {
            let (got, want) = at(doc);
            assert_eq!(got, want, "{doc}");
        }
    }

    #[test]
    fn out_of_range_offsets_stay_in_the_file() {
        let m = Mark { line: 1, column: 4 };
        assert_eq!(locate("k: ab\n", m, 99), Mark { line: 1, column: 6 });
        assert_eq!(
            locate("", Mark { line: 3, column: 9 }, 2),
            Mark { line: 3, column: 9 }
        );
        assert_eq!(locate("k: 'ab\n  cd'\n", m, 5).line, 1);
    }
}
