//! The pure schedule: from the planned runs and the journal, each run's state, what a
//! resume must do, and whether the plan changed under completed runs.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::journal::{Event, Evidence, RunChange};
use crate::plan::expand::RunIdParts;
use crate::plan::RunSpec;

/// Where a planned run stands, for the plan as it is now.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum RunState {
    NotRun,
    CompletedValid {
        attempt: u32,
        dir: String,
        objective: Option<String>,
    },
    Invalid {
        attempt: u32,
        dir: String,
        reason: String,
        evidence: Vec<Evidence>,
    },
    Skipped {
        reason: String,
    },
    /// Started and never finished; the next resume records it and runs it again.
    Interrupted {
        attempt: u32,
        dir: String,
    },
}

impl RunState {
    pub fn label(&self) -> &'static str {
        match self {
            RunState::NotRun => "not run",
            RunState::CompletedValid { .. } => "completed valid",
            RunState::Invalid { .. } => "invalid",
            RunState::Skipped { .. } => "skipped",
            RunState::Interrupted { .. } => "interrupted",
        }
    }

    /// Whether `run --resume` leaves the run as it is.
    pub fn settled(&self) -> bool {
        matches!(
            self,
            RunState::CompletedValid { .. } | RunState::Invalid { .. } | RunState::Skipped { .. }
        )
    }
}

/// A run's standing record in the journal: the last word on it, for one run hash.
#[derive(Debug, Clone, PartialEq)]
struct Record {
    run_hash: String,
    state: RunState,
}

/// One planned run's state, with its history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunStatus {
    pub run: String,
    pub run_hash: String,
    #[serde(flatten)]
    pub state: RunState,
    /// Attempts started so far (any run hash).
    pub attempts: u32,
    /// Runs that were superseded by amendments, by their old hash.
    pub superseded: Vec<String>,
    /// The run whose setting aside (invalidated or skipped by a person) superseded this
    /// run's last result, while it is not run again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by_dependency: Option<String>,
}

impl RunStatus {
    /// The state in words; a run an amendment superseded and not yet run again is
    /// `superseded`.
    pub fn label(&self) -> &'static str {
        match self.state {
            RunState::NotRun if !self.superseded.is_empty() => "superseded",
            ref s => s.label(),
        }
    }
}

/// What the journal says, folded.
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    records: BTreeMap<String, Record>,
    open: BTreeMap<String, (String, u32, String)>,
    attempts: BTreeMap<String, u32>,
    superseded: BTreeMap<String, Vec<String>>,
    /// Runs superseded because a run they depend on was set aside: run → that run.
    by_dependency: BTreeMap<String, String>,
    /// Contenders excluded by their gate, with the reason.
    pub excluded: BTreeMap<String, String>,
    pub gate_passed: BTreeSet<String>,
    /// The plan hash the study last ran under (study started or plan amended).
    pub plan_hash: Option<String>,
    /// Results an amendment superseded whose `run-superseded` event is not written yet.
    pub pending: Vec<Pending>,
    /// The inputs last recorded (`inputs-read`): their digest and files.
    pub inputs: Option<(String, Vec<crate::inputs::InputFile>)>,
}

/// A result an amendment superseded, waiting for its directory to be moved aside.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub run: String,
    pub run_hash: String,
    pub attempt: u32,
    pub dir: Option<String>,
    pub amendment: String,
}

