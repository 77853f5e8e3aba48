//! The flags of `streamcap streams`, and how they become a stream phase (`StreamsSpec` in a `PhaseSpec`). Every
//! value is parsed by the spec's own parsers; defaults are not set here but in `streams::defaults`, where the
//! planner fills what was not said.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::spec::{Assignment, ChunkSize, EngineChoice, Format, IngestSpec, Mix, PhaseSpec, StreamsSpec};
use crate::units::parse_duration;

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    streamcap streams /srv/media --bitrate 2160p-hevc --count 20 --duration 60s\n  \
    streamcap streams /srv/media --bitrate 25Mbit --max --expect 30\n  \
    streamcap streams /srv/media --mix 1080p:70,2160p:30 --max --files library:200:zipf=1.1\n  \
    streamcap streams /srv/media --use-existing /srv/media/movies --bitrate 1080p --count 8\n  \
    streamcap streams /srv/media --bitrate 1080p --count 8 --dry-run")]
pub struct StreamsArgs {
    /// Directory to test (streamcap writes its test media in TARGET/.streamcap and removes it afterwards), an
    /// http:// URL of a media file (fetched in paced byte ranges), or a file listing such URLs one per line.
    pub target: PathBuf,

    /// Stream bitrate (25Mbit, 8Mbps) or a named format (720p, 1080p, 1080p-remux, 2160p-hevc, 2160p-remux,
    /// prores-1080p, prores-2160p; see docs/streams.md).
    #[arg(long, value_parser = Format::parse, required_unless_present = "mix", conflicts_with = "mix")]
    pub bitrate: Option<Format>,
    /// A mix of formats with weights: 1080p:70,2160p:30.
    #[arg(long, value_parser = parse_text::<Mix>)]
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

    /// Playback judged once every viewer's buffer has been full, each step of --max too (default 60s).
    #[arg(long, value_parser = parse_duration, help_heading = "Viewers")]
    pub duration: Option<Duration>,
    /// Chunk per request: a size (1M, the default) or seconds of media (2s).
    #[arg(long, value_parser = parse_text::<ChunkSize>, help_heading = "Viewers")]
    pub chunk: Option<ChunkSize>,
    /// Player buffer: media kept ahead of the playhead (default 10s).
    #[arg(long, value_parser = parse_duration, help_heading = "Viewers")]
    pub buffer: Option<Duration>,
    /// Media needed before playback starts, and after a stall or a seek (default 2s).
    #[arg(long, value_parser = parse_duration, help_heading = "Viewers")]
    pub prebuffer: Option<Duration>,
    /// Viewers arrive about one a second (Poisson) over at most this window (default 30s).
    #[arg(long, value_parser = parse_duration, help_heading = "Viewers")]
    pub ramp: Option<Duration>,
    /// Each viewer must fill its buffer (reach steady state) within TIME of arriving (default 30s).
    #[arg(long, value_parser = parse_duration, value_name = "TIME", help_heading = "Viewers")]
    pub steady_within: Option<Duration>,
    /// Each viewer seeks to a random position every TIME on average.
    #[arg(long, value_parser = parse_duration, value_name = "TIME", help_heading = "Viewers")]
    pub seek_every: Option<Duration>,
    /// Which file each viewer reads: one (the default), each, library:N or library:N:zipf=S.
    #[arg(long, value_parser = parse_text::<Assignment>, help_heading = "Viewers")]
    pub files: Option<Assignment>,
    /// Variable bitrate: each group of pictures (2 s of media) runs at up to ±PCT % of the mean bitrate, so
    /// its chunks cover less (or more) media. 0 to 90.
    #[arg(long, value_name = "PCT", help_heading = "Viewers")]
    pub vbr: Option<f64>,
    /// Seed of starts, positions, seeks and bitrate bursts.
    #[arg(long, help_heading = "Viewers")]
    pub seed: Option<u64>,

    /// Quality target: start-up within this for every stream (default 2s).
    #[arg(long, value_parser = parse_duration, help_heading = "Target")]
    pub max_startup: Option<Duration>,
    /// Quality target: at most this many streams may stall (default 0).
    #[arg(long, help_heading = "Target")]
    pub max_stalled: Option<u32>,
    /// --max never tries more streams than this (default 10000).
    #[arg(long, help_heading = "Target")]
    pub limit: Option<u32>,
    /// --max stops bisecting when the gap between a passing and a failing count is within this percentage of
    /// the passing count (default 3; fewer steps with a larger figure).
    #[arg(long, value_name = "PERCENT", value_parser = parse_percent, help_heading = "Target")]
    pub precision: Option<f64>,

