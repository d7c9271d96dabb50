//! Toxic definitions: Toxiproxy's JSON shapes, parsing, validation and updates.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::ApiError;

/// Which way through the proxy a toxic acts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stream {
    /// Client to upstream.
    Upstream,
    /// Upstream to client (Toxiproxy's default).
    Downstream,
}

impl Stream {
    /// Parses `upstream`/`downstream`, ignoring case like Toxiproxy.
    pub fn parse(s: &str) -> Result<Stream, ApiError> {
        match s.to_ascii_lowercase().as_str() {
            "upstream" => Ok(Stream::Upstream),
            "downstream" => Ok(Stream::Downstream),
            _ => Err(ApiError::InvalidStream),
        }
    }

    /// The lowercase name used in JSON and default toxic names.
    pub fn as_str(self) -> &'static str {
        match self {
            Stream::Upstream => "upstream",
            Stream::Downstream => "downstream",
        }
    }
}

/// What a toxic does, with its attributes (times in ms unless noted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Delays each chunk by `latency` +/- `jitter` milliseconds.
    Latency {
        /// Added delay in ms.
        latency: i64,
        /// Random +/- spread in ms.
        jitter: i64,
    },
    /// Limits throughput to `rate` KB/s.
    Bandwidth {
        /// Rate in KB/s (1 KB = 1000 bytes); 0 means unlimited.
        rate: i64,
    },
    /// Drops all data; closes the connection after `timeout` ms (0 = never).
    Timeout {
        /// Time until close in ms; 0 keeps the connection open forever.
        timeout: i64,
    },
    /// Resets the connection (TCP RST) `timeout` ms after data arrives.
    ResetPeer {
        /// Delay before the reset in ms.
        timeout: i64,
    },
    /// Delays the close of the connection by `delay` ms.
    SlowClose {
        /// Delay in ms.
        delay: i64,
    },
    /// Closes the connection once `bytes` bytes have passed.
    LimitData {
        /// Bytes allowed through before the close.
        bytes: i64,
    },
    /// Slices data into chunks of about `average_size` bytes, `delay` µs apart.
    Slicer {
        /// Mean slice size in bytes.
        average_size: i64,
        /// +/- spread of the slice size in bytes.
        size_variation: i64,
        /// Delay between slices in microseconds.
        delay: i64,
    },
}

/// Largest attribute value (about 35 years in ms): keeps time arithmetic
/// far from overflow.
pub const MAX_ATTRIBUTE: i64 = 1 << 40;

/// The attribute names of each toxic type, in the order they are read.
fn attribute_names(type_name: &str) -> Option<&'static [&'static str]> {
    Some(match type_name {
        "latency" => &["latency", "jitter"],
        "bandwidth" => &["rate"],
        "timeout" => &["timeout"],
        "reset_peer" => &["timeout"],
        "slow_close" => &["delay"],
        "limit_data" => &["bytes"],
        "slicer" => &["average_size", "size_variation", "delay"],
        _ => return None,
    })
}