impl Ledger {
    pub fn fold<'a>(events: impl IntoIterator<Item = &'a Event>) -> Ledger {
        let mut l = Ledger::default();
        for e in events {
            l.apply(e);
        }
        l
    }

    /// The run's standing result for `run_hash`, if it has one, no longer stands.
    fn supersede(&mut self, run: &str, run_hash: &str) {
        if self
            .records
            .get(run)
            .is_some_and(|r| r.run_hash == run_hash)
        {
            self.records.remove(run);
            self.superseded
                .entry(run.to_string())
                .or_default()
                .push(run_hash.to_string());
        }
    }

    fn settle(&mut self, run: &str, run_hash: &str, state: RunState) {
        self.open.remove(run);
        self.records.insert(
            run.to_string(),
            Record {
                run_hash: run_hash.to_string(),
                state,
            },
        );
    }

    pub fn apply(&mut self, e: &Event) {
        match e {
            Event::StudyStarted { plan_hash, .. } => self.plan_hash = Some(plan_hash.clone()),
            Event::PlanAmended {
                new_plan_hash,
                changes,
                reason,
                ..
            } => self.amend(new_plan_hash, changes, reason),
            Event::RunStarted {
                run,
                run_hash,
                attempt,
                dir,
            } => {
                let n = self.attempts.entry(run.clone()).or_default();
                *n = (*n).max(*attempt);
                self.open
                    .insert(run.clone(), (run_hash.clone(), *attempt, dir.clone()));
            }
            Event::RunFinished {
                run,
                run_hash,
                attempt,
                dir,
                objective,
                ..
            } => self.settle(
                run,
                run_hash,
                RunState::CompletedValid {
                    attempt: *attempt,
                    dir: dir.clone(),
                    objective: objective.clone(),
                },
            ),
            // An attempt that did not finish leaves no result: the run is to do again.
            Event::RunAborted { run, .. } | Event::RunInterrupted { run, .. } => {
                self.open.remove(run);
                self.records.remove(run);
            }
            Event::RunInvalidated {
                run,
                run_hash,
                attempt,
                dir,
                reason,
                evidence,
                ..
            } => self.settle(
                run,
                run_hash,
                RunState::Invalid {
                    attempt: *attempt,
                    dir: dir.clone(),
                    reason: reason.clone(),
                    evidence: evidence.clone(),
                },
            ),
            Event::RunSkipped {
                run,
                run_hash,
                reason,
                ..
            } => self.settle(
                run,
                run_hash,
                RunState::Skipped {
                    reason: reason.clone(),
                },
            ),
            Event::RunSupersededByDependency {
                run,
                run_hash,
                dependency,
                ..
            } => {
                self.by_dependency.insert(run.clone(), dependency.clone());
                self.supersede(run, run_hash);
            }
            Event::RunSuperseded { run, run_hash, .. } => {
                self.pending
                    .retain(|p| !(&p.run == run && &p.run_hash == run_hash));
                self.supersede(run, run_hash);
            }
            Event::GatePassed { contender, .. } => {
                self.gate_passed.insert(contender.clone());
            }
            Event::ContenderExcluded {
                contender, reason, ..
            } => {
                self.excluded.insert(contender.clone(), reason.clone());
            }
            Event::InputsRead { digest, files } => {
                self.inputs = Some((digest.clone(), files.clone()));
            }
            Event::UncommittedPlan { .. }
            | Event::EngineShared { .. }
            | Event::TornLineFound { .. }
            | Event::ClockSteppedBack { .. } => {}
        }
    }

    /// A declared amendment: the plan hash it moves to; every excluded contender gets another
    /// gate (the change may be its fix), and a contender whose runs changed is gated again.
    /// The amendment itself supersedes the results it lists; each one's `run-superseded`
    /// event then says where its directory went. Until then it is pending, so a crash
    /// between the two is finished by the next run.
    fn amend(&mut self, new_plan_hash: &str, changes: &[RunChange], reason: &str) {
        self.plan_hash = Some(new_plan_hash.to_string());
        self.excluded.clear();
        for c in changes {
            self.gate_passed.remove(RunIdParts::contender_of(&c.run));
            let Some(old) = &c.old_run_hash else { continue };
            // Only a result of the old definition is superseded.
            if self.records.get(&c.run).is_none_or(|r| &r.run_hash != old) {
                continue;
            }
            let Some(rec) = self.records.remove(&c.run) else {
                continue;
            };
            let (attempt, dir) = match rec.state {
                RunState::CompletedValid { attempt, dir, .. }
                | RunState::Invalid { attempt, dir, .. } => (attempt, Some(dir)),
                _ => (0, None),
            };
            self.superseded
                .entry(c.run.clone())
                .or_default()
                .push(old.clone());
            self.pending.push(Pending {
                run: c.run.clone(),
                run_hash: old.clone(),
                attempt,
                dir,
                amendment: reason.to_string(),
            });
        }
    }

    /// The attempt number the next start of `run` gets.
    pub fn next_attempt(&self, run: &str) -> u32 {
        self.attempts.get(run).copied().unwrap_or(0) + 1
    }

    /// Runs started and never settled: (run, run hash, attempt, dir).
    /// Every completed valid result the journal records, whatever its run hash, with the
    /// directory it names: what an amendment may move.
    pub fn standing_dirs(&self) -> Vec<(String, String)> {
        self.records
            .iter()
            .filter_map(|(run, r)| match &r.state {
                RunState::CompletedValid { dir, .. } => Some((run.clone(), dir.clone())),
                _ => None,
            })
            .collect()
    }

    /// The objective verdict the journal recorded for a run's completed valid result (its
    /// manifest's), if it has one.
    pub fn recorded_objective(&self, run: &str) -> Option<&str> {
        match &self.records.get(run)?.state {
            RunState::CompletedValid { objective, .. } => objective.as_deref(),
            _ => None,
        }
    }

    pub fn open_runs(&self) -> Vec<(String, String, u32, String)> {
        self.open
            .iter()
            .map(|(r, (h, a, d))| (r.clone(), h.clone(), *a, d.clone()))
            .collect()
    }

    /// Every planned run's state under the plan as it is now. A run whose standing record
    /// is for another hash is `NotRun` here; `plan_change` reports it.
    pub fn status(&self, runs: &[RunSpec]) -> Vec<RunStatus> {
        runs.iter()
            .map(|r| {
                let state = if let Some((h, attempt, dir)) = self.open.get(&r.id) {
                    if *h == r.run_hash {
                        RunState::Interrupted {
                            attempt: *attempt,
                            dir: dir.clone(),
                        }
                    } else {
                        RunState::NotRun
                    }
                } else {
                    match self.records.get(&r.id) {
                        Some(rec) if rec.run_hash == r.run_hash => rec.state.clone(),
                        _ => match self.excluded.get(&r.contender) {
                            Some(why) => RunState::Skipped {
                                reason: format!("contender excluded by its gate: {why}"),
                            },
                            None => RunState::NotRun,
                        },
                    }
                };
                let state_is_not_run = matches!(state, RunState::NotRun);
                RunStatus {
                    run: r.id.clone(),
                    run_hash: r.run_hash.clone(),
                    state,
                    attempts: self.attempts.get(&r.id).copied().unwrap_or(0),
                    superseded: self.superseded.get(&r.id).cloned().unwrap_or_default(),
                    superseded_by_dependency: match state_is_not_run {
                        true => self.by_dependency.get(&r.id).cloned(),
                        false => None,
                    },
                }
            })
            .collect()
    }

    /// How the plan now differs from what the study ran under: None when it does not. The
    /// changes list every run whose standing record no longer matches (changed hash or
    /// gone from the plan), and the runs that depend on them.
    pub fn plan_change(&self, plan_hash: &str, runs: &[RunSpec]) -> Option<PlanChange> {
        let old = self.plan_hash.as_ref()?;
        let planned: BTreeMap<&str, &RunSpec> = runs.iter().map(|r| (r.id.as_str(), r)).collect();
        let mut changes = Vec::new();
        let mut affected = BTreeSet::new();
        for (run, rec) in &self.records {
            let now = planned.get(run.as_str()).map(|r| r.run_hash.clone());
            if now.as_deref() != Some(rec.run_hash.as_str()) {
                changes.push(RunChange {
                    run: run.clone(),
                    old_run_hash: Some(rec.run_hash.clone()),
                    new_run_hash: now,
                });
                affected.insert(run.clone());
            }
        }
        // A run that took a figure from an affected run (a rate from its saturation) no
        // longer stands either.
        loop {
            let more: Vec<String> = runs
                .iter()
                .filter(|r| !affected.contains(&r.id) && self.records.contains_key(&r.id))
                .filter(|r| r.depends_on.iter().any(|d| affected.contains(d)))
                .map(|r| r.id.clone())
                .collect();
            if more.is_empty() {
                break;
            }
            for run in more {
                let h = self.records[&run].run_hash.clone();
                changes.push(RunChange {
                    run: run.clone(),
                    old_run_hash: Some(h.clone()),
                    new_run_hash: Some(h),
                });
                affected.insert(run);
            }
        }
        // The same plan hash with changed run hashes is a change of feedbench's own
        // definition of the runs (a new version): it is declared like any other.
        if old == plan_hash && changes.is_empty() {
            return None;
        }
        Some(PlanChange {
            old_plan_hash: old.clone(),
            new_plan_hash: plan_hash.to_string(),
            changes,
        })
    }
}

