//! Executing a run: load, monitors, faults, guards and the raw data they record.

pub mod events;
pub mod faults;
pub mod monitor;
pub mod load;
pub mod requests;
pub mod guards;
pub mod execute;
