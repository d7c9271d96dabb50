//! A pilot's area under the study directory (`pilots/<NNN>/`, `rundir::layout`): claimed
//! with the next number (never an earlier pilot's), and its record, `pilot.json`: which
//! plan ran (its hash, its git state), at which scale, which runs, under which name.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::files::{fail, write_atomic, FileError};
use crate::git::Git;
use crate::rundir::layout::{pilot_dir, pilot_number, PILOTS, PILOT_PLAN, PILOT_RECORD};

/// The version of `pilot.json`.
pub const FORMAT_VERSION: u32 = 1;

/// `pilot.json`: written once, atomically, before the pilot's first run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PilotRecord {
    pub format_version: u32,
    /// The pilot's number: its area is `pilots/<number, 3 digits>/`.
    pub number: u32,
    /// The plan's study name.
    pub study: String,
    /// The name its runs ran under (containers, network, labels, manifests).
    pub name: String,
    /// The plan file as the pilot was given it (its path in git when it has one).
    pub plan_file: String,
    /// The plan file's hash as it was (`plan.yaml` in the area is that file).
    pub plan_hash: String,
    /// The plan file's git state when the pilot ran: it need not be committed.
    pub git: Git,
    /// The scale every duration that makes a run long was multiplied by.
    pub scale: f64,
    /// The `--only` pattern, if any.
    pub only: Option<String>,
    /// The repetitions of each arm the pilot ran in place of the plan's (`--repetitions`);
    /// absent when it ran the plan's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetitions: Option<u32>,
    /// The runs the pilot was to run (with those they take a rate from), in plan order.
    pub runs: Vec<PilotRun>,
    /// When the area was made (unix ns, as a string like the journal's).
    pub created_wall_ns: String,
}

/// One run of a pilot: its id and its run hash in the scaled plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PilotRun {
    pub run: String,
    pub run_hash: String,
}

#[derive(Debug, thiserror::Error)]
pub enum PilotError {
    #[error(transparent)]
    File(#[from] FileError),
    #[error("`{}` is not a directory; move it away to make pilots of this study", .0.display())]
    NotADirectory(PathBuf),
    #[error("cannot write `{}`: {source}", .path.display())]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
}

/// Claims the next pilot area of the study in `study_dir`: one more than the highest number
/// there, made with `create_dir` so two pilots never share one. Returns its number and path.
pub fn claim(study_dir: &Path) -> Result<(u32, PathBuf), PilotError> {
    let root = study_dir.join(PILOTS);
    match std::fs::symlink_metadata(&root) {
        Ok(m) if !m.is_dir() => return Err(PilotError::NotADirectory(root)),
        Ok(_) => {}
        Err(_) => std::fs::create_dir_all(&root).map_err(fail("create", &root))?,
    }
    let mut highest = 0;
    for e in std::fs::read_dir(&root).map_err(fail("list", &root))? {
        let e = e.map_err(fail("list", &root))?;
        if let Some(n) = pilot_number(&e.file_name().to_string_lossy()) {
            highest = highest.max(n);
        }
    }
    let mut n = highest + 1;
    loop {
        let dir = pilot_dir(study_dir, n);
        match std::fs::create_dir(&dir) {
            Ok(()) => {
                crate::files::sync_dir(&root);
                return Ok((n, dir));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => n += 1,
            Err(e) => return Err(fail("create", &dir)(e).into()),
        }
    }
}

/// Writes the area's record and its copy of the plan file, each atomically.
pub fn write(dir: &Path, record: &PilotRecord, plan_text: &[u8]) -> Result<(), PilotError> {
    let path = dir.join(PILOT_RECORD);
    let mut json = serde_json::to_vec_pretty(record).map_err(|source| PilotError::Json {
        path: path.clone(),
        source,
    })?;
    json.push(b'\n');
    write_atomic(&dir.join(PILOT_PLAN), plan_text)?;
    write_atomic(&path, &json)?;
    Ok(())
}

/// Reads a record from its text; an error says what is wrong in words.
pub fn parse(text: &[u8]) -> Result<PilotRecord, String> {
    crate::files::parse_versioned(text, FORMAT_VERSION)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(n: u32) -> PilotRecord {
        PilotRecord {
            format_version: FORMAT_VERSION,
            number: n,
            study: "tiny".into(),
            name: crate::rundir::layout::pilot_study("tiny", n),
            plan_file: "experiments/tiny.yaml".into(),
            plan_hash: "ab".repeat(32),
            git: Git {
                commit: None,
                path: None,
                clean: None,
            },
            scale: 0.25,
            only: Some("svc/ramp/r1".into()),
            repetitions: Some(3),
            runs: vec![PilotRun {
                run: "svc/ramp/r1".into(),
                run_hash: "cd".repeat(32),
            }],
            created_wall_ns: "1".into(),
        }
    }

    #[test]
    fn areas_take_the_next_number_and_never_an_earlier_one() {
        let d = tempfile::tempdir().unwrap();
        let (n, dir) = claim(d.path()).unwrap();
        assert_eq!((n, dir.clone()), (1, d.path().join("pilots/001")));
        write(&dir, &record(1), b"study: {}\n").unwrap();
        assert_eq!(
            parse(&std::fs::read(dir.join(PILOT_RECORD)).unwrap()).unwrap(),
            record(1)
        );
        assert_eq!(std::fs::read(dir.join(PILOT_PLAN)).unwrap(), b"study: {}\n");
        std::fs::create_dir(d.path().join("pilots/007")).unwrap();
        std::fs::create_dir(d.path().join("pilots/notes")).unwrap();
        assert_eq!(claim(d.path()).unwrap().0, 8);
        assert_eq!(claim(d.path()).unwrap().0, 9);
    }

    #[test]
    fn a_file_where_the_pilots_go_is_refused() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join(PILOTS), "").unwrap();
        assert!(matches!(claim(d.path()), Err(PilotError::NotADirectory(_))));
    }

    #[test]
    fn records_of_another_version_or_none_are_refused_in_words() {
        assert_eq!(
            parse(br#"{"format_version": 2}"#).unwrap_err(),
            "format_version 2, this feedbench reads 1"
        );
        assert!(parse(b"{}").unwrap_err().contains("format_version"));
        assert!(parse(b"[").is_err());
    }
}
