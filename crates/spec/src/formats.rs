//! Named media formats with typical bitrates, and the `--mix` of formats. The table and its assumptions are in
//! docs/streams.md; the bitrates are typical averages of the video plus audio, not peaks.

use std::fmt;
use std::str::FromStr;

use crate::units::Bitrate;

/// A stream format: a name for people and a bitrate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format {
    /// The short name a user types ("2160p-hevc"), or the bitrate as typed when no name was used.
    pub name: String,
    /// A label for sentences ("2160p HEVC").
    pub label: String,
    pub bitrate: Bitrate,
}

/// (short name, label, Mbit/s). Short names accept `_` for `-` and any case.
pub const FORMATS: &[(&str, &str, u64)] = &[
    ("720p", "720p H.264", 5),
    ("1080p", "1080p H.264", 8),
    ("1080p-remux", "1080p remux", 30),
    ("2160p", "2160p HEVC", 25),
    ("2160p-hevc", "2160p HEVC", 25),
    ("2160p-remux", "2160p remux", 80),
    ("prores-1080p", "ProRes 422 HQ 1080p30", 220),
    ("prores-2160p", "ProRes 422 HQ 2160p30", 880),
];

impl Format {
    /// A named format, or a bare bitrate ("25Mbit").
    pub fn parse(text: &str) -> Result<Format, String> {
        let key = text.trim().to_ascii_lowercase().replace('_', "-");
        if let Some((name, label, mbit)) = FORMATS.iter().find(|(name, ..)| *name == key) {
            return Ok(Format { name: (*name).into(), label: (*label).into(), bitrate: Bitrate(mbit * 1_000_000) });
        }
        let bitrate = Bitrate::parse(text).map_err(|_| {
            let names: Vec<&str> = FORMATS.iter().map(|(n, ..)| *n).collect();
            format!("'{text}' is neither a bitrate (25Mbit, 8Mbps) nor a format name ({})", names.join(", "))
        })?;
        Ok(Format { name: bitrate.to_string(), label: "streams".into(), bitrate })
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.label == "streams" {
            write!(f, "{}", self.bitrate)
        } else {
            write!(f, "{} ({})", self.label, self.bitrate)
        }
    }
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::parse(s)
    }
}

/// A household: how many streams of each format play together, `2x2160p-remux,3x1080p` (`--expect`). A count
/// and a format joined by `x` (or `×`, `*`); a format named twice adds up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Household(pub Vec<(Format, u32)>);

impl FromStr for Household {
    type Err = String;
    fn from_str(s: &str) -> Result<Household, String> {
        let mut wanted: Vec<(Format, u32)> = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let shape = || format!("'{part}' in --expect: write COUNTxFORMAT, as in 2x2160p-remux,3x1080p");
            let split = part.find(['x', 'X', '×', '*']).ok_or_else(shape)?;
            let (count, rest) = part.split_at(split);
            let count: u32 = count.trim().parse().map_err(|_| shape())?;
            let name = rest.chars().skip(1).collect::<String>();
            let format = Format::parse(&name)?;
            match wanted.iter_mut().find(|(f, _)| f.name == format.name) {
                Some((_, n)) => *n += count,
                None => wanted.push((format, count)),
            }
        }
        wanted.retain(|(_, n)| *n > 0);
        if wanted.is_empty() {
            return Err("--expect names no stream: write COUNTxFORMAT, as in 2x2160p-remux,3x1080p".into());
        }
        Ok(Household(wanted))
    }
}

impl fmt::Display for Household {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(format, n)| format!("{n}x{}", format.name)).collect();
        write!(f, "{}", parts.join(","))
    }
}

/// What `streams --expect` states: a count (`--expect 3`: the answer must reach it), or a household in the
/// grammar of `check --expect` (`2x2160p`), answered yes / only without margin / no from the capacity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expectation {
    Count(u32),
    Household(Household),
}

impl Expectation {
    /// The count a plain `--expect N` states.
    pub fn count(&self) -> Option<u32> {
        match self {
            Expectation::Count(n) => Some(*n),
            Expectation::Household(_) => None,
        }
    }
}

impl FromStr for Expectation {
    type Err = String;
    fn from_str(s: &str) -> Result<Expectation, String> {
        match s.trim().parse::<u32>() {
            Ok(n) => Ok(Expectation::Count(n)),
            Err(_) => s.parse().map(Expectation::Household),
        }
    }
}

