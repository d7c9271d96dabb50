//! The Docker engine operations the image builder needs: connect, inspect, build, import.

use std::collections::{HashMap, VecDeque};

use bollard::image::{BuildImageOptions, CreateImageOptions, RemoveImageOptions};
use bollard::{ClientVersion, Docker};
use futures_util::StreamExt;

use super::error::ImageError;
use super::recipe::split_ref;

/// Label holding the feedbench version that built an image.
pub const LABEL_VERSION: &str = "feedbench.version";
/// Label holding the recipe hash an image was built from.
pub const LABEL_RECIPE_HASH: &str = "feedbench.recipe-hash";

/// Seconds a single engine request may take (an import of the base sends ~0.5 GB).
const TIMEOUT_SECS: u64 = 1800;

/// The engine API version asked for first; `negotiate_version` lowers it for older engines.
pub const API_VERSION: ClientVersion = ClientVersion {
    major_version: 1,
    minor_version: 41,
};

/// Connect to the local engine for building (`engine::runtime::local_client`, with a timeout
/// long enough for a build).
pub async fn connect() -> Result<Docker, ImageError> {
    crate::engine::runtime::local_client(TIMEOUT_SECS)
        .await
        .map_err(|source| ImageError::Connect { source })
}

/// An image present in the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Present {
    /// Image ID (`sha256:…`).
    pub id: String,
    /// Its `feedbench.recipe-hash` label, if any.
    pub recipe_hash: Option<String>,
}

/// Look an image up by reference; `None` when the engine does not have it.
pub async fn inspect(docker: &Docker, image: &str) -> Result<Option<Present>, ImageError> {
    match docker.inspect_image(image).await {
        Ok(found) => Ok(Some(Present {
            id: found.id.unwrap_or_default(),
            recipe_hash: found
                .config
                .and_then(|c| c.labels)
                .and_then(|l| l.get(LABEL_RECIPE_HASH).cloned()),
        })),
        Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 404, ..
        }) => Ok(None),
        Err(source) => Err(ImageError::Inspect {
            image: image.to_string(),
            source,
        }),
    }
}

/// Build `image` from a context tar with the classic builder (no pull, no network needed
/// when the FROM images are local), labelling it; prints each `Step` line on stderr.
pub async fn build(
    docker: &Docker,
    image: &str,
    dockerfile: &str,
    context_tar: Vec<u8>,
    labels: HashMap<String, String>,
    nocache: bool,
    progress: &super::Progress,
) -> Result<String, ImageError> {
    let options = BuildImageOptions::<String> {
        dockerfile: dockerfile.to_string(),
        t: image.to_string(),
        labels,
        rm: true,
        forcerm: true,
        pull: false,
        nocache,
        ..Default::default()
    };
    let mut tail: VecDeque<String> = VecDeque::new();
    let mut stream = docker.build_image(options, None, Some(context_tar.into()));
    while let Some(item) = stream.next().await {
        match item {
            Ok(info) => {
                if let Some(text) = info.stream {
                    for line in text.lines().filter(|l| !l.trim().is_empty()) {
                        if line.starts_with("Step ") {
                            progress.say(&format!("  [{image}] {line}"));
                        }
                        if tail.len() == 15 {
                            tail.pop_front();
                        }
                        tail.push_back(line.to_string());
                    }
                }
                if let Some(error) = info.error {
                    return Err(build_err(image, &error, &tail));
                }
            }
            Err(e) => return Err(build_err(image, &e.to_string(), &tail)),
        }
    }
    id_after(docker, image, |m| ImageError::Build {
        image: image.to_string(),
        message: m,
    })
    .await
}

fn build_err(image: &str, error: &str, tail: &VecDeque<String>) -> ImageError {
    let lines: Vec<&str> = tail.iter().map(String::as_str).collect();
    ImageError::Build {
        image: image.to_string(),
        message: format!("{error}\n{}", lines.join("\n")),
    }
}

