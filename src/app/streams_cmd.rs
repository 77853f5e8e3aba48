//! `streamcap streams`: flags → `StreamsConfig` → test media (or the user's) → one drive per count (`--count`)
//! or the capacity search (`--max`) → `RunResult` with `streams` → summary and JSON.
//!
//! Exit codes: 0 when the run completed (and `--expect` was met); 1 when a stated target was not met (`--expect`
//! above the answer, or `--count` streams that missed the quality target while `--expect` was given) or reads
//! failed; 2 for bad input or a set-up failure; 130 after Ctrl-C.
//!
//! The media are prepared in `streams_media`; steps and the capacity search (also used by `streamcap check`) are
//! in `streams_steps`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;

use super::facts::{gather, resource_limits};
use super::run_cmd::print_quietly;
use super::streams_estimate::{compare, estimate, measure_raw};
use super::streams_http::{NO_DEVICES, remote_media, remote_target};
use super::streams_ingest::IngestSpec;
use super::streams_media::{Media, Site, prepare_media};
use super::streams_steps::{StepRunner, find_capacity};
use crate::engine::EngineKind;
use crate::report::write_streams_summary;
use crate::results::{
    FormatShare, QualityTarget, RunResult, RunStatus, StreamsResult, TargetInfo, rfc3339, write_result_atomically,
};
use crate::run::{INTERRUPTED_EXIT, Interrupt};
use crate::streams::limits::{StreamsRequest, check_request};
use crate::streams::{Assignment, ChunkSize, Format, Mix, SearchSettings, StreamsConfig, defaults};
use crate::sysinfo::HostFacts;
use crate::units::{Bytes, parse_duration};

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    streamcap streams /srv/media --bitrate 2160p-hevc --count 20 --duration 60s\n  \
    streamcap streams /srv/media --bitrate 25Mbit --max --expect 30\n  \
    streamcap streams /srv/media --mix 1080p:70,2160p:30 --max --files library:200:zipf=1.1\n  \
    streamcap streams /srv/media --use-existing /srv/media/movies --bitrate 1080p --count 8")]
pub struct StreamsArgs {
    /// Directory to test (streamcap writes its test media in TARGET/.streamcap and removes it afterwards), an
    /// http:// URL of a media file (fetched in paced byte ranges), or a file listing such URLs one per line.
    pub target: PathBuf,

    /// Stream bitrate (25Mbit, 8Mbps) or a named format (720p, 1080p, 1080p-remux, 2160p-hevc, 2160p-remux,
    /// prores-1080p, prores-2160p; see docs/streams.md).
    #[arg(long, value_parser = Format::parse, required_unless_present = "mix", conflicts_with = "mix")]
    pub bitrate: Option<Format>,
    /// A mix of formats with weights: 1080p:70,2160p:30.
    #[arg(long, value_parser = parse_mix)]
    pub mix: Option<Mix>,
    /// Number of concurrent viewers.
    #[arg(long, required_unless_present = "max", conflicts_with = "max")]
    pub count: Option<u32>,
    /// Find the largest count that meets the quality target (ramp, then bisect).
    #[arg(long)]
    pub max: bool,
    /// With --max: exit with code 1 when the answer is below N. With --count: when the count missed the target.
    #[arg(long, value_name = "N")]
    pub expect: Option<u32>,

