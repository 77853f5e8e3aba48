//! File-set workloads as asked (vdbench's fsd / fwd / rd for file systems): a directory tree of many files and
//! the operations threads perform on it. A phase with a `fileset` table is a file-set phase; its raw-I/O keys
//! (rw, bs, iodepth …) do not apply.
//!
//! ```toml
//! [[phase]]
//! name = "thumbnails"
//! runtime = "20s"
//! [phase.fileset]
//! format = "yes"
//! rate = "max"
//! [[phase.fileset.tree]]
//! name = "fsd1"
//! depth = 1
//! width = 64
//! files = 25600
//! size = "16k"
//! [[phase.fileset.workload]]
//! operation = "read"
//! rdpct = 90
//! xfersize = "1k"
//! fileselect = "random"
//! fileio = "random"
//! threads = 64
//! # shared = true   # threads may work on one file at once (vdbench fileio=(random,shared))
//! ```

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use super::file_sizes::FileSizeSpec;
use super::values::{BlockSizeSpec, ValueError, serde_via_str, value_error};
use crate::units::Bytes;

/// One file-set phase: the trees it works on, the workloads that run on them together, the operation rate and
/// what to do about creating the files first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FileSetPhaseSpec {
    /// The directory trees (vdbench fsd). Usually one.
    #[serde(rename = "tree")]
    pub trees: Vec<FileTreeSpec>,
    /// The workloads (vdbench fwd), run at the same time; `skew` shares the operations between them.
    #[serde(rename = "workload", default)]
    pub workloads: Vec<FileWorkloadSpec>,
    /// Operations per second for all workloads together (vdbench fwdrate). Default: max.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<OpRateSpec>,
    /// Create the tree and fill the files before the workload (vdbench format=). Default: yes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<FormatMode>,
    /// How the format step writes the files (`[phase.fileset.format-with]`; vdbench fwd=format). Default: 8
    /// threads, 1 MiB transfers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format_with: Option<FormatWorkloadSpec>,
}

/// The format step's threads and transfer size (vdbench `fwd=format,threads=nn,xfersize=nn`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FormatWorkloadSpec {
    /// Threads that create and fill files at the same time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// Bytes per write (whole 4 KiB, or whole dedupe units).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xfersize: Option<Bytes>,
}

/// A directory tree of files (vdbench fsd).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FileTreeSpec {
    /// Name the workloads refer to (vdbench's fsd name).
    pub name: String,
    /// Directory under which streamcap builds the tree (inside its own `.streamcap` directory there). `None`: the
    /// run's target directory. vdbench anchors such as `H:` arrive here already mapped by `--anchor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor: Option<PathBuf>,
    /// Levels of directories below the anchor (0: files directly in the tree's root).
    pub depth: u32,
    /// Directories per directory.
    pub width: u32,
    /// Files per directory that holds files.
    pub files: u64,
    /// Sizes of the files.
    pub size: FileSizeSpec,
    /// Files only in the deepest directories (vdbench's default), or in every directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<FilePlacement>,
    /// Stop creating files once they hold this much in all (vdbench totalsize).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_size: Option<Bytes>,
    /// Open files with O_DIRECT (vdbench openflags=o_direct). Default: buffered, as vdbench.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct: Option<bool>,
    /// Under mpirun, one tree that every rank works in, rank r of n on its files r, r+n, r+2n … (vdbench fsd
    /// `shared=yes`). Default: each rank a tree of its own. Outside mpirun it changes nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<bool>,
}

