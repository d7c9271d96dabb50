//! The check's tokens, each with the byte range it covers in the check string.

use super::{CheckError, Span};

/// A unit written right after a number: `500ms`, `2s`, `90%`, `120/s`, `512MiB`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitSuffix {
    Millis,
    Seconds,
    Percent,
    PerSecond,
    PerCoreSecond,
    KiB,
    MiB,
    GiB,
}

/// The suffixes as written, longest first where one is a prefix of another.
pub const SUFFIXES: [(&str, UnitSuffix); 8] = [
    ("ms", UnitSuffix::Millis),
    ("s", UnitSuffix::Seconds),
    ("%", UnitSuffix::Percent),
    ("/core-s", UnitSuffix::PerCoreSecond),
    ("/s", UnitSuffix::PerSecond),
    ("KiB", UnitSuffix::KiB),
    ("MiB", UnitSuffix::MiB),
    ("GiB", UnitSuffix::GiB),
];

impl UnitSuffix {
    pub fn text(self) -> &'static str {
        SUFFIXES
            .iter()
            .find(|(_, u)| *u == self)
            .map_or("", |(t, _)| t)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// A name: a function, an argument, a contender (`feed-rs.indexed`), a role, a keyword.
    /// Letters, digits, `-` and `_`, in segments joined by `.`.
    Ident(String),
    Number(f64, Option<UnitSuffix>),
    LParen,
    RParen,
    Comma,
    Colon,
    Plus,
    Minus,
    Star,
    Slash,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    End,
}

impl Tok {
    /// How the token reads in a message.
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Number(..) => "a number".into(),
            Tok::End => "the end of the check".into(),
            other => format!("`{}`", other.symbol()),
        }
    }

    fn symbol(&self) -> &'static str {
        match self {
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::Comma => ",",
            Tok::Colon => ":",
            Tok::Plus => "+",
            Tok::Minus => "-",
            Tok::Star => "*",
            Tok::Slash => "/",
            Tok::Lt => "<",
            Tok::Le => "<=",
            Tok::Gt => ">",
            Tok::Ge => ">=",
            Tok::Eq => "==",
            Tok::Ne => "!=",
            Tok::Ident(_) | Tok::Number(..) | Tok::End => "",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub span: Span,
}

/// Longer than any sensible check; bounds the work on hostile input.
pub const MAX_LEN: usize = 4096;

fn ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-' || c == b'_'
}

/// Splits a check into tokens; the last is always `End`.
pub fn lex(src: &str) -> Result<Vec<Token>, CheckError> {
    if src.len() > MAX_LEN {
        return Err(CheckError::new(
            Span::new(0, 0),
            format!("a check is at most {MAX_LEN} bytes long"),
        ));
    }
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        let two = |n: u8| b.get(i + 1) == Some(&n);
        let (tok, len) = match c {
            b'(' => (Tok::LParen, 1),
            b')' => (Tok::RParen, 1),
            b',' => (Tok::Comma, 1),
            b':' => (Tok::Colon, 1),
            b'+' => (Tok::Plus, 1),
            b'-' => (Tok::Minus, 1),
            b'*' => (Tok::Star, 1),
            b'/' => (Tok::Slash, 1),
            b'<' if two(b'=') => (Tok::Le, 2),
            b'<' => (Tok::Lt, 1),
            b'>' if two(b'=') => (Tok::Ge, 2),
            b'>' => (Tok::Gt, 1),
            b'=' if two(b'=') => (Tok::Eq, 2),
            b'!' if two(b'=') => (Tok::Ne, 2),
            b'=' => {
                return Err(CheckError::new(Span::new(i, i + 1), "unexpected `=`")
                    .hint("compare with `==`"))
            }
            b'0'..=b'9' | b'.' => {
                let (tok, end) = number(src, i)?;
                out.push(Token {
                    tok,
                    span: Span::new(start, end),
                });
                i = end;
                continue;
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let end = ident_end(b, i);
                out.push(Token {
                    tok: Tok::Ident(src[i..end].to_string()),
                    span: Span::new(start, end),
                });
                i = end;
                continue;
            }
            _ => {
                let ch = src[i..].chars().next().unwrap_or('?');
                let end = i + ch.len_utf8();
                return Err(CheckError::new(
                    Span::new(i, end),
                    format!("unexpected character `{ch}`"),
                )
                .hint("a check is made of metric functions, numbers with units, `+ - * /`, comparisons, `and`, `or`, `not` and parentheses"));
            }
        };
        out.push(Token {
            tok,
            span: Span::new(start, start + len),
        });
        i += len;
    }
    out.push(Token {
        tok: Tok::End,
        span: Span::new(b.len(), b.len()),
    });
    Ok(out)
}

