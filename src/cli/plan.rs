//! The flags of `streamcap plan` (capacity planning with the `planning` model). Values parse with the
//! planner's and the stream formats' own parsers; nothing here runs anything.

use std::path::PathBuf;

use clap::Args;

use crate::units::Bytes;

/// `streamcap plan`: the model's inputs.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    streamcap plan --drives examples/drives.toml --mix 1080p:70,2160p:30\n  \
    streamcap plan --drives examples/drives.toml --count 4,6,8 --layouts raid10,raid6,unraid --optimize streams\n  \
    streamcap plan --drives examples/drives.toml --pool mg10-20tb:2,x24-24tb:2 --layouts all --format markdown\n  \
    streamcap plan --drive-result sdb.json --price \"389 USD\" --count 4 --file-workload rdpct=70,xfersize=64k,threads=16")]
pub struct PlanArgs {
    /// A drive catalogue (TOML `[[drive]]` tables: capacity, price, read/write MB/s, random IOPS or access time,
    /// rotational; see examples/drives.toml and docs/planning.md).
    #[arg(long, value_name = "FILE")]
    pub drives: Option<PathBuf>,
    /// A streamcap result (check or run) measured on one drive: a drive model named after the file. Repeatable.
    #[arg(long, value_name = "R.json")]
    pub drive_result: Vec<PathBuf>,
    /// A result (run, check, streams or vdbench) measured on a real pool: its measured figures and what they
    /// cost (per 1,000 reads/s, per stream, per usable TB) are printed beside the model's answers. Repeatable;
    /// priced by the --price values that follow those of the --drive-result files.
    #[arg(long, value_name = "R.json")]
    pub result: Vec<PathBuf>,
    /// Price of each --drive-result drive, then of each --result pool, in order ("389 USD").
    #[arg(long, value_name = "PRICE")]
    pub price: Vec<String>,
    /// One pool of named catalogue drives, possibly mixed: NAME:COUNT,NAME:COUNT. Default: --count drives of each
    /// model.
    #[arg(long, value_name = "NAME:N,…")]
    pub pool: Option<String>,
    /// Drives per pool, for every model of the catalogue; several counts compare sizes (2,4,6,8).
    #[arg(long, value_name = "N,…", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=64))]
    pub count: Vec<u32>,
    /// Layouts to compare, or all: single, mirror, mirror3, raid10, raid5, raid6, raidz1, raidz2, btrfs-raid1,
    /// btrfs-raid1c3, btrfs-raid10, btrfs-raid5, btrfs-raid6, unraid, unraid2, snapraid, snapraid2,
    /// storage-spaces-simple, storage-spaces-mirror, storage-spaces-mirror3, storage-spaces-parity,
    /// storage-spaces-parity2, storage-spaces-parity-wbc, storage-spaces-parity2-wbc. A Storage Spaces layout
    /// takes New-VirtualDisk's -NumberOfColumns and -Interleave after its name:
    /// storage-spaces-parity:columns=4:interleave=64k (Windows' own choice otherwise).
    #[arg(long, value_name = "LIST", value_parser = parse_layouts)]
    pub layouts: Option<LayoutList>,

    /// The stream mix by named format with weights (the names of `streams` and `check`).
    #[arg(long, default_value = "1080p:70,2160p:30", value_parser = parse_value_str::<crate::spec::Mix>, help_heading = "Workload")]
    pub mix: crate::spec::Mix,
    /// Bytes a viewer reads per request (as `streams --chunk`).
    #[arg(long, value_parser = crate::cli::parse_chunk_bytes, default_value = "1M", help_heading = "Workload")]
    pub chunk: Bytes,
    /// Threads issuing the viewers' reads; matters for btrfs's pid read policy (default: many, as a server with a
    /// thread per stream).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), help_heading = "Workload")]
    pub reader_threads: Option<u32>,
    /// Background writers while the streams play: RATE in all, over N writers (50MB/s:2).
    #[arg(long, value_name = "RATE[:N]", help_heading = "Workload")]
    pub ingest: Option<crate::spec::IngestSpec>,
    /// A file workload in vdbench's words: rdpct=70,xfersize=64k,threads=16,size=1g,files=1000,fileio=random
    /// (what is not said: 100 % random reads of 4 KiB from 8 threads; size × files is the working set a drive
    /// cache may hold).
    #[arg(long, value_name = "KEY=VALUE,…", value_parser = parse_value_str::<crate::planning::FileWorkload>, help_heading = "Workload")]
    pub file_workload: Option<crate::planning::FileWorkload>,
    /// Data stored on the pool (64G): btrfs raid1 puts a data set smaller than a data chunk per pair of drives
    /// on only some members, which then serve every read (default: enough data to lie on every member).
    #[arg(long, value_name = "SIZE", value_parser = crate::cli::parse_positive_bytes, help_heading = "Workload")]
    pub data_set: Option<Bytes>,
    /// A read cache in front of every member (a RAID controller's): SIZE:READ:IOPS, e.g. 4GiB:2000MB/s:50000.
    /// While the file workload's working set (size × files) fits it, it serves every read.
    #[arg(long, value_name = "SIZE:READ:IOPS", value_parser = parse_controller_cache, help_heading = "Workload")]
    pub controller_cache: Option<crate::planning::DriveCache>,
    /// Share of each involved member's time a rebuild takes, percent.
    #[arg(long, value_name = "PCT", default_value_t = 50.0, value_parser = parse_share, help_heading = "Workload")]
    pub rebuild_share: f64,

    /// What the ranking optimises: cost-per-stream, capacity or streams.
    #[arg(long, default_value = "cost-per-stream", value_parser = parse_value_str::<crate::planning::Goal>, help_heading = "Output")]
    pub optimize: crate::planning::Goal,
    /// Rows shown (0: all).
    #[arg(long, default_value_t = crate::planning::defaults::TOP, help_heading = "Output")]
    pub top: usize,
    /// Write the whole plan as JSON (schema streamcap.planning, docs/planning.md). `-`: standard output.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub json: Option<PathBuf>,
    /// How to print the table.
    #[arg(long, value_enum, default_value_t = PlanFormat::Terminal, help_heading = "Output")]
    pub format: PlanFormat,
}

/// The layouts of `--layouts` (a newtype: clap would read a `Vec` as a repeated flag).
#[derive(Debug, Clone, PartialEq)]
pub struct LayoutList(pub Vec<crate::planning::Layout>);

fn parse_controller_cache(s: &str) -> Result<crate::planning::DriveCache, String> {
    crate::planning::DriveCache::parse_spec(s)
}

fn parse_layouts(s: &str) -> Result<LayoutList, String> {
    crate::planning::parse_layouts(s).map(LayoutList)
}

/// What `plan` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum PlanFormat {
    /// A table for the terminal.
    #[default]
    Terminal,
    /// A Markdown table and lists, for a document or an issue.
    Markdown,
}

pub(super) fn parse_value_str<T: std::str::FromStr<Err = String>>(s: &str) -> Result<T, String> {
    s.parse()
}

fn parse_share(s: &str) -> Result<f64, String> {
    match s.trim_end_matches('%').parse::<f64>() {
        Ok(p) if p > 0.0 && p < 100.0 => Ok(p),
        _ => Err(format!("a rebuild share of {s} is out of range: give a percentage above 0 and below 100")),
    }
}
