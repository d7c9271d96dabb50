//! feedbench-load checked against k6 on the real engine, in one session: one deployed
//! contender (tests/plans/docker/compare-load.yaml), its ramp driven by k6, then
//! feedbench-load, then k6 again, from the same rendered load. What must hold (stated in
//! docs/load-generator.md before it was measured):
//! - requests per second of the schedule: within 1 % or one request of either k6 run (below
//!   the knee; past it, per step);
//! - p50 and p99 `duration_ms` at a load neither generator saturates (the ramp's warm-up
//!   and first step, `UNSATURATED`): within 50 % + 2 ms of either k6 run's;
//! - the knee of a saturating ramp (its first step that breaks the objective, confirmed by
//!   the next step breaking it too): the same step as a k6 run's, or the adjacent one;
//! - the same route counts within 1 % or one (the same seeded draws), and requests.csv's
//!   columns alike.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use feedbench::analysis::saturation::{self, Objective, Step};
use feedbench::engine::deploy::{deploy, teardown};
use feedbench::engine::runtime::Runtime;
use feedbench::plan::model::{LoadGenerator, LoadGeneratorKind, Profile};
use feedbench::plan::{expand, load_file, LoadedPlan};
use feedbench::rundir::requests::{self, LoadSummary, Request};
use feedbench::spec::commands;
use feedbench::spec::load::{self, LoadScript, LoadSpec};
use feedbench::spec::topology::{of_loaded, Role, RunTopology};

const PLAN: &str = "tests/plans/docker/compare-load.yaml";
const STUDY: &str = "test-compare-load";

/// What one generator did with one profile.
struct Drive {
    kind: LoadGeneratorKind,
    summary: LoadSummary,
    requests: Vec<Request>,
    header: String,
}

impl Drive {
    fn t0(&self) -> u64 {
        self.summary.scenario_start_ns.expect("a scenario start")
    }

    /// Requests by whole second of the schedule they started in.
    fn per_second(&self, seconds: u64) -> Vec<u64> {
        let mut out = vec![0; seconds as usize];
        for r in &self.requests {
            let s = r.start_ns.saturating_sub(self.t0()) / 1_000_000_000;
            if let Some(n) = out.get_mut(s as usize) {
                *n += 1;
            }
        }
        out
    }

    /// p50 and p99 (nearest rank) of `duration_ms` of the requests started in `seconds` of
    /// the schedule.
    fn percentiles(&self, seconds: (u64, u64)) -> (f64, f64) {
        let ns = |s: u64| self.t0() + s * 1_000_000_000;
        let mut d: Vec<f64> = self
            .requests
            .iter()
            .filter(|r| (ns(seconds.0)..ns(seconds.1)).contains(&r.start_ns))
            .map(|r| r.duration_ms)
            .collect();
        d.sort_by(f64::total_cmp);
        let at = |p: f64| d[saturation::rank(p, d.len()) - 1];
        (at(50.0), at(99.0))
    }

    fn routes(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for r in &self.requests {
            *out.entry(r.route.clone()).or_default() += 1;
        }
        out
    }
}

/// The plan with k6 in place of its native load generator.
fn with_k6(loaded: &LoadedPlan) -> LoadedPlan {
    let mut k6 = loaded.clone();
    k6.plan.topology.load_generator = LoadGenerator {
        kind: LoadGeneratorKind::K6,
        image: "feedbench/k6:1.1.0".parse().unwrap(),
        build: None,
        max_lag: None,
        max_in_flight: None,
    };
    k6
}

fn render(loaded: &LoadedPlan, profile: &str, kind: LoadGeneratorKind) -> LoadScript {
    let plan = &loaded.plan;
    load::render(&LoadSpec {
        profile: &plan.profiles[profile],
        workload: plan.workload_of(&plan.profiles[profile]),
        objective: &plan.study.objective,
        saturation: &Default::default(),
        base_url: &format!("http://{}:{}", Role::Balancer.key(), 8080),
        seed: 1,
        max_vus: None,
        generator: kind,
        max_lag_ms: plan.topology.load_generator.max_lag().millis,
    })
    .unwrap()
}

