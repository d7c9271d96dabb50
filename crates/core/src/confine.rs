//! Reading a study directory without leaving it. A path a study file names (a journal
//! line's `dir`) is taken only when it is relative and plain (no `..`, no root) and crosses
//! no symbolic link; a file is opened only when it is a regular file reached without a link,
//! and without blocking, so a link or a named pipe planted in a study directory is never
//! followed, read or waited on.

use std::fs::File;
use std::io::{Error, ErrorKind, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

/// A path named by a study file that leads out of the study directory.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Outside {
    #[error(
        "`{rel}` is not a plain path inside the study directory (it is empty, absolute or \
         holds `..`), so it is not followed: feedbench names a run's directory relative to \
         the study directory, e.g. `runs/<run>`; the file that names it was edited: restore \
         it from a copy"
    )]
    NotPlain { rel: String },
    #[error(
        "`{}` is a symbolic link; feedbench does not follow links in a study directory: \
         replace it with the directory or file itself", .path.display()
    )]
    Link { path: PathBuf },
}

/// `root/rel` when `rel` stays inside `root`: relative, with only plain components, and no
/// component below `root` a symbolic link. A component that does not exist ends the check
/// (what is not there cannot lead out).
pub fn inside(root: &Path, rel: &str) -> Result<PathBuf, Outside> {
    let plain = !rel.is_empty()
        && !rel.contains('\0')
        && Path::new(rel)
            .components()
            .all(|c| matches!(c, Component::Normal(_)));
    if !plain {
        return Err(Outside::NotPlain { rel: rel.into() });
    }
    let mut path = root.to_path_buf();
    for c in Path::new(rel).components() {
        path.push(c);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => return Err(Outside::Link { path }),
            Ok(_) => {}
            Err(_) => break,
        }
    }
    Ok(path)
}

/// The kind an `open` error has when the path is there but is no regular file: bad input,
/// not a failure of the machine.
pub const NOT_A_FILE: ErrorKind = ErrorKind::InvalidInput;

/// Whether an error from `open` or `read` says the input is at fault (a link, a directory,
/// a pipe where a file should be), rather than the machine.
pub fn is_bad_input(e: &Error) -> bool {
    e.kind() == NOT_A_FILE
}

/// Opens `path` for reading when it is a regular file reached without following a link as
/// its last component; a link, a directory, a named pipe or a device is an error of kind
/// [`NOT_A_FILE`] saying so (a missing file stays `NotFound`). Never blocks on a pipe.
pub fn open(path: &Path) -> std::io::Result<File> {
    open_with(std::fs::OpenOptions::new().read(true), path)
}

/// Opens `path` with `options` as [`open`] does: a regular file, not through a link as its
/// last component, without blocking (for a writer that must not follow a planted link).
pub fn open_with(options: &mut std::fs::OpenOptions, path: &Path) -> std::io::Result<File> {
    let f = options
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => Error::new(
                NOT_A_FILE,
                "it is a symbolic link, which feedbench does not follow in a study directory: \
                 replace it with the file itself",
            ),
            Some(libc::EISDIR) => Error::new(
                NOT_A_FILE,
                "it is a directory, where a file should be: move it aside and restore the file",
            ),
            Some(libc::ENXIO) => Error::new(
                NOT_A_FILE,
                "it is not a regular file (a named pipe, a device or a socket): \
                 move it aside and restore the file",
            ),
            _ => e,
        })?;
    let kind = f.metadata()?.file_type();
    if kind.is_file() {
        return Ok(f);
    }
    Err(Error::new(
        NOT_A_FILE,
        if kind.is_dir() {
            "it is a directory, where a file should be: move it aside and restore the file"
        } else {
            "it is not a regular file (a named pipe, a device or a socket): \
             move it aside and restore the file"
        },
    ))
}

/// The whole of `path`, opened as [`open`] does.
pub fn read(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open(path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_relative_paths_are_inside() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("runs")).unwrap();
        assert_eq!(inside(d.path(), "runs/a").unwrap(), d.path().join("runs/a"));
        for bad in ["", "/etc", "../x", "runs/../../x", "./runs", "runs/\0"] {
            assert!(
                matches!(inside(d.path(), bad), Err(Outside::NotPlain { .. })),
                "{bad:?}"
            );
        }
        std::os::unix::fs::symlink("/tmp", d.path().join("runs/out")).unwrap();
        assert!(matches!(
            inside(d.path(), "runs/out/x"),
            Err(Outside::Link { .. })
        ));
    }

    #[test]
    fn links_directories_and_pipes_are_not_opened() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        std::fs::write(&f, b"x").unwrap();
        assert_eq!(read(&f).unwrap(), b"x");
        std::os::unix::fs::symlink(&f, d.path().join("l")).unwrap();
        let pipe = d.path().join("p");
        let c = std::ffi::CString::new(pipe.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for p in [d.path().join("l"), d.path().to_path_buf(), pipe] {
            let e = read(&p).unwrap_err();
            assert!(is_bad_input(&e), "{}: {e}", p.display());
        }
        assert_eq!(
            read(&d.path().join("none")).unwrap_err().kind(),
            ErrorKind::NotFound
        );
        // A writer neither: appending through a link, or to a pipe or a directory.
        for p in [
            d.path().join("l"),
            d.path().to_path_buf(),
            d.path().join("p"),
        ] {
            let e = open_with(std::fs::OpenOptions::new().append(true).read(true), &p).unwrap_err();
            assert!(is_bad_input(&e), "{}: {e}", p.display());
        }
    }
}
