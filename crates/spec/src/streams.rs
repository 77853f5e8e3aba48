//! `StreamsSpec`: what the user asked of paced stream viewers, from `streamcap streams` flags or a
//! `[phase.streams]` table in a TOML job. Every field is optional ("not said"); `plan` fills the rest from
//! `streams::defaults`. Also the small value types of that vocabulary: the chunk size, which file each viewer
//! reads, the ingest writers. Parsing only: nothing here knows about files or devices.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::formats::{Format, Mix};
use crate::units::{Bitrate, ByteRate, Bytes, deserialize_opt_duration, parse_duration};

/// The most viewers one run may ask for: each costs a few hundred bytes of state and, at a 1 MiB chunk, a read
/// in flight now and then; far above what one machine can drive, far below what would exhaust its memory.
pub const MAX_VIEWERS: u32 = 1_000_000;

/// The most confirmation rounds a search may run (each is two more steps).
pub const MAX_CONFIRMATIONS: u32 = 5;

/// One stream phase, as asked. Keys match the `streams` flags (kebab-case in TOML).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct StreamsSpec {
    /// One format: a name (1080p, 2160p-hevc …) or a bitrate (25Mbit).
    #[serde(alias = "bitrate", skip_serializing_if = "Option::is_none")]
    pub format: Option<Format>,
    /// Several formats with weights: 1080p:70,2160p:30.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mix: Option<Mix>,
    /// Concurrent viewers (one step).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// Find the largest count that meets the quality target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<bool>,
    /// The stated target: with `max`, the answer must reach this; with `count`, the count must pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expect: Option<u32>,
    /// Playback judged once every viewer has reached steady state (each step of a search too).
    #[serde(default, deserialize_with = "deserialize_opt_duration", skip_serializing_if = "Option::is_none")]
    pub duration: Option<Duration>,
    /// Bytes per request, or seconds of media per request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk: Option<ChunkSize>,
    /// How requests are shaped: direct play in the chunk size, or one request per HLS/DASH segment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<super::Delivery>,
    /// Media the player keeps ahead of the playhead.
    #[serde(default, deserialize_with = "deserialize_opt_duration", skip_serializing_if = "Option::is_none")]
    pub buffer: Option<Duration>,
    /// Media needed before playback starts (and after a stall or a seek).
    #[serde(default, deserialize_with = "deserialize_opt_duration", skip_serializing_if = "Option::is_none")]
    pub prebuffer: Option<Duration>,
    /// A player profile (streams::players): its buffer, prebuffer and request size unless given apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub player: Option<String>,
    /// The longest window the viewers arrive over (about one a second until it is full).
    #[serde(default, deserialize_with = "deserialize_opt_duration", skip_serializing_if = "Option::is_none")]
    pub ramp: Option<Duration>,
    /// Each viewer must reach steady state (its buffer full once) within this of its arrival.
    #[serde(default, deserialize_with = "deserialize_opt_duration", skip_serializing_if = "Option::is_none")]
    pub steady_within: Option<Duration>,
    /// Mean time between a viewer's seeks.
    #[serde(default, deserialize_with = "deserialize_opt_duration", skip_serializing_if = "Option::is_none")]
    pub seek_every: Option<Duration>,
    /// Which file each viewer reads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<Assignment>,
    /// Variable bitrate: ± this percentage of the mean per group of pictures (0–90).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vbr: Option<f64>,
    /// Quality target: every stream starts within this.
    #[serde(default, deserialize_with = "deserialize_opt_duration", skip_serializing_if = "Option::is_none")]
    pub max_startup: Option<Duration>,
    /// Quality target: at most this many streams stall.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_stalled: Option<u32>,
    /// The search never tries more viewers than this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// The search stops when a passing and a failing count are within this percentage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precision: Option<f64>,
    /// Rounds that run the search's edge again (the count that passed, then the one that failed); the answer is the
    /// median of the edges, given with their range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmations: Option<u32>,
    /// The search starts at this fraction of the estimate (default 0.5).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_factor: Option<f64>,
    /// The search never tries more than this multiple of the estimate (default: only `limit` bounds it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit_factor: Option<f64>,
    /// Read the user's media files under this directory (never written, never opened for writing) instead of
    /// writing a library of titles.
    #[serde(alias = "use-existing", skip_serializing_if = "Option::is_none")]
    pub library: Option<PathBuf>,
    /// Size of the library of titles streamcap writes (`files = "library…"`); the plan shrinks it to the free
    /// space, and says so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub library_size: Option<Bytes>,
    /// Length of each test media file.
    #[serde(default, deserialize_with = "deserialize_opt_duration", skip_serializing_if = "Option::is_none")]
    pub media_length: Option<Duration>,
    /// Background writers while the viewers watch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingest: Option<IngestSpec>,
    /// The server's other work beside the viewers (`--during library-scan,transcode`; `spec::During`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub during: Option<super::During>,
    /// Scheduler threads (`None`: chosen by the plan, `plan::streams_threads`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers: Option<u32>,
    /// Reads in flight per scheduler thread at most (the engine's own limit may be lower).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inflight: Option<u32>,
    /// Measure raw read rates first and estimate the capacity (default: with `max`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimate: Option<bool>,
    /// Time of each raw-rate measurement.
    #[serde(default, deserialize_with = "deserialize_opt_duration", skip_serializing_if = "Option::is_none")]
    pub estimate_time: Option<Duration>,
}

