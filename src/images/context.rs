//! Build contexts: collect the files of a context directory and write them as a tar, in Rust.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::error::ImageError;

/// Modification time written into context tars (2024-01-01T00:00:00Z): stable bytes.
const CONTEXT_MTIME: u64 = 1_704_067_200;

pub use feedbench_core::inputs::ignore::{Ignore, ALWAYS_IGNORED};

/// One entry of a build context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextEntry {
    /// Path inside the context, `/`-separated, no leading `./`.
    pub rel: String,
    /// What it is.
    pub kind: EntryKind,
}

/// The kinds of context entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    /// A directory.
    Dir,
    /// A regular file on the host, its permission bits (0o755 or 0o644) and content hash.
    File {
        /// Where it is read from.
        host: PathBuf,
        /// 0o755 if the host file is executable, else 0o644.
        mode: u32,
        /// sha256 of the content, lower-case hex.
        sha256: String,
    },
    /// A symbolic link and its target.
    Symlink(String),
}

/// Collect the context directory's entries, sorted, honouring a `.dockerignore` in it.
pub fn collect(image: &str, dir: &Path) -> Result<Vec<ContextEntry>, ImageError> {
    let ignore = match fs::read_to_string(dir.join(".dockerignore")) {
        Ok(text) => Ignore::parse(&format!("{ALWAYS_IGNORED}\n{text}")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ignore::parse(ALWAYS_IGNORED),
        Err(source) => return Err(read_err(image, &dir.join(".dockerignore"), source)),
    };
    let mut out = Vec::new();
    walk(image, dir, "", &ignore, &mut out)?;
    Ok(out)
}

fn walk(
    image: &str,
    dir: &Path,
    prefix: &str,
    ignore: &Ignore,
    out: &mut Vec<ContextEntry>,
) -> Result<(), ImageError> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| read_err(image, dir, e))? {
        let entry = entry.map_err(|e| read_err(image, dir, e))?;
        names.push(entry.file_name());
    }
    names.sort();
    for name in names {
        let Some(name) = name.to_str().map(str::to_string) else {
            return Err(ImageError::Recipe {
                image: image.to_string(),
                reason: format!("non-UTF-8 file name in {}", dir.display()),
            });
        };
        let rel = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        let host = dir.join(&name);
        let meta = fs::symlink_metadata(&host).map_err(|e| read_err(image, &host, e))?;
        let ignored = ignore.ignored(&rel);
        if meta.is_dir() {
            // an ignored directory is still walked when a `!` pattern may re-include within it
            if !ignored {
                out.push(ContextEntry {
                    rel: rel.clone(),
                    kind: EntryKind::Dir,
                });
            }
            if !ignored || ignore.has_negations() {
                walk(image, &host, &rel, ignore, out)?;
            }
        } else if ignored {
            continue;
        } else if meta.file_type().is_symlink() {
            let target = fs::read_link(&host).map_err(|e| read_err(image, &host, e))?;
            out.push(ContextEntry {
                rel,
                kind: EntryKind::Symlink(target.to_string_lossy().into_owned()),
            });
        } else if meta.is_file() {
            use std::os::unix::fs::PermissionsExt;
            let mode = if meta.permissions().mode() & 0o111 != 0 {
                0o755
            } else {
                0o644
            };
            let sha256 = file_sha256(image, &host)?;
            out.push(ContextEntry {
                rel,
                kind: EntryKind::File { host, mode, sha256 },
            });
        }
        // sockets, fifos and devices are not part of a build context
    }
    Ok(())
}