impl Kind {
    /// The Toxiproxy type name.
    pub fn type_name(&self) -> &'static str {
        match self {
            Kind::Latency { .. } => "latency",
            Kind::Bandwidth { .. } => "bandwidth",
            Kind::Timeout { .. } => "timeout",
            Kind::ResetPeer { .. } => "reset_peer",
            Kind::SlowClose { .. } => "slow_close",
            Kind::LimitData { .. } => "limit_data",
            Kind::Slicer { .. } => "slicer",
        }
    }

    /// Builds a toxic of `type_name` from its attribute object; absent
    /// attributes default to 0 as in Toxiproxy, unknown ones are ignored.
    pub fn from_attributes(type_name: &str, attrs: &Map<String, Value>) -> Result<Kind, ApiError> {
        let names = attribute_names(type_name).ok_or(ApiError::InvalidToxicType)?;
        let mut v = [0i64; 3];
        for (slot, name) in v.iter_mut().zip(names.iter()) {
            *slot = match attrs.get(*name) {
                None | Some(Value::Null) => 0,
                Some(value) => integer(value).ok_or_else(|| {
                    ApiError::BadRequestBody(format!(
                        "attribute {name} must be an integer, got {value}"
                    ))
                })?,
            };
            if !(0..=MAX_ATTRIBUTE).contains(slot) {
                return Err(ApiError::BadRequestBody(format!(
                    "attribute {name} must be between 0 and {MAX_ATTRIBUTE}"
                )));
            }
        }
        let kind = match type_name {
            "latency" => Kind::Latency {
                latency: v[0],
                jitter: v[1],
            },
            "bandwidth" => Kind::Bandwidth { rate: v[0] },
            "timeout" => Kind::Timeout { timeout: v[0] },
            "reset_peer" => Kind::ResetPeer { timeout: v[0] },
            "slow_close" => Kind::SlowClose { delay: v[0] },
            "limit_data" => Kind::LimitData { bytes: v[0] },
            _ => Kind::Slicer {
                average_size: v[0],
                size_variation: v[1],
                delay: v[2],
            },
        };
        kind.validate()?;
        Ok(kind)
    }

    fn validate(&self) -> Result<(), ApiError> {
        if let Kind::Slicer {
            average_size,
            size_variation,
            ..
        } = *self
        {
            if average_size < 1 || size_variation >= average_size {
                return Err(ApiError::BadRequestBody(
                    "slicer needs average_size >= 1 and size_variation < average_size".into(),
                ));
            }
        }
        Ok(())
    }

    /// The attribute object, as Toxiproxy serialises it.
    pub fn attributes(&self) -> Map<String, Value> {
        let values: Vec<i64> = match *self {
            Kind::Latency { latency, jitter } => vec![latency, jitter],
            Kind::Bandwidth { rate } => vec![rate],
            Kind::Timeout { timeout } | Kind::ResetPeer { timeout } => vec![timeout],
            Kind::SlowClose { delay } => vec![delay],
            Kind::LimitData { bytes } => vec![bytes],
            Kind::Slicer {
                average_size,
                size_variation,
                delay,
            } => {
                vec![average_size, size_variation, delay]
            }
        };
        let names = attribute_names(self.type_name()).unwrap_or(&[]);
        names
            .iter()
            .zip(values)
            .map(|(n, v)| ((*n).to_string(), Value::from(v)))
            .collect()
    }
}

/// Reads a JSON number as an integer (integral floats such as `100.0` too).
fn integer(value: &Value) -> Option<i64> {
    if let Some(i) = value.as_i64() {
        return Some(i);
    }
    let f = value.as_f64()?;
    (f.is_finite() && f.fract() == 0.0 && f.abs() < 9.0e18).then_some(f as i64)
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// One toxic as configured on a proxy.
#[derive(Clone, Debug, PartialEq)]
pub struct Toxic {
    /// Identity kept across updates, so links keep per-toxic state.
    pub id: u64,
    /// Changes on every update, so links re-roll toxicity like Toxiproxy.
    pub version: u64,
    /// Unique name within the proxy.
    pub name: String,
    /// Direction the toxic acts on.
    pub stream: Stream,
    /// Probability (0..=1) that the toxic applies to a given connection.
    pub toxicity: f64,
    /// Type and attributes.
    pub kind: Kind,
}

/// The JSON body of `POST /proxies/{proxy}/toxics`.
#[derive(Deserialize)]
struct CreateBody {
    #[serde(default)]
    name: Option<String>,
    #[serde(default, rename = "type")]
    type_name: Option<String>,
    #[serde(default)]
    stream: Option<String>,
    #[serde(default)]
    toxicity: Option<f64>,
    #[serde(default)]
    attributes: Option<Map<String, Value>>,
}

/// The JSON body of `POST /proxies/{proxy}/toxics/{toxic}`.
#[derive(Deserialize)]
struct UpdateBody {
    #[serde(default)]
    toxicity: Option<f64>,
    #[serde(default)]
    attributes: Option<Map<String, Value>>,
}

fn check_toxicity(t: f64) -> Result<f64, ApiError> {
    if (0.0..=1.0).contains(&t) {
        Ok(t)
    } else {
        Err(ApiError::BadRequestBody(format!(
            "toxicity must be between 0 and 1, got {t}"
        )))
    }
}

/// Parses a JSON body, mapping failures to Toxiproxy's 400 error.
pub fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::BadRequestBody("EOF".into()));
    }
    serde_json::from_slice(body).map_err(|e| ApiError::BadRequestBody(e.to_string()))
}

