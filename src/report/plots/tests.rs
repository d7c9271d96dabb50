//! The plots drawn from small reports: what each shows, and "no data" where it has none.

use std::collections::BTreeMap;

use feedbench_core::report::faults::Instants;
use feedbench_core::report::latency::Second;
use feedbench_core::report::rows::{RunKey, NOT_OBSERVED, NOT_RECOVERED};
use feedbench_core::rundir::frame::{
    Cap, FaultWindow, Frame, FrameObjective, FrameStep, RecoveryRule, Span,
};

use super::*;

const S: i128 = 1_000_000_000;
const T0: i128 = 1_700_000_000 * S;

fn frame(contender: &str, profile: &str, fault: Option<&str>) -> Frame {
    let caps: BTreeMap<String, Cap> = [
        ("s-replica-1", "replica-1"),
        ("s-replica-2", "replica-2"),
        ("s-balancer", "balancer"),
    ]
    .iter()
    .map(|(n, r)| {
        (
            n.to_string(),
            Cap {
                role: r.to_string(),
                cpus: 1.0,
            },
        )
    })
    .collect();
    Frame {
        contender: contender.into(),
        variant: None,
        profile: profile.into(),
        fault: fault.map(str::to_string),
        repetition: 1,
        measured: Span {
            start_ns: T0,
            end_ns: T0 + 60 * S,
            offered_arrivals: 6000.0,
        },
        steps: Vec::new(),
        objective: FrameObjective {
            p99_ms: 50.0,
            failed_share: 0.01,
            window_ns: 10 * S,
        },
        fault_window: fault.map(|f| FaultWindow {
            name: f.into(),
            injection: "kill-replica".into(),
            observe_ns: 20 * S,
            server: Some("replica-1".into()),
        }),
        caps,
        recovery: RecoveryRule {
            window_ns: 10 * S,
            step_ns: S / 10,
            hold_ns: 10 * S,
            throughput_tolerance: 0.05,
            latency_tolerance: 0.1,
        },
        stopped: None,
        confirm_steps: None,
        expected_4xx: BTreeMap::new(),
        judged_by: Default::default(),
    }
}

fn key_of(run: &str, frame: &Frame) -> RunKey {
    feedbench_core::report::run::key_of(run, frame)
}

/// A row at `(step_rate, container, definition)`.
fn row(
    key: &RunKey,
    (step_rate, container, definition): (Option<f64>, &str, &str),
    metric: &str,
    value: Option<f64>,
    unit: &str,
    note: &str,
) -> Row {
    Row {
        key: key.clone(),
        step_rate,
        second: None,
        container: container.into(),
        definition: definition.into(),
        metric: metric.into(),
        value,
        unit: unit.into(),
        note: note.into(),
    }
}

fn usage_rows(key: &RunKey, efficiency: f64, rss: Option<f64>) -> Vec<Row> {
    vec![
        row(
            key,
            (None, REPLICAS, "measured"),
            "requests_per_core_second",
            Some(efficiency),
            "1/core·s",
            "",
        ),
        row(
            key,
            (None, REPLICAS, "measured"),
            "memory_working_set_peak",
            rss,
            "bytes",
            if rss.is_none() { "none" } else { "" },
        ),
    ]
}

fn cpu_series() -> Vec<(String, Vec<(f64, f64)>)> {
    ["balancer", "replica-1", "replica-2"]
        .iter()
        .enumerate()
        .map(|(k, role)| {
            let pts = (-5..60)
                .map(|t| (t as f64, 20.0 + 10.0 * k as f64 + (t % 7) as f64))
                .collect();
            (role.to_string(), pts)
        })
        .collect()
}

