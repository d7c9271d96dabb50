//! Host interference: the CPU used on the host outside the study, and the CPU the hypervisor
//! stole, over the measured window (host.csv). A study's caps limit what its containers may
//! use, not what others take from the same cores; past the ceiling (`guards:
//! host-interference`) the run is set aside as `host-interference`, with the figures
//! (docs/analysis.md, "Host interference").

use super::{Assessment, Evidence, Window};
use crate::rundir::host::{figures, HostFigures, HostSample};

/// The check's role and name: the reason `host-interference`.
pub const ROLE: &str = "host";
pub const CHECK: &str = "interference";

/// Below this share of the window covered by complete rows, the figures come with a warning.
const MIN_COVERAGE: f64 = 0.8;

/// host.csv as `assess` found it.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum HostRows {
    /// No host.csv: its engine is not on this host, or it was recorded before host samples.
    #[default]
    Absent,
    /// host.csv could not be read, and why.
    Unreadable(String),
    Read(Vec<HostSample>),
}

/// The check: the figures, and evidence when (outside + steal) exceeds `ceiling_pct` of the
/// host's logical CPUs. Without host.csv, or without a complete row in the window, a
/// warning: the check never passes by not running.
pub fn check_host(rows: &HostRows, window: Window, ceiling_pct: f64, out: &mut Assessment) {
    let not = |why: &str| format!("validity: {ROLE}-{CHECK} not evaluated: {why}");
    let rows = match rows {
        HostRows::Read(rows) => rows,
        HostRows::Absent => {
            out.warnings.push(not(
                "the run has no host.csv (the host was not the run's alone to judge: see \
                 its `host: not sampled` warning; or it was recorded before host samples)",
            ));
            return;
        }
        HostRows::Unreadable(e) => {
            out.warnings.push(not(e));
            return;
        }
    };
    let Some(f) = figures(rows, window.start_ns, window.end_ns) else {
        out.warnings
            .push(not("host.csv has no complete row in the measured window"));
        return;
    };
    if f.seconds < MIN_COVERAGE * f.window_s {
        out.warnings.push(format!(
            "validity: {ROLE}-{CHECK} covers {:.0} s of the {:.0} s measured window (rows \
             with every part known)",
            f.seconds, f.window_s
        ));
    }
    if f.interference_pct > ceiling_pct {
        out.evidence.push(Evidence {
            check: CHECK.into(),
            role: ROLE.into(),
            container: None,
            figure: describe(&f),
            value: round3(f.interference_pct),
            threshold: ceiling_pct,
            unit: "%".into(),
        });
    }
    out.host = Some(f);
}

fn describe(f: &HostFigures) -> String {
    let load = f
        .load1_max
        .map_or(String::new(), |l| format!("; load average up to {l:.2}"));
    format!(
        "CPU used outside the study plus steal, mean over the measured window, share of the \
         host's {} logical CPUs (outside {:.2} cores, steal {:.2} cores; the study {:.2}, \
         feedbench {:.2}, the engine {:.2}; busiest second {:.2} cores outside at +{:.0} s{load})",
        f.logical_cpus,
        f.outside_cores,
        f.steal_cores,
        f.study_cores,
        f.feedbench_cores,
        f.engine_cores,
        f.busiest_outside_cores,
        f.busiest_at_s
    )
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn row(at_s: i128, busy: u64, study: u64, steal: u64) -> HostSample {
        HostSample {
            unix_ns: at_s * S as i128,
            interval_ns: Some(S),
            logical_cpus: 2,
            busy_ns: Some(busy),
            iowait_ns: Some(0),
            steal_ns: Some(steal),
            study_ns: Some(study),
            feedbench_ns: Some(S / 100),
            engine_ns: Some(S / 100),
            load1: Some(1.5),
        }
    }

    fn window() -> Window {
        Window {
            start_ns: 10 * S as i128,
            end_ns: 20 * S as i128,
        }
    }

    #[test]
    fn a_core_burned_outside_the_study_sets_the_run_aside_with_its_figures() {
        // 10 s in the window: the study uses 0.5 core, something else a whole core.
        let rows: Vec<_> = (5..25)
            .map(|t| row(t, S * 3 / 2 + S / 50, S / 2, 0))
            .collect();
        let mut out = Assessment::default();
        check_host(&HostRows::Read(rows.clone()), window(), 20.0, &mut out);
        let f = out.host.clone().unwrap();
        assert_eq!(f.seconds, 10.0);
        assert!((f.outside_cores - 1.0).abs() < 1e-9, "{f:?}");
        assert!((f.interference_pct - 50.0).abs() < 1e-9);
        assert_eq!(out.evidence.len(), 1);
        let e = &out.evidence[0];
        assert_eq!(
            (e.role.as_str(), e.check.as_str()),
            ("host", "interference")
        );
        assert_eq!(super::super::reason(&out.evidence), "host-interference");
        assert!(e.figure.contains("outside 1.00 cores"), "{}", e.figure);
        assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    }

    #[test]
    fn a_quiet_host_passes_and_steal_counts_as_interference() {
        let quiet: Vec<_> = (10..20).map(|t| row(t, S / 2 + S / 50, S / 2, 0)).collect();
        let mut out = Assessment::default();
        check_host(&HostRows::Read(quiet), window(), 20.0, &mut out);
        assert!(out.evidence.is_empty());
        assert_eq!(out.host.as_ref().unwrap().outside_cores, 0.0);
        // The hypervisor took 0.6 of a core: 30 % of two.
        let stolen: Vec<_> = (10..20)
            .map(|t| row(t, S / 2 + S / 50, S / 2, S * 3 / 5))
            .collect();
        let mut out = Assessment::default();
        check_host(&HostRows::Read(stolen), window(), 20.0, &mut out);
        assert_eq!(out.evidence[0].value, 30.0);
    }

    #[test]
    fn rows_with_a_part_unknown_are_left_out_and_too_few_warn() {
        let mut rows: Vec<_> = (10..20).map(|t| row(t, S, S / 2, 0)).collect();
        for r in rows.iter_mut().take(5) {
            r.study_ns = None;
        }
        let mut out = Assessment::default();
        check_host(&HostRows::Read(rows.clone()), window(), 90.0, &mut out);
        assert_eq!(out.host.as_ref().unwrap().seconds, 5.0);
        assert!(
            out.warnings[0].contains("covers 5 s of the 10 s"),
            "{:?}",
            out.warnings
        );
        let mut out = Assessment::default();
        check_host(&HostRows::Absent, window(), 20.0, &mut out);
        assert!(out.warnings[0].contains("no host.csv"));
        assert!(out.evidence.is_empty() && out.host.is_none());
        let mut out = Assessment::default();
        check_host(&HostRows::Read(Vec::new()), window(), 20.0, &mut out);
        assert!(out.warnings[0].contains("no complete row"));
        let mut out = Assessment::default();
        check_host(
            &HostRows::Unreadable("`host.csv` line 9: bad".into()),
            window(),
            20.0,
            &mut out,
        );
        assert!(out.warnings[0].contains("not evaluated: `host.csv` line 9"));
        assert!(out.evidence.is_empty());
    }
}
