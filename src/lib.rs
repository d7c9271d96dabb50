//! feedbench: a declarative experiment orchestrator for service benchmarks.
//!
//! The pure core (`plan`) loads, validates, hashes and expands a pre-registered study plan;
//! it depends on neither tokio nor bollard.

pub mod analysis;
pub mod audit;
pub mod cli;
pub mod engine;
pub mod git;
pub mod images;
pub mod ledger;
pub mod plan;
pub mod run;
pub mod validity;
