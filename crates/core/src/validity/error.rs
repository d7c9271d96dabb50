//! Why a run's validity could not be assessed at all (an unreadable input, an unknown
//! window). None of these says the run is valid; the caller records them as warnings.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ValidityError {
    #[error("cannot open `{path}`: {source}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read `{path}`: {source}")]
    Csv { path: PathBuf, source: csv::Error },
    #[error("the measured window is unknown: the run has no {0}")]
    NoWindow(&'static str),
}