    /// Wall time each viewer watches (each step of --max too).
    #[arg(long, value_parser = parse_duration, default_value = "60s", help_heading = "Viewers")]
    pub duration: Duration,
    /// Chunk per request: a size (1M) or seconds of media (2s).
    #[arg(long, value_parser = parse_chunk, default_value = "1M", help_heading = "Viewers")]
    pub chunk: ChunkSize,
    /// Player buffer (media kept ahead of the playhead).
    #[arg(long, value_parser = parse_duration, default_value = "10s", help_heading = "Viewers")]
    pub buffer: Duration,
    /// Media needed before playback starts (and after a stall or a seek).
    #[arg(long, value_parser = parse_duration, default_value = "2s", help_heading = "Viewers")]
    pub prebuffer: Duration,
    /// Spread the viewers' starts over this time (default: 50 ms per viewer, at most 5 s).
    #[arg(long, value_parser = parse_duration, help_heading = "Viewers")]
    pub ramp: Option<Duration>,
    /// Each viewer seeks to a random position every TIME on average.
    #[arg(long, value_parser = parse_duration, value_name = "TIME", help_heading = "Viewers")]
    pub seek_every: Option<Duration>,
    /// Which file each viewer reads: one, each, library:N or library:N:zipf=S.
    #[arg(long, default_value = "one", help_heading = "Viewers")]
    pub files: Assignment,
    /// Variable bitrate: each group of pictures (2 s of media) runs at up to ±PCT % of the mean bitrate, so
    /// its chunks cover less (or more) media. 0 to 90.
    #[arg(long, value_name = "PCT", value_parser = parse_vbr, help_heading = "Viewers")]
    pub vbr: Option<f64>,
    /// Seed of starts, positions, seeks and bitrate bursts.
    #[arg(long, default_value_t = defaults::SEED, help_heading = "Viewers")]
    pub seed: u64,

    /// Quality target: start-up within this for every stream.
    #[arg(long, value_parser = parse_duration, default_value = "2s", help_heading = "Target")]
    pub max_startup: Duration,
    /// Quality target: at most this many streams may stall.
    #[arg(long, default_value_t = 0, help_heading = "Target")]
    pub max_stalled: u32,
    /// --max never tries more streams than this.
    #[arg(long, default_value_t = 10_000, help_heading = "Target")]
    pub limit: u32,
    /// --max stops bisecting when the gap between a passing and a failing count is within this percentage of
    /// the passing count (fewer steps with a larger figure).
    #[arg(long, value_name = "PERCENT", default_value_t = 3.0, value_parser = parse_precision, help_heading = "Target")]
    pub precision: f64,

    /// Read the user's media files in DIR (never written) instead of writing test media.
    #[arg(long, value_name = "DIR", help_heading = "Media")]
    pub use_existing: Option<PathBuf>,
    /// Length of each test media file (its size is bitrate × length).
    #[arg(long, value_parser = parse_duration, default_value = "120s", help_heading = "Media")]
    pub media_length: Duration,
    /// Background writers while the viewers watch: RATE in all (50MB/s), over N writers (default 1), each
    /// writing a new file in the work directory (removed after each step). Local targets with test media only.
    #[arg(long, value_name = "RATE[:N]", help_heading = "Media")]
    pub ingest: Option<IngestSpec>,
    /// Keep the test media after the run.
    #[arg(long, help_heading = "Media")]
    pub keep: bool,
    /// Buffered reads through the page cache (default: direct I/O where the filesystem allows it).
    #[arg(long, help_heading = "Media")]
    pub buffered: bool,

    /// Scheduler threads (default: one per CPU).
    #[arg(long, help_heading = "Engine")]
    pub workers: Option<usize>,
    /// Reads in flight per scheduler thread at most.
    #[arg(long, default_value_t = defaults::SLOTS_PER_WORKER, help_heading = "Engine")]
    pub inflight: u32,
    /// I/O engine: io_uring or sync.
    #[arg(long, value_parser = parse_engine, default_value = "io_uring", help_heading = "Engine")]
    pub engine: EngineKind,

    /// Measure the raw rates and print the estimate beside the measurement (default with --max).
    #[arg(long, conflicts_with = "no_estimate", help_heading = "Estimate")]
    pub estimate: bool,
    /// Skip the raw-rate measurement with --max.
    #[arg(long, help_heading = "Estimate")]
    pub no_estimate: bool,
    /// Time of each raw-rate measurement (random reads at the chunk size, then sequential reads).
    #[arg(long, value_parser = parse_duration, default_value = "5s", help_heading = "Estimate")]
    pub estimate_time: Duration,

    /// Write the result as JSON (rewritten after every step).
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub json: Option<PathBuf>,
    /// Write the self-contained HTML report (capacity charts, facts, configuration) to FILE at the end.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub html: Option<PathBuf>,
    /// No progress and no summary.
    #[arg(long, short, help_heading = "Output")]
    pub quiet: bool,
}

fn parse_mix(s: &str) -> Result<Mix, String> {
    s.parse()
}

