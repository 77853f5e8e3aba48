//! `streamcap sweep DIR`: iozone -a and AJA's file-size tests, on the one path. One job of raw phases
//! (`profile`): per file size, mode and record size, write, re-write, read, re-read and random read; planned
//! (`--dry-run` prints the plan) and run by `run::execute` into one `RunResult`, whose `sweep` section
//! (`summary`, with the cliff judged against the RAM by `cliff`) is derived from the phases every time the result
//! is saved. With `--memory`, all of it runs in a child process inside a memory cgroup of its own (`memory`),
//! joined before the facts are gathered so the effective RAM is the cap; this process supervises it and removes
//! the group however it ends.
//!
//! Exit codes as `run`: 0 done, 1 failed operations, 2 bad input or set-up, 130 after Ctrl-C (partial result).

mod budget;
mod cliff;
mod memory;
mod profile;
mod summary;

use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use super::facts::{Gathered, gather};
use super::observer::ResultRecorder;
use super::output::{Ending, end_command, ended, print_display_quietly, print_written, result_skeleton};
use crate::cli::SweepArgs;
use crate::plan::{Plan, RunOptions, TargetFacts, build_plan};
use crate::report::{Renderer, Summary};
use crate::results::{RunResult, SweepSummary};
use crate::run::{Interrupt, ProgressLine, RunError, RunOutcome, execute, run_id};
use crate::units::Bytes;
use profile::Settings;

pub fn run(args: SweepArgs) -> Result<ExitCode> {
    // With --memory, this process supervises a child that runs the sweep inside the group (and is that child when
    // the supervisor started it).
    if let Some(limit) = args.memory {
        let records = args.records.as_deref().unwrap_or(&profile::RECORDS);
        memory::check_floor(limit, records.iter().copied().max().unwrap_or_default())?;
        if !args.output.dry_run && !memory::join_if_child()? {
            let tidy = memory::Child { dir: &args.dir, json: args.output.json.as_deref(), quiet: args.output.quiet };
            return memory::supervise(limit, &tidy);
        }
    }
    if !args.output.dry_run {
        super::stale::clear(&[args.dir.as_path()], args.output.quiet);
    }
    super::outputs::check(&args.output.files(), &[args.dir.as_path()], Some(&args.output.history))?;
    let gathered = gather(&args.dir, true)?;
    let (settings, bound) = settings(&args, &gathered)?;
    let keys = settings.keys();
    let options = RunOptions { run_id: run_id(), ..Default::default() };
    let plan =
        build_plan(&profile::sweep_job(&settings), &gathered.facts, &options).context("cannot plan the sweep")?;
    if args.output.dry_run {
        print_display_quietly(&plan);
        return Ok(ExitCode::SUCCESS);
    }
    super::output::say_plan(&args.output, &plan);
    let interrupt = Interrupt::install().context("cannot install the Ctrl-C handler")?;
    let progress = ProgressLine::new(!args.output.quiet);
    progress.println(&format!(
        "streamcap sweep of {}: {} sizes from {} to {}, {} phases; the files take {} at the end",
        gathered.canonical.display(),
        settings.sizes.len(),
        settings.sizes.first().copied().unwrap_or_default(),
        settings.sizes.last().copied().unwrap_or_default(),
        plan.phases.len(),
        settings.disk_bytes()
    ));
    for notice in &plan.notices {
        progress.println(&format!("note: {notice}"));
    }
    let skeleton = skeleton(&plan, &gathered, &settings, (&args, bound));
    let mut recorder = ResultRecorder::new(&plan, skeleton, args.output.json.clone(), None, progress);
    let mut budget = budget::Budget::new(args.budget.unwrap_or(profile::BUDGET), interrupt.flag());
    recorder.on_save = Some(Box::new(move |result| {
        summary::summarize(result, &keys);
        let stopped = budget.after_save(&result.phases, &keys);
        if let (Some(words), Some(sweep)) = (stopped, result.sweep.as_mut()) {
            sweep.bound = Some(words);
            sweep.budget_stopped = true;
            sweep.partial = false;
        }
    }));
    let outcome = execute(&plan, &interrupt, false, &mut recorder);
    finish(recorder, outcome, &args)
}

