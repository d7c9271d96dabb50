//! The scaling rules on the study's own numbers: a 60 s step at 0.25 is 15 s, and so on.

use super::*;
use crate::plan::load_str;
use crate::plan::model::Profile;

const MINIMAL: &str = include_str!("../../../../../tests/plans/valid/minimal.yaml");

/// The minimal plan with the full study's profiles, fault timings and window.
fn study_like() -> String {
    let text = MINIMAL
        .replace("window: 10s", "window: 60s")
        .replace(
            "  ramp:\n    step-ramp: {start: 10, step: 10, step-duration: 10s, max: 30}\n  baseline:\n    constant: {rate: 70% of ramp, duration: 60s}\n",
            "  ramp:\n    step-ramp: {start: 5, step: 5, step-duration: 60s, max: 100, warmup: 30s}\n  baseline:\n    constant: {rate: 70% of ramp, duration: 5m, warmup: 30s}\n  daily:\n    diurnal: {base: 70% of ramp, period: 24m, peak: 100%, trough: 20%, warmup: 30s}\n  long:\n    soak: {rate: 70% of ramp, duration: 20m, warmup: 30s}\n",
        )
        .replace(
            "    at: 10s\n    duration: 15s\n    observe: 20s\n",
            "    at: 2m\n    duration: 5s\n    observe: 2m55s\n",
        );
    assert!(text.contains("step-duration: 60s") && text.contains("at: 2m\n"));
    text
}

fn loaded(text: &str) -> LoadedPlan {
    load_str(
        "t.yaml",
        text,
        &Context {
            host_cores: None,
            exists: None,
        },
    )
    .unwrap_or_else(|e| panic!("{e:?}"))
}

fn ms(d: Duration) -> u64 {
    d.millis
}

fn profile<'a>(p: &'a Plan, name: &str) -> &'a Profile {
    p.profiles.get(name).unwrap()
}

#[test]
fn a_quarter_of_the_study() {
    let plan = scale(&loaded(&study_like()).plan, "0.25".parse().unwrap());
    let Profile::StepRamp {
        step_duration,
        warmup,
        ..
    } = profile(&plan, "ramp")
    else {
        panic!()
    };
    assert_eq!((ms(*step_duration), ms(*warmup)), (15_000, 7_500));
    let Profile::Constant {
        duration, warmup, ..
    } = profile(&plan, "baseline")
    else {
        panic!()
    };
    assert_eq!((ms(*duration), ms(*warmup)), (75_000, 7_500));
    let Profile::Diurnal { period, .. } = profile(&plan, "daily") else {
        panic!()
    };
    assert_eq!(ms(*period), 360_000);
    let Profile::Soak { duration, .. } = profile(&plan, "long") else {
        panic!()
    };
    assert_eq!(ms(*duration), 300_000);
    let f = plan.faults.get("db-cut").unwrap();
    assert_eq!(
        (ms(f.at), ms(f.duration), ms(f.observe)),
        (30_000, 1_250, 43_750)
    );
    // The fault still ends within the 75 s baseline.
    assert_eq!(ms(f.at) + ms(f.duration) + ms(f.observe), 75_000);
    // The 60 s window was one step's: it is one scaled step's.
    assert_eq!(ms(plan.study.objective.window), 15_000);
    // Rates and the rest are untouched.
    assert_eq!(plan.matrix.repetitions, 3);
}

#[test]
fn a_tenth_is_exact_despite_binary_fractions() {
    // 30000 × 0.1 is 3000.0000000000005 in f64.
    let plan = scale(&loaded(&study_like()).plan, Scale::new(0.1).unwrap());
    let Profile::StepRamp {
        step_duration,
        warmup,
        ..
    } = profile(&plan, "ramp")
    else {
        panic!()
    };
    assert_eq!((ms(*step_duration), ms(*warmup)), (6_000, 3_000));
    let f = plan.faults.get("db-cut").unwrap();
    assert_eq!(
        (ms(f.at), ms(f.duration), ms(f.observe)),
        (12_000, 500, 17_500)
    );
    assert_eq!(ms(plan.study.objective.window), 6_000);
}

#[test]
fn rounding_never_reaches_zero_and_keeps_the_plan_valid() {
    let text = study_like();
    let l = loaded(&text);
    let plan = scale(&l.plan, Scale::new(0.001).unwrap());
    let Profile::StepRamp {
        step_duration,
        warmup,
        ..
    } = profile(&plan, "ramp")
    else {
        panic!()
    };
    // 60 ms would be a step no window fits: at least 1 s; the warm-up (30 ms) stays.
    assert_eq!((ms(*step_duration), ms(*warmup)), (1_000, 30));
    let f = plan.faults.get("db-cut").unwrap();
    // 5 ms, 175 ms, 120 ms: rounded down, none to 0.
    assert_eq!((ms(f.at), ms(f.duration), ms(f.observe)), (120, 5, 175));
    let tiny = Scale::new(0.000_01).unwrap();
    let plan = scale(&l.plan, tiny);
    let f = plan.faults.get("db-cut").unwrap();
    assert_eq!((ms(f.at), ms(f.duration), ms(f.observe)), (1, 1, 1));
    assert_eq!(ms(plan.study.objective.window), 1_000);
    for s in [0.5, 0.25, 0.1, 0.01, 0.001, 0.000_01] {
        let scaled = scale_loaded(&l, &text, Scale::new(s).unwrap(), None)
            .unwrap_or_else(|e| panic!("at {s}: {e:?}"));
        assert_eq!(scaled.plan_hash, l.plan_hash, "the file's hash is kept");
    }
}

