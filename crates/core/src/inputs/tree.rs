//! Where a run's inputs are read from: the files on disk ([`WorkingTree`]) or the files a
//! commit holds ([`GitTree`]), so that a run's hash can be taken now and again at any
//! commit the audit reads. Paths are the plan's: relative to the plan file's directory,
//! `/`-separated, possibly starting with `../`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::ignore::Ignore;
use super::InputError;
use crate::git::GitError;

/// A file or symbolic link of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    File { executable: bool, bytes: Vec<u8> },
    Symlink(String),
}

/// A tree of files, read by the plan's paths.
pub trait Tree {
    /// What the tree is, for messages: `the working tree`, `commit 1a2b3c4d5e6f`.
    fn label(&self) -> String;
    /// The file at `path`; None when the tree has no file there. A symbolic link is read
    /// as a link (as a build context holds it).
    fn read(&self, path: &str) -> Result<Option<Node>, InputError>;
    /// The file at `path`, a symbolic link followed where the tree can follow it (on disk):
    /// an init script or a lock file counts by its content.
    fn read_followed(&self, path: &str) -> Result<Option<Node>, InputError> {
        self.read(path)
    }
    /// Every file and symbolic link below the directory `dir` that `ignore` keeps, by its
    /// path relative to `dir`, sorted by that path; None when the tree has no such directory.
    fn walk(&self, dir: &str, ignore: &Ignore) -> Result<Option<Vec<(String, Node)>>, InputError>;
}

/// `base/path` with `.` and `..` resolved lexically (an absolute `path` stands alone); None
/// when it climbs above the root of `base` (for a relative `base`, above the directory
/// `base` is relative to).
pub fn join(base: &str, path: &str) -> Option<String> {
    let base = if path.starts_with('/') { "/" } else { base };
    let absolute = base.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in base.split('/').chain(path.split('/')) {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    let joined = parts.join("/");
    Some(if absolute {
        format!("/{joined}")
    } else {
        joined
    })
}

/// A plan path as a path in the repository at `top` whose plan file lies in `base` (relative
/// to `top`); None when it leads out of the repository.
pub fn in_repository(top: &Path, base: &str, path: &str) -> Option<String> {
    if path.starts_with('/') {
        let top = std::fs::canonicalize(top).unwrap_or_else(|_| top.to_path_buf());
        let abs = join("/", path)?;
        let rel = Path::new(&abs).strip_prefix(&top).ok()?;
        return Some(rel.to_string_lossy().into_owned());
    }
    join(base, path)
}

/// The files on disk, below the plan file's directory.
pub struct WorkingTree {
    base: PathBuf,
}

impl WorkingTree {
    /// `plan_dir`: the directory of the plan file.
    pub fn new(plan_dir: &Path) -> WorkingTree {
        let base = std::fs::canonicalize(plan_dir).unwrap_or_else(|_| plan_dir.to_path_buf());
        WorkingTree { base }
    }

    fn path(&self, path: &str) -> Option<PathBuf> {
        join(&self.base.to_string_lossy(), path).map(PathBuf::from)
    }
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> InputError + '_ {
    move |source| InputError::Read {
        path: path.to_path_buf(),
        source,
    }
}

fn read_node(host: &Path) -> Result<Option<Node>, InputError> {
    use std::os::unix::fs::PermissionsExt;
    let meta = match std::fs::symlink_metadata(host) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(host)(e)),
    };
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(host).map_err(io(host))?;
        return Ok(Some(Node::Symlink(target.to_string_lossy().into_owned())));
    }
    if !meta.is_file() {
        return Err(InputError::NotAFile {
            path: host.display().to_string(),
        });
    }
    let bytes = std::fs::read(host).map_err(io(host))?;
    Ok(Some(Node::File {
        executable: meta.permissions().mode() & 0o111 != 0,
        bytes,
    }))
}

impl Tree for WorkingTree {
    fn label(&self) -> String {
        "the working tree".into()
    }

    fn read(&self, path: &str) -> Result<Option<Node>, InputError> {
        match self.path(path) {
            Some(p) => read_node(&p),
            None => Ok(None),
        }
    }

