//! `Bytes`: a count of bytes, with the parsing and display rules every size in streamcap follows.
//!
//! Rules (documented for users in docs/architecture.md, "Units"):
//! - a bare number is bytes;
//! - `k`, `m`, `g`, `t`, `p` (either case) are powers of 1024, as in fio's default `kb_base=1024`:
//!   `4k` = 4096, `1G` = 1 073 741 824;
//! - the IEC forms `KiB`, `MiB`, `GiB`, `TiB` are powers of 1024 too;
//! - the SI forms with an explicit byte sign, `kB`, `MB`, `GB`, `TB`, are powers of 1000, because that is what
//!   drive vendors and most throughput figures mean by them;
//! - fractions are allowed where they land on a whole byte count ("1.5GiB").
//!
//! This module only parses and prints; it knows nothing about I/O.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::UnitError;

/// A number of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Bytes(pub u64);

pub const KIB: u64 = 1024;
pub const MIB: u64 = 1024 * KIB;
pub const GIB: u64 = 1024 * MIB;
pub const TIB: u64 = 1024 * GIB;

impl Bytes {
    pub const ZERO: Bytes = Bytes(0);

    pub const fn kib(n: u64) -> Bytes {
        Bytes(n * KIB)
    }

    pub const fn mib(n: u64) -> Bytes {
        Bytes(n * MIB)
    }

    pub const fn gib(n: u64) -> Bytes {
        Bytes(n * GIB)
    }

    pub const fn get(self) -> u64 {
        self.0
    }

    /// Parses a size such as `4k`, `1.5GiB`, `200MB` or `4096` (see the module rules).
    pub fn parse(text: &str) -> Result<Bytes, UnitError> {
        let (value, unit) =
            split_number(text.trim()).ok_or_else(|| UnitError::new(text, "a size such as 4k, 1M, 1.5GiB or 4096"))?;
        let multiplier = size_multiplier(unit)
            .ok_or_else(|| UnitError::new(text, "a size unit: k, M, G, T (×1024), KiB…TiB, or kB…TB (×1000)"))?;
        const OUT_OF_RANGE: &str = "a size below 16 EiB (16384P), the largest a 64-bit byte count holds";
        // Whole numbers are multiplied exactly: an f64 holds only 53 bits, so "18446744073709551615" or "16383P"
        // would otherwise round, and 2^64 itself would pass a `<= u64::MAX as f64` test and saturate.
        if let Some(whole) = whole_number(text.trim()) {
            return whole.checked_mul(multiplier).map(Bytes).ok_or_else(|| UnitError::new(text, OUT_OF_RANGE));
        }
        let bytes = value * multiplier as f64;
        // 2^64 is exactly representable; every f64 below it converts to a u64 without saturating.
        if !(0.0..18_446_744_073_709_551_616.0).contains(&bytes) {
            return Err(UnitError::new(text, OUT_OF_RANGE));
        }
        if bytes.fract() != 0.0 {
            return Err(UnitError::new(text, "a whole number of bytes"));
        }
        Ok(Bytes(bytes as u64))
    }

    /// As [`Bytes::parse`], refusing 0: for sizes that must hold something (a chunk, a data set, a file).
    pub fn parse_positive(text: &str) -> Result<Bytes, UnitError> {
        match Bytes::parse(text)? {
            Bytes(0) => Err(UnitError::new(text, "a size above zero")),
            bytes => Ok(bytes),
        }
    }

    /// The size in the largest binary unit that holds it whole ("4K", "1032K", "1536"): a job file's form that
    /// reads back as the same size, where the display ("1.01 MiB") rounds.
    pub fn exact(self) -> String {
        let units = [(TIB * 1024, "P"), (TIB, "T"), (GIB, "G"), (MIB, "M"), (KIB, "K")];
        match units.into_iter().find(|&(unit, _)| self.0 >= unit && self.0.is_multiple_of(unit)) {
            Some((unit, name)) => format!("{}{name}", self.0 / unit),
            None => self.0.to_string(),
        }
    }

    /// `self + other`, or `None` past 16 EiB.
    pub fn checked_add(self, other: Bytes) -> Option<Bytes> {
        self.0.checked_add(other.0).map(Bytes)
    }

    /// `self × n`, or `None` past 16 EiB.
    pub fn checked_mul(self, n: u64) -> Option<Bytes> {
        self.0.checked_mul(n).map(Bytes)
    }
}

/// The leading digits of "4096", "4k" or "1_000M" as an exact integer; `None` for a fraction or past u64.
fn whole_number(text: &str) -> Option<u64> {
    let end = text.find(|c: char| !(c.is_ascii_digit() || c == '_')).unwrap_or(text.len());
    if text[end..].starts_with('.') {
        return None;
    }
    let digits: String = text[..end].chars().filter(|&c| c != '_').collect();
    digits.parse().ok()
}

/// Splits "1.5GiB" into (1.5, "GiB"). Returns None when there is no leading number.
pub(crate) fn split_number(text: &str) -> Option<(f64, &str)> {
    let end = text.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(text.len());
    let (number, unit) = text.split_at(end);
    if number.is_empty() {
        return None;
    }
    let cleaned: String = number.chars().filter(|&c| c != '_').collect();
    let value: f64 = cleaned.parse().ok()?;
    Some((value, unit.trim()))
}