/// A plan that differs from the one the study ran under.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanChange {
    pub old_plan_hash: String,
    pub new_plan_hash: String,
    /// Runs whose results no longer stand for the plan.
    pub changes: Vec<RunChange>,
}

/// Counts by state label.
pub fn counts(status: &[RunStatus]) -> BTreeMap<&'static str, usize> {
    let mut c = BTreeMap::new();
    for s in status {
        *c.entry(s.label()).or_default() += 1;
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::Decider;

    fn spec(id: &str, hash: &str, deps: &[&str]) -> RunSpec {
        RunSpec {
            id: id.into(),
            run_hash: hash.into(),
            contender: id.split('/').next().unwrap().into(),
            profile: id.split('/').nth(1).unwrap().into(),
            fault: None,
            repetition: 1,
            depends_on: deps.iter().map(|d| d.to_string()).collect(),
            estimated_duration_s: None,
            inputs: Vec::new(),
        }
    }

    fn started(run: &str, hash: &str, attempt: u32) -> Event {
        Event::RunStarted {
            run: run.into(),
            run_hash: hash.into(),
            attempt,
            dir: format!("runs/{attempt}"),
        }
    }

    fn finished(run: &str, hash: &str, attempt: u32) -> Event {
        Event::RunFinished {
            run: run.into(),
            run_hash: hash.into(),
            attempt,
            dir: format!("runs/{attempt}"),
            objective: Some("met".into()),
            cleanup_ok: true,
        }
    }

    fn study(plan_hash: &str) -> Event {
        Event::StudyStarted {
            plan_file: "p.yaml".into(),
            plan_hash: plan_hash.into(),
            feedbench_version: "0".into(),
            git_commit: None,
            git_clean: Some(true),
            resume: false,
            runs_planned: 2,
            runs_to_do: Vec::new(),
        }
    }

    #[test]
    fn a_started_run_without_an_end_is_interrupted_and_its_next_attempt_counts_on() {
        let runs = [spec("a/ramp/r1", "h1", &[])];
        let l = Ledger::fold(&[study("P"), started("a/ramp/r1", "h1", 1)]);
        assert_eq!(l.open_runs().len(), 1);
        assert!(matches!(
            l.status(&runs)[0].state,
            RunState::Interrupted { attempt: 1, .. }
        ));
        assert_eq!(l.next_attempt("a/ramp/r1"), 2);
        let l = Ledger::fold(&[
            study("P"),
            started("a/ramp/r1", "h1", 1),
            Event::RunInterrupted {
                run: "a/ramp/r1".into(),
                run_hash: "h1".into(),
                attempt: 1,
                dir: "_interrupted/x".into(),
                found: "no manifest".into(),
            },
            started("a/ramp/r1", "h1", 2),
            finished("a/ramp/r1", "h1", 2),
        ]);
        let s = &l.status(&runs)[0];
        assert!(matches!(
            s.state,
            RunState::CompletedValid { attempt: 2, .. }
        ));
        assert!(s.state.settled());
        assert_eq!(s.attempts, 2);
        assert!(l.open_runs().is_empty());
    }

    #[test]
    fn aborted_runs_are_to_do_again_and_invalid_or_skipped_ones_are_settled() {
        let runs = [
            spec("a/x/r1", "h1", &[]),
            spec("a/x/r2", "h2", &[]),
            spec("a/x/r3", "h3", &[]),
        ];
        let l = Ledger::fold(&[
            started("a/x/r1", "h1", 1),
            Event::RunAborted {
                run: "a/x/r1".into(),
                run_hash: "h1".into(),
                attempt: 1,
                dir: "_aborted/x".into(),
                reason: "guard".into(),
            },
            started("a/x/r2", "h2", 1),
            Event::RunInvalidated {
                run: "a/x/r2".into(),
                run_hash: "h2".into(),
                attempt: 1,
                dir: "_invalid_fault-proxy-cpu/x".into(),
                reason: "fault-proxy-cpu".into(),
                by: Decider::Feedbench,
                evidence: Vec::new(),
            },
            Event::RunSkipped {
                run: "a/x/r3".into(),
                run_hash: "h3".into(),
                reason: "no time".into(),
                by: Decider::Person,
            },
        ]);
        let s = l.status(&runs);
        assert_eq!(s[0].state, RunState::NotRun);
        assert!(
            matches!(&s[1].state, RunState::Invalid { reason, .. } if reason == "fault-proxy-cpu")
        );
        assert!(matches!(&s[2].state, RunState::Skipped { reason } if reason == "no time"));
        let c = counts(&s);
        assert_eq!((c["not run"], c["invalid"], c["skipped"]), (1, 1, 1));
    }

    #[test]
    fn a_changed_plan_names_the_changed_runs_and_those_taking_rates_from_them() {
        let old = [
            spec("a/ramp/r1", "h1", &[]),
            spec("a/base/r1", "h2", &["a/ramp/r1"]),
            spec("b/ramp/r1", "h3", &[]),
        ];
        let events = [
            study("P1"),
            started("a/ramp/r1", "h1", 1),
            finished("a/ramp/r1", "h1", 1),
            started("a/base/r1", "h2", 1),
            finished("a/base/r1", "h2", 1),
            started("b/ramp/r1", "h3", 1),
            finished("b/ramp/r1", "h3", 1),
        ];
        let l = Ledger::fold(&events);
        assert_eq!(l.plan_change("P1", &old), None);
        // Formatting-only edits keep the plan hash: nothing to declare.
        let new = [
            spec("a/ramp/r1", "h1-new", &[]),
            spec("a/base/r1", "h2", &["a/ramp/r1"]),
            spec("b/ramp/r1", "h3", &[]),
        ];
        let c = l.plan_change("P2", &new).unwrap();
        assert_eq!(
            (c.old_plan_hash.as_str(), c.new_plan_hash.as_str()),
            ("P1", "P2")
        );
        let touched: Vec<&str> = c.changes.iter().map(|ch| ch.run.as_str()).collect();
        assert_eq!(touched, ["a/ramp/r1", "a/base/r1"]);
        assert_eq!(c.changes[0].new_run_hash.as_deref(), Some("h1-new"));
        assert_eq!(c.changes[1].old_run_hash, c.changes[1].new_run_hash);
        // A run gone from the plan is a change too.
        let c = l.plan_change("P3", &new[..2]).unwrap();
        assert!(c
            .changes
            .iter()
            .any(|ch| ch.run == "b/ramp/r1" && ch.new_run_hash.is_none()));
        // The amendment itself supersedes what it touched; the moves are pending until
        // their `run-superseded` events say where the directories went.
        let c = l.plan_change("P2", &new).unwrap();
        let mut amended = events.to_vec();
        amended.push(Event::PlanAmended {
            reason: "r".into(),
            old_plan_hash: "P1".into(),
            new_plan_hash: "P2".into(),
            git_commit: None,
            changes: c.changes.clone(),
            old_inputs_digest: None,
            new_inputs_digest: None,
            files_changed: Vec::new(),
        });
        let half = Ledger::fold(&amended);
        assert_eq!(half.pending.len(), 2);
        assert_eq!(half.pending[0].dir.as_deref(), Some("runs/1"));
        assert_eq!(half.status(&new)[0].state, RunState::NotRun);
        assert_eq!(half.plan_change("P2", &new), None);
        for (run, h) in [("a/ramp/r1", "h1"), ("a/base/r1", "h2")] {
            amended.push(Event::RunSuperseded {
                run: run.into(),
                run_hash: h.into(),
                attempt: 1,
                dir: None,
                amendment: "r".into(),
            });
        }
        let l = Ledger::fold(&amended);
        assert!(l.pending.is_empty());
        assert_eq!(l.plan_change("P2", &new), None);
        let s = l.status(&new);
        assert_eq!(s[0].state, RunState::NotRun);
        assert_eq!(s[1].state, RunState::NotRun);
        assert_eq!(s[1].superseded, ["h2"]);
        assert!(s[2].state.settled());
    }

    #[test]
    fn changed_run_hashes_under_the_same_plan_hash_are_a_change_too() {
        let l = Ledger::fold(&[
            study("P"),
            started("a/x/r1", "h1", 1),
            finished("a/x/r1", "h1", 1),
        ]);
        let c = l.plan_change("P", &[spec("a/x/r1", "h1-v2", &[])]).unwrap();
        assert_eq!(c.old_plan_hash, c.new_plan_hash);
        assert_eq!(c.changes.len(), 1);
        // Aborted or interrupted attempts leave no result to supersede.
        let l = Ledger::fold(&[
            study("P"),
            started("a/x/r1", "h1", 1),
            Event::RunAborted {
                run: "a/x/r1".into(),
                run_hash: "h1".into(),
                attempt: 1,
                dir: "_aborted/x".into(),
                reason: "r".into(),
            },
        ]);
        assert_eq!(
            l.plan_change("Q", &[spec("a/x/r1", "h2", &[])])
                .unwrap()
                .changes,
            []
        );
    }

    #[test]
    fn an_excluded_contender_skips_its_runs_until_an_amendment_touches_it() {
        let runs = [spec("m/x/r1", "h1", &[])];
        let excluded = Event::ContenderExcluded {
            contender: "m".into(),
            image: "i".into(),
            exit_code: Some(1),
            reason: "exit code 1".into(),
            output: "visibility FAILED".into(),
            runs: vec!["m/x/r1".into()],
        };
        let l = Ledger::fold(&[study("P"), excluded.clone()]);
        assert!(
            matches!(&l.status(&runs)[0].state, RunState::Skipped { reason } if reason.contains("gate"))
        );
        let l = Ledger::fold(&[
            study("P"),
            excluded,
            Event::PlanAmended {
                reason: "fixed".into(),
                old_plan_hash: "P".into(),
                new_plan_hash: "Q".into(),
                git_commit: None,
                changes: Vec::new(),
                old_inputs_digest: None,
                new_inputs_digest: None,
                files_changed: Vec::new(),
            },
        ]);
        assert!(l.excluded.is_empty());
        assert_eq!(l.status(&runs)[0].state, RunState::NotRun);
    }
}
