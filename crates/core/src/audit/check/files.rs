//! The run directories against the journal and their manifests: files changed, removed or
//! added after a run sealed its manifest, directories the journal names that are gone or
//! that no journal event names, and manifests missing from finished runs or unreadable.
//! None of these is ever declared: feedbench never does any of them.

use std::collections::BTreeMap;

use super::{event_name, quoted, run_of, Draft, Entries};
use crate::audit::history::short;
use crate::audit::report::{Kind, Standing};
use crate::audit::study::{dirs_named, RunDir, StudyFiles};
use crate::ledger::manifest::Mismatch;

/// Manifest mismatches by directory, then the journal's latest directory of each attempt
/// (gone, or finished without a manifest), then each directory's own manifest and record.
pub(super) fn check(study: &StudyFiles, entries: &Entries) -> Vec<Draft> {
    let mut drafts: Vec<Draft> = study.run_dirs.iter().filter_map(mismatches).collect();
    drafts.extend(latest_dirs(study, entries));
    for d in &study.run_dirs {
        drafts.extend(bad_manifest(d));
        if !study.journal_dirs.contains_key(&d.dir) {
            drafts.push(unrecorded(d));
        }
    }
    drafts.extend(study.links.iter().map(|(at, to)| link(at, to)));
    drafts
}

/// A symbolic link where a run area or a run directory would be: not followed.
fn link(at: &str, to: &str) -> Draft {
    Draft {
        kind: Kind::UnrecordedDirectory,
        standing: Standing::Undeclared,
        subject: at.to_string(),
        title: format!("`{at}` is a symbolic link, not a run directory; not followed"),
        reason: "none recorded: feedbench makes directories, never links, in a study \
                 directory, so this came from elsewhere"
            .into(),
        evidence: vec![format!("`{at}` points to `{to}`")],
    }
}

/// The files of `d` that no longer match its manifest, if any.
fn mismatches(d: &RunDir) -> Option<Draft> {
    if d.mismatches.is_empty() {
        return None;
    }
    let files: Vec<String> = d
        .mismatches
        .iter()
        .map(|m| match m {
            Mismatch::Changed { file, .. }
            | Mismatch::Missing { file }
            | Mismatch::Extra { file }
            | Mismatch::Link { file } => {
                format!("{}/{file}", d.dir)
            }
        })
        .collect();
    let mut evidence: Vec<String> = d.mismatches.iter().map(ToString::to_string).collect();
    if let Ok(Some(m)) = &d.manifest {
        evidence.push(format!(
            "`{}/manifest.json` sealed run `{}` attempt {}",
            d.dir, m.run_id, m.attempt
        ));
    }
    Some(Draft {
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
    })
}

/// For each run attempt that had a directory, in (run, attempt) order, the directory the
/// journal last names for it: gone from disk, or, where the last event is `run-finished`, present without a
/// manifest.
fn latest_dirs(study: &StudyFiles, entries: &Entries) -> Vec<Draft> {
    // (run, attempt) → (latest dir, journal line, event).
    let mut latest: BTreeMap<(String, u32), (String, usize, String)> = BTreeMap::new();
    for (line, e) in entries {
        if let (Some((run, _, Some(a))), Some(dir)) = (run_of(e), dirs_named(e)) {
            if e.left_no_directory() {
                // Killed before it made one: this attempt has no directory to look for.
                latest.remove(&(run.to_string(), a));
                continue;
            }
            latest.insert(
                (run.to_string(), a),
                (dir.to_string(), *line, event_name(e)),
            );
        }
    }
    let found: BTreeMap<&str, &RunDir> =
        study.run_dirs.iter().map(|d| (d.dir.as_str(), d)).collect();
    let mut drafts = Vec::new();
    for ((run, attempt), (dir, line, event)) in &latest {
        if study.journal_dirs.get(dir) == Some(&false) {
            if let Err(out) = crate::confine::inside(&study.dir, dir) {
                drafts.push(outside(run, *attempt, dir, *line, event, &out));
                continue;
            }
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
        } else if event == "run-finished"
            && found
                .get(dir.as_str())
                .is_some_and(|d| matches!(d.manifest, Ok(None)))
        {
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
    drafts
}

/// A directory the journal names for a run that leads out of the study directory: never
/// followed, so the run's results are not there.
fn outside(
    run: &str,
    attempt: u32,
    dir: &str,
    line: usize,
    event: &str,
    why: &crate::confine::Outside,
) -> Draft {
    Draft {
        kind: Kind::VanishedDirectory,
        standing: Standing::Undeclared,
        subject: dir.to_string(),
        title: format!(
            "The directory `{dir}` of run `{run}` (attempt {attempt}) is not in the study directory"
        ),
        reason: "none recorded: feedbench names a run's directory inside the study \
                 directory; the journal was edited, or a link was put in its place"
            .into(),
        evidence: vec![format!("journal line {line}: {event} names `{dir}`: {why}")],
    }
}

/// The manifest of `d`, if it does not read.
fn bad_manifest(d: &RunDir) -> Option<Draft> {
    let Err(e) = &d.manifest else { return None };
    Some(Draft {
        kind: Kind::BadManifest,
        standing: Standing::Undeclared,
        subject: format!("{}/manifest.json", d.dir),
        title: format!("`{}/manifest.json` does not read", d.dir),
        reason: "none recorded: manifests are written atomically, so this one was \
                 changed afterwards"
            .into(),
        evidence: vec![e.clone()],
    })
}

/// The item for `d`, a run directory that no journal event names.
fn unrecorded(d: &RunDir) -> Draft {
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
    Draft {
        kind: Kind::UnrecordedDirectory,
        standing: Standing::Undeclared,
        subject: d.dir.clone(),
        title: format!("The run directory `{}` is in no journal event", d.dir),
        reason: "none recorded: every run feedbench makes or moves is in the journal, \
                 so this directory came from elsewhere"
            .into(),
        evidence: vec![what],
    }
}
