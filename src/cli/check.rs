//! The flags of `streamcap check`.

use std::path::PathBuf;

use clap::Args;

use crate::spec::EngineChoice;
use crate::units::Bytes;

#[derive(Debug, Args)]
#[command(mut_arg("html", |html| html.conflicts_with("no_html").help(
    "Write the HTML report to FILE (default: beside the JSON as NAME.html, or streamcap-check-HOST-TIME.html in \
     the current directory). `-`: standard output")))]
#[command(after_help = "Examples:\n  \
    streamcap check                         the storage under the current directory, about four minutes\n  \
    streamcap check /srv/media --quick      about a minute (longer where the disk serves a thousand streams)\n  \
    streamcap check /srv/media --thorough --json check.json\n  \
    streamcap check /srv/media --quick --format markdown   tables to paste into a forum post\n  \
    streamcap check /srv/media --dry-run    the plan, and nothing done\n  \
    streamcap check /srv/media --expect 1x2160p-remux,2x1080p   will it work for this household\n  \
    streamcap check /srv/scratch --library /srv/media   the most honest check: viewers read your own films\n\n\
What is written where: everything under DIR/.streamcap: the raw data set and the small files, removed at the\n\
end, and without --library the generated media library, kept in DIR/.streamcap/library for the next check\n\
(--remove-library removes it); the HTML report beside --json or in the current directory. With --library, the files under the library are opened read-only and nothing is created there.")]
pub struct CheckArgs {
    /// Directory on the storage to check (default: the current directory). streamcap writes only under
    /// DIR/.streamcap and removes it afterwards, but for the media library it keeps for the next check. With --library, DIR is the scratch space of the raw and
    /// small-file phases: give one on the library's filesystem, outside the library.
    pub dir: Option<PathBuf>,
    /// Viewers read your own media: every video file under LIBRARY (mkv, mp4, m4v, ts, m2ts, mov, avi, webm,
    /// …), each read at the bitrate of the format under test. The files are opened read-only (O_RDONLY, O_DIRECT
    /// where the filesystem allows it); nothing is written or created under LIBRARY.
    #[arg(long, value_name = "LIBRARY")]
    pub library: Option<PathBuf>,
    /// Size of the media library streamcap writes when there is no --library (default: 2G with --quick, 8G,
    /// 32G with --thorough; at most half the free space beside the data set).
    #[arg(long, value_name = "SIZE", value_parser = parse_bytes, conflicts_with = "library")]
    pub library_size: Option<Bytes>,
    /// Write a new media library even where the one an earlier check kept (DIR/.streamcap/library) would do;
    /// the new one is kept in its place. Without it, checks of one target read the same library, so they compare.
    #[arg(long, conflicts_with = "library")]
    pub fresh_library: bool,
    /// Remove the media library after the check, the one an earlier check kept too: nothing stays under
    /// DIR/.streamcap (by default the library is kept for the next check, which reads it again).
    #[arg(long, conflicts_with = "library")]
    pub remove_library: bool,
    /// About 45–50 s: a smaller data set, shorter phases, a coarser capacity search, each edge run once (no
    /// range), and the later formats a few steps each: the first edge scaled to their bitrate, then 10 % above
    /// it and above each count that passes, up to 0.94 of the format's own estimate (when all pass, the failing
    /// count is derived, and said so), or 5 % below when it fails; its steps are judged once every player is
    /// steady, as the default's.
    #[arg(long, conflicts_with = "thorough")]
    pub quick: bool,
    /// About 30 minutes (31 min measured on a throttled disk; the check prints its own forecast): a larger
    /// data set, longer phases, stream steps of 25–45 s (15 s judged after every player is steady), a search to
    /// 3 % and each edge run three times; then every format's search again beside each background load
    /// (library-scan, thumbnails, transcode, recording, and scrub where it can run; --during names others)
    /// for the "what breaks first" table.
    #[arg(long)]
    pub thorough: bool,
    #[command(flatten)]
    pub output: crate::cli::OutputArgs,
    /// Write no HTML report.
    #[arg(long, help_heading = "Output")]
    pub no_html: bool,
    /// What to print at the end: the summary table, Markdown tables to paste into a forum post or an issue, or
    /// the result JSON (as `--json -`); Markdown and JSON are printed even with --quiet.
    #[arg(long, value_enum, default_value_t = CheckFormat::Summary, help_heading = "Output")]
    pub format: CheckFormat,
    /// I/O engine for every phase: io_uring (or uring; the default where available), sync (or psync: one I/O in
    /// flight per thread, for hosts where io_uring is blocked: a queue depth of N runs as N threads) or null
    /// (reads and writes nothing: streamcap's own cost).
    #[arg(long, value_parser = crate::cli::parse_engine)]
    pub engine: Option<EngineChoice>,
    /// Will it work for a household: streams that play together, as COUNTxFORMAT (2x2160p-remux,3x1080p; formats
    /// 1080p, 2160p-hevc, 2160p-remux). The end says yes, no or only without margin per format and together.
    #[arg(long, value_name = "HOUSEHOLD")]
    pub expect: Option<crate::spec::Household>,
    /// Player profile the viewers play as: its start and rebuffer thresholds, forward buffer, request size and
    /// audience (default generic; docs/streams.md, "Player profiles"). Every report states the one used.
    #[arg(long, value_name = "NAME", value_parser = clap::builder::PossibleValuesParser::new(crate::spec::players::NAMES))]
    pub player: Option<String>,
    /// What breaks first: each format's capacity search again beside each of these background loads
    /// (library-scan, thumbnails, transcode, recording, scrub; comma-separated; shapes in docs/streams.md), and
    /// which hurts most. --thorough runs all five (scrub where the target has a pool or device to scrub) unless
    /// this names some; each load adds a search per format.
    #[arg(long, value_name = "LOAD[,LOAD…]", value_parser = parse_during)]
    pub during: Option<crate::spec::During>,
    /// When another streamcap run or check is using DIR's small-file tree, wait for it to finish instead of
    /// refusing.
    #[arg(long)]
    pub wait: bool,
}

/// What `check` prints on stdout at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum CheckFormat {
    /// The terminal summary: headline figures and the verdict table.
    #[default]
    Summary,
    /// The same as Markdown tables.
    Markdown,
    /// The result JSON (as `--json -` writes it), for scripts.
    Json,
}

impl From<CheckFormat> for crate::report::Format {
    fn from(format: CheckFormat) -> Self {
        match format {
            CheckFormat::Summary => crate::report::Format::Summary,
            CheckFormat::Markdown => crate::report::Format::Markdown,
            CheckFormat::Json => crate::report::Format::Json,
        }
    }
}

fn parse_bytes(s: &str) -> Result<Bytes, String> {
    Bytes::parse(s).map_err(|e| e.to_string())
}

fn parse_during(s: &str) -> Result<crate::spec::During, String> {
    s.parse()
}
