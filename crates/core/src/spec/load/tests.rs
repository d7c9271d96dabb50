//! Unit tests of the load script and its schedule.

use indexmap::IndexMap;
use serde_json::json;

use super::*;
use crate::plan::model::{LoadGeneratorKind, Objective, Profile, Workload};
use crate::spec::commands::{k6_args, k6_env, LOAD_SCRIPT};

fn profile(v: serde_json::Value) -> Profile {
    serde_json::from_value(v).expect("profile")
}

fn workload() -> Workload {
    serde_json::from_value(json!({
        "routes": {
            "feed": {"path": "/feed?viewer={viewer}", "weight": 8},
            "write": {"method": "POST", "path": "/posts", "weight": 2,
                      "body": "{\"author\": {viewer}, \"post\": {post}}"}
        },
        "ids": {"viewer": {"min": 1, "max": 1000}, "post": {"min": 5, "max": 5}}
    }))
    .expect("workload")
}

fn objective() -> Objective {
    serde_json::from_value(json!({"p99": "500ms", "error-rate": "1%", "window": "10s"}))
        .expect("objective")
}

fn render_with(
    p: &Profile,
    w: &Workload,
    saturation: &IndexMap<Name, f64>,
) -> Result<LoadScript, ScriptError> {
    let o = objective();
    render(&LoadSpec {
        profile: p,
        workload: w,
        objective: &o,
        saturation,
        base_url: "http://balancer:8080",
        seed: 7,
        max_vus: None,
        generator: LoadGeneratorKind::K6,
        max_lag_ms: 250,
    })
}

fn load(p: serde_json::Value) -> LoadScript {
    render_with(&profile(p), &workload(), &IndexMap::new()).expect("renders")
}

/// The JSON data in a rendered script.
fn plan_data(script: &str) -> serde_json::Value {
    let line = script
        .lines()
        .find(|l| l.starts_with("const PLAN = "))
        .expect("PLAN line");
    let json = line
        .trim_start_matches("const PLAN = ")
        .trim_end_matches(';');
    serde_json::from_str(json).expect("PLAN is JSON")
}

#[test]
fn constant_is_one_constant_arrival_rate_including_the_warmup() {
    let l = load(json!({"constant": {"rate": "35.7", "duration": "40s", "warmup": "5s"}}));
    assert_eq!(l.executor, "constant-arrival-rate");
    assert_eq!((l.measured_start_s, l.duration_s), (5.0, 45.0));
    assert!((l.scheduled_arrivals - 35.7 * 45.0).abs() < 1e-9);
    let s = &plan_data(&l.script)["scenario"];
    assert_eq!(s["rate"], 35_700);
    assert_eq!(s["timeUnit"], "1000s");
    assert_eq!(s["duration"], "45000ms");
    assert_eq!(scheduled_rate_at(&l, 0.0), 35.7);
    assert_eq!(scheduled_rate_at(&l, 44.9), 35.7);
    assert_eq!(scheduled_rate_at(&l, 45.0), 0.0);
}

#[test]
fn step_ramp_holds_each_step_and_jumps_instantly() {
    let l = load(
        json!({"step-ramp": {"start": "10", "step": 10, "step-duration": "10s", "max": "40", "warmup": "5s"}}),
    );
    assert_eq!(l.executor, "ramping-arrival-rate");
    assert_eq!(l.duration_s, 45.0);
    assert_eq!(
        l.stages(),
        vec![
            (5.0, 10.0),
            (10.0, 10.0),
            (0.0, 20.0),
            (10.0, 20.0),
            (0.0, 30.0),
            (10.0, 30.0),
            (0.0, 40.0),
            (10.0, 40.0)
        ]
    );
    assert_eq!(
        l.scheduled_arrivals,
        5.0 * 10.0 + 100.0 + 200.0 + 300.0 + 400.0
    );
    assert_eq!(scheduled_rate_at(&l, 14.999), 10.0);
    assert_eq!(scheduled_rate_at(&l, 15.0), 20.0);
    assert_eq!(scheduled_rate_at(&l, 44.0), 40.0);
    // Over an interval: the seconds on both sides of a step's edge, and past the end.
    assert!((scheduled_rate_between(&l, 12.0, 17.0) - 14.0).abs() < 1e-9);
    assert!((scheduled_rate_between(&l, 40.0, 50.0) - 20.0).abs() < 1e-9);
    let s = &plan_data(&l.script)["scenario"];
    assert_eq!(s["startRate"], 10_000);
    assert_eq!(s["stages"][2], json!({"duration": "0ms", "target": 20_000}));
}

