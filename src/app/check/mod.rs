//! `streamcap check [DIR]`: the main job. In about two minutes by default, on the storage under DIR: host and
//! device facts; sequential write and read MB/s; 4 KiB random-read IOPS at queue depth 1 and 32; small-file
//! create, stat and read rates; the stream-capacity search for three video formats; then the verdict table.
//!
//! It composes what exists: the raw phases and the small-file phases are two plans (the planner refuses to mix
//! them) run with `run::execute` and the app's `ResultRecorder`, and their phases are merged into ONE
//! `RunResult`; the stream part uses `streams_steps::find_capacity` and the estimate (see `verdict`). Everything
//! is written under DIR/.streamcap/ and removed afterwards, also on error and after Ctrl-C (exit 130 with the
//! partial result). Profiles and every size and duration: `profile`.

mod figures;
mod profile;
mod verdict;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;

use super::facts::{Gathered, gather};
use super::observer::ResultRecorder;
use super::run_cmd::{check_writable_parent, print_quietly, result_skeleton};
use crate::engine::EngineKind;
use crate::plan::{Plan, RunOptions, TargetFacts, build_plan};
use crate::report::write_check_summary;
use crate::results::{CheckSummary, FormatVerdict, RunResult, RunStatus, rfc3339, write_result_atomically};
use crate::run::{INTERRUPTED_EXIT, Interrupt, ProgressLine, execute, run_id};
use crate::streams::Format;
use crate::units::{Bytes, format_duration};
pub use profile::Profile;
use profile::{FORMATS, MIN_DATA_SET, Settings};
use verdict::StreamSetup;

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    streamcap check                         the storage under the current directory, about two minutes\n  \
    streamcap check /srv/media --quick      about half a minute\n  \
    streamcap check /srv/media --thorough --json check.json")]
pub struct CheckArgs {
    /// Directory on the storage to check (default: the current directory). streamcap writes only under
    /// DIR/.streamcap and removes it afterwards.
    pub dir: Option<PathBuf>,
    /// About 30 s: a smaller data set, shorter phases and a coarser capacity search.
    #[arg(long, conflicts_with = "thorough")]
    pub quick: bool,
    /// About 10 minutes: a larger data set, longer phases, 30 s per stream step and a search to 3 %.
    #[arg(long)]
    pub thorough: bool,
    /// Write the result as JSON (rewritten after every stage).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the HTML report to FILE (default: beside the JSON as NAME.html, or
    /// streamcap-check-HOST-TIME.html in the current directory).
    #[arg(long, value_name = "FILE", conflicts_with = "no_html")]
    pub html: Option<PathBuf>,
    /// Write no HTML report.
    #[arg(long)]
    pub no_html: bool,
    /// No progress and no summary.
    #[arg(long, short)]
    pub quiet: bool,
}

impl CheckArgs {
    fn profile(&self) -> Profile {
        match (self.quick, self.thorough) {
            (true, _) => Profile::Quick,
            (_, true) => Profile::Thorough,
            _ => Profile::Default,
        }
    }
}

/// Stage headers with elapsed and forecast time, on stderr.
struct Say {
    quiet: bool,
    started: Instant,
    forecast: Duration,
}

const STAGES: usize = 5;

impl Say {
    fn line(&self, text: &str) {
        if !self.quiet {
            eprintln!("{text}");
        }
    }

    fn stage(&self, number: usize, what: &str) {
        self.line(&format!(
            "[{number}/{STAGES}] {what} · {} elapsed of ~{}",
            format_duration(self.started.elapsed()),
            format_duration(self.forecast)
        ));
    }
}

/// What one stage (a plan run through the raw or file-set runner) left.
struct Stage {
    result: RunResult,
    cleanup_error: Option<String>,
}