/// A name's end: segments of letters, digits, `-`, `_`, joined by `.` (so `feed-rs.indexed`
/// and `p99.9` are one name each).
fn ident_end(b: &[u8], mut i: usize) -> usize {
    loop {
        while i < b.len() && ident_char(b[i]) {
            i += 1;
        }
        if b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(|c| ident_char(*c)) {
            i += 1;
        } else {
            return i;
        }
    }
}

/// A decimal number and the unit glued to it.
fn number(src: &str, start: usize) -> Result<(Tok, usize), CheckError> {
    let b = src.as_bytes();
    let mut i = start;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        let frac = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == frac || (frac == start + 1) {
            return Err(CheckError::new(
                Span::new(start, i),
                format!("`{}` is not a number", &src[start..i]),
            )
            .hint("write numbers with digits on both sides of the point, e.g. `0.5`"));
        }
    }
    // A status class, `2xx` … `5xx`: one digit and `xx`, a name.
    if i == start + 1 && src[i..].starts_with("xx") && !b.get(i + 2).is_some_and(|c| ident_char(*c))
    {
        return Ok((Tok::Ident(src[start..i + 2].to_string()), i + 2));
    }
    let value: f64 = src[start..i].parse().map_err(|_| {
        CheckError::new(
            Span::new(start, i),
            format!("`{}` is not a number", &src[start..i]),
        )
    })?;
    if !value.is_finite() {
        return Err(CheckError::new(
            Span::new(start, i),
            "the number is too large",
        ));
    }
    let rest = &src[i..];
    for (text, unit) in SUFFIXES {
        if let Some(after) = rest.strip_prefix(text) {
            if !after.bytes().next().is_some_and(ident_char) {
                return Ok((Tok::Number(value, Some(unit)), i + text.len()));
            }
        }
    }
    if rest.bytes().next().is_some_and(|c| c.is_ascii_alphabetic()) {
        let end = ident_end(b, i);
        let units: Vec<&str> = SUFFIXES.iter().map(|(t, _)| *t).collect();
        return Err(CheckError::new(
            Span::new(i, end),
            format!("unknown unit `{}`", &src[i..end]),
        )
        .hint(crate::plan::de::suggest(&src[i..end], &units, "unit")));
    }
    Ok((Tok::Number(value, None), i))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        lex(s).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn a_status_class_is_a_name() {
        assert_eq!(
            toks("5xx 404"),
            [Tok::Ident("5xx".into()), Tok::Number(404.0, None), Tok::End]
        );
        assert!(lex("5xxy").is_err(), "an unknown unit");
        assert!(lex("55xx").is_err(), "one digit only");
    }

    #[test]
    fn names_numbers_units_and_operators() {
        assert_eq!(
            toks("p99.9(feed-rs.indexed) <= 500ms"),
            [
                Tok::Ident("p99.9".into()),
                Tok::LParen,
                Tok::Ident("feed-rs.indexed".into()),
                Tok::RParen,
                Tok::Le,
                Tok::Number(500.0, Some(UnitSuffix::Millis)),
                Tok::End
            ]
        );
        assert_eq!(
            toks("1.5s 90% 120/s 3 2/core-s 512MiB"),
            [
                Tok::Number(1.5, Some(UnitSuffix::Seconds)),
                Tok::Number(90.0, Some(UnitSuffix::Percent)),
                Tok::Number(120.0, Some(UnitSuffix::PerSecond)),
                Tok::Number(3.0, None),
                Tok::Number(2.0, Some(UnitSuffix::PerCoreSecond)),
                Tok::Number(512.0, Some(UnitSuffix::MiB)),
                Tok::End
            ]
        );
        // `/ s` with a space is a division, and `2 /sat` is a division by a name.
        assert_eq!(
            toks("2 /x")[..3],
            [Tok::Number(2.0, None), Tok::Slash, Tok::Ident("x".into())]
        );
    }

    #[test]
    fn tokens_carry_byte_offsets() {
        let t = lex("a( b ) >= 5%").unwrap();
        let spans: Vec<(usize, usize)> = t.iter().map(|t| (t.span.start, t.span.end)).collect();
        assert_eq!(
            spans,
            [(0, 1), (1, 2), (3, 4), (5, 6), (7, 9), (10, 12), (12, 12)]
        );
    }

    #[test]
    fn bad_characters_numbers_and_units_are_placed() {
        let e = lex("a >= 5kb").unwrap_err();
        assert_eq!((e.span.start, e.message.as_str()), (6, "unknown unit `kb`"));
        let e = lex("a = 5").unwrap_err();
        assert_eq!(e.span.start, 2);
        let e = lex("a >= 5 € 2").unwrap_err();
        assert_eq!((e.span.start, e.span.end), (7, 10));
        assert!(lex("1.").is_err());
        assert!(lex(".5").is_err());
        assert!(lex(&"9".repeat(400)).is_err());
    }
}
