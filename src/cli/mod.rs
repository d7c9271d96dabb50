//! The command line: one file per subcommand, one error type mapped to exit codes
//! (0 ok, 1 failure, 2 bad input or usage).

mod audit;
mod clean;
mod decide;
mod deploy;
mod engines;
pub mod images;
mod pilot;
mod plan;
mod report;
mod run;
mod schema;
mod status;
mod topology;

use clap::{Parser, Subcommand, ValueEnum};

use crate::plan::{Diagnostic, Severity};

#[derive(Debug, Parser)]
#[command(
    name = "feedbench",
    version,
    about = "A declarative experiment orchestrator for service benchmarks"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate a plan, expand it into runs and print its hash.
    Plan(plan::PlanArgs),
    /// Print the plan's JSON Schema.
    Schema(schema::SchemaArgs),
    /// Execute a plan's runs.
    Run(run::RunArgs),
    /// Run selected runs of a plan, shortened by a scale, into a pilot area of the study.
    Pilot(pilot::PilotArgs),
    /// Every planned run's state in the study's ledger, and counts.
    Status(status::StatusArgs),
    /// Set a completed run aside as invalid, with a person's reason.
    Invalidate(decide::DecideArgs),
    /// Record that a run will not be run, with a person's reason.
    Skip(decide::DecideArgs),
    /// Deploy one run's topology and leave it up for inspection.
    Deploy(deploy::DeployArgs),
    /// Remove everything carrying feedbench's labels.
    Clean(clean::CleanArgs),
    /// Show what a run deploys (containers, caps, configs) without deploying it.
    Topology(topology::TopologyArgs),
    /// Build the images that cannot be pulled here: infrastructure and the plan's own.
    Images(images::ImagesArgs),
    /// Check a study's results against its committed, pre-registered plan.
    Audit(audit::AuditArgs),
    /// The study's answers from its raw data: report.md, index.html, metrics.csv, summary.csv.
    Report(report::ReportArgs),
}

impl Cli {
    pub fn exec(self) -> Result<(), CliError> {
        let mut out = std::io::stdout().lock();
        match self.command {
            Command::Plan(a) => a.exec(&mut out),
            Command::Schema(a) => a.exec(&mut out),
            Command::Run(a) => a.exec(),
            Command::Pilot(a) => a.exec(),
            Command::Status(a) => a.exec(&mut out),
            Command::Invalidate(a) => a.exec(decide::Decision::Invalidate),
            Command::Skip(a) => a.exec(decide::Decision::Skip),
            Command::Deploy(a) => a.exec(),
            Command::Clean(a) => a.exec(),
            Command::Topology(a) => a.exec(&mut out),
            Command::Images(a) => a.exec(),
            Command::Audit(a) => a.exec(&mut out),
            Command::Report(a) => a.exec(&mut out),
        }
    }
}

/// Output formats for commands a machine may read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Human,
    Json,
}

/// The binary's one error type.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The plan or the command line is wrong: exit 2.
    #[error("{0}")]
    Invalid(String, Vec<Diagnostic>),
    /// Something failed that the input did not cause: exit 1.
    #[error(transparent)]
    Failure(#[from] anyhow::Error),
}

impl CliError {
    /// Bad input or usage, said in words (exit 2).
    pub fn invalid(msg: String) -> CliError {
        CliError::Invalid(msg, Vec::new())
    }

    pub fn is_broken_pipe(&self) -> bool {
        match self {
            CliError::Failure(e) => e.chain().any(|cause| {
                let kind = cause
                    .downcast_ref::<std::io::Error>()
                    .map(std::io::Error::kind)
                    .or_else(|| {
                        cause
                            .downcast_ref::<serde_json::Error>()
                            .and_then(|j| j.io_error_kind())
                    });
                kind == Some(std::io::ErrorKind::BrokenPipe)
            }),
            CliError::Invalid(..) => false,
        }
    }

    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Invalid(..) => 2,
            CliError::Failure(_) => 1,
        }
    }

    /// The message for stderr: each diagnostic, then a summary line.
    pub fn render(&self) -> String {
        match self {
            CliError::Invalid(summary, diagnostics) => {
                let mut s = String::new();
                for d in diagnostics {
                    s.push_str(match d.severity {
                        Severity::Error => "error: ",
                        Severity::Warning => "warning: ",
                    });
                    s.push_str(&d.to_string());
                    s.push('\n');
                }
                s.push_str("error: ");
                s.push_str(summary);
                s
            }
            CliError::Failure(e) => {
                // Each cause once: an error that already ends with its cause's words (a
                // FileError says its io::Error) is not followed by them again.
                let mut s = format!("error: {e}");
                for cause in e.chain().skip(1) {
                    let c = cause.to_string();
                    if !s.ends_with(&c) {
                        s.push_str(": ");
                        s.push_str(&c);
                    }
                }
                s
            }
        }
    }
}

