//! The plan document as YAML 1.2 data with source positions: parsed once, used for typed
//! loading (see `de`), for locating diagnostics, and for the plan hash.

use std::collections::HashMap;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser, Tag};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// A 1-based line and column in the plan file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Mark {
    pub line: usize,
    pub column: usize,
}

impl Mark {
    fn from_marker(m: Marker) -> Self {
        // yaml-rust2 counts lines from 1 and columns from 0.
        Mark {
            line: m.line().max(1),
            column: m.col() + 1,
        }
    }
}

/// A YAML 1.2 core-schema value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<Entry>),
}

/// A value with where it stands in the source and, for scalars, its text as written.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub mark: Mark,
    pub value: Value,
    /// The scalar's source text (empty for collections); lets a string field accept `16`.
    pub text: String,
}

/// A mapping entry. Keys are scalars, kept as text.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub key: String,
    pub key_mark: Mark,
    pub value: Node,
}

/// Why a document could not be read as YAML.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct SyntaxError {
    pub mark: Mark,
    /// The field path where one is known (a duplicate key's), else empty.
    pub path: String,
    pub message: String,
}

/// Aliases are expanded by copying; this bounds the copies so that a "billion laughs"
/// document is refused instead of exhausting memory.
const MAX_NODES: usize = 200_000;
/// Deeper nesting than this is refused (no plan needs it; it bounds recursion).
const MAX_DEPTH: usize = 64;

/// Parses one YAML document. Multiple documents, non-scalar keys, duplicate keys and
/// unknown tags are errors.
pub fn parse(source: &str) -> Result<Node, SyntaxError> {
    let mut builder = Builder::default();
    let mut parser = Parser::new_from_str(source).keep_tags(true);
    if let Err(e) = parser.load(&mut builder, true) {
        return Err(SyntaxError {
            mark: Mark::from_marker(*e.marker()),
            path: String::new(),
            message: format!("invalid YAML: {}", e.info()),
        });
    }
    if let Some(err) = builder.error {
        return Err(err);
    }
    match builder.documents.len() {
        0 => Err(SyntaxError {
            mark: Mark { line: 1, column: 1 },
            path: String::new(),
            message: "the plan is empty".into(),
        }),
        1 => Ok(builder.documents.pop().expect("one document")),
        _ => Err(SyntaxError {
            path: String::new(),
            mark: builder
                .second_document
                .unwrap_or(Mark { line: 1, column: 1 }),
            message: "a plan is one YAML document; found a second one (`---`)".into(),
        }),
    }
}

enum Open {
    Seq(Mark, usize, Vec<Node>),
    Map(Mark, usize, Vec<Entry>, Option<(String, Mark)>),
}

#[derive(Default)]
struct Builder {
    stack: Vec<Open>,
    documents: Vec<Node>,
    anchors: HashMap<usize, Node>,
    nodes: usize,
    second_document: Option<Mark>,
    error: Option<SyntaxError>,
}

impl Builder {
    fn fail(&mut self, mark: Mark, message: String) {
        self.fail_at(mark, String::new(), message);
    }

    fn fail_at(&mut self, mark: Mark, path: String, message: String) {
        if self.error.is_none() {
            self.error = Some(SyntaxError {
                mark,
                path,
                message,
            });
        }
    }

    /// The field path of `key` in the innermost open mapping: each open mapping's pending
    /// key and each open sequence's next index, outermost first.
    fn path_to(&self, key: &str) -> String {
        let mut path = String::new();
        let n = self.stack.len();
        for open in &self.stack[..n.saturating_sub(1)] {
            match open {
                Open::Map(_, _, _, Some((k, _))) => path = join_key(&path, k),
                Open::Map(_, _, _, None) => {}
                Open::Seq(_, _, items) => path = format!("{path}[{}]", items.len()),
            }
        }
        join_key(&path, key)
    }

    fn count(&mut self, n: usize, mark: Mark) -> bool {
        self.nodes = self.nodes.saturating_add(n);
        if self.nodes > MAX_NODES {
            self.fail(
                mark,
                format!("the document expands to more than {MAX_NODES} values (aliases?)"),
            );
            return false;
        }
        true
    }

