//! Tier 1, and the untimed part of tier 2: every test that needs no Docker engine, in one
//! binary. The tests that are not ignored need nothing outside the build (no engine, k6,
//! PostgreSQL, Python packages, Chromium or Node) and run by a plain `cargo test`
//! (`scripts/test --fast`); the ignored ones need Python packages, Node, Chromium or the
//! engine's answer to a question (its host's cores), judge no timing, and run with tier 2
//! (`cargo test -- --ignored`). Tier 2's timed tests are `tests/testbed`'s.

#[path = "../common/mod.rs"]
mod common;
mod hostile;

mod architecture_paths;
mod audit_cli;
mod core_is_pure;
mod function_length;
mod honest_paths;
mod hostile_fuzz;
mod hostile_study;
mod inputs_cli;
mod ledger_cli;
mod load_draws;
mod pilot_cli;
mod plan_cli;
mod plan_fuzz;
mod plan_python;
mod ramp_replay;
mod report_browser;
mod report_cli;
mod report_comparisons;
mod report_findings;
mod report_twin;
mod report_verdicts;
mod run_directory_names;
mod run_hash_semantics;
mod study_runner;
