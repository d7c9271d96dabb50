//! Durable file primitives, for the ledger and the run directory alike: whole files written
//! atomically, lines appended and fsync'd, and the sha256 of every file under a directory.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

#[derive(Debug, thiserror::Error)]
#[error("cannot {action} `{path}`: {source}")]
pub struct FileError {
    pub action: &'static str,
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

pub fn fail(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> FileError {
    let path = path.to_path_buf();
    move |source| FileError {
        action,
        path,
        source,
    }
}

/// Makes a rename or a new entry in `dir` durable.
pub fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Writes a whole file atomically: a temporary file in the same directory, fsync'd, then
/// renamed over the name, so a crash leaves the old file or the new one, never half of one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(".{name}.tmp"));
    let mut f = std::fs::File::create(&tmp).map_err(fail("create", &tmp))?;
    f.write_all(bytes).map_err(fail("write", &tmp))?;
    f.sync_all().map_err(fail("sync", &tmp))?;
    std::fs::rename(&tmp, path).map_err(fail("rename into", path))?;
    sync_dir(dir);
    Ok(())
}

/// Moves a directory aside (a rename on one file system, so it is atomic), creating the
/// destination's parent. Returns the path it landed at: `to`, or `to.2`, `to.3`… when an
/// earlier move already took the name; nothing is ever overwritten.
pub fn move_dir(from: &Path, to: &Path) -> Result<PathBuf, FileError> {
    let parent = to.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(fail("create", parent))?;
    let dest = unused(to);
    std::fs::rename(from, &dest).map_err(fail("move", from))?;
    sync_dir(parent);
    if let Some(p) = from.parent() {
        sync_dir(p);
    }
    Ok(dest)
}

/// `path` if nothing is there, else the first free `path.2`, `path.3`…: a name that
/// overwrites nothing.
pub fn unused(path: &Path) -> PathBuf {
    let mut dest = path.to_path_buf();
    let mut n = 1;
    while dest.exists() {
        n += 1;
        dest = PathBuf::from(format!("{}.{n}", path.display()));
    }
    dest
}

/// Whether a directory entry named `name` is `base` or one of the copies `unused` makes of
/// it (`base.2`, `base.3`…).
pub fn is_copy_of(name: &str, base: &str) -> bool {
    name == base
        || name
            .strip_prefix(base)
            .and_then(|rest| rest.strip_prefix('.'))
            .is_some_and(|k| k.parse::<u32>().is_ok_and(|n| n >= 2))
}

/// One file's digest in a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileDigest {
    pub sha256: String,
    pub bytes: u64,
}

/// The sha256 of a file, streamed.
pub fn digest(path: &Path) -> Result<FileDigest, FileError> {
    let mut f = std::fs::File::open(path).map_err(fail("open", path))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut bytes = 0u64;
    loop {
        let n = f.read(&mut buf).map_err(fail("read", path))?;
        if n == 0 {
            break;
        }
        bytes += n as u64;
        h.update(&buf[..n]);
    }
    Ok(FileDigest {
        sha256: hex(&h.finalize()),
        bytes,
    })
}

/// The first 12 characters of a hash, for people; safe on any text a file may hold.
pub fn short(hash: &str) -> &str {
    hash.char_indices()
        .nth(12)
        .map_or(hash, |(i, _)| &hash[..i])
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Every regular file under `dir` (relative paths with `/`, sorted), except the names in
/// `except` at the top level and temporary files (`.name.tmp`) a crash may have left.
pub fn digest_tree(dir: &Path, except: &[&str]) -> Result<BTreeMap<String, FileDigest>, FileError> {
    let mut out = BTreeMap::new();
    let mut stack = vec![(dir.to_path_buf(), String::new())];
    while let Some((path, prefix)) = stack.pop() {
        let entries = std::fs::read_dir(&path).map_err(fail("list", &path))?;
        for e in entries {
            let e = e.map_err(fail("list", &path))?;
            let name = e.file_name().to_string_lossy().into_owned();
            let rel = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}/{name}")
            };
            if prefix.is_empty() && except.contains(&name.as_str()) {
                continue;
            }
            if name.starts_with('.') && name.ends_with(".tmp") {
                continue;
            }
            let kind = e.file_type().map_err(fail("stat", &e.path()))?;
            if kind.is_dir() {
                stack.push((e.path(), rel));
            } else if kind.is_file() {
                out.insert(rel, digest(&e.path())?);
            }
        }
    }
    Ok(out)
}

