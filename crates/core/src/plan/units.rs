//! Value types of the plan that are written as text (`15s`, `512MiB`, `1%`, `70% of ramp`),
//! each parsed at load time into an exact number, with the error a person can act on.

use std::fmt;

use schemars::gen::SchemaGenerator;
use schemars::schema::{InstanceType, Schema, SchemaObject, SingleOrVec};
use schemars::JsonSchema;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

fn string_schema(pattern: &str, description: &str) -> Schema {
    let mut s = SchemaObject {
        instance_type: Some(SingleOrVec::Single(Box::new(InstanceType::String))),
        ..Default::default()
    };
    s.string().pattern = Some(pattern.to_string());
    s.metadata().description = Some(description.to_string());
    Schema::Object(s)
}

/// Reads a scalar as its text, whatever YAML type it resolved to.
struct Text(&'static str);

impl Visitor<'_> for Text {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.0)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<String, E> {
        Ok(v.to_string())
    }
}

/// Reads a scalar's text and parses it inside the visitor, so that a parse error is raised
/// while the value's own node is read and is placed at that node.
struct Parsed<T>(&'static str, std::marker::PhantomData<T>);

impl<T: std::str::FromStr<Err = ()>> Visitor<'_> for Parsed<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.0)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        v.parse::<T>()
            .map_err(|()| E::custom(format_args!("expected {}, found \"{}\"", self.0, v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        self.visit_str(&v.to_string())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        self.visit_str(&v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        self.visit_str(&v.to_string())
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<T, E> {
        self.visit_str(&v.to_string())
    }
}

fn parsed<'de, T: std::str::FromStr<Err = ()>, D: Deserializer<'de>>(
    d: D,
    expecting: &'static str,
) -> Result<T, D::Error> {
    d.deserialize_str(Parsed(expecting, std::marker::PhantomData))
}

macro_rules! text_type {
    ($ty:ident, $expecting:literal, $pattern:literal, $desc:literal) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                parsed(d, $expecting)
            }
        }
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
        impl JsonSchema for $ty {
            fn schema_name() -> String {
                stringify!($ty).to_string()
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                string_schema($pattern, $desc)
            }
        }
    };
}

/// A span of time with millisecond resolution: `100ms`, `15s`, `2m`, `1h`, `1m30s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration {
    pub millis: u64,
}

impl Duration {
    pub const fn from_secs(s: u64) -> Self {
        Duration { millis: s * 1000 }
    }
    pub fn as_secs_f64(self) -> f64 {
        self.millis as f64 / 1000.0
    }
}

impl std::str::FromStr for Duration {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        let mut rest = s.trim();
        if rest.is_empty() {
            return Err(());
        }
        let mut total: f64 = 0.0;
        while !rest.is_empty() {
            let n = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .ok_or(())?;
            let number: f64 = rest[..n].parse().map_err(|_| ())?;
            rest = &rest[n..];
            let u = rest
                .find(|c: char| c.is_ascii_digit())
                .unwrap_or(rest.len());
            let factor = match &rest[..u] {
                "ms" => 1.0,
                "s" => 1_000.0,
                "m" => 60_000.0,
                "h" => 3_600_000.0,
                _ => return Err(()),
            };
            rest = &rest[u..];
            total += number * factor;
        }
        if !total.is_finite() || total > 1e15 || total.fract() != 0.0 {
            return Err(());
        }
        Ok(Duration {
            millis: total as u64,
        })
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let ms = self.millis;
        if ms % 3_600_000 == 0 && ms > 0 {
            write!(f, "{}h", ms / 3_600_000)
        } else if ms % 60_000 == 0 && ms > 0 {
            write!(f, "{}m", ms / 60_000)
        } else if ms % 1000 == 0 {
            write!(f, "{}s", ms / 1000)
        } else {
            write!(f, "{ms}ms")
        }
    }
}

text_type!(
    Duration,
    "a duration such as \"15s\", \"100ms\", \"2m\" or \"1m30s\"",
    r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$",
    "A duration: a number and a unit (ms, s, m, h), repeatable: \"15s\", \"1m30s\"."
);

