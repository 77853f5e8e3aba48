//! The top of the crate: wires the stages together for each subcommand. Errors become `anyhow` errors with
//! context here and only here; `main` prints them and picks the exit code.

pub mod check;
mod facts;
mod inspect;
mod observer;
mod outputs;
mod report;
mod run_cmd;
pub mod streams_cmd;
pub mod streams_estimate;
pub mod streams_http;
pub mod streams_ingest;
pub mod streams_media;
pub mod streams_steps;
mod verify_only;

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::{Cli, Command};

/// Runs a parsed command line. An `Err` means bad input or a set-up failure: exit code 2.
pub fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Run(args) => run_cmd::run(*args),
        Command::Report(args) => report::run(&args),
        Command::Streams(args) => streams_cmd::run(*args),
        Command::Check(args) => check::run(*args),
        Command::Inspect(args) => inspect::run(&args),
    }
}
