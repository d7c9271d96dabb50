//! `results/<study>/instance.json`: the study's instance id (`spec::instance`), written
//! atomically at the study's first start and read back by every later one (`run --resume`),
//! so that a resumed study reaps exactly what it left on the engine.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::files::{fail, write_atomic, FileError};
use crate::spec::instance::Instance;

pub const FILE: &str = "instance.json";
pub const FORMAT_VERSION: u32 = 1;

/// The file's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstanceFile {
    pub format_version: u32,
    pub instance: Instance,
    /// The study's name, as a reader of the file alone would want it.
    pub study: String,
    /// When the instance was made (Unix ns, a decimal string).
    pub created_wall_ns: String,
}

#[derive(Debug, thiserror::Error)]
pub enum InstanceError {
    #[error(transparent)]
    File(#[from] FileError),
    #[error("`{}` is damaged ({why}); it names the study's instance, which its containers carry on the engine. Restore it, or remove it to give the study a new instance (then clean what the old one left with `feedbench clean --study {study}`)", .path.display())]
    Damaged {
        path: PathBuf,
        why: String,
        study: String,
    },
}

/// The instance recorded in the study directory `dir`, if one is.
pub fn read(dir: &Path, study: &str) -> Result<Option<InstanceFile>, InstanceError> {
    let path = dir.join(FILE);
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(fail("read", &path)(e).into()),
    };
    let damaged = |why: String| InstanceError::Damaged {
        path: path.clone(),
        why,
        study: study.to_string(),
    };
    let file: InstanceFile =
        crate::files::parse_versioned(&text, FORMAT_VERSION).map_err(damaged)?;
    if file.study != study {
        return Err(damaged(format!(
            "it names study `{}`, the directory holds `{study}`",
            file.study
        )));
    }
    Ok(Some(file))
}

/// Writes `file` into the study directory `dir` (which must exist), atomically.
pub fn write(dir: &Path, file: &InstanceFile) -> Result<(), InstanceError> {
    let mut json = serde_json::to_vec_pretty(file).expect("an instance file serialises");
    json.push(b'\n');
    write_atomic(&dir.join(FILE), &json)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file() -> InstanceFile {
        InstanceFile {
            format_version: FORMAT_VERSION,
            instance: Instance::from_bytes([1, 2, 3, 4]),
            study: "smoke".into(),
            created_wall_ns: "1".into(),
        }
    }

    #[test]
    fn an_instance_written_reads_back_and_none_is_none() {
        let d = tempfile::tempdir().unwrap();
        assert!(read(d.path(), "smoke").unwrap().is_none());
        write(d.path(), &file()).unwrap();
        assert_eq!(read(d.path(), "smoke").unwrap(), Some(file()));
    }

    #[test]
    fn a_damaged_file_is_named_with_what_is_wrong_and_how_to_go_on() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join(FILE);
        let cases: [(&[u8], &str); 4] = [
            (b"{\"format_version\":1,", "EOF"),
            (
                b"{\"format_version\":1,\"instance\":\"XY\",\"study\":\"smoke\",\"created_wall_ns\":\"1\"}",
                "not an instance id",
            ),
            (b"{\"format_version\":2}", "format_version 2"),
            (
                b"{\"format_version\":1,\"instance\":\"01020304\",\"study\":\"other\",\"created_wall_ns\":\"1\"}",
                "names study `other`",
            ),
        ];
        for (text, why) in cases {
            std::fs::write(&path, text).unwrap();
            let e = read(d.path(), "smoke").unwrap_err().to_string();
            assert!(e.contains(why), "{e}");
            assert!(e.contains("instance.json"), "{e}");
            assert!(e.contains("feedbench clean --study smoke"), "{e}");
        }
    }
}
