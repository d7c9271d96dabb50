//! A database seeded once per distinct seeding input, and every run started from a copy:
//! the input's digest (the image's ID, the service's environment and command, and the init
//! scripts' paths and contents), the names of the template volume that keeps the seeded
//! data and of each run's copy, and which containers can be seeded this way.
//!
//! Every run still begins from byte-identical data: the template is written once, by the
//! image's own init, and never mounted writable again; each run's database gets a fresh
//! volume copied from it before the run.

use serde::{Deserialize, Serialize};

use super::topology::{ContainerSpec, Mount, Role};

/// The label on a template volume: its full seeding digest.
pub const LABEL_SEED: &str = "feedbench.seed";
/// The file written into a template once its seeding finished cleanly; a template without
/// it was cut short and is seeded again.
pub const MARKER: &str = ".feedbench-seeded";
/// The environment variable that names the data directory (the `postgres` image's
/// convention): a database image without it is seeded from its scripts on every run.
pub const DATA_DIR_VAR: &str = "PGDATA";

/// The snapshot a run's database started from, for its record (run.json's `seed`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// The seeding digest.
    pub digest: String,
    /// The template volume.
    pub template: String,
    /// Seeded for this run (the first with this digest), rather than found.
    pub seeded_now: bool,
    /// Seconds spent seeding (0 when found) and copying the template.
    pub seed_s: f64,
    pub copy_s: f64,
}

/// What the digest is taken of; its canonical JSON is hashed.
#[derive(Serialize)]
struct SeedingInput<'a> {
    format_version: u32,
    image_id: &'a str,
    env: Vec<(&'a str, &'a str)>,
    cmd: Option<&'a [String]>,
    /// Init scripts, in order: `(path in the container, sha256 of the contents)`.
    files: Vec<(&'a str, &'a str)>,
    data_dir: &'a str,
}

/// The seeding digest of a database container, from its image's ID and its data directory.
pub fn digest(c: &ContainerSpec, image_id: &str, data_dir: &str) -> String {
    let mut env: Vec<(&str, &str)> = c
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    env.sort();
    let input = SeedingInput {
        format_version: 1,
        image_id,
        env,
        cmd: c.cmd.as_deref(),
        files: c
            .files
            .iter()
            .map(|f| (f.path.as_str(), f.sha256.as_str()))
            .collect(),
        data_dir,
    };
    let json = serde_json::to_vec(&input).unwrap_or_default();
    crate::plan::hash::sha256_hex(&json)
}

/// Whether a container is a database seeded by init scripts, which a snapshot can replace.
pub fn seedable(c: &ContainerSpec) -> bool {
    c.role == Role::Database && !c.files.is_empty()
}

/// The data directory: the container's own `PGDATA`, else the image's.
pub fn data_dir<'a>(c: &'a ContainerSpec, image_env: &'a [String]) -> Option<&'a str> {
    let own = c
        .env
        .iter()
        .find(|(k, _)| k == DATA_DIR_VAR)
        .map(|(_, v)| v.as_str());
    own.or_else(|| {
        image_env
            .iter()
            .find_map(|kv| kv.strip_prefix(DATA_DIR_VAR)?.strip_prefix('='))
    })
    .filter(|d| d.starts_with('/'))
}

/// The template volume of a digest.
pub fn template_volume(digest: &str) -> String {
    format!("feedbench-seed-{}", &digest[..digest.len().min(16)])
}

/// The container that seeds a template.
pub fn seeding_container(digest: &str) -> String {
    format!("{}-init", template_volume(digest))
}

/// A run's copy of the template, for its database container.
pub fn run_volume(container: &str) -> String {
    format!("{container}-data")
}

/// The one-off container that copies the template into a run's volume.
pub fn copy_container(container: &str) -> String {
    format!("{container}-seed-copy")
}

/// The database container started from its run's copy, at its data directory.
pub fn mount_copy(c: &mut ContainerSpec, data_dir: &str) {
    c.mounts.push(Mount {
        volume: run_volume(&c.name),
        target: data_dir.to_string(),
        read_only: false,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::topology::{FileSpec, Readiness};
    use std::collections::BTreeMap;

    fn db() -> ContainerSpec {
        ContainerSpec {
            name: "fb-s-r-database".into(),
            role: Role::Database,
            image: "pg".into(),
            env: vec![
                ("POSTGRES_DB".into(), "feed".into()),
                ("A".into(), "1".into()),
            ],
            cmd: None,
            nano_cpus: 1,
            memory_bytes: 1,
            labels: BTreeMap::new(),
            files: vec![FileSpec {
                path: "/docker-entrypoint-initdb.d/01-schema.sql".into(),
                contents: b"create table t();".to_vec(),
                sha256: "abc".into(),
            }],
            mounts: Vec::new(),
            stage: 0,
            readiness: Readiness::NotStarted,
            attach: Default::default(),
        }
    }

    #[test]
    fn the_digest_changes_with_every_seeding_input_and_nothing_else() {
        let base = digest(&db(), "sha256:1", "/data");
        let mut caps = db();
        caps.nano_cpus = 2;
        caps.name = "fb-s-other-run-database".into();
        assert_eq!(
            digest(&caps, "sha256:1", "/data"),
            base,
            "caps and names do not seed"
        );
        let mut reordered = db();
        reordered.env.reverse();
        assert_eq!(digest(&reordered, "sha256:1", "/data"), base);
        assert_ne!(digest(&db(), "sha256:2", "/data"), base, "the image");
        let mut env = db();
        env.env
            .push(("PGOPTIONS".into(), "-c feed.posts=10".into()));
        assert_ne!(digest(&env, "sha256:1", "/data"), base, "the environment");
        let mut script = db();
        script.files[0].sha256 = "abd".into();
        assert_ne!(
            digest(&script, "sha256:1", "/data"),
            base,
            "a script's contents"
        );
        assert_ne!(
            digest(&db(), "sha256:1", "/other"),
            base,
            "the data directory"
        );
        assert_eq!(base.len(), 64);
    }

    #[test]
    fn the_data_directory_is_the_containers_then_the_images_and_absolute() {
        let image = vec![
            "PATH=/bin".to_string(),
            "PGDATA=/var/lib/postgresql/data".to_string(),
        ];
        assert_eq!(data_dir(&db(), &image), Some("/var/lib/postgresql/data"));
        let mut own = db();
        own.env.push(("PGDATA".into(), "/pg".into()));
        assert_eq!(data_dir(&own, &image), Some("/pg"));
        assert_eq!(data_dir(&db(), &["PGDATAX=/x".to_string()]), None);
        assert_eq!(data_dir(&db(), &["PGDATA=relative".to_string()]), None);
        assert!(seedable(&db()));
        let mut none = db();
        none.files.clear();
        assert!(!seedable(&none));
    }
}
