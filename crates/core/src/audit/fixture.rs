//! Studies written with the ledger's own writers (`journal::Writer`, `Manifest::seal`), the
//! way `feedbench run` writes them but without running anything: for tests of the audit and
//! of anything else that reads a study directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::files::{move_dir, FileError};
use crate::git::GitError;
use crate::ledger::journal::{self, Decider, Event, Evidence, RunChange, Writer};
use crate::ledger::manifest::{
    self, Execution, Git, Host, Manifest, ManifestError, Outcome, Validity,
};
use crate::plan::{load_file, LoadError, RunSpec};
use crate::rundir;
use crate::rundir::layout::{self, SUPERSEDED};

#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error(transparent)]
    File(#[from] FileError),
    #[error(transparent)]
    Pilot(#[from] crate::ledger::pilot::PilotError),
    #[error(transparent)]
    Inputs(#[from] crate::inputs::InputError),
}

/// A study being written.
pub struct Fixture {
    /// `results/<study>`.
    pub dir: PathBuf,
    pub study: String,
    pub plan_file: String,
    /// The plan hash runs are recorded under; `amend` changes it.
    pub plan_hash: String,
    pub git: Git,
    journal: Writer,
    attempts: BTreeMap<String, u32>,
    /// Where each run's last attempt is, relative to the study directory.
    dirs: BTreeMap<String, String>,
    /// The plan's inputs, recorded in manifests (empty for a study started with `start_with`).
    pub inputs: crate::inputs::Inputs,
    /// The images the next runs' manifests record (none unless a test sets them).
    pub images: Vec<manifest::Image>,
}

impl Fixture {
    /// Starts a study of the plan file as it is on disk: creates `results/<study>/` and
    /// records `study-started` with the plan's hash and its registration in git.
    pub fn start(plan: &Path, results: &Path) -> Result<(Fixture, Vec<RunSpec>), FixtureError> {
        let loaded = load_file(plan, None)?;
        let inputs = crate::inputs::Inputs::of_working_tree(&loaded)?;
        let runs = crate::inputs::expand(&loaded.plan, &inputs);
        let git = crate::git::registration(plan)?;
        let dir = crate::rundir::layout::study_dir(results, loaded.plan.study.name.as_str());
        let f = Fixture::start_with(
            &dir,
            loaded.plan.study.name.as_str(),
            &plan.display().to_string(),
            &loaded.plan_hash,
            git,
            &runs,
        )?;
        let mut f = f;
        f.append(Event::InputsRead {
            digest: inputs.digest(),
            files: inputs.files.clone(),
        })?;
        f.inputs = inputs;
        Ok((f, runs))
    }

    /// Starts a study in `dir` with everything given.
    pub fn start_with(
        dir: &Path,
        study: &str,
        plan_file: &str,
        plan_hash: &str,
        git: Git,
        runs: &[RunSpec],
    ) -> Result<Fixture, FixtureError> {
        std::fs::create_dir_all(dir).map_err(crate::files::fail("create", dir))?;
        let journal = Writer::open(&dir.join(journal::FILE))?;
        let mut f = Fixture {
            dir: dir.to_path_buf(),
            study: study.into(),
            plan_file: plan_file.into(),
            plan_hash: plan_hash.into(),
            git,
            journal,
            attempts: BTreeMap::new(),
            dirs: BTreeMap::new(),
            inputs: Default::default(),
            images: Vec::new(),
        };
        f.append(Event::StudyStarted {
            plan_file: plan_file.into(),
            plan_hash: plan_hash.into(),
            feedbench_version: env!("CARGO_PKG_VERSION").into(),
            git_commit: f.git.commit.clone(),
            git_clean: f.git.clean,
            resume: false,
            runs_planned: runs.len(),
            runs_to_do: runs.iter().map(|r| r.id.clone()).collect(),
        })?;
        Ok(f)
    }

    /// Starts a pilot of `study` in its next area under `study_dir` (`pilots/<NNN>/`), as
    /// `feedbench pilot` does: its record (with `runs`, at `scale`) and plan copy, then its
    /// own journal under the pilot's name, with `uncommitted-plan` when `git` is not clean.
    #[allow(clippy::too_many_arguments)]
    pub fn pilot(
        study_dir: &Path,
        study: &str,
        plan_file: &str,
        plan_hash: &str,
        git: Git,
        runs: &[RunSpec],
        scale: f64,
        only: Option<&str>,
    ) -> Result<Fixture, FixtureError> {
        use crate::ledger::pilot::{self, PilotRecord, PilotRun};
        let (number, dir) = pilot::claim(study_dir)?;
        let name = layout::pilot_study(study, number);
        let record = PilotRecord {
            format_version: pilot::FORMAT_VERSION,
            number,
            study: study.into(),
            name: name.clone(),
            plan_file: plan_file.into(),
            plan_hash: plan_hash.into(),
            git: git.clone(),
            scale,
            only: only.map(String::from),
            repetitions: None,
            runs: runs
                .iter()
                .map(|r| PilotRun {
                    run: r.id.clone(),
                    run_hash: r.run_hash.clone(),
                })
                .collect(),
            created_wall_ns: journal::unix_ns().to_string(),
        };
        pilot::write(&dir, &record, b"# the plan as it was\n")?;
        let mut f = Fixture::start_with(&dir, &name, plan_file, plan_hash, git, runs)?;
        if f.git.clean != Some(true) {
            f.declare_uncommitted()?;
        }
        Ok(f)
    }

    /// Appends any event.
    pub fn append(&mut self, event: Event) -> Result<(), FixtureError> {
        self.journal.append(event)?;
        Ok(())
    }

    /// Declares that the plan is run uncommitted (what `--allow-uncommitted` records).
    pub fn declare_uncommitted(&mut self) -> Result<(), FixtureError> {
        self.append(Event::UncommittedPlan {
            plan_file: self.plan_file.clone(),
            plan_hash: self.plan_hash.clone(),
            git_commit: self.git.commit.clone(),
            files: Vec::new(),
        })
    }

    /// The next attempt of `run` started: `run-started` naming its directory under `runs/`.
    /// Returns the attempt and that directory, relative to the study directory.
    fn start_attempt(&mut self, run: &RunSpec) -> Result<(u32, String), FixtureError> {
        let attempt = {
            let n = self.attempts.entry(run.id.clone()).or_default();
            *n += 1;
            *n
        };
        let dir = layout::relative(&self.dir, &layout::run_dir(&self.dir, &run.id));
        self.append(Event::RunStarted {
            run: run.id.clone(),
            run_hash: run.run_hash.clone(),
            attempt,
            dir: dir.clone(),
        })?;
        Ok((attempt, dir))
    }

    /// Runs `run` to its end: `run-started`, a directory with raw files, its sealed
    /// manifest, `run-finished`. Returns the directory, relative to the study directory.
    pub fn complete(&mut self, run: &RunSpec) -> Result<String, FixtureError> {
        let replica_log = format!("{}/{}", rundir::LOGS_DIR, rundir::log_file("replica-1"));
        let files: Vec<(String, Vec<u8>)> = [
            (
                rundir::REQUESTS_CSV.to_string(),
                "start_ns,end_ns,route,status\n1000,2000,feed,200\n3000,4500,feed,200\n",
            ),
            (
                rundir::EVENTS_CSV.to_string(),
                "wall_ns,t_s,event,subject,detail\n1,0,phase,measure,\n",
            ),
            (replica_log, "2026-12-01T00:00:00Z ready\n"),
        ]
        .into_iter()
        .map(|(n, t)| (n, t.as_bytes().to_vec()))
        .collect();
        self.complete_with(run, &files)
    }

    /// Like `complete`, with the run directory's files given (path relative to the run
    /// directory, contents): e.g. the raw data of a synthetic run, for the report's tests.
    pub fn complete_with(
        &mut self,
        run: &RunSpec,
        files: &[(String, Vec<u8>)],
    ) -> Result<String, FixtureError> {
        let (attempt, dir) = self.start_attempt(run)?;
        let path = layout::run_dir(&self.dir, &run.id);
        let io = |p: &Path| crate::files::fail("write", p);
        std::fs::create_dir_all(path.join(rundir::LOGS_DIR)).map_err(io(&path))?;
        for (name, bytes) in files {
            let p = path.join(name);
            std::fs::write(&p, bytes).map_err(io(&p))?;
        }
        Manifest {
            format_version: manifest::FORMAT_VERSION,
            study: self.study.clone(),
            plan_file: self.plan_file.clone(),
            plan_hash: self.plan_hash.clone(),
            run_id: run.id.clone(),
            run_hash: run.run_hash.clone(),
            attempt,
            feedbench_version: env!("CARGO_PKG_VERSION").into(),
            git: self.git.clone(),
            host: Host {
                cores: 2.0,
                memory_bytes: 1 << 30,
                kernel: "6.1".into(),
                cgroup_version: "2".into(),
                engine_version: "fixture".into(),
                cpu: None,
            },
            engines: Vec::new(),
            images: self.images.clone(),
            seed_digest: None,
            inputs: self.inputs.files_of(&run.inputs),
            caps: Vec::new(),
            started_wall_ns: journal::unix_ns().to_string(),
            ended_wall_ns: journal::unix_ns().to_string(),
            outcome: Outcome {
                execution: Execution::Completed,
                execution_detail: None,
                cleanup: "ok".into(),
                validity: Validity::Valid,
                objective: Some("met".into()),
            },
            files: BTreeMap::new(),
        }
        .seal(&path)?;
        self.append(Event::RunFinished {
            run: run.id.clone(),
            run_hash: run.run_hash.clone(),
            attempt,
            dir: dir.clone(),
            objective: Some("met".into()),
            cleanup_ok: true,
        })?;
        self.dirs.insert(run.id.clone(), dir.clone());
        Ok(dir)
    }

    /// Invalidates the last attempt of a completed run: moves its directory to
    /// `_invalid_<reason>/` and records why, with the evidence.
    pub fn invalidate(
        &mut self,
        run: &RunSpec,
        reason: &str,
        evidence: Vec<Evidence>,
    ) -> Result<String, FixtureError> {
        let attempt = self.attempts.get(&run.id).copied().unwrap_or(1);
        let to = layout::aside(&self.dir, &layout::invalid_area(reason), &run.id);
        let moved = move_dir(&layout::run_dir(&self.dir, &run.id), &to)?;
        let dir = layout::relative(&self.dir, &moved);
        self.append(Event::RunInvalidated {
            run: run.id.clone(),
            run_hash: run.run_hash.clone(),
            attempt,
            dir: dir.clone(),
            reason: reason.into(),
            by: Decider::Feedbench,
            evidence,
        })?;
        self.dirs.insert(run.id.clone(), dir.clone());
        Ok(dir)
    }

    /// An attempt of `run` killed before it made its directory: `run-started`, then what the
    /// next resume records, `run-interrupted` with nothing found, still named under `runs/`.
    pub fn interrupt_before_its_directory(&mut self, run: &RunSpec) -> Result<(), FixtureError> {
        let (attempt, dir) = self.start_attempt(run)?;
        self.append(Event::RunInterrupted {
            run: run.id.clone(),
            run_hash: run.run_hash.clone(),
            attempt,
            dir,
            found: "no directory".into(),
        })
    }

    pub fn skip(&mut self, run: &RunSpec, reason: &str) -> Result<(), FixtureError> {
        self.append(Event::RunSkipped {
            run: run.id.clone(),
            run_hash: run.run_hash.clone(),
            reason: reason.into(),
            by: Decider::Person,
        })
    }

    /// Declares an amendment from the current plan hash to `new_plan_hash` and supersedes
    /// every completed run in `old_runs` whose hash `new_runs` changes (or drops): its
    /// directory moves to `_superseded/`.
    pub fn amend(
        &mut self,
        reason: &str,
        new_plan_hash: &str,
        old_runs: &[RunSpec],
        new_runs: &[RunSpec],
    ) -> Result<Vec<RunChange>, FixtureError> {
        let mut changes = Vec::new();
        for old in old_runs {
            let new = new_runs.iter().find(|r| r.id == old.id);
            if new.map(|n| &n.run_hash) != Some(&old.run_hash) {
                changes.push(RunChange {
                    run: old.id.clone(),
                    old_run_hash: Some(old.run_hash.clone()),
                    new_run_hash: new.map(|n| n.run_hash.clone()),
                });
            }
        }
        for new in new_runs {
            if !old_runs.iter().any(|o| o.id == new.id) {
                changes.push(RunChange {
                    run: new.id.clone(),
                    old_run_hash: None,
                    new_run_hash: Some(new.run_hash.clone()),
                });
            }
        }
        // The amended plan is committed now: later runs record the commit it is in, and
        // its inputs are read again, as `feedbench run --amend` does.
        let plan = Path::new(&self.plan_file);
        let mut inputs = None;
        if plan.exists() {
            self.git = crate::git::registration(plan)?;
            if !self.inputs.files.is_empty() {
                inputs = Some(crate::inputs::Inputs::of_working_tree(&load_file(
                    plan, None,
                )?)?);
            }
        }
        let files_changed = inputs
            .as_ref()
            .map(|i| crate::inputs::changed(&self.inputs.files, &i.files))
            .unwrap_or_default();
        self.append(Event::PlanAmended {
            reason: reason.into(),
            old_plan_hash: self.plan_hash.clone(),
            new_plan_hash: new_plan_hash.into(),
            git_commit: self.git.commit.clone(),
            changes: changes.clone(),
            old_inputs_digest: inputs.as_ref().map(|_| self.inputs.digest()),
            new_inputs_digest: inputs.as_ref().map(crate::inputs::Inputs::digest),
            files_changed: files_changed.into_iter().map(|f| f.path).collect(),
        })?;
        for c in changes.iter().filter(|c| c.old_run_hash.is_some()) {
            let Some(&attempt) = self.attempts.get(&c.run) else {
                continue;
            };
            // A run that stands moves to `_superseded/`; one already aside stays where it is.
            let standing = layout::relative(&self.dir, &layout::run_dir(&self.dir, &c.run));
            let dir = match self.dirs.remove(&c.run) {
                Some(d) if d == standing => {
                    let to = layout::aside(&self.dir, SUPERSEDED, &c.run);
                    let moved = move_dir(&self.dir.join(&d), &to)?;
                    Some(layout::relative(&self.dir, &moved))
                }
                other => other,
            };
            self.append(Event::RunSuperseded {
                run: c.run.clone(),
                run_hash: c.old_run_hash.clone().unwrap_or_default(),
                attempt,
                dir,
                amendment: reason.into(),
            })?;
        }
        self.plan_hash = new_plan_hash.into();
        if let Some(i) = inputs {
            if i.files != self.inputs.files {
                self.append(Event::InputsRead {
                    digest: i.digest(),
                    files: i.files.clone(),
                })?;
            }
            self.inputs = i;
        }
        Ok(changes)
    }
}
