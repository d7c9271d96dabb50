//! The report directory, written whole or not at all: every file goes into a fresh sibling
//! directory first, which then takes the report's place in one rename; the previous
//! report, if any, is removed only after that.

use std::path::{Path, PathBuf};

use feedbench_core::files::FileError;

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(
        "cannot write the report to `{dir}`: {message} (choose a writable place with --out DIR)"
    )]
    Unwritable { dir: PathBuf, message: String },
    #[error(transparent)]
    File(#[from] FileError),
}

/// Writes `files` (name, contents) as the directory `out`.
pub fn directory(out: &Path, files: &[(&str, Vec<u8>)]) -> Result<(), WriteError> {
    let parent = out.parent().unwrap_or(Path::new("."));
    let unwritable = |e: std::io::Error| WriteError::Unwritable {
        dir: out.to_path_buf(),
        message: e.to_string(),
    };
    std::fs::create_dir_all(parent).map_err(unwritable)?;
    let name = out.file_name().and_then(|n| n.to_str()).unwrap_or("report");
    let staging = parent.join(format!(".{name}.new-{}", std::process::id()));
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(unwritable)?;
    }
    std::fs::create_dir(&staging).map_err(unwritable)?;
    let written = (|| -> Result<(), WriteError> {
        for (file, bytes) in files {
            feedbench_core::files::write_atomic(&staging.join(file), bytes)?;
        }
        Ok(())
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }
    let old = parent.join(format!(".{name}.old-{}", std::process::id()));
    let had_old = out.exists();
    if had_old {
        std::fs::rename(out, &old).map_err(unwritable)?;
    }
    if let Err(e) = std::fs::rename(&staging, out) {
        // Put the previous report back: nothing is lost.
        if had_old {
            let _ = std::fs::rename(&old, out);
        }
        let _ = std::fs::remove_dir_all(&staging);
        return Err(unwritable(e));
    }
    if had_old {
        let _ = std::fs::remove_dir_all(&old);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_replaces_the_previous_one_whole() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("study/report");
        directory(&out, &[("a.txt", b"1".to_vec()), ("b.txt", b"2".to_vec())]).unwrap();
        directory(&out, &[("a.txt", b"3".to_vec())]).unwrap();
        assert_eq!(std::fs::read(out.join("a.txt")).unwrap(), b"3");
        assert!(!out.join("b.txt").exists());
        let left: Vec<_> = std::fs::read_dir(dir.path().join("study"))
            .unwrap()
            .collect();
        assert_eq!(left.len(), 1, "only the report is left");
    }

    #[test]
    fn an_unwritable_place_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("plain-file");
        std::fs::write(&file, "x").unwrap();
        let e = directory(&file.join("report"), &[("a", vec![])])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("plain-file/report") && e.contains("--out"),
            "{e}"
        );
    }
}
