//! The family of comparisons: its error rate and power by simulation, and its findings from
//! metrics rows (bounds, missing values, too few repetitions).

use super::exact::tests::normal;
use super::*;
use crate::plan::expand::SplitMix64;
use crate::report::rows::{RunKey, NOT_REACHED};

/// n values per arm, lognormal (σ) around `scale`, each times its round's effect.
fn arm(rng: &mut SplitMix64, rounds: &[f64], sigma: f64, scale: f64) -> Arm {
    rounds
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let v = scale * (sigma * normal(rng) + r).exp();
            (i as u32 + 1, Value::Exact(v))
        })
        .collect()
}

/// Out of `reports` reports of 20 comparisons (the first with `shift`, the rest between
/// identical arms): how many claim any difference (Holm), how many find the shifted one,
/// and how many the unadjusted rule (any p within 5 %) would have claimed something in.
fn simulate(reports: usize, shift: f64, round_sigma: f64, paired_rounds: bool) -> (f64, f64, f64) {
    let mut rng = SplitMix64::new(49);
    let (mut any, mut found, mut unadjusted) = (0, 0, 0);
    for _ in 0..reports {
        let mut family: Vec<Comparison> = (0..20)
            .map(|i| {
                let rounds: Vec<f64> = (0..10).map(|_| round_sigma * normal(&mut rng)).collect();
                let a = arm(&mut rng, &rounds, 0.05, if i == 0 { shift } else { 1.0 });
                let b = arm(&mut rng, &rounds, 0.05, 1.0);
                let mut c = compare(&Ok(a), &Ok(b), paired_rounds);
                c.a = "a".into();
                c.b = "b".into();
                c
            })
            .collect();
        adjust(&mut family.iter_mut().collect::<Vec<_>>());
        let claims = |c: &Comparison| matches!(c.finding, Finding::Higher { .. });
        any += usize::from(family[1..].iter().any(claims));
        found += usize::from(claims(&family[0]));
        unadjusted += usize::from(family.iter().any(|c| c.p.unwrap() <= ALPHA));
    }
    let share = |k: usize| k as f64 / reports as f64;
    (share(any), share(found), share(unadjusted))
}

#[test]
fn holm_holds_the_family_and_finds_a_real_shift() {
    // Identical arms everywhere: Holm claims a difference in at most 5 % of reports, the
    // unadjusted rule in far more.
    let (any, _, unadjusted) = simulate(1_000, 1.0, 0.0, false);
    eprintln!("identical arms: Holm {any}, unadjusted {unadjusted}");
    assert!(any <= 0.05, "Holm claimed a difference in {any} of reports");
    assert!(unadjusted >= 0.30, "the unadjusted rule: {unadjusted}");
    // One arm 10 % slower among 19 identical pairs.
    let (any, found, _) = simulate(1_000, 1.1, 0.0, false);
    eprintln!("10 % slower: found {found}, others claimed {any}");
    assert!(found >= 0.60, "a 10 % shift found in {found} of reports");
    // A shared round effect (σ 0.1) paired away: a 20 % shift found.
    let (_, found, _) = simulate(1_000, 1.2, 0.1, true);
    eprintln!("paired rounds, 20 % shift: found {found}");
    assert!(
        found >= 0.90,
        "paired: a 20 % shift found in {found} of reports"
    );
}

/// One headline row of `arm` (`contender` or `contender.variant`) on the ramp profile.
pub(in crate::report) fn row(
    arm: &str,
    rep: u32,
    metric: &str,
    value: Option<f64>,
    note: &str,
) -> Row {
    let (contender, variant) = arm.split_once('.').unwrap_or((arm, ""));
    let (_, definition, container) = HEADLINE.iter().find(|h| h.0 == metric).copied().unwrap();
    Row {
        key: RunKey {
            run: format!("{arm}/ramp/r{rep}"),
            contender: contender.into(),
            variant: variant.into(),
            profile: "ramp".into(),
            fault: String::new(),
            repetition: rep,
        },
        step_rate: None,
        second: None,
        container: container.into(),
        definition: definition.into(),
        metric: metric.into(),
        value,
        unit: "/s".into(),
        note: note.into(),
    }
}

#[test]
fn three_repetitions_cannot_show_a_difference_and_say_what_could() {
    let mut rows = Vec::new();
    for rep in 1..=3 {
        rows.push(row(
            "x.indexed",
            rep,
            "saturation",
            Some(100.0 + rep as f64),
            "",
        ));
        rows.push(row(
            "x.production",
            rep,
            "saturation",
            Some(10.0 + rep as f64),
            "",
        ));
    }
    let [c] = of_rows(&rows, false, &Default::default())
        .try_into()
        .unwrap();
    assert_eq!((c.p, c.p_min), (Some(0.1), Some(0.1)));
    assert_eq!(
        c.finding,
        Finding::CannotBeShown {
            n: 3,
            needed: 4,
            level: 0.05
        }
    );
    // Interleaved rounds pair them: 3 rounds give at best p = 0.25; 6 could.
    let [c] = of_rows(&rows, true, &Default::default())
        .try_into()
        .unwrap();
    assert!(c.paired);
    assert_eq!(
        c.finding,
        Finding::CannotBeShown {
            n: 3,
            needed: 6,
            level: 0.05
        }
    );
    let ratio = c.ratio.unwrap();
    assert!(ratio.lo > 5.0 && ratio.confidence == 0.75, "{ratio:?}");
    // Two arms that never fail tie everywhere: nothing to test, and out of the family.
    let zeros: Vec<Row> = (1..=5)
        .flat_map(|rep| {
            [
                row("x.a", rep, "failed_share", Some(0.0), ""),
                row("x.b", rep, "failed_share", Some(0.0), ""),
            ]
        })
        .collect();
    for paired in [false, true] {
        let [c] = of_rows(&zeros, paired, &Default::default())
            .try_into()
            .unwrap();
        assert_eq!((c.p, c.adjusted), (None, None));
        let Finding::NotTestable { why } = &c.finding else {
            panic!("{c:?}")
        };
        assert!(why.contains("every value ties"), "{why}");
    }
}

