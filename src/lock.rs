//! Advisory `flock`s, released when the process ends, also when it is killed. The study's
//! lock: one `feedbench run` per study at a time (runs of the same study share container and
//! network names, so a second process would tear down the first one's containers), a `flock`
//! on `results/<study>/.lock`. The same `flock` guards a database's seeded template
//! (`engine::seed`) and the twin's environment (`report::twin_env`) while they are made.

use std::fs::File;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("another feedbench process is running study `{study}` (it holds `{}`); wait for it, or stop it first", .path.display())]
    Held { study: String, path: PathBuf },
    #[error("cannot lock `{}`: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Held while the study runs; dropping it releases the lock.
#[derive(Debug)]
pub struct StudyLock {
    _file: File,
}

pub fn lock_study(study_dir: &Path, study: &str) -> Result<StudyLock, LockError> {
    let path = study_dir.join(crate::rundir::layout::LOCK);
    let io = |source| LockError::Io {
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(study_dir).map_err(io)?;
    match flock(&path, false) {
        Ok(file) => Ok(StudyLock { _file: file }),
        Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => Err(LockError::Held {
            study: study.to_string(),
            path,
        }),
        Err(e) => Err(io(e)),
    }
}

/// An exclusive advisory `flock` on `path` (created if need be), held by the returned file:
/// waited for when `wait`, else refused at once (`EWOULDBLOCK`) while another holds it.
/// A link, a named pipe or a directory at `path` is refused (kind `confine::NOT_A_FILE`),
/// never followed or blocked on.
pub fn flock(path: &Path, wait: bool) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let not_a_file = |what: &str| {
        std::io::Error::new(
            crate::confine::NOT_A_FILE,
            format!("it is {what}, not the lock file feedbench makes: remove it"),
        )
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => not_a_file("a symbolic link"),
            Some(libc::ENXIO) => not_a_file("a named pipe"),
            Some(libc::EISDIR) => not_a_file("a directory"),
            _ => e,
        })?;
    if !file.metadata()?.is_file() {
        return Err(not_a_file("a device or a socket"));
    }
    let mode = if wait {
        libc::LOCK_EX
    } else {
        libc::LOCK_EX | libc::LOCK_NB
    };
    // SAFETY: flock on a descriptor this function owns; no memory is shared.
    let rc = unsafe { libc::flock(file.as_raw_fd(), mode) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let first = lock_study(dir.path(), "s").unwrap();
        let second = lock_study(dir.path(), "s").unwrap_err();
        assert!(second
            .to_string()
            .contains("another feedbench process is running study `s`"));
        drop(first);
        // Waited for, not tried once: a process another test forks in this moment holds a
        // copy of the closed descriptor until its exec closes it (O_CLOEXEC), and the lock
        // with it. Once free, it is this holder's alone.
        let path = dir.path().join(crate::rundir::layout::LOCK);
        let again = flock(&path, true).unwrap();
        assert!(lock_study(dir.path(), "s").is_err());
        drop(again);
    }
}
