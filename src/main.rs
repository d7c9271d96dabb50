//! The `feedbench` binary: parse the command line, dispatch, map errors to exit codes.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = feedbench::cli::Cli::parse();
    match cli.exec() {
        Ok(()) => ExitCode::SUCCESS,
        // A reader that went away (`feedbench plan … | head`) is not a failure.
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            // Nothing more can be done if stderr itself is gone.
            let _ = writeln!(std::io::stderr().lock(), "{}", e.render());
            ExitCode::from(e.exit_code())
        }
    }
}
