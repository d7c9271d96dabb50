//! A serde deserializer over the positioned YAML tree, so that every typing error names the
//! line, column and field path where it happened.

use std::fmt;

use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};

use super::yaml::{join_key, Entry, Mark, Node, Value};

/// A typing error at a place in the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct DeError {
    pub mark: Option<Mark>,
    pub path: Option<String>,
    pub message: String,
    pub hint: Option<String>,
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DeError {
            mark: None,
            path: None,
            message: msg.to_string(),
            hint: None,
        }
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        let mut e = Self::custom(format_args!("unknown field `{field}`"));
        e.hint = Some(suggest(field, expected, "field"));
        e
    }

    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        let mut e = Self::custom(format_args!("unknown kind `{variant}`"));
        e.hint = Some(suggest(variant, expected, "kind"));
        e
    }

    fn missing_field(field: &'static str) -> Self {
        Self::custom(format_args!("missing field `{field}`"))
    }
}

/// "did you mean `x`?" when a close name exists, and the full list either way.
pub fn suggest(found: &str, expected: &[&str], what: &str) -> String {
    let list = expected
        .iter()
        .map(|e| format!("`{e}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let best = expected
        .iter()
        .map(|e| (strsim::jaro_winkler(found, e), *e))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match best {
        Some((_, name)) => format!("did you mean `{name}`? (the {what}s are: {list})"),
        None if expected.is_empty() => format!("no {what}s are allowed here"),
        None => format!("the {what}s are: {list}"),
    }
}

/// Deserializes a `T` from the tree rooted at `node`.
pub fn from_node<'de, T: de::Deserialize<'de>>(node: &'de Node) -> Result<T, DeError> {
    T::deserialize(NodeDe {
        node,
        path: String::new(),
    })
}

struct NodeDe<'de> {
    node: &'de Node,
    path: String,
}

impl<'de> NodeDe<'de> {
    /// Errors raised while this node is being read, and not yet placed, are placed here.
    fn place(&self, mut e: DeError) -> DeError {
        if e.mark.is_none() {
            e.mark = Some(self.node.mark);
            e.path = Some(self.path.clone());
        }
        e
    }

    fn unexpected(&self) -> de::Unexpected<'de> {
        match &self.node.value {
            Value::Null => de::Unexpected::Unit,
            Value::Bool(b) => de::Unexpected::Bool(*b),
            Value::Int(i) => de::Unexpected::Signed(*i),
            Value::Float(f) => de::Unexpected::Float(*f),
            Value::Str(s) => de::Unexpected::Str(s),
            Value::Seq(_) => de::Unexpected::Seq,
            Value::Map(_) => de::Unexpected::Map,
        }
    }
}

impl<'de> de::Deserializer<'de> for NodeDe<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        let r = match &self.node.value {
            Value::Null => v.visit_unit(),
            Value::Bool(b) => v.visit_bool(*b),
            Value::Int(i) => v.visit_i64(*i),
            Value::Float(f) => v.visit_f64(*f),
            Value::Str(s) => v.visit_borrowed_str(s),
            Value::Seq(items) => v.visit_seq(SeqDe {
                items: items.iter().enumerate(),
                path: &self.path,
            }),
            Value::Map(entries) => v.visit_map(MapDe {
                entries: entries.iter(),
                path: &self.path,
                current: None,
            }),
        };
        r.map_err(|e| self.place(e))
    }

    /// Strings accept any scalar as written (`POOL_SIZE: 16` is the string "16").
    fn deserialize_str<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        let r = match &self.node.value {
            Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Str(_) => {
                v.visit_borrowed_str(&self.node.text)
            }
            _ => Err(de::Error::invalid_type(self.unexpected(), &v)),
        };
        r.map_err(|e| self.place(e))
    }

    fn deserialize_string<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        self.deserialize_str(v)
    }

    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        if self.node.value == Value::Null {
            v.visit_none().map_err(|e| self.place(e))
        } else {
            let mark = self.node.mark;
            let path = self.path.clone();
            v.visit_some(self).map_err(|mut e| {
                if e.mark.is_none() {
                    e.mark = Some(mark);
                    e.path = Some(path);
                }
                e
            })
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        v: V,
    ) -> Result<V::Value, DeError> {
        let mark = self.node.mark;
        let path = self.path.clone();
        v.visit_newtype_struct(self).map_err(|mut e| {
            if e.mark.is_none() {
                e.mark = Some(mark);
                e.path = Some(path);
            }
            e
        })
    }

    /// Enums are written as a bare name (`sequential`) or a one-key mapping
    /// (`shuffled: {seed: 7}`).
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, DeError> {
        let r = match &self.node.value {
            Value::Str(s) => v.visit_enum(s.as_str().into_deserializer()),
            Value::Map(entries) if entries.len() == 1 => v.visit_enum(EnumDe {
                entry: &entries[0],
                path: &self.path,
            }),
            _ => Err(DeError {
                mark: None,
                path: None,
                message: format!(
                    "expected one of the kinds {}, written as `kind: {{...}}`",
                    variants
                        .iter()
                        .map(|v| format!("`{v}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                hint: None,
            }),
        };
        r.map_err(|e| self.place(e))
    }

    /// A struct is written as a mapping, never as a sequence of its fields.
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, DeError> {
        match &self.node.value {
            Value::Map(_) => self.deserialize_any(v),
            _ => Err(self.place(<DeError as de::Error>::custom(format_args!(
                "expected a mapping of `key: value` lines, found {}",
                self.unexpected()
            )))),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char
        bytes byte_buf unit unit_struct seq tuple
        tuple_struct map identifier ignored_any
    }
}

struct SeqDe<'de, 'p> {
    items: std::iter::Enumerate<std::slice::Iter<'de, Node>>,
    path: &'p str,
}

impl<'de> de::SeqAccess<'de> for SeqDe<'de, '_> {
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
        match self.items.next() {
            None => Ok(None),
            Some((i, node)) => seed
                .deserialize(NodeDe {
                    node,
                    path: format!("{}[{i}]", self.path),
                })
                .map(Some),
        }
    }
}

struct MapDe<'de, 'p> {
    entries: std::slice::Iter<'de, Entry>,
    path: &'p str,
    current: Option<&'de Entry>,
}

impl<'de> de::MapAccess<'de> for MapDe<'de, '_> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        let Some(entry) = self.entries.next() else {
            return Ok(None);
        };
        self.current = Some(entry);
        let de: de::value::BorrowedStrDeserializer<'de, DeError> =
            de::value::BorrowedStrDeserializer::new(&entry.key);
        seed.deserialize(de).map(Some).map_err(|mut e| {
            if e.mark.is_none() {
                e.mark = Some(entry.key_mark);
                e.path = Some(join_key(self.path, &entry.key));
            }
            e
        })
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        let entry = self
            .current
            .take()
            .ok_or_else(|| <DeError as de::Error>::custom("value requested before its key"))?;
        seed.deserialize(NodeDe {
            node: &entry.value,
            path: join_key(self.path, &entry.key),
        })
    }
}

