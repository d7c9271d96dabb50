//! `feedbench pilot <PLAN>`: selected runs of a plan that need not be committed, shortened by
//! `--scale`, run by the study runner into a pilot area of their own
//! (results/<study>/pilots/<NNN>/, with its own journal), apart from the study's runs; the
//! audit lists pilots as exploration before registration; with `--repetitions K`, each arm
//! runs K times and the pilot sizes the plan's repetitions from their spread. Wiring only:
//! the scaling is `plan::scale`'s, the area `study::open_area`'s, the runs
//! `study::run_study`'s, the sizing `study::pilot::size`'s and `report::sizing`'s.

use std::io::Write;
use std::path::PathBuf;

use super::{CliError, Format};
use crate::plan::scale::{pilot_loaded, Repetitions, Scale, ScaleError};
use crate::plan::select::with_dependencies;
use crate::plan::{load_bytes, LoadError, Severity};
use crate::study::{open_area, PilotRequest, Session, StudyRequest};
use feedbench_core::report::sizing::{self, Sizing};

#[derive(Debug, clap::Args)]
pub struct PilotArgs {
    /// The plan file; it need not be committed (the pilot records its git state).
    pub plan: PathBuf,
    /// Only runs whose id matches this pattern (`*` any characters, `?` one); the runs they
    /// take a rate from run too.
    #[arg(long)]
    pub only: Option<String>,
    /// Multiply every duration that makes a run long by this fraction, in (0, 1]
    /// (docs/plan.md, "Scaling a plan for a pilot").
    #[arg(
        long,
        value_name = "FRACTION",
        default_value = "1",
        allow_hyphen_values = true
    )]
    pub scale: String,
    /// Run K repetitions of each arm in place of the plan's (at least 2), then size the
    /// plan's repetitions from their spread (docs/analysis.md, "Sizing repetitions from a
    /// pilot").
    #[arg(long, value_name = "K", allow_hyphen_values = true)]
    pub repetitions: Option<String>,
    /// Where study results are; pilots go to DIR/<study>/pilots/<NNN>/.
    #[arg(long, value_name = "DIR", default_value = "results")]
    pub results: PathBuf,
    /// Use the images as they are instead of building missing or stale ones first.
    #[arg(long)]
    pub no_build: bool,
    /// Run even though another study runs on the same engine (it is refused otherwise):
    /// the two compete for the engine's CPU and memory, and each is warned of the other.
    #[arg(long)]
    pub share_engine: bool,
    /// `json` prints the pilot's area, then every event and journal line, as JSON lines.
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
    #[command(flatten)]
    pub engines: super::engines::EnginesArg,
}

