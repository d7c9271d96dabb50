//! The live rule of a run that can no longer stand: a measurement-path container whose CPU
//! stays over its ceiling, every second, for one objective window. The supervisor feeds it
//! each container's reads as the monitors take them and stops the load at the first piece
//! of evidence; the run is then set aside with it (docs/results.md, "Validity").
//!
//! "Stays over" is strict on purpose: one second at or under the ceiling, a read that is not
//! `ok`, a missing counter or a counter that went down (a restart) starts the count again.
//! A container that binds only now and then is left to the checks after the run, which see
//! the whole measured window.

use super::samples::PathContainer;
use crate::evidence::Evidence;

/// The monitors read on a one-second grid, each read a few milliseconds late: a streak this
/// much short of the window, by the reads' own times, has spanned it.
const GRID_SLACK_S: f64 = 0.1;

/// One container's streak: its last `ok` read, and since when (and how low) its CPU has
/// stayed over the ceiling.
#[derive(Debug, Clone)]
struct Streak {
    container: PathContainer,
    cap: f64,
    /// The last `ok` read: seconds since the monitors started, cumulative CPU in ns.
    last: Option<(f64, u64)>,
    /// When the current streak began (the start of its first interval), and its lowest
    /// share of the cap so far.
    over: Option<(f64, f64)>,
}

/// The rule over a run's capped measurement-path containers.
#[derive(Debug, Clone)]
pub struct Binding {
    streaks: Vec<Streak>,
    window_s: f64,
    ceiling_pct: f64,
}

impl Binding {
    /// The rule for `containers` (uncapped ones are not watched: they have no ceiling), over
    /// an objective window of `window_s` seconds, at `ceiling_pct` of each cap.
    pub fn new(containers: &[PathContainer], window_s: f64, ceiling_pct: f64) -> Binding {
        let streaks = containers
            .iter()
            .filter_map(|c| {
                let cap = c.cpus.filter(|&x| x > 0.0)?;
                Some(Streak {
                    container: c.clone(),
                    cap,
                    last: None,
                    over: None,
                })
            })
            .collect();
        Binding {
            streaks,
            window_s,
            ceiling_pct,
        }
    }

