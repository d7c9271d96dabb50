//! Deploying a run on Docker: the topology as data (pure), and the runtime that realises it.

pub mod balancer;
pub mod deploy;
pub mod fault_proxy;
pub mod http;
pub mod placement;
pub mod runtime;
pub mod seed;
