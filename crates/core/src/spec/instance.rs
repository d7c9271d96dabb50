//! A study instance: the random id one study directory's runs carry on the engine, in every
//! container, network and volume name and in the `feedbench.instance` label, so that two
//! studies of one plan (two clones, two branches) never share a name and reap or clean only
//! their own. The id is made once, at the study's first start (`rundir::instance` keeps it).

use std::fmt;

/// The label every container, network and volume of an instance carries.
pub const LABEL_INSTANCE: &str = "feedbench.instance";

/// How many hex digits an id has: 32 random bits, so that two instances on one engine share
/// an id about once in four billion pairs.
const DIGITS: usize = 8;

/// An instance id: eight lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct Instance(String);

impl Instance {
    /// The id four random bytes spell.
    pub fn from_bytes(bytes: [u8; 4]) -> Instance {
        Instance(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// An id as written in a file or given on the command line; the error says what is wrong.
    pub fn parse(s: &str) -> Result<Instance, String> {
        if s.len() == DIGITS && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            Ok(Instance(s.to_string()))
        } else {
            Err(format!(
                "`{s}` is not an instance id ({DIGITS} lowercase hex digits, as `feedbench run` printed it)"
            ))
        }
    }

    /// The id tests deploy under: `abcdef01`.
    pub fn for_tests() -> Instance {
        Instance::from_bytes([0xab, 0xcd, 0xef, 0x01])
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Instance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Instance {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Instance::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_eight_lowercase_hex_digits_and_nothing_else_parses() {
        let i = Instance::from_bytes([0x0a, 0xff, 0x10, 0x00]);
        assert_eq!(i.as_str(), "0aff1000");
        assert_eq!(Instance::parse("0aff1000").unwrap(), i);
        for bad in [
            "",
            "0aff100",
            "0aff10000",
            "0AFF1000",
            "0aff10g0",
            "../x1234",
        ] {
            let e = Instance::parse(bad).unwrap_err();
            assert!(e.contains("is not an instance id"), "{bad}: {e}");
        }
        let json: Result<Instance, _> = serde_json::from_str("\"zz\"");
        assert!(json.unwrap_err().to_string().contains("not an instance id"));
    }
}