    /// Takes one read of container `name`: `offset_s` on the monitors' clock, its cumulative
    /// CPU (`None` when the read was not `ok` or lacked it). Hands back the evidence when this
    /// read completes one objective window over the ceiling.
    pub fn read(
        &mut self,
        name: &str,
        offset_s: f64,
        cpu_usage_ns: Option<u64>,
    ) -> Option<Evidence> {
        let (window_s, ceiling) = (self.window_s, self.ceiling_pct);
        let s = self.streaks.iter_mut().find(|s| s.container.name == name)?;
        let Some(usage) = cpu_usage_ns else {
            s.last = None;
            s.over = None;
            return None;
        };
        let before = s.last.replace((offset_s, usage));
        let share = before.and_then(|(t, u)| {
            let dt = offset_s - t;
            (usage >= u && dt > 0.0).then(|| (usage - u) as f64 / 1e9 / dt / s.cap * 100.0)
        });
        match (share, before) {
            (Some(share), Some((t, _))) if share > ceiling => {
                let (since, low) = s.over.unwrap_or((t, share));
                s.over = Some((since, low.min(share)));
            }
            _ => s.over = None,
        }
        let (since, low) = s.over?;
        (offset_s - since + GRID_SLACK_S >= window_s).then(|| Evidence {
            check: "cpu".into(),
            role: s.container.role.clone(),
            container: Some(s.container.name.clone()),
            figure: format!(
                "lowest CPU share of its {}-CPU cap, every second over the ceiling from \
                 {since:.1} s to {offset_s:.1} s of the monitors' clock (at least one objective \
                 window, {window_s} s; the run was stopped there)",
                s.cap
            ),
            value: low,
            threshold: ceiling,
            unit: "%".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn balancer(cpus: Option<f64>) -> PathContainer {
        PathContainer {
            name: "fb-s-r-balancer".into(),
            role: "balancer".into(),
            cpus,
        }
    }

    /// Feeds reads one second apart from `t0`, each using `shares[i]` % of a 0.5-CPU cap
    /// over the second before it; hands back the second at which the rule tripped.
    fn feed(b: &mut Binding, shares: &[f64]) -> Option<(usize, Evidence)> {
        let mut usage = 0u64;
        assert!(b.read("fb-s-r-balancer", 0.0, Some(usage)).is_none());
        for (i, share) in shares.iter().enumerate() {
            usage += (share / 100.0 * 0.5 * 1e9) as u64;
            if let Some(e) = b.read("fb-s-r-balancer", (i + 1) as f64, Some(usage)) {
                return Some((i + 1, e));
            }
        }
        None
    }

    #[test]
    fn a_container_over_its_ceiling_every_second_of_one_window_is_evidence_at_its_end() {
        let mut b = Binding::new(&[balancer(Some(0.5))], 5.0, 80.0);
        let (at, e) = feed(&mut b, &[40.0, 50.0, 95.0, 90.0, 99.0, 85.0, 97.0, 99.0]).unwrap();
        // Over from the end of second 2: five seconds later is second 7.
        assert_eq!(at, 7);
        assert_eq!(e.check, "cpu");
        assert_eq!(e.role, "balancer");
        assert_eq!(e.threshold, 80.0);
        assert!((e.value - 85.0).abs() < 1e-6, "{e}");
        assert!(e.figure.contains("from 2.0 s to 7.0 s"), "{e}");
    }

    #[test]
    fn reads_a_little_late_on_their_grid_still_span_the_window() {
        let mut b = Binding::new(&[balancer(Some(0.5))], 3.0, 80.0);
        let n = "fb-s-r-balancer";
        assert!(b.read(n, 10.004, Some(0)).is_none());
        assert!(b.read(n, 11.0, Some(450_000_000)).is_none());
        assert!(b.read(n, 12.001, Some(900_000_000)).is_none());
        assert!(b.read(n, 12.95, Some(1_350_000_000)).is_some());
    }

    #[test]
    fn one_second_under_the_ceiling_starts_the_count_again() {
        let mut b = Binding::new(&[balancer(Some(0.5))], 5.0, 80.0);
        let shares = [95.0, 95.0, 95.0, 95.0, 80.0, 95.0, 95.0, 95.0, 95.0];
        assert!(feed(&mut b, &shares).is_none());
        let mut b = Binding::new(&[balancer(Some(0.5))], 5.0, 80.0);
        let (at, _) = feed(
            &mut b,
            &[95.0, 95.0, 95.0, 95.0, 80.0, 95.0, 95.0, 95.0, 95.0, 95.0],
        )
        .unwrap();
        assert_eq!(at, 10);
    }

    #[test]
    fn a_read_without_cpu_or_a_counter_that_went_down_breaks_the_streak() {
        let mut b = Binding::new(&[balancer(Some(0.5))], 3.0, 80.0);
        let n = "fb-s-r-balancer";
        assert!(b.read(n, 0.0, Some(0)).is_none());
        assert!(b.read(n, 1.0, Some(450_000_000)).is_none());
        assert!(b.read(n, 2.0, Some(900_000_000)).is_none());
        assert!(b.read(n, 3.0, None).is_none());
        assert!(b.read(n, 4.0, Some(1_000_000_000)).is_none());
        assert!(b.read(n, 5.0, Some(10)).is_none(), "a reset is no share");
        for t in 6..=7 {
            assert!(b
                .read(n, t as f64, Some(10 + (t - 5) * 450_000_000))
                .is_none());
        }
        assert!(b.read(n, 8.0, Some(10 + 3 * 450_000_000)).is_some());
    }

    #[test]
    fn uncapped_and_unknown_containers_are_not_watched() {
        let mut b = Binding::new(&[balancer(None)], 1.0, 80.0);
        assert!(feed(&mut b, &[500.0, 500.0, 500.0]).is_none());
        let mut b = Binding::new(&[balancer(Some(0.5))], 1.0, 80.0);
        assert!(b.read("another", 0.0, Some(0)).is_none());
        assert!(b.read("another", 1.0, Some(u64::MAX)).is_none());
    }
}
