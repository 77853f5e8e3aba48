//! `streamcap streams`: flags → one stream phase (`StreamsSpec`) → facts (the directory, the user's media, or
//! the URLs' sizes) → plan (`--dry-run` prints it) → `run::execute` → `RunResult` with `streams` → summary and
//! JSON.
//!
//! Exit codes: 0 when the run completed (and `--expect` was met); 1 when a stated target was not met (`--expect`
//! above the answer, `--count` streams that missed the quality target while `--expect` was given, or a household
//! `--expect 2x2160p` answered no or not measured) or reads
//! or ingest writes failed; 2 for bad input or a set-up failure; 130 after Ctrl-C.

mod remote;

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use super::facts::{Gathered, gather, gather_untouched};
use super::library::{open_library, refuse_inside};
use super::observer::{ResultRecorder, on_loopback};
use super::output::{Ending, end_command, ended, print_display_quietly, print_written, result_skeleton};
use crate::cli::StreamsArgs;
use crate::plan::{Facts, Plan, ResourceLimits, RunOptions, StreamCount, TargetFacts, build_plan};
use crate::report::{Renderer, Summary};
use crate::results::{Answer, Measured, RunResult, RunStatus, TargetInfo, answer_from};
use crate::run::{INTERRUPTED_EXIT, Interrupt, ProgressLine, RunOutcome, execute, run_id};
use crate::spec::{Expectation, Household, JobSpec, PhaseSpec, SpecOrigin};
use crate::sysinfo::HostFacts;

pub fn run(args: StreamsArgs) -> Result<ExitCode> {
    if let Some(launcher) = super::cluster::launched_by() {
        // One rank of a multi-host run under mpirun or srun (docs/multi-host.md): viewers spread over the ranks.
        return super::cluster::run_ranks(super::cluster::RankCommand::Streams(&args), launcher);
    }
    let (site, plan) = plan_streams(&args)?;
    if args.output.dry_run {
        print_display_quietly(&plan);
        return Ok(ExitCode::SUCCESS);
    }
    super::output::say_plan(&args.output, &plan);
    check_outputs(&args)?;
    let interrupt = Interrupt::install().context("cannot install the Ctrl-C handler")?;
    let progress = ProgressLine::new(!args.output.quiet);
    let mut skeleton = site.skeleton(&plan);
    skeleton.notices.extend(site.remote_notice());
    for notice in &skeleton.notices {
        progress.notice(&format!("note: {notice}"));
    }
    let mut recorder = ResultRecorder::new(&plan, skeleton, args.output.json.clone(), None, progress);
    answer_expectation(&args, &mut recorder);
    let outcome = execute(&plan, &interrupt, args.keep, &mut recorder);
    let outcome = ended(&mut recorder, outcome)?;
    Ok(conclude(&mut recorder, &outcome, &args, &plan))
}

/// `--expect 2x2160p` asks about the one format streamed, with `--max` (it is answered from the capacity):
/// anything else is refused before any work.
fn streamed_household(args: &StreamsArgs, household: &Household) -> Result<()> {
    let Some(format) = args.bitrate.as_ref().filter(|_| args.max) else {
        bail!(
            "--expect {household}: a household is answered from the capacity of the format streamed; give --max and \
             --bitrate with that format (as in --bitrate 2160p --max --expect 2x2160p), or --expect N for a count"
        );
    };
    // By label and bitrate: 2160p and 2160p-hevc are one format.
    match household.0.iter().find(|(f, _)| (&f.label, f.bitrate) != (&format.label, format.bitrate)) {
        Some((other, _)) => bail!(
            "--expect {household}: this run streams {}, not {}; name only {} (as in 2x{}), or run streamcap check \
             --expect for a household of several formats",
            format.name,
            other.name,
            format.name,
            format.name
        ),
        None => Ok(()),
    }
}

/// `--expect 2x2160p`: the recorder answers the household every time it saves the result.
pub(super) fn answer_expectation(args: &StreamsArgs, recorder: &mut ResultRecorder) {
    if let Some(Expectation::Household(household)) = args.expect.clone() {
        recorder.on_save = Some(Box::new(move |result: &mut RunResult| answer_household(result, &household)));
    }
}

