//! Parsing and printing of durations ("10s", "500ms", "1.5m", "2h") and of latencies ("85.3 µs").
//!
//! Durations are `std::time::Duration` everywhere; this module is the only place that turns text into one.
//! A bare number is seconds, as in fio's `runtime=`.

use std::time::Duration;

use serde::{Deserialize, Deserializer};

use super::UnitError;
use super::bytes::split_number;

/// Parses "10s", "500ms", "250us", "1.5m", "1min", "2h", "1d" or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let expected = "a duration such as 10s, 500ms, 2m or 1h";
    let (value, unit) = split_number(text.trim()).ok_or_else(|| UnitError::new(text, expected))?;
    let seconds_per_unit = match unit {
        "" | "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
        "ms" | "msec" => 1e-3,
        "us" | "µs" | "usec" => 1e-6,
        "ns" | "nsec" => 1e-9,
        "m" | "min" | "mins" | "minute" | "minutes" => 60.0,
        "h" | "hr" | "hour" | "hours" => 3600.0,
        "d" | "day" | "days" => 86400.0,
        _ => return Err(UnitError::new(text, expected)),
    };
    let seconds = value * seconds_per_unit;
    if !seconds.is_finite() || !(0.0..=1e12).contains(&seconds) {
        return Err(UnitError::new(text, expected));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// As [`parse_duration`], refusing zero: for times that must pass (a runtime, a budget, a mean time between
/// events).
pub fn parse_positive_duration(text: &str) -> Result<Duration, UnitError> {
    match parse_duration(text)? {
        d if d.is_zero() => Err(UnitError::new(text, "a duration above zero, such as 10s or 500ms")),
        d => Ok(d),
    }
}

/// Prints a duration the way a person says it: "90 ms", "10 s", "2 min 30 s", "1 h 5 min".
pub fn format_duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if d.is_zero() {
        return "0 s".into();
    }
    if secs < 1.0 {
        return format_latency(d);
    }
    let whole = d.as_secs();
    match whole {
        0..=59 if d.subsec_millis() == 0 => format!("{whole} s"),
        0..=59 => format!("{secs:.1} s"),
        60..=3599 => match whole % 60 {
            0 => format!("{} min", whole / 60),
            s => format!("{} min {s} s", whole / 60),
        },
        _ => match (whole % 3600) / 60 {
            0 => format!("{} h", whole / 3600),
            m => format!("{} h {m} min", whole / 3600),
        },
    }
}

/// Prints a latency with three significant digits in the unit that fits: "820 ns", "85.3 µs", "1.24 ms", "2.50 s".
pub fn format_latency(d: Duration) -> String {
    format_latency_ns(d.as_nanos() as f64)
}

/// As [`format_latency`], from a (possibly fractional) number of nanoseconds, e.g. a mean.
pub fn format_latency_ns(ns: f64) -> String {
    let (value, unit) = if ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "µs")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    let digits = if value >= 100.0 || unit == "ns" {
        0
    } else if value >= 10.0 {
        1
    } else {
        2
    };
    format!("{value:.digits$} {unit}")
}

/// Serde helper: a duration given as text ("10s") or as a number of seconds.
pub fn deserialize_duration<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Int(u64),
        Float(f64),
        Text(String),
    }
    match Raw::deserialize(deserializer)? {
        Raw::Int(n) => Ok(Duration::from_secs(n)),
        Raw::Float(f) => parse_duration(&f.to_string()).map_err(serde::de::Error::custom),
        Raw::Text(s) => parse_duration(&s).map_err(serde::de::Error::custom),
    }
}

/// Serde helper for `Option<Duration>` fields written as text or seconds.
pub fn deserialize_opt_duration<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Duration>, D::Error> {
    deserialize_duration(deserializer).map(Some)
}

/// Serde helper: a duration written as seconds (a float), as results and plans record durations.
pub fn serialize_secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// Serde helper: an optional duration written as seconds, or null.
pub fn serialize_opt_secs<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_f64(d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_common_forms() {
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("10").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5h").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
    }

    #[test]
    fn rejects_unknown_units() {
        assert!(parse_duration("10 fortnights").is_err());
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn formats_for_people() {
        assert_eq!(format_duration(Duration::from_secs(10)), "10 s");
        assert_eq!(format_duration(Duration::from_secs(150)), "2 min 30 s");
        assert_eq!(format_duration(Duration::from_secs(3900)), "1 h 5 min");
        assert_eq!(format_latency(Duration::from_nanos(820)), "820 ns");
        assert_eq!(format_latency(Duration::from_nanos(85_300)), "85.3 µs");
        assert_eq!(format_latency(Duration::from_nanos(1_240_000)), "1.24 ms");
        assert_eq!(format_latency(Duration::from_millis(2500)), "2.50 s");
    }
}
