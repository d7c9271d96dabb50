//! A study opened once: its directory under the results, the lock held while feedbench
//! works on it, the journal writer and the ledger state folded from the journal. Every
//! journal line of a `run` goes through here (`log`, or `note` for the lines settling
//! appended), so the ledger and the reporter never miss one; so does "move aside, then
//! journal" for superseded and unfinished runs.

use std::path::{Path, PathBuf};

use super::claim::Claim;
use super::reporter::{Reporter, StudyEvent};
use super::runner::StudyRequest;
use super::StudyError;
use crate::ledger::journal::{self, Event, Writer};
use crate::ledger::state::{Ledger, PlanChange};
use crate::lock::{lock_study, StudyLock};
use crate::run::settle;
use crate::rundir::instance::{self, InstanceError, InstanceFile};
use crate::rundir::layout::{self, SUPERSEDED};
use crate::spec::topology::Instance;
use feedbench_core::files::{self, short};

/// An open study.
pub struct Session<'r> {
    pub study: String,
    pub dir: PathBuf,
    /// The study's instance on the engines (`rundir::instance`): read back on a resume,
    /// made at the first start and written with the journal.
    pub instance: Instance,
    /// The instance file still to write (a first start, or a study from before instances).
    unwritten: Option<InstanceFile>,
    /// The plan file as the journal and manifests name it (its path in git when it has one).
    pub plan_file: String,
    /// The plan change since the study last ran, if any (declared by the request's amend).
    pub change: Option<PlanChange>,
    pub ledger: Ledger,
    /// The claim on the engines the study runs on (`study::claim`), held until the session
    /// ends; `None` for a study on no claimed engine (the runner's tests).
    pub claim: Option<Claim>,
    writer: Option<Writer>,
    reporter: &'r mut dyn Reporter,
    _lock: StudyLock,
}

