//! Sizing from a pilot: the spreads from rows, the comparisons the plan makes, the
//! simulated power against an independent simulation on the values themselves, and
//! `sizing.json` read back (damaged, of another version, the newest pilot's).

use super::*;
use crate::report::comparison::tests::row;
use crate::report::rows::NOT_REACHED;

fn run(contender: &str, profile: &str, fault: Option<&str>, rep: u32) -> RunSpec {
    RunSpec {
        id: format!("{contender}/{profile}/r{rep}"),
        run_hash: String::new(),
        contender: contender.into(),
        profile: profile.into(),
        fault: fault.map(str::to_string),
        repetition: rep,
        depends_on: Vec::new(),
        estimated_duration_s: None,
        inputs: Vec::new(),
    }
}

#[test]
fn each_arm_gets_the_spread_of_its_log_values_or_says_why_it_has_none() {
    let mut rows = Vec::new();
    for (rep, v) in [(1, 100.0), (2, 110.0), (3, 121.0)] {
        rows.push(row("x.indexed", rep, "latency_p99", Some(v), ""));
        rows.push(row("x.cache", rep, "latency_p99", Some(v), ""));
        rows.push(row("x.indexed", rep, "saturation", Some(40.0), ""));
        rows.push(row("x.indexed", rep, "failed_share", Some(0.0), ""));
    }
    rows.push(row("x.cache", 1, "saturation", Some(40.0), NOT_REACHED));
    rows.push(row("x.cache", 2, "saturation", Some(30.0), ""));
    rows.push(row("y", 1, "saturation", Some(30.0), ""));
    let s = spreads(&rows);
    let find = |arm: &str, metric: &str| {
        s.iter()
            .find(|s| s.arm == arm && s.metric == metric)
            .unwrap()
    };
    // ln 100, ln 110, ln 121 are ln 100 + 0, 1, 2 × ln 1.1: their sd is ln 1.1.
    let p99 = find("x.indexed", "latency_p99");
    assert!((p99.log_sd.unwrap() - 1.1f64.ln()).abs() < 1e-12);
    assert_eq!(p99.values, [100.0, 110.0, 121.0]);
    assert_eq!(p99.median, Some(110.0));
    assert_eq!(find("x.indexed", "saturation").log_sd, Some(0.0));
    let zero = find("x.indexed", "failed_share");
    assert!(zero.log_sd.is_none());
    assert!(
        zero.why_not.as_deref().unwrap().contains("not above 0"),
        "{zero:?}"
    );
    let bound = find("x.cache", "saturation");
    assert!(bound.why_not.as_deref().unwrap().contains("only a bound"));
    let one = find("y", "saturation");
    assert_eq!(one.why_not.as_deref(), Some("1 value(s): a spread needs 2"));
    assert!(s.iter().all(|s| s.needed.is_none()));
}

/// A plan of `text`'s matrix over the minimal plan's profiles (`ramp` a step ramp,
/// `baseline` constant) and fault (`db-cut`).
fn plan() -> Plan {
    let text = include_str!("../../../../../tests/plans/valid/minimal.yaml");
    let ctx = crate::plan::validate::Context {
        host_cores: None,
        exists: None,
    };
    crate::plan::load_str("t.yaml", text, &ctx).unwrap().plan
}

#[test]
fn the_level_is_alpha_over_every_comparison_the_plans_report_makes() {
    let plan = plan();
    // Three arms on the ramp: 3 pairs on its 5 figures (a ramp's saturation, no recovery);
    // two on the baseline with a fault: 1 pair on 5 (no saturation, a recovery); one arm
    // alone on the baseline without a fault: none.
    let runs = [
        run("a", "ramp", None, 1),
        run("b", "ramp", None, 1),
        run("c.x", "ramp", None, 2),
        run("c.x", "ramp", None, 1),
        run("a", "baseline", Some("db-cut"), 1),
        run("b", "baseline", Some("db-cut"), 1),
        run("a", "baseline", None, 1),
    ];
    assert_eq!(comparisons(&plan, &runs), 3 * 5 + 5);
    assert_eq!(design(&plan, &runs), (ALPHA / 20.0, true));
    // One arm compares nothing: sized as one comparison would be.
    assert_eq!(comparisons(&plan, &runs[..1]), 0);
    assert_eq!(level(0), ALPHA);
}

#[test]
fn without_spread_the_fewest_repetitions_that_can_reach_the_level_suffice() {
    assert_eq!(needed(0.0, 0.1, 0.05, false), Needed::Repetitions(4));
    assert_eq!(needed(0.0, 0.1, 0.05, true), Needed::Repetitions(6));
    // 2 / C(10, 5) = 0.0079 is within 0.05 / 6.
    assert_eq!(needed(0.0, 0.1, 0.05 / 6.0, false), Needed::Repetitions(5));
    // A spread ten times the effect is not shown by 50 repetitions.
    assert_eq!(needed(1.0, 0.1, 0.05, false), Needed::MoreThan(MOST));
    assert!(Needed::MoreThan(MOST).exceeds(1000));
    assert!(Needed::Repetitions(5).exceeds(4) && !Needed::Repetitions(5).exceeds(5));
}

