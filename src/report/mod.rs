//! `feedbench report`'s rendering: the figures of `feedbench_core::report` drawn and written
//! out for a person.

pub mod plots;
