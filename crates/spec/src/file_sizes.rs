//! `FileSizeSpec`: the sizes of a tree's files as asked — one size, weighted sizes, a range, or vdbench's
//! `sizes=(n,0)` (sizes drawn around an average of n, `~n` in TOML) — and their text form in job files.
//!
//! Must not: draw sizes (that is `workload::fileset::FileSizes`, which the plan builds from this).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::values::{ValueError, serde_via_str, value_error};
use crate::units::Bytes;

/// File sizes of a tree.
#[derive(Debug, Clone, PartialEq)]
pub enum FileSizeSpec {
    Fixed(Bytes),
    /// Sizes with weights in percent (`16k/80:1m/20`; vdbench `size=(16k,80,1m,20)`).
    Weighted(Vec<(Bytes, f64)>),
    /// Sizes spread evenly between two bounds (`4k-1m`; vdbench `size=(4k,1m,0)`).
    Range(Bytes, Bytes),
    /// Sizes drawn as vdbench draws `sizes=(n,0)` (`~1m`): evenly between n/2 and 3n/2, rounded to whole 1 KiB,
    /// 10 KiB, 100 KiB or 1 MiB by size (at least 1 KiB).
    Around(Bytes),
}

/// The smallest average `~n` takes: below it vdbench's rounding makes empty files.
pub const SMALLEST_AVERAGE: Bytes = Bytes(1024);

impl FromStr for FileSizeSpec {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let expected = "a size (16k), a range (4k-1m), weighted sizes (16k/80:1m/20) or an average (~1m)";
        let text = s.trim();
        let size = |t: &str| Bytes::parse(t.trim()).map_err(|_| value_error(s, "file size", expected));
        if let Some(mean) = text.strip_prefix('~') {
            let mean = size(mean)?;
            if mean < SMALLEST_AVERAGE {
                return Err(value_error(s, "file size", "an average of at least 1 KiB (~1k)"));
            }
            return Ok(FileSizeSpec::Around(mean));
        }
        if text.contains('/') || text.contains(':') {
            let mut entries = Vec::new();
            for part in text.split(':') {
                let (bytes, weight) = part.split_once('/').ok_or_else(|| value_error(s, "file size", expected))?;
                let weight = weight
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|w| w.is_finite() && *w >= 0.0)
                    .ok_or_else(|| value_error(s, "file size", expected))?;
                entries.push((size(bytes)?, weight));
            }
            let total: f64 = entries.iter().map(|e| e.1).sum();
            if (total - 100.0).abs() > 0.01 {
                return Err(value_error(
                    s,
                    "file size",
                    format!("weights that add up to 100 (these add up to {total})"),
                ));
            }
            return Ok(FileSizeSpec::Weighted(entries));
        }
        if let Some((low, high)) = text.split_once('-') {
            let (low, high) = (size(low)?, size(high)?);
            if low > high {
                return Err(value_error(s, "file size", "a range from the smaller size to the larger"));
            }
            return Ok(FileSizeSpec::Range(low, high));
        }
        Ok(FileSizeSpec::Fixed(size(text)?))
    }
}

impl fmt::Display for FileSizeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileSizeSpec::Fixed(b) => write!(f, "{b}"),
            FileSizeSpec::Range(a, b) => write!(f, "{a}-{b}"),
            FileSizeSpec::Around(mean) => write!(f, "~{mean}"),
            FileSizeSpec::Weighted(entries) => {
                let parts: Vec<String> = entries.iter().map(|(b, w)| format!("{b}/{w}")).collect();
                f.write_str(&parts.join(":"))
            }
        }
    }
}
serde_via_str!(FileSizeSpec);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_average_reads_and_prints_back() {
        assert_eq!("~1m".parse::<FileSizeSpec>().unwrap(), FileSizeSpec::Around(Bytes(1 << 20)));
        assert_eq!(
            FileSizeSpec::Around(Bytes(1 << 20)).to_string().parse::<FileSizeSpec>().unwrap().to_string(),
            "~1 MiB"
        );
        assert!("~512".parse::<FileSizeSpec>().unwrap_err().to_string().contains("at least 1 KiB"));
    }
}