pub fn run(args: CheckArgs) -> Result<ExitCode> {
    let started = Instant::now();
    let profile = args.profile();
    let settings = profile.settings();
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let gathered = gather(&dir, true)?;
    let TargetFacts::Directory { free, .. } = &gathered.facts.target else {
        bail!(
            "{} is not a directory: check measures the storage under a directory (it writes its test data in \
             DIR/.streamcap and removes it); for a file or a block device use `streamcap run`",
            dir.display()
        );
    };
    if let Some(path) = &args.json {
        check_writable_parent(path)?;
    }
    if let Some(path) = &args.html {
        super::run_cmd::check_output("--html", path)?;
    }
    let data_set = profile::data_set(&settings, *free);
    if data_set.0 < MIN_DATA_SET {
        bail!(
            "{} has {} free, too little to check: streamcap needs about {} there (a data set of at least {} and \
             room around it); free some space or choose another directory",
            dir.display(),
            free.unwrap_or_default(),
            Bytes(MIN_DATA_SET * 4),
            Bytes(MIN_DATA_SET)
        );
    }
    let options = RunOptions { run_id: run_id(), allow_device_writes: false, force: false };
    let raw_plan = build_plan(&profile::raw_job(&settings, data_set), &gathered.facts, &options)
        .context("cannot plan the check")?;
    let interrupt = Interrupt::install().context("cannot install the Ctrl-C handler")?;
    let say = Say { quiet: args.quiet, started, forecast: settings.forecast() };
    let mut check = Check::new(&args, &raw_plan, &gathered, profile, data_set);
    say.line(&format!(
        "streamcap check of {} ({} profile, about {}); everything it writes goes under {}",
        gathered.canonical.display(),
        profile.name(),
        format_duration(say.forecast),
        gathered.canonical.join(".streamcap").display()
    ));

    let outcome = check.stages(&settings, &raw_plan, &gathered, &options, &interrupt, &say);
    check.finish(started, &interrupt);
    super::report::html_after_run(&check.result, super::report::check_html_path(&args).as_deref());
    let cleanup_error = match outcome {
        Ok(cleanup) => cleanup,
        Err(error) => {
            check.result.status = RunStatus::Failed;
            check.save();
            return Err(error);
        }
    };
    if !args.quiet {
        let mut text = Vec::new();
        let summary = check.result.check.as_ref().expect("set at the start");
        write_check_summary(&mut text, &check.result, summary).expect("writing to a Vec cannot fail");
        print_quietly(&String::from_utf8_lossy(&text));
    }
    if let Some(problem) = &check.output_error {
        eprintln!("warning: {problem}");
    }
    if let Some(problem) = cleanup_error {
        eprintln!("Error: {problem}; remove it by hand");
        return Ok(ExitCode::from(2));
    }
    Ok(match check.result.status {
        RunStatus::Interrupted => ExitCode::from(INTERRUPTED_EXIT as u8),
        RunStatus::Failed => ExitCode::from(2),
        RunStatus::IoError => ExitCode::from(1),
        RunStatus::Completed | RunStatus::Running => {
            if check.result.phases.iter().any(|p| p.errors.count > 0) {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
    })
}

/// The result being built, and where it goes.
struct Check {
    result: RunResult,
    json: Option<PathBuf>,
    quiet: bool,
    output_error: Option<String>,
}

impl Check {
    fn new(args: &CheckArgs, raw_plan: &Plan, gathered: &Gathered, profile: Profile, data_set: Bytes) -> Check {
        let mut result = result_skeleton(raw_plan, gathered);
        result.config = serde_json::json!({ "command": "check", "profile": profile.name(), "raw": result.config });
        result.check = Some(CheckSummary {
            profile: profile.name().into(),
            elapsed_s: 0.0,
            data_set_bytes: data_set.0,
            sequential: None,
            random_reads: Vec::new(),
            small_files: None,
            verdict: Vec::new(),
            partial: false,
        });
        let mut check = Check { result, json: args.json.clone(), quiet: args.quiet, output_error: None };
        check.save();
        check
    }

    fn summary(&mut self) -> &mut CheckSummary {
        self.result.check.as_mut().expect("set at the start")
    }

    fn save(&mut self) {
        if let Some(path) = &self.json
            && let Err(e) = write_result_atomically(&self.result, path)
        {
            self.output_error.get_or_insert(e.to_string());
        }
    }

    /// Runs the stages in order; returns what could not be removed, if anything.
    fn stages(
        &mut self,
        settings: &Settings,
        raw_plan: &Plan,
        gathered: &Gathered,
        options: &RunOptions,
        interrupt: &Interrupt,
        say: &Say,
    ) -> Result<Option<String>> {
        say.stage(1, "sequential and random I/O");
        let stage = self.run_plan(raw_plan, interrupt)?;
        let mut cleanup = stage.cleanup_error.clone();
        self.absorb(stage, "raw");
        let phases = &self.result.phases;
        let (sequential, random) = (figures::sequential(phases), figures::random_reads(phases));
        let direct = phases.first().is_some_and(|p| p.direct);
        self.summary().sequential = sequential;
        self.summary().random_reads = random;
        self.save();
        if interrupt.is_set() {
            return Ok(cleanup);
        }

        say.stage(2, "small files: create, stat, read");
        let files_plan = build_plan(&profile::files_job(settings, direct), &gathered.facts, options)
            .context("cannot plan the small-file phases")?;
        let stage = self.run_plan(&files_plan, interrupt)?;
        cleanup = cleanup.or(stage.cleanup_error.clone());
        self.absorb(stage, "files");
        let files = u64::from(settings.dirs) * settings.files_per_dir;
        let small = figures::small_files(&self.result.phases, files, direct);
        self.summary().small_files = small;
        self.save();
        if interrupt.is_set() {
            return Ok(cleanup);
        }

        let stream_cleanup = self.streams(settings, gathered, interrupt, say)?;
        Ok(cleanup.or(stream_cleanup))
    }

    /// Runs one plan through the runner with the app's recorder; its phases come back numbered from 0.
    fn run_plan(&mut self, plan: &Plan, interrupt: &Interrupt) -> Result<Stage> {
        let mut skeleton = self.result.clone();
        skeleton.phases.clear();
        let progress = ProgressLine::new(!self.quiet);
        for notice in &plan.notices {
            progress.println(&format!("note: {notice}"));
            skeleton.notices.push(notice.clone());
        }
        let mut recorder = ResultRecorder::new(plan, skeleton, None, None, progress);
        let outcome = execute(plan, interrupt, false, &mut recorder);
        recorder.progress.clear();
        if let Some(problem) = recorder.output_error.take() {
            self.output_error.get_or_insert(problem);
        }
        let mut result = recorder.result;
        match outcome {
            Ok(outcome) => Ok(Stage { result, cleanup_error: outcome.cleanup_error }),
            Err(error) => {
                // Keep what the stage measured before it failed.
                result.status = RunStatus::Failed;
                self.absorb(Stage { result, cleanup_error: None }, "failed");
                Err(error.into())
            }
        }
    }

    /// Appends a stage's phases (renumbered after those already there) and notices; records its plan.
    fn absorb(&mut self, stage: Stage, key: &str) {
        let offset = self.result.phases.len();
        for mut phase in stage.result.phases {
            phase.index += offset;
            self.result.phases.push(phase);
        }
        self.result.notices = stage.result.notices;
        if key == "files"
            && let Some(config) = self.result.config.as_object_mut()
        {
            config.insert("files".into(), stage.result.config);
        }
    }

    /// The capacity search for each format; the format with the largest media goes first, and its media also
    /// serves the raw-rate measurement behind every format's estimate.
    fn streams(
        &mut self,
        settings: &Settings,
        gathered: &Gathered,
        interrupt: &Interrupt,
        say: &Say,
    ) -> Result<Option<String>> {
        let flag = interrupt.flag();
        let formats: Vec<Format> =
            FORMATS.iter().map(|n| Format::parse(n).expect("the check's formats are in the table")).collect();
        let setup = StreamSetup {
            dir: &gathered.canonical,
            settings,
            engine: if gathered.facts.io_uring.is_ok() { EngineKind::IoUring } else { EngineKind::Sync },
            devices: gathered.devices.iter().map(|d| (d.name.clone(), d.role.clone())).collect(),
            memory_backed: gathered.facts.memory_backed.is_some(),
            interrupt,
            flag: &flag,
        };
        let mut found: Vec<Option<FormatVerdict>> = vec![None; formats.len()];
        let mut rates = None;
        let mut cleanup = None;
        for (n, index) in (0..formats.len()).rev().enumerate() {
            if interrupt.is_set() {
                break;
            }
            let format = &formats[index];
            say.stage(3 + n, &format!("stream capacity: {}", format.label));
            let config = verdict::config(format, settings);
            let media = match verdict::media(&setup, &config) {
                Ok(media) => media,
                Err(_) if interrupt.is_set() => break,
                Err(e) => return Err(e),
            };
            let mut media = media;
            if rates.is_none() {
                say.line("  measuring raw read rates for the estimate…");
                rates = Some(verdict::raw_rates(&setup, &media)?);
            }
            let verdict = verdict::search_format(&setup, format, &config, &media, rates, &mut |step| {
                say.line(&format!(
                    "  {:>6} streams: {} stalled, start-up p99 {:.2} s{}",
                    step.count,
                    step.streams_stalled,
                    step.startup.at(99.0).unwrap_or(0) as f64 / 1e9,
                    if step.meets_target { "  ok" } else { "  missed" }
                ));
            })?;
            say.line(&format!("  {}", verdict.capacity.words));
            if let Err(e) = media.remove() {
                cleanup.get_or_insert(format!("{e:#}"));
            }
            found[index] = Some(verdict);
            self.summary().verdict = found.iter().flatten().cloned().collect();
            self.save();
        }
        Ok(cleanup)
    }

    fn finish(&mut self, started: Instant, interrupt: &Interrupt) {
        let interrupted = interrupt.is_set();
        self.result.status = if interrupted {
            RunStatus::Interrupted
        } else {
            self.result
                .phases
                .iter()
                .map(|p| p.status)
                .find(|s| *s != RunStatus::Completed)
                .unwrap_or(RunStatus::Completed)
        };
        self.result.finished_at = Some(rfc3339(std::time::SystemTime::now()));
        let summary = self.summary();
        summary.elapsed_s = started.elapsed().as_secs_f64();
        summary.partial = interrupted || summary.verdict.len() < FORMATS.len();
        self.save();
    }
}
