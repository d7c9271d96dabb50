//! `feedbench report`'s figures: which runs stand (from the audit, against the committed
//! plan), every figure of docs/analysis.md computed from each standing run's raw data
//! (read once, one run at a time), the summary across repetitions, and what is left out
//! and why. Rendering (Markdown, HTML, plots) lives with the binary; this is the pure part.

pub mod comparison;
pub mod faults;
pub mod judged;
pub mod latency;
pub mod out;
pub mod ramp;
pub mod read;
pub mod rows;
pub mod run;
pub mod scan;
pub mod sizing;
pub mod summary;
pub mod usage;
pub mod verdicts;
pub mod window;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::audit::{self, report::state_detail, AuditError};
use crate::ledger::journal;
use crate::ledger::state::{Ledger, RunState};
use rows::Row;
use run::RunFigures;
use summary::SummaryRow;

/// The version of metrics.json.
pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Audit(#[from] AuditError),
    #[error("`{dir}` holds no result that stands: {states}. Run the study first (`feedbench run {plan}`)")]
    NoResults {
        dir: PathBuf,
        plan: String,
        states: String,
    },
    #[error("the results in `{dir}` were made under plan hash {found}, and no declared amendment connects it to the plan's hash {plan_hash}: declare the change with `feedbench run {plan} --amend \"why\"`, or report with the plan version the results were made with")]
    UnconnectedPlanHash {
        dir: PathBuf,
        plan: String,
        found: String,
        plan_hash: String,
    },
    #[error("`{plan}` does not load as it is now, so its hypotheses cannot be judged: {error}; fix the plan (`feedbench plan {plan}` shows where)")]
    PlanDoesNotLoad { plan: String, error: String },
    #[error("cannot read the journal of `{dir}`: {message}")]
    Journal { dir: PathBuf, message: String },
}

impl ReportError {
    /// Bad input (exit 2) rather than a failure.
    pub fn bad_input(&self) -> bool {
        match self {
            ReportError::Audit(e) => e.bad_input(),
            _ => true,
        }
    }
}

/// A planned run that enters no figure, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Left {
    pub run: String,
    /// `invalid`, `skipped`, `interrupted`, `superseded`, `not run`, `not analysable`.
    pub state: String,
    pub reason: String,
    pub evidence: Vec<String>,
}

/// The audit's verdict, as the report's top states it.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub passed: bool,
    pub undeclared: usize,
    pub declared: usize,
    pub gaps: usize,
}

/// Everything the report says.
#[derive(Debug, Clone, Serialize)]
pub struct StudyReport {
    pub format_version: u32,
    pub study: String,
    pub plan_file: String,
    pub plan_hash: String,
    /// The registration commit (its hash), or `working tree`.
    pub registration: String,
    pub audit: Verdict,
    pub analysed: Vec<String>,
    /// Runs with results that do not enter the figures, by name, with why.
    pub excluded: Vec<Left>,
    /// Planned runs with no result.
    pub gaps: Vec<Left>,
    /// Each hypothesis with its verdict (docs/analysis.md, "Hypotheses' verdicts").
    pub hypotheses: Vec<verdicts::hypotheses::HypothesisVerdict>,
    /// The checks resolved to their rows: what the twin is given (checks.json).
    #[serde(skip)]
    pub checks: Vec<verdicts::Resolved>,
    /// Where the study's wall time went, from the journal and the runs' events
    /// (`ledger::hours`); `None` for a report of runs without a study.
    pub time: Option<crate::ledger::hours::Split>,
    pub metrics: Vec<Row>,
    pub summary: Vec<SummaryRow>,
    /// Whether the plan's order pairs arms by round (docs/analysis.md, "Comparisons").
    pub paired_rounds: bool,
    /// Every pair of arms on each headline figure, Holm-adjusted within its family.
    pub comparisons: Vec<comparison::Comparison>,
    #[serde(skip)]
    pub runs: Vec<RunFigures>,
    /// The standing runs' directories, in plan order (what the twin is given).
    #[serde(skip)]
    pub run_dirs: Vec<PathBuf>,
}

