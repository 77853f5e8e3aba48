//! `streamcap check [DIR]`: the main job. In about three minutes by default, on the storage under DIR: host and
//! device facts; sequential write and read MB/s; 4 KiB random-read IOPS at queue depth 1 and 32; small-file
//! create, stat and read rates; the stream-capacity search for three video formats; then the verdict table.
//!
//! One job of phases (`profile::check_job`): raw, file-set and stream phases, planned together (`--dry-run`
//! prints the plan) and run by `run::execute` with the app's `ResultRecorder` into ONE `RunResult`; the check
//! summary (headline figures, verdict per format) is derived from the phases every time the result is saved.
//! Everything is written under DIR/.streamcap/ and removed afterwards, also on error and after Ctrl-C (exit 130
//! with the partial result). Profiles and every size and duration: `profile`.

mod breaks;
mod cache;
mod figures;
mod forecast;
mod hint;
mod profile;
mod verdict;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::facts::{Gathered, gather};
use super::observer::{HeaderHook, ResultRecorder};
use super::output::{Ending, end_command, ended, print_quietly, print_written, result_skeleton};
use crate::cli::{CheckArgs, CheckFormat};
use crate::plan::{PhaseKind, Plan, RunOptions, TargetFacts, build_plan};
use crate::results::{CheckPlayer, CheckSummary, FormatVerdict, HouseholdAnswer, RunResult, RunStatus};
use crate::run::{Interrupt, ProgressLine, execute, run_id};
use crate::spec::Load;
use crate::streams::{Format, Household};
use crate::sysinfo::topology::ROLE_BTRFS_MEMBER;
use crate::units::{Bytes, format_duration};
pub use profile::Profile;
use profile::{FORMATS, MIN_DATA_SET, Settings};

fn profile_of(args: &CheckArgs) -> Profile {
    match (args.quick, args.thorough) {
        (true, _) => Profile::Quick,
        (_, true) => Profile::Thorough,
        _ => Profile::Default,
    }
}

pub fn run(args: CheckArgs) -> Result<ExitCode> {
    if let Some(launcher) = super::cluster::launched_by() {
        // One rank of a multi-host run under mpirun or srun (docs/multi-host.md).
        return super::cluster::run_ranks(super::cluster::RankCommand::Check(&args), launcher);
    }
    let started = Instant::now();
    let prepared = prepare(&args, &Share::default())?;
    if args.output.dry_run {
        let forecast = prepared.settings.forecast_parts().beside(&breaks::loads(&prepared.plan)).words();
        print_quietly(&format!("{}\nthe {} check takes {forecast}\n", prepared.plan, prepared.profile.name()));
        return Ok(ExitCode::SUCCESS);
    }
    super::output::say_plan(&args.output, &prepared.plan);
    let interrupt = Interrupt::install().context("cannot install the Ctrl-C handler")?;
    let mut recorder = prepared.recorder(&args, prepared.skeleton(), started);
    let outcome = execute(&prepared.plan, &interrupt, false, &mut recorder);
    finish(recorder, outcome, &args)
}

/// This process's share of the storage under DIR: the whole of it, or in a multi-host run what the ranks that
/// write into the same filesystem leave one another.
#[derive(Default)]
pub struct Share {
    /// Ranks (this one included) that write into the filesystem under DIR; 0 or 1: this process alone.
    pub sharers: u32,
    /// This process's rank in a multi-host run: its small-file tree is named by it (ranks in one directory build
    /// their own trees), and only rank 0, which writes them, checks the output paths.
    pub rank: Option<u32>,
}

/// What a check runs: the facts under DIR, the profile and its data set, and the plan.
pub struct Prepared {
    pub gathered: Gathered,
    pub plan: Plan,
    profile: Profile,
    settings: Settings,
    data_set: Bytes,
    /// The user's library (`--library`), resolved: only read.
    library: Option<PathBuf>,
    /// `--expect`: the household to answer for.
    expect: Option<Household>,
}

