//! feedbench's core: everything about a study that is decided rather than done.
//!
//! The plan (load, validate, hash, expand), a run's specification (topology, HAProxy
//! config, k6 script and schedule, fault schedule), the run directory's formats, the
//! validity checks, the analysis, the ledger's state and the audit's checks. It reads and
//! writes files and asks git, but never talks to the engine and never runs async: its
//! dependencies hold no tokio, bollard or HTTP client (tests/offline/core_is_pure.rs in the
//! workspace root checks `cargo tree`). The binary crate (`feedbench`) does the effects.

pub mod analysis;
pub mod audit;
pub mod confine;
pub mod engines;
pub mod evidence;
pub mod files;
pub mod git;
pub mod inputs;
pub mod ledger;
pub mod plan;
pub mod report;
pub mod rundir;
pub mod spec;
pub mod validity;