fn parse_precision(s: &str) -> Result<f64, String> {
    match s.trim_end_matches('%').parse::<f64>() {
        Ok(p) if (0.0..=50.0).contains(&p) => Ok(p),
        _ => Err(format!("a precision of {s} is out of range: give a percentage from 0 to 50")),
    }
}

fn parse_chunk(s: &str) -> Result<ChunkSize, String> {
    let t = s.trim();
    if t.ends_with("ms") || (t.ends_with('s') && !t.ends_with("/s")) {
        let d = parse_duration(t).map_err(|e| e.to_string())?;
        if d.is_zero() {
            return Err("a chunk of 0 s of media fetches nothing".into());
        }
        return Ok(ChunkSize::Media(d));
    }
    let bytes = Bytes::parse(t).map_err(|e| e.to_string())?;
    if bytes.0 == 0 || bytes.0 > 64 << 20 {
        return Err(format!("a chunk of {bytes} is out of range: give 4k to 64M, or seconds of media (2s)"));
    }
    Ok(ChunkSize::Bytes(bytes.0))
}

fn parse_vbr(s: &str) -> Result<f64, String> {
    let pct: f64 = s.trim().trim_end_matches('%').parse().map_err(|_| format!("'{s}' is not a percentage"))?;
    if !(0.0..=90.0).contains(&pct) {
        return Err(format!("--vbr {pct} is out of range: give 0 to 90 (percent of the mean bitrate)"));
    }
    Ok(pct)
}

fn parse_engine(s: &str) -> Result<EngineKind, String> {
    match s {
        "io_uring" | "uring" => Ok(EngineKind::IoUring),
        "sync" => Ok(EngineKind::Sync),
        _ => Err(format!("'{s}' is not an engine for streams: io_uring or sync")),
    }
}

impl StreamsArgs {
    pub fn config(&self) -> StreamsConfig {
        let mix = match (&self.mix, &self.bitrate) {
            (Some(mix), _) => mix.clone(),
            (None, Some(format)) => Mix(vec![(format.clone(), 1)]),
            (None, None) => unreachable!("clap requires --bitrate or --mix"),
        };
        StreamsConfig {
            mix,
            chunk: self.chunk,
            buffer: self.buffer,
            prebuffer: self.prebuffer,
            watch: self.duration,
            ramp: self.ramp,
            seek_every: self.seek_every,
            assignment: self.files,
            media_length: self.media_length,
            seed: self.seed,
            vbr: self.vbr.map(|pct| pct / 100.0),
        }
    }

    fn target(&self) -> QualityTarget {
        QualityTarget { max_stalled_streams: self.max_stalled, max_startup_s: self.max_startup.as_secs_f64() }
    }
}

