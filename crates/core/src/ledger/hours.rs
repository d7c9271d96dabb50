//! What a study's wall time went to, from its journal and its runs' events.csv and run.json
//! (docs/results.md, "Where the time went"): deploy, warm-up, measuring, teardown, gates,
//! settling (sealing and moving a finished run) and waiting (everything else: between
//! runs, and while no feedbench ran). The parts add up to the whole exactly: waiting is
//! what the others leave.

use std::path::Path;

use serde::Serialize;

use super::journal::{Entry, Event};
use crate::rundir::record::RunRecord;

/// The phases of one run on the wall clock (unix ns), from its events.csv; `end` from its
/// run.json (or its last event when it has none: an interrupted run).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Phases {
    pub deploy: Option<i128>,
    pub warmup: Option<i128>,
    pub measure: Option<i128>,
    pub teardown: Option<i128>,
    pub end: Option<i128>,
}

/// Seconds spent on each part of a study.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Split {
    pub total_s: f64,
    pub deploy_s: f64,
    pub warmup_s: f64,
    pub measuring_s: f64,
    pub teardown_s: f64,
    pub gates_s: f64,
    pub settling_s: f64,
    pub waiting_s: f64,
}

impl Split {
    /// The parts, named, in the order a run goes through them.
    pub fn parts(&self) -> [(&'static str, f64); 7] {
        [
            ("gates", self.gates_s),
            ("deploy", self.deploy_s),
            ("warm-up", self.warmup_s),
            ("measuring", self.measuring_s),
            ("teardown", self.teardown_s),
            ("settling", self.settling_s),
            ("waiting", self.waiting_s),
        ]
    }

    /// Everything but warm-up and measuring, as a share of the whole (0 to 1).
    pub fn overhead(&self) -> f64 {
        if self.total_s > 0.0 {
            1.0 - (self.warmup_s + self.measuring_s) / self.total_s
        } else {
            0.0
        }
    }
}

fn secs(ns: i128) -> f64 {
    ns.max(0) as f64 / 1e9
}

/// Seconds from `from` to `to` (0 when `to` is earlier); saturating, so wall clocks at
/// i128's ends from a damaged journal or events.csv never overflow.
fn span(from: i128, to: i128) -> f64 {
    secs(to.saturating_sub(from))
}

/// The run a settling entry names, and the directory that holds that attempt (`None` when it
/// had none). A run the validity checks set aside is settled by its `run-invalidated` line
/// (its directory in `_invalid_<reason>/`): its time is its own, not waiting. An attempt that
/// did not finish is moved aside (`_aborted/`, `_interrupted/`): one still named under
/// `runs/` had no directory when it was found (killed before it made one), and that name may
/// by now hold the next attempt's, whose phases are not its.
fn settled_dir(e: &Event) -> Option<(&str, Option<&str>)> {
    match e {
        Event::RunFinished { run, dir, .. } | Event::RunInvalidated { run, dir, .. } => {
            Some((run, Some(dir)))
        }
        Event::RunAborted { run, dir, .. } | Event::RunInterrupted { run, dir, .. } => {
            Some((run, (!e.left_no_directory()).then_some(dir.as_str())))
        }
        _ => None,
    }
}

/// Where the directory of `run`'s attempt `attempt` is now, if a later line moved it (a
/// person's invalidation, an amendment's or a dependency's superseding): its phases are read
/// there, the directory the settling line named being empty by then.
fn moved_to<'a>(later: &[(i128, &'a Event)], run: &str, attempt: u32) -> Option<&'a str> {
    later.iter().rev().find_map(|(_, e)| match e {
        Event::RunInvalidated {
            run: r,
            attempt: a,
            dir,
            ..
        }
        | Event::RunSupersededByDependency {
            run: r,
            attempt: a,
            dir,
            ..
        } if r == run && *a == attempt => Some(dir.as_str()),
        Event::RunSuperseded {
            run: r,
            attempt: a,
            dir: Some(dir),
            ..
        } if r == run && *a == attempt => Some(dir.as_str()),
        _ => None,
    })
}

