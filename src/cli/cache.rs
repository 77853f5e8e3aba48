//! The flags of `streamcap cache`, and the concurrent load as a phase layer. Sizes and durations left unsaid
//! are filled by the command's one table of defaults (`app::cache::profile`), since they depend on the target.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use clap::Args;

use crate::spec::{Format, PhaseSpec, RwMode};
use crate::units::{Bytes, parse_duration};

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    streamcap cache /srv/media                     page cache, drive cache, media and access time, about a minute\n  \
    streamcap cache /dev/sdb --load randread       a disk, read only, with a random-read load beside each plateau\n  \
    streamcap cache /srv/media --size 8G --json cache.json --html cache.html\n  \
    streamcap cache /srv/media --dry-run           the plan, and nothing done")]
pub struct CacheArgs {
    /// A directory (streamcap writes its test files in DIR/.streamcap and removes them afterwards), an existing
    /// file or a block device (both only read).
    pub target: PathBuf,
    /// Bytes the media and access-time plateaus read: larger than any cache beneath. Default: 1 GiB in a
    /// directory (less when free space is short), the whole file or device otherwise.
    #[arg(long, value_parser = parse_bytes)]
    pub size: Option<Bytes>,
    /// Bytes per read of the page-cache, device-cache and media plateaus (default 1M).
    #[arg(long, value_parser = parse_bytes)]
    pub bs: Option<Bytes>,
    /// Measured time of each plateau (default 3s).
    #[arg(long, value_parser = parse_duration, value_name = "TIME")]
    pub runtime: Option<Duration>,
    /// The concurrent load each plateau is measured again under: MODE[:READ%] with a random mode (randrw:70,
    /// randread, randwrite), or none. Default: randrw:70 in a directory, randread on a file or device (streamcap
    /// never writes to those).
    #[arg(long, value_parser = parse_load, value_name = "MODE")]
    pub load: Option<Load>,
    /// The stream the bounds are worked out for: a bitrate (25Mbit) or a format (1080p, 2160p-hevc, …).
    /// Default 2160p-hevc (25 Mbit/s).
    #[arg(long, value_parser = Format::parse, value_name = "RATE")]
    pub bitrate: Option<Format>,
    /// Bytes each viewer reads at a time, for the bounds (default 1M, as `streams`).
    #[arg(long, value_parser = crate::cli::parse_chunk_bytes)]
    pub chunk: Option<Bytes>,
    #[command(flatten)]
    pub output: crate::cli::OutputArgs,
}

/// The concurrent load: a random mode and its share of reads, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Load {
    None,
    Random { rw: RwMode, rdpct: Option<u8> },
}

impl Load {
    /// The load as a phase layer (mode and mix only; block size, depth and time are the command's).
    pub fn to_phase_spec(self) -> Option<PhaseSpec> {
        match self {
            Load::None => None,
            Load::Random { rw, rdpct } => Some(PhaseSpec { rw: Some(rw), rdpct, ..PhaseSpec::default() }),
        }
    }

    /// Whether the load writes.
    pub fn writes(self) -> bool {
        match self {
            Load::None => false,
            Load::Random { rw, rdpct } => rw.read_percent(rdpct) < 100,
        }
    }
}

impl std::fmt::Display for Load {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Load::None => f.write_str("none"),
            Load::Random { rw, rdpct: Some(p) } => write!(f, "{rw}:{p}"),
            Load::Random { rw, rdpct: None } => write!(f, "{rw}"),
        }
    }
}

impl FromStr for Load {
    type Err = String;
    fn from_str(s: &str) -> Result<Load, String> {
        if s.trim().eq_ignore_ascii_case("none") {
            return Ok(Load::None);
        }
        let (mode, pct) = match s.split_once(':') {
            Some((mode, pct)) => (mode, Some(pct)),
            None => (s, None),
        };
        let rw: RwMode = mode.parse().map_err(|e: crate::spec::ValueError| e.to_string())?;
        if !rw.is_random() {
            return Err(format!(
                "the load '{s}' is sequential: give a random mode (randrw:70, randread, randwrite) or none"
            ));
        }
        let rdpct = match pct {
            None => None,
            Some(_) if !rw.is_mixed() => {
                return Err(format!("'{s}': a read percentage goes with randrw only (randrw:70)"));
            }
            Some(p) => Some(
                p.trim()
                    .parse::<u8>()
                    .ok()
                    .filter(|p| *p <= 100)
                    .ok_or_else(|| format!("'{p}' in '{s}' is not a percentage of reads from 0 to 100"))?,
            ),
        };
        Ok(Load::Random { rw, rdpct })
    }
}

fn parse_load(s: &str) -> Result<Load, String> {
    s.parse()
}

fn parse_bytes(s: &str) -> Result<Bytes, String> {
    Bytes::parse(s).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_parse_as_random_modes_with_a_mix() {
        assert_eq!("randrw:70".parse(), Ok(Load::Random { rw: RwMode::RandRw, rdpct: Some(70) }));
        assert_eq!("randread".parse(), Ok(Load::Random { rw: RwMode::RandRead, rdpct: None }));
        assert_eq!("none".parse::<Load>(), Ok(Load::None));
        assert!("read".parse::<Load>().unwrap_err().contains("sequential"));
        assert!("randread:70".parse::<Load>().unwrap_err().contains("randrw only"));
        assert!("randrw:170".parse::<Load>().unwrap_err().contains("percentage"));
        assert!("randrw:70".parse::<Load>().unwrap().writes());
        assert!(!"randread".parse::<Load>().unwrap().writes());
        assert_eq!("randrw:70".parse::<Load>().unwrap().to_string(), "randrw:70");
    }
}
