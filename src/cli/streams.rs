//! The flags of `streamcap streams`, and how they become a stream phase (`StreamsSpec` in a `PhaseSpec`). Every
//! value is parsed by the spec's own parsers; defaults are not set here but in `streams::defaults`, where the
//! planner fills what was not said.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::spec::{
    Assignment, ChunkSize, Delivery, During, EngineChoice, Expectation, Format, IngestSpec, Mix, PhaseSpec, SpecKind,
    StreamsSpec,
};
use crate::units::{Bytes, parse_duration};

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    streamcap streams /srv/media --bitrate 2160p-hevc --count 20 --duration 60s\n  \
    streamcap streams /srv/media --bitrate 25Mbit --max --expect 30\n  \
    streamcap streams /srv/media --bitrate 2160p --player media3 --max --expect 2x2160p\n  \
    streamcap streams /srv/media --mix 1080p:70,2160p:30 --max --files library:200:zipf=1.1\n  \
    streamcap streams --library /srv/media/movies --bitrate 1080p --max      your own films, only read\n  \
    streamcap streams /srv/media --bitrate 1080p --count 8 --dry-run")]
pub struct StreamsArgs {
    /// Directory to test (streamcap writes a library of titles in TARGET/.streamcap and removes it afterwards),
    /// an http:// URL of a media file (fetched in paced byte ranges), or a file listing such URLs one per line.
    /// With --library it may be left out: the library's directory is the target.
    #[arg(required_unless_present = "library")]
    pub target: Option<PathBuf>,

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
    /// Or, with --max, a household as check --expect takes it (2x2160p: COUNTxFORMAT, the format streamed):
    /// answered yes, only without margin or no, with the margin; no exits with code 1.
    #[arg(long, value_name = "N|HOUSEHOLD", value_parser = parse_text::<Expectation>)]
    pub expect: Option<Expectation>,

    /// Playback judged once every viewer's buffer has been full, each step of --max too (default 60s).
    #[arg(long, value_parser = parse_duration, help_heading = "Viewers")]
    pub duration: Option<Duration>,
    /// Chunk per request: a size (1M, the default) or seconds of media (2s).
    #[arg(long, value_parser = parse_text::<ChunkSize>, help_heading = "Viewers")]
    pub chunk: Option<ChunkSize>,
    /// How a viewer's requests are shaped: direct (the default: reads, or ranged GETs, of --chunk or the
    /// player's request size) or hls[:SECONDS] (dash alike): one request per segment of SECONDS of media
    /// (default 6, Apple's guidance; Jellyfin cuts 3), a byte range of bitrate × SECONDS ÷ 8.
    #[arg(long, value_parser = parse_text::<Delivery>, value_name = "SHAPE", help_heading = "Viewers")]
    pub delivery: Option<Delivery>,
    /// Player buffer: media kept ahead of the playhead (default 10s).
    #[arg(long, value_parser = parse_duration, help_heading = "Viewers")]
    pub buffer: Option<Duration>,
    /// Player profile: its start threshold, forward buffer (seconds and bytes) and request size, unless
    /// --buffer/--prebuffer/--chunk say otherwise, and its audience (titles by popularity, seeks) unless
    /// --files/--seek-every do (default generic; docs/streams.md, "Player profiles").
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(crate::spec::players::NAMES), help_heading = "Viewers")]
    pub player: Option<String>,
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
    /// Which file each viewer reads: library (the default: a library of titles, each viewer its own title),
    /// library:N (N titles), library:zipf=S (titles by Zipf popularity, the hot set stated), or one or each (a
    /// test file per format or per viewer, bitrate × --media-length; --media-length alone means one).
    #[arg(long, value_parser = parse_text::<Assignment>, help_heading = "Viewers")]
    pub files: Option<Assignment>,
    /// Variable bitrate: each group of pictures (2 s of media) runs at up to ±PCT % of the mean bitrate, so
    /// its chunks cover less (or more) media. 0 to 90.
    #[arg(long, value_name = "PCT", help_heading = "Viewers")]
    pub vbr: Option<f64>,
    /// Seed of starts, positions, seeks and bitrate bursts.
    #[arg(long, help_heading = "Viewers")]
    pub seed: Option<u64>,

    /// Quality target: start-up within this (default 2s, or a --player's start threshold when longer); one stream in ten may take up to twice it.
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
    /// --max runs the edge it found N more times (the count that passed, then the one that failed; a count that
    /// disagrees searches again around it), once more when the runs split evenly, and answers with the median and
    /// the range (default 1; 0 to 5).
    #[arg(long, value_name = "N", help_heading = "Target")]
    pub confirm: Option<u32>,

    /// Read your own media: every video file under DIR (mkv, mp4, m4v, ts, m2ts, mov, avi, webm, …), each
    /// viewer its own file, read at the bitrate under test. Opened read-only; nothing is written or created
    /// under DIR.
    #[arg(long, visible_alias = "use-existing", value_name = "DIR", help_heading = "Media")]
    pub library: Option<PathBuf>,
    /// Size of the library of titles streamcap writes (default 8G, shrunk to half the free space; the plan says
    /// which caches it exceeds).
    #[arg(long, value_name = "SIZE", value_parser = parse_bytes, help_heading = "Media")]
    pub library_size: Option<Bytes>,
    /// Write a new media library even where the one an earlier run kept (DIR/.streamcap/library) would do;
    /// the new one is kept in its place. Without it, runs on one target read the same library, so they compare.
    #[arg(long, conflicts_with = "library", help_heading = "Media")]
    pub fresh_library: bool,
    /// Remove the media library after the run, the one an earlier run kept too: nothing stays under
    /// DIR/.streamcap (by default the library is kept for the next run, which reads it again).
    #[arg(long, conflicts_with = "library", help_heading = "Media")]
    pub remove_library: bool,
    /// For http:// media from a web server on this host: its document root, the directory the URLs' paths name
    /// files in. Each URL's file must be there with the same size; each step then sets the bytes the viewers
    /// received beside what the devices beneath DIR read, so the server's page cache shows as cache-served.
    #[arg(long, value_name = "DIR", help_heading = "Media")]
    pub served_from: Option<PathBuf>,
    /// For https:// media: accept the server's certificate without checking it (a self-signed or private-CA
    /// server). Without it the certificate must chain to a public root (Mozilla's list).
    #[arg(long, help_heading = "Media")]
    pub insecure: bool,
    /// Length of each test file of --files one or each; its size is bitrate × length (default 120s).
    #[arg(long, value_parser = parse_duration, help_heading = "Media")]
    pub media_length: Option<Duration>,
    /// Background writers while the viewers watch: RATE in all (50MB/s), over N writers (default 1), each
    /// writing a new file in the work directory (removed after each step). Local targets with test media only.
    #[arg(long, value_name = "RATE[:N]", value_parser = parse_text::<IngestSpec>, help_heading = "Media")]
    pub ingest: Option<IngestSpec>,
    /// The server's other work beside the viewers: library-scan, thumbnails, transcode, recording, scrub
    /// (comma-separated; shapes in docs/streams.md). With --max the search runs twice, alone and with the loads, and reports both
    /// capacities and each load's own rate; with --count the count runs with the loads.
    #[arg(long, value_name = "LOAD[,LOAD…]", value_parser = parse_text::<During>, help_heading = "Media")]
    pub during: Option<During>,
    /// Keep the run's work directory after the run (the test media per format of --files one or each). The
    /// library of titles is kept anyway, in TARGET/.streamcap/library, unless --remove-library.
    #[arg(long, help_heading = "Media")]
    pub keep: bool,
    /// Buffered reads through the page cache (default: direct I/O where the filesystem allows it).
    #[arg(long, help_heading = "Media")]
    pub buffered: bool,

    /// Scheduler threads (default: chosen by the plan: one per CPU for io_uring, one per viewer up to 256 for
    /// sync and on btrfs pools whose read policy picks a copy by thread).
    #[arg(long, help_heading = "Engine")]
    pub workers: Option<u32>,
    /// Reads in flight per scheduler thread at most (default 256; the sync engine keeps 1).
    #[arg(long, help_heading = "Engine")]
    pub inflight: Option<u32>,
    /// I/O engine: io_uring (or uring; the default where available), sync (or psync: one read in flight per
    /// scheduler thread) or null (reads nothing: streamcap's own cost).
    #[arg(long, value_parser = crate::cli::parse_engine, help_heading = "Engine")]
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

    #[command(flatten)]
    pub output: crate::cli::OutputArgs,
}

