//! The top of the crate: wires the stages together for each subcommand. Errors become `anyhow` errors with
//! context here and only here; `main` prints them and picks the exit code.

mod cache;
mod check;
mod cluster;
mod compare;
mod facts;
mod history;
mod inspect;
mod library;
mod observer;
mod output;
mod outputs;
mod plan_cmd;
mod report;
mod run;
mod stale;
mod streams;
mod sweep;
mod trial;
mod verify_only;

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::{Cli, Command};

/// Runs a parsed command line. An `Err` means bad input or a set-up failure: exit code 2.
pub fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Run(args) => run::run(*args),
        Command::Report(args) => report::run(&args),
        Command::Compare(args) => compare::run(&args),
        Command::History(args) => history::run(&args),
        Command::Streams(args) => streams::run(*args),
        Command::Check(args) => check::run(*args),
        Command::Plan(args) => plan_cmd::run(*args),
        Command::Inspect(args) => inspect::run(&args),
        Command::Cache(args) => cluster::alone("cache").and_then(|()| cache::run(*args)),
        Command::Sweep(args) => cluster::alone("sweep").and_then(|()| sweep::run(*args)),
        Command::Trial(args) => cluster::alone("trial").and_then(|()| trial::run(*args)),
    }
}