/// The split, from the journal's entries (any order; entries whose `wall_ns` does not parse
/// are left out) and each run's phases by its directory (relative to the study's).
pub fn split(entries: &[Entry], phases_of: &mut dyn FnMut(&str) -> Option<Phases>) -> Split {
    let mut timed: Vec<(i128, &Event)> = entries
        .iter()
        .filter_map(|e| e.wall_ns.parse::<i128>().ok().map(|t| (t, &e.event)))
        .collect();
    timed.sort_by_key(|t| t.0);
    let (Some(first), Some(last)) = (timed.first(), timed.last()) else {
        return Split::default();
    };
    let mut s = Split {
        total_s: span(first.0, last.0),
        ..Split::default()
    };
    for (i, (t, e)) in timed.iter().enumerate() {
        match e {
            Event::GatePassed { seconds, .. } => s.gates_s += seconds.max(0.0),
            // The gate ran since the entry before it.
            Event::ContenderExcluded { .. } => {
                s.gates_s += span(timed[i.saturating_sub(1)].0, *t);
            }
            Event::RunStarted { run, attempt, .. } => {
                // The attempt's settling entry: the next one that names the run.
                let Some((j, settled_at, dir)) =
                    timed
                        .iter()
                        .enumerate()
                        .skip(i + 1)
                        .find_map(|(j, (t2, e2))| {
                            settled_dir(e2)
                                .filter(|d| d.0 == run)
                                .map(|d| (j, *t2, d.1))
                        })
                else {
                    continue;
                };
                let dir = dir.map(|d| moved_to(&timed[j + 1..], run, *attempt).unwrap_or(d));
                let Some(p) = dir.and_then(&mut *phases_of) else {
                    continue;
                };
                let start = *t;
                let warmup = p.warmup.or(p.measure).or(p.teardown);
                if let Some(w) = warmup {
                    s.deploy_s += span(start, w);
                }
                if let (Some(w), Some(m)) = (p.warmup, p.measure) {
                    s.warmup_s += span(w, m);
                }
                if let (Some(m), Some(d)) = (p.measure, p.teardown.or(p.end)) {
                    s.measuring_s += span(m, d);
                }
                if let (Some(d), Some(end)) = (p.teardown, p.end) {
                    s.teardown_s += span(d, end);
                }
                // An interrupted run is found at the next resume: that wait is no settling.
                if !matches!(timed[j].1, Event::RunInterrupted { .. }) {
                    if let Some(end) = p.end {
                        s.settling_s += span(end, settled_at);
                    }
                }
            }
            _ => {}
        }
    }
    let accounted =
        s.deploy_s + s.warmup_s + s.measuring_s + s.teardown_s + s.gates_s + s.settling_s;
    s.waiting_s = (s.total_s - accounted).max(0.0);
    s
}

/// The phases of the run directory a journal line names (`rel`, relative to `study_dir`);
/// `None` when the path leads out of the study directory (`confine::inside`) or the
/// directory has no readable events.csv.
pub fn phases_at(study_dir: &Path, rel: &str) -> Option<Phases> {
    phases_in(&crate::confine::inside(study_dir, rel).ok()?)
}