impl From<crate::plan::LoadError> for CliError {
    fn from(e: crate::plan::LoadError) -> Self {
        match e {
            crate::plan::LoadError::Invalid {
                ref diagnostics, ..
            } => {
                let d = diagnostics.clone();
                CliError::Invalid(e.to_string(), d)
            }
            crate::plan::LoadError::Read { .. } => CliError::Invalid(e.to_string(), Vec::new()),
        }
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        CliError::Failure(e.into())
    }
}

/// A plan and the topology of one of its runs, by id (with a did-you-mean when the id is
/// not the plan's), under `instance`.
pub fn run_topology(
    plan: &std::path::Path,
    run_id: &str,
    instance: &crate::spec::topology::Instance,
) -> Result<(crate::plan::LoadedPlan, crate::spec::topology::RunTopology), CliError> {
    let loaded = crate::plan::load_file(plan, None)?;
    let (_, runs) = planned(&loaded)?;
    let Some(run) = runs.iter().find(|r| r.id == run_id) else {
        let ids: Vec<&str> = runs.iter().map(|r| r.id.as_str()).collect();
        let hint = crate::plan::de::suggest(run_id, &ids, "run");
        return Err(CliError::Invalid(
            format!("the plan has no run `{run_id}`; {hint}"),
            Vec::new(),
        ));
    };
    let topo = crate::spec::topology::of_loaded(&loaded, run, instance)
        .map_err(|e| CliError::Failure(e.into()))?;
    Ok((loaded, topo))
}

/// The plan's inputs as they are on disk and its runs, hashed with them: what every command
/// that records or compares run hashes works from.
pub fn planned(
    loaded: &crate::plan::LoadedPlan,
) -> Result<(feedbench_core::inputs::Inputs, Vec<crate::plan::RunSpec>), CliError> {
    let inputs = feedbench_core::inputs::Inputs::of_working_tree(loaded)
        .map_err(|e| input_error(&loaded.file, e))?;
    let runs = feedbench_core::inputs::expand(&loaded.plan, &inputs);
    Ok((inputs, runs))
}

/// The input files of the plan at `plan` that its commit does not cover.
pub fn uncommitted_inputs(
    plan: &std::path::Path,
    inputs: &feedbench_core::inputs::Inputs,
) -> Result<Vec<String>, CliError> {
    feedbench_core::inputs::uncommitted(plan, inputs).map_err(|e| input_error(&plan.display(), e))
}

/// An input that cannot be read: bad input (exit 2) when the plan names a file that is not
/// there or not readable as it should be, a failure otherwise; `plan` names the plan file.
fn input_error(plan: &dyn std::fmt::Display, e: feedbench_core::inputs::InputError) -> CliError {
    if e.bad_input() {
        CliError::invalid(format!("`{plan}`: {e}"))
    } else {
        CliError::Failure(e.into())
    }
}

/// Runs an async command body on a runtime made for it.
pub fn block_on<F: std::future::Future<Output = Result<(), CliError>>>(
    f: F,
) -> Result<(), CliError> {
    async_runtime()?.block_on(f)
}

/// An async runtime for a command that runs several bodies on it: engine clients made in
/// one serve the next (they are bound to the runtime that made them).
pub fn async_runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Failure(anyhow::anyhow!("cannot start the async runtime: {e}")))
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn interrupted() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => return std::future::pending().await,
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

/// Cores of the machine feedbench runs on, for the plan's oversubscription warning. This is
/// the engine's host only when the engine is local; `run` refuses caps against the cores
/// the engine itself reports (its preflight), which is the count that binds.
pub fn local_cores() -> Option<f64> {
    std::thread::available_parallelism()
        .ok()
        .map(|n| n.get() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn a_cause_is_said_once() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let e = feedbench_core::files::fail("move", std::path::Path::new("runs/x"))(io);
        let r = CliError::Failure(e.into()).render();
        assert_eq!(r, "error: cannot move `runs/x`: no such file");
        let r = CliError::Failure(anyhow::anyhow!("outer").context("context")).render();
        assert_eq!(r, "error: context: outer");
    }
}
