//! Check `caps-changed`: a container whose caps at teardown differ from those it was
//! deployed with ran part of the run under caps the plan did not give it (a `docker update`
//! while it ran): the run measured something else.

use crate::evidence::Evidence;
use crate::rundir::caps::ReadCaps;

/// One piece of evidence per container whose caps changed between deploy and teardown.
pub fn changed(read: &[ReadCaps]) -> Vec<Evidence> {
    read.iter()
        .filter_map(|r| {
            let after = r.teardown.as_ref().filter(|t| **t != r.deploy)?;
            Some(Evidence {
                check: "caps-changed".into(),
                role: r.role.clone(),
                container: Some(r.container.clone()),
                figure: format!(
                    "caps while the run ran: deployed with {}, at teardown {}; CPUs at teardown",
                    r.deploy, after
                ),
                value: after.cpus().unwrap_or(0.0),
                threshold: r.deploy.cpus().unwrap_or(0.0),
                unit: "CPUs".into(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rundir::caps::Caps;

    fn read(deploy: Caps, teardown: Option<Caps>) -> ReadCaps {
        ReadCaps {
            container: "fb-s-r-replica-1".into(),
            role: "replica-1".into(),
            planned: one_cpu(),
            deploy,
            teardown,
        }
    }

    fn one_cpu() -> Caps {
        Caps {
            nano_cpus: 1_000_000_000,
            memory_bytes: 128 << 20,
            memory_swap_bytes: 128 << 20,
            ..Caps::default()
        }
    }

    #[test]
    fn caps_that_changed_while_the_run_ran_are_evidence_naming_both() {
        let after = Caps {
            nano_cpus: 600_000_000,
            ..one_cpu()
        };
        let e = changed(&[read(one_cpu(), Some(after))]);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].check, "caps-changed");
        assert_eq!(e[0].container.as_deref(), Some("fb-s-r-replica-1"));
        assert_eq!((e[0].value, e[0].threshold), (0.6, 1.0));
        assert!(
            e[0].figure
                .contains("deployed with 1 CPUs, 128 MiB, at teardown 0.6 CPUs, 128 MiB"),
            "{}",
            e[0].figure
        );
    }

    #[test]
    fn a_quota_a_cpuset_or_memory_changed_counts_and_unchanged_or_unread_caps_do_not() {
        let quota = Caps {
            nano_cpus: 0,
            cpu_quota_us: 50_000,
            cpu_period_us: 100_000,
            ..one_cpu()
        };
        let pinned = Caps {
            cpuset_cpus: "0".into(),
            ..one_cpu()
        };
        let more_memory = Caps {
            memory_bytes: 256 << 20,
            ..one_cpu()
        };
        let e = changed(&[
            read(one_cpu(), Some(quota)),
            read(one_cpu(), Some(pinned)),
            read(one_cpu(), Some(more_memory)),
            read(one_cpu(), Some(one_cpu())),
            read(one_cpu(), None),
        ]);
        assert_eq!(e.len(), 3);
        assert!(e[0]
            .figure
            .contains("0.5 CPUs (quota 50000 µs per 100000 µs)"));
        assert!(e[1].figure.contains("cpuset 0"));
        assert!(e[2].figure.contains("256 MiB"));
    }
}
