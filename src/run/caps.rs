//! The caps each container ran under, read back from its engine once the run's containers
//! all run and again before the teardown (run.json's `caps`, `rundir::caps`), so that a cap
//! changed while the run ran is seen (`validity::caps_changed`).

use super::execute::Running;
use crate::rundir::caps::{Caps, ReadCaps};
use crate::rundir::record::RunRecord;

/// Every container's caps as its engine reports them, read back once all of them run (the
/// load generator last): one that cannot be read is a warning, its caps unknown, never
/// assumed.
pub(super) async fn at_start(r: &Running<'_>, record: &mut RunRecord) {
    for c in &r.topo.containers {
        match r.placement.of(c.role).caps(&c.name).await {
            Ok(deploy) => record.caps.push(ReadCaps {
                container: c.name.clone(),
                role: c.role.key(),
                planned: Caps {
                    nano_cpus: c.nano_cpus,
                    memory_bytes: c.memory_bytes,
                    // Deployed without swap: the swap limit is the memory limit.
                    memory_swap_bytes: c.memory_bytes,
                    ..Caps::default()
                },
                deploy,
                teardown: None,
            }),
            Err(e) => record.warnings.push(format!(
                "the caps of {} could not be read back: {e}",
                c.name
            )),
        }
    }
}

/// The caps read back again before the teardown, for `caps-changed`.
pub(super) async fn at_teardown(r: &Running<'_>, record: &mut RunRecord) {
    let RunRecord { caps, warnings, .. } = record;
    for read in caps.iter_mut() {
        let Some(c) = r.topo.containers.iter().find(|c| c.name == read.container) else {
            continue;
        };
        match r.placement.of(c.role).caps(&c.name).await {
            Ok(now) => read.teardown = Some(now),
            Err(e) => warnings.push(format!(
                "the caps of {} could not be read back before teardown: {e}",
                c.name
            )),
        }
    }
}
