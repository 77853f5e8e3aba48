//! The flags of `streamcap sweep`. Sizes and records left unsaid are filled by the command's one table of
//! defaults (`app::sweep::profile`), since the default sizes depend on the RAM and the free space.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::units::Bytes;

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    streamcap sweep /srv/media                          64 KiB up to twice the RAM (bounded by free space)\n  \
    streamcap sweep /srv/media --memory 1G              as if the machine had 1 GiB of RAM (a memory cgroup)\n  \
    streamcap sweep /srv/media --sizes 128M,256M,512M,1G --records 4k,64k,1M --json sweep.json\n  \
    streamcap sweep /srv/media --memory 1G --html sweep.html    the curves as a page, the cliff marked")]
pub struct SweepArgs {
    /// A directory: streamcap writes one file per size in DIR/.streamcap and removes them afterwards.
    pub dir: PathBuf,
    /// File sizes, comma-separated (128M,256M,1G). Default: powers of two from 64 KiB to twice the effective
    /// RAM, while all the files fit in half the free space.
    #[arg(long, value_delimiter = ',', value_parser = parse_bytes, value_name = "SIZES")]
    pub sizes: Option<Vec<Bytes>>,
    /// Record sizes, comma-separated (4k,64k,1M). Default 64k,1M. A record larger than a file is skipped.
    #[arg(long, value_delimiter = ',', value_parser = parse_bytes, value_name = "SIZES")]
    pub records: Option<Vec<Bytes>>,
    /// Buffered (through the page cache), direct (O_DIRECT), or both (default).
    #[arg(long, value_enum, default_value_t = SweepIo::Both)]
    pub io: SweepIo,
    /// Run the sweep inside a memory cgroup capped at SIZE (the page cache it fills counts against it), to see
    /// the effect of a smaller RAM. The group is removed afterwards. Needs root.
    #[arg(long, value_parser = parse_bytes, value_name = "SIZE")]
    pub memory: Option<Bytes>,
    /// Time budget (default 15m): the sweep stops between sizes when the next size (twice as large, so about
    /// twice as long) would run past it, and says so.
    #[arg(long, value_parser = crate::cli::parse_positive_duration, value_name = "TIME")]
    pub budget: Option<std::time::Duration>,
    #[command(flatten)]
    pub output: crate::cli::OutputArgs,
}

/// Which I/O modes the sweep runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SweepIo {
    Buffered,
    Direct,
    Both,
}

impl SweepIo {
    /// The modes as `direct` flags, buffered first.
    pub fn modes(self) -> Vec<bool> {
        match self {
            SweepIo::Buffered => vec![false],
            SweepIo::Direct => vec![true],
            SweepIo::Both => vec![false, true],
        }
    }
}

fn parse_bytes(s: &str) -> Result<Bytes, String> {
    Bytes::parse(s).map_err(|e| e.to_string())
}
