//! Hashes: the plan hash (sha256 of the RFC 8785 canonical JSON of the YAML document's
//! value) and the canonical JSON that run hashes are taken of.
//!
//! The recipe, so anyone can recompute it (docs/plan.md has it in full): read the YAML
//! with the 1.2 core schema (so `yes` and `2026-10-01` are strings), turn it into JSON,
//! serialise it per RFC 8785 (keys sorted by UTF-16 code units, no white space, numbers as
//! ECMAScript prints them), and take the sha256 of the UTF-8 bytes as lowercase hex.

use sha2::{Digest, Sha256};

use super::yaml::{Mark, Node, Value};

/// Integers beyond this are not exact in an IEEE double, which RFC 8785 numbers are.
const MAX_EXACT: i64 = 1 << 53;

/// Why a document has no canonical JSON form.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct HashError {
    pub mark: Mark,
    pub message: String,
}

/// The document as a JSON value; fails on numbers JSON cannot carry exactly.
pub fn to_json(node: &Node) -> Result<serde_json::Value, HashError> {
    use serde_json::Value as J;
    let fail = |message: String| HashError {
        mark: node.mark,
        message,
    };
    Ok(match &node.value {
        Value::Null => J::Null,
        Value::Bool(b) => J::Bool(*b),
        Value::Int(i) => {
            if i.unsigned_abs() > MAX_EXACT as u64 {
                return Err(fail(format!(
                    "the integer {i} is too large to hash exactly (at most 2^53); quote it if it is a label"
                )));
            }
            J::from(*i)
        }
        Value::Float(f) => {
            if !f.is_finite() {
                return Err(fail(format!(
                    "`{}` is not a finite number and has no JSON form; quote it if it is text",
                    node.text
                )));
            }
            if f.fract() == 0.0 && f.abs() > MAX_EXACT as f64 {
                return Err(fail(format!(
                    "the number {} is too large to hash exactly (at most 2^53)",
                    node.text
                )));
            }
            serde_json::Number::from_f64(*f)
                .map(J::Number)
                .unwrap_or(J::Null)
        }
        Value::Str(s) => J::String(s.clone()),
        Value::Seq(items) => J::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        Value::Map(entries) => {
            let mut m = serde_json::Map::new();
            for e in entries {
                if m.contains_key(&e.key) {
                    return Err(HashError {
                        mark: e.key_mark,
                        message: format!("the key `{}` appears twice once read as text", e.key),
                    });
                }
                m.insert(e.key.clone(), to_json(&e.value)?);
            }
            J::Object(m)
        }
    })
}

/// RFC 8785 (JCS) serialisation of a JSON value.
pub fn canonical_json(value: &serde_json::Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &serde_json::Value, out: &mut String) {
    use serde_json::Value as J;
    match value {
        J::Null => out.push_str("null"),
        J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        J::Number(n) => {
            let f = n.as_f64().unwrap_or(0.0);
            // ECMAScript prints -0 as 0.
            let f = if f == 0.0 { 0.0 } else { f };
            out.push_str(ryu_js::Buffer::new().format_finite(f));
        }
        J::String(s) => write_string(s, out),
        J::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        J::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(k, out);
                out.push(':');
                write_canonical(&map[k], out);
            }
            out.push('}');
        }
    }
}

fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Lowercase hex sha256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut s = String::with_capacity(64);
    for b in digest {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// The plan hash of a parsed document.
pub fn plan_hash(root: &Node) -> Result<String, HashError> {
    Ok(sha256_hex(canonical_json(&to_json(root)?).as_bytes()))
}

/// The hash of any serialisable definition, by the same canonical form.
pub fn value_hash<T: serde::Serialize>(value: &T) -> String {
    let json = serde_json::to_value(value).unwrap_or(serde_json::Value::Null);
    sha256_hex(canonical_json(&json).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::yaml::parse;
    use serde_json::json;

    #[test]
    #[allow(clippy::excessive_precision)] // the RFC's own input literal
    fn rfc8785_examples() {
        // From RFC 8785 section 3.2.2 and appendix B.
        let v = json!({"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
                       "string": "\u{20ac}$\u{000F}\u{000a}A'\u{0042}\u{0022}\u{005c}\\\"/",
                       "literals": [null, true, false]});
        assert_eq!(
            canonical_json(&v),
            r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
        );
        let sorted = json!({"\u{20ac}": 1, "\r": 2, "\u{fb33}": 3, "1": 4, "\u{1f600}": 5, "\u{0080}": 6, "\u{00f6}": 7});
        assert_eq!(
            canonical_json(&sorted),
            "{\"\\r\":2,\"1\":4,\"\u{0080}\":6,\"\u{00f6}\":7,\"\u{20ac}\":1,\"\u{1f600}\":5,\"\u{fb33}\":3}"
        );
    }

    #[test]
    fn formatting_comments_and_key_order_do_not_change_the_hash() {
        let a = parse("a: 1\nb: [x, 'y']\nc: {d: 1.0}\n").unwrap();
        let b =
            parse("# note\nc:\n    d: 1   # same value\nb:\n  - x\n  - \"y\"\na: 0x1\n").unwrap();
        assert_eq!(plan_hash(&a).unwrap(), plan_hash(&b).unwrap());
        let c = parse("a: 1\nb: [x, 'y']\nc: {d: 1.5}\n").unwrap();
        assert_ne!(plan_hash(&a).unwrap(), plan_hash(&c).unwrap());
        let d = parse("a: '1'\nb: [x, 'y']\nc: {d: 1.0}\n").unwrap();
        assert_ne!(plan_hash(&a).unwrap(), plan_hash(&d).unwrap());
    }

    #[test]
    fn inexact_numbers_are_refused() {
        assert!(plan_hash(&parse("a: 9007199254740993\n").unwrap()).is_err());
        assert!(plan_hash(&parse("a: .nan\n").unwrap()).is_err());
        assert!(plan_hash(&parse("a: 9007199254740992\n").unwrap()).is_ok());
    }
}
