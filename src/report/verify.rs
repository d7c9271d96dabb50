//! `feedbench report --verify`: the twin (twin/recompute.py, pandas, written from the docs
//! alone) recomputes every figure from the raw data on disk, and its rows are compared
//! with the report's metrics.csv as written.

use std::path::{Path, PathBuf};
use std::process::Command;

use feedbench_core::report::rows::{self, Difference, Row};

#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("the recomputation is not found at `{0}` (set FEEDBENCH_TWIN to the twin/ folder of a feedbench checkout)")]
    NoTwin(PathBuf),
    #[error("cannot run `{python}`: {message} (install the twin's packages: python3 -m venv twin/.venv && twin/.venv/bin/pip install -r twin/requirements.txt, or set FEEDBENCH_PYTHON)")]
    NoPython { python: String, message: String },
    #[error("the recomputation failed (exit {code}):\n{stderr}")]
    Failed { code: i32, stderr: String },
    #[error(transparent)]
    Rows(#[from] rows::RowsError),
    #[error("cannot make a scratch directory: {0}")]
    Scratch(#[source] std::io::Error),
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

/// The Python to run it with: $FEEDBENCH_PYTHON, the twin's own venv, or python3.
pub fn python(twin: &Path) -> String {
    if let Ok(p) = std::env::var("FEEDBENCH_PYTHON") {
        return p;
    }
    let venv = twin.join(".venv/bin/python");
    if venv.is_file() {
        return venv.display().to_string();
    }
    "python3".into()
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

/// The twin's metrics.csv for these run directories.
pub fn recompute(run_dirs: &[PathBuf]) -> Result<Vec<Row>, VerifyError> {
    let twin = twin_dir();
    let script = twin.join("recompute.py");
    if !script.is_file() {
        return Err(VerifyError::NoTwin(script));
    }
    let py = python(&twin);
    let scratch = Scratch::new()?;
    let out = Command::new(&py)
        .arg(&script)
        .arg("--out")
        .arg(&scratch.0)
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
    Ok(rows::read(
        &scratch.0.join(feedbench_core::rundir::METRICS_CSV),
    )?)
}

/// The report's rows (as written) against the twin's.
pub fn verify(report_metrics: &Path, run_dirs: &[PathBuf]) -> Result<Vec<Difference>, VerifyError> {
    let ours = rows::read(report_metrics)?;
    let theirs = recompute(run_dirs)?;
    Ok(rows::compare(&ours, &theirs))
}
