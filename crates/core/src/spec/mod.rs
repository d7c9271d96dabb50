//! A run's specification, pure: what is deployed (`topology`, with the rendered HAProxy
//! config), what load is offered (`load`: the k6 script and its arrival schedule) and which
//! faults are applied when (`faults`), with the commands of the containers feedbench puts in
//! a run (`commands`). `topology` uses `commands`; `load` and `faults` use `topology`'s
//! types; nothing points back. The engine side realises it; nothing here acts.

pub mod commands;
pub mod faults;
pub mod load;
pub mod seed;
pub mod topology;
