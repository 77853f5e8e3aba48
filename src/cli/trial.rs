//! The flags of `streamcap trial` (build each layout on blank devices, measure it, tear it down, compare with
//! the planner). Values parse with the planner's and the units' own parsers; nothing here runs anything.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::plan::{LayoutList, parse_value_str};
use crate::units::Bytes;

/// `streamcap trial`: the devices, the layouts and how long to measure each.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    streamcap trial /dev/sdb /dev/sdc /dev/sdd /dev/sde --layouts mirror,raid10,parity --allow-device-writes\n  \
    streamcap trial /dev/sd[b-e] --layouts mirror,parity --drives drives.toml --drive mg10-20tb \\\n    \
    --allow-device-writes --yes --json trial.json")]
pub struct TrialArgs {
    /// Blank block devices to build the layouts from (every one is destroyed; none may be mounted, in use or
    /// carry a signature).
    #[arg(required = true, value_name = "DEV")]
    pub devices: Vec<PathBuf>,
    /// Layouts to build in turn, by the planner's names (mirror, raid10, parity/raid5, raid6, mirror3, single;
    /// built with btrfs, so mirror is btrfs raid1).
    #[arg(long, value_name = "LIST", value_parser = parse_layouts)]
    pub layouts: LayoutList,
    /// A drive catalogue describing the devices for the prediction (default: measure the first device).
    #[arg(long, value_name = "FILE")]
    pub drives: Option<PathBuf>,
    /// The catalogue entry to use (default: the catalogue's only drive).
    #[arg(long, value_name = "NAME", requires = "drives")]
    pub drive: Option<String>,
    /// The video format of the stream-capacity search (a name of `streams --format`, or a bitrate).
    #[arg(long, default_value = "1080p", value_parser = parse_value_str::<crate::spec::Format>)]
    pub format: crate::spec::Format,
    /// Bytes each viewer reads per request (as `streams --chunk`).
    #[arg(long, value_parser = crate::cli::parse_chunk_bytes, default_value = "1M")]
    pub chunk: Bytes,
    /// Data set of the sequential and random phases on each layout.
    #[arg(long, value_parser = crate::cli::parse_positive_bytes, default_value = "256M")]
    pub size: Bytes,
    /// I/O engine of the sequential phases, the deep random phase and the stream search: sync (psync) or
    /// io_uring (default: io_uring where available). The random reads by one thread are always sync (one pid,
    /// so btrfs's pid policy holds). A throttled loop device reached its limit with sync where io_uring reached
    /// half of it (docs/planning.md, "Trial").
    #[arg(long, value_parser = crate::cli::parse_engine)]
    pub engine: Option<crate::spec::EngineChoice>,
    /// Time of each timed phase; each step of the stream search watches three times this, with a buffer of this.
    #[arg(long, value_parser = crate::cli::parse_positive_duration, default_value = "5s")]
    pub runtime: Duration,

    /// Write the comparison as JSON (schema streamcap.trial, docs/planning.md). `-`: standard output.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub json: Option<PathBuf>,
    /// No progress lines (the table and errors are still printed).
    #[arg(long, short, help_heading = "Output")]
    pub quiet: bool,

    /// Allow writing to the devices (destroys their contents). Required.
    #[arg(long, help_heading = "Safety")]
    pub allow_device_writes: bool,
    /// Do not ask before destroying the devices (required when stdin is not a terminal).
    #[arg(long, short, help_heading = "Safety")]
    pub yes: bool,
}

fn parse_layouts(s: &str) -> Result<LayoutList, String> {
    crate::planning::parse_layouts(s).map(LayoutList)
}