impl StreamsSpec {
    /// Checks values that are wrong whatever the target; the message names the key and the fix.
    pub fn check(&self) -> Result<(), String> {
        match (&self.format, &self.mix) {
            (None, None) => return Err("say what the viewers watch: a format (1080p, 25Mbit) or a mix".into()),
            (Some(_), Some(_)) => return Err("give either a format or a mix, not both".into()),
            _ => {}
        }
        let max = self.max == Some(true);
        match (self.count, max) {
            (None, false) => return Err("say how many viewers: a count, or max to find the capacity".into()),
            (Some(_), true) => return Err("give either a count or max, not both".into()),
            _ => {}
        }
        for (key, value) in
            [("count", self.count), ("limit", self.limit), ("workers", self.workers), ("inflight", self.inflight)]
        {
            if value == Some(0) {
                return Err(format!("--{key} must be at least 1"));
            }
        }
        // The player's settings against one another and the chunk (with the defaults filled in) are checked where
        // they are resolved: `plan::streams_limits::check_player`.
        for (key, value) in [
            ("duration", self.duration),
            ("buffer", self.buffer),
            ("steady-within", self.steady_within),
            ("media-length", self.media_length),
            ("estimate-time", self.estimate_time),
            ("seek-every", self.seek_every),
            ("max-startup", self.max_startup),
        ] {
            if value == Some(Duration::ZERO) {
                return Err(format!("--{key} must be above zero: give a time such as 60s"));
            }
        }
        if max && self.files == Some(Assignment::Each) {
            return Err("files each with max would need a file per viewer at every count: use library:N".into());
        }
        if self.precision.is_some_and(|p| !(0.0..=50.0).contains(&p)) {
            return Err("precision is a percentage from 0 to 50".into());
        }
        if self.confirmations.is_some_and(|c| c > MAX_CONFIRMATIONS) {
            return Err(format!("--confirm (confirmations in a job) is a count from 0 to {MAX_CONFIRMATIONS}"));
        }
        if self.vbr.is_some_and(|v| !(0.0..=90.0).contains(&v)) {
            return Err("vbr is a percentage of the mean bitrate from 0 to 90".into());
        }
        self.delivery.unwrap_or_default().check_chunk(self.chunk)?;
        if self.ingest.is_some() && self.library.is_some() {
            return Err("ingest writes in streamcap's work directory: not with library (your own media)".into());
        }
        self.check_library()
    }

    /// The library's keys agree: the user's media are the titles (no title count, no size), and a size is for
    /// the generated library only.
    fn check_library(&self) -> Result<(), String> {
        if self.library_size.is_some_and(|s| s.0 == 0) {
            return Err("library-size must be above zero: give a size such as 8G".into());
        }
        match (self.library.is_some(), self.files, self.library_size.is_some()) {
            (true, Some(Assignment::One | Assignment::Each), _) => Err("with library (your own media) the viewers \
                 are spread over your files: leave files out, or give files library:zipf=S for a popularity"
                .into()),
            (true, Some(Assignment::Library { titles: Some(_), .. }), _) => Err("with library (your own media) \
                 every media file found is a title: give files library or library:zipf=S, without a count"
                .into()),
            (true, _, true) => {
                Err("library-size sizes the library streamcap writes: not with library (your own media)".into())
            }
            (false, Some(Assignment::One | Assignment::Each), true) => Err("library-size sizes the library of \
                 titles: with files one or each the media are sized by media-length instead"
                .into()),
            _ => Ok(()),
        }
    }

    /// The formats and their weights.
    pub fn mix(&self) -> Option<Mix> {
        self.mix.clone().or_else(|| self.format.clone().map(|f| Mix(vec![(f, 1)])))
    }
}

/// How many bytes a chunk holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ChunkSize {
    Bytes(u64),
    /// Seconds of media: bytes depend on each format's bitrate.
    Media(Duration),
}