/// A workload on a tree (vdbench fwd).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FileWorkloadSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The tree this workload works on; may be left out when there is only one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<String>,
    /// Default: read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<FileOp>,
    /// With operation read or write: percentage of the transfers that are reads (vdbench rdpct).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdpct: Option<u8>,
    /// Transfer sizes: fixed, or a weighted split (`4k/60:64k/40`). Default 4k.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xfersize: Option<BlockSizeSpec>,
    /// Which file a thread takes next. Default random.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fileselect: Option<FileSelect>,
    /// I/O within a file. Default sequential.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fileio: Option<FileIo>,
    /// Threads, each working one file at a time. Default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// Percentage of all operations that this workload gets when several run together (vdbench skew).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skew: Option<f64>,
    /// getattr, delete and rmdir on the tree's directories rather than its files (fio dirstat). Default: files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dirs: Option<bool>,
    /// Several threads of this workload may read and write one file at the same time (vdbench
    /// `fileio=(random,shared)`); needs `fileio = "random"`. Default: each thread has its file to itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<bool>,
    /// Under mpirun, the rank that runs this workload (vdbench: the fwd's `hd=`, the hds in mpirun's rank order);
    /// the other ranks leave it and its trees alone. Default: every rank runs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// Transfers a thread does to a file before it takes another (vdbench `stopafter=`): `"100"`, or `"10%"` of
    /// the file's size. Default: the whole file (sequential), transfers adding up to its size (random).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopafter: Option<StopAfter>,
    /// Sequential writes delete each file and create it again before writing it (vdbench
    /// `fileio=(sequential,delete)`). Default false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_first: Option<bool>,
}

/// How much a thread does to a file before it closes it and takes another (vdbench fwd `stopafter=`).
/// Sequential I/O with it resumes, next time the file is taken, after the last block done.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StopAfter {
    /// This many transfers (vdbench `stopafter=100`: "stop using this file after nn blocks").
    Transfers(u64),
    /// Transfers adding up to this percentage of the file's size (vdbench `stopafter=10%`).
    Percent(f64),
}

/// Where a tree's files live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilePlacement {
    /// Only in the deepest directories.
    Bottom,
    /// In every directory.
    All,
}

/// File-system operations, with vdbench's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileOp {
    Read,
    Write,
    Create,
    Delete,
    Mkdir,
    Rmdir,
    Open,
    Close,
    Getattr,
    Setattr,
    Access,
    Copy,
    Move,
}

/// How a thread picks its next file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FileSelect {
    Random,
    Sequential,
    /// Each file once, then the workload ends.
    Once,
    /// Each file once in random order, then the workload ends (vdbench `fileselect=(random,once)`).
    RandomOnce,
    /// Random with Zipf popularity of exponent θ (a few files get most of the operations).
    Skewed(f64),
    /// Random with vdbench's `fileselect=(poisson,midpoint)`: file ⌊−ln(U)·files/midpoint⌋ mod files, so the
    /// first files get most of the operations (midpoint 3: half of them in the first fifth).
    Poisson(f64),
}

/// How I/O moves within a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileIo {
    Sequential,
    Random,
}

/// Operation rate of a file-set phase.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OpRateSpec {
    /// As fast as it goes.
    Max,
    /// Operations per second.
    PerSecond(f64),
    /// A percentage of the rate measured by the nearest earlier `max` phase (vdbench's curve).
    PercentOfMax(f64),
}

/// Creating the tree before the workload (vdbench format=).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormatMode {
    /// Use the tree as it is (it must exist: from an earlier phase, or kept by an earlier run with --keep).
    No,
    /// Delete any existing tree, then create and fill it.
    Yes,
    /// Create only what is missing (after an interrupted format).
    Restart,
    /// Create and fill it, then end the phase without a workload.
    Only,
    /// Like yes, but only the first time the tree is used in this run.
    Once,
    /// Delete the tree and end the phase.
    Clean,
    /// Like yes, but create the directories only, no files (vdbench format=directories).
    Directories,
    /// Like yes, but create the tree's root only: the workload makes the rest (fio filecreate, dircreate).
    Empty,
}

/// Implements FromStr and Display for a plain word enum.
macro_rules! word_enum {
    ($t:ident, $what:literal, [$($variant:ident => $word:literal $(| $alias:literal)*),* $(,)?]) => {
        impl FromStr for $t {
            type Err = ValueError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s.trim().to_ascii_lowercase().as_str() {
                    $($word $(| $alias)* => Ok($t::$variant),)*
                    _ => Err(value_error(s, $what, [$($word),*].join(", "))),
                }
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(match self { $($t::$variant => $word,)* })
            }
        }
        serde_via_str!($t);
    };
}

