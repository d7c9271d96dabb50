//! A run's database started from its seeded snapshot (`spec::seed`): the template volume
//! seeded once per seeding digest by the image's own init (scripts and all), then, for each
//! run, a fresh volume copied from it and mounted at the database's data directory, so that
//! every run begins from byte-identical data without running the scripts again.
//!
//! A template is complete when its marker volume exists (created only after the seeding
//! container shut PostgreSQL down cleanly); one without it, cut short by a crash, is
//! removed and seeded again. The copy refuses a template without `PG_VERSION`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use feedbench_core::spec::seed::{self, Snapshot, LABEL_SEED};

use super::runtime::{Runtime, RuntimeError};
use crate::spec::topology::{ContainerSpec, Mount, Readiness, RunTopology};

#[derive(Debug, thiserror::Error)]
pub enum SeedError {
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    #[error("image `{0}` is not in the engine; build it with `feedbench images build`")]
    NoImage(String),
    #[error("cannot lock `{path}` to seed the database's snapshot: {reason}")]
    Lock { path: String, reason: String },
    #[error("seeding the database's snapshot `{template}` failed: {reason}")]
    Seeding { template: String, reason: String },
    #[error("copying the snapshot `{template}` for `{container}` failed (exit {code}): {output}")]
    Copy {
        template: String,
        container: String,
        code: i64,
        output: String,
    },
}

/// An exclusive `flock` (the study lock's, `lock`) on the digest's lock file in the
/// temporary directory, waited for; released when dropped, or when the process ends.
async fn lock_seeding(digest: &str, engine: &str) -> Result<std::fs::File, SeedError> {
    // Per engine too: two engines of one host (two groups running at once) seed their own
    // templates side by side, neither waiting on the other's deadline.
    let engine: String = engine
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .take(12)
        .collect();
    let path =
        std::env::temp_dir().join(format!("{}-{engine}.lock", seed::template_volume(digest)));
    let shown = path.display().to_string();
    tokio::task::spawn_blocking(move || crate::lock::flock(&path, true))
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r.map_err(|e| e.to_string()))
        .map_err(|reason| SeedError::Lock {
            path: shown,
            reason,
        })
}

/// The marker volume of a complete template.
pub fn marker(template: &str) -> String {
    format!("{template}{}", seed::MARKER.replace('.', "-"))
}

/// Prepares the seedable database of `topology` (on its network, which exists): seeds its
/// template when there is none, and copies it into the run's fresh volume. `None` when the
/// topology has no database seeded by scripts, or its image names no data directory.
pub async fn prepare(
    rt: &Runtime,
    topology: &RunTopology,
    until: Instant,
) -> Result<Option<(Snapshot, String)>, SeedError> {
    let Some(db) = topology.containers.iter().find(|c| seed::seedable(c)) else {
        return Ok(None);
    };
    let (image_id, image_env) = rt
        .image_id_and_env(&db.image)
        .await?
        .ok_or_else(|| SeedError::NoImage(db.image.clone()))?;
    let Some(data_dir) = seed::data_dir(db, &image_env).map(String::from) else {
        return Ok(None);
    };
    let digest = seed::digest(db, &image_id, &data_dir);
    let template = seed::template_volume(&digest);
    let started = Instant::now();
    // One seeding of a digest at a time on this engine, across processes: a second waits,
    // then finds the template complete.
    let (engine_id, _) = rt.identity().await?;
    let lock = lock_seeding(&digest, &engine_id).await?;
    let complete = rt.volume_labels(&template).await?.is_some()
        && rt.volume_labels(&marker(&template)).await?.is_some();
    if !complete {
        seed_template(rt, topology, db, &digest, &template, &data_dir, until).await?;
    }
    drop(lock);
    let seed_s = started.elapsed().as_secs_f64();
    let copied = Instant::now();
    copy(rt, topology, db, &template, &data_dir).await?;
    Ok(Some((
        Snapshot {
            digest,
            template,
            seeded_now: !complete,
            seed_s,
            copy_s: copied.elapsed().as_secs_f64(),
        },
        data_dir,
    )))
}

async fn seed_template(
    rt: &Runtime,
    topology: &RunTopology,
    db: &ContainerSpec,
    digest: &str,
    template: &str,
    data_dir: &str,
    until: Instant,
) -> Result<(), SeedError> {
    let fail = |reason: String| SeedError::Seeding {
        template: template.to_string(),
        reason,
    };
    // An unfinished template (no marker) is started again from nothing.
    rt.remove_volume(template).await?;
    let labels: HashMap<String, String> = [(LABEL_SEED.to_string(), digest.to_string())].into();
    rt.create_volume(template, &labels).await?;
    let mut spec = db.clone();
    spec.name = seed::seeding_container(digest);
    // The study's labels, so that a crash's leftover is reaped with the study's.
    spec.labels
        .insert(LABEL_SEED.to_string(), digest.to_string());
    // Seeding is not measured: no cap slows it.
    spec.nano_cpus = 0;
    spec.memory_bytes = 0;
    spec.mounts = vec![Mount {
        volume: template.to_string(),
        target: data_dir.to_string(),
        read_only: false,
    }];
    rt.create(&spec, &topology.network).await?;
    let result = async {
        rt.start(&spec.name).await?;
        let Readiness::Command(argv) = &db.readiness else {
            return Err(fail("the database has no readiness command".into()));
        };
        loop {
            match rt.exec(&spec.name, argv).await {
                Ok((0, _)) => break,
                _ if Instant::now() >= until => {
                    let logs = rt.logs(&spec.name).await.unwrap_or_default();
                    let tail: Vec<&str> = logs.lines().rev().take(20).collect();
                    return Err(fail(format!(
                        "not ready in time; its log ends: {}",
                        tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
                    )));
                }
                _ => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
        // PostgreSQL's fast shutdown: a clean checkpoint, so that the copy starts without
        // recovery.
        rt.kill(&spec.name, "SIGINT").await?;
        match rt.wait_exit(&spec.name, Duration::from_secs(60)).await? {
            Some(0) => Ok(()),
            other => Err(fail(format!("it did not shut down cleanly: {other:?}"))),
        }
    }
    .await;
    rt.remove_container(&spec.name).await?;
    result?;
    rt.create_volume(&marker(template), &labels).await?;
    Ok(())
}

/// A fresh volume for the run's database, copied from the template.
async fn copy(
    rt: &Runtime,
    topology: &RunTopology,
    db: &ContainerSpec,
    template: &str,
    data_dir: &str,
) -> Result<(), SeedError> {
    let volume = seed::run_volume(&db.name);
    rt.remove_volume(&volume).await?;
    rt.create_volume(&volume, &topology.labels.clone().into_iter().collect())
        .await?;
    let argv: Vec<String> = [
        "sh",
        "-c",
        r#"test -f /seed/PG_VERSION || { echo "the template holds no database"; exit 3; }; cp -a /seed/. "$1"/"#,
        "sh",
        data_dir,
    ]
    .map(String::from)
    .to_vec();
    let mounts = vec![
        Mount {
            volume: template.to_string(),
            target: "/seed".into(),
            read_only: true,
        },
        Mount {
            volume: volume.clone(),
            target: data_dir.to_string(),
            read_only: false,
        },
    ];
    let (code, output) = rt
        .run_once(
            &seed::copy_container(&db.name),
            &db.image,
            &argv,
            mounts,
            &topology.labels,
            Duration::from_secs(300),
        )
        .await?;
    if code != 0 {
        return Err(SeedError::Copy {
            template: template.to_string(),
            container: db.name.clone(),
            code,
            output: output.trim().to_string(),
        });
    }
    Ok(())
}
