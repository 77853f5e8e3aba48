//! Units as types: sizes ([`Bytes`]), rates ([`ByteRate`], [`Bitrate`]), durations and shares ([`Share`]), with the one set of
//! parsing and display rules the whole tool uses. Layer 0: imports nothing from streamcap.

#![deny(unsafe_code)]

mod bytes;
mod duration;
mod rate;
mod share;
mod time;

pub use bytes::{Bytes, GIB, KIB, MIB, TIB};
pub use duration::{
    deserialize_duration, deserialize_opt_duration, format_duration, format_latency, format_latency_ns, parse_duration,
    parse_positive_duration, serialize_opt_secs, serialize_secs,
};
pub use rate::{Bitrate, ByteRate, format_mbps, format_rate};
pub use share::Share;
pub use time::{rfc3339, utc_minutes};

/// A value that could not be read, with what was expected instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{input}' is not understood: expected {expected}")]
pub struct UnitError {
    pub input: String,
    pub expected: &'static str,
}

impl UnitError {
    pub fn new(input: &str, expected: &'static str) -> UnitError {
        UnitError { input: input.to_string(), expected }
    }
}
