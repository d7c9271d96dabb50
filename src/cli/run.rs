//! `feedbench run <PLAN>`: execute the plan's runs in the plan's order, each into its own
//! directory under results/<study>/runs/, and keep the study's ledger: the journal, a sealed
//! manifest per run, runs moved aside when they are invalid, aborted or interrupted.
//! `--resume` carries a study on; `--amend` declares a plan change and reruns what it touched.
//! This file is wiring: the arguments, the plan, the images, the engine and a reporter; the
//! study's policy is `crate::study`'s.

use std::path::PathBuf;

use super::{CliError, Format};
use crate::plan::{load_file, RunSpec};
use crate::study::{
    claim_engines, run_study, DockerTestbed, Interrupt, Session, StudyError, StudyRequest,
};

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The plan file.
    pub plan: PathBuf,
    /// Only runs whose id matches this pattern (`*` any characters, `?` one), e.g.
    /// `feed-rs/*/r1`. Runs they depend on must have run before, or match too.
    #[arg(long)]
    pub only: Option<String>,
    /// `json` prints every event, and every journal line, as a JSON line on stdout.
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
    /// Where study results go.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// Use the images as they are instead of building missing or stale ones first.
    #[arg(long)]
    pub no_build: bool,
    /// Carry on a study that has results: run what is not completed and valid for its run
    /// hash, after recording interrupted runs and removing their leftover containers.
    #[arg(long)]
    pub resume: bool,
    /// Declare a plan change since the study last ran, with its reason: the runs it changed
    /// are marked superseded and run again; the rest are kept. Implies --resume.
    #[arg(long, value_name = "REASON")]
    pub amend: Option<String>,
    /// Run a plan file that differs from its last commit (or is not committed); the journal
    /// records it as a deviation from the pre-registration.
    #[arg(long)]
    pub allow_uncommitted: bool,
    /// Run even though another study runs on the same engine (it is refused otherwise):
    /// the two compete for the engine's CPU and memory, and each is warned of the other.
    #[arg(long)]
    pub share_engine: bool,
    #[command(flatten)]
    pub engines: super::engines::EnginesArg,
}

/// `*` and `?` glob match over a whole run id (`plan::select::matches`).
pub fn glob(pattern: &str, text: &str) -> bool {
    crate::plan::select::matches(pattern, text)
}

pub(super) mod show;

impl RunArgs {
    pub fn exec(self) -> Result<(), CliError> {
        let loaded = load_file(&self.plan, super::local_cores())?;
        let (inputs, runs) = super::planned(&loaded)?;
        let engines = self.engines.read()?;
        super::engines::check_placement(&loaded, &engines)?;
        let selected: Vec<RunSpec> = runs
            .iter()
            .filter(|r| self.only.as_deref().is_none_or(|p| glob(p, &r.id)))
            .cloned()
            .collect();
        if selected.is_empty() {
            return Err(CliError::invalid(format!(
                "no run of `{}` matches `{}`",
                loaded.file,
                self.only.clone().unwrap_or_default()
            )));
        }
        let registration =
            crate::git::registration(&self.plan).map_err(|e| CliError::Failure(e.into()))?;
        let uncommitted = super::uncommitted_inputs(&self.plan, &inputs)?;
        let request = StudyRequest {
            loaded: &loaded,
            runs: &runs,
            selected: &selected,
            results: &self.results,
            dir: None,
            registration: &registration,
            resume: self.resume,
            amend: self.amend.as_deref(),
            allow_uncommitted: self.allow_uncommitted,
            inputs: &inputs,
            uncommitted_inputs: &uncommitted,
        };
        let mut reporter = show::Show::new(self.format == Format::Json);
        // Opened (and refused, if it must be) before images are built or the engine asked.
        let mut session = Session::open(&request, &mut reporter).map_err(study_error)?;
        if !self.no_build {
            super::images::build_plan_images(&self.plan)?;
        }
        let runtime = super::async_runtime()?;
        let local = self.engines.engines.is_none();
        let placements = runtime.block_on(super::engines::reach(&loaded, &engines, local))?;
        run_on_engine(
            &runtime,
            &mut session,
            &request,
            placements,
            self.share_engine,
        )
    }
}

/// Runs an opened study's request on the groups of engines `placements` reached (on
/// `runtime`, which reached them), stopping cleanly on a signal: what `feedbench run` and
/// `feedbench pilot` do once their session is open and their engines are reached and
/// checked.
pub(super) fn run_on_engine(
    runtime: &tokio::runtime::Runtime,
    session: &mut Session<'_>,
    request: &StudyRequest<'_>,
    placements: Vec<crate::engine::placement::Placement>,
    share_engine: bool,
) -> Result<(), CliError> {
    runtime.block_on(async move {
        claim_engines(session, &placements, share_engine)
            .await
            .map_err(study_error)?;
        let mut interrupt = Interrupt::on_signals().map_err(anyhow::Error::from)?;
        let plan = &request.loaded.plan;
        let (image, study) = (&plan.topology.load_generator.image, &plan.study.name);
        let mut testbeds = Vec::new();
        for placement in placements {
            let of = (study.as_str(), &session.instance);
            let (testbed, warnings) = DockerTestbed::new(placement, image.as_str(), of).await;
            for w in &warnings {
                session.report(crate::study::StudyEvent::Warning(w));
            }
            testbeds.push(testbed);
        }
        run_study(session, request, &testbeds, &mut interrupt)
            .await
            .map_err(study_error)
    })
}

/// A refusal is bad input or usage (exit 2); anything else is a failure (exit 1).
pub(super) fn study_error(e: StudyError) -> CliError {
    if e.is_refusal() {
        CliError::invalid(e.to_string())
    } else {
        CliError::Failure(e.into())
    }
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn globs_match_whole_ids() {
        assert!(glob("feed-rs/*/r1", "feed-rs/ramp/r1"));
        assert!(glob("*", "x/y/r2"));
        assert!(glob("feed-??/ramp/r1", "feed-rs/ramp/r1"));
        assert!(!glob("feed-rs/*", "feed-py/ramp/r1"));
        assert!(!glob("feed-rs/ramp", "feed-rs/ramp/r1"));
    }

    #[test]
    fn many_stars_against_a_long_id_answer_without_backtracking_through_each() {
        let id = format!("feed-rs/{}/r1", "x".repeat(192));
        assert_eq!(id.len(), 203);
        assert!(!glob(&format!("{}q", "*".repeat(30)), &id));
        assert!(glob(&format!("feed-rs/{}r1", "*".repeat(30)), &id));
    }
}