impl PilotArgs {
    pub fn exec(self) -> Result<(), CliError> {
        let scale: Scale = self
            .scale
            .parse()
            .map_err(|e: crate::plan::scale::ScaleError| CliError::invalid(e.to_string()))?;
        let repetitions: Option<Repetitions> = match &self.repetitions {
            Some(k) => Some(
                k.parse()
                    .map_err(|e: ScaleError| CliError::invalid(e.to_string()))?,
            ),
            None => None,
        };
        let bytes = std::fs::read(&self.plan).map_err(|source| LoadError::Read {
            file: self.plan.display().to_string(),
            source,
        })?;
        let cores = super::local_cores();
        let loaded = load_bytes(&self.plan, bytes.clone(), cores)?;
        let source = String::from_utf8_lossy(&bytes);
        let scaled = pilot_loaded(&loaded, &source, scale, repetitions, cores).map_err(|e| match e {
            LoadError::Invalid { diagnostics, .. } => CliError::Invalid(
                format!(
                    "at --scale {scale}, `{}` is not a valid plan: choose a larger scale, or change the plan",
                    loaded.file
                ),
                diagnostics,
            ),
            other => other.into(),
        })?;
        let (inputs, runs) = super::planned(&scaled)?;
        let engines = self.engines.read()?;
        super::engines::check_placement(&scaled, &engines)?;
        let selected = with_dependencies(&runs, self.only.as_deref());
        if selected.is_empty() {
            return Err(CliError::invalid(format!(
                "--only: no run of `{}` matches `{}`; see its runs with `feedbench plan {}`",
                loaded.file,
                self.only.clone().unwrap_or_default(),
                loaded.file
            )));
        }
        let json = self.format == Format::Json;
        if !json {
            for w in scaled
                .warnings
                .iter()
                .filter(|d| d.severity == Severity::Warning)
            {
                eprintln!("warning: at --scale {scale}: {w}");
            }
        }
        let git = crate::git::registration(&self.plan).map_err(|e| CliError::Failure(e.into()))?;
        if !self.no_build {
            super::images::build_plan_images(&self.plan)?;
        }
        // Reached and checked before the pilot's area is opened: a refusal leaves nothing.
        let runtime = super::async_runtime()?;
        let local = self.engines.engines.is_none();
        let placements = runtime.block_on(super::engines::reach(&scaled, &engines, local))?;
        let pilot = open_area(&PilotRequest {
            scaled: &scaled,
            plan_text: &bytes,
            scale,
            repetitions: repetitions.map(Repetitions::get),
            only: self.only.as_deref(),
            selected: &selected,
            results: &self.results,
            git: &git,
        })
        .map_err(super::run::study_error)?;
        announce(json, &pilot)?;
        let request = StudyRequest {
            loaded: &pilot.loaded,
            runs: &runs,
            selected: &selected,
            results: &self.results,
            dir: Some(&pilot.dir),
            registration: &git,
            resume: false,
            amend: None,
            allow_uncommitted: true,
            inputs: &inputs,
            uncommitted_inputs: &[],
        };
        let mut reporter = super::run::show::Show::new(json);
        let mut session =
            Session::open(&request, &mut reporter).map_err(super::run::study_error)?;
        let ran = super::run::run_on_engine(
            &runtime,
            &mut session,
            &request,
            placements,
            self.share_engine,
        );
        // Sized from the runs that stand even when another did not (the journal says which
        // did not; the sizing names a standing run it could not read).
        match crate::study::size_pilot(&pilot, &runs).map_err(super::run::study_error) {
            Ok(Some((file, sizing))) => {
                let shown = show_sizing(json, &file, &sizing);
                // The plan's own repetitions judged by this sizing, as `feedbench plan` would.
                let plan = &loaded.plan;
                for w in sizing::judge(&sizing, &file, plan, &loaded.plan_hash, &runs) {
                    eprintln!("warning: {}: {w}", loaded.file);
                }
                ran.and(shown)
            }
            Ok(None) => ran,
            Err(e) if ran.is_ok() => Err(e),
            Err(e) => {
                eprintln!("the pilot's sizing was not written: {e}");
                ran
            }
        }
    }
}

/// The pilot's sizing: its table on stdout, or a JSON line.
fn show_sizing(json: bool, file: &std::path::Path, s: &Sizing) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    if json {
        let v = serde_json::json!({"event": "pilot-sized", "file": file.display().to_string(), "sizing": s});
        writeln!(out, "{v}")?;
        return Ok(());
    }
    write!(out, "{}", sizing::render(s))?;
    eprintln!("sizing: {}", file.display());
    Ok(())
}

/// Where the pilot goes and under which name: on stderr, or as a JSON line on stdout.
fn announce(json: bool, pilot: &crate::study::Pilot) -> Result<(), CliError> {
    let r = &pilot.record;
    if json {
        let v = serde_json::json!({
            "event": "pilot-opened",
            "number": r.number,
            "dir": pilot.dir.display().to_string(),
            "name": r.name,
            "scale": r.scale,
            "plan_hash": r.plan_hash,
            "git_clean": r.git.clean,
            "runs": r.runs.iter().map(|x| &x.run).collect::<Vec<_>>(),
        });
        writeln!(std::io::stdout().lock(), "{v}")?;
    } else {
        eprintln!(
            "pilot {} of study `{}` at scale {} in `{}`, as `{}`: {} run(s)",
            r.number,
            r.study,
            r.scale,
            pilot.dir.display(),
            r.name,
            r.runs.len()
        );
    }
    Ok(())
}
