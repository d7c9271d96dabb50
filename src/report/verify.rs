//! `feedbench report --verify`: the twin (twin/recompute.py, pandas, written from the docs
//! alone) recomputes every figure from the raw data on disk, and its rows are compared
//! with the report's metrics.csv as written.

use std::path::{Path, PathBuf};
use std::process::Command;

use feedbench_core::report::comparison;
use feedbench_core::report::rows::{self, Difference, Row};
use feedbench_core::report::verdicts::twin::{self, Theirs, CHECKS_JSON, VERDICTS_JSON};
use feedbench_core::report::verdicts::Resolved;
use feedbench_core::report::StudyReport;

use super::twin_env;

#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("the recomputation is not found at `{0}` (set FEEDBENCH_TWIN to the twin/ folder of a feedbench checkout)")]
    NoTwin(PathBuf),
    #[error(transparent)]
    Env(#[from] twin_env::TwinEnvError),
    #[error("cannot run `{python}`: {message}")]
    NoPython { python: String, message: String },
    #[error("the recomputation failed (exit {code}):\n{stderr}")]
    Failed { code: i32, stderr: String },
    #[error(transparent)]
    Rows(#[from] rows::RowsError),
    #[error("cannot make a scratch directory: {0}")]
    Scratch(#[source] std::io::Error),
    #[error("the recomputation's verdicts: {0}")]
    Verdicts(#[from] twin::TwinFileError),
    #[error("the recomputation's comparisons: {0}")]
    Comparisons(String),
    #[error("cannot read the recomputation's `{file}`: {source}")]
    Read {
        file: String,
        #[source]
        source: std::io::Error,
    },
}

/// Where the twin is: $FEEDBENCH_TWIN, else `twin/` next to the checkout this binary was
/// built in (target/<profile>/feedbench), else `./twin`.
pub fn twin_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("FEEDBENCH_TWIN") {
        return PathBuf::from(d);
    }
    let built = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().nth(3).map(|root| root.join("twin")));
    match built {
        Some(d) if d.join("recompute.py").is_file() => d,
        _ => PathBuf::from("twin"),
    }
}

/// The twin, found and with its interpreter ready to run it.
pub struct Twin {
    script: PathBuf,
    /// The interpreter (twin_env: $FEEDBENCH_PYTHON or the twin's own environment).
    pub python: String,
}

impl Twin {
    /// Finds the twin and makes its environment ready, saying on `progress` what that takes.
    pub fn ready(progress: &mut dyn std::io::Write) -> Result<Twin, VerifyError> {
        let dir = twin_dir();
        let script = dir.join("recompute.py");
        if !script.is_file() {
            return Err(VerifyError::NoTwin(script));
        }
        let python = twin_env::ready(&dir, progress)?;
        Ok(Twin { script, python })
    }
}

/// A directory for the twin's output, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Scratch, VerifyError> {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d = std::env::temp_dir().join(format!("feedbench-twin-{}-{n}", std::process::id()));
        if d.exists() {
            std::fs::remove_dir_all(&d).map_err(VerifyError::Scratch)?;
        }
        std::fs::create_dir_all(&d).map_err(VerifyError::Scratch)?;
        Ok(Scratch(d))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What the twin computed: its rows (when given run directories) and its verdicts (when
/// given checks).
pub struct Recomputed {
    pub rows: Vec<Row>,
    pub verdicts: Vec<Theirs>,
    /// Its comparisons.csv, as text (when given run directories).
    pub comparisons: Option<String>,
}

impl Twin {
    /// Runs the twin on these run directories, or, with `metrics`, on that metrics.csv's rows
    /// alone; with checks, it evaluates them too; `paired_rounds` says whether the plan's
    /// order pairs arms by round (its comparisons).
    pub fn recompute(
        &self,
        run_dirs: &[PathBuf],
        metrics: Option<&Path>,
        checks: &[Resolved],
        paired_rounds: bool,
    ) -> Result<Recomputed, VerifyError> {
        let py = &self.python;
        let script = &self.script;
        let scratch = Scratch::new()?;
        let mut cmd = Command::new(py);
        cmd.arg(script).arg("--out").arg(&scratch.0);
        if !checks.is_empty() {
            let file = scratch.0.join(CHECKS_JSON);
            std::fs::write(&file, twin::checks_json(checks)).map_err(VerifyError::Scratch)?;
            cmd.arg("--checks").arg(file);
        }
        if let Some(m) = metrics {
            cmd.arg("--metrics").arg(m);
        }
        if paired_rounds {
            cmd.arg("--paired-rounds");
        }
        let out = cmd
            .args(run_dirs)
            .output()
            .map_err(|e| VerifyError::NoPython {
                python: py.clone(),
                message: e.to_string(),
            })?;
        if !out.status.success() {
            return Err(VerifyError::Failed {
                code: out.status.code().unwrap_or(-1),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            });
        }
        let (rows, comparisons) = if metrics.is_none() {
            let file = feedbench_core::rundir::COMPARISONS_CSV;
            let text = std::fs::read_to_string(scratch.0.join(file)).map_err(|source| {
                VerifyError::Read {
                    file: file.into(),
                    source,
                }
            })?;
            (
                rows::read(&scratch.0.join(feedbench_core::rundir::METRICS_CSV))?,
                Some(text),
            )
        } else {
            (Vec::new(), None)
        };
        let verdicts = if checks.is_empty() {
            Vec::new()
        } else {
            let file = scratch.0.join(VERDICTS_JSON);
            let text = std::fs::read_to_string(&file).map_err(|source| VerifyError::Read {
                file: VERDICTS_JSON.into(),
                source,
            })?;
            twin::read(VERDICTS_JSON, &text)?
        };
        Ok(Recomputed {
            rows,
            verdicts,
            comparisons,
        })
    }
}

/// Our evaluations, each with its hypothesis.
pub fn evaluations(
    report: &StudyReport,
) -> Vec<(&str, &feedbench_core::report::verdicts::Evaluation)> {
    report
        .hypotheses
        .iter()
        .flat_map(|h| h.evaluations().map(move |e| (h.id.as_str(), e)))
        .collect()
}

/// Where the twin and the report differ: metrics.csv's rows, the hypotheses' verdicts, and
/// comparisons.csv's lines.
pub struct Disagreements {
    pub rows: Vec<Difference>,
    pub verdicts: Vec<Difference>,
    pub comparisons: Vec<Difference>,
}

/// The report's rows (`ours`, as written and read back), verdicts and comparisons against
/// the twin's.
pub fn verify(
    twin: &Twin,
    ours: &[Row],
    report: &StudyReport,
) -> Result<Disagreements, VerifyError> {
    let theirs = twin.recompute(&report.run_dirs, None, &report.checks, report.paired_rounds)?;
    let ours_file = comparison::file::render(&report.comparisons);
    let comparisons =
        comparison::file::compare(&ours_file, theirs.comparisons.as_deref().unwrap_or(""))
            .map_err(VerifyError::Comparisons)?;
    Ok(Disagreements {
        rows: rows::compare(ours, &theirs.rows),
        verdicts: twin::compare(&evaluations(report), &theirs.verdicts),
        comparisons,
    })
}