/// Facts → data set → job → plan (stale work of killed runs is cleared first, unless this is a dry run).
pub fn prepare(args: &CheckArgs, share: &Share) -> Result<Prepared> {
    if let Some(household) = &args.expect {
        measured_formats(household)?;
    }
    let profile = profile_of(args);
    let mut settings = profile.settings();
    if let Some(name) = &args.player {
        settings.player = crate::spec::players::find(name)
            .with_context(|| format!("--player {name}: not a profile ({})", crate::spec::players::names()))?;
    }
    let dir = check_dir(args);
    let library = match &args.library {
        Some(given) => Some(own_library(args, &dir, given)?),
        None => None,
    };
    if !args.output.dry_run {
        super::stale::clear(&[dir.as_path()], args.output.quiet);
    }
    let mut gathered = gather(&dir, true)?;
    let data_set = data_set_of(args, &dir, &gathered, &settings, share)?;
    if let TargetFacts::Directory { free: Some(free), .. } = &mut gathered.facts.target {
        // Ranks writing into one filesystem plan in their share of it (the generated library too).
        *free = Bytes(free.0 / u64::from(share.sharers.max(1)));
    }
    // The small files are opened with O_DIRECT, or buffered (with a notice) where the filesystem refuses it.
    let direct = true;
    let kept = super::library::kept_choice(&mut gathered.facts, args.fresh_library, args.remove_library);
    let options = RunOptions { run_id: run_id(), wait: args.wait, library: kept, ..Default::default() };
    let media = profile::Media {
        library: library.as_ref().map(|(dir, _)| dir.clone()),
        size: args.library_size,
        during: loads_of(args, profile, gathered.facts.scrub.is_some()),
    };
    let mut job = profile::check_job(&settings, data_set, direct, &media);
    if let Some((canonical, files)) = library {
        job.notices.extend(other_filesystem(&gathered, &canonical));
        // A library's HLS playlists are titles played segment by segment, as `streams` plays them.
        let (files, playlists) = super::playlists::with_playlists(files)?;
        job.notices.extend(super::playlists::buffered_notices(&playlists));
        gathered.facts.media_libraries.push((canonical, files));
        gathered.facts.playlists.extend(playlists);
    }
    if args.engine.is_some() {
        job.phases.iter_mut().for_each(|p| p.engine = args.engine);
    }
    if profile::reads_with_sync(args.engine, &gathered.facts) {
        profile::depth_as_threads(&mut job);
    }
    if let Some(rank) = share.rank {
        let trees = job.phases.iter_mut().filter_map(|p| p.fileset_mut()).flat_map(|f| f.trees.iter_mut());
        trees.for_each(|tree| tree.name = format!("{}-rank{rank}", tree.name));
    }
    let plan = build_plan(&job, &gathered.facts, &options).context("cannot plan the check")?;
    Ok(Prepared { gathered, plan, profile, settings, data_set, library: media.library, expect: args.expect.clone() })
}

/// The background loads of the "what breaks first" table: those `--during` names, or all of them with
/// `--thorough` (a scrub where the target has btrfs or a device beneath it to scrub: `scrubbable`).
fn loads_of(args: &CheckArgs, profile: Profile, scrubbable: bool) -> Vec<Load> {
    match (&args.during, profile) {
        (Some(during), _) => during.0.clone(),
        (None, Profile::Thorough) => Load::ALL.into_iter().filter(|&l| l != Load::Scrub || scrubbable).collect(),
        (None, _) => Vec::new(),
    }
}

/// `--expect` asks only about the formats the check measures: anything else is refused before any work.
fn measured_formats(household: &Household) -> Result<()> {
    match household.0.iter().find(|(f, _)| !FORMATS.contains(&f.name.as_str())) {
        Some((other, _)) => bail!(
            "--expect {household}: the check measures {}, not {other}; name those (as in 2x2160p-remux,3x1080p)",
            FORMATS.join(", ")
        ),
        None => Ok(()),
    }
}

/// The household's answer from the verdict table so far (`not measured` for a format not yet measured).
fn household_answer(expect: &str, wanted: &[(String, u32)], verdict: &[FormatVerdict]) -> HouseholdAnswer {
    crate::results::household_answer(expect, wanted, verdict, crate::streams::capacity::MARGIN)
}

/// `--library`: the user's media (exit 2 when there are none), with the scratch directory and every output file
/// kept outside it.
fn own_library(
    args: &CheckArgs,
    dir: &std::path::Path,
    given: &std::path::Path,
) -> Result<(PathBuf, Vec<(PathBuf, u64)>)> {
    let (canonical, files) = super::library::open_library(given)?;
    super::library::refuse_inside(dir, &canonical, "the scratch directory (DIR, where .streamcap is made)")?;
    for (what, path) in
        [("--json", args.output.json.clone()), ("the HTML report", super::report::check_html_path(args))]
    {
        if let Some(path) = path {
            super::library::refuse_inside(&path, &canonical, what)?;
        }
    }
    Ok((canonical, files))
}

