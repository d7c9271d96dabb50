//! A build context's `.dockerignore`, simplified, and what every context leaves out: one
//! reading of it for the images' recipe hash and for the inputs digest alike.

/// Left out of every context before its `.dockerignore` applies (which may re-include them
/// with `!`): VCS metadata and Python byte code, which tests leave behind and which would
/// otherwise change the recipe hash.
pub const ALWAYS_IGNORED: &str = ".git\n**/__pycache__\n**/*.pyc";

/// A `.dockerignore`, simplified: `#` comments, `*` and `?` within a path segment, `**` across
/// segments, `!` re-includes; a pattern matching a directory excludes everything below it.
#[derive(Debug, Default, Clone)]
pub struct Ignore {
    patterns: Vec<(bool, Vec<String>)>,
}

impl Ignore {
    /// Parse the text of a `.dockerignore`.
    pub fn parse(text: &str) -> Self {
        let mut patterns = Vec::new();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (negate, pat) = match line.strip_prefix('!') {
                Some(p) => (true, p.trim()),
                None => (false, line),
            };
            let pat = pat
                .trim_start_matches("./")
                .trim_start_matches('/')
                .trim_end_matches('/');
            if pat.is_empty() {
                continue;
            }
            let segments = pat
                .split('/')
                .filter(|s| !s.is_empty() && *s != ".")
                .map(str::to_string)
                .collect();
            patterns.push((negate, segments));
        }
        Ignore { patterns }
    }

    pub fn has_negations(&self) -> bool {
        self.patterns.iter().any(|(n, _)| *n)
    }

    /// Whether the context path `rel` is left out (the last matching pattern decides).
    pub fn ignored(&self, rel: &str) -> bool {
        let parts: Vec<&str> = rel.split('/').collect();
        let mut ignored = false;
        for (negate, pat) in &self.patterns {
            // the pattern matches the path itself or one of its parent directories
            let hit = (1..=parts.len()).any(|n| match_segments(pat, &parts[..n]));
            if hit {
                ignored = !negate;
            }
        }
        ignored
    }
}

fn match_segments(pat: &[String], path: &[&str]) -> bool {
    match pat.split_first() {
        None => path.is_empty(),
        Some((first, rest)) if first == "**" => {
            (0..=path.len()).any(|skip| match_segments(rest, &path[skip..]))
        }
        Some((first, rest)) => match path.split_first() {
            Some((seg, tail)) => {
                glob(first.as_bytes(), seg.as_bytes()) && match_segments(rest, tail)
            }
            None => false,
        },
    }
}

fn glob(pat: &[u8], s: &[u8]) -> bool {
    match pat.split_first() {
        None => s.is_empty(),
        Some((b'*', rest)) => (0..=s.len()).any(|i| glob(rest, &s[i..])),
        Some((b'?', rest)) => !s.is_empty() && glob(rest, &s[1..]),
        Some((c, rest)) => s.first() == Some(c) && glob(rest, &s[1..]),
    }
}