#[test]
fn bounds_rank_where_they_decide_the_order_and_missing_values_are_named() {
    let mut rows = Vec::new();
    for rep in 1..=4 {
        // Not reached at 200/s: above every value of the other arm.
        rows.push(row("a", rep, "saturation", Some(200.0), NOT_REACHED));
        rows.push(row("b", rep, "saturation", Some(50.0 + rep as f64), ""));
    }
    let [c] = of_rows(&rows, false, &Default::default())
        .try_into()
        .unwrap();
    assert_eq!(c.finding, Finding::Higher { higher: "a".into() });
    assert_eq!(c.ratio, None, "no interval from bounds");
    // A bound at or below another arm's value leaves the order open.
    rows.push(row("b", 5, "saturation", Some(250.0), ""));
    let [c] = of_rows(&rows, false, &Default::default())
        .try_into()
        .unwrap();
    assert!(matches!(c.finding, Finding::NotTestable { .. }), "{c:?}");
    // A repetition without a value.
    rows.push(row("a", 5, "latency_p99", None, "no request"));
    rows.push(row("b", 5, "latency_p99", Some(0.2), ""));
    let c = of_rows(&rows, false, &Default::default())
        .into_iter()
        .find(|c| c.metric == "latency_p99")
        .unwrap();
    let Finding::NotTestable { why } = c.finding else {
        panic!("{c:?}")
    };
    assert!(
        why.contains("a/ramp/r5") && why.contains("no request"),
        "{why}"
    );
}

#[test]
fn one_differing_round_is_too_few_not_a_tie_and_zeros_do_not_pick_the_arm() {
    // Five rounds, four of them equal: one round ranks, which no test can decide.
    let shares = [0.0, 0.0, 0.0, 0.0, 0.02];
    let rows: Vec<Row> = (1..=5)
        .flat_map(|rep| {
            let i = rep as usize - 1;
            [
                row("x.a", rep, "failed_share", Some(shares[i]), ""),
                row("x.b", rep, "failed_share", Some(0.0), ""),
            ]
        })
        .collect();
    let [c] = of_rows(&rows, true, &Default::default())
        .try_into()
        .unwrap();
    assert_eq!(
        c.finding,
        Finding::CannotBeShown {
            n: 1,
            needed: 6,
            level: 0.05
        },
        "{c:?}"
    );
    // One repetition each, unpaired: too few, not a tie.
    let one: Vec<Row> = rows
        .iter()
        .filter(|r| r.key.repetition == 5)
        .cloned()
        .collect();
    let [c] = of_rows(&one, false, &Default::default())
        .try_into()
        .unwrap();
    assert!(
        matches!(c.finding, Finding::CannotBeShown { n: 1, .. }),
        "{c:?}"
    );
    // Paired direction from the signed ranks alone: two rounds far above, three a little
    // below and five equal. The Walsh sums' median is one of the 15 zero sums (21 below,
    // 19 above), which would put a below; the signed ranks (T = 9 of 15) put it above.
    let d = [0.0, 0.0, 0.0, 0.0, 0.0, 5.0, 6.0, -1.0, -1.0, -1.0];
    let a: Arm = d
        .iter()
        .enumerate()
        .map(|(i, x)| (i as u32 + 1, Value::Exact(10.0 + x)))
        .collect();
    let b: Arm = (1..=10).map(|i| (i, Value::Exact(10.0))).collect();
    let c = compare(&Ok(a), &Ok(b), true);
    assert!(c.paired && c.a_above && c.ranked == 5, "{c:?}");
}

#[test]
fn a_registered_pair_is_held_in_its_own_family() {
    // Two figures, four repetitions each, fully separated: p = 2/70 each.
    let mut rows = Vec::new();
    for rep in 1..=4 {
        for (arm, base) in [("x.a", 100.0), ("x.b", 10.0)] {
            rows.push(row(arm, rep, "saturation", Some(base + rep as f64), ""));
            rows.push(row(arm, rep, "latency_p99", Some(base + rep as f64), ""));
        }
    }
    // One family of two: Holm doubles the smaller p to 4/70 > 5 %.
    let both = of_rows(&rows, false, &Default::default());
    assert_eq!(both.len(), 2);
    for c in &both {
        assert_eq!(c.family, Family::Exploratory);
        assert!(matches!(c.finding, Finding::CannotBeShown { .. }), "{c:?}");
    }
    // The hypothesis's pair alone in its family: 2/70 stands; so does the other, alone too.
    let (_, definition, container) = HEADLINE[1];
    let registered = BTreeSet::from([Pair {
        metric: "latency_p99".into(),
        definition: definition.into(),
        container: container.into(),
        profile: "ramp".into(),
        fault: String::new(),
        a: "x.a".into(),
        b: "x.b".into(),
    }]);
    let split = of_rows(&rows, false, &registered);
    let family = |m: &str| split.iter().find(|c| c.metric == m).unwrap();
    assert_eq!(family("latency_p99").family, Family::Hypotheses);
    assert_eq!(family("saturation").family, Family::Exploratory);
    for c in &split {
        assert_eq!(c.adjusted, c.p, "alone in its family: {c:?}");
        assert_eq!(
            c.finding,
            Finding::Higher {
                higher: "x.a".into()
            }
        );
    }
}