/// The household's answer from the search's answer so far (`not measured` until there is one).
fn answer_household(result: &mut RunResult, household: &Household) {
    let Some(streams) = result.streams.as_mut() else { return };
    let wanted: Vec<(String, u32)> = household.0.iter().map(|(f, n)| (f.name.clone(), *n)).collect();
    // Every name the household gives the streamed format (2160p, 2160p-hevc) reads the one capacity.
    let measured: Vec<Measured> = match &streams.capacity {
        Some(capacity) => {
            household.0.iter().map(|(f, _)| Measured { name: &f.name, label: &streams.label, capacity }).collect()
        }
        None => Vec::new(),
    };
    let answer = answer_from(&household.to_string(), &wanted, &measured, crate::streams::capacity::MARGIN);
    streams.household = Some(answer);
}

/// With the user's library: no output file may land inside it.
fn refuse_outputs_inside(args: &StreamsArgs, library: &Path) -> Result<()> {
    for (what, path) in args.output.files() {
        if let Some(path) = path {
            refuse_inside(path, library, what)?;
        }
    }
    Ok(())
}

/// The output files (and the history database) can be written, and none is the target or its media (nothing
/// is created yet).
pub(super) fn check_outputs(args: &StreamsArgs) -> Result<()> {
    let inputs: Vec<&std::path::Path> = std::iter::once(args.target()).chain(args.library.as_deref()).collect();
    super::outputs::check(&args.output.files(), &inputs, Some(&args.output.history))
}

/// Flags → one stream phase → the site's facts → the plan (nothing created yet; stale work of earlier runs
/// is cleared first, unless this is a dry run or the target is the user's library, where nothing is touched).
pub(super) fn plan_streams(args: &StreamsArgs) -> Result<(Site, Plan)> {
    if let Some(Expectation::Household(household)) = &args.expect {
        streamed_household(args, household)?;
    }
    let mut phase = args.to_phase_spec();
    let target = args.target();
    let (library, playlists) = match &args.library {
        Some(dir) => {
            let (canonical, media) = open_library(dir)?;
            let (media, playlists) = super::playlists::with_playlists(media)?;
            (Some((canonical, media)), playlists)
        }
        None => (None, Vec::new()),
    };
    if let (Some(streams), Some((canonical, _))) = (phase.streams_mut(), &library) {
        streams.library = Some(canonical.clone());
        refuse_outputs_inside(args, canonical)?;
    }
    let job = JobSpec {
        origin: SpecOrigin::Flags,
        target: Some(target.to_path_buf()),
        interval: None,
        phases: with_alone(phase),
        notices: super::playlists::buffered_notices(&playlists),
    };
    let touches_library =
        library.as_ref().is_some_and(|(lib, _)| std::fs::canonicalize(target).is_ok_and(|t| t.starts_with(lib)));
    if !args.output.dry_run && target.is_dir() && !touches_library {
        super::stale::clear(&[target], args.output.quiet);
    }
    crate::engine::set_insecure(args.insecure);
    let site = site(target, touches_library, args.served_from.as_deref())?;
    let mut facts = site.facts.clone();
    facts.media_libraries.extend(library);
    facts.playlists.extend(playlists);
    let kept = super::library::kept_choice(&mut facts, args.fresh_library, args.remove_library);
    let options = RunOptions { run_id: run_id(), library: kept, ..Default::default() };
    let plan = build_plan(&job, &facts, &options)?;
    Ok((site, plan))
}