    /// Hands a finished node to its parent (or makes it the document).
    fn push(&mut self, node: Node, anchor: usize) {
        if anchor > 0 {
            self.anchors.insert(anchor, node.clone());
        }
        match self.stack.last_mut() {
            None => self.documents.push(node),
            Some(Open::Seq(_, _, items)) => items.push(node),
            Some(Open::Map(_, _, entries, pending)) => match pending.take() {
                None => {
                    // This node is a key.
                    let key = match &node.value {
                        Value::Seq(_) | Value::Map(_) => {
                            let mark = node.mark;
                            self.fail(
                                mark,
                                "mapping keys must be plain names, not collections".into(),
                            );
                            return;
                        }
                        _ => node.text.clone(),
                    };
                    if entries.iter().any(|e| e.key == key) {
                        let mark = node.mark;
                        let path = self.path_to(&key);
                        self.fail_at(
                            mark,
                            path,
                            format!("duplicate key `{key}`; each key may appear once"),
                        );
                        return;
                    }
                    *pending = Some((key, node.mark));
                }
                Some((key, key_mark)) => entries.push(Entry {
                    key,
                    key_mark,
                    value: node,
                }),
            },
        }
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, marker: Marker) {
        if self.error.is_some() {
            return;
        }
        let mark = Mark::from_marker(marker);
        match ev {
            Event::DocumentStart => {
                if !self.documents.is_empty() && self.second_document.is_none() {
                    self.second_document = Some(mark);
                }
            }
            Event::Scalar(text, style, anchor, tag) => {
                if !self.count(1, mark) {
                    return;
                }
                match resolve(&text, style, tag.as_ref()) {
                    Ok(value) => self.push(Node { mark, value, text }, anchor),
                    Err(message) => self.fail(mark, message),
                }
            }
            Event::SequenceStart(anchor, ref tag) | Event::MappingStart(anchor, ref tag) => {
                if let Some(tag) = tag {
                    if !(is_core_handle(tag) && (tag.suffix == "seq" || tag.suffix == "map")) {
                        self.fail(
                            mark,
                            format!("unsupported tag `{}{}`", tag.handle, tag.suffix),
                        );
                        return;
                    }
                }
                if self.stack.len() >= MAX_DEPTH {
                    self.fail(mark, format!("nesting deeper than {MAX_DEPTH} levels"));
                    return;
                }
                if !self.count(1, mark) {
                    return;
                }
                let open = if matches!(ev, Event::SequenceStart(..)) {
                    Open::Seq(mark, anchor, Vec::new())
                } else {
                    Open::Map(mark, anchor, Vec::new(), None)
                };
                self.stack.push(open);
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (node, anchor) = match self.stack.pop() {
                    Some(Open::Seq(m, a, items)) => (
                        Node {
                            mark: m,
                            value: Value::Seq(items),
                            text: String::new(),
                        },
                        a,
                    ),
                    Some(Open::Map(m, a, entries, _)) => (
                        Node {
                            // A block mapping's start event comes after its first key; the
                            // mapping is where that key is.
                            mark: entries.first().map_or(m, |e| m.min(e.key_mark)),
                            value: Value::Map(entries),
                            text: String::new(),
                        },
                        a,
                    ),
                    None => return,
                };
                self.push(node, anchor);
            }
            Event::Alias(id) => match self.anchors.get(&id).cloned() {
                Some(mut node) => {
                    if !self.count(size(&node), mark) {
                        return;
                    }
                    node.mark = mark;
                    self.push(node, 0);
                }
                None => self.fail(mark, "alias to an unknown anchor".into()),
            },
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => {}
        }
    }
}

fn size(node: &Node) -> usize {
    match &node.value {
        Value::Seq(items) => 1 + items.iter().map(size).sum::<usize>(),
        Value::Map(entries) => 1 + entries.iter().map(|e| 1 + size(&e.value)).sum::<usize>(),
        _ => 1,
    }
}