#[test]
fn diurnal_follows_the_cosine_from_trough_to_peak_and_back() {
    let l = load(
        json!({"diurnal": {"base": "100", "period": "24m", "peak": "100%", "trough": "20%", "cycles": 2, "warmup": "30s"}}),
    );
    assert_eq!(l.executor, "ramping-arrival-rate");
    assert_eq!(l.duration_s, 30.0 + 2.0 * 1440.0);
    assert_eq!(l.schedule.start_rate, 20.0);
    assert_eq!(l.schedule.stages.len(), 1 + 2 * 48);
    for (t, expected) in [
        (0.0, 20.0),
        (30.0 + 720.0, 100.0),
        (30.0 + 1440.0, 20.0),
        (30.0 + 1440.0 + 360.0, 60.0),
    ] {
        assert!(
            (scheduled_rate_at(&l, t) - expected).abs() < 0.01,
            "rate at {t}"
        );
    }
    // Linear pieces stay within 0.3% of the swing from the cosine.
    for i in 0..1440 {
        let t = i as f64;
        let exact = 100.0 * (0.2 + 0.8 * (1.0 - (std::f64::consts::TAU * t / 1440.0).cos()) / 2.0);
        assert!(
            (scheduled_rate_at(&l, 30.0 + t) - exact).abs() < 0.8 * 0.003 * 100.0,
            "at {t}"
        );
    }
    // The mean of a cosine is the midpoint.
    let expected = 30.0 * 20.0 + 2.0 * 1440.0 * 60.0;
    assert!((l.scheduled_arrivals - expected).abs() / expected < 0.001);
}

#[test]
fn soak_is_constant() {
    let l = load(json!({"soak": {"rate": "5", "duration": "20m"}}));
    assert_eq!(
        (l.executor, l.measured_start_s, l.duration_s),
        ("constant-arrival-rate", 0.0, 1200.0)
    );
}

#[test]
fn shares_of_saturation_are_resolved() {
    let p = profile(json!({"constant": {"rate": "70% of ramp", "duration": "10s"}}));
    let err = render_with(&p, &workload(), &IndexMap::new()).unwrap_err();
    assert!(
        matches!(err, ScriptError::MissingSaturation { .. }),
        "{err}"
    );
    let sat: IndexMap<Name, f64> = [("ramp".parse().unwrap(), 50.0)].into_iter().collect();
    let l = render_with(&p, &workload(), &sat).unwrap();
    assert_eq!(l.schedule.start_rate, 35.0);
}

#[test]
fn bad_rates_are_errors_not_panics() {
    let sat: IndexMap<Name, f64> = [("ramp".parse().unwrap(), f64::NAN)].into_iter().collect();
    for p in [
        json!({"constant": {"rate": "70% of ramp", "duration": "10s"}}),
        json!({"constant": {"rate": "0.0001", "duration": "10s"}}),
        json!({"step-ramp": {"start": "1", "step": 0.00001, "step-duration": "1s", "max": "100"}}),
    ] {
        assert!(
            render_with(&profile(p.clone()), &workload(), &sat).is_err(),
            "{p}"
        );
    }
}

#[test]
fn vus_follow_littles_law() {
    // 40/s, p99 500 ms: 40 in flight at twice the bound + 5; timeout 5 s: 200 + 5.
    assert_eq!(size_vus(40.0, 40.0, 0.5, None), (45, 205, 5000));
    assert_eq!(size_vus(40.0, 40.0, 0.5, Some(20)), (20, 20, 5000));
    // The timeout is clamped to [1 s, 60 s].
    assert_eq!(size_vus(10.0, 10.0, 0.01, None).2, 1000);
    assert_eq!(size_vus(10.0, 10.0, 30.0, None).2, 60_000);
    // Pre-allocated for the start, allowed up to the end.
    assert_eq!(size_vus(10.0, 40.0, 0.5, None), (15, 205, 5000));
    let l = load(
        json!({"step-ramp": {"start": "10", "step": 10, "step-duration": "10s", "max": "40"}}),
    );
    // The whole ramp is within its first minute: 40/s.
    assert_eq!(
        (l.pre_allocated_vus, l.max_vus, l.request_timeout_s),
        (45, 205, 5.0)
    );
}

#[test]
fn a_ramp_far_past_any_knee_pre_allocates_for_its_first_minute_only() {
    // 5/s up by 5/s every 20 s to 2,000/s: the first minute runs 5, 10 and 15/s.
    let l = load(
        json!({"step-ramp": {"start": "5", "step": 5, "step-duration": "20s", "max": "2000"}}),
    );
    assert_eq!(l.schedule.max_rate(), 2000.0);
    assert_eq!(l.schedule.max_rate_before(PRE_ALLOCATION_S), 15.0);
    // 15/s × 0.5 s × 2 + 5, not the 2,005 that 2,000/s would pre-allocate.
    assert_eq!(l.pre_allocated_vus, 20);
    assert_eq!(l.max_vus, 2000 * 5 + 5);
    let (_, scenario) = script::scenario(&script::ScriptParams {
        kind: "step-ramp",
        base_url: "http://balancer:8080",
        seed: 1,
        schedule: &l.schedule,
        pre_allocated_vus: l.pre_allocated_vus,
        max_vus: l.max_vus,
        timeout_ms: 5000,
    });
    assert_eq!(scenario["preAllocatedVUs"], 20);
    assert_eq!(scenario["maxVUs"], 10_005);
    // A slow start: 0.5/s and up by 0.5/s.
    let l = load(
        json!({"step-ramp": {"start": "0.5", "step": 0.5, "step-duration": "60s", "max": "200"}}),
    );
    assert_eq!(l.schedule.max_rate_before(PRE_ALLOCATION_S), 0.5);
    assert_eq!(l.pre_allocated_vus, 6);
}