word_enum!(FilePlacement, "file placement", [Bottom => "bottom", All => "all"]);
word_enum!(FileIo, "fileio", [Sequential => "sequential" | "seq", Random => "random"]);
word_enum!(FormatMode, "format", [
    No => "no", Yes => "yes", Restart => "restart", Only => "only", Once => "once", Clean => "clean",
    Directories => "directories", Empty => "empty",
]);
word_enum!(FileOp, "file operation", [
    Read => "read", Write => "write", Create => "create", Delete => "delete", Mkdir => "mkdir",
    Rmdir => "rmdir", Open => "open", Close => "close", Getattr => "getattr", Setattr => "setattr",
    Access => "access", Copy => "copy", Move => "move",
]);

impl FileOp {
    pub const ALL: [FileOp; 13] = [
        FileOp::Read,
        FileOp::Write,
        FileOp::Create,
        FileOp::Delete,
        FileOp::Mkdir,
        FileOp::Rmdir,
        FileOp::Open,
        FileOp::Close,
        FileOp::Getattr,
        FileOp::Setattr,
        FileOp::Access,
        FileOp::Copy,
        FileOp::Move,
    ];
}

impl FromStr for FileSelect {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let expected = "random, sequential, once, random-once, skewed:θ (Zipf, e.g. skewed:1.1) or poisson:midpoint";
        let text = s.trim().to_ascii_lowercase();
        match text.split_once(':') {
            None => match text.as_str() {
                "random" => Ok(FileSelect::Random),
                "sequential" | "seq" => Ok(FileSelect::Sequential),
                "once" => Ok(FileSelect::Once),
                "random-once" => Ok(FileSelect::RandomOnce),
                "skewed" => Ok(FileSelect::Skewed(1.1)),
                "poisson" => Ok(FileSelect::Poisson(3.0)),
                _ => Err(value_error(s, "fileselect", expected)),
            },
            Some((kind @ ("skewed" | "zipf" | "poisson"), value)) => match value.trim().parse::<f64>() {
                Ok(v) if v.is_finite() && v > 0.0 && kind == "poisson" => Ok(FileSelect::Poisson(v)),
                Ok(t) if t.is_finite() && t > 0.0 => Ok(FileSelect::Skewed(t)),
                _ => Err(value_error(s, "fileselect", expected)),
            },
            Some(_) => Err(value_error(s, "fileselect", expected)),
        }
    }
}

impl fmt::Display for FileSelect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileSelect::Random => f.write_str("random"),
            FileSelect::Sequential => f.write_str("sequential"),
            FileSelect::Once => f.write_str("once"),
            FileSelect::RandomOnce => f.write_str("random-once"),
            FileSelect::Skewed(theta) => write!(f, "skewed:{theta}"),
            FileSelect::Poisson(midpoint) => write!(f, "poisson:{midpoint}"),
        }
    }
}
serde_via_str!(FileSelect);

impl FromStr for OpRateSpec {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let expected = "max, operations per second (e.g. 500) or a percentage of the measured maximum (e.g. 70%)";
        let text = s.trim().to_ascii_lowercase();
        if text == "max" {
            return Ok(OpRateSpec::Max);
        }
        let number = |t: &str| t.trim().parse::<f64>().ok().filter(|v| v.is_finite() && *v > 0.0);
        match text.strip_suffix('%') {
            Some(pct) => number(pct).filter(|p| *p <= 100.0).map(OpRateSpec::PercentOfMax),
            None => number(&text).map(OpRateSpec::PerSecond),
        }
        .ok_or_else(|| value_error(s, "operation rate", expected))
    }
}

impl fmt::Display for OpRateSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpRateSpec::Max => f.write_str("max"),
            OpRateSpec::PerSecond(r) => write!(f, "{r}"),
            OpRateSpec::PercentOfMax(p) => write!(f, "{p}%"),
        }
    }
}
serde_via_str!(OpRateSpec);

