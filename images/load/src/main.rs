//! feedbench-load: a native open-model HTTP load generator, a lean replacement for k6.
//!
//! It reads a load plan (see the library's `plan`), starts each iteration at its scheduled
//! instant on one thread, and writes one CSV row per request plus per-second records (see
//! `stream`).

mod generator;

use std::process::ExitCode;

use generator::cli::{self, Command};

fn main() -> ExitCode {
    let command = match cli::parse(std::env::args().skip(1)) {
        Ok(command) => command,
        Err(e) => return fail(&generator::Error::from(e)),
    };
    match command {
        Command::Help => {
            print!("{}", cli::USAGE);
            ExitCode::SUCCESS
        }
        Command::Version => {
            println!("feedbench-load {}", generator::VERSION);
            ExitCode::SUCCESS
        }
        Command::Run(opts) => match generator::run(&opts) {
            Ok(_) => ExitCode::SUCCESS,
            Err(e) => fail(&e),
        },
    }
}

fn fail(e: &generator::Error) -> ExitCode {
    eprintln!("feedbench-load: {e}");
    ExitCode::from(e.exit_code())
}
