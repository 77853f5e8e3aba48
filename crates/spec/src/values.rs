//! The values a user writes for a workload key, parsed once whatever the dialect: `rw` modes, block-size
//! specifications (`4k`, `4k-64k`, `4k/60:64k/40`), offset steps and sequencers, engines and arrival processes
//! (distributions are in `distribution.rs`).
//!
//! These are the user's words, not the machinery: `plan` turns them into the concrete workload and engine
//! configuration.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::units::{Bytes, Share};

/// A value that is not one of the accepted forms.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{input}' is not a valid {what}: expected {expected}")]
pub struct ValueError {
    pub input: String,
    pub what: &'static str,
    pub expected: String,
}

pub(crate) fn value_error(input: &str, what: &'static str, expected: impl Into<String>) -> ValueError {
    ValueError { input: input.to_string(), what, expected: expected.into() }
}

/// Implements Display/FromStr-based serde for a type, so job files and JSON results use the same words as flags.
macro_rules! serde_via_str {
    ($t:ty) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}
pub(crate) use serde_via_str;

/// Access pattern and direction, with fio's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RwMode {
    Read,
    Write,
    RandRead,
    RandWrite,
    /// Sequential, mixed reads and writes (`rdpct` decides the mix).
    ReadWrite,
    /// Random, mixed reads and writes.
    RandRw,
}

impl RwMode {
    pub fn is_random(self) -> bool {
        matches!(self, RwMode::RandRead | RwMode::RandWrite | RwMode::RandRw)
    }

    pub fn is_mixed(self) -> bool {
        matches!(self, RwMode::ReadWrite | RwMode::RandRw)
    }

    /// Percentage of reads implied by the mode, given `rdpct` for mixed modes (default 50, as fio's rwmixread).
    pub fn read_percent(self, rdpct: Option<u8>) -> u8 {
        match self {
            RwMode::Read | RwMode::RandRead => 100,
            RwMode::Write | RwMode::RandWrite => 0,
            RwMode::ReadWrite | RwMode::RandRw => rdpct.unwrap_or(50),
        }
    }
}

impl FromStr for RwMode {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "read" => RwMode::Read,
            "write" => RwMode::Write,
            "randread" => RwMode::RandRead,
            "randwrite" => RwMode::RandWrite,
            "readwrite" | "rw" => RwMode::ReadWrite,
            "randrw" => RwMode::RandRw,
            _ => return Err(value_error(s, "rw mode", "read, write, randread, randwrite, readwrite or randrw")),
        })
    }
}

impl fmt::Display for RwMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RwMode::Read => "read",
            RwMode::Write => "write",
            RwMode::RandRead => "randread",
            RwMode::RandWrite => "randwrite",
            RwMode::ReadWrite => "readwrite",
            RwMode::RandRw => "randrw",
        })
    }
}
serde_via_str!(RwMode);

/// Block sizes as the user wrote them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockSizeSpec {
    Fixed(Bytes),
    /// `4k-64k`: sizes between the two, in steps of the smaller size (fio's rule), or of the alignment when the
    /// smaller size is not a multiple of it.
    Range(Bytes, Bytes),
    /// `4k/60:64k/40`: weighted sizes (`4k/4.5:8k/95.5`: vdbench's weights have fractions). An entry without a
    /// weight shares what the others leave of 100 %.
    Split(Vec<(Bytes, Option<Share>)>),
}

impl BlockSizeSpec {
    /// The weighted entries with every weight filled in (entries without one share the remainder of 100 %).
    pub fn split_weights(entries: &[(Bytes, Option<Share>)]) -> Result<Vec<(Bytes, Share)>, String> {
        let given = Share(entries.iter().filter_map(|e| e.1).map(|s| s.0).sum());
        let unweighted = entries.iter().filter(|e| e.1.is_none()).count() as u32;
        if given > Share::WHOLE {
            return Err(format!("the weights add up to {given}, more than 100"));
        }
        if unweighted == 0 && given == Share(0) {
            return Err("here every weight is zero, so no size would ever be used".into());
        }
        let share = Share((Share::WHOLE.0 - given.0).checked_div(unweighted).unwrap_or(0));
        if unweighted > 0 && share == Share(0) {
            return Err("the sizes without a weight get nothing: the others already add up to 100".into());
        }
        Ok(entries.iter().map(|&(size, w)| (size, w.unwrap_or(share))).collect())
    }
}