/// The end of a run that executed: status and last save, the HTML report and the history, the summary, and the
/// exit code.
pub(super) fn conclude(
    recorder: &mut ResultRecorder,
    outcome: &RunOutcome,
    args: &StreamsArgs,
    plan: &Plan,
) -> ExitCode {
    // The status follows the phases: a step whose workers could not run (ENOMEM, threads) fails its phase.
    let ending = Ending::of(outcome, &args.output);
    let print = |result: &RunResult| {
        if result.streams.is_some() && !args.output.quiet {
            print_written(|out| Summary.render(result, out));
        }
    };
    let exit = |result: &RunResult| {
        if outcome.interrupted {
            return ExitCode::from(INTERRUPTED_EXIT as u8);
        }
        let count = plan.phases.iter().find_map(|p| p.streams()).map(|s| s.count);
        let fixed = match count {
            Some(StreamCount::Fixed(n)) => Some(n),
            _ => None,
        };
        let (code, why) = exit_code(result, args.expect.as_ref().and_then(Expectation::count), fixed);
        if let Some(why) = why {
            // Said even with --quiet: an exit code of 1 or 2 without its reason leaves a script guessing.
            super::output::say(&why);
        }
        ExitCode::from(code)
    };
    end_command(recorder, ending, print, exit)
}

/// 2 when a phase failed (its workers could not run), 1 when a stated target was missed or an I/O failed, 0
/// otherwise; with the sentence that says why when it is not 0. `fixed`: the count of a `--count` run.
fn exit_code(result: &RunResult, expect: Option<u32>, fixed: Option<u32>) -> (u8, Option<String>) {
    if let Some(phase) = result.phases.iter().find(|p| p.status == RunStatus::Failed) {
        let why = phase.failure.as_deref().unwrap_or("it did not run");
        return (2, Some(format!("error: '{}' failed: {why}", phase.name)));
    }
    let Some(streams) = &result.streams else {
        return (1, Some("no stream step ran, so there is no answer".into()));
    };
    let reads = streams.steps.iter().map(|s| s.errors).sum::<u64>();
    let writes = streams.steps.iter().filter_map(|s| s.ingest.as_ref()).map(|i| i.errors).sum::<u64>();
    if reads + writes > 0 {
        return (1, Some(format!("{reads} read(s) and {writes} ingest write(s) failed (see above)")));
    }
    let missed = match (expect, fixed, &streams.capacity) {
        (Some(n), Some(count), _) if count < n => Some(format!(
            "missed --expect {n}: this run played {count} streams (--count {count}), so it cannot show {n}; give \
             --count {n} or more, or --max to find the answer"
        )),
        (Some(n), Some(count), _) => streams
            .steps
            .iter()
            .find(|s| !s.meets_target)
            .map(|_| format!("missed --expect {n}: the {count} streams missed the quality target (see above)")),
        (Some(n), None, Some(answer)) if answer.streams < n => {
            Some(format!("missed --expect {n}: the largest count that met the quality target is {}", answer.streams))
        }
        _ => None,
    };
    let household = streams.household.as_ref().filter(|h| matches!(h.together, Answer::No | Answer::NotMeasured));
    match missed.or_else(|| household.map(|h| format!("--expect {}: {}", h.expect, h.words))) {
        Some(why) => (1, Some(why)),
        None => (0, None),
    }
}

/// `--during` with `--max`: the same search first without the loads, then with them, so that both capacities
/// are measured on the same media in one run (the second starts from the first's edge). A `--count` runs with
/// the loads only.
pub(super) fn with_alone(phase: PhaseSpec) -> Vec<PhaseSpec> {
    let during = phase.streams().and_then(|s| s.during.clone().filter(|_| s.max == Some(true)));
    let Some(during) = during else { return vec![phase] };
    let mut alone = phase.clone();
    if let Some(s) = alone.streams_mut() {
        s.during = None;
    }
    let loaded = PhaseSpec { name: Some(format!("streams during {during}")), ..phase };
    vec![alone, loaded]
}

/// Where a streams run happens: a local directory (gathered like any target) or remote URLs.
pub(super) struct Site {
    facts: Facts,
    pub(super) gathered: Option<Gathered>,
    /// Remote media: where its server is, and what is known of its disks.
    remote: Option<Remote>,
    pub(super) host: HostFacts,
    text: String,
}

