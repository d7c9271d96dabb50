//! Declared deviations of execution: every run that needed more than one attempt (earlier
//! attempts interrupted, or aborted by a guard or a failure), every contender its gate
//! excluded, and every result set aside because a run it took a figure from was. The journal records each with its reason, so they are declared; a paper
//! reports them all the same.

use std::collections::BTreeMap;

use super::{quoted, Draft, Entries};
use crate::audit::history::short;
use crate::audit::report::{count, Kind, Standing};
use crate::ledger::journal::Event;

pub(super) fn check(entries: &Entries) -> Vec<Draft> {
    let mut drafts = Vec::new();
    // Runs in the order of their first failed attempt.
    let mut order: Vec<&str> = Vec::new();
    let mut by_run: BTreeMap<&str, (Vec<String>, Vec<String>)> = BTreeMap::new();
    for (line, e) in entries {
        let (run, reason, evidence) = match e {
            Event::RunInterrupted {
                run,
                run_hash,
                attempt,
                dir,
                found,
            } => (
                run,
                "feedbench stopped during the run (killed, a reboot or an engine restart); the next resume recorded it and ran it again".to_string(),
                format!(
                    "journal line {line}: run-interrupted, attempt {attempt} (run hash {}): found {found}; now in `{dir}`",
                    short(run_hash)
                ),
            ),
            Event::RunAborted {
                run,
                run_hash,
                attempt,
                dir,
                reason,
            } => (
                run,
                format!("aborted: {reason}"),
                format!(
                    "journal line {line}: run-aborted, attempt {attempt} (run hash {}); now in `{dir}`",
                    short(run_hash)
                ),
            ),
            Event::ContenderExcluded {
                contender,
                image,
                exit_code,
                reason,
                output,
                runs,
            } => {
                let tail: Vec<&str> = output.lines().rev().take(3).collect();
                let mut evidence = vec![format!(
                    "journal line {line}: contender-excluded, gate image {image}, exit code {}",
                    exit_code.map_or("none".into(), |c| c.to_string())
                )];
                evidence.extend(
                    tail.iter()
                        .rev()
                        .filter(|l| !l.trim().is_empty())
                        .map(|l| format!("gate output: {}", l.trim())),
                );
                evidence.push(format!("runs not run: {}", quoted(runs)));
                drafts.push(Draft {
                    kind: Kind::ContenderExcluded,
                    standing: Standing::Declared,
                    subject: contender.clone(),
                    title: format!(
                        "Contender `{contender}` failed its gate; its {} did not run",
                        count(runs.len(), "run")
                    ),
                    reason: reason.clone(),
                    evidence,
                });
                continue;
            }
            Event::RunSupersededByDependency {
                run,
                run_hash,
                attempt,
                dir,
                dependency,
                reason,
            } => {
                drafts.push(Draft {
                    kind: Kind::RunSupersededByDependency,
                    standing: Standing::Declared,
                    subject: run.clone(),
                    title: format!(
                        "Run `{run}` no longer stands: `{dependency}`, which it took a figure from, was set aside"
                    ),
                    reason: format!("`{dependency}` was set aside by a person: {reason}"),
                    evidence: vec![format!(
                        "journal line {line}: run-superseded-by-dependency, attempt {attempt} (run hash {}); now in `{dir}`",
                        short(run_hash)
                    )],
                });
                continue;
            }
            _ => continue,
        };
        let slot = by_run.entry(run.as_str()).or_insert_with(|| {
            order.push(run.as_str());
            (Vec::new(), Vec::new())
        });
        if !slot.0.contains(&reason) {
            slot.0.push(reason);
        }
        slot.1.push(evidence);
    }
    for run in order {
        let (reasons, evidence) = &by_run[run];
        drafts.push(Draft {
            kind: Kind::RunRepeated,
            standing: Standing::Declared,
            subject: run.to_string(),
            title: format!(
                "Run `{run}` needed another attempt after {} that did not finish",
                count(evidence.len(), "attempt")
            ),
            reason: reasons.join("; "),
            evidence: evidence.clone(),
        });
    }
    drafts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_repeated_run_and_each_excluded_contender_is_one_declared_item() {
        let interrupted = |attempt| Event::RunInterrupted {
            run: "a/x/r1".into(),
            run_hash: "0123456789abcdef".into(),
            attempt,
            dir: format!("_interrupted/a_x_r1.{attempt}"),
            found: "events.csv; no manifest".into(),
        };
        let aborted = Event::RunAborted {
            run: "a/y/r1".into(),
            run_hash: "fedcba9876543210".into(),
            attempt: 1,
            dir: "_aborted/a_y_r1".into(),
            reason: "guard disk-floor: 1 GiB against 2 GiB".into(),
        };
        let excluded = Event::ContenderExcluded {
            contender: "m".into(),
            image: "feedbench/gate:dev".into(),
            exit_code: Some(1),
            reason: "exit code 1".into(),
            output: "visibility: 6 failed\ngate FAILED: 54 failed expectation(s)\n".into(),
            runs: vec!["m/x/r1".into(), "m/y/r1".into()],
        };
        let (i1, i2) = (interrupted(1), interrupted(2));
        let entries: Vec<(usize, &Event)> = vec![(3, &i1), (5, &aborted), (7, &i2), (9, &excluded)];
        let d = check(&entries);
        assert_eq!(d.len(), 3);
        assert_eq!(d[0].kind, Kind::ContenderExcluded);
        assert!(d[0].evidence.iter().any(|e| e.contains("gate FAILED: 54")));
        assert_eq!(d[1].subject, "a/x/r1");
        assert_eq!(d[1].evidence.len(), 2);
        assert!(d[1].title.contains("2 attempts"), "{}", d[1].title);
        assert!(d[1].evidence[0].starts_with("journal line 3: run-interrupted, attempt 1"));
        assert_eq!(
            d[2].reason,
            "aborted: guard disk-floor: 1 GiB against 2 GiB"
        );
        assert!(d.iter().all(|x| x.standing == Standing::Declared));
    }

    #[test]
    fn a_result_superseded_by_its_dependency_is_a_declared_item() {
        let e = Event::RunSupersededByDependency {
            run: "a/base/r1".into(),
            run_hash: "0123456789abcdef".into(),
            attempt: 1,
            dir: "_superseded/a_base_r1".into(),
            dependency: "a/ramp/r1".into(),
            reason: "swapping".into(),
        };
        let d = check(&[(4, &e)]);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].kind, Kind::RunSupersededByDependency);
        assert_eq!(d[0].standing, Standing::Declared);
        assert_eq!(d[0].subject, "a/base/r1");
        assert!(d[0].reason.contains("swapping"), "{}", d[0].reason);
        assert!(
            d[0].evidence[0].contains("journal line 4"),
            "{:?}",
            d[0].evidence
        );
    }
}