impl<'r> Session<'r> {
    /// Opens the study `request` names, refusing (before anything is written) a plan that is
    /// not committed unless allowed, results that exist without --resume, runs without a
    /// journal, and a plan change that is not declared, or declared when there is none.
    pub fn open(
        request: &StudyRequest<'_>,
        reporter: &'r mut dyn Reporter,
    ) -> Result<Session<'r>, StudyError> {
        let loaded = request.loaded;
        let git = request.registration;
        if git.clean == Some(true)
            && !request.uncommitted_inputs.is_empty()
            && !request.allow_uncommitted
        {
            return Err(StudyError::Refused(format!(
                "`{}` is committed, but input files its runs depend on are not (they differ from their commit, or no commit holds them):\n{}\nThe commit of the plan and its inputs is the study's pre-registration: commit them first, or pass --allow-uncommitted to run anyway and record which files as a deviation",
                loaded.file,
                request
                    .uncommitted_inputs
                    .iter()
                    .map(|f| format!("  {f}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            )));
        }
        if git.clean != Some(true) && !request.allow_uncommitted {
            let why = match (&git.path, &git.commit) {
                (None, _) => "is not in a git repository".to_string(),
                (Some(_), None) => "is in a repository with no commit yet".to_string(),
                (Some(p), Some(_)) => {
                    format!("(`{p}`) differs from its last commit, or is not committed")
                }
            };
            return Err(StudyError::Refused(format!(
                "`{}` {why}. The plan's commit is the study's pre-registration: commit the plan first, or pass --allow-uncommitted to run it anyway and record that as a deviation",
                loaded.file
            )));
        }
        let study = loaded.plan.study.name.to_string();
        let dir = match request.dir {
            Some(d) => d.to_path_buf(),
            None => crate::rundir::layout::study_dir(request.results, &study),
        };
        let lock = lock_study(&dir, &study)?;
        let journal_path = dir.join(journal::FILE);
        let journal = journal::read(&journal_path)?;
        let at = journal_path.display();
        let unread = journal
            .undeclared_bad()
            .into_iter()
            .map(|b| format!("{}; its event is lost to the ledger", b.at(&at)));
        let disorder = (journal.disorder())
            .map(|b| format!("{}; the journal's order is not proven", b.at(&at)));
        for what in unread.chain(disorder) {
            reporter.report(StudyEvent::Warning(&format!(
                "{what}, and the audit reports it"
            )));
        }
        let has_runs = dir.join(layout::RUNS).exists();
        let has_results = !journal.entries.is_empty() || has_runs;
        let resume = request.resume || request.amend.is_some();
        if has_results && !resume {
            return Err(StudyError::Refused(format!(
                "`{}` already holds results of study `{study}`; feedbench never overwrites them. Pass --resume to carry the study on (completed runs are kept), or choose another --results",
                dir.display()
            )));
        }
        if resume && journal.entries.is_empty() && has_runs {
            return Err(StudyError::Refused(format!(
                "`{}` holds runs but no journal ({}); they were not made by this version of feedbench and cannot be resumed. Choose another --results",
                dir.display(),
                journal::FILE
            )));
        }
        let (instance, unwritten) = instance_of(&dir, &study)?;
        let ledger = Ledger::fold(journal.events());
        if resume {
            confined(&dir, &journal_path, &ledger)?;
        }
        let change = ledger.plan_change(&loaded.plan_hash, request.runs);
        match (&change, request.amend) {
            (Some(c), None) => {
                let files = ledger
                    .inputs
                    .as_ref()
                    .map(|(_, f)| feedbench_core::inputs::changed(f, &request.inputs.files))
                    .unwrap_or_default();
                return Err(StudyError::Refused(undeclared(request, &study, c, &files)));
            }
            (None, Some(_)) if ledger.plan_hash.is_some() => {
                return Err(StudyError::Refused(format!(
                    "--amend: `{}` has not changed since study `{study}` last ran (plan hash {}); there is nothing to amend",
                    loaded.file,
                    short(&loaded.plan_hash)
                )));
            }
            _ => {}
        }
        Ok(Session {
            study,
            dir,
            instance,
            unwritten,
            plan_file: git.path.clone().unwrap_or_else(|| loaded.file.clone()),
            change,
            ledger,
            writer: None,
            reporter,
            claim: None,
            _lock: lock,
        })
    }

    /// Opens the journal for appending (creating the study directory), if not yet open.
    pub fn start_writing(&mut self) -> Result<(), StudyError> {
        self.writer().map(|_| ())
    }

    /// The journal writer, for the settling functions that append their own line; opened
    /// at the first use.
    pub fn writer(&mut self) -> Result<&mut Writer, StudyError> {
        match &mut self.writer {
            Some(w) => Ok(w),
            slot @ None => {
                let writer = open_writer(&self.dir, &mut self.unwritten, &mut self.ledger)?;
                Ok(slot.insert(writer))
            }
        }
    }

    /// Appends `event` to the journal, folds it into the ledger and reports it.
    pub fn log(&mut self, event: Event) -> Result<(), StudyError> {
        let entry = self.writer()?.append(event)?;
        self.note(&entry.event);
        Ok(())
    }

    /// Journals each other live study on the claimed engines not declared yet
    /// (`engine-shared`): as the study starts, and before each run begins or is settled, so
    /// that the runs settled after the line are those that competed with it. A registry
    /// that cannot be read is warned of and the study goes on.
    pub fn declare_neighbours(&mut self) -> Result<(), StudyError> {
        let Some(claim) = self.claim.as_mut() else {
            return Ok(());
        };
        match claim.undeclared() {
            Ok(found) => {
                for (engine, holder) in found {
                    let with = holder.to_string();
                    self.log(Event::EngineShared { engine, with })?;
                }
            }
            Err(e) => self.report(StudyEvent::Warning(&format!(
                "the engine claims could not be read, so another study beside this one may go undeclared: {e}"
            ))),
        }
        Ok(())
    }

    /// Folds an event another writer appended (`run::settle`) into the ledger and reports it.
    pub fn note(&mut self, event: &Event) {
        self.ledger.apply(event);
        self.reporter.report(StudyEvent::Journal(event));
    }

    /// Reports a study event.
    pub fn report(&mut self, event: StudyEvent<'_>) {
        self.reporter.report(event);
    }

    /// The reporter, for observers that run while the session is otherwise idle.
    pub fn reporter(&mut self) -> &mut dyn Reporter {
        &mut *self.reporter
    }

    /// Settles every run the journal shows started and not settled (a killed invocation's):
    /// from its manifest when it has one, else as interrupted.
    pub fn recover_open_runs(&mut self) -> Result<(), StudyError> {
        for (run, hash, attempt, dir) in self.ledger.open_runs() {
            let study_dir = self.dir.clone();
            let event = settle::recover(
                &study_dir,
                self.writer()?,
                &run,
                &hash,
                attempt,
                &study_dir.join(&dir),
            )?;
            self.note(&event);
        }
        Ok(())
    }

    /// Moves every result an amendment superseded out of `runs/` (an invalid one stays with
    /// its evidence) and journals where it went. A directory a crash already moved is found
    /// by its manifest.
    pub fn supersede_pending(&mut self) -> Result<(), StudyError> {
        for p in self.ledger.pending.clone() {
            let dir = match &p.dir {
                Some(d) if d.starts_with(&format!("{}/", layout::RUNS)) => {
                    let from = self.dir.join(d);
                    let to = if from.exists() {
                        Some(files::move_dir(
                            &from,
                            &layout::aside(&self.dir, SUPERSEDED, &p.run),
                        )?)
                    } else {
                        settle::find_moved(&self.dir, &p.run, &p.run_hash, p.attempt)
                    };
                    to.map(|t| layout::relative(&self.dir, &t))
                }
                other => other.clone(),
            };
            self.log(Event::RunSuperseded {
                run: p.run,
                run_hash: p.run_hash,
                attempt: p.attempt,
                dir,
                amendment: p.amendment,
            })?;
        }
        Ok(())
    }

    /// `path` relative to the study directory, as the journal writes paths.
    pub fn relative(&self, path: &Path) -> String {
        layout::relative(&self.dir, path)
    }
}

/// Opens the journal of the study in `dir` for appending, creating the directory and first
/// writing `unwritten`, the instance of a study that has none yet (`None` once written): a
/// study with a journal line has its instance. Opening may declare a torn last line, so
/// `ledger` is folded again from what the journal holds.
fn open_writer(
    dir: &Path,
    unwritten: &mut Option<InstanceFile>,
    ledger: &mut Ledger,
) -> Result<Writer, StudyError> {
    std::fs::create_dir_all(dir).map_err(files::fail("create", dir))?;
    if let Some(file) = unwritten {
        instance::write(dir, file).map_err(instance_error)?;
        *unwritten = None;
    }
    let path = dir.join(journal::FILE);
    let writer = Writer::open(&path)?;
    *ledger = Ledger::fold(journal::read(&path)?.events());
    Ok(writer)
}

/// The study's instance: the one its directory records, else a fresh one with the file to
/// write at the first journal line.
fn instance_of(dir: &Path, study: &str) -> Result<(Instance, Option<InstanceFile>), StudyError> {
    if let Some(f) = instance::read(dir, study).map_err(instance_error)? {
        return Ok((f.instance, None));
    }
    let fresh =
        super::claim::fresh_instance().map_err(files::fail("read", Path::new("/dev/urandom")))?;
    let file = InstanceFile {
        format_version: instance::FORMAT_VERSION,
        instance: fresh.clone(),
        study: study.to_string(),
        created_wall_ns: crate::ledger::journal::unix_ns().to_string(),
    };
    Ok((fresh, Some(file)))
}

/// A damaged instance file is the person's to mend (exit 2); one that cannot be read or
/// written is a failure.
fn instance_error(e: InstanceError) -> StudyError {
    match e {
        InstanceError::File(f) => StudyError::File(f),
        damaged @ InstanceError::Damaged { .. } => StudyError::Refused(damaged.to_string()),
    }
}

/// Refuses, before anything moves, a resume whose journal names a directory it would move
/// (an unsettled run's, a standing result an amendment would supersede, or one it did)
/// that leads out of the study
/// directory or through a link: a resume never moves anything from outside into the study.
fn confined(dir: &Path, journal: &Path, ledger: &Ledger) -> Result<(), StudyError> {
    let open = ledger
        .open_runs()
        .into_iter()
        .map(|(run, _, _, d)| (run, d));
    let pending = ledger
        .pending
        .iter()
        .filter_map(|p| p.dir.clone().map(|d| (p.run.clone(), d)));
    // A standing result an amendment would supersede moves too.
    let standing = ledger.standing_dirs();
    for (run, d) in open.chain(pending).chain(standing) {
        if let Err(why) = crate::confine::inside(dir, &d) {
            return Err(StudyError::Refused(format!(
                "the journal `{}` names `{d}` as the directory of `{run}`, which a resume would move: {why}",
                journal.display()
            )));
        }
    }
    Ok(())
}

/// The refusal of a plan change nobody declared: what changed and what it would touch.
fn undeclared(
    request: &StudyRequest<'_>,
    study: &str,
    c: &PlanChange,
    files: &[feedbench_core::inputs::FileChange],
) -> String {
    let file = &request.loaded.file;
    let list: Vec<String> = c
        .changes
        .iter()
        .map(|ch| match &ch.new_run_hash {
            None => format!("  {} (no longer in the plan)", ch.run),
            Some(h) if Some(h) == ch.old_run_hash.as_ref() => {
                format!("  {} (a run it depends on changed)", ch.run)
            }
            Some(_) => format!("  {} (its definition changed)", ch.run),
        })
        .collect();
    let what = if c.old_plan_hash == c.new_plan_hash && !files.is_empty() {
        format!(
            "`{file}` is unchanged (plan hash {}), but input files its runs depend on changed since study `{study}` last ran:\n{}",
            short(&c.new_plan_hash),
            files
                .iter()
                .map(|f| format!("  {f}"))
                .collect::<Vec<_>>()
                .join("\n")
        )
    } else if c.old_plan_hash == c.new_plan_hash {
        format!(
            "`{file}` is unchanged (plan hash {}), but this feedbench defines some of its runs differently from the feedbench that ran them (another version?).",
            short(&c.new_plan_hash)
        )
    } else {
        let also = if files.is_empty() {
            String::new()
        } else {
            format!(
                " Input files changed too:\n{}",
                files
                    .iter()
                    .map(|f| format!("  {f}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        };
        format!(
            "`{file}` changed since study `{study}` last ran (plan hash {} then, {} now).{also}",
            short(&c.old_plan_hash),
            short(&c.new_plan_hash)
        )
    };
    let sep = if what.ends_with('.') { " " } else { "\n" };
    format!(
        "{what}{sep}{}\nA change is never applied silently: declare it with --amend \"<reason>\" to record an amendment, mark the runs it touched superseded and run exactly those again; or restore the plan",
        if list.is_empty() {
            "No result recorded so far is touched.".to_string()
        } else {
            format!("Results that would no longer match:\n{}", list.join("\n"))
        }
    )
}
