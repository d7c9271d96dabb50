//! Where the CPU and the memory were: per container, over a span, from containers.csv's
//! cumulative counters integrated over the samples' own timestamps (docs/analysis.md,
//! "CPU and memory per container"), requests per replica core-second, and the host's CPU
//! used outside the study (host.csv).

use std::collections::BTreeMap;

use super::latency::Answers;
use super::out::Out;
use super::read::Sample;
use crate::analysis::saturation::percentile;
use crate::rundir::frame::Cap;
use crate::rundir::host::{figures, HostFigures, HostSample};

/// The sum over the replicas, in the `container` column.
pub const REPLICAS: &str = "replicas";

/// One CPU interval: where it ends and the CPU it used.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Interval {
    end_ns: i128,
    cpu_s: f64,
    share_pct: f64,
}

/// A container's samples, prepared once for every span.
#[derive(Debug, Clone, Default)]
pub struct Usage {
    intervals: Vec<Interval>,
    /// The memory figures of its `ok` rows.
    memory: Vec<Memory>,
}

/// One `ok` row's memory figures, placed by its `unix_ns` and `tick`.
#[derive(Debug, Clone, Copy)]
struct Memory {
    unix_ns: i128,
    tick: u64,
    usage: Option<f64>,
    rss: Option<f64>,
    working_set: Option<f64>,
}

pub fn is_replica(role: &str) -> bool {
    role.starts_with("replica-")
}

