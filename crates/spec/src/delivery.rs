//! How a viewer's media reach its player (`streams --delivery`, spec key `delivery`): **direct** play, the
//! file read in the player's request size (one ranged `GET` per request over http), or **HLS/DASH segments**,
//! one request per segment of N seconds of media (a byte range of one file, N × bitrate ÷ 8 bytes; over http one
//! `GET` read to its end). Parsing and the default segment length only: how a segment becomes a read is the
//! plan's and the viewers' business (docs/streams.md, "Delivery").

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::streams::ChunkSize;
use crate::units::parse_duration;

/// A segment's media when `hls` gives none: Apple's HLS authoring guidance targets 6 s segments (it was 10 s
/// before 2016); Jellyfin cuts 3 s (3.003 s at 23.976 fps), `hls:3`.
pub const DEFAULT_SEGMENT: Duration = Duration::from_secs(6);

/// The longest segment taken: the longest chunk of media a request may cover (`ChunkSize`'s bound).
pub const MAX_SEGMENT: Duration = Duration::from_secs(60);

/// How a viewer's requests are shaped.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum Delivery {
    /// Progressive (direct) play: the file read in the player's request size (`chunk`).
    #[default]
    Direct,
    /// HLS or DASH: one request per segment of this much media.
    Segments(Duration),
}

impl Delivery {
    /// The chunk one request fetches: a segment's media, or `None` for direct play (the chunk or the player's
    /// request size decides).
    pub fn segment_chunk(self) -> Option<ChunkSize> {
        match self {
            Delivery::Direct => None,
            Delivery::Segments(d) => Some(ChunkSize::Media(d)),
        }
    }

    /// The segment's media, for segmented delivery.
    pub fn segment(self) -> Option<Duration> {
        match self {
            Delivery::Direct => None,
            Delivery::Segments(d) => Some(d),
        }
    }

    /// A chunk size and segments say two different things about one request: refused, with both flags named.
    pub fn check_chunk(self, chunk: Option<ChunkSize>) -> Result<(), String> {
        match (self, chunk) {
            (Delivery::Segments(_), Some(chunk)) => Err(format!(
                "delivery {self} fetches one segment per request, and chunk {chunk} says another request size: give \
                 --chunk with --delivery direct (or none), or leave --chunk out"
            )),
            _ => Ok(()),
        }
    }
}

impl FromStr for Delivery {
    type Err = String;
    fn from_str(s: &str) -> Result<Delivery, String> {
        let t = s.trim();
        let (shape, seconds) = match t.split_once(':') {
            Some((shape, seconds)) => (shape, Some(seconds.trim())),
            None => (t, None),
        };
        let segmented = shape.eq_ignore_ascii_case("hls") || shape.eq_ignore_ascii_case("dash");
        match (segmented, seconds) {
            (false, None) if shape.eq_ignore_ascii_case("direct") => Ok(Delivery::Direct),
            (true, None) => Ok(Delivery::Segments(DEFAULT_SEGMENT)),
            (true, Some(text)) => {
                let d = parse_duration(text).map_err(|_| {
                    format!(
                        "delivery {t}: '{text}' is not a segment length: give seconds of media, e.g. hls:6 or hls:3.003"
                    )
                })?;
                if d.is_zero() || d > MAX_SEGMENT {
                    return Err(format!(
                        "delivery {t}: a segment of {text} is out of range: give more than 0 s and at most {} s (hls:6)",
                        MAX_SEGMENT.as_secs()
                    ));
                }
                Ok(Delivery::Segments(d))
            }
            _ => Err(format!(
                "delivery '{t}' is not a shape streamcap knows: give direct, or hls[:SECONDS] (dash[:SECONDS] alike) for one request per segment"
            )),
        }
    }
}

impl fmt::Display for Delivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Delivery::Direct => f.write_str("direct"),
            Delivery::Segments(d) => write!(f, "hls:{}", d.as_secs_f64()),
        }
    }
}

impl Serialize for Delivery {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Delivery {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_parse_with_and_without_a_segment_length() {
        assert_eq!("direct".parse::<Delivery>(), Ok(Delivery::Direct));
        assert_eq!("hls".parse::<Delivery>(), Ok(Delivery::Segments(Duration::from_secs(6))));
        assert_eq!("HLS:2".parse::<Delivery>(), Ok(Delivery::Segments(Duration::from_secs(2))));
        assert_eq!("dash:4s".parse::<Delivery>(), Ok(Delivery::Segments(Duration::from_secs(4))));
        assert_eq!("hls:3.003".parse::<Delivery>(), Ok(Delivery::Segments(Duration::from_millis(3003))));
        assert_eq!(Delivery::Segments(Duration::from_millis(3003)).to_string(), "hls:3.003");
        assert_eq!(
            "hls:3.003".parse::<Delivery>().unwrap().to_string().parse::<Delivery>().unwrap().to_string(),
            "hls:3.003"
        );
    }

    #[test]
    fn bad_shapes_and_lengths_are_refused_with_the_fix() {
        let zero = "hls:0".parse::<Delivery>().unwrap_err();
        assert!(zero.contains("out of range") && zero.contains("hls:6"), "{zero}");
        let word = "hls:abc".parse::<Delivery>().unwrap_err();
        assert!(word.contains("'abc' is not a segment length"), "{word}");
        let shape = "smooth".parse::<Delivery>().unwrap_err();
        assert!(shape.contains("give direct, or hls[:SECONDS]"), "{shape}");
        assert!("direct:2".parse::<Delivery>().is_err());
        assert!("hls:61".parse::<Delivery>().is_err());
    }

    #[test]
    fn segments_and_a_chunk_size_conflict() {
        let hls = Delivery::Segments(DEFAULT_SEGMENT);
        assert_eq!(hls.segment_chunk(), Some(ChunkSize::Media(DEFAULT_SEGMENT)));
        let err = hls.check_chunk(Some(ChunkSize::Bytes(1 << 20))).unwrap_err();
        assert!(err.contains("leave --chunk out"), "{err}");
        assert!(Delivery::Direct.check_chunk(Some(ChunkSize::Bytes(1 << 20))).is_ok());
        assert!(hls.check_chunk(None).is_ok());
    }
}
