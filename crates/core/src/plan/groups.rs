//! A study's wall time on several groups of engines, as `feedbench run` schedules its runs:
//! whenever a group is idle it takes the first run, in plan order, whose dependencies have
//! ended; one run per group at a time. Each run lasts its estimate plus the plan's
//! deploy-and-teardown allowance. On one group this is the runs' sum.

use std::collections::BTreeSet;

use super::RunSpec;

/// The estimated wall time, in seconds, of `runs` on `groups` groups (at least one).
pub fn wall_time(runs: &[RunSpec], allowance_s: f64, groups: usize) -> f64 {
    let planned: BTreeSet<&str> = runs.iter().map(|r| r.id.as_str()).collect();
    let mut pending: Vec<&RunSpec> = runs.iter().collect();
    let mut running: Vec<(f64, &str)> = Vec::new();
    let mut ended: BTreeSet<&str> = BTreeSet::new();
    let mut now = 0.0_f64;
    let mut idle = groups.max(1);
    loop {
        while idle > 0 {
            // A dependency outside `runs` (a run already done) holds nothing up.
            let ready = pending.iter().position(|r| {
                r.depends_on
                    .iter()
                    .all(|d| ended.contains(d.as_str()) || !planned.contains(d.as_str()))
            });
            let Some(k) = ready else { break };
            let r = pending.remove(k);
            running.push((
                now + r.estimated_duration_s.unwrap_or(0.0) + allowance_s,
                r.id.as_str(),
            ));
            idle -= 1;
        }
        let Some((i, _)) = running
            .iter()
            .enumerate()
            .min_by(|a, b| a.1 .0.total_cmp(&b.1 .0))
        else {
            return now;
        };
        let (end, id) = running.remove(i);
        now = end;
        ended.insert(id);
        idle += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::validate::Context;
    use crate::plan::{expand, load_str};

    fn runs() -> Vec<RunSpec> {
        let text = include_str!("../../../../tests/plans/docker/parallel.yaml");
        let ctx = Context {
            host_cores: None,
            exists: None,
        };
        expand(&load_str("parallel.yaml", text, &ctx).unwrap().plan)
    }

    #[test]
    fn one_group_is_the_sum_and_two_run_both_ramps_then_both_baselines() {
        let runs = runs();
        assert_eq!(runs.len(), 4);
        let each: Vec<f64> = runs
            .iter()
            .map(|r| r.estimated_duration_s.unwrap() + 15.0)
            .collect();
        let sum: f64 = each.iter().sum();
        assert!((wall_time(&runs, 15.0, 1) - sum).abs() < 1e-9);
        // Plan order is r1 ramp, r1 baseline, r2 ramp, r2 baseline: the second group takes
        // r2's ramp, since r1's baseline waits for r1's ramp.
        let two = (each[0].max(each[2])) + each[1].max(each[3]);
        assert!((wall_time(&runs, 15.0, 2) - two).abs() < 1e-9);
        // More groups than runs that can start at once change nothing.
        assert!((wall_time(&runs, 15.0, 8) - two).abs() < 1e-9);
        assert_eq!(wall_time(&[], 15.0, 2), 0.0);
        assert!((wall_time(&runs, 15.0, 0) - sum).abs() < 1e-9);
    }

    #[test]
    fn a_chain_of_dependencies_takes_as_long_on_any_number_of_groups() {
        let runs: Vec<RunSpec> = runs().into_iter().take(2).collect();
        let one = wall_time(&runs, 15.0, 1);
        assert!((wall_time(&runs, 15.0, 2) - one).abs() < 1e-9);
    }
}