/// Said when the scratch directory and the library are on different filesystems: the raw and small-file figures
/// then describe another storage than the verdict does.
fn other_filesystem(gathered: &Gathered, library: &std::path::Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let device = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.dev()).ok();
    if device(&gathered.canonical) == device(library) {
        return None;
    }
    let describe = |p: &std::path::Path| {
        crate::sysinfo::filesystem_of(p)
            .map_or_else(|_| String::new(), |fs| format!(" ({} on {})", fs.fs_type, fs.source))
    };
    Some(format!(
        "the raw and small-file phases measure {}{}, but your library {} is on another filesystem{}: the verdict \
         is the library's, the other figures are not; for one storage throughout, give a scratch directory on \
         the library's filesystem, outside it: streamcap check /path/on/that/filesystem --library {}",
        gathered.canonical.display(),
        describe(&gathered.canonical),
        library.display(),
        describe(library),
        library.display()
    ))
}

/// The directory a check measures (default: the current one).
pub fn check_dir(args: &CheckArgs) -> PathBuf {
    args.dir.clone().unwrap_or_else(|| PathBuf::from("."))
}

impl Prepared {
    /// The result before any phase ran.
    pub fn skeleton(&self) -> RunResult {
        let mut skeleton = skeleton(&self.plan, &self.gathered, self.profile, self.data_set);
        if let Some(check) = skeleton.check.as_mut() {
            let player = self.settings.player;
            // A real player's audience (its popularity and seeks) is part of how the verdict's viewers behave.
            let described = match player.audience() {
                Some(audience) => format!("{}; audience: {audience}", player.describe()),
                None => player.describe(),
            };
            let max_startup_s = player.startup_target().as_secs_f64();
            // The verdict's rule as judged (`streams::judge`), so that the stored result says it.
            let late_starts_in_ten = crate::streams::judge::slow_starts_allowed(10);
            check.player = Some(CheckPlayer { name: player.name.into(), described, max_startup_s, late_starts_in_ten });
        }
        if let (Some(check), Some(h)) = (skeleton.check.as_mut(), &self.expect) {
            let wanted: Vec<(String, u32)> = h.0.iter().map(|(f, n)| (f.name.clone(), *n)).collect();
            check.household = Some(household_answer(&h.to_string(), &wanted, &[]));
        }
        skeleton
    }

    /// The recorder that prints the check's progress and sections and keeps its summary, starting from
    /// `skeleton`; says what the check is about to do.
    pub fn recorder(&self, args: &CheckArgs, skeleton: RunResult, started: Instant) -> ResultRecorder<'_> {
        // One counter: the check's own stages ("[2/5] stream capacity"), not the phases' beside them.
        let progress = ProgressLine::new(!args.output.quiet).uncounted();
        let library = self.library.as_ref().map_or_else(String::new, |l| {
            format!("; the viewers read your library {} (read-only: nothing is written there)", l.display())
        });
        progress.println(&format!(
            "streamcap check of {} ({} profile, about {}); everything it writes goes under {}{library}",
            self.gathered.canonical.display(),
            self.profile.name(),
            format_duration(self.settings.forecast_parts().beside(&breaks::loads(&self.plan)).total()),
            self.gathered.canonical.join(".streamcap").display()
        ));
        for notice in &self.plan.notices {
            progress.notice(&format!("note: {notice}"));
        }
        let mut recorder = ResultRecorder::new(&self.plan, skeleton, args.output.json.clone(), None, progress);
        recorder.interval_tables = false;
        let files = u64::from(self.settings.dirs) * self.settings.files_per_dir;
        let loads = breaks::loads(&self.plan);
        recorder.on_save = Some(Box::new(move |result: &mut RunResult| summarize(result, files, started, &loads)));
        recorder.header = Some(headers(&self.plan, self.settings, started));
        recorder
    }
}