impl FromStr for BlockSizeSpec {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let expected = "a size (4k), a range (4k-64k) or a weighted split (4k/60:64k/40)";
        let text = s.trim();
        let size = |t: &str| Bytes::parse(t).map_err(|_| value_error(s, "block size", expected));
        if text.contains('/') || text.contains(':') {
            let mut entries = Vec::new();
            for part in text.split(':').filter(|p| !p.trim().is_empty()) {
                let (bytes, weight) = match part.split_once('/') {
                    Some((b, w)) if w.trim().is_empty() => (size(b)?, None),
                    Some((b, w)) => {
                        let weight = Share::parse(w).map_err(|_| value_error(s, "block size", expected))?;
                        (size(b)?, Some(weight))
                    }
                    None => (size(part)?, None),
                };
                entries.push((bytes, weight));
            }
            BlockSizeSpec::split_weights(&entries).map_err(|why| {
                // The reason is a sentence of its own, not an "expected …" phrase: said as what the weights must do.
                value_error(s, "block size split", format!("weights above zero that add up to at most 100 ({why})"))
            })?;
            return Ok(BlockSizeSpec::Split(entries));
        }
        if let Some((low, high)) = text.split_once('-') {
            let (low, high) = (size(low)?, size(high)?);
            if low > high {
                return Err(value_error(s, "block size range", "the smaller size first, as in 4k-64k"));
            }
            return Ok(BlockSizeSpec::Range(low, high));
        }
        Ok(BlockSizeSpec::Fixed(size(text)?))
    }
}

impl fmt::Display for BlockSizeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Exact, not the rounded display: a job is sent to mpirun's ranks and kept in results in this form.
        let short = |b: &Bytes| b.exact();
        match self {
            BlockSizeSpec::Fixed(b) => write!(f, "{}", short(b)),
            BlockSizeSpec::Range(a, b) => write!(f, "{}-{}", short(a), short(b)),
            BlockSizeSpec::Split(entries) => {
                let parts: Vec<String> = entries
                    .iter()
                    .map(|(b, w)| match w {
                        Some(w) => format!("{}/{w}", short(b)),
                        None => format!("{}/", short(b)),
                    })
                    .collect();
                f.write_str(&parts.join(":"))
            }
        }
    }
}
serde_via_str!(BlockSizeSpec);

/// A byte amount that may be negative: fio's sequential offset step (`rw=write:4k` leaves holes, `rw=read:-8k`
/// walks backwards).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteStep(pub i64);

impl FromStr for ByteStep {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim();
        let (negative, magnitude) = text.strip_prefix('-').map_or((false, text), |m| (true, m));
        let bytes = Bytes::parse(magnitude)
            .ok()
            .and_then(|b| i64::try_from(b.0).ok())
            .ok_or_else(|| value_error(s, "offset step", "a size, negative to go backwards (4k, -8k)"))?;
        Ok(ByteStep(if negative { -bytes } else { bytes }))
    }
}

impl fmt::Display for ByteStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        write!(f, "{sign}{}", Bytes(self.0.unsigned_abs()).exact())
    }
}
serde_via_str!(ByteStep);

/// What the operations between two random offsets do (fio rw_sequencer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sequencer {
    /// Continue sequentially from the random offset.
    Sequential,
    /// Repeat the same offset.
    Identical,
}

impl FromStr for Sequencer {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "sequential" => Ok(Sequencer::Sequential),
            "identical" => Ok(Sequencer::Identical),
            _ => Err(value_error(s, "sequencer", "sequential or identical")),
        }
    }
}

impl fmt::Display for Sequencer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Sequencer::Sequential => "sequential",
            Sequencer::Identical => "identical",
        })
    }
}
serde_via_str!(Sequencer);