/// Runs one load generator container (a copy of `topo`'s, named with `suffix`) on the
/// deployed run's network until it exits, and reads its output.
async fn drive(rt: &Runtime, topo: &RunTopology, script: &LoadScript, suffix: &str) -> Drive {
    let mut spec = topo.container(Role::LoadGenerator).unwrap().clone();
    spec.name = format!("{}-{suffix}", spec.name);
    rt.create(&spec, &topo.network).await.unwrap();
    rt.upload(&spec.name, &[script.file()]).await.unwrap();
    rt.start(&spec.name).await.unwrap();
    let limit = Duration::from_secs_f64(script.duration_s + script.request_timeout_s + 60.0);
    let code = rt.wait_exit(&spec.name, limit).await.unwrap();
    assert_eq!(
        code,
        Some(0),
        "{suffix}: {}",
        rt.logs(&spec.name).await.unwrap()
    );
    let raw = rt
        .download(&spec.name, commands::output_path(script.generator))
        .await
        .unwrap();
    rt.remove_container(&spec.name).await.unwrap();
    let mut csv = Vec::new();
    let summary =
        requests::convert_for(script.generator, raw.as_slice(), &mut csv, &mut |_| false).unwrap();
    let header =
        String::from_utf8_lossy(&csv[..csv.iter().position(|&b| b == b'\n').unwrap()]).into_owned();
    let requests = requests::read(csv.as_slice())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    Drive {
        kind: script.generator,
        summary,
        requests,
        header,
    }
}

/// k6, feedbench-load, k6: the same profile against the deployed contender.
async fn three_ways(
    rt: &Runtime,
    native: &LoadedPlan,
    k6: &LoadedPlan,
    topos: (&RunTopology, &RunTopology),
    profile: &str,
) -> [Drive; 3] {
    let k6_script = render(k6, profile, LoadGeneratorKind::K6);
    let native_script = render(native, profile, LoadGeneratorKind::Native);
    let a = drive(rt, topos.1, &k6_script, &format!("{profile}-k6a")).await;
    let n = drive(rt, topos.0, &native_script, &format!("{profile}-native")).await;
    let b = drive(rt, topos.1, &k6_script, &format!("{profile}-k6b")).await;
    [a, n, b]
}

/// The ramp's first rate and its step (tests/plans/docker/compare-load.yaml): equal.
const STEP: f64 = 40.0;

/// The ramp's warm-up at its first rate (tests/plans/docker/compare-load.yaml), s.
const WARMUP: u64 = 12;

/// The ramp's length: its warm-up and ten steps of 5 s.
const SECONDS: u64 = WARMUP + 50;

/// The seconds of the ramp at a load neither generator saturates: its warm-up after the
/// first two seconds, and its first step, all at 40/s (600 requests), a third of the
/// lowest knee seen (120/s; docs/load-generator.md).
const UNSATURATED: (u64, u64) = (2, WARMUP + 5);

/// Requests scheduled in `[from, from + len)` seconds of the ramp: `WARMUP` s at its first
/// rate, then steps of 5 s from it up by `STEP`.
fn ramp_scheduled(from: u64, len: u64) -> f64 {
    (from..from + len)
        .map(|s| STEP * (1 + s.saturating_sub(WARMUP) / 5) as f64)
        .sum()
}

/// Per second over the first `exact` seconds; per `group` seconds (a ramp's step) over the
/// rest of `seconds`.
fn assert_same_per_second(
    drives: &[Drive; 3],
    seconds: u64,
    exact: u64,
    group: u64,
    profile: &str,
) {
    let [a, n, b] = drives;
    let (pa, pn, pb) = (
        a.per_second(seconds),
        n.per_second(seconds),
        b.per_second(seconds),
    );
    let sum = |v: &[u64], from: u64| -> u64 {
        v[from as usize..(from + group).min(seconds) as usize]
            .iter()
            .sum()
    };
    // Past the knee k6 falls short of its own schedule (891 of 900 in a step, measured):
    // there feedbench-load must start the schedule's count (k6's first run below the knee is
    // the schedule, checked second by second), and each k6 run be within 2 % of it.
    let mut from = exact;
    while from < seconds {
        let nn = sum(&pn, from);
        let scheduled = ramp_scheduled(from, group.min(seconds - from));
        assert!(
            (nn as f64 - scheduled).abs() <= (scheduled * 0.01).max(1.0),
            "{profile}, seconds {from}..{}: native sent {nn} of {scheduled} scheduled",
            from + group
        );
        let (ka, kb) = (sum(&pa, from), sum(&pb, from));
        let within = |kk: u64| (nn as f64 - kk as f64).abs() <= nn as f64 * 0.02;
        assert!(
            within(ka) || within(kb),
            "{profile}, seconds {from}..{}: native sent {nn}, the k6 runs {ka} and {kb}",
            from + group
        );
        from += group;
    }
    // Second by second, feedbench-load is within 1 % or one of either k6 run: a k6 run that
    // stalls for a moment on the loaded host falls off its own schedule in that second (13
    // started of 30, measured in CI), and the other run shows the schedule k6 keeps.
    for s in 0..exact as usize {
        let within =
            |pk: &[u64]| (pn[s] as f64 - pk[s] as f64).abs() <= (pk[s] as f64 * 0.01).max(1.0);
        assert!(
            within(&pa) || within(&pb),
            "{profile}, second {s}: native sent {}, the k6 runs {} and {} (tolerance 1 % or one)\nnative {pn:?}\nk6 {pa:?}\nk6 {pb:?}",
            pn[s],
            pa[s],
            pb[s]
        );
    }
    eprintln!("{profile}: per second, k6 {pa:?}\n  native {pn:?}\n  k6 {pb:?}");
}

