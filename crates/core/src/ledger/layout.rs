//! Where things are under `results/<study>/`: the journal, `runs/<run>/` for runs that
//! stand, and the areas runs are moved to when they do not (`_invalid_<reason>/`,
//! `_interrupted/`, `_aborted/`, `_superseded/`). Nothing is deleted; paths in the journal
//! are relative to the study directory.

use std::path::{Path, PathBuf};

use crate::spec::topology::run_slug;

pub const RUNS: &str = "runs";
pub const INTERRUPTED: &str = "_interrupted";
pub const ABORTED: &str = "_aborted";
pub const SUPERSEDED: &str = "_superseded";

/// The directory of a run that stands (or is under way).
pub fn run_dir(study: &Path, run: &str) -> PathBuf {
    study.join(RUNS).join(run_slug(run))
}

/// The area an invalid run is moved to; the reason is made a safe directory name.
pub fn invalid_area(reason: &str) -> String {
    let slug: String = reason
        .chars()
        .map(|c| match c {
            'a'..='z' | '0'..='9' | '-' => c,
            'A'..='Z' => c.to_ascii_lowercase(),
            _ => '-',
        })
        .collect();
    format!("_invalid_{}", slug.trim_matches('-'))
}

/// Where a run's directory goes in `area`.
pub fn aside(study: &Path, area: &str, run: &str) -> PathBuf {
    study.join(area).join(run_slug(run))
}

/// `path` relative to the study directory, with `/`, for the journal.
pub fn relative(study: &Path, path: &Path) -> String {
    path.strip_prefix(study)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn areas_are_safe_names() {
        assert_eq!(invalid_area("fault-proxy CPU"), "_invalid_fault-proxy-cpu");
        assert_eq!(invalid_area("by person: x/y"), "_invalid_by-person--x-y");
        let s = Path::new("/r/smoke");
        assert_eq!(
            relative(s, &run_dir(s, "feed-rs/ramp/r1")),
            "runs/feed-rs_ramp_r1"
        );
    }
}
