//! Executing a run: load, monitors, faults, guards and the raw data they record.

mod caps;
pub mod execute;
pub mod follow;
pub mod gate;
pub mod guards;
mod inject;
mod judge;
pub mod monitor;
mod output;
mod readiness;
pub mod settle;
mod supervise;