/// A run directory's phases: its events.csv's `phase` events, and its end from run.json
/// (else the last event). `None` when it has no readable events.csv.
pub fn phases_in(dir: &Path) -> Option<Phases> {
    let file = crate::confine::open(&dir.join(crate::rundir::EVENTS_CSV)).ok()?;
    let mut reader = csv::Reader::from_reader(std::io::BufReader::new(file));
    let mut p = Phases::default();
    let mut last = None;
    for rec in reader.records() {
        let Ok(rec) = rec else { break };
        let Some(t) = rec.get(0).and_then(|w| w.parse::<i128>().ok()) else {
            continue;
        };
        last = Some(t);
        if rec.get(2) == Some("phase") {
            let slot = match rec.get(3) {
                Some("deploy") => &mut p.deploy,
                Some("warmup") => &mut p.warmup,
                Some("measure") => &mut p.measure,
                Some("teardown") => &mut p.teardown,
                _ => continue,
            };
            slot.get_or_insert(t);
        }
    }
    p.end = RunRecord::read(dir).ok().map(|r| r.ended_wall_ns).or(last);
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i128 = 1_000_000_000;

    fn entry(t_s: i128, event: Event) -> Entry {
        Entry {
            format_version: 1,
            wall_ns: (t_s * S).to_string(),
            prev: None,
            event,
        }
    }

    fn started(run: &str) -> Event {
        Event::RunStarted {
            run: run.into(),
            run_hash: "h".into(),
            attempt: 1,
            dir: format!("runs/{run}"),
        }
    }

    fn finished(run: &str) -> Event {
        Event::RunFinished {
            run: run.into(),
            run_hash: "h".into(),
            attempt: 1,
            dir: format!("runs/{run}"),
            objective: None,
            cleanup_ok: true,
        }
    }

    #[test]
    fn the_parts_add_up_to_the_study_wall_time() {
        let entries = vec![
            entry(
                0,
                Event::GatePassed {
                    contender: "c".into(),
                    image: "i".into(),
                    seconds: 4.0,
                },
            ),
            entry(5, started("a")),
            entry(70, finished("a")),
            entry(80, started("b")),
            entry(140, finished("b")),
        ];
        // Run a: deploy 5 → 15, warm-up 15 → 20, measured 20 → 60, teardown 60 → 68, settled at 70.
        let mut phases = |dir: &str| {
            Some(match dir {
                "runs/a" => Phases {
                    deploy: Some(6 * S),
                    warmup: Some(15 * S),
                    measure: Some(20 * S),
                    teardown: Some(60 * S),
                    end: Some(68 * S),
                },
                _ => Phases {
                    deploy: Some(80 * S),
                    warmup: Some(90 * S),
                    measure: Some(95 * S),
                    teardown: Some(135 * S),
                    end: Some(139 * S),
                },
            })
        };
        let s = split(&entries, &mut phases);
        assert_eq!(s.total_s, 140.0);
        assert_eq!((s.deploy_s, s.warmup_s, s.measuring_s), (20.0, 10.0, 80.0));
        assert_eq!((s.teardown_s, s.settling_s, s.gates_s), (12.0, 3.0, 4.0));
        // 140 − 129: the gap between the runs, and the gate's neighbourhood.
        assert_eq!(s.waiting_s, 11.0);
        let sum: f64 = s.parts().iter().map(|p| p.1).sum();
        assert_eq!(sum, s.total_s);
        assert!((s.overhead() - (1.0 - 90.0 / 140.0)).abs() < 1e-12);
    }

    fn invalidated(run: &str, dir: &str, by: crate::ledger::journal::Decider) -> Event {
        Event::RunInvalidated {
            run: run.into(),
            run_hash: "h".into(),
            attempt: 1,
            dir: dir.into(),
            reason: "fault-proxy-cpu".into(),
            by,
            evidence: Vec::new(),
        }
    }

    fn phases_from(start_s: i128) -> Phases {
        Phases {
            deploy: Some(start_s * S),
            warmup: Some((start_s + 10) * S),
            measure: Some((start_s + 15) * S),
            teardown: Some((start_s + 55) * S),
            end: Some((start_s + 59) * S),
        }
    }

    /// A ramp the validity checks set aside as it was settled, and a run a person invalidated
    /// after it finished: each one's time is its own, read where its directory is now.
    #[test]
    fn a_run_set_aside_is_timed_where_its_directory_went() {
        use crate::ledger::journal::Decider;
        let entries = vec![
            entry(0, started("a")),
            entry(
                60,
                invalidated("a", "_invalid_fault-proxy-cpu/a", Decider::Feedbench),
            ),
            entry(100, started("b")),
            entry(160, finished("b")),
            entry(
                200,
                invalidated("b", "_invalid_fault-proxy-cpu/b", Decider::Person),
            ),
        ];
        let mut read = Vec::new();
        let mut phases = |dir: &str| {
            read.push(dir.to_string());
            match dir {
                "_invalid_fault-proxy-cpu/a" => Some(phases_from(0)),
                "_invalid_fault-proxy-cpu/b" => Some(phases_from(100)),
                _ => None,
            }
        };
        let s = split(&entries, &mut phases);
        assert_eq!(
            read,
            ["_invalid_fault-proxy-cpu/a", "_invalid_fault-proxy-cpu/b"]
        );
        assert_eq!((s.deploy_s, s.warmup_s, s.measuring_s), (20.0, 10.0, 80.0));
        assert_eq!((s.teardown_s, s.settling_s), (8.0, 2.0));
        // Of the 200 s, the two runs' parts are 120 s; the rest waits: the gap between the
        // runs, and the 40 s before the person's decision.
        assert_eq!(s.waiting_s, 200.0 - 120.0);
    }

    #[test]
    fn an_interrupted_run_waits_rather_than_settles_and_a_missing_directory_waits_too() {
        let entries = vec![
            entry(0, started("a")),
            entry(
                1000,
                Event::RunInterrupted {
                    run: "a".into(),
                    run_hash: "h".into(),
                    attempt: 1,
                    dir: "_interrupted/a".into(),
                    found: "events.csv".into(),
                },
            ),
            entry(1001, started("b")),
            entry(1100, finished("b")),
        ];
        let mut phases = |dir: &str| {
            (dir == "_interrupted/a").then_some(Phases {
                deploy: Some(S),
                warmup: Some(10 * S),
                measure: None,
                teardown: None,
                end: Some(12 * S),
            })
        };
        let s = split(&entries, &mut phases);
        assert_eq!((s.deploy_s, s.warmup_s, s.settling_s), (10.0, 0.0, 0.0));
        assert_eq!(s.waiting_s, 1090.0);
    }

    #[test]
    fn an_attempt_killed_before_it_had_a_directory_is_not_given_the_next_attempts_phases() {
        let interrupted = Event::RunInterrupted {
            run: "a".into(),
            run_hash: "h".into(),
            attempt: 1,
            dir: "runs/a".into(),
            found: "no directory".into(),
        };
        let entries = vec![
            entry(0, started("a")),
            entry(10, interrupted),
            entry(20, started("a")),
            entry(100, finished("a")),
        ];
        // Only the second attempt made `runs/a`.
        let mut phases = |dir: &str| {
            (dir == "runs/a").then_some(Phases {
                deploy: Some(21 * S),
                warmup: Some(30 * S),
                measure: Some(40 * S),
                teardown: Some(90 * S),
                end: Some(95 * S),
            })
        };
        let s = split(&entries, &mut phases);
        assert_eq!((s.deploy_s, s.warmup_s, s.measuring_s), (10.0, 10.0, 50.0));
        assert_eq!((s.teardown_s, s.settling_s), (5.0, 5.0));
        assert_eq!(s.waiting_s, 20.0);
        let sum: f64 = s.parts().iter().map(|p| p.1).sum();
        assert_eq!(sum, s.total_s);
    }

    #[test]
    fn phases_are_read_from_events_csv() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(crate::rundir::EVENTS_CSV),
            "wall_ns,t_s,event,subject,detail\n1,0,phase,deploy,\n5,0,phase,warmup,\n7,0,load-started,,\n9,0,phase,measure,\nnot a number,0,phase,teardown,\n12,0,phase,teardown,\n13,0,note,,x\n",
        )
        .unwrap();
        let p = phases_in(dir.path()).unwrap();
        assert_eq!(
            p,
            Phases {
                deploy: Some(1),
                warmup: Some(5),
                measure: Some(9),
                teardown: Some(12),
                end: Some(13),
            }
        );
        assert_eq!(phases_in(&dir.path().join("missing")), None);
    }

    #[test]
    fn wall_clocks_at_i128s_ends_do_not_overflow() {
        // A damaged journal (tests/offline/hostile_study.rs): status and report panicked here.
        let mut entries = vec![entry(0, started("a")), entry(0, finished("a"))];
        entries[0].wall_ns = i128::MIN.to_string();
        entries[1].wall_ns = i128::MAX.to_string();
        let mut phases = |_: &str| {
            Some(Phases {
                deploy: Some(i128::MAX),
                warmup: Some(i128::MIN),
                measure: Some(i128::MAX),
                teardown: Some(i128::MIN),
                end: Some(i128::MAX),
            })
        };
        let s = split(&entries, &mut phases);
        assert!(
            s.parts().iter().all(|(_, v)| v.is_finite() && *v >= 0.0),
            "{s:?}"
        );
    }

    #[test]
    fn a_directory_out_of_the_study_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("study/runs/a");
        std::fs::create_dir_all(&run).unwrap();
        std::fs::write(
            dir.path().join(crate::rundir::EVENTS_CSV),
            "wall_ns,t_s,event,subject,detail\n1,0,phase,measure,\n",
        )
        .unwrap();
        std::fs::copy(
            dir.path().join(crate::rundir::EVENTS_CSV),
            run.join(crate::rundir::EVENTS_CSV),
        )
        .unwrap();
        let study = dir.path().join("study");
        assert!(phases_at(&study, "runs/a").is_some());
        assert_eq!(phases_at(&study, ".."), None);
        assert_eq!(phases_at(&study, "runs/../.."), None);
        assert_eq!(phases_at(&study, dir.path().to_str().unwrap()), None);
    }
}
