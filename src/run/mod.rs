//! Executing a run: load, monitors, faults, guards and the raw data they record.

pub mod events;
pub mod execute;
pub mod faults;
pub mod gate;
pub mod guards;
pub mod load;
pub mod lock;
pub mod monitor;
pub mod requests;
pub mod settle;