fn size_multiplier(unit: &str) -> Option<u64> {
    let decimal = |p: u32| 1000u64.pow(p);
    let binary = |p: u32| 1024u64.pow(p);
    Some(match unit {
        "" | "b" | "B" => 1,
        "k" | "K" | "KiB" | "kiB" | "Ki" | "ki" => binary(1),
        "m" | "M" | "MiB" | "Mi" => binary(2),
        "g" | "G" | "GiB" | "Gi" => binary(3),
        "t" | "T" | "TiB" | "Ti" => binary(4),
        "p" | "P" | "PiB" | "Pi" => binary(5),
        "kB" | "KB" => decimal(1),
        "MB" => decimal(2),
        "GB" => decimal(3),
        "TB" => decimal(4),
        "PB" => decimal(5),
        _ => return None,
    })
}

impl FromStr for Bytes {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Bytes::parse(s)
    }
}

/// Prints the shortest exact IEC form when there is one ("4 KiB", "1 GiB"), otherwise two decimals ("1.50 GiB").
impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(u64, &str); 5] = [(TIB * 1024, "PiB"), (TIB, "TiB"), (GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")];
        for (size, name) in UNITS {
            if self.0 >= size {
                return if self.0.is_multiple_of(size) {
                    write!(f, "{} {name}", self.0 / size)
                } else {
                    write!(f, "{:.2} {name}", self.0 as f64 / size as f64)
                };
            }
        }
        write!(f, "{} B", self.0)
    }
}

/// Serialized as a plain integer number of bytes, so scripts never parse units.
impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.0)
    }
}

/// Accepts either an integer (bytes) or a string with a unit ("4k"), so job files can say either.
impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Text(String),
        }
        match Raw::deserialize(deserializer)? {
            Raw::Int(n) => Ok(Bytes(n)),
            Raw::Text(s) => Bytes::parse(&s).map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exact_form_reads_back_as_the_same_size() {
        for (bytes, text) in [(4096, "4K"), (1032 * KIB, "1032K"), (1536, "1536"), (2 * GIB, "2G"), (0, "0")] {
            assert_eq!(Bytes(bytes).exact(), text);
            assert_eq!(Bytes::parse(text).unwrap(), Bytes(bytes));
        }
    }

    #[test]
    fn parses_binary_and_decimal_units() {
        assert_eq!(Bytes::parse("4096").unwrap(), Bytes(4096));
        assert_eq!(Bytes::parse("4k").unwrap(), Bytes(4096));
        assert_eq!(Bytes::parse("4K").unwrap(), Bytes(4096));
        assert_eq!(Bytes::parse("1M").unwrap(), Bytes(MIB));
        assert_eq!(Bytes::parse("1.5GiB").unwrap(), Bytes(3 * GIB / 2));
        assert_eq!(Bytes::parse("200MB").unwrap(), Bytes(200_000_000));
        assert_eq!(Bytes::parse("1 GiB").unwrap(), Bytes(GIB));
        assert_eq!(Bytes::parse("1_000").unwrap(), Bytes(1000));
    }

    #[test]
    fn rejects_nonsense_with_a_hint() {
        for bad in ["", "k", "4q", "-1", "1.5", "4kk", "1e3"] {
            let err = Bytes::parse(bad).unwrap_err();
            assert!(err.to_string().contains("expected"), "{bad}: {err}");
        }
    }

    #[test]
    fn sizes_at_and_past_16_eib_are_refused_not_wrapped() {
        // Guards issue 9: `--size 16384P` (exactly 2^64) passed the range test and saturated, and later sums
        // overflowed with "out of range integral type conversion attempted".
        for bad in ["16384P", "16384PiB", "18446744073709551616", "99999999999999999999999", "20000000000000000kB"] {
            let err = Bytes::parse(bad).unwrap_err().to_string();
            assert!(err.contains("16 EiB"), "{bad}: {err}");
        }
        assert_eq!(Bytes::parse("18446744073709551615").unwrap(), Bytes(u64::MAX));
        assert_eq!(Bytes::parse("16383P").unwrap(), Bytes(16383 << 50));
        assert_eq!(Bytes::parse("18446744073675997184").unwrap(), Bytes(18_446_744_073_675_997_184));
        assert_eq!(Bytes(u64::MAX).checked_add(Bytes(1)), None);
        assert_eq!(Bytes(4).checked_mul(3), Some(Bytes(12)));
    }

    #[test]
    fn displays_exact_iec_when_possible() {
        assert_eq!(Bytes(4096).to_string(), "4 KiB");
        assert_eq!(Bytes(GIB).to_string(), "1 GiB");
        assert_eq!(Bytes(3 * GIB / 2).to_string(), "1.50 GiB");
        assert_eq!(Bytes(100).to_string(), "100 B");
    }

    #[test]
    fn display_round_trips_through_parse_for_exact_values() {
        for n in [4096, MIB, 7 * GIB, 3 * TIB, 12] {
            let shown = Bytes(n).to_string().replace(' ', "");
            assert_eq!(Bytes::parse(&shown).unwrap(), Bytes(n), "{shown}");
        }
    }
}