/// The engine the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineChoice {
    Sync,
    IoUring,
    /// No I/O at all: measures streamcap's own overhead.
    Null,
}

impl FromStr for EngineChoice {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "sync" | "psync" => EngineChoice::Sync,
            "io_uring" | "iouring" | "uring" => EngineChoice::IoUring,
            "null" => EngineChoice::Null,
            _ => return Err(value_error(s, "engine", "sync or io_uring (or null, which does no I/O)")),
        })
    }
}

impl fmt::Display for EngineChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EngineChoice::Sync => "sync",
            EngineChoice::IoUring => "io_uring",
            EngineChoice::Null => "null",
        })
    }
}
serde_via_str!(EngineChoice);

/// When paced operations arrive: evenly spaced, or as a Poisson process with the same mean rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrivalSpec {
    Linear,
    Poisson,
}

impl FromStr for ArrivalSpec {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "linear" => Ok(ArrivalSpec::Linear),
            "poisson" => Ok(ArrivalSpec::Poisson),
            _ => Err(value_error(s, "arrival process", "linear or poisson")),
        }
    }
}

impl fmt::Display for ArrivalSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ArrivalSpec::Linear => "linear",
            ArrivalSpec::Poisson => "poisson",
        })
    }
}
serde_via_str!(ArrivalSpec);

/// A byte amount or a percentage of the file or device (fio's `offset=25%`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SizeOrPercent {
    Bytes(Bytes),
    Percent(f64),
}

impl FromStr for SizeOrPercent {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let expected = "a size (1G) or a percentage of the file or device (25%)";
        let text = s.trim();
        match text.strip_suffix('%') {
            Some(p) => p
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|p| p.is_finite() && (0.0..=100.0).contains(p))
                .map(SizeOrPercent::Percent)
                .ok_or_else(|| value_error(s, "size or percentage", expected)),
            None => {
                Bytes::parse(text).map(SizeOrPercent::Bytes).map_err(|_| value_error(s, "size or percentage", expected))
            }
        }
    }
}

impl fmt::Display for SizeOrPercent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizeOrPercent::Bytes(b) => write!(f, "{b}"),
            SizeOrPercent::Percent(p) => write!(f, "{p}%"),
        }
    }
}
serde_via_str!(SizeOrPercent);

/// How the workers of a phase share its data set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// Sequential workers each take their own slice; random workers address the whole data set.
    Split,
    /// Every worker addresses the whole data set (fio's clones of one job on one file).
    Whole,
}

impl FromStr for Sharing {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "split" => Ok(Sharing::Split),
            "whole" => Ok(Sharing::Whole),
            _ => Err(value_error(s, "sharing", "split or whole")),
        }
    }
}

impl fmt::Display for Sharing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Sharing::Split => "split",
            Sharing::Whole => "whole",
        })
    }
}
serde_via_str!(Sharing);

/// How a worker with several files picks the file of its next operation (fio file_service_type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileService {
    Random,
    /// One operation per file in turn.
    RoundRobin,
    /// All of one file, then the next.
    Sequential,
}

impl FromStr for FileService {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "random" => Ok(FileService::Random),
            "roundrobin" => Ok(FileService::RoundRobin),
            "sequential" => Ok(FileService::Sequential),
            _ => Err(value_error(s, "file service", "random, roundrobin or sequential")),
        }
    }
}

impl fmt::Display for FileService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FileService::Random => "random",
            FileService::RoundRobin => "roundrobin",
            FileService::Sequential => "sequential",
        })
    }
}
serde_via_str!(FileService);

/// How written data is verified (fio verify, vdbench validate): a checksum in each block's header, or a seeded
/// byte pattern compared byte for byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerifyChoice {
    Crc32c,
    Xxhash,
    Sha256,
    Pattern,
}