/// The power of a rank-sum or signed-rank study simulated apart, on lognormal values
/// themselves (not their logs), with another generator's stream.
fn independent_power(n: usize, sd: f64, effect: f64, level: f64, paired: bool) -> f64 {
    let mut rng = SplitMix64::new(7);
    let studies = 2000;
    let shown = (0..studies)
        .filter(|_| {
            let a: Vec<f64> = (0..n).map(|_| (sd * normal(&mut rng)).exp()).collect();
            let b: Vec<f64> = (0..n)
                .map(|_| (1.0 + effect) * (sd * normal(&mut rng)).exp())
                .collect();
            let p = if paired {
                let d: Vec<f64> = b.iter().zip(&a).map(|(b, a)| (b / a).ln()).collect();
                exact::signed_rank_p(&d).p
            } else {
                exact::rank_sum_p(&b, &a).unwrap().0
            };
            p <= level
        })
        .count();
    shown as f64 / studies as f64
}

/// The needed repetitions reach the power in a simulation of their own, and one fewer do
/// not (a 0.8 power estimated from 1,000 studies is within 4 points 99.7 % of the time).
#[test]
fn the_repetitions_needed_show_the_effect_as_often_as_asked_and_no_fewer_do() {
    for (sd, effect, level, paired) in [
        (0.05, 0.1, 0.05, false),
        (0.05, 0.1, 0.05, true),
        (0.1, 0.1, 0.05 / 6.0, false),
        (0.2, 0.25, 0.05, true),
    ] {
        let Needed::Repetitions(n) = needed(sd, effect, level, paired) else {
            panic!("{sd} {effect} {level} {paired}: more than {MOST}");
        };
        let least = match paired {
            true => exact::least_n_paired(level),
            false => exact::least_n_unpaired(level),
        };
        // Exactly the fewest by its own simulation (bisection finds no later n)…
        assert!(power(n, sd, effect, level, paired) >= POWER);
        assert!(n == least || power(n - 1, sd, effect, level, paired) < POWER);
        // …and as often as asked by one of its own.
        let at = independent_power(n, sd, effect, level, paired);
        assert!(
            at >= POWER - 0.04,
            "{sd} {effect} {level} {paired}: n {n}, {at}"
        );
        if n > least {
            let below = independent_power(n - 1, sd, effect, level, paired);
            assert!(
                below < POWER + 0.04,
                "{sd} {effect} {level} {paired}: n {n}, {below}"
            );
        }
    }
}

fn sizing(log_sd: Option<f64>) -> Sizing {
    let mut rows = Vec::new();
    for (rep, v) in [(1, 100.0), (2, 105.0), (3, 95.0)] {
        rows.push(row("a", rep, "latency_p99", Some(v), ""));
    }
    let runs = [run("a", "ramp", None, 1)];
    let mut plan = plan();
    plan.matrix.order = crate::plan::model::Order::Sequential;
    plan.matrix.smallest_effect = Some("10%".parse().unwrap());
    let pilot = Pilot {
        number: 2,
        plan_hash: "abc",
        plan: &plan,
        runs: &runs,
    };
    let mut s = size(&pilot, &rows);
    if log_sd.is_some() {
        s.spreads[0].log_sd = log_sd;
    }
    s
}