impl ChunkSize {
    /// Bytes per chunk at `bitrate`, rounded up to a multiple of 4096 (direct I/O alignment).
    pub fn bytes_at(self, bitrate: Bitrate) -> u64 {
        let bytes = match self {
            ChunkSize::Bytes(b) => b,
            ChunkSize::Media(d) => (bitrate.byte_rate().bytes_per_sec() * d.as_secs_f64()).ceil() as u64,
        };
        bytes.max(1).div_ceil(4096) * 4096
    }
}

impl FromStr for ChunkSize {
    type Err = String;
    fn from_str(s: &str) -> Result<ChunkSize, String> {
        let t = s.trim();
        if t.ends_with("ms") || (t.ends_with('s') && !t.ends_with("/s")) {
            let d = parse_duration(t).map_err(|e| e.to_string())?;
            if d.is_zero() || d > Duration::from_secs(60) {
                return Err(format!("a chunk of {t} of media is out of range: give more than 0 s and at most 60 s"));
            }
            return Ok(ChunkSize::Media(d));
        }
        let bytes = Bytes::parse(t).map_err(|e| e.to_string())?;
        if bytes.0 == 0 || bytes.0 > 64 << 20 {
            return Err(format!("a chunk of {bytes} is out of range: give 4k to 64M, or seconds of media (2s)"));
        }
        Ok(ChunkSize::Bytes(bytes.0))
    }
}

impl fmt::Display for ChunkSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChunkSize::Bytes(b) => write!(f, "{b}"),
            ChunkSize::Media(d) => write!(f, "{}s", d.as_secs_f64()),
        }
    }
}

/// Which file each viewer reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Assignment {
    /// Every viewer of a format reads the same test file (bitrate × media length), each from its own random
    /// position: small enough for a cache to serve, so not a capacity answer.
    One,
    /// A test file per viewer and format (bitrate × media length).
    Each,
    /// A library of titles shared by every format: `titles` of them (`None`: as many as its size allows, or
    /// every file of the user's library), each viewer its own title, or picked by Zipf popularity with exponent
    /// `zipf` (0: every title equally likely).
    Library { titles: Option<u32>, zipf: Option<f64> },
}

impl FromStr for Assignment {
    type Err = String;
    fn from_str(s: &str) -> Result<Assignment, String> {
        let bad = || format!("'{s}' is not a file assignment: library, library:N, library:zipf=S, one or each");
        match s {
            "one" => Ok(Assignment::One),
            "each" => Ok(Assignment::Each),
            "library" => Ok(Assignment::Library { titles: None, zipf: None }),
            _ => {
                let rest = s.strip_prefix("library:").ok_or_else(bad)?;
                let (n, zipf) = match rest.split_once(':') {
                    Some((n, z)) => (Some(n), Some(z)),
                    None if rest.starts_with("zipf=") => (None, Some(rest)),
                    None => (Some(rest), None),
                };
                let zipf = zipf
                    .map(|z| z.strip_prefix("zipf=").ok_or_else(bad)?.parse::<f64>().map_err(|_| bad()))
                    .transpose()?;
                let titles = n.map(|n| n.parse::<u32>().map_err(|_| bad())).transpose()?;
                if titles.is_some_and(|t| t == 0 || t > MAX_VIEWERS) || zipf.is_some_and(|z| !(0.0..=10.0).contains(&z))
                {
                    return Err(bad());
                }
                Ok(Assignment::Library { titles, zipf })
            }
        }
    }
}

impl fmt::Display for Assignment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Assignment::One => write!(f, "one"),
            Assignment::Each => write!(f, "each"),
            Assignment::Library { titles, zipf } => {
                write!(f, "library")?;
                if let Some(n) = titles {
                    write!(f, ":{n}")?;
                }
                if let Some(z) = zipf {
                    write!(f, ":zipf={z}")?;
                }
                Ok(())
            }
        }
    }
}

/// Background writers (`--ingest RATE[:N]`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IngestSpec {
    /// All writers together.
    pub rate: ByteRate,
    pub writers: u32,
}

impl FromStr for IngestSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<IngestSpec, String> {
        let (rate, writers) = match s.rsplit_once(':') {
            Some((r, n)) => (r, n.parse::<u32>().map_err(|_| format!("'{n}' is not a number of writers"))?),
            None => (s, 1),
        };
        let rate = ByteRate::parse(rate).map_err(|e| e.to_string())?;
        if rate.bytes_per_sec() <= 0.0 || writers == 0 || writers > 64 {
            return Err(format!("ingest {s}: give a rate above 0 and 1 to 64 writers, e.g. 50MB/s:2"));
        }
        Ok(IngestSpec { rate, writers })
    }
}