impl StreamsArgs {
    /// The directory (or URL text) the run is about: TARGET, or the library's directory when TARGET is left out.
    pub fn target(&self) -> &std::path::Path {
        match (&self.target, &self.library) {
            (Some(target), _) => target,
            (None, Some(library)) => library,
            (None, None) => std::path::Path::new("."),
        }
    }

    /// The flags as one stream phase.
    pub fn to_phase_spec(&self) -> PhaseSpec {
        let streams = StreamsSpec {
            format: self.bitrate.clone(),
            mix: self.mix.clone(),
            count: self.count,
            max: self.max.then_some(true),
            expect: self.expect.as_ref().and_then(Expectation::count),
            duration: self.duration,
            chunk: self.chunk,
            delivery: self.delivery,
            buffer: self.buffer,
            prebuffer: self.prebuffer,
            player: self.player.clone(),
            ramp: self.ramp,
            steady_within: self.steady_within,
            seek_every: self.seek_every,
            files: self.files,
            vbr: self.vbr,
            max_startup: self.max_startup,
            max_stalled: self.max_stalled,
            limit: self.limit,
            precision: self.precision,
            library: self.library.clone(),
            library_size: self.library_size,
            confirmations: self.confirm,
            media_length: self.media_length,
            ingest: self.ingest,
            during: self.during.clone(),
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
            kind: Some(SpecKind::Streams(Box::new(streams))),
            ..PhaseSpec::default()
        }
    }
}

fn parse_text<T: std::str::FromStr<Err = String>>(s: &str) -> Result<T, String> {
    s.parse()
}

fn parse_bytes(s: &str) -> Result<Bytes, String> {
    Bytes::parse(s).map_err(|e| e.to_string())
}

fn parse_percent(s: &str) -> Result<f64, String> {
    s.trim_end_matches('%').parse::<f64>().map_err(|_| format!("'{s}' is not a percentage"))
}
