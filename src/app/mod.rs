//! The top of the crate: wires the stages together for each subcommand. Errors become `anyhow` errors with
//! context here and only here; `main` prints them and picks the exit code.

pub mod check;
mod facts;
mod observer;
mod plan_cmd;
mod run_cmd;
pub mod streams_cmd;
pub mod streams_estimate;
pub mod streams_http;
pub mod streams_ingest;
pub mod streams_media;
pub mod streams_steps;

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::{Cli, Command, OutputFormat, ReportArgs};
use crate::report::{write_check_summary, write_fio_json, write_summary};
use crate::results::read_result;

/// Runs a parsed command line. An `Err` means bad input or a set-up failure: exit code 2.
pub fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Run(args) => run_cmd::run(*args),
        Command::Report(args) => report(&args),
        Command::Streams(args) => streams_cmd::run(*args),
        Command::Check(args) => check::run(*args),
        Command::Plan(args) => plan_cmd::run(*args),
    }
}

fn report(args: &ReportArgs) -> Result<ExitCode> {
    let result = read_result(&args.result)?;
    let mut text = Vec::new();
    match (args.format, &result.streams) {
        (OutputFormat::FioJson, _) => write_fio_json(&mut text, &result),
        (OutputFormat::Summary, _) if let Some(check) = &result.check => write_check_summary(&mut text, &result, check),
        (OutputFormat::Summary, Some(streams)) => crate::report::write_streams_summary(&mut text, &result, streams),
        (OutputFormat::Summary, None) => write_summary(&mut text, &result),
    }
    .expect("writing to a Vec cannot fail");
    run_cmd::print_quietly(&String::from_utf8_lossy(&text));
    Ok(ExitCode::SUCCESS)
}