#[test]
fn a_sizing_names_what_falls_short_and_reads_back_as_written() {
    let s = sizing(None);
    assert_eq!((s.comparisons, s.level), (0, ALPHA));
    let needed = s.spreads[0].needed.unwrap();
    assert!(needed.exceeds(3), "{needed}");
    let unpaired = (ALPHA, false);
    let short = shortfalls(&s, 3, 0.1, unpaired);
    assert_eq!(short.len(), 1);
    assert_eq!(short[0].needed, needed);
    assert!(shortfalls(&s, 50, 0.1, unpaired).is_empty());
    // A larger effect needs fewer; a stricter level or the paired test more.
    assert!(shortfalls(&s, 4, 1.0, unpaired).is_empty());
    assert!(!shortfalls(&s, 4, 1.0, (ALPHA / 20.0, false)).is_empty());
    assert!(!shortfalls(&s, 4, 1.0, (ALPHA, true)).is_empty());
    let text = serde_json::to_vec_pretty(&s).unwrap();
    assert_eq!(parse(&text).unwrap(), s);
    let other = String::from_utf8(text)
        .unwrap()
        .replace("\"format_version\": 1", "\"format_version\": 9");
    assert_eq!(
        parse(other.as_bytes()).unwrap_err(),
        "format_version 9, this feedbench reads 1"
    );
    assert!(parse(b"{\"format_version\": 1}").is_err());
    // Numbers a person's edit could make: refused, named, never looped on.
    let mut bad = s.clone();
    bad.spreads[0].log_sd = Some(-0.1);
    let text = serde_json::to_vec(&bad).unwrap();
    assert!(parse(&text)
        .unwrap_err()
        .contains("is -0.1, not a standard deviation"));
    for level in [-0.01, 0.0, 0.5, s.level * 2.0] {
        let bad = Sizing { level, ..s.clone() };
        let text = serde_json::to_vec(&bad).unwrap();
        let why = parse(&text).unwrap_err();
        assert!(
            why.starts_with(&format!("its level ({level}) is not 0.05 over")),
            "{why}"
        );
    }
    // Comparisons edited without the level: refused the same way.
    let bad = Sizing {
        comparisons: s.comparisons + 2,
        ..s.clone()
    };
    assert!(parse(&serde_json::to_vec(&bad).unwrap())
        .unwrap_err()
        .contains("comparison(s)"));
    for effect in [0.0, 1.5] {
        let bad = Sizing {
            smallest_effect: Some(effect),
            ..s.clone()
        };
        let why = parse(&serde_json::to_vec(&bad).unwrap()).unwrap_err();
        assert!(why.contains("smallest effect"), "{why}");
    }
    assert!(parse(b"{not json").is_err());
}

#[test]
fn the_newest_pilot_with_a_sizing_is_read_and_a_damaged_one_is_named() {
    let study = tempfile::tempdir().unwrap();
    assert!(newest(study.path()).is_none());
    let area = |n: u32| {
        let dir = crate::rundir::layout::pilot_dir(study.path(), n);
        std::fs::create_dir_all(&dir).unwrap();
        crate::rundir::layout::pilot_sizing(study.path(), n)
    };
    std::fs::write(area(1), serde_json::to_vec(&sizing(Some(0.5))).unwrap()).unwrap();
    area(2); // no sizing: an interrupted pilot
             // A pilot of one repetition has no spread to size from: skipped, as if it had none.
    let mut spreadless = sizing(Some(0.5));
    spreadless.spreads[0].log_sd = None;
    std::fs::create_dir_all(crate::rundir::layout::pilot_dir(study.path(), 5)).unwrap();
    let five = crate::rundir::layout::pilot_sizing(study.path(), 5);
    std::fs::write(&five, serde_json::to_vec(&spreadless).unwrap()).unwrap();
    std::fs::create_dir_all(study.path().join("pilots/notes")).unwrap();
    let (file, found) = newest(study.path()).unwrap();
    assert!(file.ends_with("pilots/001/sizing.json"), "{file:?}");
    assert_eq!(found.unwrap().spreads[0].log_sd, Some(0.5));
    std::fs::write(area(3), "{\"format_version\": 1, \"pilot\": ").unwrap();
    let (file, found) = newest(study.path()).unwrap();
    assert!(file.ends_with("pilots/003/sizing.json"));
    assert!(found.is_err());
    std::fs::create_dir_all(area(4)).unwrap();
    let (_, found) = newest(study.path()).unwrap();
    assert_eq!(found.unwrap_err(), "not a regular file");
}

#[test]
fn the_table_shows_each_figure_its_spread_and_what_it_needs_or_why_not() {
    let mut s = sizing(None);
    let needed = s.spreads[0].needed.unwrap();
    s.spreads.push(Spread {
        metric: "saturation".into(),
        definition: "objective-windows".into(),
        fault: "db-cut".into(),
        values: vec![40.0],
        median: Some(40.0),
        log_sd: None,
        why_not: Some("`a/ramp/r1` holds only a bound".into()),
        needed: None,
        ..s.spreads[0].clone()
    });
    s.left_out.push("a/ramp/r3: no run.json".into());
    let table = render(&s);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[0],
        "pilot 2: 3 repetition(s) of each arm; rank-sum tests at level 0.0500 (1 comparison(s) in the plan's report)"
    );
    assert_eq!(
        lines[1],
        "repetitions of each arm needed to show a 10% effect in 80% of studies:"
    );
    assert!(
        lines[3].ends_with(&format!("{needed:>11}  latency_p99 of a on ramp")),
        "{table}"
    );
    assert!(
        lines[3].trim_start().starts_with("100.0000     0.050"),
        "{table}"
    );
    assert!(
        lines[4].ends_with("no spread  saturation (objective-windows) of a on ramp + db-cut (`a/ramp/r1` holds only a bound)"),
        "{table}"
    );
    assert_eq!(lines[5], "left out: a/ramp/r3: no run.json");
    s.smallest_effect = None;
    assert!(
        render(&s).contains("the plan declares no smallest effect: add `matrix.smallest-effect`")
    );
}
