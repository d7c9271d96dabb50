//! feedbench: a declarative experiment orchestrator for service benchmarks.
//!
//! The pure core lives in the `feedbench-core` crate (`crates/core`) and is re-exported
//! here under its usual paths; this crate holds the effects: the engine runtime, images,
//! the executor, the monitors and the command line.

pub mod cli;
pub mod engine;
pub mod images;
pub mod lock;
pub mod report;
pub mod run;
pub mod study;

pub use feedbench_core::{analysis, audit, confine, git, ledger, plan, rundir, spec, validity};