pub fn run(args: StreamsArgs) -> Result<ExitCode> {
    if let Some(path) = &args.json {
        super::run_cmd::check_writable_parent(path)?;
    }
    let config = args.config();
    if let Some(path) = &args.html {
        super::run_cmd::check_output("--html", path)?;
    }
    let request = StreamsRequest {
        viewers: args.count.unwrap_or(args.limit),
        search: args.count.is_none(),
        workers: args.workers.unwrap_or_else(default_workers),
        inflight: args.inflight,
        ingest_writers: args.ingest.map_or(0, |i| i.writers),
    };
    check_request(&config, &request, &resource_limits()).map_err(anyhow::Error::msg)?;
    if args.prebuffer > args.buffer {
        bail!(
            "--prebuffer ({:?}) is larger than --buffer ({:?}): the player could never start",
            args.prebuffer,
            args.buffer
        );
    }
    if args.max && matches!(config.assignment, Assignment::Each) {
        bail!("--files each with --max would need a file per viewer at every count: use --files library:N");
    }
    if args.count == Some(0) {
        bail!("--count must be at least 1");
    }
    let existing = args.use_existing.as_deref();
    let remote = remote_target(&args.target)?;
    if args.ingest.is_some() && (remote.is_some() || existing.is_some()) {
        bail!(
            "--ingest writes in streamcap's work directory on a local target: not with an http target or --use-existing"
        );
    }
    if remote.is_some() && (existing.is_some() || args.estimate) {
        bail!("--use-existing and --estimate need a local target; an http target is the media itself");
    }
    let gathered = match remote {
        Some(_) => None,
        None => {
            let gathered = gather(&args.target, existing.is_none())?;
            if !args.target.is_dir() {
                bail!("{} is not a directory: streams reads media under a directory", args.target.display());
            }
            Some(gathered)
        }
    };
    let interrupt = Interrupt::install().context("cannot install the Ctrl-C handler")?;
    let flag = interrupt.flag();
    let keys = config.media_needed(args.count.unwrap_or(args.limit));
    let say = |text: &str| {
        if !args.quiet {
            eprintln!("{text}");
        }
    };
    let mut notices = Vec::new();
    let (mut media, site) = match (&remote, &gathered) {
        (Some(urls), _) => {
            say(&format!("probing {} URL(s)…", urls.len()));
            let media = Media::remote(remote_media(urls, &config)?, keys);
            notices.push(NO_DEVICES.to_string());
            say(&format!("note: {NO_DEVICES}"));
            let site = Site {
                host: HostFacts::gather(),
                target: TargetInfo {
                    path: args.target.display().to_string(),
                    kind: "http".into(),
                    filesystem: None,
                    devices: Vec::new(),
                    pool: None,
                    memory_backed: None,
                },
                memory_backed: None,
            };
            (media, site)
        }
        (None, Some(gathered)) => {
            if existing.is_none() {
                let total: u64 = keys.iter().map(|k| config.media_bytes(k.format)).sum();
                say(&format!("writing {} of test media in {} file(s)…", Bytes(total), keys.len()));
            }
            let media = prepare_media(&gathered.canonical, &config, keys, existing, args.buffered, args.keep, &flag)?;
            if !media.direct && !args.buffered {
                notices.push("direct I/O is not available here: reads go through the page cache".to_string());
            }
            if let Some(why) = &gathered.facts.memory_backed {
                notices.push(format!("the media lives in RAM: {why}"));
            }
            (media, Site::local(gathered))
        }
        (None, None) => unreachable!("a local target is gathered above"),
    };
    let devices: Vec<(String, String)> = site.target.devices.iter().map(|d| (d.name.clone(), d.role.clone())).collect();
    let runner = StepRunner {
        config: &config,
        media: &media,
        engine: args.engine,
        workers: request.workers,
        inflight: args.inflight,
        target: args.target(),
        devices,
        interrupted: &flag,
        ingest: args.ingest,
    };
    let mut result = skeleton(&site, &args, &config, &media, notices);
    let save = |result: &RunResult| {
        if let Some(path) = &args.json
            && let Err(e) = write_result_atomically(result, path)
        {
            eprintln!("warning: cannot write {}: {e}", path.display());
        }
    };
    save(&result);
    let mut exit = ExitCode::SUCCESS;
    let memory_backed = site.memory_backed.is_some();
    if ((args.max && !args.no_estimate) || args.estimate) && remote.is_none() {
        say(&format!("measuring raw read rates for the estimate ({:?} each)…", args.estimate_time));
        let chunk = config.chunk_bytes(0);
        let rates = measure_raw(&media.files[0].path, chunk, media.direct, &interrupt, args.estimate_time)?;
        streams_mut(&mut result).estimate = Some(estimate(rates, &config));
    }
    if let Some(count) = args.count {
        say(&format!("{count} viewers of {} for {:?}…", config.mix.label(), args.duration));
        let step = runner.measure(count)?;
        if let Some(n) = args.expect
            && (!step.meets_target || count < n)
        {
            exit = ExitCode::from(1);
        }
        if step.errors > 0 {
            exit = ExitCode::from(1);
        }
        streams_mut(&mut result).steps.push(step);
    } else {
        // Start the ramp at half the estimate: it usually passes, and the next doubling brackets the answer.
        let start = result.streams.as_ref().and_then(|s| s.estimate.as_ref()).map_or(4, |e| (e.streams / 2).max(1));
        let settings = SearchSettings { start, limit: args.limit.max(1), precision: args.precision / 100.0 };
        let mut partial = result.clone();
        let (answer, steps) = find_capacity(&runner, settings, &mut |step| {
            say(&format!(
                "  {:>6} streams: {} stalled, stall ratio {:.4}, lateness p99 {:.1} ms{}",
                step.count,
                step.streams_stalled,
                step.stall_ratio,
                step.lateness.at(99.0).unwrap_or(0) as f64 / 1e6,
                if step.meets_target { "  ok" } else { "  missed" }
            ));
            streams_mut(&mut partial).steps.push(step.clone());
            save(&partial);
        })?;
        if args.expect.is_some_and(|n| answer.streams < n) {
            exit = ExitCode::from(1);
        }
        let streams = streams_mut(&mut result);
        streams.steps = steps;
        streams.capacity = Some(answer);
    }
    let measured = {
        let streams = streams_mut(&mut result);
        streams
            .capacity
            .as_ref()
            .map(|c| c.streams)
            .or(args.count.filter(|_| streams.steps.iter().all(|s| s.meets_target)))
    };
    if let (Some(e), Some(n)) = (streams_mut(&mut result).estimate.as_mut(), measured) {
        compare(e, n, memory_backed);
    }
    let interrupted = interrupt.is_set();
    result.status = if interrupted { RunStatus::Interrupted } else { RunStatus::Completed };
    result.finished_at = Some(rfc3339(std::time::SystemTime::now()));
    let cleanup = media.remove();
    save(&result);
    super::report::html_after_run(&result, args.html.as_deref());
    if !args.quiet {
        let mut text = Vec::new();
        let streams = result.streams.as_ref().expect("set above");
        write_streams_summary(&mut text, &result, streams).expect("writing to a Vec cannot fail");
        print_quietly(&String::from_utf8_lossy(&text));
    }
    if let Err(e) = cleanup {
        eprintln!("Error: {e:#}; remove it by hand");
        return Ok(ExitCode::from(2));
    }
    if interrupted {
        return Ok(ExitCode::from(INTERRUPTED_EXIT as u8));
    }
    Ok(exit)
}