/// Every symbolic link under `dir` (relative paths with `/`, sorted), not followed: what
/// `digest_tree` leaves out.
pub fn links_under(dir: &Path) -> Result<Vec<String>, FileError> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), String::new())];
    while let Some((path, prefix)) = stack.pop() {
        for e in std::fs::read_dir(&path).map_err(fail("list", &path))? {
            let e = e.map_err(fail("list", &path))?;
            let name = e.file_name().to_string_lossy().into_owned();
            let rel = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            let kind = e.file_type().map_err(fail("stat", &e.path()))?;
            if kind.is_symlink() {
                out.push(rel);
            } else if kind.is_dir() {
                stack.push((e.path(), rel));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// A JSON file's value from its text, when its `format_version` is `version`; an error says
/// what is wrong in words (not JSON, no version, another version, a field amiss).
pub fn parse_versioned<T: serde::de::DeserializeOwned>(
    text: &[u8],
    version: u32,
) -> Result<T, String> {
    let v: serde_json::Value = serde_json::from_slice(text).map_err(|e| e.to_string())?;
    match v.get("format_version").and_then(|f| f.as_u64()) {
        Some(found) if found == u64::from(version) => {
            serde_json::from_value(v).map_err(|e| e.to_string())
        }
        Some(other) => Err(format!(
            "format_version {other}, this feedbench reads {version}"
        )),
        None => Err("no format_version".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_every_file_but_the_excluded_and_temporaries() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("logs")).unwrap();
        std::fs::write(d.path().join("a.csv"), b"abc").unwrap();
        std::fs::write(d.path().join("logs/db.log"), b"").unwrap();
        std::fs::write(d.path().join("manifest.json"), b"{}").unwrap();
        std::fs::write(d.path().join(".x.tmp"), b"half").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", d.path().join("logs/l")).unwrap();
        let t = digest_tree(d.path(), &["manifest.json"]).unwrap();
        assert_eq!(t.keys().collect::<Vec<_>>(), ["a.csv", "logs/db.log"]);
        assert_eq!(links_under(d.path()).unwrap(), ["logs/l"]);
        assert_eq!(
            t["a.csv"].sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(t["a.csv"].bytes, 3);
    }

    #[test]
    fn short_never_cuts_a_character() {
        assert_eq!(short("0123456789abcdef"), "0123456789ab");
        assert_eq!(short("abc"), "abc");
        assert_eq!(short("ééééééééééééé"), "éééééééééééé");
    }

    #[test]
    fn moving_never_overwrites() {
        let d = tempfile::tempdir().unwrap();
        for _ in 0..2 {
            std::fs::create_dir_all(d.path().join("runs/r1")).unwrap();
            std::fs::write(d.path().join("runs/r1/f"), b"x").unwrap();
        }
        let a = move_dir(&d.path().join("runs/r1"), &d.path().join("_x/r1")).unwrap();
        std::fs::create_dir_all(d.path().join("runs/r1")).unwrap();
        let b = move_dir(&d.path().join("runs/r1"), &d.path().join("_x/r1")).unwrap();
        assert_eq!(a, d.path().join("_x/r1"));
        assert_eq!(b, d.path().join("_x/r1.2"));
        assert!(a.join("f").exists());
    }

    #[test]
    fn atomic_writes_replace_whole_files() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("m.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert!(!d.path().join(".m.json.tmp").exists());
    }
}
