//! The streamcap binary: parse the command line, hand it to `app::run`, print any error, pick the exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = streamcap::cli::Cli::parse();
    match streamcap::app::run(cli) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("Error: {error:#}");
            ExitCode::from(2)
        }
    }
}