/// Resolves a scalar by the YAML 1.2 core schema. Only plain scalars are typed; quoted and
/// block scalars are strings. Timestamps are not a core type, so they stay strings.
fn resolve(text: &str, style: TScalarStyle, tag: Option<&Tag>) -> Result<Value, String> {
    if let Some(tag) = tag {
        if !is_core_handle(tag) {
            return Err(format!("unsupported tag `{}{}`", tag.handle, tag.suffix));
        }
        return match tag.suffix.as_str() {
            "str" => Ok(Value::Str(text.to_string())),
            "null" | "bool" | "int" | "float" => {
                let v = resolve_plain(text);
                let ok = matches!(
                    (tag.suffix.as_str(), &v),
                    ("null", Value::Null)
                        | ("bool", Value::Bool(_))
                        | ("int", Value::Int(_))
                        | ("float", Value::Float(_) | Value::Int(_))
                );
                if !ok {
                    return Err(format!("`{text}` is not a valid !!{}", tag.suffix));
                }
                Ok(match v {
                    Value::Int(i) if tag.suffix == "float" => Value::Float(i as f64),
                    v => v,
                })
            }
            other => Err(format!("unsupported tag `!!{other}`")),
        };
    }
    if style != TScalarStyle::Plain {
        return Ok(Value::Str(text.to_string()));
    }
    Ok(resolve_plain(text))
}

/// `!!x` arrives with its handle expanded to the YAML tag prefix, or as written.
fn is_core_handle(tag: &Tag) -> bool {
    tag.handle == "!!" || tag.handle == "tag:yaml.org,2002:"
}

fn resolve_plain(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Value::Float(f64::INFINITY)
        }
        "-.inf" | "-.Inf" | "-.INF" => return Value::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Value::Float(f64::NAN),
        _ => {}
    }
    if let Some(hex) = text.strip_prefix("0x") {
        if !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return int_or_float(i64::from_str_radix(hex, 16).ok(), text);
        }
    }
    if let Some(oct) = text.strip_prefix("0o") {
        if !oct.is_empty() && oct.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
            return int_or_float(i64::from_str_radix(oct, 8).ok(), text);
        }
    }
    if is_core_int(text) {
        return int_or_float(text.parse::<i64>().ok(), text);
    }
    if is_core_float(text) {
        if let Ok(f) = text.parse::<f64>() {
            return Value::Float(f);
        }
    }
    Value::Str(text.to_string())
}

/// An integer too large for i64 is kept as a float: its hash then fails loudly if it is
/// beyond what JSON numbers represent exactly (see `hash`).
fn int_or_float(parsed: Option<i64>, text: &str) -> Value {
    match parsed {
        Some(i) => Value::Int(i),
        None => Value::Float(text.parse::<f64>().unwrap_or(f64::INFINITY)),
    }
}

fn is_core_int(t: &str) -> bool {
    let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// `[-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?`
fn is_core_float(t: &str) -> bool {
    let b = t.strip_prefix(['-', '+']).unwrap_or(t).as_bytes();
    let mut i = 0;
    let int_digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    i += int_digits;
    let mut frac_digits = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        frac_digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        i += frac_digits;
    }
    if int_digits == 0 && frac_digits == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'-' | b'+')) {
            i += 1;
        }
        let exp = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        if exp == 0 {
            return false;
        }
        i += exp;
    }
    i == b.len()
}

/// Where each field path stands in the source, for diagnostics found after loading.
#[derive(Debug, Default)]
pub struct Positions {
    values: HashMap<String, Mark>,
    keys: HashMap<String, Mark>,
}

impl Positions {
    pub fn index(root: &Node) -> Self {
        let mut p = Positions::default();
        p.walk(root, String::new());
        p
    }

