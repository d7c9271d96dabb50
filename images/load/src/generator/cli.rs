//! The command line: `--plan FILE --out FILE`, hand-parsed (two flags need no parser crate).

use std::path::PathBuf;

use thiserror::Error;

/// Usage text for `--help`.
pub const USAGE: &str = "\
feedbench-load: an open-model HTTP load generator

Usage: feedbench-load --plan FILE --out FILE

  --plan FILE   the load plan (JSON) feedbench writes, e.g. /feedbench/load.json
  --out FILE    the output: request rows (CSV) and # records, flushed every second
  --help        this text
  --version     print the version

Flags take `--flag value` or `--flag=value`. Exit status: 0 when the schedule
completed or SIGINT/SIGTERM stopped it early; 2 when the plan, its base_url's host
or the output file cannot be used; 1 when writing the output failed mid-run.
";

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    Run(Options),
    Help,
    Version,
}

/// Where to read the plan and write the output.
#[derive(Debug, PartialEq, Eq)]
pub struct Options {
    pub plan: PathBuf,
    pub out: PathBuf,
}

/// A command line the generator cannot use.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum CliError {
    #[error("unknown argument {0} (see --help)")]
    Unknown(String),
    #[error("{0} needs a value (see --help)")]
    MissingValue(&'static str),
    #[error("{0} is required (see --help)")]
    Required(&'static str),
}

/// Parses the arguments after the program name.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Command, CliError> {
    let (mut plan, mut out) = (None, None);
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) => (flag.to_string(), Some(value.to_string())),
            None => (arg.clone(), None),
        };
        let slot = match flag.as_str() {
            "--help" | "-h" => return Ok(Command::Help),
            "--version" | "-V" => return Ok(Command::Version),
            "--plan" => (&mut plan, "--plan"),
            "--out" => (&mut out, "--out"),
            _ => return Err(CliError::Unknown(arg)),
        };
        let value = inline
            .or_else(|| args.next())
            .filter(|v| !v.is_empty())
            .ok_or(CliError::MissingValue(slot.1))?;
        *slot.0 = Some(PathBuf::from(value));
    }
    Ok(Command::Run(Options {
        plan: plan.ok_or(CliError::Required("--plan"))?,
        out: out.ok_or(CliError::Required("--out"))?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Result<Command, CliError> {
        parse(a.iter().map(|s| s.to_string()))
    }

    #[test]
    fn flags() {
        let want = Command::Run(Options {
            plan: "p.json".into(),
            out: "o.csv".into(),
        });
        assert_eq!(args(&["--plan", "p.json", "--out", "o.csv"]), Ok(want));
        assert!(matches!(
            args(&["--out=o.csv", "--plan=p.json"]),
            Ok(Command::Run(_))
        ));
        assert_eq!(args(&["--help"]), Ok(Command::Help));
        assert_eq!(args(&["--plan"]), Err(CliError::MissingValue("--plan")));
        assert_eq!(args(&["--plan", "p"]), Err(CliError::Required("--out")));
        assert_eq!(args(&["-x"]), Err(CliError::Unknown("-x".into())));
    }
}