async fn id_after(
    docker: &Docker,
    image: &str,
    err: impl Fn(String) -> ImageError,
) -> Result<String, ImageError> {
    match inspect(docker, image).await? {
        Some(p) => Ok(p.id),
        None => Err(err(
            "the engine reported success but has no such image".to_string()
        )),
    }
}

/// Import a root filesystem tar as `image` (`POST /images/create?fromSrc=-`), applying
/// Dockerfile `changes` (ENV, CMD, LABEL, …).
pub async fn import(
    docker: &Docker,
    image: &str,
    rootfs_tar: Vec<u8>,
    changes: &[String],
) -> Result<String, ImageError> {
    let (repo, tag) = split_ref(image);
    let options = CreateImageOptions::<String> {
        from_src: "-".to_string(),
        repo,
        tag,
        changes: changes.iter().map(String::as_str).collect(),
        ..Default::default()
    };
    let mut stream = docker.create_image(Some(options), Some(rootfs_tar.into()), None);
    while let Some(item) = stream.next().await {
        match item {
            Ok(info) => {
                if let Some(error) = info.error {
                    return Err(ImageError::Import {
                        image: image.to_string(),
                        message: error,
                    });
                }
            }
            Err(e) => {
                return Err(ImageError::Import {
                    image: image.to_string(),
                    message: e.to_string(),
                })
            }
        }
    }
    id_after(docker, image, |m| ImageError::Import {
        image: image.to_string(),
        message: m,
    })
    .await
}

/// Copies `image` from one engine to another through the engine API, since no registry can
/// be pulled from: saved on `from` (`GET /images/NAME/get`) and loaded on `to` (`POST
/// /images/load`) as one stream, which keeps its ID, tags, CMD, ENV and labels. Returns the
/// ID, checked equal on both engines.
pub async fn copy(from: &Docker, to: &Docker, image: &str) -> Result<String, ImageError> {
    let failed = |message: String| ImageError::Copy {
        image: image.to_string(),
        message,
    };
    let source = inspect(from, image)
        .await?
        .ok_or_else(|| failed("the engine it is copied from does not have it".into()))?;
    // The save is forwarded chunk by chunk; an error reading it ends the stream the load
    // reads (so the load fails on a cut archive) and is reported as the cause.
    let (tx, rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(8);
    let save = {
        let from = from.clone();
        let image = image.to_string();
        tokio::spawn(async move {
            let mut stream = from.export_image(&image);
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|e| e.to_string())?;
                if tx.send(chunk).await.is_err() {
                    return Err("the load stopped reading".to_string());
                }
            }
            Ok(())
        })
    };
    let options = bollard::image::ImportImageOptions { quiet: true };
    let chunks = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (chunk, rx))
    });
    let mut load = to.import_image_stream(options, chunks, None);
    let mut load_error = None;
    while let Some(item) = load.next().await {
        match item {
            Ok(info) => {
                if let Some(e) = info.error {
                    load_error.get_or_insert(e);
                }
            }
            Err(e) => {
                load_error.get_or_insert(e.to_string());
            }
        }
    }
    match save.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(failed(format!("saving it failed: {e}"))),
        Err(e) => return Err(failed(format!("saving it failed: {e}"))),
    }
    if let Some(e) = load_error {
        return Err(failed(format!("loading it failed: {e}")));
    }
    match inspect(to, image).await? {
        Some(copy) if copy.id == source.id => Ok(copy.id),
        Some(copy) => Err(failed(format!(
            "the copy's ID {} is not the original's {}",
            copy.id, source.id
        ))),
        None => Err(failed(
            "the load reported success but the engine has no such image".into(),
        )),
    }
}

/// Remove a superseded image by ID if nothing uses it any more (errors ignored: a conflict
/// means a container or child image still needs it).
pub async fn remove_if_unused(docker: &Docker, id: &str) -> bool {
    let options = RemoveImageOptions {
        force: false,
        noprune: false,
    };
    docker.remove_image(id, Some(options), None).await.is_ok()
}
