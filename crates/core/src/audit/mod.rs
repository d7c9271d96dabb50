//! The audit of a study against its committed, pre-registered plan: the plan's history since
//! registration and whether each change was declared, every planned run's final state, and
//! every departure of the results from the plan, declared or not.
//!
//! `history` reads the plan's versions from git, `study` reads the study directory, `check`
//! compares them (pure), `report` is the outcome and its Markdown; `pilots` lists the
//! study's pilots, exploration before registration, apart from every check; `fixture`
//! writes studies with the ledger's own writers, for tests.

pub mod check;
pub mod fixture;
pub mod history;
pub mod pilots;
pub mod report;
pub mod study;

use std::path::{Path, PathBuf};

pub use check::audit;
pub use history::{History, PlanVersion, Rev};
pub use report::{Item, Kind, Report, Standing};
pub use study::StudyFiles;

use crate::files::FileError;
use crate::git::GitError;

#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("cannot read the plan `{file}`: {source}; name the plan file the study was run from")]
    PlanUnreadable {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "`{file}` is not in a git repository, so it was never registered: commit it in a \
         repository before running the study (git init; git add {file}; git commit)"
    )]
    NotInGit { file: String },
    #[error(
        "`{file}` has never been committed, so it was never registered: commit it \
         (git add {file}; git commit), or name its registration with --registered <rev>"
    )]
    NeverCommitted { file: String },
    #[error(
        "`{rev}` names no commit in `{}`: pass --registered a commit, tag or branch \
         that exists (see git log)", .repo.display()
    )]
    NoSuchRev { rev: String, repo: PathBuf },
    #[error(
        "commit `{rev}` is not in HEAD's history in `{}`: the registration must be an \
         ancestor of the commit audited", .repo.display()
    )]
    NotAncestor { rev: String, repo: PathBuf },
    #[error(
        "commit `{rev}` has no file `{file}`: pass --registered the commit that registered \
         the plan (git log -- {file})"
    )]
    NotInCommit { file: String, rev: String },
    #[error(
        "no version of `{file}` loads as a plan, so its study is unknown: {error}; fix the \
         plan (feedbench plan {file})"
    )]
    NoStudy { file: String, error: String },
    #[error(
        "no study directory `{}`: run the study first (feedbench run {plan}), or pass \
         --results the directory that holds `{study}/`", .dir.display()
    )]
    NoStudyDir {
        dir: PathBuf,
        plan: String,
        study: String,
    },
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    File(#[from] FileError),
}

impl AuditError {
    /// Whether the input is at fault (exit 2) rather than the machine (exit 1).
    pub fn bad_input(&self) -> bool {
        match self {
            AuditError::Git(GitError::Spawn(_)) => false,
            // A link, a directory or a pipe where a study's file should be is the input's
            // fault; any other failure to read is the machine's.
            AuditError::File(e) => crate::confine::is_bad_input(&e.source),
            _ => true,
        }
    }
}

/// Audits the study of `plan` whose results are under `results/<study>/`.
pub fn run(plan: &Path, registered: Option<&str>, results: &Path) -> Result<Report, AuditError> {
    run_with_history(plan, registered, results).map(|(report, _)| report)
}

/// [`run`], and the plan's history it audited against.
pub fn run_with_history(
    plan: &Path,
    registered: Option<&str>,
    results: &Path,
) -> Result<(Report, History), AuditError> {
    let history = History::from_git(plan, registered)?;
    let study = history.study().ok_or_else(|| AuditError::NoStudy {
        file: plan.display().to_string(),
        error: history
            .current()
            .error
            .clone()
            .unwrap_or_else(|| "it does not load".into()),
    })?;
    let dir = crate::rundir::layout::study_dir(results, study);
    if !dir.is_dir() {
        return Err(AuditError::NoStudyDir {
            dir,
            plan: plan.display().to_string(),
            study: study.to_string(),
        });
    }
    let files = StudyFiles::read(&dir)?;
    let report = audit(&history, &files, &dir.display().to_string());
    Ok((report, history))
}