/// A number of bytes: `512MiB`, `1.5GiB`, `100MB`, or a bare integer of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize {
    pub bytes: u64,
}

impl std::str::FromStr for ByteSize {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        let s = s.trim();
        let n = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(s.len());
        if n == 0 {
            return Err(());
        }
        let number: f64 = s[..n].parse().map_err(|_| ())?;
        let factor: f64 = match &s[n..] {
            "" | "B" => 1.0,
            "KiB" => 1024.0,
            "MiB" => 1024.0 * 1024.0,
            "GiB" => 1024.0 * 1024.0 * 1024.0,
            "TiB" => 1024.0f64.powi(4),
            "KB" | "kB" => 1e3,
            "MB" => 1e6,
            "GB" => 1e9,
            "TB" => 1e12,
            _ => return Err(()),
        };
        let bytes = (number * factor).round();
        if !bytes.is_finite() || bytes > 9e18 {
            return Err(());
        }
        Ok(ByteSize {
            bytes: bytes as u64,
        })
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        const UNITS: [(&str, u64); 4] = [
            ("TiB", 1 << 40),
            ("GiB", 1 << 30),
            ("MiB", 1 << 20),
            ("KiB", 1 << 10),
        ];
        for (unit, size) in UNITS {
            if self.bytes >= size && self.bytes % size == 0 {
                return write!(f, "{}{unit}", self.bytes / size);
            }
        }
        write!(f, "{}B", self.bytes)
    }
}

text_type!(
    ByteSize,
    "a size such as \"512MiB\" or \"1GiB\" (units B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)",
    r"^[0-9]+(\.[0-9]+)?(B|KiB|MiB|GiB|TiB|KB|kB|MB|GB|TB)?$",
    "A size in bytes with an optional unit: \"512MiB\", \"1GiB\", \"100MB\"."
);

/// A percentage written with its sign: `1%`, `0.5%`, `80%`. Stored as written (in percent)
/// so that it prints back exactly.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Percent {
    pub percent: f64,
}

impl Percent {
    pub fn fraction(self) -> f64 {
        self.percent / 100.0
    }
}

impl std::str::FromStr for Percent {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        let number = s.trim().strip_suffix('%').ok_or(())?;
        if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            return Err(());
        }
        let v: f64 = number.parse().map_err(|_| ())?;
        Ok(Percent { percent: v })
    }
}

impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}%", ryu_js::Buffer::new().format(self.percent))
    }
}

text_type!(
    Percent,
    "a percentage such as \"1%\" or \"80%\"",
    r"^[0-9]+(\.[0-9]+)?%$",
    "A percentage: a number followed by %, e.g. \"1%\"."
);

/// An arrival rate (per second): a number, or a fraction of a step-ramp profile's measured
/// saturation, `"70% of ramp"`, resolved when that ramp has run.
#[derive(Debug, Clone, PartialEq)]
pub enum Rate {
    Fixed(f64),
    OfSaturation { share: Percent, profile: Name },
}

impl Rate {
    /// The profile this rate is derived from, if any.
    pub fn dependency(&self) -> Option<&Name> {
        match self {
            Rate::Fixed(_) => None,
            Rate::OfSaturation { profile, .. } => Some(profile),
        }
    }
}

impl std::str::FromStr for Rate {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        let s = s.trim();
        if let Some((pct, profile)) = s.split_once(" of ") {
            let pct: Percent = pct.trim().parse()?;
            let profile: Name = profile.trim().parse().map_err(|_| ())?;
            return Ok(Rate::OfSaturation {
                share: pct,
                profile,
            });
        }
        let v: f64 = s.parse().map_err(|_| ())?;
        if !v.is_finite() {
            return Err(());
        }
        Ok(Rate::Fixed(v))
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Rate::Fixed(v) => f.write_str(ryu_js::Buffer::new().format(*v)),
            Rate::OfSaturation { share, profile } => write!(f, "{share} of {profile}"),
        }
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        const EXPECTING: &str =
            "a rate in arrivals per second such as 50, or a share of a ramp's saturation such as \"70% of ramp\"";
        parsed(d, EXPECTING)
    }
}