/// The data set for the directory's free space (this process's share of it), once the target and the output
/// paths are known to be usable; exit 2 with what to do otherwise.
fn data_set_of(
    args: &CheckArgs,
    dir: &std::path::Path,
    gathered: &Gathered,
    settings: &Settings,
    share: &Share,
) -> Result<Bytes> {
    let TargetFacts::Directory { free, .. } = &gathered.facts.target else {
        bail!(
            "{} is not a directory: check measures the storage under a directory (it writes its test data in \
             DIR/.streamcap and removes it); for a file or a block device use `streamcap run`",
            dir.display()
        );
    };
    if share.rank.unwrap_or(0) == 0 {
        check_outputs(args)?;
    }
    let sharers = share.sharers.max(1);
    let free = free.map(|f| Bytes(f.0 / u64::from(sharers)));
    let data_set = profile::data_set(settings, free);
    if data_set.0 < MIN_DATA_SET {
        let shared = if sharers > 1 { format!(" for each of {sharers} ranks") } else { String::new() };
        bail!(
            "{} has {} free{shared}, too little to check: streamcap needs about {} there (a data set of at least \
             {} and room around it); free some space or choose another directory",
            dir.display(),
            free.unwrap_or_default(),
            Bytes(MIN_DATA_SET * 4),
            Bytes(MIN_DATA_SET)
        );
    }
    Ok(data_set)
}

/// The output files (the JSON, the HTML report wherever it goes, the history database) can be written
/// (nothing is created yet).
pub fn check_outputs(args: &CheckArgs) -> Result<()> {
    let html = super::report::check_html_path(args);
    let [json, _] = args.output.files();
    let outputs = [json, ("--html", html.as_deref())];
    if args.format != CheckFormat::Summary
        && let Some((flag, _)) = outputs.iter().find(|(_, p)| p.is_some_and(crate::outfile::is_stdout))
    {
        let format = if args.format == CheckFormat::Json { "json" } else { "markdown" };
        anyhow::bail!("--format {format} prints to standard output, and so would {flag} -: give {flag} a file");
    }
    super::outputs::check(&[json, ("--html", html.as_deref())], &[], Some(&args.output.history))
}

/// The result before any phase ran: the check's config and an empty summary.
fn skeleton(plan: &Plan, gathered: &Gathered, profile: Profile, data_set: Bytes) -> RunResult {
    let mut skeleton = result_skeleton(plan, gathered);
    skeleton.config = serde_json::json!({ "command": "check", "profile": profile.name(), "plan": skeleton.config });
    let library = plan.phases.iter().find_map(|p| p.streams()?.library.clone());
    skeleton.check = Some(CheckSummary {
        profile: profile.name().into(),
        elapsed_s: 0.0,
        data_set_bytes: data_set.0,
        library,
        sequential: None,
        random_reads: Vec::new(),
        small_files: None,
        cache: None,
        player: None,
        verdict: Vec::new(),
        household: None,
        partial: true,
        planner_hint: None,
        planner_member: None,
        breaks_first: None,
    });
    skeleton
}

/// Prints the summary and picks the exit code.
pub fn finish(
    mut recorder: ResultRecorder<'_>,
    outcome: Result<crate::run::RunOutcome, crate::run::RunError>,
    args: &CheckArgs,
) -> Result<ExitCode> {
    let outcome = ended(&mut recorder, outcome)?;
    let html = super::report::check_html_path(args);
    let ending = Ending { html: html.as_deref(), ..Ending::of(&outcome, &args.output) };
    let print = |result: &RunResult| {
        // Markdown or JSON was asked for by name, so --quiet does not hide it (as fio's JSON on `run`).
        if !args.output.quiet || args.format != CheckFormat::Summary {
            print_written(|out| crate::report::Format::from(args.format).renderer().render(result, out));
        }
    };
    Ok(end_command(&mut recorder, ending, print, super::output::exit_code))
}