/// sha256 of a file's content, lower-case hex.
pub fn file_sha256(image: &str, path: &Path) -> Result<String, ImageError> {
    let mut file = fs::File::open(path).map_err(|e| read_err(image, path, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf).map_err(|e| read_err(image, path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

/// Lower-case hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Write the context entries, plus extra host files (context name, host path; mode 0755),
/// as an uncompressed tar in memory, with root ownership and a fixed mtime.
pub fn context_tar(
    image: &str,
    entries: &[ContextEntry],
    extras: &[(String, PathBuf)],
) -> Result<Vec<u8>, ImageError> {
    let mut builder = tar::Builder::new(Vec::new());
    let werr = |e: std::io::Error| ImageError::WriteCache {
        image: image.to_string(),
        path: PathBuf::from("<context tar>"),
        source: e,
    };
    for entry in entries {
        let mut header = tar::Header::new_gnu();
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(CONTEXT_MTIME);
        match &entry.kind {
            EntryKind::Dir => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_mode(0o755);
                header.set_size(0);
                builder
                    .append_data(&mut header, format!("{}/", entry.rel), std::io::empty())
                    .map_err(werr)?;
            }
            EntryKind::Symlink(target) => {
                header.set_entry_type(tar::EntryType::Symlink);
                header.set_mode(0o777);
                header.set_size(0);
                builder
                    .append_link(&mut header, &entry.rel, target)
                    .map_err(werr)?;
            }
            EntryKind::File { host, mode, .. } => {
                append_file(image, &mut builder, &entry.rel, host, *mode)?;
            }
        }
    }
    for (name, host) in extras {
        append_file(image, &mut builder, name, host, 0o755)?;
    }
    builder.into_inner().map_err(werr)
}

fn append_file(
    image: &str,
    builder: &mut tar::Builder<Vec<u8>>,
    name: &str,
    host: &Path,
    mode: u32,
) -> Result<(), ImageError> {
    let data = fs::read(host).map_err(|e| read_err(image, host, e))?;
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(CONTEXT_MTIME);
    header.set_mode(mode);
    header.set_size(data.len() as u64);
    builder
        .append_data(&mut header, name, data.as_slice())
        .map_err(|e| ImageError::WriteCache {
            image: image.to_string(),
            path: PathBuf::from("<context tar>"),
            source: e,
        })
}

/// Write a root filesystem directory as a tar file for `docker import`, keeping ownership,
/// modes, mtimes and symlinks, leaving out `exclude`d paths (a trailing `/` keeps the
/// directory itself but not its contents).
pub fn rootfs_tar(
    image: &str,
    root: &Path,
    exclude: &[String],
    out: &Path,
) -> Result<u64, ImageError> {
    let file = fs::File::create(out).map_err(|e| write_err(image, out, e))?;
    let mut builder = tar::Builder::new(std::io::BufWriter::with_capacity(1 << 20, file));
    builder.follow_symlinks(false);
    builder.mode(tar::HeaderMode::Complete);
    let mut count = 0u64;
    rootfs_walk(image, root, "", exclude, &mut builder, &mut count)?;
    let mut inner = builder.into_inner().map_err(|e| write_err(image, out, e))?;
    inner.flush().map_err(|e| write_err(image, out, e))?;
    Ok(count)
}

fn rootfs_walk<W: Write>(
    image: &str,
    dir: &Path,
    prefix: &str,
    exclude: &[String],
    builder: &mut tar::Builder<W>,
    count: &mut u64,
) -> Result<(), ImageError> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| read_err(image, dir, e))? {
        names.push(entry.map_err(|e| read_err(image, dir, e))?.file_name());
    }
    names.sort();
    for name in names {
        let rel = format!("{prefix}{}", name.to_string_lossy());
        let host = dir.join(&name);
        let meta = fs::symlink_metadata(&host).map_err(|e| read_err(image, &host, e))?;
        let is_dir = meta.is_dir();
        if rootfs_excluded(&rel, exclude) {
            continue;
        }
        let ft = meta.file_type();
        {
            use std::os::unix::fs::FileTypeExt;
            if ft.is_socket() {
                continue;
            }
        }
        builder
            .append_path_with_name(&host, &rel)
            .map_err(|e| read_err(image, &host, e))?;
        *count += 1;
        if is_dir {
            rootfs_walk(image, &host, &format!("{rel}/"), exclude, builder, count)?;
        }
    }
    Ok(())
}

/// `dir/` leaves out what is inside `dir`; `path` leaves out `path` itself (and all below it).
fn rootfs_excluded(rel: &str, exclude: &[String]) -> bool {
    exclude.iter().any(|x| {
        if x.ends_with('/') {
            rel.starts_with(x.as_str())
        } else {
            rel == x
                || rel
                    .strip_prefix(x.as_str())
                    .is_some_and(|r| r.starts_with('/'))
        }
    })
}

fn read_err(image: &str, path: &Path, source: std::io::Error) -> ImageError {
    ImageError::ReadContext {
        image: image.to_string(),
        path: path.to_path_buf(),
        source,
    }
}

fn write_err(image: &str, path: &Path, source: std::io::Error) -> ImageError {
    ImageError::WriteCache {
        image: image.to_string(),
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rootfs_exclusions() {
        let ex = vec!["dev/".to_string(), "etc/x".to_string()];
        assert!(!rootfs_excluded("dev", &ex));
        assert!(rootfs_excluded("dev/null", &ex));
        assert!(rootfs_excluded("etc/x", &ex));
        assert!(rootfs_excluded("etc/x/y", &ex));
        assert!(!rootfs_excluded("etc/xy", &ex));
    }

    #[test]
    fn dockerignore_patterns() {
        let ig = Ignore::parse("# c\ntarget\n*.log\n**/tmp\n!keep.log\n/docs/\n");
        assert!(ig.ignored("target"));
        assert!(ig.ignored("target/release/x"));
        assert!(ig.ignored("a.log"));
        assert!(!ig.ignored("keep.log"));
        assert!(ig.ignored("src/deep/tmp/x"));
        assert!(ig.ignored("docs/a.md"));
        assert!(!ig.ignored("src/main.rs"));
        assert!(!ig.ignored("sub/a.log"));
    }

    #[test]
    fn context_tar_is_stable_and_hashes_content() {
        let dir = std::env::temp_dir().join(format!("fb-ctx-{}", std::process::id()));
        fs::create_dir_all(dir.join("sub")).unwrap();
        fs::write(dir.join("Dockerfile"), "FROM scratch\n").unwrap();
        fs::write(dir.join("sub/a"), "a").unwrap();
        fs::write(dir.join(".dockerignore"), "*.tmp\n").unwrap();
        fs::write(dir.join("x.tmp"), "x").unwrap();
        fs::create_dir_all(dir.join("sub/__pycache__")).unwrap();
        fs::write(dir.join("sub/__pycache__/m.cpython-311.pyc"), "x").unwrap();
        let entries = collect("t", &dir).unwrap();
        let rels: Vec<_> = entries.iter().map(|e| e.rel.as_str()).collect();
        assert_eq!(rels, vec![".dockerignore", "Dockerfile", "sub", "sub/a"]);
        let a = context_tar("t", &entries, &[]).unwrap();
        let b = context_tar("t", &entries, &[]).unwrap();
        assert_eq!(a, b);
        let mut archive = tar::Archive::new(a.as_slice());
        let names: Vec<String> = archive
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec![".dockerignore", "Dockerfile", "sub/", "sub/a"]);
        fs::remove_dir_all(&dir).unwrap();
    }
}
