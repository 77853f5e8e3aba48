//! `IoAmount`: an amount of one direction's I/O after which a raw phase ends — bytes (`1g`), or passes over
//! the phase's data set (`0.5x`), as vdbench's `maxdataread=` and `maxdatawritten=` give it (below 100 a
//! multiple of the sds' sizes). The plan turns passes into bytes once it knows the data set.
//!
//! Must not: know about vdbench's keywords (the vdbench reader maps them) or about workers.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::values::{ValueError, serde_via_str, value_error};
use crate::units::Bytes;

/// How much of one direction (reads or writes) a phase does before it ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum IoAmount {
    /// Bytes, counted after the warm-up (above zero).
    Bytes(Bytes),
    /// Passes over the phase's data set (above zero): 2 is twice its size.
    Passes(f64),
}

impl IoAmount {
    /// The amount in bytes for a data set of `data_set` bytes.
    pub fn bytes_for(self, data_set: Bytes) -> Bytes {
        match self {
            IoAmount::Bytes(b) => b,
            IoAmount::Passes(p) => Bytes((p * data_set.0 as f64) as u64),
        }
    }
}

impl FromStr for IoAmount {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let expected = "a size above zero (1G) or passes over the data set (0.5x)";
        let text = s.trim();
        let amount = match text.strip_suffix(['x', 'X']) {
            Some(p) => p.trim().parse::<f64>().ok().filter(|p| p.is_finite() && *p > 0.0).map(IoAmount::Passes),
            None => Bytes::parse(text).ok().filter(|b| b.0 > 0).map(IoAmount::Bytes),
        };
        amount.ok_or_else(|| value_error(s, "amount of I/O", expected))
    }
}

impl fmt::Display for IoAmount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IoAmount::Bytes(b) => write!(f, "{}", b.0),
            IoAmount::Passes(p) => write!(f, "{p}x"),
        }
    }
}
serde_via_str!(IoAmount);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_sizes_and_passes_and_writes_them_back() {
        assert_eq!("1m".parse::<IoAmount>().unwrap(), IoAmount::Bytes(Bytes::mib(1)));
        assert_eq!("0.5x".parse::<IoAmount>().unwrap(), IoAmount::Passes(0.5));
        for text in ["1048576", "2.5x"] {
            assert_eq!(text.parse::<IoAmount>().unwrap().to_string(), text);
        }
        for bad in ["0", "0x", "-1x", "many"] {
            assert!(bad.parse::<IoAmount>().is_err(), "{bad}");
        }
        assert_eq!(IoAmount::Passes(0.25).bytes_for(Bytes::mib(8)), Bytes::mib(2));
    }
}