/// `untouched`: the target is (inside) the user's library, where nothing may be created, not even for a probe.
/// `served_from`: a local web server's document root (`--served-from`), only with URLs.
fn site(target: &Path, untouched: bool, served_from: Option<&Path>) -> Result<Site> {
    if let Some(urls) = remote::remote_target(target)? {
        let (media, playlists) = remote::probe(&urls)?;
        let served_from = served_from.map(|dir| remote::served_from(dir, (&media, &playlists))).transpose()?;
        let text = target.display().to_string();
        let facts = Facts {
            target: TargetFacts::Remote { text: text.clone(), media },
            ram: crate::units::Bytes(0),
            io_uring: Err("not used for remote media".into()),
            memory_backed: None,
            throttles: Vec::new(),
            anchors: Vec::new(),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
            media_libraries: Vec::new(),
            playlists,
            limits: ResourceLimits { sockets: Some(super::facts::socket_limits()), ..super::facts::resource_limits() },
            mirrors: None,
            fuse: None,
            scrub: None,
            devices: Vec::new(),
            kept_library: None,
        };
        let on_loopback = urls.iter().all(|u| on_loopback(&u.host));
        let remote = Some(Remote { served_from, on_loopback });
        return Ok(Site { facts, gathered: None, remote, host: HostFacts::gather(), text });
    }
    if let Some(dir) = served_from {
        bail!(
            "--served-from {} names a web server's document root: it goes with an http:// target, not a local \
             directory",
            dir.display()
        );
    }
    let gathered = if untouched { gather_untouched(target)? } else { gather(target, false)? };
    if !matches!(gathered.facts.target, TargetFacts::Directory { .. }) {
        bail!("{} is not a directory: streams reads media under a directory (or from http:// URLs)", target.display());
    }
    let host = gathered.host.clone();
    Ok(Site {
        facts: gathered.facts.clone(),
        host,
        text: gathered.canonical.display().to_string(),
        gathered: Some(gathered),
        remote: None,
    })
}

/// A web server's side of remote media.
struct Remote {
    /// `--served-from`: the facts of its document root on this host (filesystem, devices, pool).
    served_from: Option<Gathered>,
    /// Every URL names this host's loopback.
    on_loopback: bool,
}

impl Site {
    /// What a remote run can see of the server's storage, said in the terminal and the result; `None` locally.
    pub(super) fn remote_notice(&self) -> Option<String> {
        let remote = self.remote.as_ref()?;
        Some(match (&remote.served_from, remote.on_loopback) {
            (Some(root), _) => format!(
                "the web server's document root {} is on this host: each step's viewer bytes are set beside what \
                 the devices beneath it read, so its page cache shows as cache-served",
                root.canonical.display()
            ),
            (None, true) => "the web server runs on this host, but its document root was not given: pass \
                             --served-from DIR to check each step against the devices beneath it (its page cache \
                             can serve the viewers unseen)"
                .into(),
            (None, false) => "the server is remote (http): its disks and its cache cannot be seen from here, so a \
                              count may describe its RAM; run streamcap on the server for device figures"
                .into(),
        })
    }

    /// Free space in a local target directory, when its filesystem says.
    pub(super) fn free(&self) -> Option<crate::units::Bytes> {
        super::cluster::free_in(&self.facts.target)
    }

    pub(super) fn skeleton(&self, plan: &crate::plan::Plan) -> RunResult {
        match &self.gathered {
            Some(gathered) => result_skeleton(plan, gathered),
            None => {
                let root = self.remote.as_ref().and_then(|r| r.served_from.as_ref());
                let target = match root {
                    Some(root) => TargetInfo {
                        path: self.text.clone(),
                        served_from: Some(root.canonical.display().to_string()),
                        ..root.target_info("http")
                    },
                    None => TargetInfo {
                        path: self.text.clone(),
                        kind: "http".into(),
                        served_from: None,
                        filesystem: None,
                        devices: Vec::new(),
                        pool: None,
                        memory_backed: None,
                        throttles: Vec::new(),
                        kept_library: None,
                    },
                };
                let config = serde_json::to_value(plan).unwrap_or_default();
                RunResult::started(self.host.clone(), target, config, plan.notices.clone())
            }
        }
    }
}
