//! A run's specification, pure: what is deployed (`topology`, with the rendered HAProxy
//! config), what load is offered (`load`: the k6 script and its arrival schedule) and which
//! faults are applied when (`faults`). The engine side realises it; nothing here acts.

pub mod faults;
pub mod load;
pub mod topology;