fn ramp_run() -> RunFigures {
    let run = "feed-rs/ramp/r1";
    let mut frame = frame("feed-rs", "ramp", None);
    let rates = [100.0, 200.0, 300.0, 400.0, 500.0];
    frame.steps = rates
        .iter()
        .enumerate()
        .map(|(k, &rate)| FrameStep {
            rate,
            start_ns: T0 + 12 * S * k as i128,
            end_ns: T0 + 12 * S * (k as i128 + 1),
            offered_arrivals: rate * 12.0,
        })
        .collect();
    let key = key_of(run, &frame);
    let mut rows = Vec::new();
    for (k, &rate) in rates.iter().enumerate() {
        let s = Some(rate);
        rows.push(row(&key, (s, "", ""), "step_offered_rate", s, "1/s", ""));
        let p99 = [8.0, 9.0, 12.0, 70.0, 900.0][k];
        rows.push(row(&key, (s, "", ""), "step_p99", Some(p99), "ms", ""));
        let failed = [0.0, 0.0, 0.001, 0.02, 0.3][k];
        rows.push(row(
            &key,
            (s, "", ""),
            "step_failed_share",
            Some(failed),
            "ratio",
            "",
        ));
    }
    for (d, sat) in DEFINITIONS.iter().zip([300.0, 300.0, 300.0, 300.0, 400.0]) {
        rows.push(row(&key, (None, "", d), "saturation", Some(sat), "1/s", ""));
    }
    rows.extend(usage_rows(&key, 5200.0, Some(96.0 * 1024.0 * 1024.0)));
    RunFigures {
        key,
        frame,
        rows,
        seconds: Vec::new(),
        instants: None,
        cpu: cpu_series(),
        oom_kills: Vec::new(),
        recorded_objective: None,
        seen_down: None,
    }
}

fn fault_run() -> RunFigures {
    let run = "feed-rs/steady+kill/r1";
    let frame = frame("feed-rs", "steady", Some("kill"));
    let key = key_of(run, &frame);
    let seconds: Vec<Second> = (0..60)
        .map(|k| {
            let hit = (20..24).contains(&k);
            Second {
                start_ns: T0 + k * S,
                throughput: if hit { 50 } else { 100 },
                p50: Some(3.0),
                p99: if k == 21 {
                    None
                } else if hit {
                    Some(400.0)
                } else {
                    Some(9.0)
                },
                failed: if hit { 5 } else { 0 },
            }
        })
        .collect();
    let mut rows = vec![
        row(
            &key,
            (None, "", ""),
            "detect_balancer_down",
            Some(2.0),
            "s",
            "",
        ),
        row(
            &key,
            (None, "", ""),
            "detect_failed_request",
            Some(0.1),
            "s",
            "",
        ),
        row(
            &key,
            (None, "", ""),
            "detect_objective_window",
            Some(0.5),
            "s",
            "",
        ),
        row(
            &key,
            (None, "", "clear"),
            "time_to_recover",
            Some(3.5),
            "s",
            "",
        ),
        row(
            &key,
            (None, "", "restart"),
            "time_to_recover",
            None,
            "s",
            NOT_RECOVERED,
        ),
        row(
            &key,
            (None, "", ""),
            "control_throughput",
            Some(100.0),
            "1/s",
            "",
        ),
    ];
    rows.extend(usage_rows(&key, 4800.0, None));
    RunFigures {
        key,
        frame,
        rows,
        seconds,
        instants: Some(Instants {
            applied: T0 + 20 * S,
            cleared: Some(T0 + 25 * S),
            restart: Some(T0 + 27 * S),
            observe_end: T0 + 45 * S,
            down: None,
        }),
        cpu: cpu_series(),
        oom_kills: Vec::new(),
        recorded_objective: None,
        seen_down: None,
    }
}

fn report(runs: Vec<RunFigures>) -> StudyReport {
    StudyReport::of_runs("s", runs, Vec::new())
}

/// To look at the plots: `FEEDBENCH_PLOT_DIR=/tmp/plots cargo test -p feedbench --lib
/// plots` writes every test's SVGs there.
fn dump(plots: &[Plot], prefix: &str) {
    if let Some(dir) = std::env::var_os("FEEDBENCH_PLOT_DIR") {
        std::fs::create_dir_all(&dir).unwrap();
        for p in plots {
            let path = std::path::Path::new(&dir).join(format!("{prefix}{}.svg", p.id));
            std::fs::write(path, &p.svg).unwrap();
        }
    }
}

fn get<'a>(plots: &'a [Plot], id: &str) -> &'a Plot {
    plots
        .iter()
        .find(|p| p.id == id)
        .unwrap_or_else(|| panic!("no plot `{id}` in {:?}", ids(plots)))
}

fn ids(plots: &[Plot]) -> Vec<&str> {
    plots.iter().map(|p| p.id.as_str()).collect()
}

fn drawn(svg: &str) -> usize {
    ["<polyline", "<path", "<rect", "<circle", "<polygon"]
        .iter()
        .map(|t| svg.matches(t).count())
        .sum()
}

fn assert_has(plot: &Plot, wanted: &[&str]) {
    for t in wanted {
        assert!(
            plot.svg.contains(t),
            "`{}` lacks `{t}`; its texts: {:#?}",
            plot.id,
            texts(&plot.svg)
        );
    }
}