impl Serialize for Rate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Rate::Fixed(v) => s.serialize_f64(*v),
            other => s.collect_str(other),
        }
    }
}

impl JsonSchema for Rate {
    fn schema_name() -> String {
        "Rate".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let mut number = SchemaObject {
            instance_type: Some(SingleOrVec::Single(Box::new(InstanceType::Number))),
            ..Default::default()
        };
        number.number().exclusive_minimum = Some(0.0);
        let mut s = SchemaObject::default();
        s.subschemas().one_of = Some(vec![
            Schema::Object(number),
            string_schema(
                r"^[0-9]+(\.[0-9]+)?% of [a-z0-9]([a-z0-9-]*[a-z0-9])?$",
                "A share of a step-ramp profile's saturation, e.g. \"70% of ramp\".",
            ),
        ]);
        s.metadata().description =
            Some("Arrivals per second, or a share of a ramp's measured saturation.".into());
        Schema::Object(s)
    }
}

/// A name that is safe in container names, file names and configs: `[a-z0-9-]`, at most 40
/// characters, starting and ending with a letter or digit.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Name(String);

impl Name {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A name feedbench makes itself, outside the plan's rules on purpose: a pilot's study
    /// name (`rundir::layout::pilot_study`, `<study>.pilot-<n>`) holds a `.` so that no
    /// plan's study can have it. Never for a name read from a plan.
    pub fn outside_rules(name: String) -> Name {
        Name(name)
    }
}

impl std::str::FromStr for Name {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        let ok = !s.is_empty()
            && s.len() <= 40
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !s.starts_with('-')
            && !s.ends_with('-');
        if ok {
            Ok(Name(s.to_string()))
        } else {
            Err(())
        }
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::borrow::Borrow<str> for Name {
    fn borrow(&self) -> &str {
        &self.0
    }
}

text_type!(
    Name,
    "a name of lowercase letters, digits and `-` (at most 40, not starting or ending with `-`)",
    r"^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$",
    "A name: lowercase letters, digits and '-', at most 40 characters."
);

/// A container image reference, `name[:tag]` or `name@sha256:…`, in the engine's grammar.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ImageRef(String);

impl ImageRef {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for ImageRef {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        let ok = !s.is_empty()
            && s.len() <= 255
            && s.bytes().all(|b| {
                b.is_ascii_lowercase()
                    || b.is_ascii_digit()
                    || matches!(b, b'.' | b'_' | b'-' | b'/' | b':' | b'@')
            })
            && s.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
            && !s.ends_with([':', '/', '@', '.']);
        if ok {
            Ok(ImageRef(s.to_string()))
        } else {
            Err(())
        }
    }
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}

text_type!(
    ImageRef,
    "an image reference such as \"feedbench/postgres:15\" or \"postgres:16\" (lowercase, no spaces)",
    r"^[a-z0-9][a-z0-9._/:@-]*$",
    "A container image reference, e.g. \"postgres:16\" or \"feedbench/haproxy:2.6\"."
);

/// An environment variable name: `[A-Za-z_][A-Za-z0-9_]*`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EnvName(String);

impl EnvName {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for EnvName {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        let mut b = s.bytes();
        let ok = b
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
            && b.all(|c| c.is_ascii_alphanumeric() || c == b'_');
        if ok {
            Ok(EnvName(s.to_string()))
        } else {
            Err(())
        }
    }
}

impl fmt::Display for EnvName {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}

text_type!(
    EnvName,
    "an environment variable name such as \"DATABASE_URL\" (letters, digits, `_`)",
    r"^[A-Za-z_][A-Za-z0-9_]*$",
    "An environment variable name."
);

/// An HTTP path on a contender, starting with `/`, printable ASCII without spaces.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UrlPath(String);

impl UrlPath {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for UrlPath {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        if s.starts_with('/') && s.bytes().all(|b| b.is_ascii_graphic()) {
            Ok(UrlPath(s.to_string()))
        } else {
            Err(())
        }
    }
}

impl fmt::Display for UrlPath {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}

text_type!(
    UrlPath,
    "an HTTP path starting with `/`, such as \"/readyz\" (no spaces)",
    r"^/[!-~]*$",
    "An HTTP path beginning with '/'."
);

/// A calendar date, `YYYY-MM-DD` (kept as written; it is a string in the plan hash).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Date(String);

impl std::str::FromStr for Date {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        let b = s.as_bytes();
        if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
            return Err(());
        }
        let num = |r: std::ops::Range<usize>| s[r].parse::<u32>().map_err(|_| ());
        let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
        let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        let days = match m {
            1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
            4 | 6 | 9 | 11 => 30,
            2 if leap => 29,
            2 => 28,
            _ => return Err(()),
        };
        if d == 0 || d > days {
            return Err(());
        }
        Ok(Date(s.to_string()))
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}