/// Every capped container's usage, by name.
pub fn prepare(samples: &[Sample], caps: &BTreeMap<String, Cap>) -> BTreeMap<String, Usage> {
    let mut out: BTreeMap<String, Usage> =
        caps.keys().map(|k| (k.clone(), Usage::default())).collect();
    // Each container's previous `ok` row with CPU: its monotonic offset and its counter.
    let mut last: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
    for s in samples {
        let Some(u) = out.get_mut(&s.container) else {
            continue;
        };
        let cpus = caps[&s.container].cpus;
        match (s.ok, s.cpu_usage_s) {
            (true, Some(cpu)) => {
                // The rate's time base is the monitors' monotonic clock (`offset_s`), as
                // the validity checks' is: the wall clock may be stepped during a run. The
                // interval is placed on the wall clock by its end row's `unix_ns`.
                if let Some((t, c)) = last.insert(&s.container, (s.offset_s, cpu)) {
                    let dt = s.offset_s - t;
                    let used = cpu - c;
                    // A counter that went back (a reset) or a clock that did not advance
                    // makes no interval; the chain goes on from this row.
                    if dt > 0.0 && used >= 0.0 {
                        u.intervals.push(Interval {
                            end_ns: s.unix_ns,
                            cpu_s: used,
                            share_pct: 100.0 * (used / dt) / cpus,
                        });
                    }
                }
            }
            _ => {
                last.remove(s.container.as_str());
            }
        }
        if s.ok {
            u.memory.push(Memory {
                unix_ns: s.unix_ns,
                tick: s.tick,
                usage: s.memory_bytes,
                rss: s.memory_rss_bytes,
                working_set: s.memory_working_set_bytes,
            });
        }
    }
    out
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn max(v: impl Iterator<Item = f64>) -> Option<f64> {
    v.fold(None, |m, x| Some(m.map_or(x, |m: f64| m.max(x))))
}

impl Usage {
    fn intervals(&self, a: i128, b: i128) -> impl Iterator<Item = &Interval> {
        self.intervals
            .iter()
            .filter(move |i| i.end_ns >= a && i.end_ns < b)
    }

    /// CPU seconds used in `[a, b)`; `None` without an interval.
    pub fn cpu_seconds(&self, a: i128, b: i128) -> Option<f64> {
        let mut n = 0;
        let total = self.intervals(a, b).fold(0.0, |s, i| {
            n += 1;
            s + i.cpu_s
        });
        (n > 0).then_some(total)
    }

    /// The mean and nearest-rank p95 of the CPU as a share of the cap, in %.
    pub fn cpu_share(&self, a: i128, b: i128) -> (Option<f64>, Option<f64>) {
        let mut v: Vec<f64> = self.intervals(a, b).map(|i| i.share_pct).collect();
        let m = mean(&v);
        v.sort_unstable_by(f64::total_cmp);
        (m, percentile(&v, 95.0))
    }

    /// Every interval's CPU as % of the cap, by seconds since `t0` (for the plots).
    pub fn shares_since(&self, t0: i128) -> Vec<(f64, f64)> {
        self.intervals
            .iter()
            .map(|i| ((i.end_ns - t0) as f64 / 1e9, i.share_pct))
            .collect()
    }

    fn memory(&self, a: i128, b: i128) -> impl Iterator<Item = &Memory> {
        self.memory
            .iter()
            .filter(move |m| m.unix_ns >= a && m.unix_ns < b)
    }
}

/// One memory figure of a row.
type MemoryFigure = fn(&Memory) -> Option<f64>;

/// The memory figures with a peak and a mean row each: working set (what `docker stats`
/// shows, the figure the report leads with) and anonymous RSS.
const MEMORY: [(&str, MemoryFigure); 2] = [
    ("memory_working_set", |m| m.working_set),
    ("memory_rss", |m| m.rss),
];

/// The host over `[a, b)`, from host.csv: the CPU used outside the study and the CPU the
/// hypervisor stole, in cores (docs/analysis.md, "Host interference"); empty with the note
/// `none` when no row in the span has every part.
pub fn host_rows(out: &mut Out, host: &[HostSample], a: i128, b: i128) {
    let f = figures(host, a, b);
    let mut x = out.under("measured");
    let cores = |get: fn(&HostFigures) -> f64| f.as_ref().map(get);
    x.value("host_outside_cores", cores(|f| f.outside_cores), "cores");
    x.value("host_steal_cores", cores(|f| f.steal_cores), "cores");
    out.absorb(x);
}

/// The measurement path's rows: each load generator's, fault proxy's and balancer's p95 CPU
/// over `[a, b)` as a share of its cap, under its own name.
pub fn path_rows(
    out: &mut Out,
    usage: &BTreeMap<String, Usage>,
    caps: &BTreeMap<String, Cap>,
    a: i128,
    b: i128,
) {
    for (name, cap) in caps {
        if matches!(
            cap.role.as_str(),
            "load-generator" | "fault-proxy" | "balancer"
        ) {
            let mut x = out.under("measured").for_container(name);
            x.value(
                "path_cpu_p95_pct_of_cap",
                usage[name].cpu_share(a, b).1,
                "%",
            );
            out.absorb(x);
        }
    }
}

/// Every capped container's rows over `[a, b)`, the replicas' sum, and the efficiency.
pub fn rows(
    out: &mut Out,
    usage: &BTreeMap<String, Usage>,
    caps: &BTreeMap<String, Cap>,
    answers: &Answers<'_>,
    a: i128,
    b: i128,
) {
    for (name, u) in usage {
        let mut o = out.for_container(name);
        let (m, p95) = u.cpu_share(a, b);
        o.value("cpu_mean_pct_of_cap", m, "%");
        o.value("cpu_p95_pct_of_cap", p95, "%");
        o.value("cpu_seconds", u.cpu_seconds(a, b), "s");
        for (metric, of) in MEMORY {
            let v: Vec<f64> = u.memory(a, b).filter_map(of).collect();
            o.value(&format!("{metric}_peak"), max(v.iter().copied()), "bytes");
            o.value(&format!("{metric}_mean"), mean(&v), "bytes");
        }
        o.value(
            "memory_usage_peak",
            max(u.memory(a, b).filter_map(|m| m.usage)),
            "bytes",
        );
        out.absorb(o);
    }
    let replicas: Vec<&Usage> = usage
        .iter()
        .filter(|(n, _)| is_replica(&caps[*n].role))
        .map(|(_, u)| u)
        .collect();
    let mut o = out.for_container(REPLICAS);
    let cpu = replicas
        .iter()
        .filter_map(|u| u.cpu_seconds(a, b))
        .fold(None, |s: Option<f64>, c| Some(s.unwrap_or(0.0) + c));
    o.value("cpu_seconds", cpu, "s");
    for (metric, of) in MEMORY {
        // The replicas' sum at each tick, of the replica rows of that tick that have it.
        let mut by_tick: BTreeMap<u64, f64> = BTreeMap::new();
        for u in &replicas {
            for m in u.memory(a, b) {
                if let Some(v) = of(m) {
                    *by_tick.entry(m.tick).or_default() += v;
                }
            }
        }
        let sums: Vec<f64> = by_tick.into_values().collect();
        o.value(
            &format!("{metric}_peak"),
            max(sums.iter().copied()),
            "bytes",
        );
        o.value(&format!("{metric}_mean"), mean(&sums), "bytes");
    }
    let served = answers.served(a, b);
    o.value(
        "requests_per_core_second",
        cpu.filter(|c| *c > 0.0).map(|c| served / c),
        "1/core·s",
    );
    out.absorb(o);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::read::Req;
    use crate::report::rows::RunKey;

    fn sample(name: &str, role: &str, t_s: i128, cpu: Option<f64>, rss: f64) -> Sample {
        Sample {
            unix_ns: t_s * 1_000_000_000,
            offset_s: t_s as f64,
            tick: t_s as u64,
            container: name.into(),
            role: role.into(),
            ok: cpu.is_some(),
            cpu_usage_s: cpu,
            memory_bytes: Some(rss * 2.0),
            memory_rss_bytes: Some(rss),
            memory_working_set_bytes: Some(rss * 1.5),
        }
    }

    /// The monitors' monotonic clock is the rate's time base, the wall clock only places
    /// the interval: a wall clock running 1 % fast does not lower the rate.
    #[test]
    fn a_rate_is_taken_over_the_monotonic_offsets_not_the_wall_clock() {
        let caps: BTreeMap<String, Cap> = [(
            "r1".to_string(),
            Cap {
                role: "replica-1".into(),
                cpus: 1.0,
            },
        )]
        .into();
        let mut a = sample("r1", "replica-1", 0, Some(0.0), 1.0);
        let mut b = sample("r1", "replica-1", 1, Some(0.5), 1.0);
        a.unix_ns = 0;
        b.unix_ns = 1_010_000_000;
        (a.offset_s, b.offset_s) = (0.0, 1.0);
        let usage = prepare(&[a, b], &caps);
        assert_eq!(
            usage["r1"].cpu_share(0, 2_000_000_000),
            (Some(50.0), Some(50.0))
        );
    }

    #[test]
    fn cpu_is_integrated_over_the_samples_own_times_and_gaps_break_the_chain() {
        let caps: BTreeMap<String, Cap> = [("r1", "replica-1"), ("r2", "replica-2")]
            .iter()
            .map(|(n, r)| {
                (
                    n.to_string(),
                    Cap {
                        role: r.to_string(),
                        cpus: 0.5,
                    },
                )
            })
            .collect();
        let samples = vec![
            sample("r1", "replica-1", 0, Some(0.0), 100.0),
            sample("r2", "replica-2", 0, Some(0.0), 10.0),
            // 0.25 cores over 2 s: 50 % of a 0.5 cap.
            sample("r1", "replica-1", 2, Some(0.5), 300.0),
            sample("r2", "replica-2", 2, None, 0.0),
            sample("r2", "replica-2", 3, Some(5.0), 20.0),
            sample("r2", "replica-2", 4, Some(5.5), 30.0),
        ];
        let usage = prepare(&samples, &caps);
        let u = &usage["r1"];
        assert_eq!(u.cpu_share(0, 10_000_000_000), (Some(50.0), Some(50.0)));
        // The down row broke r2's chain: only 3 → 4 counts.
        assert_eq!(usage["r2"].cpu_seconds(0, 10_000_000_000), Some(0.5));
        // A 500, then five feeds and a post answered 200, then three posts answered 404: the
        // post route declares half its answers 404.
        let reqs: Vec<Req> = (0..10)
            .map(|i| Req {
                start_ns: i * 100_000_000,
                end_ns: i * 100_000_000 + 1,
                status: match i {
                    0 => 500,
                    7.. => 404,
                    _ => 200,
                },
                duration_ms: 1.0,
                scheduled_ns: None,
                route: u16::from(i >= 6),
            })
            .collect();
        let routes = ["feed".to_string(), "post".to_string()];
        let declared = BTreeMap::from([("post".to_string(), 0.5)]);
        let answers = Answers::of(&reqs, &routes, &declared);
        let key = RunKey {
            run: "r".into(),
            contender: "c".into(),
            variant: String::new(),
            profile: "p".into(),
            fault: String::new(),
            repetition: 1,
        };
        let mut out = Out::new(key);
        rows(&mut out, &usage, &caps, &answers, 0, 10_000_000_000);
        let get = |c: &str, m: &str| {
            out.rows
                .iter()
                .find(|r| r.container == c && r.metric == m)
                .and_then(|r| r.value)
        };
        assert_eq!(get(REPLICAS, "cpu_seconds"), Some(1.0));
        // 6 answered 200 and 2 of the 3 404s (half the post route's 4) served over 1
        // core-second.
        assert_eq!(get(REPLICAS, "requests_per_core_second"), Some(8.0));
        // Ticks 0, 2, 3, 4: 110, 300, 20, 30.
        assert_eq!(get(REPLICAS, "memory_rss_peak"), Some(300.0));
        assert_eq!(get(REPLICAS, "memory_rss_mean"), Some(115.0));
        // The working set, 1.5 times the RSS in every row, sums the same ticks.
        assert_eq!(get(REPLICAS, "memory_working_set_peak"), Some(450.0));
        assert_eq!(get(REPLICAS, "memory_working_set_mean"), Some(172.5));
        assert_eq!(get("r1", "memory_usage_peak"), Some(600.0));
    }
}