impl StudyReport {
    /// A report of these runs alone, all standing, with no plan, audit or hypotheses: what
    /// the benchmark and the renderers' tests build without a study on disk.
    pub fn of_runs(study: &str, runs: Vec<RunFigures>, run_dirs: Vec<PathBuf>) -> StudyReport {
        let metrics: Vec<Row> = runs.iter().flat_map(|r| r.rows.iter().cloned()).collect();
        StudyReport {
            format_version: FORMAT_VERSION,
            study: study.into(),
            plan_file: "synthetic".into(),
            plan_hash: "synthetic".into(),
            registration: "working tree".into(),
            audit: Verdict {
                passed: true,
                undeclared: 0,
                declared: 0,
                gaps: 0,
            },
            analysed: runs.iter().map(|r| r.key.run.clone()).collect(),
            excluded: Vec::new(),
            gaps: Vec::new(),
            hypotheses: Vec::new(),
            checks: Vec::new(),
            time: None,
            summary: summary::summarise(&metrics),
            paired_rounds: false,
            comparisons: comparison::of_rows(&metrics, false, &Default::default()),
            metrics,
            runs,
            run_dirs,
        }
    }
}

/// What the report is built from.
pub struct Request<'a> {
    pub plan: &'a Path,
    pub registered: Option<&'a str>,
    pub results: &'a Path,
}

fn rev_name(v: &audit::report::VersionInfo) -> String {
    match &v.rev {
        audit::history::Rev::Commit(c) => c.hash.clone(),
        audit::history::Rev::WorkingTree => "working tree".into(),
    }
}

/// The runs that completed valid, as (run, directory as journalled); none is an error
/// that counts the runs by state.
fn standing_or_refuse<'a>(
    audited: &'a crate::audit::Report,
    dir: &Path,
    req: &Request<'_>,
) -> Result<Vec<(&'a str, &'a str)>, ReportError> {
    let standing: Vec<(&str, &str)> = audited
        .runs
        .iter()
        .filter_map(|r| match &r.state {
            RunState::CompletedValid { dir, .. } => Some((r.run.as_str(), dir.as_str())),
            _ => None,
        })
        .collect();
    if !standing.is_empty() {
        return Ok(standing);
    }
    let mut counts = std::collections::BTreeMap::<&str, usize>::new();
    for r in &audited.runs {
        *counts.entry(r.label()).or_default() += 1;
    }
    let states = counts
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect::<Vec<_>>()
        .join(", ");
    Err(ReportError::NoResults {
        dir: dir.to_path_buf(),
        plan: req.plan.display().to_string(),
        states,
    })
}

/// The runs that do not stand: `(excluded, gaps)`, a gap being a run never run and not
/// superseded.
fn left_behind(audited: &crate::audit::Report) -> (Vec<Left>, Vec<Left>) {
    let mut excluded = Vec::new();
    let mut gaps = Vec::new();
    for r in &audited.runs {
        let evidence = match &r.state {
            RunState::Invalid { evidence, .. } => evidence.iter().map(|e| e.to_string()).collect(),
            _ => Vec::new(),
        };
        let left = Left {
            run: r.run.clone(),
            state: r.label().to_string(),
            reason: state_detail(r),
            evidence,
        };
        match &r.state {
            RunState::CompletedValid { .. } => {}
            RunState::NotRun if r.superseded.is_empty() => gaps.push(left),
            _ => excluded.push(left),
        }
    }
    (excluded, gaps)
}