text_type!(
    Date,
    "a date written YYYY-MM-DD, such as \"2026-10-01\"",
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$",
    "A calendar date, YYYY-MM-DD."
);

/// An environment value: written as any scalar (`16`, `true`, `"off"`), kept as its text.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct EnvValue(pub String);

impl EnvValue {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for EnvValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(Text("a string, number or boolean"))
            .map(EnvValue)
    }
}

impl JsonSchema for EnvValue {
    fn schema_name() -> String {
        "EnvValue".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let mut s = SchemaObject {
            instance_type: Some(SingleOrVec::Vec(vec![
                InstanceType::String,
                InstanceType::Number,
                InstanceType::Boolean,
            ])),
            ..Default::default()
        };
        s.metadata().description =
            Some("An environment value; numbers and booleans are taken as written.".into());
        Schema::Object(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!("15s".parse::<Duration>(), Ok(Duration { millis: 15_000 }));
        assert_eq!("1m30s".parse::<Duration>(), Ok(Duration { millis: 90_000 }));
        assert_eq!("100ms".parse::<Duration>(), Ok(Duration { millis: 100 }));
        assert_eq!("1.5s".parse::<Duration>(), Ok(Duration { millis: 1_500 }));
        for bad in ["fifteen", "15", "15 s", "s", "", "1.5ms", "-3s", "1d"] {
            assert!(bad.parse::<Duration>().is_err(), "{bad}");
        }
        assert_eq!(Duration { millis: 90_000 }.to_string(), "90s");
        assert_eq!(Duration { millis: 120_000 }.to_string(), "2m");
    }

    #[test]
    fn sizes() {
        assert_eq!("512MiB".parse::<ByteSize>().unwrap().bytes, 512 << 20);
        assert_eq!("1.5GiB".parse::<ByteSize>().unwrap().bytes, 3 << 29);
        assert_eq!("100MB".parse::<ByteSize>().unwrap().bytes, 100_000_000);
        for bad in ["512 megs", "MiB", "-1GiB", "1 GiB", "1gib"] {
            assert!(bad.parse::<ByteSize>().is_err(), "{bad}");
        }
    }

    #[test]
    fn rates_and_percentages() {
        assert_eq!("50".parse::<Rate>(), Ok(Rate::Fixed(50.0)));
        assert_eq!(
            "70% of ramp".parse::<Rate>(),
            Ok(Rate::OfSaturation {
                share: Percent { percent: 70.0 },
                profile: "ramp".parse().unwrap()
            })
        );
        assert!("70 of ramp".parse::<Rate>().is_err());
        assert!("70% of Ramp".parse::<Rate>().is_err());
        assert!("1 percent".parse::<Percent>().is_err());
        assert_eq!("0.5%".parse::<Percent>().unwrap().fraction(), 0.005);
    }

    #[test]
    fn names_and_dates() {
        assert!("feed-rs".parse::<Name>().is_ok());
        for bad in ["Feed", "feed_rs", "-a", "a-", "", "a.b"] {
            assert!(bad.parse::<Name>().is_err(), "{bad}");
        }
        assert!("2024-02-29".parse::<Date>().is_ok());
        assert!("2026-02-29".parse::<Date>().is_err());
        assert!("2026-13-01".parse::<Date>().is_err());
    }
}
