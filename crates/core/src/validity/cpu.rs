//! CPU and throttling of a measurement-path container over the measured window, from the
//! differences of its consecutive `ok` rows in containers.csv.

use super::samples::{PathContainer, Sample};
use super::window::Window;
use super::{Assessment, Evidence};
use crate::analysis::saturation::percentile;
use crate::rundir::samples::SampleStatus;

/// Consecutive pairs of the container's `ok` rows whose reads both lie in the window.
pub(super) fn pairs<'a>(rows: &[&'a Sample], window: Window) -> Vec<(&'a Sample, &'a Sample)> {
    let ok: Vec<&Sample> = rows
        .iter()
        .copied()
        .filter(|s| s.status == SampleStatus::Ok && window.contains(s.unix_ns))
        .collect();
    ok.windows(2).map(|w| (w[0], w[1])).collect()
}

/// Cores used per second between two reads; `None` when a counter is missing, the time did
/// not advance, or the counter went down (a restart reset it).
pub(super) fn cores(a: &Sample, b: &Sample) -> Option<f64> {
    let (ua, ub) = (a.cpu_usage_s?, b.cpu_usage_s?);
    let dt = b.offset_s - a.offset_s;
    (ub >= ua && dt > 0.0).then(|| (ub - ua) / dt)
}

/// Check 1: the p95 (nearest rank) of the per-second CPU, as a share of the cap, is at
/// most `ceiling_pct`. An uncapped container is not checked.
pub fn check_cpu(
    c: &PathContainer,
    rows: &[&Sample],
    window: Window,
    ceiling_pct: f64,
    out: &mut Assessment,
) {
    let Some(cap) = c.cpus.filter(|&x| x > 0.0) else {
        return;
    };
    let mut per_s: Vec<f64> = pairs(rows, window)
        .into_iter()
        .filter_map(|(a, b)| cores(a, b))
        .collect();
    per_s.sort_by(f64::total_cmp);
    let Some(p95) = percentile(&per_s, 95.0) else {
        out.warnings.push(format!(
            "validity: cpu of {} ({}) not evaluated: no two consecutive `ok` reads with CPU \
             counters in the measured window",
            c.role, c.name
        ));
        return;
    };
    let share = p95 / cap * 100.0;
    if share > ceiling_pct {
        out.evidence.push(Evidence {
            check: "cpu".into(),
            role: c.role.clone(),
            container: Some(c.name.clone()),
            figure: format!("p95 CPU over the measured window, share of its {cap}-CPU cap"),
            value: share,
            threshold: ceiling_pct,
            unit: "%".into(),
        });
    }
}