/// One scheduler thread per CPU.
fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn streams_mut(result: &mut RunResult) -> &mut StreamsResult {
    result.streams.as_mut().expect("a streams result has its streams part")
}

fn skeleton(site: &Site, args: &StreamsArgs, config: &StreamsConfig, media: &Media, notices: Vec<String>) -> RunResult {
    let total_weight: u32 = config.mix.0.iter().map(|(_, w)| w).sum();
    let assignment = match config.assignment {
        Assignment::One => "one".to_string(),
        Assignment::Each => "each".to_string(),
        Assignment::Library { files, theta } => format!("library:{files}:zipf={theta}"),
    };
    let streams = StreamsResult {
        label: config.mix.label(),
        formats: config
            .mix
            .0
            .iter()
            .map(|(f, w)| FormatShare {
                name: f.name.clone(),
                bitrate_bps: f.bitrate.bits_per_sec(),
                share_pct: f64::from(*w) * 100.0 / f64::from(total_weight),
            })
            .collect(),
        chunk_bytes: config.chunk_bytes(0),
        buffer_s: config.buffer.as_secs_f64(),
        prebuffer_s: config.prebuffer.as_secs_f64(),
        watch_s: config.watch.as_secs_f64(),
        assignment,
        seek_every_s: config.seek_every.map(|d| d.as_secs_f64()),
        vbr_pct: config.vbr.map(|x| x * 100.0),
        own_media: media.own,
        media_files: media.files.len(),
        media_bytes: media.files.iter().map(|f| f.size).sum(),
        direct: media.direct,
        target: args.target(),
        steps: Vec::new(),
        capacity: None,
        estimate: None,
    };
    let config = serde_json::json!({
        "command": "streams",
        "engine": args.engine.name(),
        "inflight_per_worker": args.inflight,
        "slot_buffer_bytes": (0..config.mix.0.len())
            .map(|f| config.chunk_bytes(f))
            .max()
            .unwrap_or(0)
            .min(defaults::SLOT_BUFFER_MAX as u64),
        "media_length_s": config.media_length.as_secs_f64(),
        "ramp_s": args.ramp.map(|d| d.as_secs_f64()),
        "seed": config.seed,
        "limit": args.limit,
        "precision_pct": args.precision,
    });
    let mut result = RunResult::started(site.host.clone(), site.target.clone(), config, notices);
    result.streams = Some(streams);
    result
}
