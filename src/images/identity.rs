//! What a prepared file is made from, known before it is made: a wheel's binary by its pinned
//! version, a cargo binary by its package's sources (the build context, hashed with the
//! context), the workspace's lock file, the toolchain and the build profile. An image whose
//! recipe hash carries the same identity is current, and nothing is compiled or downloaded.
//!
//! Identity is by sources, never by built bytes: a cargo rebuild is not bit-identical, and
//! knowing an image current must not cost a build (docs/images.md, "Labels and the recipe hash").

use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use super::context::hex;
use super::error::ImageError;

/// The profile `prepare::cargo_binary` builds with.
pub(crate) const CARGO_PROFILE: &str = "release";

/// The tables of a workspace's root manifest that change how a member is built.
const ROOT_TABLES: &[&str] = &["profile", "patch", "replace"];
/// The tables of `[workspace]` a member may inherit from.
const WORKSPACE_TABLES: &[&str] = &["dependencies", "package", "lints"];
/// A member's tables whose `path` dependencies end up in the binary.
const DEPENDENCY_TABLES: &[&str] = &["dependencies", "build-dependencies"];

fn sha(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn read_err(image: &str, path: &Path, source: std::io::Error) -> ImageError {
    ImageError::ReadContext {
        image: image.to_string(),
        path: path.to_path_buf(),
        source,
    }
}

fn recipe_err(image: &str, reason: String) -> ImageError {
    ImageError::Recipe {
        image: image.to_string(),
        reason,
    }
}

/// A manifest, parsed.
fn manifest(image: &str, path: &Path) -> Result<toml::Table, ImageError> {
    let text = std::fs::read_to_string(path).map_err(|e| read_err(image, path, e))?;
    text.parse::<toml::Table>().map_err(|e| {
        recipe_err(
            image,
            format!("`{}` is not a valid Cargo manifest: {e}", path.display()),
        )
    })
}

/// The identity of a wheel's binary: its pinned release and the path inside it (PyPI never
/// changes a released file).
pub(crate) fn pypi(package: &str, version: &str, path_in_wheel: &str) -> String {
    format!("pypi:{package}=={version}:{path_in_wheel}")
}

/// The identity of `cargo build --release -p PACKAGE --bin BIN` in `workspace`, whose package
/// is the build context `context` (its files are hashed as the context's): the package and
/// binary, the workspace's `Cargo.lock`, the root manifest's profile, patch and inherited
/// tables, the workspace's `.cargo/config.toml`, the flags in the environment and the
/// toolchain (`rustc -vV`).
///
/// Refused: a context that is not the package's directory, and a path dependency outside the
/// context (its sources would change the binary without changing the identity).
pub(crate) fn cargo(
    image: &str,
    workspace: &Path,
    context: &Path,
    package: &str,
    bin: &str,
) -> Result<String, ImageError> {
    let member = manifest(image, &context.join("Cargo.toml"))?;
    let name = member
        .get("package")
        .and_then(|p| p.get("name"))
        .and_then(|n| n.as_str());
    if name != Some(package) {
        return Err(recipe_err(
            image,
            format!(
                "the build context `{}` is not the directory of the package `{package}` (its \
                 Cargo.toml names {}); set the context to the package's directory",
                context.display(),
                name.map_or("no package".to_string(), |n| format!("`{n}`"))
            ),
        ));
    }
    check_path_dependencies(image, context, &member)?;
    let root = manifest(image, &workspace.join("Cargo.toml"))?;
    let mut inherited = toml::Table::new();
    for t in ROOT_TABLES {
        if let Some(v) = root.get(*t) {
            inherited.insert((*t).to_string(), v.clone());
        }
    }
    if let Some(ws) = root.get("workspace") {
        for t in WORKSPACE_TABLES {
            if let Some(v) = ws.get(*t) {
                inherited.insert(format!("workspace.{t}"), v.clone());
            }
        }
    }
    let lock = optional_sha(image, &workspace.join("Cargo.lock"))?;
    let config = optional_sha(image, &workspace.join(".cargo/config.toml"))?;
    let flags: Vec<String> = std::env::vars()
        .filter(|(k, _)| {
            k == "RUSTFLAGS"
                || k == "CARGO_ENCODED_RUSTFLAGS"
                || k.starts_with("CARGO_PROFILE_RELEASE_")
        })
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let toolchain = toolchain(image, workspace)?;
    Ok(format!(
        "cargo:{package}:{bin} profile={CARGO_PROFILE} lock={lock} manifest={} config={config} env={} toolchain={}",
        sha(serde_json::to_string(&inherited).unwrap_or_default().as_bytes()),
        sha(flags.join("\n").as_bytes()),
        sha(toolchain.as_bytes()),
    ))
}

/// sha256 of a file's bytes, or `absent`.
fn optional_sha(image: &str, path: &Path) -> Result<String, ImageError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(sha(&bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok("absent".to_string()),
        Err(e) => Err(read_err(image, path, e)),
    }
}

/// Every `path` dependency the binary is built from must lie inside the context.
fn check_path_dependencies(
    image: &str,
    context: &Path,
    member: &toml::Table,
) -> Result<(), ImageError> {
    let mut tables: Vec<&toml::Value> = DEPENDENCY_TABLES
        .iter()
        .filter_map(|t| member.get(*t))
        .collect();
    if let Some(targets) = member.get("target").and_then(|t| t.as_table()) {
        for target in targets.values() {
            tables.extend(DEPENDENCY_TABLES.iter().filter_map(|t| target.get(*t)));
        }
    }
    for table in tables.iter().filter_map(|t| t.as_table()) {
        for (dep, spec) in table {
            let Some(path) = spec.get("path").and_then(|p| p.as_str()) else {
                continue;
            };
            if !inside(Path::new(path)) {
                return Err(recipe_err(
                    image,
                    format!(
                        "the package's dependency `{dep}` is at `{path}`, outside its build \
                         context `{}`: its sources would change the binary without changing \
                         the image's identity; move it inside the context",
                        context.display()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Whether a relative path stays below its base (no absolute path, no `..` above it).
fn inside(path: &Path) -> bool {
    let mut depth = 0i32;
    for c in path.components() {
        match c {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    true
}

/// `rustc -vV` as cargo would run it in `workspace` (`$RUSTC`, else `rustc`, where rustup
/// honours the directory's toolchain file).
fn toolchain(image: &str, workspace: &Path) -> Result<String, ImageError> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let shown = PathBuf::from(&rustc).display().to_string();
    let out = std::process::Command::new(&rustc)
        .arg("-vV")
        .current_dir(workspace)
        .output()
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                ImageError::ToolMissing {
                    image: image.to_string(),
                    tool: shown.clone(),
                    install: "install a Rust toolchain (rustup) so that `rustc` is on PATH"
                        .to_string(),
                }
            } else {
                ImageError::Prepare {
                    image: image.to_string(),
                    command: format!("{shown} -vV"),
                    status: format!("could not start: {e}"),
                    tail: String::new(),
                }
            }
        })?;
    if !out.status.success() {
        return Err(ImageError::Prepare {
            image: image.to_string(),
            command: format!("{shown} -vV"),
            status: out.status.to_string(),
            tail: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// A workspace with one member, `pkg/`, whose identity is taken.
    fn workspace(member_extra: &str, root_extra: &str) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        write(
            d.path(),
            "Cargo.toml",
            &format!("[workspace]\nmembers = [\"pkg\"]\n{root_extra}"),
        );
        write(d.path(), "Cargo.lock", "version = 4\n");
        write(
            d.path(),
            "pkg/Cargo.toml",
            &format!("[package]\nname = \"pkg\"\nversion = \"0.1.0\"\n{member_extra}"),
        );
        d
    }

    fn identity(d: &Path) -> Result<String, ImageError> {
        cargo("img", d, &d.join("pkg"), "pkg", "pkg")
    }

    #[test]
    fn the_lock_and_the_profile_change_it_and_nothing_else_of_the_root_does() {
        let d = workspace("", "");
        let a = identity(d.path()).unwrap();
        assert!(a.starts_with("cargo:pkg:pkg profile=release lock="), "{a}");
        assert_eq!(a, identity(d.path()).unwrap());
        // a change of the root manifest that a member cannot see keeps it
        write(
            d.path(),
            "Cargo.toml",
            "[workspace]\nmembers = [\"pkg\", \"other\"]\n",
        );
        assert_eq!(a, identity(d.path()).unwrap());
        write(d.path(), "Cargo.lock", "version = 4\n# moved\n");
        let b = identity(d.path()).unwrap();
        assert_ne!(a, b);
        write(
            d.path(),
            "Cargo.toml",
            "[workspace]\nmembers = [\"pkg\"]\n[profile.release]\nlto = true\n",
        );
        assert_ne!(b, identity(d.path()).unwrap());
    }

    #[test]
    fn a_context_that_is_not_the_package_is_refused_naming_it() {
        let d = workspace("", "");
        let e = cargo("img", d.path(), &d.path().join("pkg"), "other", "x").unwrap_err();
        assert!(e.to_string().contains("names `pkg`"), "{e}");
    }

    #[test]
    fn a_path_dependency_outside_the_context_is_refused() {
        let d = workspace("[dependencies]\nlib = { path = \"../lib\" }\n", "");
        let e = identity(d.path()).unwrap_err();
        assert!(e.to_string().contains("`lib` is at `../lib`"), "{e}");
        let d = workspace("[dependencies]\nlib = { path = \"vendor/../lib\" }\n", "");
        assert!(identity(d.path()).is_ok());
        let d = workspace(
            "[target.'cfg(unix)'.build-dependencies]\nb = { path = \"/abs\" }\n",
            "",
        );
        assert!(identity(d.path()).is_err());
    }
}