    fn read_followed(&self, path: &str) -> Result<Option<Node>, InputError> {
        match self
            .path(path)
            .map(|p| std::fs::canonicalize(&p).map(|c| (p, c)))
        {
            Some(Ok((_, real))) => read_node(&real),
            Some(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Some(Err(e)) => Err(InputError::Read {
                path: PathBuf::from(path),
                source: e,
            }),
            None => Ok(None),
        }
    }

    fn walk(&self, dir: &str, ignore: &Ignore) -> Result<Option<Vec<(String, Node)>>, InputError> {
        let Some(root) = self.path(dir) else {
            return Ok(None);
        };
        if !root.is_dir() {
            return Ok(None);
        }
        let mut out = Vec::new();
        walk_dir(&root, "", ignore, &mut out)?;
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(Some(out))
    }
}

fn walk_dir(
    dir: &Path,
    prefix: &str,
    ignore: &Ignore,
    out: &mut Vec<(String, Node)>,
) -> Result<(), InputError> {
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            return Err(InputError::NotUtf8 {
                dir: dir.display().to_string(),
            });
        };
        let rel = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        let host = entry.path();
        let kind = entry.file_type().map_err(io(&host))?;
        let ignored = ignore.ignored(&rel);
        if kind.is_dir() {
            // An ignored directory is still walked when a `!` pattern may re-include within it.
            if !ignored || ignore.has_negations() {
                walk_dir(&host, &rel, ignore, out)?;
            }
        } else if !ignored && (kind.is_file() || kind.is_symlink()) {
            if let Some(node) = read_node(&host)? {
                out.push((rel, node));
            }
        }
        // Sockets, fifos and devices are no part of a build context, as for the images.
    }
    Ok(())
}

/// The files of one commit of the plan's repository.
pub struct GitTree {
    top: PathBuf,
    commit: String,
    /// The plan file's directory, relative to `top` (`` at the top).
    base: String,
}

impl GitTree {
    /// `plan_rel`: the plan file's path in the repository at `top`.
    pub fn new(top: &Path, commit: &str, plan_rel: &str) -> GitTree {
        let base = match plan_rel.rfind('/') {
            Some(i) => plan_rel[..i].to_string(),
            None => String::new(),
        };
        GitTree {
            top: top.to_path_buf(),
            commit: commit.to_string(),
            base,
        }
    }

    fn rel(&self, path: &str) -> Result<String, InputError> {
        in_repository(&self.top, &self.base, path).ok_or_else(|| InputError::OutsideRepository {
            path: path.to_string(),
        })
    }

    /// `(mode, object, path)` of every blob at or below `rel`.
    fn list(
        &self,
        rel: &str,
        recursive: bool,
    ) -> Result<Vec<(String, String, String)>, InputError> {
        let mut args = vec!["ls-tree", "-z", "--full-tree"];
        if recursive {
            args.push("-r");
        }
        args.extend([self.commit.as_str(), "--", rel]);
        let out = run(&self.top, &args, None)?;
        let mut rows = Vec::new();
        for row in out.split(|b| *b == 0).filter(|r| !r.is_empty()) {
            let row = String::from_utf8(row.to_vec()).map_err(|_| InputError::NotUtf8 {
                dir: format!("{rel} at commit {}", self.commit),
            })?;
            let (meta, path) = row.split_once('\t').unwrap_or((row.as_str(), ""));
            let mut f = meta.split(' ');
            let (mode, kind, object) = (f.next(), f.next(), f.next());
            match (mode, kind, object) {
                (Some(m), Some("blob"), Some(o)) => {
                    rows.push((m.to_string(), o.to_string(), path.to_string()))
                }
                (_, Some("commit"), _) => {
                    return Err(InputError::Submodule {
                        path: path.to_string(),
                    })
                }
                _ => {}
            }
        }
        Ok(rows)
    }