    /// Read the user's media files in DIR (never written) instead of writing test media.
    #[arg(long, value_name = "DIR", help_heading = "Media")]
    pub use_existing: Option<PathBuf>,
    /// Length of each test media file; its size is bitrate × length (default 120s).
    #[arg(long, value_parser = parse_duration, help_heading = "Media")]
    pub media_length: Option<Duration>,
    /// Background writers while the viewers watch: RATE in all (50MB/s), over N writers (default 1), each
    /// writing a new file in the work directory (removed after each step). Local targets with test media only.
    #[arg(long, value_name = "RATE[:N]", value_parser = parse_text::<IngestSpec>, help_heading = "Media")]
    pub ingest: Option<IngestSpec>,
    /// Keep the test media after the run.
    #[arg(long, help_heading = "Media")]
    pub keep: bool,
    /// Buffered reads through the page cache (default: direct I/O where the filesystem allows it).
    #[arg(long, help_heading = "Media")]
    pub buffered: bool,

    /// Scheduler threads (default: one per CPU).
    #[arg(long, help_heading = "Engine")]
    pub workers: Option<u32>,
    /// Reads in flight per scheduler thread at most (default 256; the sync engine keeps 1).
    #[arg(long, help_heading = "Engine")]
    pub inflight: Option<u32>,
    /// I/O engine: io_uring (the default where available), sync, or null (reads nothing: streamcap's own cost).
    #[arg(long, value_parser = parse_engine, help_heading = "Engine")]
    pub engine: Option<EngineChoice>,

    /// Measure the raw rates and print the estimate beside the measurement (default with --max).
    #[arg(long, conflicts_with = "no_estimate", help_heading = "Estimate")]
    pub estimate: bool,
    /// Skip the raw-rate measurement with --max.
    #[arg(long, help_heading = "Estimate")]
    pub no_estimate: bool,
    /// Time of each raw-rate measurement: random reads at the chunk size, then sequential reads (default 5s).
    #[arg(long, value_parser = parse_duration, help_heading = "Estimate")]
    pub estimate_time: Option<Duration>,

    /// Write the result as JSON (rewritten after every step).
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub json: Option<PathBuf>,
    /// Write the self-contained HTML report (capacity charts, facts, configuration) to FILE at the end.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub html: Option<PathBuf>,
    /// No progress and no summary.
    #[arg(long, short, help_heading = "Output")]
    pub quiet: bool,
    /// Print the expanded plan and do nothing.
    #[arg(long, help_heading = "Output")]
    pub dry_run: bool,
    #[command(flatten)]
    pub history: crate::cli::HistoryOptions,
}

impl StreamsArgs {
    /// The flags as one stream phase.
    pub fn to_phase_spec(&self) -> PhaseSpec {
        let streams = StreamsSpec {
            format: self.bitrate.clone(),
            mix: self.mix.clone(),
            count: self.count,
            max: self.max.then_some(true),
            expect: self.expect,
            duration: self.duration,
            chunk: self.chunk,
            buffer: self.buffer,
            prebuffer: self.prebuffer,
            ramp: self.ramp,
            steady_within: self.steady_within,
            seek_every: self.seek_every,
            files: self.files,
            vbr: self.vbr,
            max_startup: self.max_startup,
            max_stalled: self.max_stalled,
            limit: self.limit,
            precision: self.precision,
            use_existing: self.use_existing.clone(),
            media_length: self.media_length,
            ingest: self.ingest,
            workers: self.workers,
            inflight: self.inflight,
            estimate: match (self.estimate, self.no_estimate) {
                (true, _) => Some(true),
                (_, true) => Some(false),
                _ => None,
            },
            estimate_time: self.estimate_time,
            ..StreamsSpec::default()
        };
        PhaseSpec {
            name: Some("streams".into()),
            seed: self.seed,
            engine: self.engine,
            direct: self.buffered.then_some(false),
            streams: Some(Box::new(streams)),
            ..PhaseSpec::default()
        }
    }
}

fn parse_text<T: std::str::FromStr<Err = String>>(s: &str) -> Result<T, String> {
    s.parse()
}

fn parse_percent(s: &str) -> Result<f64, String> {
    s.trim_end_matches('%').parse::<f64>().map_err(|_| format!("'{s}' is not a percentage"))
}

fn parse_engine(s: &str) -> Result<EngineChoice, String> {
    match s {
        "io_uring" | "uring" => Ok(EngineChoice::IoUring),
        "sync" => Ok(EngineChoice::Sync),
        "null" => Ok(EngineChoice::Null),
        _ => Err(format!("'{s}' is not an engine for streams: io_uring, sync or null")),
    }
}
