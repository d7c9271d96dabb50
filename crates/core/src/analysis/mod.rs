//! Analysis: metrics computed from a run's raw data. Pure functions over samples.

pub mod objective;
pub mod saturation;