/// Check 2: throttled periods over CPU periods, summed over the window's pairs, is at most
/// `ceiling_pct`. Pairs across a reset are skipped; no periods at all is no throttling.
pub fn check_throttling(
    c: &PathContainer,
    rows: &[&Sample],
    window: Window,
    ceiling_pct: f64,
    out: &mut Assessment,
) {
    let (mut periods, mut throttled, mut counted) = (0u64, 0u64, false);
    for (a, b) in pairs(rows, window) {
        let (Some(pa), Some(pb), Some(ta), Some(tb)) = (
            a.cpu_periods,
            b.cpu_periods,
            a.cpu_throttled_periods,
            b.cpu_throttled_periods,
        ) else {
            continue;
        };
        counted = true;
        if pb >= pa && tb >= ta {
            periods += pb - pa;
            throttled += tb - ta;
        }
    }
    if !counted {
        // Without a cap the kernel counts no periods: nothing to throttle.
        if c.cpus.is_some() {
            out.warnings.push(format!(
                "validity: throttling of {} ({}) not evaluated: no two consecutive `ok` reads \
                 with period counters in the measured window",
                c.role, c.name
            ));
        }
        return;
    }
    if periods == 0 {
        return;
    }
    let share = throttled as f64 / periods as f64 * 100.0;
    if share > ceiling_pct {
        out.evidence.push(Evidence {
            check: "throttling".into(),
            role: c.role.clone(),
            container: Some(c.name.clone()),
            figure: "throttled CPU periods over the measured window, share of its periods".into(),
            value: share,
            threshold: ceiling_pct,
            unit: "%".into(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i128 = 1_000_000_000;

    fn row(t: i128, cpu: Option<f64>, periods: Option<(u64, u64)>) -> Sample {
        Sample {
            unix_ns: t * S,
            offset_s: t as f64,
            container: "fb-s-r-fault-proxy".into(),
            role: "fault-proxy".into(),
            status: SampleStatus::Ok,
            cpu_usage_s: cpu,
            cpu_periods: periods.map(|p| p.0),
            cpu_throttled_periods: periods.map(|p| p.1),
            oom_kills: Some(0),
            detail: String::new(),
        }
    }

    fn proxy(cpus: Option<f64>) -> PathContainer {
        PathContainer {
            name: "fb-s-r-fault-proxy".into(),
            role: "fault-proxy".into(),
            cpus,
        }
    }

    const WINDOW: Window = Window {
        start_ns: 10 * S,
        end_ns: 40 * S,
    };

    /// Rows at 1 s from t = 0 to 49, using `per_s(t)` cores in the second before t.
    fn steady(per_s: impl Fn(i128) -> f64) -> Vec<Sample> {
        let mut used = 0.0;
        (0..50)
            .map(|t| {
                if t > 0 {
                    used += per_s(t);
                }
                row(t, Some(used), Some((t as u64 * 10, t as u64)))
            })
            .collect()
    }

    fn run_cpu(c: &PathContainer, rows: &[Sample]) -> Assessment {
        let refs: Vec<&Sample> = rows.iter().collect();
        let mut out = Assessment::default();
        check_cpu(c, &refs, WINDOW, 80.0, &mut out);
        out
    }

    #[test]
    fn cpu_under_the_ceiling_passes() {
        let out = run_cpu(&proxy(Some(0.05)), &steady(|_| 0.03));
        assert_eq!(out, Assessment::default());
    }

    #[test]
    fn cpu_over_the_ceiling_is_evidence() {
        // Busy only in the measured window: the warm-up's idle seconds do not dilute it.
        let rows = steady(|t| if t > 10 { 0.5 } else { 0.0 });
        let out = run_cpu(&proxy(Some(0.5)), &rows);
        assert_eq!(out.evidence.len(), 1, "{out:?}");
        let e = &out.evidence[0];
        assert_eq!((e.check.as_str(), e.role.as_str()), ("cpu", "fault-proxy"));
        assert_eq!(e.container.as_deref(), Some("fb-s-r-fault-proxy"));
        assert_eq!(e.value, 100.0);
        assert_eq!((e.threshold, e.unit.as_str()), (80.0, "%"));
        assert_eq!(
            e.to_string(),
            "fault-proxy (fb-s-r-fault-proxy): p95 CPU over the measured window, share of \
             its 0.5-CPU cap 100 % against 80 %"
        );
    }

    #[test]
    fn cpu_outside_the_window_does_not_count() {
        let rows = steady(|t| if t <= 10 || t > 40 { 1.0 } else { 0.01 });
        assert!(run_cpu(&proxy(Some(0.05)), &rows).evidence.is_empty());
    }

    #[test]
    fn cpu_p95_ignores_a_single_spike_and_a_counter_reset() {
        let mut rows = steady(|t| if t == 20 { 1.0 } else { 0.02 });
        // A restart at t = 30: the counter starts again from zero.
        for r in rows.iter_mut().skip(30) {
            r.cpu_usage_s = Some(r.cpu_usage_s.unwrap() - 20.0);
        }
        let out = run_cpu(&proxy(Some(0.05)), &rows);
        assert!(out.evidence.is_empty(), "{out:?}");
        assert!(out.warnings.is_empty());
    }

    #[test]
    fn cpu_without_counters_is_a_warning_and_uncapped_is_not_checked() {
        let rows: Vec<Sample> = (0..50).map(|t| row(t, None, None)).collect();
        let out = run_cpu(&proxy(Some(0.05)), &rows);
        assert!(out.evidence.is_empty());
        assert_eq!(out.warnings.len(), 1);
        assert!(out.warnings[0].contains("cpu of fault-proxy"), "{out:?}");
        let busy = run_cpu(&proxy(None), &steady(|_| 4.0));
        assert_eq!(busy, Assessment::default());
    }

    #[test]
    fn cpu_skips_rows_that_are_not_ok_and_warns_when_none_are() {
        let mut rows = steady(|_| 0.03);
        for (i, status) in [(20, SampleStatus::Down), (21, SampleStatus::Error)] {
            rows[i].status = status;
            rows[i].cpu_usage_s = None;
        }
        assert_eq!(run_cpu(&proxy(Some(0.05)), &rows), Assessment::default());
        for r in rows.iter_mut().skip(10).take(30) {
            r.status = SampleStatus::Down;
        }
        let out = run_cpu(&proxy(Some(0.05)), &rows);
        assert!(out.evidence.is_empty());
        assert_eq!(out.warnings.len(), 1, "{out:?}");
    }

    fn run_throttle(c: &PathContainer, rows: &[Sample]) -> Assessment {
        let refs: Vec<&Sample> = rows.iter().collect();
        let mut out = Assessment::default();
        check_throttling(c, &refs, WINDOW, 10.0, &mut out);
        out
    }

    fn throttled(share: impl Fn(i128) -> u64) -> Vec<Sample> {
        let (mut p, mut t) = (0, 0);
        (0..50)
            .map(|s| {
                p += 100;
                t += share(s);
                row(s, Some(0.0), Some((p, t)))
            })
            .collect()
    }

    #[test]
    fn throttling_under_the_ceiling_passes() {
        assert_eq!(
            run_throttle(&proxy(Some(0.5)), &throttled(|_| 10)),
            Assessment::default()
        );
    }

    #[test]
    fn throttling_over_the_ceiling_is_evidence() {
        let rows = throttled(|s| if s > 10 { 25 } else { 0 });
        let out = run_throttle(&proxy(Some(0.5)), &rows);
        assert_eq!(out.evidence.len(), 1);
        let e = &out.evidence[0];
        assert_eq!(e.check, "throttling");
        assert!((e.value - 25.0).abs() < 1e-9, "{}", e.value);
        assert_eq!((e.threshold, e.unit.as_str()), (10.0, "%"));
    }

    #[test]
    fn throttling_skips_a_reset_and_needs_periods() {
        let mut rows = throttled(|_| 5);
        // A restart at t = 25: both counters start again from zero.
        for r in rows.iter_mut().skip(25) {
            r.cpu_periods = Some(r.cpu_periods.unwrap() - 2500);
            r.cpu_throttled_periods = Some(r.cpu_throttled_periods.unwrap() - 125);
        }
        assert!(run_throttle(&proxy(Some(0.5)), &rows).evidence.is_empty());
        // Idle: no periods at all.
        let idle: Vec<Sample> = (0..50).map(|t| row(t, Some(0.0), Some((0, 0)))).collect();
        assert_eq!(
            run_throttle(&proxy(Some(0.5)), &idle),
            Assessment::default()
        );
    }

    #[test]
    fn throttling_without_counters_warns_only_when_capped() {
        let rows: Vec<Sample> = (0..50).map(|t| row(t, Some(0.0), None)).collect();
        assert_eq!(run_throttle(&proxy(Some(0.5)), &rows).warnings.len(), 1);
        assert_eq!(run_throttle(&proxy(None), &rows), Assessment::default());
    }
}
