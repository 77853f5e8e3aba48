//! `streamcap cache TARGET`: hdparm -tT done honestly. One job of raw phases (`profile`) on a directory, a file
//! or a block device (reads only on the last two): sustained media, access time, page cache and the stepped
//! device cache, then each again beside a concurrent load; planned (`--dry-run` prints the plan) and run by
//! `run::execute` into one `RunResult`, whose `cache` section (`summary`) is derived from the phases every time
//! the result is saved. Ends with the plateau table and what each means for serving.
//!
//! Exit codes as `check`: 0 done, 1 failed reads, 2 bad input or set-up, 130 after Ctrl-C (partial result kept).

pub(super) mod profile;
pub(super) mod summary;

use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use super::facts::{Gathered, gather};
use super::observer::ResultRecorder;
use super::output::{Ending, end_command, ended, print_display_quietly, print_written, result_skeleton};
use crate::cli::{CacheArgs, Load};
use crate::plan::{RunOptions, TargetFacts, build_plan};
use crate::report::{Renderer, Summary};
use crate::results::CacheSummary;
use crate::run::{Interrupt, ProgressLine, RunError, execute, run_id};
use crate::units::{Bytes, format_duration};
use profile::{MIN_REGION, Settings};

pub fn run(args: CacheArgs) -> Result<ExitCode> {
    if !args.output.dry_run {
        super::stale::clear(&[args.target.as_path()], args.output.quiet);
    }
    let gathered = gather(&args.target, false)?;
    let (settings, load) = settings(&args, &gathered)?;
    let options = RunOptions { run_id: run_id(), ..Default::default() };
    let plan = build_plan(&profile::cache_job(&settings), &gathered.facts, &options).context("cannot plan the run")?;
    if args.output.dry_run {
        print_display_quietly(&plan);
        return Ok(ExitCode::SUCCESS);
    }
    super::output::say_plan(&args.output, &plan);
    let interrupt = Interrupt::install().context("cannot install the Ctrl-C handler")?;
    let progress = ProgressLine::new(!args.output.quiet);
    progress.println(&format!(
        "streamcap cache of {}: {} phases, about {} plus filling and warming",
        gathered.canonical.display(),
        plan.phases.len(),
        format_duration(settings.forecast())
    ));
    for notice in &plan.notices {
        progress.println(&format!("note: {notice}"));
    }
    let mut skeleton = result_skeleton(&plan, &gathered);
    skeleton.config = serde_json::json!({ "command": "cache", "plan": skeleton.config });
    skeleton.cache = Some(empty_summary(&args, &settings, load));
    let mut recorder = ResultRecorder::new(&plan, skeleton, args.output.json.clone(), None, progress);
    let planned = plan.phases.len();
    recorder.on_save = Some(Box::new(move |result| summary::summarize(result, planned)));
    let outcome = execute(&plan, &interrupt, false, &mut recorder);
    finish(recorder, outcome, &args)
}

/// The command's settings from its flags and the target, or exit 2 with what to do: the region, the load
/// (reads only on a file or a device) and the output paths.
fn settings(args: &CacheArgs, gathered: &Gathered) -> Result<(Settings, Load)> {
    let (region, directory) = match &gathered.facts.target {
        TargetFacts::Directory { free, .. } => (args.size.unwrap_or_else(|| profile::directory_region(*free)), true),
        TargetFacts::File { size, .. } | TargetFacts::BlockDevice { size, .. } => {
            (Bytes(args.size.map_or(size.0, |s| s.0.min(size.0))), false)
        }
        TargetFacts::Remote { .. } => bail!("cache measures local storage: give a directory, a file or a device"),
    };
    let load = args.load.unwrap_or(if directory {
        Load::Random { rw: crate::spec::RwMode::RandRw, rdpct: Some(70) }
    } else {
        Load::Random { rw: crate::spec::RwMode::RandRead, rdpct: None }
    });
    if !directory && load.writes() {
        bail!(
            "{} is not a directory, and streamcap only reads an existing file or a device: use --load randread \
             (or --load none)",
            args.target.display()
        );
    }
    if region < MIN_REGION {
        bail!(
            "a region of {region} is too small to tell a cache from the media: streamcap needs at least {MIN_REGION} \
             (give a larger --size, a larger file, or free some space)"
        );
    }
    super::outputs::check(&args.output.files(), &[args.target.as_path()], Some(&args.output.history))?;
    let timing = (args.runtime, args.bs);
    let settings = Settings::new(region, gathered.host.usable_ram(), timing, load.to_phase_spec(), directory);
    Ok((settings, load))
}

/// The cache section before any phase ran: what will be read and the stream the bounds are for.
fn empty_summary(args: &CacheArgs, settings: &Settings, load: Load) -> CacheSummary {
    let format = args.bitrate.clone().unwrap_or_else(profile::default_format);
    CacheSummary {
        region_bytes: settings.region.0,
        page_cache_region_bytes: settings.page_region.0,
        load: (load != Load::None).then(|| profile::load_words(&load)),
        bitrate_bps: format.bitrate.bits_per_sec(),
        chunk_bytes: args.chunk.unwrap_or(Bytes(crate::streams::defaults::CHUNK_BYTES)).0.max(1),
        plateaus: Vec::new(),
        device_cache_steps: Vec::new(),
        device_cache_end: None,
        partial: true,
    }
}

/// Saves the final result, prints the summary and picks the exit code.
fn finish(
    mut recorder: ResultRecorder<'_>,
    outcome: Result<crate::run::RunOutcome, RunError>,
    args: &CacheArgs,
) -> Result<ExitCode> {
    let outcome = match ended(&mut recorder, outcome) {
        Ok(outcome) => outcome,
        Err(RunError::DirectUnsupported { path }) => bail!(
            "{} does not accept direct I/O (O_DIRECT), so streamcap cannot read past the page cache there and \
             cannot tell a cache from the media; run `streamcap sweep` for buffered figures",
            path.display()
        ),
        Err(error) => return Err(error.into()),
    };
    let ending = Ending::of(&outcome, &args.output);
    let print = |result: &crate::results::RunResult| {
        if result.cache.is_some() && !args.output.quiet {
            print_written(|out| Summary.render(result, out));
        }
    };
    Ok(end_command(&mut recorder, ending, print, super::output::exit_code))
}
