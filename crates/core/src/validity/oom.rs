//! Out-of-memory kills in the measurement path, over the whole run: the `oom_kills`
//! counter rising between reads, or a `down` row whose detail says the engine saw the
//! container killed out of memory.

use super::samples::{PathContainer, Sample};
use super::{Assessment, Evidence};
use crate::rundir::samples::SampleStatus;

/// The words a `down` row's detail carries when the engine's `OOMKilled` flag was set.
pub const OOM_DETAIL: &str = "killed out of memory";

fn oom_down(s: &Sample) -> bool {
    s.status == SampleStatus::Down && s.detail.contains(OOM_DETAIL)
}

/// Kills seen in one container's rows (in read order). A fresh cgroup counts from zero, so
/// the first count and a count after a reset are all new kills; a run of `down` rows after
/// one kill is one kill.
pub fn kills(rows: &[&Sample]) -> u64 {
    let mut total = 0;
    let mut last: u64 = 0;
    let mut was_oom_down = false;
    for s in rows {
        match s.status {
            SampleStatus::Ok => {
                if let Some(n) = s.oom_kills {
                    total += if n >= last { n - last } else { n };
                    last = n;
                }
                was_oom_down = false;
            }
            SampleStatus::Down if oom_down(s) => {
                if !was_oom_down {
                    total += 1;
                }
                was_oom_down = true;
            }
            _ => was_oom_down = false,
        }
    }
    total
}

/// Check 5: no out-of-memory kill in a measurement-path container.
pub fn check_oom(c: &PathContainer, rows: &[&Sample], out: &mut Assessment) {
    let n = kills(rows);
    if n > 0 {
        out.evidence.push(Evidence {
            check: "oom".into(),
            role: c.role.clone(),
            container: Some(c.name.clone()),
            figure: "out-of-memory kills during the run".into(),
            value: n as f64,
            threshold: 0.0,
            unit: "kills".into(),
        });
    } else if rows
        .iter()
        .any(|s| s.status == SampleStatus::Ok && s.oom_kills.is_none())
    {
        out.warnings.push(format!(
            "validity: oom of {} ({}) only partly evaluated: containers.csv has no `oom_kills` \
             counter for it (engine-API source), so only kills of its main process are seen",
            c.role, c.name
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: u32, status: SampleStatus, oom: Option<u64>, detail: &str) -> Sample {
        Sample {
            unix_ns: i128::from(t) * 1_000_000_000,
            offset_s: f64::from(t),
            container: "fb-s-r-load-generator".into(),
            role: "load-generator".into(),
            status,
            cpu_usage_s: None,
            cpu_periods: None,
            cpu_throttled_periods: None,
            oom_kills: oom,
            detail: detail.into(),
        }
    }

    fn loadgen() -> PathContainer {
        PathContainer {
            name: "fb-s-r-load-generator".into(),
            role: "load-generator".into(),
            cpus: None,
        }
    }

    fn run(rows: &[Sample]) -> Assessment {
        let refs: Vec<&Sample> = rows.iter().collect();
        let mut out = Assessment::default();
        check_oom(&loadgen(), &refs, &mut out);
        out
    }

    use SampleStatus::{Down, Ok};

    #[test]
    fn no_kills_passes() {
        let rows: Vec<Sample> = (0..5).map(|t| row(t, Ok, Some(0), "")).collect();
        assert_eq!(run(&rows), Assessment::default());
    }

    #[test]
    fn a_rising_counter_is_evidence() {
        let rows = [
            row(0, Ok, Some(0), ""),
            row(1, Ok, Some(2), ""),
            row(2, Ok, Some(2), ""),
            // Restarted: a new cgroup that has seen one kill of its own.
            row(3, Ok, Some(1), ""),
        ];
        let out = run(&rows);
        assert_eq!(out.evidence.len(), 1);
        let e = &out.evidence[0];
        assert_eq!(
            (e.check.as_str(), e.role.as_str(), e.value, e.unit.as_str()),
            ("oom", "load-generator", 3.0, "kills")
        );
    }

    #[test]
    fn a_down_row_that_says_oom_counts_once() {
        let detail = "status exited, exit code 137, killed out of memory";
        let rows = [
            row(0, Ok, Some(0), ""),
            row(1, Down, None, detail),
            row(2, Down, None, detail),
            row(3, Ok, Some(0), ""),
            row(4, Down, None, "status exited, exit code 0"),
        ];
        assert_eq!(run(&rows).evidence[0].value, 1.0);
    }

    #[test]
    fn a_missing_counter_is_a_warning_not_a_pass() {
        let rows: Vec<Sample> = (0..3).map(|t| row(t, Ok, None, "")).collect();
        let out = run(&rows);
        assert!(out.evidence.is_empty());
        assert_eq!(out.warnings.len(), 1);
    }
}