/// The first step of the ramp that breaks the objective, for each drive.
fn knee(loaded: &LoadedPlan, d: &Drive) -> Option<f64> {
    let Profile::StepRamp {
        start,
        step,
        step_duration,
        max,
        warmup,
        ..
    } = &loaded.plan.profiles["ramp"]
    else {
        panic!("ramp is a step ramp")
    };
    let (start, max) = match (start, max) {
        (feedbench::plan::units::Rate::Fixed(s), feedbench::plan::units::Rate::Fixed(m)) => {
            (*s, *m)
        }
        _ => panic!("fixed rates"),
    };
    let t0 = i128::from(d.t0()) + warmup.millis as i128 * 1_000_000;
    let sd = step_duration.millis as i128 * 1_000_000;
    let steps: Vec<Step> = (0..Profile::ramp_steps(start, *step, max))
        .map(|i| Step {
            rate: start + i as f64 * step,
            start_ns: t0 + i as i128 * sd,
            end_ns: t0 + (i as i128 + 1) * sd,
        })
        .collect();
    let o = &loaded.plan.study.objective;
    // Judged as the executor judges a run (`analysis::judging::CURRENT`): feedbench-load's
    // requests at their scheduled instants, either generator's dropped starts failed.
    let rule = feedbench_core::analysis::judging::CURRENT;
    let mut reqs: Vec<saturation::Request> = d.requests.iter().map(|r| r.judged(rule)).collect();
    reqs.extend(rule.drops(d.summary.scenario_start_ns, &d.summary.dropped_per_second));
    let objective = Objective {
        p99_ms: o.p99.as_secs_f64() * 1000.0,
        error_rate: o.error_rate.fraction(),
        window_ns: o.window.millis as i128 * 1_000_000,
    };
    // A knee, not a transient: one stalled second of a loaded 2-core host broke the 120/s
    // step of one run (knees 240, 120 and 200/s) while the steps after it met the
    // objective; the generators are compared on where the contender saturates, not on when
    // the host stalled.
    saturation::saturation(&reqs, &steps, &objective, 1).sustained_breach
}