fn texts(svg: &str) -> Vec<&str> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| t.split_once('>').and_then(|(_, r)| r.split_once("</text>")))
        .map(|(t, _)| t.trim())
        .collect()
}

fn assert_standalone(plot: &Plot) {
    assert!(plot.svg.starts_with("<svg"), "{}", plot.id);
    assert!(plot.svg.ends_with("</svg>"), "{}", plot.id);
    assert!(!plot.svg.contains("<?xml"), "{}", plot.id);
    assert!(plot.svg.contains("xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(plot
        .id
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'));
}

#[test]
fn a_ramp_and_a_fault_run_get_every_plot_with_axes_legends_and_data() {
    let out = plots(&report(vec![ramp_run(), fault_run()])).unwrap();
    dump(&out, "");
    assert_eq!(
        ids(&out),
        [
            "study-efficiency",
            "study-memory",
            "ramp-feed-rs-ramp-r1",
            "cpu-feed-rs-ramp-r1",
            "fault-feed-rs-steady-kill-r1",
            "cpu-feed-rs-steady-kill-r1",
        ]
    );
    for p in &out {
        assert_standalone(p);
        assert!(p.svg.contains(&p.title.replace('\'', "&apos;")), "{}", p.id);
        assert!(drawn(&p.svg) > 5, "{}", p.id);
        assert!(!texts(&p.svg).contains(&"no data"), "{}", p.id);
    }

    let ramp = get(&out, "ramp-feed-rs-ramp-r1");
    assert_has(
        ramp,
        &[
            "offered rate (1/s)",
            "p99 latency (ms, log scale)",
            "failed share (%)",
            "p99 per step (left axis)",
            "failed share per step (right axis)",
            "objective: p99 ≤ 50 ms",
            "objective-windows: 300",
            "throughput-knee: 400",
        ],
    );
    // Two lines (p99, failed share), the bound, and the saturation marks.
    assert!(ramp.svg.matches("<polyline").count() >= 3);
    assert!(ramp.svg.matches("<circle").count() >= 5);

    let fault = get(&out, "fault-feed-rs-steady-kill-r1");
    assert_has(
        fault,
        &[
            "time since the measured phase&apos;s start (s)",
            "throughput (1/s)",
            "p99 latency (ms, log scale)",
            "throughput per second (left axis)",
            "p99 per second (right axis)",
            "fault: applied → cleared",
            "observe window",
            "control throughput: 100 1/s",
            "detected, balancer down: +2 s",
            "detected, failed request: +0.1 s",
            "detected, objective window: +0.5 s",
            "recovered: clear + 3.5 s",
            "recovered (restart): not recovered",
            "replica back in service",
        ],
    );
    // The p99 line has a gap at second 21: two polylines for it, one for throughput.
    assert!(fault.svg.matches("<polyline").count() >= 3);

    let cpu = get(&out, "cpu-feed-rs-ramp-r1");
    assert_has(
        cpu,
        &[
            "CPU (% of the container&apos;s cap)",
            "time since the measured phase&apos;s start (s)",
            "balancer",
            "replica-1",
            "replica-2",
            "the cap (100 %)",
            "measured start",
        ],
    );

    let eff = get(&out, "study-efficiency");
    assert_has(
        eff,
        &[
            "requests served per replica core-second (1/core·s)",
            "feed-rs · ramp",
            "feed-rs · steady + kill",
            "5200 (n = 1)",
            "4800 (n = 1)",
            "bar: the median over repetitions",
        ],
    );
    // The steady run had no working set: its bar says so, the ramp run's is drawn.
    let mem = get(&out, "study-memory");
    assert_has(
        mem,
        &[
            "peak working set of the replicas",
            "(MiB)",
            "96 (n = 1)",
            "no data (n = 0)",
        ],
    );
}

#[test]
fn an_empty_report_and_empty_runs_give_no_data_plots_not_errors() {
    let out = plots(&report(Vec::new())).unwrap();
    dump(&out, "empty-");
    assert_eq!(ids(&out), ["study-efficiency", "study-memory"]);
    for p in &out {
        assert_standalone(p);
        assert!(texts(&p.svg).contains(&"no data"), "{}", p.id);
    }

    let mut ramp = ramp_run();
    ramp.rows.clear();
    ramp.cpu.clear();
    let mut fault = fault_run();
    fault.rows.clear();
    fault.seconds.clear();
    fault.instants = None;
    fault.cpu = vec![("replica-1".into(), Vec::new())];
    let out = plots(&report(vec![ramp, fault])).unwrap();
    dump(&out, "empty-runs-");
    assert_eq!(out.len(), 6);
    for p in &out {
        assert_standalone(p);
        assert!(texts(&p.svg).contains(&"no data"), "{}", p.id);
    }
}

#[test]
fn a_fault_without_its_instants_and_a_ramp_not_reached_still_draw() {
    let mut fault = fault_run();
    // What the core gives when no fault-applied event came: empty rows, not observed.
    fault.instants = None;
    fault.rows.retain(|r| r.metric != "detect_balancer_down");
    for r in fault
        .rows
        .iter_mut()
        .filter(|r| r.metric.starts_with("detect_") || r.metric == "time_to_recover")
    {
        r.value = None;
        r.note = NOT_OBSERVED.into();
    }
    let mut ramp = ramp_run();
    for r in ramp.rows.iter_mut().filter(|r| r.metric == "saturation") {
        r.value = Some(500.0);
        r.note = NOT_REACHED.into();
    }
    ramp.rows
        .retain(|r| !(r.metric == "saturation" && r.definition == "p99-only"));
    let out = plots(&report(vec![ramp, fault])).unwrap();
    dump(&out, "partial-");
    let f = get(&out, "fault-feed-rs-steady-kill-r1");
    assert_has(
        f,
        &[
            "fault never applied (no fault-applied event)",
            "detected, balancer down: no row",
            "detected, failed request: not observed",
            "recovered (clear): not observed",
        ],
    );
    let r = get(&out, "ramp-feed-rs-ramp-r1");
    assert_has(
        r,
        &["objective-windows: ≥ 500, not reached", "p99-only: no row"],
    );
}

#[test]
fn three_repetitions_give_bars_with_their_interval_per_contender() {
    let mut runs = Vec::new();
    for (contender, base) in [("feed-rs", 5000.0), ("feed-go.cache", 3000.0)] {
        for rep in 1..=3u32 {
            let mut run = ramp_run();
            let mut frame = frame(contender, "ramp", None);
            frame.repetition = rep;
            frame.steps = run.frame.steps.clone();
            frame.variant = contender.split_once('.').map(|(_, v)| v.to_string());
            frame.contender = contender.split('.').next().unwrap().into();
            let key = key_of(&format!("{contender}/ramp/r{rep}"), &frame);
            let rss = 64.0 * 1024.0 * 1024.0 * f64::from(rep);
            run.rows = usage_rows(&key, base + 100.0 * f64::from(rep), Some(rss));
            run.key = key;
            run.frame = frame;
            runs.push(run);
        }
    }
    let out = plots(&report(runs)).unwrap();
    dump(&out, "three-");
    let eff = get(&out, "study-efficiency");
    assert_has(
        eff,
        &[
            "feed-go.cache · ramp",
            "feed-rs · ramp",
            "5200 (n = 3)",
            "3200 (n = 3)",
            "exact interval of the median (n ≥ 3)",
        ],
    );
    // Two bars, their intervals (three strokes each), and the legend's swatches.
    assert!(eff.svg.matches("<rect").count() >= 4);
    assert!(eff.svg.matches("<polyline").count() >= 6);
    assert_has(get(&out, "study-memory"), &["128 (n = 3)"]);
    assert!(get(&out, "ramp-feed-go-cache-ramp-r2")
        .svg
        .contains("no data"));
}

#[test]
fn ids_are_slugs_and_unique() {
    assert_eq!(
        slug("feed-go.cache/steady+kill/r2"),
        "feed-go-cache-steady-kill-r2"
    );
    assert_eq!(slug("//"), "run");
    let mut used = BTreeSet::new();
    assert_eq!(unique(&mut used, "a-b".into()), "a-b");
    assert_eq!(unique(&mut used, "a-b".into()), "a-b-2");
    assert_eq!(
        standalone("<?xml version=\"1.0\"?>\n<svg></svg>\n"),
        "<svg></svg>"
    );
    assert_eq!(num(1234.4), "1234");
    assert_eq!(num(0.5), "0.5");
    assert_eq!(num(12.25), "12.2");
    assert_eq!(num(3.0), "3");
    let (bold, light) = log_ticks(&(3.0..80.0));
    assert_eq!(bold, [5.0, 10.0, 20.0, 50.0]);
    assert_eq!(
        light,
        [3.0, 4.0, 6.0, 7.0, 8.0, 9.0, 30.0, 40.0, 60.0, 70.0, 80.0]
    );
}