/// A mix of formats with integer weights: `1080p:70,2160p:30`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mix(pub Vec<(Format, u32)>);

impl FromStr for Mix {
    type Err = String;
    fn from_str(s: &str) -> Result<Mix, String> {
        let mut parts = Vec::new();
        for part in s.split(',') {
            let (name, weight) = part
                .rsplit_once(':')
                .ok_or_else(|| format!("'{part}' in --mix needs a weight: FORMAT:WEIGHT, as in 1080p:70,2160p:30"))?;
            let weight: u32 =
                weight.trim().parse().map_err(|_| format!("the weight in '{part}' is not a whole number"))?;
            if weight > 0 {
                parts.push((Format::parse(name)?, weight));
            }
        }
        if parts.is_empty() {
            return Err("--mix needs at least one format with a weight above 0".into());
        }
        Ok(Mix(parts))
    }
}

impl Mix {
    /// The format of each of `count` viewers: largest remainder apportionment, interleaved so that any prefix
    /// of the viewers (those who arrived first) keeps the proportions.
    pub fn assign(&self, count: u32) -> Vec<usize> {
        let total: u64 = self.0.iter().map(|(_, w)| u64::from(*w)).sum();
        let mut given = vec![0u64; self.0.len()];
        (0..u64::from(count))
            .map(|i| {
                // Give viewer i to the format furthest below its share of i + 1 viewers.
                let pick = (0..self.0.len())
                    .max_by_key(|&f| {
                        let want = (i + 1) * u64::from(self.0[f].1) * 1000 / total;
                        (want as i64 - given[f] as i64 * 1000, std::cmp::Reverse(f))
                    })
                    .expect("a mix has a format");
                given[pick] += 1;
                pick
            })
            .collect()
    }

    /// The label for sentences: one format's label, or "mixed streams".
    pub fn label(&self) -> String {
        match self.0.as_slice() {
            [(one, _)] => one.to_string(),
            many => {
                let total: u32 = many.iter().map(|(_, w)| w).sum();
                let parts: Vec<String> = many.iter().map(|(f, w)| format!("{}% {}", w * 100 / total, f)).collect();
                format!("mixed streams ({})", parts.join(", "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_bitrates_parse() {
        assert_eq!(Format::parse("2160P_HEVC").unwrap().bitrate, Bitrate(25_000_000));
        assert_eq!(Format::parse("12Mbit").unwrap().bitrate, Bitrate(12_000_000));
        assert!(Format::parse("4k-dolby").unwrap_err().contains("2160p-remux"));
        assert_eq!(Format::parse("prores-2160p").unwrap().to_string(), "ProRes 422 HQ 2160p30 (880 Mbit/s)");
    }

    #[test]
    fn a_mix_keeps_its_proportions_in_every_prefix() {
        let mix: Mix = "1080p:70,2160p:30".parse().unwrap();
        let picks = mix.assign(10);
        assert_eq!(picks.iter().filter(|&&p| p == 1).count(), 3);
        assert_eq!(mix.assign(100).iter().filter(|&&p| p == 0).count(), 70);
        assert!("1080p".parse::<Mix>().is_err());
    }

    #[test]
    fn a_household_is_counts_of_formats() {
        let h: Household = "2x2160p-remux, 3×1080p,1X1080p".parse().unwrap();
        let named: Vec<(&str, u32)> = h.0.iter().map(|(f, n)| (f.name.as_str(), *n)).collect();
        assert_eq!(named, [("2160p-remux", 2), ("1080p", 4)]);
        assert_eq!(h.to_string(), "2x2160p-remux,4x1080p");
        for bad in ["", "2160p-remux", "twox1080p", "2xfoo"] {
            assert!(bad.parse::<Household>().is_err(), "{bad}");
        }
        assert!("2xfoo".parse::<Household>().unwrap_err().contains("2160p-remux"), "names the formats it knows");
        assert_eq!("3".parse::<Expectation>(), Ok(Expectation::Count(3)));
        let two: Expectation = "2x2160p".parse().unwrap();
        assert!(matches!(&two, Expectation::Household(h) if h.to_string() == "2x2160p"), "{two:?}");
        assert!("3 streams".parse::<Expectation>().is_err());
    }
}
