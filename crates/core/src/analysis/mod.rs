//! Analysis: metrics computed from a run's raw data. Pure functions over samples.

pub mod judging;
pub mod live;
pub mod objective;
pub mod routes;
pub mod saturation;
