//! The study ledger under `results/<study>/`: the journal, run manifests, the layout of run
//! directories, and the pure schedule that says what each planned run's state is.

pub mod chain;
pub mod hours;
pub mod journal;
pub mod manifest;
pub mod pilot;
pub mod state;
pub mod status;

pub use journal::{Decider, Event, Evidence};