impl Toxic {
    /// Parses a create request; `exists` tells whether a name is taken.
    /// Checks run in Toxiproxy's order: body, stream, type, name clash, attributes.
    pub fn from_create_body(body: &[u8], exists: impl Fn(&str) -> bool) -> Result<Toxic, ApiError> {
        let req: CreateBody = parse_json(body)?;
        let stream = match req.stream.as_deref() {
            None => Stream::Downstream,
            Some(s) => Stream::parse(s)?,
        };
        let type_name = req.type_name.unwrap_or_default();
        if attribute_names(&type_name).is_none() {
            return Err(ApiError::InvalidToxicType);
        }
        let name = match req.name {
            Some(n) if !n.is_empty() => n,
            _ => format!("{}_{}", type_name, stream.as_str()),
        };
        if exists(&name) {
            return Err(ApiError::ToxicAlreadyExists);
        }
        let kind = Kind::from_attributes(&type_name, &req.attributes.unwrap_or_default())?;
        let toxicity = check_toxicity(req.toxicity.unwrap_or(1.0))?;
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        Ok(Toxic {
            id,
            version: id,
            name,
            stream,
            toxicity,
            kind,
        })
    }

    /// Applies an update request: given attributes overwrite, the rest stay.
    pub fn updated(&self, body: &[u8]) -> Result<Toxic, ApiError> {
        let req: UpdateBody = parse_json(body)?;
        let mut attrs = self.kind.attributes();
        for (k, v) in req.attributes.unwrap_or_default() {
            attrs.insert(k, v);
        }
        let kind = Kind::from_attributes(self.kind.type_name(), &attrs)?;
        let toxicity = check_toxicity(req.toxicity.unwrap_or(self.toxicity))?;
        Ok(Toxic {
            version: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            kind,
            toxicity,
            ..self.clone()
        })
    }

    /// The JSON view: `{"attributes":{..},"name":..,"type":..,"stream":..,"toxicity":..}`.
    pub fn view(&self) -> ToxicView<'_> {
        ToxicView {
            attributes: self.kind.attributes(),
            name: &self.name,
            type_name: self.kind.type_name(),
            stream: self.stream,
            toxicity: self.toxicity,
        }
    }
}

/// Serialisable form of a toxic, field for field as Toxiproxy writes it.
#[derive(Serialize)]
pub struct ToxicView<'a> {
    attributes: Map<String, Value>,
    name: &'a str,
    #[serde(rename = "type")]
    type_name: &'static str,
    stream: Stream,
    toxicity: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_defaults_name_stream_and_toxicity() {
        let t = Toxic::from_create_body(
            br#"{"type":"latency","attributes":{"latency":100}}"#,
            |_| false,
        )
        .unwrap();
        assert_eq!(t.name, "latency_downstream");
        assert_eq!(t.stream, Stream::Downstream);
        assert_eq!(t.toxicity, 1.0);
        assert_eq!(
            t.kind,
            Kind::Latency {
                latency: 100,
                jitter: 0
            }
        );
        let v = serde_json::to_value(t.view()).unwrap();
        assert_eq!(v["attributes"]["jitter"], 0);
        assert_eq!(v["type"], "latency");
    }

    #[test]
    fn create_errors() {
        let e = |b: &str| Toxic::from_create_body(b.as_bytes(), |n| n == "taken").unwrap_err();
        assert_eq!(e(r#"{"type":"nope"}"#), ApiError::InvalidToxicType);
        assert_eq!(
            e(r#"{"type":"latency","stream":"sideways"}"#),
            ApiError::InvalidStream
        );
        assert_eq!(
            e(r#"{"type":"latency","name":"taken"}"#),
            ApiError::ToxicAlreadyExists
        );
        assert_eq!(e("").status(), 400);
        assert_eq!(e("{").status(), 400);
        assert_eq!(
            e(r#"{"type":"latency","attributes":{"latency":"x"}}"#).status(),
            400
        );
        assert_eq!(e(r#"{"type":"latency","toxicity":2}"#).status(), 400);
        assert_eq!(
            e(r#"{"type":"slicer","attributes":{"average_size":0}}"#).status(),
            400
        );
        assert_eq!(
            e(r#"{"type":"latency","attributes":{"latency":-1}}"#).status(),
            400
        );
        assert_eq!(
            e(r#"{"type":"latency","attributes":{"latency":9223372036854775807}}"#).status(),
            400
        );
    }

    #[test]
    fn update_merges_attributes() {
        let t = Toxic::from_create_body(
            br#"{"type":"latency","attributes":{"latency":100,"jitter":5}}"#,
            |_| false,
        )
        .unwrap();
        let u = t.updated(br#"{"attributes":{"latency":50}}"#).unwrap();
        assert_eq!(
            u.kind,
            Kind::Latency {
                latency: 50,
                jitter: 5
            }
        );
        assert_eq!(u.id, t.id);
        assert_ne!(u.version, t.version);
    }
}
