//! Locally built infrastructure images: a debootstrapped Debian base imported into the engine,
//! role images (postgres, haproxy, k6, stress, fault-proxy) built FROM it, rebuilt only when
//! their recipe hash changes. See docs/images.md.
//!
//! ```no_run
//! # async fn demo() -> Result<(), feedbench::images::ImageError> {
//! use feedbench::images::{build_all, builtin_recipes, BuildOptions};
//! let root = std::path::Path::new(".");
//! let built = build_all(&builtin_recipes(root), &BuildOptions::for_repo(root)).await?;
//! for b in built { println!("{} {} {:?}", b.image, b.id, b.action); }
//! # Ok(()) }
//! ```

mod build;
mod context;
mod engine;
mod error;
mod identity;
mod prepare;
mod progress;
mod recipe;

pub use build::{
    build_all, build_images, debootstrap_hash, dockerfile_hash, BuildAction, BuildOptions,
    BuiltImage, HASH_FORMAT,
};
pub use context::Ignore;
pub use engine::{connect, copy, inspect, Present, API_VERSION, LABEL_RECIPE_HASH, LABEL_VERSION};
pub use error::ImageError;
pub use progress::Progress;
pub use recipe::{
    builtin_recipes, from_images, normalize_ref, Debootstrap, ImageRecipe, Prepare, BASE_IMAGE,
    BASE_PACKAGES, K6_VERSION,
};

/// Find the feedbench checkout that holds `images/`: `start` or its nearest ancestor with
/// `images/postgres/Dockerfile` and a `Cargo.toml`, else the checkout this binary was built
/// from if it still exists.
pub fn find_repo_root(start: &std::path::Path) -> Option<std::path::PathBuf> {
    let is_root = |p: &std::path::Path| {
        p.join("images")
            .join("postgres")
            .join("Dockerfile")
            .is_file()
            && p.join("Cargo.toml").is_file()
    };
    if let Some(found) = start.ancestors().find(|p| is_root(p)) {
        return Some(found.to_path_buf());
    }
    let built_from = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    is_root(built_from).then(|| built_from.to_path_buf())
}
