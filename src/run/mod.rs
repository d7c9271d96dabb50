//! Executing a run: load, monitors, faults, guards and the raw data they record.

pub mod events;
pub mod faults;
pub mod guards;