struct EnumDe<'de, 'p> {
    entry: &'de Entry,
    path: &'p str,
}

impl<'de> de::EnumAccess<'de> for EnumDe<'de, '_> {
    type Error = DeError;
    type Variant = NodeDe<'de>;

    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, NodeDe<'de>), DeError> {
        let path = join_key(self.path, &self.entry.key);
        let de: de::value::BorrowedStrDeserializer<'de, DeError> =
            de::value::BorrowedStrDeserializer::new(&self.entry.key);
        let variant = seed.deserialize(de).map_err(|mut e| {
            e.mark = Some(self.entry.key_mark);
            e.path = Some(path.clone());
            e
        })?;
        Ok((
            variant,
            NodeDe {
                node: &self.entry.value,
                path,
            },
        ))
    }
}

impl<'de> de::VariantAccess<'de> for NodeDe<'de> {
    type Error = DeError;

    fn unit_variant(self) -> Result<(), DeError> {
        match self.node.value {
            Value::Null => Ok(()),
            _ => Err(self.place(<DeError as de::Error>::custom(
                "this kind takes no settings; write it as a bare name",
            ))),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, DeError> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, v: V) -> Result<V::Value, DeError> {
        de::Deserializer::deserialize_seq(self, v)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, DeError> {
        // `kind: ~` stands for a kind whose settings are all defaulted.
        if self.node.value == Value::Null {
            let empty: &'de [Entry] = &[];
            let path = self.path.clone();
            return v
                .visit_map(MapDe {
                    entries: empty.iter(),
                    path: &path,
                    current: None,
                })
                .map_err(|e| self.place(e));
        }
        de::Deserializer::deserialize_map(self, v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::yaml::parse;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "kebab-case")]
    struct Outer {
        inner: Inner,
        #[serde(default)]
        kinds: Vec<Kind>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "kebab-case")]
    struct Inner {
        count: u32,
        label: String,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields, rename_all = "kebab-case")]
    enum Kind {
        Plain,
        Shaped { size: u32 },
    }

    fn err(src: &str) -> DeError {
        let doc = parse(src).unwrap();
        from_node::<Outer>(&doc).unwrap_err()
    }

    #[test]
    fn type_errors_name_line_column_and_path() {
        let e = err("inner:\n  count: many\n  label: x\n");
        assert_eq!(
            e.mark,
            Some(Mark {
                line: 2,
                column: 10
            })
        );
        assert_eq!(e.path.as_deref(), Some("inner.count"));
        assert!(
            e.message.contains("invalid type: string \"many\""),
            "{}",
            e.message
        );
    }

    #[test]
    fn unknown_fields_suggest_the_closest_name() {
        let e = err("inner:\n  count: 1\n  lable: x\n");
        assert_eq!(e.path.as_deref(), Some("inner.lable"));
        assert_eq!(e.mark, Some(Mark { line: 3, column: 3 }));
        assert!(e.hint.unwrap().starts_with("did you mean `label`?"));
    }

    #[test]
    fn missing_fields_point_at_their_mapping() {
        let e = err("inner:\n  count: 1\n");
        assert_eq!(e.path.as_deref(), Some("inner"));
        assert_eq!(e.message, "missing field `label`");
    }

    #[test]
    fn enums_take_bare_names_and_one_key_mappings() {
        let doc =
            parse("inner: {count: 1, label: 2}\nkinds: [plain, {shaped: {size: 3}}]\n").unwrap();
        let o: Outer = from_node(&doc).unwrap();
        assert_eq!((o.inner.count, o.inner.label.as_str()), (1, "2"));
        assert_eq!(o.kinds, vec![Kind::Plain, Kind::Shaped { size: 3 }]);
        let e = err("inner: {count: 1, label: x}\nkinds: [{shapd: {size: 3}}]\n");
        assert_eq!(e.path.as_deref(), Some("kinds[0].shapd"));
        assert!(e.hint.unwrap().contains("did you mean `shaped`"));
        let e = err("inner: {count: 1, label: x}\nkinds: [{shaped: {size: -3}}]\n");
        assert_eq!(e.path.as_deref(), Some("kinds[0].shaped.size"));
    }
}
