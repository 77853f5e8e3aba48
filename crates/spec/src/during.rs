//! The server's other work during playback, as asked: `--during library-scan,transcode` (spec key `during`), a
//! list of named background loads that run beside a stream phase's viewers. Names and parsing only; what each
//! load does (its shape and why) is the table in `streams::background`, and running them is `run::streams`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// One background load, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Load {
    /// A media server's library scanner: stat every file and read its header, over and over.
    LibraryScan,
    /// Preview (trickplay) generation: whole titles read sequentially, one at a time.
    Thumbnails,
    /// A transcoder: a source title read and segments written at a multiple of real time.
    Transcode,
    /// Recordings (a tuner, a camera): paced writes into files that grow.
    Recording,
    /// The pool's integrity check: btrfs scrub where the target is on btrfs, otherwise a parity check's full
    /// sequential read of the target's device (read only).
    Scrub,
}

impl Load {
    /// Every load, in the order tables list them.
    pub const ALL: [Load; 5] = [Load::LibraryScan, Load::Thumbnails, Load::Transcode, Load::Recording, Load::Scrub];

    /// The name a user types.
    pub fn name(self) -> &'static str {
        match self {
            Load::LibraryScan => "library-scan",
            Load::Thumbnails => "thumbnails",
            Load::Transcode => "transcode",
            Load::Recording => "recording",
            Load::Scrub => "scrub",
        }
    }

    /// The load writes files (into streamcap's work directory).
    pub fn writes(self) -> bool {
        matches!(self, Load::Transcode | Load::Recording)
    }

    /// The load reads the storage the viewers read: as fast as it answers (a scan, thumbnails, a parity check's
    /// pass, the kernel's scrub) or at many times real time (a transcoder's source), so it takes the bandwidth
    /// the viewers leave and their capacity falls. A recording only writes at its own few MB/s.
    pub fn reads(self) -> bool {
        !matches!(self, Load::Recording)
    }
}

impl FromStr for Load {
    type Err = String;
    fn from_str(s: &str) -> Result<Load, String> {
        let key = s.trim().to_ascii_lowercase().replace('_', "-");
        Load::ALL.into_iter().find(|l| l.name() == key).ok_or_else(|| {
            let names: Vec<&str> = Load::ALL.iter().map(|l| l.name()).collect();
            format!("'{}' is not a background load streamcap knows: give one or more of {}", s.trim(), names.join(", "))
        })
    }
}

impl fmt::Display for Load {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The loads of one phase, each at most once, in the order given (`library-scan,transcode`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct During(pub Vec<Load>);

impl FromStr for During {
    type Err = String;
    fn from_str(s: &str) -> Result<During, String> {
        let mut loads = Vec::new();
        for part in s.split(',').filter(|p| !p.trim().is_empty()) {
            let load: Load = part.parse()?;
            if loads.contains(&load) {
                return Err(format!("background load '{load}' is named twice: give each load once"));
            }
            loads.push(load);
        }
        if loads.is_empty() {
            return Err(
                "--during needs a background load: library-scan, thumbnails, transcode, recording or scrub".into()
            );
        }
        Ok(During(loads))
    }
}

impl fmt::Display for During {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.0.iter().map(|l| l.name()).collect();
        f.write_str(&names.join(","))
    }
}

impl Serialize for Load {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl Serialize for During {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for During {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_of_loads_parses_and_prints_back() {
        let d: During = "library-scan,Transcode".parse().unwrap();
        assert_eq!(d.0, vec![Load::LibraryScan, Load::Transcode]);
        assert_eq!(d.to_string(), "library-scan,transcode");
        assert!("library_scan".parse::<During>().is_ok());
        let unknown = "library-scan,parity".parse::<During>().unwrap_err();
        assert!(unknown.contains("'parity' is not a background load") && unknown.contains("scrub"), "{unknown}");
        assert_eq!("scrub".parse::<During>().unwrap().0, vec![Load::Scrub]);
        assert!("transcode,transcode".parse::<During>().unwrap_err().contains("twice"));
        assert!("".parse::<During>().is_err());
        assert!(Load::Recording.writes() && !Load::Thumbnails.writes() && !Load::Scrub.writes());
        assert!(Load::Transcode.reads() && Load::Scrub.reads() && !Load::Recording.reads());
    }
}
