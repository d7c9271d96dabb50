//! The audit proper, pure: from the plan's history and the study directory as read, every
//! change of the plan and whether an amendment declares it, every planned run's state, and
//! every departure of the results from the committed plan, declared or not.

use std::collections::{BTreeMap, BTreeSet};

use super::history::{diff, short, History, PlanVersion};
use super::report::{
    count, Amendment, Change, Item, Kind, Report, Standing, Summary, Superseded, VersionInfo,
    FORMAT_VERSION,
};
use super::study::{dirs_named, StudyFiles};
use crate::ledger::journal::Event;
use crate::ledger::manifest::Mismatch;
use crate::ledger::state::{counts, Ledger, RunState};

/// An item before it is numbered.
struct Draft {
    kind: Kind,
    standing: Standing,
    subject: String,
    title: String,
    reason: String,
    evidence: Vec<String>,
}

/// `a`, `b` quoted as code, comma-separated.
fn quoted<S: AsRef<str>>(items: &[S]) -> String {
    items
        .iter()
        .map(|i| format!("`{}`", i.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The event's name as the journal writes it, e.g. `run-finished`.
pub fn event_name(e: &Event) -> String {
    serde_json::to_value(e)
        .ok()
        .and_then(|v| v.get("event").and_then(|n| n.as_str()).map(String::from))
        .unwrap_or_default()
}

fn info(v: &PlanVersion) -> VersionInfo {
    VersionInfo {
        rev: v.rev.clone(),
        plan_hash: v.plan_hash.clone(),
        runs: v.runs.len(),
        error: v.error.clone(),
    }
}

fn hash_or_none(h: &Option<String>) -> String {
    h.as_deref()
        .map_or_else(|| "(none)".to_string(), |h| short(h).to_string())
}

fn run_of(e: &Event) -> Option<(&str, &str, Option<u32>)> {
    match e {
        Event::RunStarted {
            run,
            run_hash,
            attempt,
            ..
        }
        | Event::RunFinished {
            run,
            run_hash,
            attempt,
            ..
        }
        | Event::RunAborted {
            run,
            run_hash,
            attempt,
            ..
        }
        | Event::RunInterrupted {
            run,
            run_hash,
            attempt,
            ..
        }
        | Event::RunInvalidated {
            run,
            run_hash,
            attempt,
            ..
        }
        | Event::RunSuperseded {
            run,
            run_hash,
            attempt,
            ..
        } => Some((run, run_hash, Some(*attempt))),
        _ => None,
    }
}

/// The journal line that skipped `run`: its own `run-skipped`, else its contender's
/// exclusion by the gate.
fn skip_evidence(entries: &[(usize, &Event)], run: &str) -> Option<String> {
    let own = entries.iter().rev().find_map(|(line, e)| match e {
        Event::RunSkipped {
            run: r,
            run_hash,
            by,
            ..
        } if r == run => Some(format!(
            "journal line {line}: run-skipped `{run}` (run hash {}), decided by {}",
            short(run_hash),
            match by {
                crate::ledger::journal::Decider::Feedbench => "feedbench",
                crate::ledger::journal::Decider::Person => "a person",
            }
        )),
        _ => None,
    });
    own.or_else(|| {
        entries.iter().rev().find_map(|(line, e)| match e {
            Event::ContenderExcluded {
                contender,
                image,
                exit_code,
                ..
            } if run.split('/').next() == Some(contender.as_str()) => Some(format!(
                "journal line {line}: contender-excluded `{contender}` ({image}), gate exit code {}",
                exit_code.map_or("none".into(), |c| c.to_string())
            )),
            _ => None,
        })
    })
}

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

/// Audits the study against the plan's history; `study_dir` names the study directory in
/// the report.
pub fn audit(history: &History, study: &StudyFiles, study_dir: &str) -> Report {
    let entries: Vec<(usize, &Event)> = study
        .journal
        .entries
        .iter()
        .map(|(n, e)| (*n, &e.event))
        .collect();
    let mut drafts = Vec::new();

    // The plan's history and its declarations.
    let amendments: Vec<Amendment> = entries
        .iter()
        .filter_map(|(line, e)| match e {
            Event::PlanAmended {
                reason,
                old_plan_hash,
                new_plan_hash,
                git_commit,
                changes,
            } => Some(Amendment {
                line: *line,
                reason: reason.clone(),
                old_plan_hash: old_plan_hash.clone(),
                new_plan_hash: new_plan_hash.clone(),
                git_commit: git_commit.clone(),
                changes: changes.clone(),
            }),
            _ => None,
        })
        .collect();
    let superseded: Vec<(String, Superseded)> = entries
        .iter()
        .filter_map(|(line, e)| match e {
            Event::RunSuperseded {
                run,
                run_hash,
                attempt,
                dir,
                amendment,
            } => Some((
                amendment.clone(),
                Superseded {
                    line: *line,
                    run: run.clone(),
                    run_hash: run_hash.clone(),
                    attempt: *attempt,
                    dir: dir.clone(),
                },
            )),
            _ => None,
        })
        .collect();
    // Plans run uncommitted, declared (`--allow-uncommitted`).
    let declared_uncommitted: BTreeMap<&str, usize> = entries
        .iter()
        .filter_map(|(line, e)| match e {
            Event::UncommittedPlan { plan_hash, .. } => Some((plan_hash.as_str(), *line)),
            _ => None,
        })
        .collect();
    let vs = &history.versions;
    let mut history_changes = Vec::new();
    for i in 1..vs.len() {
        let (a, b) = (&vs[i - 1], &vs[i]);
        if a.plan_hash.is_some() && a.plan_hash == b.plan_hash {
            continue;
        }
        let fields = match (&a.document, &b.document) {
            (Some(x), Some(y)) => diff(x, y),
            _ => Vec::new(),
        };
        // An amendment from any earlier version to this or any later one covers the change
        // (one amendment may declare several commits at once).
        let has = |range: &[PlanVersion], h: &str| {
            range.iter().any(|v| v.plan_hash.as_deref() == Some(h))
        };
        let amendment = amendments
            .iter()
            .find(|m| has(&vs[..i], &m.old_plan_hash) && has(&vs[i..], &m.new_plan_hash))
            .cloned();
        let gone: Vec<Superseded> = amendment
            .as_ref()
            .map(|m| {
                superseded
                    .iter()
                    .filter(|(reason, _)| *reason == m.reason)
                    .map(|(_, s)| s.clone())
                    .collect()
            })
            .unwrap_or_default();
        let paths: Vec<&str> = if fields.is_empty() {
            vec![history.plan_file.as_str()]
        } else {
            fields.iter().map(|f| f.path.as_str()).collect()
        };
        let subject = paths.join(", ");
        let mut evidence = vec![format!(
            "{}{}: plan hash {} → {}",
            b.rev.label(),
            match &b.rev {
                super::history::Rev::Commit(c) => format!(" ({}, \"{}\")", c.date, c.subject),
                super::history::Rev::WorkingTree => " (not committed)".into(),
            },
            hash_or_none(&a.plan_hash),
            hash_or_none(&b.plan_hash)
        )];
        evidence.extend(fields.iter().map(ToString::to_string));
        if let Some(err) = &b.error {
            evidence.push(format!(
                "the plan at {} does not load: {err}",
                b.rev.label()
            ));
        }
        let (standing, reason) = match &amendment {
            Some(m) => {
                evidence.push(format!(
                    "journal line {}: plan-amended, plan hash {} → {}{}",
                    m.line,
                    short(&m.old_plan_hash),
                    short(&m.new_plan_hash),
                    m.git_commit
                        .as_deref()
                        .map_or(String::new(), |c| format!(", at commit {}", short(c)))
                ));
                if gone.is_empty() {
                    evidence.push("no run superseded".into());
                }
                for s in &gone {
                    evidence.push(format!(
                        "journal line {}: superseded run `{}` (run hash {}, attempt {}{})",
                        s.line,
                        s.run,
                        short(&s.run_hash),
                        s.attempt,
                        s.dir
                            .as_deref()
                            .map_or(String::new(), |d| format!(", now in `{d}`"))
                    ));
                }
                (Standing::Declared, m.reason.clone())
            }
            None => match b
                .plan_hash
                .as_deref()
                .and_then(|h| declared_uncommitted.get(h))
            {
                Some(line) if !b.rev.committed() => {
                    evidence.push(format!(
                        "journal line {line}: uncommitted-plan with plan hash {}",
                        hash_or_none(&b.plan_hash)
                    ));
                    (
                        Standing::Declared,
                        "the plan was run uncommitted, with --allow-uncommitted".to_string(),
                    )
                }
                _ => (
                    Standing::Undeclared,
                    format!(
                        "none recorded: no plan-amended event in the journal takes the plan from \
                     hash {} to {}; declare the change as an amendment with its reason \
                     (feedbench run --amend) or revert it",
                        hash_or_none(&a.plan_hash),
                        hash_or_none(&b.plan_hash)
                    ),
                ),
            },
        };
        let what = if b.rev.committed() {
            "The plan was changed after registration"
        } else {
            "The plan file has uncommitted changes"
        };
        history_changes.push((drafts.len(), i, fields.clone(), amendment.clone(), gone));
        drafts.push(Draft {
            kind: Kind::PlanEdit,
            standing,
            title: format!("{what}: {}", quoted(&paths)),
            subject,
            reason,
            evidence,
        });
    }

    // Plans the runs were made under.
    let mut uncommitted: BTreeMap<String, Uncommitted> = BTreeMap::new();
    let mut unplanned: BTreeMap<(String, String), Unplanned> = BTreeMap::new();
    let mut plan_now: Option<String> = None;
    // (run, attempt) → (latest dir, journal line, event).
    let mut latest: BTreeMap<(String, u32), (String, usize, String)> = BTreeMap::new();
    for (line, e) in &entries {
        match e {
            Event::StudyStarted {
                plan_hash,
                git_clean,
                git_commit,
                ..
            } => {
                plan_now = Some(plan_hash.clone());
                if !history.committed_hash(plan_hash) || *git_clean == Some(false) {
                    uncommitted
                        .entry(plan_hash.clone())
                        .or_default()
                        .evidence
                        .push(format!(
                            "journal line {line}: study-started with plan hash {}, git clean {}, at commit {}",
                            short(plan_hash),
                            git_clean.map_or("unknown".into(), |c| c.to_string()),
                            git_commit.as_deref().map_or("none", short)
                        ));
                }
            }
            Event::PlanAmended { new_plan_hash, .. } => plan_now = Some(new_plan_hash.clone()),
            _ => {}
        }
        if let Some((run, run_hash, attempt)) = run_of(e) {
            if let (Event::RunStarted { .. }, Some(p)) = (e, &plan_now) {
                if let Some(u) = uncommitted.get_mut(p) {
                    u.runs.insert(run.to_string());
                }
            }
            if !history.committed_run(run, run_hash) {
                let u = unplanned
                    .entry((run.to_string(), run_hash.to_string()))
                    .or_default();
                u.plan_hashes.extend(plan_now.clone());
                u.evidence.push(format!(
                    "journal line {line}: {} of `{run}` (run hash {})",
                    event_name(e),
                    short(run_hash)
                ));
            }
            if let (Some(a), Some(dir)) = (attempt, dirs_named(e)) {
                latest.insert(
                    (run.to_string(), a),
                    (dir.to_string(), *line, event_name(e)),
                );
            }
        }
    }
    for d in &study.run_dirs {
        let Ok(Some(m)) = &d.manifest else { continue };
        if !history.committed_hash(&m.plan_hash) || m.git.clean == Some(false) {
            let u = uncommitted.entry(m.plan_hash.clone()).or_default();
            u.runs.insert(m.run_id.clone());
            u.evidence.push(format!(
                "`{}/manifest.json`: run `{}` under plan hash {}, git clean {}, at commit {}",
                d.dir,
                m.run_id,
                short(&m.plan_hash),
                m.git.clean.map_or("unknown".into(), |c| c.to_string()),
                m.git.commit.as_deref().map_or("none", short)
            ));
        }
        if !history.committed_run(&m.run_id, &m.run_hash) {
            let u = unplanned
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
    for (hash, u) in uncommitted {
        let committed = history.committed_hash(&hash);
        let title = if committed {
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
            let runs: Vec<String> = u.runs.iter().map(|r| format!("`{r}`")).collect();
            evidence.push(format!("runs: {}", runs.join(", ")));
        }
        evidence.extend(u.evidence);
        drafts.push(Draft {
            kind: Kind::UncommittedPlan,
            standing,
            subject: format!("plan hash {hash}"),
            title,
            reason,
            evidence,
        });
    }
    for ((run, run_hash), u) in unplanned {
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
        drafts.push(Draft {
            kind: Kind::UnplannedRun,
            standing,
            title: format!(
                "Run `{run}` (run hash {}) is in no committed version of the plan",
                short(&run_hash)
            ),
            subject: run,
            reason,
            evidence: u.evidence,
        });
    }

    // The files.
    for d in &study.run_dirs {
        if d.mismatches.is_empty() {
            continue;
        }
        let files: Vec<String> = d
            .mismatches
            .iter()
            .map(|m| match m {
                Mismatch::Changed { file, .. }
                | Mismatch::Missing { file }
                | Mismatch::Extra { file } => format!("{}/{file}", d.dir),
            })
            .collect();
        let mut evidence: Vec<String> = d.mismatches.iter().map(ToString::to_string).collect();
        if let Ok(Some(m)) = &d.manifest {
            evidence.push(format!(
                "`{}/manifest.json` sealed run `{}` attempt {}",
                d.dir, m.run_id, m.attempt
            ));
        }
        drafts.push(Draft {
            kind: Kind::FileMismatch,
            standing: Standing::Undeclared,
            subject: files.join(", "),
            title: format!(
                "Files of `{}` no longer match its manifest: {}",
                d.dir,
                quoted(&files)
            ),
            reason: "none recorded: the files were changed, removed or added after the run \
                     sealed its manifest; nothing in the journal accounts for it"
                .into(),
            evidence,
        });
    }
    let found: BTreeMap<&str, &super::study::RunDir> =
        study.run_dirs.iter().map(|d| (d.dir.as_str(), d)).collect();
    for ((run, attempt), (dir, line, event)) in &latest {
        if study.journal_dirs.get(dir) == Some(&false) {
            drafts.push(Draft {
                kind: Kind::VanishedDirectory,
                standing: Standing::Undeclared,
                subject: dir.clone(),
                title: format!("The directory `{dir}` of run `{run}` (attempt {attempt}) is gone"),
                reason: "none recorded: the journal says the run's directory is there; \
                         feedbench moves directories aside and never deletes them"
                    .into(),
                evidence: vec![format!("journal line {line}: {event} names `{dir}`")],
            });
        } else if event == "run-finished" {
            if let Some(d) = found.get(dir.as_str()) {
                if matches!(d.manifest, Ok(None)) {
                    drafts.push(Draft {
                        kind: Kind::MissingManifest,
                        standing: Standing::Undeclared,
                        subject: format!("{dir}/manifest.json"),
                        title: format!(
                            "The finished run `{run}` (attempt {attempt}) has no `{dir}/manifest.json`"
                        ),
                        reason: "none recorded: a run finishes only once its manifest is \
                                 written, so the manifest was removed"
                            .into(),
                        evidence: vec![format!("journal line {line}: run-finished names `{dir}`")],
                    });
                }
            }
        }
    }
    for d in &study.run_dirs {
        if let Err(e) = &d.manifest {
            drafts.push(Draft {
                kind: Kind::BadManifest,
                standing: Standing::Undeclared,
                subject: format!("{}/manifest.json", d.dir),
                title: format!("`{}/manifest.json` does not read", d.dir),
                reason: "none recorded: manifests are written atomically, so this one was \
                         changed afterwards"
                    .into(),
                evidence: vec![e.clone()],
            });
        }
        if !study.journal_dirs.contains_key(&d.dir) {
            let what = match &d.manifest {
                Ok(Some(m)) => format!(
                    "`{}/manifest.json`: run `{}`, attempt {}, run hash {}",
                    d.dir,
                    m.run_id,
                    m.attempt,
                    short(&m.run_hash)
                ),
                Ok(None) => format!("`{}` has no manifest", d.dir),
                Err(_) => format!("`{}` has an unreadable manifest", d.dir),
            };
            drafts.push(Draft {
                kind: Kind::UnrecordedDirectory,
                standing: Standing::Undeclared,
                subject: d.dir.clone(),
                title: format!("The run directory `{}` is in no journal event", d.dir),
                reason: "none recorded: every run feedbench makes or moves is in the journal, \
                         so this directory came from elsewhere"
                    .into(),
                evidence: vec![what],
            });
        }
    }

    // The journal itself.
    let undeclared: Vec<usize> = study
        .journal
        .undeclared_bad()
        .iter()
        .map(|b| b.line)
        .collect();
    for b in study.journal.bad.iter().chain(study.journal.torn.iter()) {
        let declared_at = entries.iter().find_map(|(n, e)| match e {
            Event::TornLineFound { line, .. } if *line == b.line => Some(*n),
            _ => None,
        });
        let (standing, reason) = match (undeclared.contains(&b.line), declared_at) {
            (false, Some(at)) => (
                Standing::Declared,
                format!("a write cut short by a crash, declared by torn-line-found at journal line {at}"),
            ),
            _ => (
                Standing::Undeclared,
                "none recorded: no torn-line-found event declares it; journal lines are \
                 written whole, so it was changed afterwards or torn without a later run \
                 noticing"
                    .into(),
            ),
        };
        drafts.push(Draft {
            kind: Kind::BadJournalLine,
            standing,
            subject: format!("journal line {}", b.line),
            title: format!("Journal line {} does not parse", b.line),
            reason,
            evidence: vec![format!("{}: `{}`", b.error, b.text)],
        });
    }

    // The honest gaps: every planned run without a valid result.
    let planned = history
        .versions
        .iter()
        .rev()
        .find(|v| v.error.is_none())
        .unwrap_or_else(|| history.current());
    let ledger = Ledger::fold(study.journal.events());
    let runs = ledger.status(&planned.runs);
    let mut skipped: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut not_run = Vec::new();
    let mut interrupted = Vec::new();
    for r in &runs {
        match &r.state {
            RunState::Invalid {
                attempt,
                dir,
                reason,
                evidence,
            } => {
                let mut ev: Vec<String> = evidence.iter().map(ToString::to_string).collect();
                ev.push(format!(
                    "the run's directory is `{dir}` (attempt {attempt})"
                ));
                drafts.push(Draft {
                    kind: Kind::RunInvalid,
                    standing: Standing::Gap,
                    subject: r.run.clone(),
                    title: format!("Run `{}` is invalid", r.run),
                    reason: reason.clone(),
                    evidence: ev,
                });
            }
            RunState::Skipped { reason } => skipped.entry(reason).or_default().push(&r.run),
            RunState::NotRun => not_run.push(r),
            RunState::Interrupted { .. } => interrupted.push(r),
            RunState::CompletedValid { .. } => {}
        }
    }
    for (reason, list) in skipped {
        let names: Vec<String> = list.iter().map(|r| format!("`{r}`")).collect();
        let evidence = list
            .iter()
            .filter_map(|run| skip_evidence(&entries, run))
            .collect();
        drafts.push(Draft {
            kind: Kind::RunSkipped,
            standing: Standing::Gap,
            subject: list.join(", "),
            title: format!("{} skipped: {}", count(list.len(), "run"), names.join(", ")),
            reason: reason.to_string(),
            evidence,
        });
    }
    for (list, kind, what, reason) in [
        (
            &interrupted,
            Kind::RunInterrupted,
            "interrupted",
            "started and never finished; `feedbench run --resume` records it and runs it again",
        ),
        (
            &not_run,
            Kind::RunNotRun,
            "not run",
            "no attempt under the plan's current run hash finished",
        ),
    ] {
        if list.is_empty() {
            continue;
        }
        let names: Vec<String> = list.iter().map(|r| format!("`{}`", r.run)).collect();
        let evidence = list
            .iter()
            .map(|r| {
                let detail = super::report::state_detail(r);
                format!(
                    "`{}`: {}{}",
                    r.run,
                    match r.attempts {
                        0 => "no attempt".to_string(),
                        n => format!("{} started", count(n as usize, "attempt")),
                    },
                    if detail.is_empty() {
                        String::new()
                    } else {
                        format!("; {detail}")
                    }
                )
            })
            .collect();
        drafts.push(Draft {
            kind,
            standing: Standing::Gap,
            subject: list
                .iter()
                .map(|r| r.run.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            title: format!("{} {what}: {}", count(list.len(), "run"), names.join(", ")),
            reason: reason.to_string(),
            evidence,
        });
    }

    // Numbering, the history's items, the summary.
    let items: Vec<Item> = drafts
        .into_iter()
        .enumerate()
        .map(|(n, d)| Item {
            id: format!("D{}", n + 1),
            kind: d.kind,
            standing: d.standing,
            subject: d.subject,
            title: d.title,
            reason: d.reason,
            evidence: d.evidence,
        })
        .collect();
    let history_out: Vec<Change> = history_changes
        .into_iter()
        .map(|(item, i, fields, amendment, gone)| Change {
            deviation: items[item].id.clone(),
            from: vs[i - 1].rev.clone(),
            to: vs[i].rev.clone(),
            old_plan_hash: vs[i - 1].plan_hash.clone(),
            new_plan_hash: vs[i].plan_hash.clone(),
            fields,
            declared: amendment.is_some(),
            amendment,
            superseded: gone,
        })
        .collect();
    let c = counts(&runs);
    let n = |s: Standing| items.iter().filter(|i| i.standing == s).count();
    let summary = Summary {
        planned_runs: runs.len(),
        completed_valid: c.get("completed valid").copied().unwrap_or(0),
        invalid: c.get("invalid").copied().unwrap_or(0),
        skipped: c.get("skipped").copied().unwrap_or(0),
        interrupted: c.get("interrupted").copied().unwrap_or(0),
        not_run: c.get("not run").copied().unwrap_or(0),
        plan_changes: history_out.len(),
        plan_changes_declared: history_out.iter().filter(|c| c.declared).count(),
        deviations: items.len(),
        declared: n(Standing::Declared),
        undeclared: n(Standing::Undeclared),
        gaps: n(Standing::Gap),
        passed: n(Standing::Undeclared) == 0,
    };
    Report {
        format_version: FORMAT_VERSION,
        study: history
            .study()
            .map_or_else(|| "(unknown)".into(), String::from),
        plan_file: history.plan_file.clone(),
        study_dir: study_dir.to_string(),
        registration: info(history.registration()),
        head: info(history.head()),
        working_tree: history
            .versions
            .last()
            .filter(|v| !v.rev.committed())
            .map(info),
        runs_for: info(planned),
        history: history_out,
        runs,
        deviations: items,
        summary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::fixture::Fixture;
    use crate::audit::history::Rev;
    use crate::git::Commit;
    use crate::ledger::journal::Evidence;
    use crate::ledger::manifest::Git;

    const PLAN: &str = include_str!("../../tests/plans/valid/minimal.yaml");

    fn edited() -> String {
        let e = PLAN.replace(
            "fault-proxy: {cpus: 0.25, memory: 64MiB}",
            "fault-proxy: {cpus: 0.5, memory: 64MiB}",
        );
        assert_ne!(e, PLAN);
        e
    }

    fn commit(n: u32) -> Rev {
        Rev::Commit(Commit {
            hash: format!("{n:040x}"),
            date: "2026-12-01T00:00:00+00:00".into(),
            subject: format!("commit {n}"),
        })
    }

    fn history(texts: &[&str]) -> History {
        History {
            plan_file: "experiments/p.yaml".into(),
            versions: texts
                .iter()
                .enumerate()
                .map(|(i, t)| PlanVersion::from_text(commit(i as u32 + 1), "p.yaml", t))
                .collect(),
        }
    }

    fn git(clean: bool) -> Git {
        Git {
            commit: Some(format!("{:040x}", 1)),
            path: Some("experiments/p.yaml".into()),
            clean: Some(clean),
        }
    }

    /// A study of `h`'s registered plan with every run completed.
    fn completed(h: &History, d: &std::path::Path, clean: bool) -> Fixture {
        let v = h.registration();
        let mut f = Fixture::start_with(
            &d.join("tiny"),
            "tiny",
            "experiments/p.yaml",
            v.plan_hash.as_deref().unwrap(),
            git(clean),
            &v.runs,
        )
        .unwrap();
        for r in &v.runs {
            f.complete(r).unwrap();
        }
        f
    }

    fn check(h: &History, f: &Fixture) -> Report {
        audit(h, &StudyFiles::read(&f.dir).unwrap(), "results/tiny")
    }

    fn undeclared(r: &Report) -> Vec<(Kind, String)> {
        r.undeclared()
            .map(|i| (i.kind, i.subject.clone()))
            .collect()
    }

    #[test]
    fn a_clean_study_passes_and_lists_every_run() {
        let d = tempfile::tempdir().unwrap();
        let h = history(&[PLAN]);
        let f = completed(&h, d.path(), true);
        let r = check(&h, &f);
        assert!(r.summary.passed, "{}", r.markdown());
        assert!(r.deviations.is_empty(), "{}", r.markdown());
        assert_eq!(r.runs.len(), 6);
        assert_eq!(r.summary.completed_valid, 6);
        let md = r.markdown();
        for run in &h.registration().runs {
            assert!(
                md.contains(&format!("| `{}` | completed valid |", run.id)),
                "{md}"
            );
        }
    }

    #[test]
    fn an_undeclared_plan_edit_is_named_by_field_then_declared_by_an_amendment() {
        let d = tempfile::tempdir().unwrap();
        let e = edited();
        let h = history(&[PLAN, &e]);
        let mut f = completed(&h, d.path(), true);
        let r = check(&h, &f);
        assert!(!r.summary.passed);
        assert_eq!(
            undeclared(&r),
            [(Kind::PlanEdit, "caps.fault-proxy.cpus".to_string())]
        );
        let item = &r.deviations[0];
        assert!(item
            .evidence
            .contains(&"`caps.fault-proxy.cpus`: 0.25 → 0.5".to_string()));
        assert_eq!(r.history.len(), 1);
        assert!(!r.history[0].declared);

        let (old, new) = (&h.versions[0], &h.versions[1]);
        let changes = f
            .amend(
                "fault proxy saturated",
                new.plan_hash.as_deref().unwrap(),
                &old.runs,
                &new.runs,
            )
            .unwrap();
        let r = check(&h, &f);
        assert!(r.summary.passed, "{}", r.markdown());
        let c = &r.history[0];
        assert!(c.declared);
        assert_eq!(
            c.amendment.as_ref().unwrap().reason,
            "fault proxy saturated"
        );
        let superseded = changes.iter().filter(|c| c.old_run_hash.is_some()).count();
        assert_eq!(c.superseded.len(), superseded);
        assert_eq!(r.deviations[0].standing, Standing::Declared);
        assert_eq!(r.deviations[0].reason, "fault proxy saturated");
        // The superseded runs are not run under the amended plan: gaps, not departures.
        if superseded > 0 {
            assert_eq!(r.summary.not_run, superseded);
        }
    }

    #[test]
    fn a_deleted_run_directory_is_named() {
        let d = tempfile::tempdir().unwrap();
        let h = history(&[PLAN]);
        let f = completed(&h, d.path(), true);
        std::fs::remove_dir_all(f.dir.join("runs/svc_ramp_r2")).unwrap();
        let r = check(&h, &f);
        assert_eq!(
            undeclared(&r),
            [(Kind::VanishedDirectory, "runs/svc_ramp_r2".to_string())]
        );
        assert!(r.deviations[0].title.contains("`svc/ramp/r2`"));
    }

    #[test]
    fn one_edited_byte_in_a_raw_csv_is_named() {
        let d = tempfile::tempdir().unwrap();
        let h = history(&[PLAN]);
        let f = completed(&h, d.path(), true);
        let csv = f.dir.join("runs/svc_ramp_r1/requests.csv");
        let mut bytes = std::fs::read(&csv).unwrap();
        let at = bytes.len() - 2;
        bytes[at] = b'1';
        std::fs::write(&csv, bytes).unwrap();
        let r = check(&h, &f);
        assert_eq!(
            undeclared(&r),
            [(
                Kind::FileMismatch,
                "runs/svc_ramp_r1/requests.csv".to_string()
            )]
        );
        assert!(r.deviations[0].evidence[0].starts_with("`requests.csv` changed"));
    }

    #[test]
    fn runs_from_an_uncommitted_plan_fail_unless_declared() {
        let d = tempfile::tempdir().unwrap();
        let h = history(&[PLAN]);
        let f = completed(&h, d.path(), false);
        let r = check(&h, &f);
        let hash = h.registration().plan_hash.clone().unwrap();
        assert_eq!(
            undeclared(&r),
            [(Kind::UncommittedPlan, format!("plan hash {hash}"))]
        );
        let runs = &r.deviations[0].evidence[0];
        assert!(
            runs.starts_with("runs: ") && runs.contains("`svc/ramp/r3`"),
            "{runs}"
        );

        let d = tempfile::tempdir().unwrap();
        let v = h.registration();
        let mut f = Fixture::start_with(
            &d.path().join("tiny"),
            "tiny",
            "experiments/p.yaml",
            v.plan_hash.as_deref().unwrap(),
            git(false),
            &v.runs,
        )
        .unwrap();
        f.declare_uncommitted().unwrap();
        f.complete(&v.runs[0]).unwrap();
        let r = check(&h, &f);
        assert!(r.summary.passed, "{}", r.markdown());
        assert_eq!(r.summary.declared, 1);
        assert_eq!(r.summary.not_run, 5);
    }

    #[test]
    fn runs_of_a_plan_never_committed_are_unplanned() {
        let d = tempfile::tempdir().unwrap();
        let e = edited();
        let h = history(&[PLAN]);
        // The study ran the edited plan, which no commit has.
        let h2 = history(&[&e]);
        let v = h2.registration();
        let mut f = Fixture::start_with(
            &d.path().join("tiny"),
            "tiny",
            "experiments/p.yaml",
            v.plan_hash.as_deref().unwrap(),
            git(true),
            &v.runs,
        )
        .unwrap();
        f.complete(&v.runs[0]).unwrap();
        let r = check(&h, &f);
        let kinds: BTreeSet<Kind> = r.undeclared().map(|i| i.kind).collect();
        assert!(kinds.contains(&Kind::UncommittedPlan), "{}", r.markdown());
        if v.runs[0].run_hash != h.registration().runs[0].run_hash {
            assert!(kinds.contains(&Kind::UnplannedRun), "{}", r.markdown());
        }
    }

    #[test]
    fn gaps_are_reported_with_reason_and_evidence_and_do_not_fail() {
        let d = tempfile::tempdir().unwrap();
        let h = history(&[PLAN]);
        let v = h.registration();
        let mut f = Fixture::start_with(
            &d.path().join("tiny"),
            "tiny",
            "experiments/p.yaml",
            v.plan_hash.as_deref().unwrap(),
            git(true),
            &v.runs,
        )
        .unwrap();
        f.complete(&v.runs[0]).unwrap();
        f.complete(&v.runs[1]).unwrap();
        let dir = f
            .invalidate(
                &v.runs[1],
                "fault-proxy CPU",
                vec![Evidence {
                    check: "cpu".into(),
                    role: "fault-proxy".into(),
                    container: Some("tiny-fp".into()),
                    figure: "p95 CPU, share of its cap".into(),
                    value: 0.98,
                    threshold: 0.9,
                    unit: "share".into(),
                }],
            )
            .unwrap();
        assert_eq!(dir, "_invalid_fault-proxy-cpu/svc_baseline_db-cut_r1");
        f.skip(&v.runs[2], "host lost").unwrap();
        let r = check(&h, &f);
        assert!(r.summary.passed, "{}", r.markdown());
        assert_eq!(
            (
                r.summary.completed_valid,
                r.summary.invalid,
                r.summary.skipped,
                r.summary.not_run
            ),
            (1, 1, 1, 3)
        );
        let invalid = r
            .deviations
            .iter()
            .find(|i| i.kind == Kind::RunInvalid)
            .unwrap();
        assert_eq!(invalid.reason, "fault-proxy CPU");
        assert!(
            invalid.evidence[0].contains("0.980 share against 0.900"),
            "{:?}",
            invalid.evidence
        );
        assert!(r.deviations.iter().all(|i| i.standing == Standing::Gap));
    }

    #[test]
    fn journal_damage_and_strange_directories_are_named() {
        use std::io::Write;
        let d = tempfile::tempdir().unwrap();
        let h = history(&[PLAN]);
        let f = completed(&h, d.path(), true);
        drop(f);
        let v = h.registration();
        let journal = d.path().join("tiny/journal.jsonl");
        // A torn line a later writer declares, then an edited line nothing declares.
        let mut j = std::fs::OpenOptions::new()
            .append(true)
            .open(&journal)
            .unwrap();
        j.write_all(b"{\"format_version\":1,\"wall").unwrap();
        drop(j);
        let mut f = Fixture::start_with(
            &d.path().join("tiny"),
            "tiny",
            "experiments/p.yaml",
            v.plan_hash.as_deref().unwrap(),
            git(true),
            &v.runs,
        )
        .unwrap();
        f.append(Event::GatePassed {
            contender: "svc".into(),
            image: "example/svc:1".into(),
            seconds: 1.0,
        })
        .unwrap();
        let mut j = std::fs::OpenOptions::new()
            .append(true)
            .open(&journal)
            .unwrap();
        j.write_all(b"edited by hand\n").unwrap();
        std::fs::create_dir_all(f.dir.join("runs/svc_extra")).unwrap();
        std::fs::remove_file(f.dir.join("runs/svc_ramp_r3/manifest.json")).unwrap();
        let r = check(&h, &f);
        let found = undeclared(&r);
        let lines = std::fs::read_to_string(&journal).unwrap().lines().count();
        assert_eq!(
            found,
            [
                (
                    Kind::MissingManifest,
                    "runs/svc_ramp_r3/manifest.json".to_string()
                ),
                (Kind::UnrecordedDirectory, "runs/svc_extra".to_string()),
                (Kind::BadJournalLine, format!("journal line {lines}")),
            ],
            "{}",
            r.markdown()
        );
        let torn = r
            .deviations
            .iter()
            .find(|i| i.kind == Kind::BadJournalLine && i.standing == Standing::Declared);
        assert!(torn.is_some(), "{}", r.markdown());
    }
}