/// Each standing run's figures and directory; a run whose directory lies outside the study
/// directory, or that cannot be analysed, joins `excluded` with the reason.
fn analyse(
    dir: &Path,
    standing: &[(&str, &str)],
    excluded: &mut Vec<Left>,
    progress: &mut dyn FnMut(usize, usize, &str),
) -> (Vec<run::RunFigures>, Vec<PathBuf>) {
    // A directory the journal names out of the study directory is never read.
    let mut items: Vec<(String, PathBuf)> = Vec::new();
    for (run, rel) in standing {
        match crate::confine::inside(dir, rel) {
            Ok(path) => items.push((run.to_string(), path)),
            Err(why) => excluded.push(Left {
                run: run.to_string(),
                state: "not analysable".into(),
                reason: why.to_string(),
                evidence: Vec::new(),
            }),
        }
    }
    let mut runs = Vec::new();
    let mut run_dirs = Vec::new();
    for ((run, path), analysed) in items.iter().zip(run::analyse_all(&items, progress)) {
        match analysed {
            Ok(f) => {
                runs.push(f);
                run_dirs.push(path.clone());
            }
            Err(reason) => excluded.push(Left {
                run: run.clone(),
                state: "not analysable".into(),
                reason: format!(
                    "`{}`: {reason}",
                    path.strip_prefix(dir).unwrap_or(path).display()
                ),
                evidence: Vec::new(),
            }),
        }
    }
    (runs, run_dirs)
}

/// Builds the report; `progress(done, total, run)` is called as each run is read.
pub fn build(
    req: &Request<'_>,
    progress: &mut dyn FnMut(usize, usize, &str),
) -> Result<StudyReport, ReportError> {
    let (audited, history) = audit::run_with_history(req.plan, req.registered, req.results)?;
    let current = history.current();
    let plan = current
        .plan
        .as_deref()
        .ok_or_else(|| ReportError::PlanDoesNotLoad {
            plan: req.plan.display().to_string(),
            error: current.error.clone().unwrap_or_default(),
        })?;
    let dir = crate::rundir::layout::study_dir(req.results, &audited.study);
    let plan_hash = audited.runs_for.plan_hash.clone().unwrap_or_default();
    let journal = journal::read(&dir.join(journal::FILE)).map_err(|e| ReportError::Journal {
        dir: dir.clone(),
        message: e.to_string(),
    })?;
    let ledger = Ledger::fold(journal.events());
    let entries: Vec<_> = journal.entries.iter().map(|(_, e)| e.clone()).collect();
    let time = crate::ledger::hours::split(&entries, &mut |rel| {
        crate::ledger::hours::phases_at(&dir, rel)
    });
    if let Some(found) = ledger.plan_hash.as_ref().filter(|h| **h != plan_hash) {
        return Err(ReportError::UnconnectedPlanHash {
            dir,
            plan: req.plan.display().to_string(),
            found: found.clone(),
            plan_hash,
        });
    }
    let standing = standing_or_refuse(&audited, &dir, req)?;
    let (mut excluded, gaps) = left_behind(&audited);
    let (mut runs, run_dirs) = analyse(&dir, &standing, &mut excluded, progress);
    for r in &mut runs {
        r.recorded_objective = ledger.recorded_objective(&r.key.run).map(str::to_owned);
    }
    let metrics: Vec<Row> = runs.iter().flat_map(|r| r.rows.iter().cloned()).collect();
    let summary = summary::summarise(&metrics);
    let paired_rounds = comparison::paired_rounds(&plan.matrix.order);
    let mut standing = verdicts::Standing {
        not_standing: excluded
            .iter()
            .chain(&gaps)
            .map(|l| (l.run.as_str(), l.state.clone()))
            .collect(),
        ..Default::default()
    };
    for r in &runs {
        standing.add(&r.key.run, &r.frame);
    }
    let (hypotheses, checks) = verdicts::hypotheses::judge(
        plan,
        &history,
        &standing,
        &verdicts::RowIndex::new(&metrics),
        paired_rounds,
    );
    let registered = verdicts::compared::registered_pairs(&checks);
    let comparisons = comparison::of_rows(&metrics, paired_rounds, &registered);
    let s = &audited.summary;
    Ok(StudyReport {
        format_version: FORMAT_VERSION,
        study: audited.study.clone(),
        plan_file: audited.plan_file.clone(),
        plan_hash,
        registration: rev_name(&audited.registration),
        audit: Verdict {
            passed: s.passed,
            undeclared: s.undeclared,
            declared: s.declared,
            gaps: s.gaps,
        },
        analysed: runs.iter().map(|r| r.key.run.clone()).collect(),
        excluded,
        gaps,
        hypotheses,
        checks,
        time: Some(time),
        metrics,
        summary,
        paired_rounds,
        comparisons,
        runs,
        run_dirs,
    })
}