    fn walk(&mut self, node: &Node, path: String) {
        match &node.value {
            Value::Map(entries) => {
                for e in entries {
                    let child = join_key(&path, &e.key);
                    self.keys.insert(child.clone(), e.key_mark);
                    self.walk(&e.value, child);
                }
            }
            Value::Seq(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.walk(item, format!("{path}[{i}]"));
                }
            }
            _ => {}
        }
        self.values.insert(path, node.mark);
    }

    /// The position of the value at `path`, or of its nearest ancestor that is written out
    /// (a defaulted field points at the mapping that omits it).
    pub fn value(&self, path: &str) -> Mark {
        self.lookup(&self.values, path)
    }

    /// The position of the key that names `path` (for "unknown name" diagnostics).
    pub fn key(&self, path: &str) -> Mark {
        match self.keys.get(path) {
            Some(m) => *m,
            None => self.value(path),
        }
    }

    fn lookup(&self, map: &HashMap<String, Mark>, path: &str) -> Mark {
        let mut p = path;
        loop {
            if let Some(m) = map.get(p) {
                return *m;
            }
            match p.rfind(['.', '[']) {
                Some(i) => p = &p[..i],
                None => return map.get("").copied().unwrap_or(Mark { line: 1, column: 1 }),
            }
        }
    }
}

/// Field paths join keys with `.`; a key that itself contains `.` is quoted.
pub fn join_key(parent: &str, key: &str) -> String {
    let key = if key.contains(['.', '[', ']', ' ']) || key.is_empty() {
        format!("\"{key}\"")
    } else {
        key.to_string()
    };
    if parent.is_empty() {
        key
    } else {
        format!("{parent}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scalar(src: &str) -> Value {
        let doc = parse(&format!("k: {src}\n")).unwrap();
        match doc.value {
            Value::Map(mut e) => e.remove(0).value.value,
            _ => panic!("not a map"),
        }
    }

    #[test]
    fn core_schema_scalars() {
        assert_eq!(scalar("~"), Value::Null);
        assert_eq!(scalar("yes"), Value::Str("yes".into()));
        assert_eq!(scalar("True"), Value::Bool(true));
        assert_eq!(scalar("0x1F"), Value::Int(31));
        assert_eq!(scalar("0o17"), Value::Int(15));
        assert_eq!(scalar("-12"), Value::Int(-12));
        assert_eq!(scalar("1.5e3"), Value::Float(1500.0));
        assert_eq!(scalar(".5"), Value::Float(0.5));
        assert_eq!(scalar("'12'"), Value::Str("12".into()));
        assert_eq!(scalar("2026-10-01"), Value::Str("2026-10-01".into()));
        assert_eq!(scalar("1e"), Value::Str("1e".into()));
        assert_eq!(scalar("!!str 12"), Value::Str("12".into()));
    }

    #[test]
    fn positions_are_one_based() {
        let doc = parse("a:\n  b: 1\n  c: [x, y]\n").unwrap();
        let p = Positions::index(&doc);
        assert_eq!(p.value("a.b"), Mark { line: 2, column: 6 });
        assert_eq!(p.key("a.b"), Mark { line: 2, column: 3 });
        assert_eq!(
            p.value("a.c[1]"),
            Mark {
                line: 3,
                column: 10
            }
        );
        assert_eq!(p.value("a.missing.deeper"), Mark { line: 2, column: 3 });
    }

    #[test]
    fn duplicate_keys_and_second_documents_are_refused() {
        let e = parse("a: 1\nb: 2\na: 3\n").unwrap_err();
        assert_eq!(e.mark.line, 3);
        assert!(e.message.contains("duplicate key `a`"));
        assert_eq!(e.path, "a");
        // Nested, in flow style and under a sequence: the path says where.
        let e = parse("x:\n  y: [{p: 1}, {q: {r: 1, r: 2}}]\n").unwrap_err();
        assert_eq!(e.path, "x.y[1].q.r");
        assert_eq!((e.mark.line, e.mark.column), (2, 26));
        assert!(parse("a: 1\n---\nb: 2\n").is_err());
        assert!(parse("").is_err());
    }

    #[test]
    fn aliases_expand_but_are_bounded() {
        let doc = parse("a: &x [1, 2]\nb: *x\n").unwrap();
        let Value::Map(e) = doc.value else { panic!() };
        assert_eq!(e[0].value.value, e[1].value.value);
        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let p = i - 1;
            bomb.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        assert!(parse(&bomb).unwrap_err().message.contains("more than"));
    }
}