impl fmt::Display for IngestSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}MB/s:{}", self.rate.bytes_per_sec() / 1e6, self.writers)
    }
}

/// Serde through the text form, for values a person writes as one string in TOML.
macro_rules! serde_as_text {
    ($($t:ty),*) => {$(
        impl Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
            }
        }
    )*};
}

serde_as_text!(ChunkSize, Assignment, IngestSpec);

/// A format is written as the name it was given by (`1080p`, or the bitrate as typed).
impl Serialize for Format {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name)
    }
}

impl<'de> Deserialize<'de> for Format {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Format::parse(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// A mix is written as `name:weight,name:weight`.
impl Serialize for Mix {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let parts: Vec<String> = self.0.iter().map(|(f, w)| format!("{}:{w}", f.name)).collect();
        s.serialize_str(&parts.join(","))
    }
}

impl<'de> Deserialize<'de> for Mix {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_and_print_back() {
        for text in ["one", "each", "library", "library:20", "library:zipf=0.8", "library:20:zipf=1.2"] {
            assert_eq!(text.parse::<Assignment>().unwrap().to_string(), text);
        }
        for bad in ["library:0", "library:x", "library:zipf=", "library:5:zipf=11", "library:5:theta=1"] {
            assert!(bad.parse::<Assignment>().is_err(), "{bad}");
        }
        assert_eq!("2s".parse::<ChunkSize>().unwrap(), ChunkSize::Media(Duration::from_secs(2)));
        assert_eq!("1M".parse::<ChunkSize>().unwrap(), ChunkSize::Bytes(1 << 20));
        assert!("0".parse::<ChunkSize>().is_err());
        let s: IngestSpec = "50MB/s:2".parse().unwrap();
        assert_eq!((s.rate.bytes_per_sec(), s.writers), (50e6, 2));
        assert!("50MB/s:0".parse::<IngestSpec>().is_err());
    }

    #[test]
    fn check_names_the_problem() {
        let base = StreamsSpec { format: Some("1080p".parse().unwrap()), count: Some(8), ..Default::default() };
        base.check().unwrap();
        let none = StreamsSpec { count: Some(8), ..Default::default() };
        assert!(none.check().unwrap_err().contains("format"));
        let zero_limit = StreamsSpec { count: None, max: Some(true), limit: Some(0), ..base.clone() };
        assert!(zero_limit.check().unwrap_err().contains("--limit must be at least 1"));
        // Guards issue 25: a seek every 0 s and a start-up target of 0 s were taken.
        let seeks = StreamsSpec { seek_every: Some(Duration::ZERO), ..base.clone() };
        assert!(seeks.check().unwrap_err().contains("--seek-every must be above zero"));
        let startup = StreamsSpec { max_startup: Some(Duration::ZERO), ..base.clone() };
        assert!(startup.check().unwrap_err().contains("--max-startup must be above zero"));
        let own = StreamsSpec { library: Some("/srv/media".into()), ..base.clone() };
        own.check().unwrap();
        let one = StreamsSpec { files: Some(Assignment::One), ..own.clone() };
        assert!(one.check().unwrap_err().contains("spread over your files"));
        let counted = StreamsSpec { files: Some("library:5".parse().unwrap()), ..own.clone() };
        assert!(counted.check().unwrap_err().contains("without a count"));
        let sized = StreamsSpec { library_size: Some(Bytes::gib(1)), ..own };
        assert!(sized.check().unwrap_err().contains("not with library"));
    }

    #[test]
    fn a_streams_table_reads_from_toml() {
        let spec: StreamsSpec =
            toml::from_str("mix = \"1080p:70,2160p:30\"\nmax = true\nduration = \"20s\"\nfiles = \"library:5\"")
                .unwrap();
        assert_eq!(spec.mix().unwrap().0.len(), 2);
        assert_eq!(spec.duration, Some(Duration::from_secs(20)));
        spec.check().unwrap();
        assert!(toml::from_str::<StreamsSpec>("bogus = 1").is_err());
        // The key of the user's media was `use-existing`; it still reads.
        let old: StreamsSpec = toml::from_str("format = \"1080p\"\ncount = 2\nuse-existing = \"/srv/media\"").unwrap();
        assert_eq!(old.library, Some(PathBuf::from("/srv/media")));
        let sized: StreamsSpec = toml::from_str("format = \"1080p\"\ncount = 2\nlibrary-size = \"2G\"").unwrap();
        assert_eq!(sized.library_size, Some(Bytes::gib(2)));
    }
}
