//! Rates: `ByteRate` (bytes per second, for `--rate 200MB/s` and throughput display) and `Bitrate` (bits per
//! second, for media streams: "25Mbit/s").
//!
//! A byte rate takes the size rules of [`Bytes`](super::Bytes) followed by an optional "/s": `200MB/s` is
//! 200 000 000 B/s, `200M` or `200MiB/s` is 200 × 2^20 B/s. Bitrates are always decimal, as the video world means
//! them: `25Mbit` = 25 000 000 bit/s. Throughput is displayed in MB/s (10^6 bytes), like hdparm and fio's second
//! figure, because that is the unit people compare against drive data sheets.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::UnitError;
use super::bytes::{Bytes, split_number};

/// A rate in bytes per second.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct ByteRate(pub f64);

impl ByteRate {
    pub fn bytes_per_sec(self) -> f64 {
        self.0
    }

    /// Parses "200MB/s", "200M", "1.5GiB/s", "50000" (bytes per second), or a bitrate such as "25Mbit/s" or
    /// "8Mbps" (converted: 25 Mbit/s is 3.125 MB/s), since media people think in bitrates.
    pub fn parse(text: &str) -> Result<ByteRate, UnitError> {
        let trimmed = text.trim();
        let lower = trimmed.to_ascii_lowercase();
        if lower.contains("bit") || lower.ends_with("bps") {
            return Bitrate::parse(trimmed).map(Bitrate::byte_rate);
        }
        let size = trimmed.strip_suffix("/s").or_else(|| trimmed.strip_suffix("ps")).unwrap_or(trimmed);
        let bytes = Bytes::parse(size).map_err(|_| UnitError::new(text, "a rate such as 200MB/s, 50M or 1GiB/s"))?;
        if bytes.0 == 0 {
            return Err(UnitError::new(text, "a rate above zero"));
        }
        Ok(ByteRate(bytes.0 as f64))
    }

    /// Decimal megabytes per second.
    pub fn mb_per_sec(self) -> f64 {
        self.0 / 1e6
    }
}

impl FromStr for ByteRate {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ByteRate::parse(s)
    }
}

impl fmt::Display for ByteRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} MB/s", format_mbps(self.mb_per_sec()))
    }
}

/// Serialized as bytes per second (a plain number).
impl Serialize for ByteRate {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.0)
    }
}

impl<'de> Deserialize<'de> for ByteRate {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Num(f64),
            Text(String),
        }
        match Raw::deserialize(deserializer)? {
            Raw::Num(n) if n > 0.0 => Ok(ByteRate(n)),
            Raw::Num(_) => Err(serde::de::Error::custom("a rate must be above zero")),
            Raw::Text(s) => ByteRate::parse(&s).map_err(serde::de::Error::custom),
        }
    }
}

/// A media bitrate in bits per second.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Bitrate(pub u64);

impl Bitrate {
    /// Parses "25Mbit", "25Mbit/s", "25Mbps", "25M", "800kbit", "1.5Gbit/s" (always decimal).
    pub fn parse(text: &str) -> Result<Bitrate, UnitError> {
        let expected = "a bitrate such as 25Mbit, 8Mbps or 800kbit/s";
        let trimmed = text.trim();
        let body = trimmed.strip_suffix("/s").unwrap_or(trimmed);
        let body = body
            .strip_suffix("bit")
            .or_else(|| body.strip_suffix("bps"))
            .or_else(|| body.strip_suffix("b"))
            .unwrap_or(body);
        let (value, prefix) = split_number(body).ok_or_else(|| UnitError::new(text, expected))?;
        let multiplier = match prefix {
            "" => 1.0,
            "k" | "K" => 1e3,
            "m" | "M" => 1e6,
            "g" | "G" => 1e9,
            _ => return Err(UnitError::new(text, expected)),
        };
        let bits = value * multiplier;
        if !bits.is_finite() || !(1.0..=1e13).contains(&bits) {
            return Err(UnitError::new(text, expected));
        }
        Ok(Bitrate(bits.round() as u64))
    }

    pub fn bits_per_sec(self) -> u64 {
        self.0
    }

    pub fn byte_rate(self) -> ByteRate {
        ByteRate(self.0 as f64 / 8.0)
    }
}

impl FromStr for Bitrate {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Bitrate::parse(s)
    }
}

impl fmt::Display for Bitrate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bits = self.0 as f64;
        if bits >= 1e9 {
            write!(f, "{} Gbit/s", trim_float(bits / 1e9))
        } else if bits >= 1e6 {
            write!(f, "{} Mbit/s", trim_float(bits / 1e6))
        } else if bits >= 1e3 {
            write!(f, "{} kbit/s", trim_float(bits / 1e3))
        } else {
            write!(f, "{bits} bit/s")
        }
    }
}

fn trim_float(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Formats MB/s with precision that suits its size: "0.52", "12.3", "1234".
pub fn format_mbps(mbps: f64) -> String {
    if mbps >= 100.0 {
        format!("{mbps:.0}")
    } else if mbps >= 10.0 {
        format!("{mbps:.1}")
    } else {
        format!("{mbps:.2}")
    }
}

/// Formats an operation rate: "950", "12.3k", "1.25M".
pub fn format_rate(per_sec: f64) -> String {
    if per_sec >= 1e6 {
        format!("{:.2}M", per_sec / 1e6)
    } else if per_sec >= 1e4 {
        format!("{:.1}k", per_sec / 1e3)
    } else if per_sec >= 100.0 {
        format!("{per_sec:.0}")
    } else {
        format!("{per_sec:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_rates() {
        assert_eq!(ByteRate::parse("200MB/s").unwrap().0, 200e6);
        assert_eq!(ByteRate::parse("200M").unwrap().0, 200.0 * 1048576.0);
        assert_eq!(ByteRate::parse("1GiB/s").unwrap().0, 1073741824.0);
        assert!(ByteRate::parse("0").is_err());
        assert!(ByteRate::parse("fast").is_err());
        assert_eq!(ByteRate::parse("25Mbit/s").unwrap().0, 3_125_000.0);
        assert_eq!(ByteRate::parse("8Mbps").unwrap().0, 1_000_000.0);
    }

    #[test]
    fn bitrates() {
        assert_eq!(Bitrate::parse("25Mbit").unwrap(), Bitrate(25_000_000));
        assert_eq!(Bitrate::parse("25Mbit/s").unwrap(), Bitrate(25_000_000));
        assert_eq!(Bitrate::parse("8Mbps").unwrap(), Bitrate(8_000_000));
        assert_eq!(Bitrate::parse("800kbit").unwrap(), Bitrate(800_000));
        assert_eq!(Bitrate::parse("1.5Gbit/s").unwrap(), Bitrate(1_500_000_000));
        assert_eq!(Bitrate(25_000_000).to_string(), "25 Mbit/s");
        assert_eq!(Bitrate(25_000_000).byte_rate().0, 3_125_000.0);
        assert!(Bitrate::parse("25 furlongs").is_err());
    }

    #[test]
    fn rate_formats() {
        assert_eq!(format_rate(950.0), "950");
        assert_eq!(format_rate(12_345.0), "12.3k");
        assert_eq!(format_rate(1_250_000.0), "1.25M");
        assert_eq!(format_mbps(1234.4), "1234");
        assert_eq!(format_mbps(12.34), "12.3");
    }
}