/// The check summary, from the phases run so far (and the stream phase under way).
fn summarize(result: &mut RunResult, files: u64, started: Instant, loads: &[Load]) {
    let phases = &result.phases;
    let direct = phases.iter().find(|p| p.file_ops.is_some()).is_some_and(|p| p.direct);
    let sequential = figures::sequential(phases);
    let random = figures::random_reads(phases);
    let small = figures::small_files(phases, files, direct);
    let network = result.target.filesystem.as_ref().is_some_and(|fs| fs.is_network());
    let context = verdict::Context {
        sequential_mbps: figures::sequential_read_mbps(phases),
        network,
        target: Some(result.target.clone()),
        pool_members: result.target.devices.iter().filter(|d| d.role == ROLE_BTRFS_MEMBER).count(),
        cache_beneath: cache::cache_beneath(phases).is_some(),
    };
    let (mut verdict, mut measured) = (Vec::new(), 0);
    for name in FORMATS {
        let format = Format::parse(name).expect("the check's formats are in the table");
        let phase_name = profile::stream_phase_name(name);
        let finished = phases.iter().find(|p| p.name == phase_name).and_then(|p| p.streams.as_ref());
        // The phase under way is in `result.streams` until it finishes.
        let running = result.streams.as_ref().filter(|s| s.formats.first().is_some_and(|f| f.name == format.name));
        match finished.or(running) {
            Some(streams) => {
                measured += 1;
                verdict.push(verdict::verdict(&format, streams, &context));
            }
            None => verdict.push(verdict::not_run(&format, &context)),
        }
    }
    let complete = result.status == RunStatus::Completed && measured == FORMATS.len();
    let cache = cache::section(phases, &verdict, network);
    let hint = if complete { hint::planner_hint(result, &verdict) } else { hint::Hint::default() };
    let breaks = breaks::table(loads, phases, result.streams.as_ref(), &verdict);
    let summary = result.check.as_mut().expect("set at the start");
    summary.cache = cache;
    summary.sequential = sequential;
    summary.random_reads = random;
    summary.small_files = small;
    if let Some(asked) = &summary.household {
        let wanted: Vec<(String, u32)> = asked.rows.iter().map(|r| (r.format.clone(), r.wanted)).collect();
        summary.household = Some(household_answer(&asked.expect, &wanted, &verdict));
    }
    summary.verdict = verdict;
    summary.elapsed_s = started.elapsed().as_secs_f64();
    summary.partial = !complete;
    summary.planner_hint = hint.line;
    summary.planner_member = hint.member;
    summary.breaks_first = breaks;
}

/// What happens before the first estimate phase is measured: the library is written (its progress shows as
/// the data files being filled), unless it is the user's.
fn writing(plan: &Plan) -> String {
    let library = plan.phases.iter().find_map(|p| p.streams().filter(|s| s.own_media)?.library.as_ref());
    library.map_or_else(String::new, |l| {
        format!("writing the media library ({}, once for every format), then ", l.headline())
    })
}

/// The check's section headers, by the phase they start with, with elapsed and forecast time.
fn headers(plan: &Plan, settings: Settings, started: Instant) -> HeaderHook<'static> {
    let breaking = plan.phases.iter().any(|p| p.streams().is_some_and(|s| !s.during.is_empty()));
    let sections = 2 + FORMATS.len() + usize::from(breaking);
    let mut lines: Vec<Option<String>> = vec![None; plan.phases.len()];
    // The search each stream section starts (0: the first), for the forecast from there on.
    let mut searches: Vec<Option<usize>> = vec![None; plan.phases.len()];
    let mut stream = 0;
    for (i, phase) in plan.phases.iter().enumerate() {
        let before = &plan.phases[..i];
        let fileset_before = before.iter().any(|p| matches!(p.kind, PhaseKind::FileSet(_)));
        let streams_before = before.iter().any(|p| matches!(p.kind, PhaseKind::Streams(_)));
        lines[i] = match &phase.kind {
            PhaseKind::Raw(_) if i == 0 => Some(format!("[1/{sections}] sequential and random I/O")),
            PhaseKind::FileSet(_) if !fileset_before => Some(format!("[2/{sections}] small files: create, stat, read")),
            PhaseKind::Raw(_) if phase.name.starts_with("estimate") && !streams_before => {
                (phase.name.contains("random"))
                    .then(|| format!("  {}measuring raw read rates for the estimate…", writing(plan)))
            }
            PhaseKind::Streams(streams) if !streams.during.is_empty() => {
                let loads: Vec<&str> = streams.during.iter().map(|d| d.load.name()).collect();
                let label = streams.config.mix.label();
                Some(format!("[{sections}/{sections}] what breaks first: {label} beside {}", loads.join(", ")))
            }
            PhaseKind::Streams(streams) => {
                searches[i] = Some(stream);
                stream += 1;
                let label = streams.config.mix.label();
                Some(format!("[{}/{sections}] stream capacity: {label}", 2 + stream))
            }
            _ => None,
        };
    }
    let forecast = settings.forecast_parts().beside(&breaks::loads(plan));
    Box::new(move |index, _phase| {
        let line = lines.get(index).cloned().flatten()?;
        if line.starts_with('[') {
            let elapsed: Duration = started.elapsed();
            let total = match searches.get(index).copied().flatten() {
                Some(k) => forecast.once_search_starts(k, elapsed),
                None => forecast.total(),
            };
            Some(format!("{line} · {} elapsed of ~{}", format_duration(elapsed), format_duration(total)))
        } else {
            Some(line)
        }
    })
}
