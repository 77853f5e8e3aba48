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
mod playlists;
mod report;
mod run;
mod stale;
mod streams;
mod sweep;
mod trial;
mod verify_only;

use std::process::ExitCode;

use std::io::Write;

use anyhow::{Context, Result};

use crate::cli::{Cli, Command};

/// Stack of the thread every command runs on. The main thread's stack is whatever `ulimit -s` gives (with 128 KiB
/// a plain `run` overflowed it: its set-up frames take about 126 KiB in a release build, and parsing the command
/// line alone more in a debug build); a spawned thread's is ours to choose, so no command depends on the shell's
/// limit. Recursion on input is bounded on its own (`limits::MAX_NESTING`, the TOML and JSON parsers' limits).
pub const COMMAND_STACK: usize = 8 << 20;

/// Runs `command` (parsing the command line and [`run`]) on a thread with a stack of [`COMMAND_STACK`] and
/// returns what it returned; a panic goes on in the caller.
pub fn with_command_stack<T: Send + 'static>(command: impl FnOnce() -> T + Send + 'static) -> T {
    let spawned = std::thread::Builder::new().name("command".into()).stack_size(COMMAND_STACK).spawn(command);
    match spawned.map(std::thread::JoinHandle::join) {
        Ok(Ok(value)) => value,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(e) => {
            // Without a thread there is nothing to run the command on: say why, as an error of the command.
            eprintln!("error: cannot start the command's thread: {}", crate::limits::explain(&e));
            std::process::exit(2)
        }
    }
}

/// Runs a parsed command line. An `Err` means bad input or a set-up failure: exit code 2.
pub fn run(cli: Cli) -> Result<ExitCode> {
    // Before anything is written: a write past `ulimit -f` must fail with EFBIG and be reported, not kill us.
    crate::run::survive_file_size_limit().context("cannot install the SIGXFSZ handler")?;
    match cli.color {
        // Auto: console's own rule (a terminal, and neither NO_COLOR nor CLICOLOR=0).
        crate::cli::ColorWhen::Auto => {}
        crate::cli::ColorWhen::Always => console::set_colors_enabled_stderr(true),
        crate::cli::ColorWhen::Never => console::set_colors_enabled_stderr(false),
    }
    dispatch(cli)
}

fn dispatch(cli: Cli) -> Result<ExitCode> {
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
        Command::Completions(args) => {
            output::print_written(|out| {
                crate::cli::write_completions(args.shell, out);
                Ok(())
            });
            Ok(ExitCode::SUCCESS)
        }
        Command::Man(args) => {
            let mut page = Vec::new();
            crate::cli::write_man(args.command.as_deref(), &mut page)?;
            output::print_written(|out| out.write_all(&page));
            Ok(ExitCode::SUCCESS)
        }
    }
}