    /// The contents of `objects`, in order, in one `git cat-file --batch`.
    fn blobs(&self, objects: &[&str]) -> Result<Vec<Vec<u8>>, InputError> {
        let input = objects.join("\n") + "\n";
        let out = run(&self.top, &["cat-file", "--batch"], Some(input.as_bytes()))?;
        let mut blobs = Vec::with_capacity(objects.len());
        let mut rest = out.as_slice();
        for object in objects {
            let nl = rest.iter().position(|b| *b == b'\n');
            let header = nl.map(|i| String::from_utf8_lossy(&rest[..i]).into_owned());
            let size = header
                .as_deref()
                .and_then(|h| h.split(' ').nth(2))
                .and_then(|s| s.parse::<usize>().ok());
            let (Some(i), Some(size)) = (nl, size) else {
                return Err(InputError::Git(GitError::Failed {
                    args: "cat-file --batch".into(),
                    dir: self.top.clone(),
                    stderr: format!("no content for object {object}"),
                }));
            };
            let body = rest.get(i + 1..i + 1 + size).unwrap_or_default();
            blobs.push(body.to_vec());
            rest = rest.get(i + 2 + size..).unwrap_or_default();
        }
        Ok(blobs)
    }

    fn node(mode: &str, bytes: Vec<u8>) -> Node {
        if mode == "120000" {
            Node::Symlink(String::from_utf8_lossy(&bytes).into_owned())
        } else {
            Node::File {
                executable: mode == "100755",
                bytes,
            }
        }
    }
}

impl Tree for GitTree {
    fn label(&self) -> String {
        format!("commit {}", crate::files::short(&self.commit))
    }

    fn read(&self, path: &str) -> Result<Option<Node>, InputError> {
        let rel = self.rel(path)?;
        let rows = self.list(&rel, false)?;
        let Some((mode, object, _)) = rows.into_iter().find(|r| r.2 == rel) else {
            return Ok(None);
        };
        let bytes = self.blobs(&[object.as_str()])?.pop().unwrap_or_default();
        Ok(Some(GitTree::node(&mode, bytes)))
    }

    fn walk(&self, dir: &str, ignore: &Ignore) -> Result<Option<Vec<(String, Node)>>, InputError> {
        let rel = self.rel(dir)?;
        let prefix = if rel.is_empty() {
            String::new()
        } else {
            format!("{rel}/")
        };
        let rows: Vec<(String, String, String)> = self
            .list(&prefix, true)?
            .into_iter()
            .filter_map(|(m, o, p)| {
                let inner = p.strip_prefix(&prefix)?.to_string();
                (!ignore.ignored(&inner)).then_some((m, o, inner))
            })
            .collect();
        if rows.is_empty() {
            return Ok(None);
        }
        let objects: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
        let blobs = self.blobs(&objects)?;
        let mut out: Vec<(String, Node)> = rows
            .into_iter()
            .zip(blobs)
            .map(|((mode, _, p), bytes)| (p, GitTree::node(&mode, bytes)))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(Some(out))
    }
}

/// Runs git with argv only, optionally feeding `input`; its stdout as bytes.
fn run(top: &Path, args: &[&str], input: Option<&[u8]>) -> Result<Vec<u8>, InputError> {
    let mut child = Command::new("git")
        .arg("-C")
        .arg(top)
        .args(args)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| InputError::Git(GitError::Spawn(e)))?;
    if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
        // Written from a thread: git answers while it reads, and a full pipe would block both.
        let bytes = bytes.to_vec();
        std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        });
    }
    let out = child
        .wait_with_output()
        .map_err(|e| InputError::Git(GitError::Spawn(e)))?;
    if !out.status.success() {
        return Err(InputError::Git(GitError::Failed {
            args: args.join(" "),
            dir: top.to_path_buf(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        }));
    }
    Ok(out.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_join_lexically_and_never_climb_above_the_root() {
        assert_eq!(
            join("experiments", "../contenders/a.sql").as_deref(),
            Some("contenders/a.sql")
        );
        assert_eq!(join("", "./x/./y/../z").as_deref(), Some("x/z"));
        assert_eq!(join("experiments", "../../x"), None);
        assert_eq!(join("/w/e", "../c").as_deref(), Some("/w/c"));
        assert_eq!(join("/w", "../../c"), None);
        assert_eq!(
            join("experiments", "/abs/x/../y").as_deref(),
            Some("/abs/y")
        );
    }
}