#[test]
fn a_warmup_stays_shorter_than_what_it_warms() {
    let text = study_like().replace(
        "duration: 20m, warmup: 30s",
        "duration: 1500ms, warmup: 1400ms",
    );
    let l = loaded(&text);
    // 1500 ms × 0.5 = 750 ms, below 1 s: the length is kept at 1 s; the warm-up, 700 ms.
    let plan = scale(&l.plan, Scale::new(0.5).unwrap());
    let Profile::Soak {
        duration, warmup, ..
    } = profile(&plan, "long")
    else {
        panic!()
    };
    assert_eq!((ms(*duration), ms(*warmup)), (1_000, 700));
    // A warm-up as long as what it warms would reach it: cut to 1 ms below.
    let text = study_like().replace(
        "step-duration: 60s, max: 100, warmup: 30s",
        "step-duration: 2s, max: 100, warmup: 1999ms",
    );
    let plan = scale(&loaded(&text).plan, Scale::new(0.5).unwrap());
    let Profile::StepRamp {
        step_duration,
        warmup,
        ..
    } = profile(&plan, "ramp")
    else {
        panic!()
    };
    assert_eq!((ms(*step_duration), ms(*warmup)), (1_000, 999));
}

#[test]
fn a_window_not_tied_to_a_step_is_kept() {
    // Without a step ramp, the window stays.
    let text = MINIMAL
        .replace(
            "  ramp:\n    step-ramp: {start: 10, step: 10, step-duration: 10s, max: 30}\n  baseline:\n    constant: {rate: 70% of ramp, duration: 60s}\n",
            "  baseline:\n    constant: {rate: 20, duration: 60s}\n",
        )
        .replace("    - profile: ramp\n", "");
    let plan = scale(&loaded(&text).plan, Scale::new(0.5).unwrap());
    assert_eq!(ms(plan.study.objective.window), 10_000);
    // With a ramp whose steps hold several windows, the window scales with them.
    let text = study_like().replace("window: 60s", "window: 10s");
    let plan = scale(&loaded(&text).plan, Scale::new(0.25).unwrap());
    assert_eq!(ms(plan.study.objective.window), 2_500);
}

#[test]
fn the_full_scale_changes_nothing() {
    let l = loaded(&study_like());
    let plan = scale(&l.plan, Scale::FULL);
    assert_eq!(
        serde_json::to_value(&plan).unwrap(),
        serde_json::to_value(&l.plan).unwrap()
    );
}

#[test]
fn scales_outside_zero_to_one_are_refused_naming_the_flag() {
    for bad in ["0", "-0.5", "1.5", "NaN", "inf", "-0"] {
        let e = bad.parse::<Scale>().unwrap_err();
        assert!(matches!(e, ScaleError::OutOfRange(_)), "{bad}: {e}");
        assert!(e.to_string().starts_with("--scale: "), "{e}");
    }
    assert!(matches!(
        "quarter".parse::<Scale>(),
        Err(ScaleError::NotANumber(_))
    ));
    assert_eq!("1".parse::<Scale>().unwrap(), Scale::FULL);
    assert_eq!("0.25".parse::<Scale>().unwrap().get(), 0.25);
}

#[test]
fn a_scaled_plan_that_does_not_validate_is_refused_at_the_file_s_value() {
    // A fault that fills the baseline's 60 s to the millisecond: rounded down, `at` is
    // 29 999 ms, but the 1 ms of `duration` and `observe` cannot shrink, and the three
    // exceed the 30 s the baseline measures.
    let text = MINIMAL.replace(
        "    at: 10s\n    duration: 15s\n    observe: 20s\n",
        "    at: 59998ms\n    duration: 1ms\n    observe: 1ms\n",
    );
    let l = loaded(&text);
    assert!(scale_loaded(&l, &text, Scale::FULL, None).is_ok());
    let Err(LoadError::Invalid { diagnostics, .. }) =
        scale_loaded(&l, &text, Scale::new(0.5).unwrap(), None)
    else {
        panic!("a fault past the measured phase must be refused")
    };
    let d = &diagnostics[0];
    assert_eq!(d.severity, Severity::Error);
    assert_eq!(d.path, "matrix.runs[1].fault");
    assert!(d.message.contains("needs 30001ms"), "{d}");
    assert!(d.line > 1, "placed in the file: {d}");
}

#[test]
fn a_pilot_runs_its_own_repetitions_and_at_least_two() {
    let text = MINIMAL.replace("  repetitions: 3\n", "  repetitions: 1\n");
    let l = loaded(&text);
    assert!(l.warnings.iter().any(|d| d.path == "matrix.repetitions"));
    let five: Repetitions = " 5".parse().unwrap();
    let p = pilot_loaded(&l, &text, Scale::FULL, Some(five), None).unwrap();
    assert_eq!(p.plan.matrix.repetitions, 5);
    assert_eq!(p.plan_hash, l.plan_hash, "the file's hash is kept");
    // Validated at the pilot's count: the plan's own 1 draws no warning.
    assert!(!p.warnings.iter().any(|d| d.path == "matrix.repetitions"));
    let runs = crate::plan::expand(&p.plan);
    assert_eq!(runs.iter().map(|r| r.repetition).max(), Some(5));
    assert_eq!(
        "1".parse::<Repetitions>().unwrap_err().to_string(),
        "--repetitions: 1 is too few: a spread across repetitions needs at least 2 values; give e.g. 3"
    );
    assert_eq!(
        "three".parse::<Repetitions>().unwrap_err(),
        ScaleError::NotACount("three".into())
    );
    assert!("-2".parse::<Repetitions>().is_err());
}