pub fn native_and_k6_send_the_same_load_and_measure_the_same_latencies_and_knee() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let engine = rt.block_on(common::engine());
    rt.block_on(common::infrastructure_images());
    rt.block_on(common::plan_images(PLAN));
    let native = load_file(&common::repo().join(PLAN), None).unwrap();
    let k6 = with_k6(&native);
    let run = expand(&native.plan).remove(0);
    let native_topo = of_loaded(
        &native,
        &run,
        &feedbench::spec::topology::Instance::for_tests(),
    )
    .unwrap();
    let k6_topo = of_loaded(&k6, &run, &feedbench::spec::topology::Instance::for_tests()).unwrap();
    rt.block_on(async {
        deploy(&engine, &native_topo, Duration::from_secs(240), None)
            .await
            .unwrap();
        let ramp = three_ways(&engine, &native, &k6, (&native_topo, &k6_topo), "ramp").await;
        teardown(&engine, &native_topo).await.unwrap();
        assert_eq!(common::leftovers(&engine, STUDY).await, (vec![], vec![]));

        // The same arrivals, second by second below the knee (past it k6 itself falls off its
        // schedule by a few requests a second as its requests slow: then step by step), and
        // the same requests (route by route). Knees are sustained breaches (`sustained_breach`).
        let knees: Vec<Option<f64>> = ramp.iter().map(|d| knee(&native, d)).collect();
        eprintln!(
            "ramp knees (first sustained breach, /s): k6 {:?}, native {:?}, k6 {:?}",
            knees[0], knees[1], knees[2]
        );
        // The ramp: `WARMUP` s at its first rate, then 5 s steps of `STEP` more.
        let k6_knee = knees[0]
            .into_iter()
            .chain(knees[2])
            .fold(f64::INFINITY, f64::min);
        let below = if k6_knee.is_finite() {
            WARMUP + 5 * ((k6_knee / STEP) as u64 - 1)
        } else {
            SECONDS
        };
        assert_same_per_second(&ramp, SECONDS, below.min(SECONDS), 5, "ramp");
        {
            let [a, n, b] = &ramp;
            for k in [a, b] {
                let (rk, rn) = (k.routes(), n.routes());
                // The same draws (tests/offline/load_draws.rs checks them one by one); k6 started a
                // few requests fewer past the knee, so within 1 % or one.
                for (route, count) in &rk {
                    let other = rn.get(route).copied().unwrap_or(0);
                    assert!(
                        count.abs_diff(other) as f64 <= (*count as f64 * 0.01).max(1.0),
                        "{route}: k6 {count}, native {other}"
                    );
                }
            }
            assert_eq!(n.summary.ended.as_deref(), Some("completed"));
            // requests.csv alike: k6's columns, and the native one's `scheduled_ns` after them.
            assert_eq!(
                format!("{},{}", a.header, requests::SCHEDULED_COLUMN),
                n.header
            );
            assert!(n.requests.iter().all(|r| r.scheduled_ns.is_some()));
            assert_eq!(
                (a.kind, n.kind),
                (LoadGeneratorKind::K6, LoadGeneratorKind::Native)
            );
        }

        // Latencies at a load neither saturates: near a k6 run's (below), and
        // no start dropped up to there (past the ramp's knee both may drop at their cap, as
        // they should).
        let [a, n, b] = &ramp;
        for d in [a, n, b] {
            let dropped = &d.summary.dropped_per_second;
            let early: u64 = dropped.iter().take(UNSATURATED.1 as usize).sum();
            assert_eq!(early, 0, "{:?} dropped starts: {dropped:?}", d.kind);
        }
        let (pa, pn, pb) = (
            a.percentiles(UNSATURATED),
            n.percentiles(UNSATURATED),
            b.percentiles(UNSATURATED),
        );
        eprintln!("ramp at 40/s, p50/p99 ms: k6 {pa:?}, native {pn:?}, k6 {pb:?}");
        // Within 50 % + 2 ms of either k6 run's, as the rates are checked against either: a
        // p99 of 600 requests is their seventh slowest, which one stall of a loaded 2-core
        // host moves (k6 17.0 and 32.4 ms in one CI run, feedbench-load 9.5 ms between them,
        // outside 50 % + 2 ms of their mean). Against the nearer run the bound keeps both
        // sides: a figure below half of both k6 runs' less 2 ms, or above 1.5 times both
        // plus 2 ms, fails.
        let near = |native: f64, k6: f64| (native - k6).abs() <= 0.5 * k6 + 2.0;
        for (name, native, (k6a, k6b)) in [("p50", pn.0, (pa.0, pb.0)), ("p99", pn.1, (pa.1, pb.1))]
        {
            assert!(
                near(native, k6a) || near(native, k6b),
                "{name}: native {native:.2} ms, k6 {k6a:.2} and {k6b:.2} ms"
            );
        }

        // The knee: the same step as a k6 run's, or the adjacent one.
        assert!(
            knees[0].is_some() || knees[2].is_some(),
            "the ramp should break the objective under k6: {knees:?}"
        );
        let step = STEP;
        let near = |x: Option<f64>, y: Option<f64>| match (x, y) {
            (Some(x), Some(y)) => (x - y).abs() <= step,
            _ => false,
        };
        assert!(
            near(knees[1], knees[0]) || near(knees[1], knees[2]),
            "native's knee {:?} is not within one step of k6's {:?} / {:?}",
            knees[1],
            knees[0],
            knees[2]
        );
    });
}
