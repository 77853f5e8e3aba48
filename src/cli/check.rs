//! The flags of `streamcap check`.

use std::path::PathBuf;

use clap::Args;

use crate::spec::EngineChoice;

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    streamcap check                         the storage under the current directory, about three minutes\n  \
    streamcap check /srv/media --quick      about half a minute\n  \
    streamcap check /srv/media --thorough --json check.json\n  \
    streamcap check /srv/media --quick --format markdown   tables to paste into a forum post\n  \
    streamcap check /srv/media --dry-run    the plan, and nothing done")]
pub struct CheckArgs {
    /// Directory on the storage to check (default: the current directory). streamcap writes only under
    /// DIR/.streamcap and removes it afterwards.
    pub dir: Option<PathBuf>,
    /// About a minute: a smaller data set, shorter phases, a coarser capacity search, each edge run twice.
    #[arg(long, conflicts_with = "thorough")]
    pub quick: bool,
    /// About 20 minutes: a larger data set, longer phases, 30 s per stream step, a search to 3 % and each edge
    /// run three times.
    #[arg(long)]
    pub thorough: bool,
    /// Write the result as JSON (rewritten after every phase and stream step).
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
    /// What to print at the end: the summary table, or Markdown tables to paste into a forum post or an issue
    /// (printed even with --quiet).
    #[arg(long, value_enum, default_value_t = CheckFormat::Summary)]
    pub format: CheckFormat,
    /// Print the expanded plan and do nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// I/O engine for every phase: io_uring (the default where available), sync (one I/O in flight per thread,
    /// for hosts where io_uring is blocked) or null (reads and writes nothing: streamcap's own cost).
    #[arg(long, value_parser = parse_engine)]
    pub engine: Option<EngineChoice>,
    #[command(flatten)]
    pub history: crate::cli::HistoryOptions,
}

/// What `check` prints on stdout at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum CheckFormat {
    /// The terminal summary: headline figures and the verdict table.
    #[default]
    Summary,
    /// The same as Markdown tables.
    Markdown,
}

impl From<CheckFormat> for crate::report::Format {
    fn from(format: CheckFormat) -> Self {
        match format {
            CheckFormat::Summary => crate::report::Format::Summary,
            CheckFormat::Markdown => crate::report::Format::Markdown,
        }
    }
}

fn parse_engine(s: &str) -> Result<EngineChoice, String> {
    s.parse().map_err(|e: crate::spec::ValueError| e.to_string())
}
