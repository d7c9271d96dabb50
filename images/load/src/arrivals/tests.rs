//! Arrivals against closed forms: constant rates, ramps, jumps and zero-rate stretches.

use super::*;
use crate::plan::Stage;

fn schedule(start_rate: f64, stages: &[(f64, f64)]) -> Schedule {
    Schedule {
        start_rate,
        stages: stages
            .iter()
            .map(|&(duration_s, target)| Stage { duration_s, target })
            .collect(),
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * (1.0 + b.abs())
}

#[test]
fn constant_rate() {
    let s = schedule(10.0, &[(2.0, 10.0)]);
    let offsets: Vec<f64> = Arrivals::new(&s).collect();
    assert_eq!(offsets.len(), 20);
    for (n, &o) in offsets.iter().enumerate() {
        assert!(close(o, n as f64 / 10.0), "{n}: {o}");
    }
    assert_eq!(offsets[0], 0.0);
}

#[test]
fn ramp_up_from_zero() {
    // N(t) = t^2 / 2, so iteration n starts at sqrt(2n).
    let s = schedule(0.0, &[(10.0, 10.0)]);
    let offsets: Vec<f64> = Arrivals::new(&s).collect();
    assert_eq!(offsets.len(), 50);
    for (n, &o) in offsets.iter().enumerate() {
        assert!(close(o, (2.0 * n as f64).sqrt()), "{n}: {o}");
    }
}

#[test]
fn ramp_down_to_zero() {
    // N(t) = 10t - t^2/2: t = 10 - sqrt(100 - 2n).
    let s = schedule(10.0, &[(10.0, 0.0)]);
    let offsets: Vec<f64> = Arrivals::new(&s).collect();
    assert_eq!(offsets.len(), 50);
    for (n, &o) in offsets.iter().enumerate() {
        let want = 10.0 - (100.0 - 2.0 * n as f64).sqrt();
        assert!(close(o, want), "{n}: {o} vs {want}");
    }
}

#[test]
fn a_jump_moves_the_rate_at_once() {
    let s = schedule(1.0, &[(0.0, 10.0), (1.0, 10.0), (0.0, 100.0), (0.5, 100.0)]);
    let offsets: Vec<f64> = Arrivals::new(&s).collect();
    assert_eq!(offsets.len(), 60);
    assert!(close(offsets[9], 0.9));
    assert!(close(offsets[10], 1.0));
    assert!(close(offsets[11], 1.01));
}

#[test]
fn nothing_starts_while_the_rate_is_zero() {
    // A diurnal trough: 10 in [0, 2), none in [2, 5), 10 in [5, 7).
    let s = schedule(
        5.0,
        &[(2.0, 5.0), (0.0, 0.0), (3.0, 0.0), (0.0, 5.0), (2.0, 5.0)],
    );
    let offsets: Vec<f64> = Arrivals::new(&s).collect();
    assert_eq!(offsets.len(), 20);
    assert!(close(offsets[9], 1.8));
    assert!(close(offsets[10], 5.0), "{}", offsets[10]);
    assert!(offsets.iter().all(|&o| !(2.0..5.0).contains(&o)));
    // A schedule starting at rate 0 starts its first iteration where the rate rises.
    let late = schedule(0.0, &[(2.0, 0.0), (0.0, 4.0), (1.0, 4.0)]);
    assert_eq!(Arrivals::new(&late).next(), Some(2.0));
    // Ramping down into a trough and up out of it.
    let v = schedule(4.0, &[(2.0, 0.0), (2.0, 4.0)]);
    let offsets: Vec<f64> = Arrivals::new(&v).collect();
    assert_eq!(offsets.len(), 8);
    assert!(close(offsets[4], 2.0), "{offsets:?}");
}

#[test]
fn the_count_is_the_integral_rounded_up() {
    let s = schedule(
        3.3,
        &[
            (7.7, 41.0),
            (0.0, 12.5),
            (13.1, 12.5),
            (9.9, 0.0),
            (4.0, 0.0),
            (6.6, 77.7),
        ],
    );
    let a = Arrivals::new(&s);
    let end = integral(&s, duration_s(&s));
    assert_eq!(a.total(), end.ceil() as u64);
    assert_eq!(a.clone().count() as u64, a.total());
    let offsets: Vec<f64> = a.collect();
    assert!(offsets.windows(2).all(|w| w[0] <= w[1]));
    assert!(offsets.iter().all(|&o| (0.0..duration_s(&s)).contains(&o)));
}

#[test]
fn scheduled_between_counts_the_offsets() {
    let s = schedule(
        2.5,
        &[(10.0, 30.0), (0.0, 0.0), (3.0, 0.0), (0.0, 7.0), (8.0, 1.0)],
    );
    let offsets: Vec<f64> = Arrivals::new(&s).collect();
    let end = duration_s(&s).ceil() as u64;
    let mut sum = 0;
    for t in 0..end {
        let (a, b) = (t as f64, t as f64 + 1.0);
        let want = offsets.iter().filter(|&&o| a <= o && o < b).count() as u64;
        assert_eq!(scheduled_between(&s, a, b), want, "second {t}");
        sum += want;
    }
    assert_eq!(sum, offsets.len() as u64);
    // Exact boundaries of a constant rate: [1, 2) holds iterations 10..20.
    let c = schedule(10.0, &[(3.0, 10.0)]);
    assert_eq!(scheduled_between(&c, 1.0, 2.0), 10);
    assert_eq!(scheduled_between(&c, -5.0, 50.0), 30);
    assert_eq!(scheduled_between(&c, 2.0, 1.0), 0);
}

#[test]
fn offset_agrees_with_the_iterator() {
    let s = schedule(1.0, &[(5.0, 50.0), (5.0, 2.0)]);
    let a = Arrivals::new(&s);
    for (n, o) in a.clone().enumerate() {
        assert_eq!(a.offset(n as u64), Some(o));
    }
    assert_eq!(a.offset(a.total()), None);
}

#[test]
fn an_empty_or_zero_schedule_has_no_arrivals() {
    assert_eq!(Arrivals::new(&schedule(5.0, &[])).next(), None);
    assert_eq!(Arrivals::new(&schedule(0.0, &[(10.0, 0.0)])).next(), None);
    assert_eq!(Arrivals::new(&schedule(f64::NAN, &[(1.0, 1.0)])).total(), 0);
}