impl FromStr for VerifyChoice {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            // fio's names for the same checksums.
            "crc32c" | "crc32c-intel" => Ok(VerifyChoice::Crc32c),
            "xxhash" | "xxh3" => Ok(VerifyChoice::Xxhash),
            "sha256" => Ok(VerifyChoice::Sha256),
            "pattern" => Ok(VerifyChoice::Pattern),
            _ => Err(value_error(s, "verify algorithm", "crc32c, xxhash, sha256 or pattern")),
        }
    }
}

impl fmt::Display for VerifyChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            VerifyChoice::Crc32c => "crc32c",
            VerifyChoice::Xxhash => "xxhash",
            VerifyChoice::Sha256 => "sha256",
            VerifyChoice::Pattern => "pattern",
        })
    }
}
serde_via_str!(VerifyChoice);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_size_forms() {
        assert_eq!("4k".parse::<BlockSizeSpec>().unwrap(), BlockSizeSpec::Fixed(Bytes(4096)));
        assert_eq!("4k-64k".parse::<BlockSizeSpec>().unwrap(), BlockSizeSpec::Range(Bytes(4096), Bytes(65536)));
        let split = "4k/60:64k/40".parse::<BlockSizeSpec>().unwrap();
        let [w60, w40] = [60, 40].map(|p| Some(Share::percent(p)));
        assert_eq!(split, BlockSizeSpec::Split(vec![(Bytes(4096), w60), (Bytes(65536), w40)]));
        assert_eq!(split.to_string(), "4K/60:64K/40");
        let open = "4k/50:8k/:16k/".parse::<BlockSizeSpec>().unwrap();
        let BlockSizeSpec::Split(entries) = open else { panic!() };
        assert_eq!(
            BlockSizeSpec::split_weights(&entries).unwrap().iter().map(|e| e.1).collect::<Vec<_>>(),
            [50, 25, 25].map(Share::percent)
        );
        // vdbench's weights have fractions: they are kept to the hundredth of a percent, and print back.
        let fractions = "4k/4.5:8k/95.5".parse::<BlockSizeSpec>().unwrap();
        assert_eq!(fractions.to_string(), "4K/4.5:8K/95.5");
        // Sizes that are no whole MiB print exactly, so that they read back (1032k was "1.01M", unreadable, and
        // a vdbench job with it could not be sent to mpirun's ranks).
        for text in ["1032k", "1536", "1032k-2m", "4k/50:1032k/50"] {
            let spec = text.parse::<BlockSizeSpec>().unwrap();
            assert_eq!(spec.to_string().parse::<BlockSizeSpec>().unwrap(), spec, "{text}");
        }
    }

    #[test]
    fn block_size_errors_say_what_is_expected() {
        for bad in ["64k-4k", "4k/70:8k/40", "lots", "4k/x"] {
            let err = bad.parse::<BlockSizeSpec>().unwrap_err().to_string();
            assert!(err.contains(bad), "{err}");
        }
        // Guards issue 25: this said "expected every weight is zero", as if zero weights were asked for.
        let err = "4k/0:64k/0".parse::<BlockSizeSpec>().unwrap_err().to_string();
        assert_eq!(
            err,
            "'4k/0:64k/0' is not a valid block size split: expected weights above zero that add up to at most 100 \
             (here every weight is zero, so no size would ever be used)"
        );
    }

    #[test]
    fn offset_steps_and_sequencers() {
        assert_eq!("-8k".parse::<ByteStep>().unwrap(), ByteStep(-8192));
        assert_eq!("112k".parse::<ByteStep>().unwrap(), ByteStep(112 * 1024));
        assert_eq!(ByteStep(-8192).to_string(), "-8K");
        assert!("--8k".parse::<ByteStep>().is_err());
        assert_eq!("identical".parse::<Sequencer>().unwrap(), Sequencer::Identical);
        assert!("backwards".parse::<Sequencer>().is_err());
    }

    #[test]
    fn rw_modes_and_mixes() {
        assert_eq!("randrw".parse::<RwMode>().unwrap().read_percent(Some(70)), 70);
        assert_eq!("read".parse::<RwMode>().unwrap().read_percent(Some(70)), 100);
        assert!("sideways".parse::<RwMode>().is_err());
    }
}
