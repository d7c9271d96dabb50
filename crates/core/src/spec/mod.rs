//! A run's specification, pure: what is deployed (`topology`, with the rendered HAProxy
//! config), what load is offered (`load`: the k6 script and its arrival schedule) and which
//! faults are applied when (`faults`), with the commands of the containers feedbench puts in
//! a run (`commands`). `topology` uses `commands`; `load` and `faults` use `topology`'s
//! types; nothing points back. The engine side realises it; nothing here acts.

pub mod commands;
pub mod faults;
pub mod instance;
pub mod load;
pub mod placement;
pub mod seed;
pub mod topology;

/// The HAProxy configuration template every run's balancer is rendered from.
pub const BALANCER_TEMPLATE: &str = include_str!("templates/haproxy.cfg.j2");
/// The k6 script template every run's load is rendered from.
pub const LOAD_TEMPLATE: &str = include_str!("templates/load.js.j2");
/// feedbench's own templates for a run, by file name: recorded among a run's inputs.
pub const TEMPLATES: [(&str, &str); 2] = [
    ("haproxy.cfg.j2", BALANCER_TEMPLATE),
    ("load.js.j2", LOAD_TEMPLATE),
];
