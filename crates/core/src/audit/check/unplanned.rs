//! Runs outside the committed plan: runs made under a plan hash that no commit of the plan
//! has (or from a plan file with uncommitted changes), and runs that no committed version of
//! the plan has, each declared only by an `uncommitted-plan` event for its plan hash.

use std::collections::{BTreeMap, BTreeSet};

use super::{clean_or_unknown, event_name, quoted, run_of, Draft, Entries};
use crate::audit::history::{short, History};
use crate::audit::report::{Kind, Standing};
use crate::audit::study::StudyFiles;
use crate::ledger::journal::Event;

/// Runs made under one plan hash that is not committed, or from a dirty plan file.
#[derive(Default)]
struct Uncommitted {
    runs: BTreeSet<String>,
    evidence: Vec<String>,
}

/// A run in the results that no committed version has.
#[derive(Default)]
struct Unplanned {
    plan_hashes: BTreeSet<String>,
    evidence: Vec<String>,
}

/// What was found, by plan hash and by (run, run hash); the maps' order is the items'.
#[derive(Default)]
struct Found {
    uncommitted: BTreeMap<String, Uncommitted>,
    unplanned: BTreeMap<(String, String), Unplanned>,
}

/// One item per uncommitted plan hash, then one per unplanned run. The journal's evidence
/// comes before the manifests'.
pub(super) fn check(
    history: &History,
    study: &StudyFiles,
    entries: &Entries,
    declared_uncommitted: &BTreeMap<&str, usize>,
) -> Vec<Draft> {
    let mut found = Found::default();
    found.scan_journal(history, entries);
    found.scan_manifests(history, study);
    let mut drafts = Vec::new();
    for (hash, u) in found.uncommitted {
        drafts.push(uncommitted_plan(history, hash, u, declared_uncommitted));
    }
    for ((run, run_hash), u) in found.unplanned {
        drafts.push(unplanned_run(run, &run_hash, u, declared_uncommitted));
    }
    drafts
}

impl Found {
    /// A study started under an uncommitted plan hash (or dirty), the runs started under it,
    /// and every event of a run no commit planned.
    fn scan_journal(&mut self, history: &History, entries: &Entries) {
        // The plan hash the study is running under at each line: a study's start sets it,
        // an amendment moves it on.
        let mut plan_now: Option<String> = None;
        for (line, e) in entries {
            match e {
                Event::StudyStarted {
                    plan_hash,
                    git_clean,
                    git_commit,
                    ..
                } => {
                    plan_now = Some(plan_hash.clone());
                    if !history.committed_hash(plan_hash) || *git_clean == Some(false) {
                        self.uncommitted
                            .entry(plan_hash.clone())
                            .or_default()
                            .evidence
                            .push(format!(
                                "journal line {line}: study-started with plan hash {}, git clean {}, at commit {}",
                                short(plan_hash),
                                clean_or_unknown(*git_clean),
                                git_commit.as_deref().map_or("none", short)
                            ));
                    }
                }
                Event::PlanAmended { new_plan_hash, .. } => plan_now = Some(new_plan_hash.clone()),
                _ => {}
            }
            let Some((run, run_hash, _)) = run_of(e) else {
                continue;
            };
            if let (Event::RunStarted { .. }, Some(p)) = (e, &plan_now) {
                if let Some(u) = self.uncommitted.get_mut(p) {
                    u.runs.insert(run.to_string());
                }
            }
            if !history.committed_run(run, run_hash) {
                let u = self
                    .unplanned
                    .entry((run.to_string(), run_hash.to_string()))
                    .or_default();
                u.plan_hashes.extend(plan_now.clone());
                u.evidence.push(format!(
                    "journal line {line}: {} of `{run}` (run hash {})",
                    event_name(e),
                    short(run_hash)
                ));
            }
        }
    }

    /// Manifests sealed under an uncommitted plan hash (or dirty), and of runs no commit
    /// planned.
    fn scan_manifests(&mut self, history: &History, study: &StudyFiles) {
        for d in &study.run_dirs {
            let Ok(Some(m)) = &d.manifest else { continue };
            if !history.committed_hash(&m.plan_hash) || m.git.clean == Some(false) {
                let u = self.uncommitted.entry(m.plan_hash.clone()).or_default();
                u.runs.insert(m.run_id.clone());
                u.evidence.push(format!(
                    "`{}/manifest.json`: run `{}` under plan hash {}, git clean {}, at commit {}",
                    d.dir,
                    m.run_id,
                    short(&m.plan_hash),
                    clean_or_unknown(m.git.clean),
                    m.git.commit.as_deref().map_or("none", short)
                ));
            }
            if !history.committed_run(&m.run_id, &m.run_hash) {
                let u = self
                    .unplanned
                    .entry((m.run_id.clone(), m.run_hash.clone()))
                    .or_default();
                u.plan_hashes.insert(m.plan_hash.clone());
                u.evidence.push(format!(
                    "`{}/manifest.json`: run `{}`, run hash {}, plan hash {}",
                    d.dir,
                    m.run_id,
                    short(&m.run_hash),
                    short(&m.plan_hash)
                ));
            }
        }
    }
}

/// The item for runs made under plan hash `hash`, which is committed only when the plan
/// file was dirty.
fn uncommitted_plan(
    history: &History,
    hash: String,
    u: Uncommitted,
    declared_uncommitted: &BTreeMap<&str, usize>,
) -> Draft {
    let title = if history.committed_hash(&hash) {
        format!(
            "Runs were made while the plan file had uncommitted changes (plan hash {})",
            short(&hash)
        )
    } else {
        format!(
            "Runs were made under plan hash {}, which no commit of `{}` has",
            short(&hash),
            history.plan_file
        )
    };
    let (standing, reason) = match declared_uncommitted.get(hash.as_str()) {
        Some(line) => (
            Standing::Declared,
            format!("declared at journal line {line}: the plan was run uncommitted, with --allow-uncommitted"),
        ),
        None => (
            Standing::Undeclared,
            format!(
                "none recorded: no uncommitted-plan event declares plan hash {}; commit \
                 the plan before running (--allow-uncommitted records the departure)",
                short(&hash)
            ),
        ),
    };
    let mut evidence = Vec::new();
    if !u.runs.is_empty() {
        evidence.push(format!("runs: {}", quoted(&u.runs)));
    }
    evidence.extend(u.evidence);
    Draft {
        kind: Kind::UncommittedPlan,
        standing,
        subject: format!("plan hash {hash}"),
        title,
        reason,
        evidence,
    }
}

/// The item for `run` at `run_hash`, declared when any plan it ran under was declared
/// uncommitted.
fn unplanned_run(
    run: String,
    run_hash: &str,
    u: Unplanned,
    declared_uncommitted: &BTreeMap<&str, usize>,
) -> Draft {
    let declared = u
        .plan_hashes
        .iter()
        .find_map(|h| declared_uncommitted.get(h.as_str()));
    let (standing, reason) = match declared {
        Some(line) => (
            Standing::Declared,
            format!("made under a plan declared uncommitted at journal line {line}"),
        ),
        None => (
            Standing::Undeclared,
            "none recorded: the run is in the results but was never planned by a commit of \
             the plan, and no uncommitted-plan event declares the plan it ran under"
                .to_string(),
        ),
    };
    Draft {
        kind: Kind::UnplannedRun,
        standing,
        title: format!(
            "Run `{run}` (run hash {}) is in no committed version of the plan",
            short(run_hash)
        ),
        subject: run,
        reason,
        evidence: u.evidence,
    }
}
