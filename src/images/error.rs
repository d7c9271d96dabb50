//! Errors of the image builder: one variant per operation, each naming the image concerned.

use std::path::PathBuf;

/// Everything that can go wrong while preparing, hashing, building or importing an image.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// An image could not be copied from one engine to another.
    #[error("image {image}: cannot copy it to the other engine: {message}")]
    Copy {
        /// The image copied.
        image: String,
        /// What failed.
        message: String,
    },
    /// The Docker engine could not be reached or refused the API version.
    #[error("cannot connect to the Docker engine: {source}")]
    Connect {
        /// The client error.
        #[source]
        source: bollard::errors::Error,
    },
    /// A recipe is malformed (bad image reference, missing Dockerfile, …).
    #[error("image {image}: invalid recipe: {reason}")]
    Recipe {
        /// The image whose recipe is invalid.
        image: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The recipes' FROM lines form a cycle.
    #[error("images {images:?} depend on each other through their FROM lines (a cycle)")]
    DependencyCycle {
        /// The images on the cycle.
        images: Vec<String>,
    },
    /// Reading the build context (or a prepared artifact) from disk failed.
    #[error("image {image}: cannot read {}: {source}", path.display())]
    ReadContext {
        /// The image whose context is read.
        image: String,
        /// The file or directory that failed.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Writing a scratch file (cache, rootfs tar) failed.
    #[error("image {image}: cannot write {}: {source}", path.display())]
    WriteCache {
        /// The image being prepared.
        image: String,
        /// The path that failed.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A host tool a preparation step needs is not installed.
    #[error("image {image}: `{tool}` is not installed; install it with: {install}")]
    ToolMissing {
        /// The image being prepared.
        image: String,
        /// The missing program.
        tool: String,
        /// How to install it, e.g. `apt-get install debootstrap`.
        install: String,
    },
    /// A host-side preparation command failed (pip download, cargo build, debootstrap, …).
    #[error("image {image}: `{command}` failed ({status}); last lines of its output:\n{tail}")]
    Prepare {
        /// The image being prepared.
        image: String,
        /// The command line (argv joined by spaces, for display only).
        command: String,
        /// Exit status or spawn error.
        status: String,
        /// The last lines of its stderr (and stdout).
        tail: String,
    },
    /// A preparation step ran but did not produce what was expected.
    #[error("image {image}: preparation produced no usable artifact: {reason}")]
    Artifact {
        /// The image being prepared.
        image: String,
        /// What is missing.
        reason: String,
    },
    /// Inspecting the image in the engine failed (other than "not found").
    #[error("image {image}: cannot inspect it in the Docker engine: {source}")]
    Inspect {
        /// The image inspected.
        image: String,
        /// The client error.
        #[source]
        source: bollard::errors::Error,
    },
    /// The engine's build of the image failed.
    #[error("image {image}: docker build failed: {message}")]
    Build {
        /// The image built.
        image: String,
        /// The engine's error and the last lines of the build output.
        message: String,
    },
    /// Importing a root filesystem as the image failed.
    #[error("image {image}: importing the root filesystem failed: {message}")]
    Import {
        /// The image imported.
        image: String,
        /// The engine's error.
        message: String,
    },
}