/// The result before any phase ran: the sweep's config and an empty summary.
fn skeleton(
    plan: &Plan,
    gathered: &Gathered,
    settings: &Settings,
    (args, bound): (&SweepArgs, Option<String>),
) -> RunResult {
    let mut skeleton = result_skeleton(plan, gathered);
    skeleton.config = serde_json::json!({ "command": "sweep", "plan": skeleton.config });
    skeleton.sweep = Some(SweepSummary {
        sizes_bytes: settings.sizes.iter().map(|s| s.0).collect(),
        records_bytes: settings.records.iter().map(|r| r.0).collect(),
        memory_limit_bytes: args.memory.map(|m| m.0),
        effective_ram_bytes: gathered.host.usable_ram().0,
        points: Vec::new(),
        cliff: None,
        implausible_cliff: None,
        words: String::new(),
        bound,
        budget_s: args.budget.unwrap_or(profile::BUDGET).as_secs_f64(),
        budget_stopped: false,
        partial: true,
    });
    skeleton
}

/// The sizes, records and modes from the flags and the target, or exit 2 with what to do.
fn settings(args: &SweepArgs, gathered: &Gathered) -> Result<(Settings, Option<String>)> {
    let TargetFacts::Directory { free, .. } = &gathered.facts.target else {
        bail!(
            "{} is not a directory: sweep writes files of each size, so it needs a directory (it works in \
             DIR/.streamcap and removes everything afterwards)",
            args.dir.display()
        );
    };
    let (sizes, bound) = match &args.sizes {
        Some(sizes) => {
            let mut sizes: Vec<Bytes> = sizes.iter().map(|s| profile::aligned(*s)).collect();
            sizes.sort();
            sizes.dedup();
            (sizes, None)
        }
        None => profile::default_sizes(gathered.host.usable_ram(), *free),
    };
    let records = args.records.clone().unwrap_or_else(|| profile::RECORDS.to_vec());
    if sizes.first().is_none_or(|s| s.0 == 0) || records.iter().any(|r| r.0 == 0 || r.0 % 4096 != 0) {
        bail!("give file sizes of at least 4 KiB and records in whole 4 KiB (--sizes 64M,1G --records 4k,1M)");
    }
    let settings = Settings { sizes, records, modes: args.io.modes() };
    if settings.keys().is_empty() {
        bail!("every record is larger than every file: give smaller --records or larger --sizes");
    }
    if let Some(free) = free
        && settings.disk_bytes().0 > free.0
    {
        bail!(
            "the files of all sizes take {}, and {} has {free} free: give fewer or smaller --sizes",
            settings.disk_bytes(),
            args.dir.display()
        );
    }
    Ok((settings, bound))
}

/// Saves the final result, prints the summary and picks the exit code.
fn finish(
    mut recorder: ResultRecorder<'_>,
    outcome: Result<RunOutcome, RunError>,
    args: &SweepArgs,
) -> Result<ExitCode> {
    let outcome = ended(&mut recorder, outcome)?;
    // The budget stops the run between sizes through the interrupt flag; that is the sweep's end, not Ctrl-C's.
    let by_budget = recorder.result.sweep.as_ref().is_some_and(|s| s.budget_stopped);
    let ending = Ending { interrupted: outcome.interrupted && !by_budget, ..Ending::of(&outcome, &args.output) };
    let print = |result: &RunResult| {
        if result.sweep.is_some() && !args.output.quiet {
            print_written(|out| Summary.render(result, out));
        }
    };
    Ok(end_command(&mut recorder, ending, print, super::output::exit_code))
}