impl FromStr for StopAfter {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let expected = "a number of transfers (e.g. 100) or a percentage of the file's size (e.g. 10%)";
        let text = s.trim();
        match text.strip_suffix('%') {
            Some(pct) => pct.trim().parse::<f64>().ok().filter(|p| p.is_finite() && *p > 0.0).map(StopAfter::Percent),
            None => text.parse::<u64>().ok().filter(|n| *n > 0).map(StopAfter::Transfers),
        }
        .ok_or_else(|| value_error(s, "stopafter", expected))
    }
}

impl fmt::Display for StopAfter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopAfter::Transfers(n) => write!(f, "{n}"),
            StopAfter::Percent(p) => write!(f, "{p}%"),
        }
    }
}
serde_via_str!(StopAfter);

impl FileSetPhaseSpec {
    /// Checks what is wrong whatever the target; the message names the key and the fix.
    pub fn check(&self) -> Result<(), String> {
        if self.trees.is_empty() {
            return Err("a file-set phase needs at least one [[phase.fileset.tree]]".into());
        }
        // A format step alone: only, clean, or restart with no workload (vdbench format=(restart,only)).
        let format_alone = matches!(self.format, Some(FormatMode::Only | FormatMode::Clean | FormatMode::Restart));
        if self.workloads.is_empty() && !format_alone {
            return Err("a file-set phase needs at least one [[phase.fileset.workload]]".into());
        }
        for tree in &self.trees {
            if tree.width == 0 && tree.depth > 0 {
                return Err(format!("tree {}: width must be at least 1", tree.name));
            }
            if tree.files == 0 {
                return Err(format!("tree {}: files must be at least 1", tree.name));
            }
        }
        for (i, w) in self.workloads.iter().enumerate() {
            let label = w.name.clone().unwrap_or_else(|| format!("workload {}", i + 1));
            match &w.tree {
                Some(name) if !self.trees.iter().any(|t| &t.name == name) => {
                    return Err(format!("{label}: there is no tree named {name}"));
                }
                None if self.trees.len() > 1 => {
                    return Err(format!("{label}: several trees are defined; say which one with tree = \"…\""));
                }
                _ => {}
            }
            if w.rdpct.is_some_and(|p| p > 100) {
                return Err(format!("{label}: rdpct must be from 0 to 100"));
            }
            if w.threads == Some(0) {
                return Err(format!("{label}: threads must be at least 1"));
            }
            if w.shared == Some(true) && w.fileio != Some(FileIo::Random) {
                return Err(format!(
                    "{label}: shared = true lets threads do random I/O to one file at once; it needs fileio = \"random\""
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_sizes_parse_and_print_back() {
        assert_eq!("getattr".parse::<FileOp>().unwrap(), FileOp::Getattr);
        assert!("chmod".parse::<FileOp>().unwrap_err().to_string().contains("getattr"));
        assert_eq!("skewed:1.2".parse::<FileSelect>().unwrap(), FileSelect::Skewed(1.2));
        assert_eq!("poisson".parse::<FileSelect>().unwrap().to_string(), "poisson:3");
        assert_eq!("70%".parse::<OpRateSpec>().unwrap(), OpRateSpec::PercentOfMax(70.0));
        assert_eq!("max".parse::<OpRateSpec>().unwrap(), OpRateSpec::Max);
        let sizes: FileSizeSpec = "16k/80:1m/20".parse().unwrap();
        assert_eq!(sizes, FileSizeSpec::Weighted(vec![(Bytes(16384), 80.0), (Bytes(1 << 20), 20.0)]));
        assert!("16k/80:1m/30".parse::<FileSizeSpec>().is_err());
        assert_eq!("4k-1m".parse::<FileSizeSpec>().unwrap(), FileSizeSpec::Range(Bytes(4096), Bytes(1 << 20)));
        assert_eq!("100".parse::<StopAfter>().unwrap(), StopAfter::Transfers(100));
        assert_eq!("12.5%".parse::<StopAfter>().unwrap().to_string(), "12.5%");
        assert!("0".parse::<StopAfter>().unwrap_err().to_string().contains("10%"));
    }
}