#[test]
fn the_highest_rate_before_an_instant_counts_the_ramps_up_to_it() {
    let s = Schedule {
        start_rate: 2.0,
        stages: vec![
            Stage {
                duration_s: 10.0,
                target: 2.0,
            },
            Stage {
                duration_s: 20.0,
                target: 12.0,
            },
            Stage {
                duration_s: 0.0,
                target: 50.0,
            },
            Stage {
                duration_s: 10.0,
                target: 50.0,
            },
        ],
    };
    assert_eq!(s.max_rate_before(10.0), 2.0);
    // Half-way up the linear ramp from 2 to 12.
    assert_eq!(s.max_rate_before(20.0), 7.0);
    // The jump at 30 s is not before 30 s.
    assert_eq!(s.max_rate_before(30.0), 12.0);
    assert_eq!(s.max_rate_before(30.5), 50.0);
    assert_eq!(s.max_rate(), 50.0);
}

#[test]
fn placeholders_are_split_out_and_json_braces_are_text() {
    let segs = segments("{\"author\": {viewer}, \"x\": {not a name}, \"y\": {}}{post}");
    assert_eq!(
        segs,
        vec![
            Segment::Text("{\"author\": ".into()),
            Segment::Id {
                id: "viewer".into()
            },
            Segment::Text(", \"x\": {not a name}, \"y\": {}}".into()),
            Segment::Id { id: "post".into() },
        ]
    );
    assert_eq!(segments("/plain"), vec![Segment::Text("/plain".into())]);
    assert_eq!(segments("{"), vec![Segment::Text("{".into())]);
    assert_eq!(segments(""), vec![]);
}

#[test]
fn plan_values_stay_data() {
    let mut w = workload();
    let hostile = "\"});globalThis.x=1;//</script>\u{2028}\u{2029}`${ X }`é😀\\";
    w.routes.get_index_mut(1).unwrap().1.body =
        Some(format!("{{\"t\": \"{hostile}\", \"a\": {{viewer}}}}"));
    let l = render_with(
        &profile(json!({"constant": {"rate": "1", "duration": "1s"}})),
        &w,
        &IndexMap::new(),
    )
    .unwrap();
    assert!(l.script.is_ascii(), "non-ASCII is escaped");
    let data = plan_data(&l.script);
    let body = &data["routes"][1]["body"];
    assert_eq!(body[0], json!(format!("{{\"t\": \"{hostile}\", \"a\": ")));
    assert_eq!(body[1], json!({"id": "viewer"}));
    assert!(!l.script.contains("globalThis.x=1;//</script>\""));
}

#[test]
fn workload_mistakes_are_errors() {
    let p = profile(json!({"constant": {"rate": "1", "duration": "1s"}}));
    let mut w = workload();
    w.routes.get_index_mut(0).unwrap().1.path = "/feed/{viewr}".into();
    assert!(matches!(
        render_with(&p, &w, &IndexMap::new()),
        Err(ScriptError::UnknownId { .. })
    ));
    let mut w = workload();
    w.ids.get_index_mut(0).unwrap().1.max = u64::MAX;
    assert!(matches!(
        render_with(&p, &w, &IndexMap::new()),
        Err(ScriptError::BadIdRange { .. })
    ));
    let mut w = workload();
    w.routes.clear();
    assert!(matches!(
        render_with(&p, &w, &IndexMap::new()),
        Err(ScriptError::EmptyWorkload)
    ));
    let o = objective();
    let spec = LoadSpec {
        profile: &p,
        workload: &workload(),
        objective: &o,
        saturation: &IndexMap::new(),
        base_url: "balancer:8080",
        seed: 1,
        max_vus: None,
        generator: LoadGeneratorKind::K6,
        max_lag_ms: 250,
    };
    assert!(matches!(render(&spec), Err(ScriptError::BadBaseUrl(_))));
}

#[test]
fn the_command_writes_nanosecond_csv_and_sends_no_usage_report() {
    let args = k6_args();
    assert!(args
        .windows(2)
        .any(|w| w == ["--out", "csv=/home/k6/k6.csv"]));
    assert!(args.contains(&"--no-usage-report".to_string()));
    assert_eq!(args.last().map(String::as_str), Some(LOAD_SCRIPT));
    assert!(k6_env().contains(&("K6_CSV_TIME_FORMAT".into(), "unix_nano".into())));
}

#[test]
fn the_same_seed_renders_the_same_script() {
    let a = load(json!({"constant": {"rate": "3", "duration": "2s"}}));
    let b = load(json!({"constant": {"rate": "3", "duration": "2s"}}));
    assert_eq!(a.script, b.script);
    assert_eq!(a.file().path, LOAD_SCRIPT);
}
