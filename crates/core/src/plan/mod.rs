//! The plan: load a YAML study plan, validate it, hash it and expand it into runs.
//! This is the pure core: it does no Docker and no async work.

pub mod check;
pub mod de;
pub mod diagnostic;
pub mod expand;
pub mod footprint;
pub mod groups;
pub mod hash;
pub mod load;
pub mod model;
pub mod scale;
pub mod select;
pub mod units;
pub mod validate;
pub mod yaml;

pub use diagnostic::{Diagnostic, Severity};
pub use expand::{expand, expand_with, RunSpec};
pub use load::{load_bytes, load_file, load_str, LoadError, LoadedPlan};
pub use model::Plan;
