//! Recorded ramps replayed through the live judge (`analysis::live`): their requests, as
//! the load generator recorded them, are fed in the order they ended, as the stream brings
//! them, and the saturation judged live, with the stop it decides, equals the one computed
//! afterwards from requests.csv. Each ramp is judged under its own objective and under
//! stricter p99 bounds, so that the first breach falls at each of its steps in turn.

use std::path::Path;

use feedbench_core::analysis::live::LiveRamp;
use feedbench_core::analysis::saturation::{self, Objective, Request, Step};
use feedbench_core::rundir::{record::RunRecord, requests};

/// A recorded ramp: its steps, its objective, and each request with its end.
fn recorded(dir: &str) -> (Vec<Step>, Objective, Vec<(Request, i128)>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let record = RunRecord::read(&dir).unwrap();
    let frame = record.frame.expect("a recorded ramp has a frame");
    let steps: Vec<Step> = frame
        .steps
        .iter()
        .map(|s| Step {
            rate: s.rate,
            start_ns: s.start_ns,
            end_ns: s.end_ns,
        })
        .collect();
    let o = &frame.objective;
    let objective = Objective {
        p99_ms: o.p99_ms,
        error_rate: o.failed_share,
        window_ns: o.window_ns,
    };
    let file = std::fs::File::open(dir.join("requests.csv")).unwrap();
    let reqs = requests::read(file)
        .map(|r| {
            let r = r.unwrap();
            (r.judged(frame.judged_by), i128::from(r.end_ns))
        })
        .collect();
    assert!(!steps.is_empty());
    (steps, objective, reqs)
}

/// Feeds the requests in end order, judging after each, and stops the load where the
/// judge says: requests started after the stop are never sent. Returns the live
/// saturation, the stop, and the requests that were sent.
fn replay(
    steps: &[Step],
    objective: &Objective,
    reqs: &[(Request, i128)],
    stops: bool,
) -> (
    saturation::Saturation,
    Option<feedbench_core::analysis::live::Stop>,
    Vec<Request>,
) {
    let longest = reqs.iter().map(|(r, end)| end - r.at_ns).max().unwrap();
    let mut live = LiveRamp::new(
        steps.to_vec(),
        *objective,
        longest + 2_000_000_000,
        1,
        stops,
    );
    let mut order: Vec<&(Request, i128)> = reqs.iter().collect();
    order.sort_by_key(|(r, end)| (*end, r.at_ns));
    let mut stop = None;
    let mut sent = Vec::new();
    for (r, end) in order {
        if stop.is_some_and(|s: feedbench_core::analysis::live::Stop| r.at_ns >= s.at_ns) {
            continue;
        }
        live.push(*r, *end);
        sent.push(*r);
        live.advance();
        stop = stop.or(live.stop());
    }
    live.finish();
    assert_eq!(live.late(), 0);
    (live.saturation(), stop, sent)
}

/// The p99 of each step's requests, from the recorded data.
fn step_p99s(steps: &[Step], objective: &Objective, reqs: &[(Request, i128)]) -> Vec<f64> {
    let all: Vec<Request> = reqs.iter().map(|(r, _)| *r).collect();
    saturation::saturation(&all, steps, objective, 1)
        .steps
        .iter()
        .map(|v| v.p99_ms.unwrap_or(0.0))
        .collect()
}

fn check(dir: &str) -> usize {
    let (steps, objective, reqs) = recorded(dir);
    let mut objectives = vec![objective];
    for p99 in step_p99s(&steps, &objective, &reqs) {
        objectives.push(Objective {
            p99_ms: p99 * 0.999,
            ..objective
        });
    }
    let mut breaches = std::collections::BTreeSet::new();
    for o in &objectives {
        let all: Vec<Request> = reqs.iter().map(|(r, _)| *r).collect();
        let offline = saturation::saturation(&all, &steps, o, 1);
        // Judged live with every step run (stop-on-breach: false) ...
        let (every, _, _) = replay(&steps, o, &reqs, false);
        assert_eq!(every, offline, "{dir}, p99 bound {} ms", o.p99_ms);
        // ... and stopping one step after the knee, once a second breach confirmed it: the
        // same saturation, from the requests the stopped ramp sent, over the steps it ran.
        let (live, stop, sent) = replay(&steps, o, &reqs, true);
        let ran = stop.map_or(steps.len(), |s| s.last + 1);
        let after = saturation::saturation(&sent, &steps[..ran], o, 1);
        let readings = |s: &saturation::Saturation| {
            (
                s.rate,
                s.sustained_breach,
                s.first_breach,
                s.transients.clone(),
            )
        };
        assert_eq!(readings(&live), readings(&after), "{dir}");
        assert_eq!(readings(&live), readings(&offline), "{dir}");
        if let Some(s) = stop {
            assert_eq!(Some(s.breach_rate), offline.sustained_breach, "{dir}");
            assert_eq!(s.last, s.breach + 1, "{dir}");
        }
        breaches.insert(offline.first_breach.map(|r| r as u64));
    }
    breaches.len()
}

#[test]
fn the_smoke_studys_recorded_ramp_judged_live_saturates_where_it_does_afterwards() {
    // Never breached under its own objective; under the stricter bounds, at several steps.
    assert!(check("tests/fixtures/ramps/smoke") >= 3);
}
