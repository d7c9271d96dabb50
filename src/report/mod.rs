//! `feedbench report`'s output: report.md, index.html with its plots, metrics.csv,
//! summary.csv and metrics.json, written as one directory; and the check against the
//! independent recomputation. The figures themselves are the core's
//! (`feedbench_core::report`).

pub mod comparisons;
pub mod html;
pub mod markdown;
pub mod plots;
pub mod twin_env;
pub mod verdicts;
pub mod verify;
pub mod write;

use std::path::Path;

use feedbench_core::report::{comparison, rows, summary, StudyReport};
use feedbench_core::rundir::{
    COMPARISONS_CSV, INDEX_HTML, METRICS_CSV, METRICS_JSON, REPORT_MD, SUMMARY_CSV,
};

#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error(transparent)]
    Plots(#[from] plots::PlotError),
    #[error(transparent)]
    Write(#[from] write::WriteError),
    #[error("cannot serialise metrics.json: {0}")]
    Json(#[source] serde_json::Error),
}

/// Renders every file and writes them as the directory `out`.
pub fn write_all(report: &StudyReport, out: &Path) -> Result<(), OutputError> {
    let md = markdown::render(report);
    let figures = plots::plots(report)?;
    let page = html::render(&format!("Report: study {}", report.study), &md, &figures);
    let json = serde_json::to_vec_pretty(report).map_err(OutputError::Json)?;
    write::directory(
        out,
        &[
            (INDEX_HTML, page.into_bytes()),
            (REPORT_MD, md.into_bytes()),
            (METRICS_CSV, rows::render(&report.metrics).into_bytes()),
            (SUMMARY_CSV, summary::render(&report.summary).into_bytes()),
            (
                COMPARISONS_CSV,
                comparison::file::render(&report.comparisons).into_bytes(),
            ),
            (METRICS_JSON, json),
        ],
    )?;
    Ok(())
}
