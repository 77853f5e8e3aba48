//! fio's rules for the values of options: sizes with `kb_base`, ranges, per-direction lists, times with a
//! per-option default unit, booleans and percentages. Pure text to numbers; which option takes which kind of
//! value lives in `options.rs`.
//!
//! Sizes follow fio's HOWTO: a bare number is bytes, `0x` starts a hexadecimal number, and the suffixes
//! `k m g t p` (with an optional `b`, any case) multiply by powers of `kb_base` (1024 unless the job says
//! `kb_base=1000`). The IEC forms `KiB … PiB` mean the *other* base: 1000 by default (fio's compatibility
//! mode keeps old scripts working) and 1024 when `kb_base=1000`. A value with arithmetic in it (`(4*1024)m`,
//! `8*192` after `$mb_memory` was replaced) is evaluated by `expr.rs` with the same units.

use std::time::Duration;

use super::expr::{evaluate, evaluate_with_units, looks_like_arithmetic};

/// A value that does not have the form the option needs; `expected` completes "expected …".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadValue {
    pub what: &'static str,
    pub expected: &'static str,
}

pub const SIZE_EXPECTED: &str = "a size such as 4096, 4k, 1m, 1g or 0x1000 (k m g t p: powers of 1024 unless \
                                 kb_base=1000; KiB MiB GiB: powers of 1000 unless kb_base=1000)";

/// What an arithmetic value that does not evaluate should look like.
pub const ARITHMETIC_EXPECTED: &str = "an arithmetic expression such as (4*1024)m: + - * / % ^, parentheses, \
                                       and a unit after a number";

fn bad(what: &'static str, expected: &'static str) -> BadValue {
    BadValue { what, expected }
}

/// An expression nested too deep for the evaluator (`limits::MAX_NESTING`).
const NESTING_EXPECTED: &str = "an expression nested at most 64 levels deep (parentheses, signs or powers)";

/// What an expression that did not evaluate should have been: nested less deeply, or well formed.
fn bad_arithmetic(what: &'static str, why: &str) -> BadValue {
    if why.contains("nests more than") { bad(what, NESTING_EXPECTED) } else { bad(what, ARITHMETIC_EXPECTED) }
}

/// The base of `k`, `m`, `g` … in sizes (fio kb_base).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KbBase {
    #[default]
    Binary,
    Decimal,
}

impl KbBase {
    pub fn parse(text: &str) -> Result<KbBase, BadValue> {
        match text.trim() {
            "1024" => Ok(KbBase::Binary),
            "1000" => Ok(KbBase::Decimal),
            _ => Err(bad("kb_base", "1024 or 1000")),
        }
    }
}

/// A size or a percentage of the file or device.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FioSize {
    Bytes(u64),
    Percent(f64),
}

/// Splits the leading number (decimal with an optional fraction, or `0x` hex) from its suffix.
fn split_number(text: &str) -> Option<(f64, &str)> {
    let text = text.trim();
    if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        let end = hex.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(hex.len());
        let value = u64::from_str_radix(&hex[..end], 16).ok()?;
        return Some((value as f64, hex[end..].trim()));
    }
    let end = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    if end == 0 {
        return None;
    }
    let value: f64 = text[..end].parse().ok()?;
    Some((value, text[end..].trim()))
}

/// Parses a size; `%` is accepted only when `percent_ok`.
pub fn parse_size_or_percent(text: &str, base: KbBase, percent_ok: bool) -> Result<FioSize, BadValue> {
    let what = if percent_ok { "size or percentage" } else { "size" };
    let expected = if percent_ok { "a size such as 4k or 1g, or a percentage such as 50%" } else { SIZE_EXPECTED };
    if looks_like_arithmetic(text) {
        let bytes = evaluate(text, &|w| size_unit(w, base)).map_err(|e| bad_arithmetic(what, &e))?;
        if !(0.0..u64::MAX as f64).contains(&bytes) {
            return Err(bad(what, "a size from 0 to 16 EiB"));
        }
        return Ok(FioSize::Bytes(bytes as u64));
    }
    let (value, suffix) = split_number(text).ok_or(bad(what, expected))?;
    let suffix = suffix.to_ascii_lowercase();
    if suffix == "%" {
        if !percent_ok || !(0.0..=100.0).contains(&value) {
            return Err(bad(what, expected));
        }
        return Ok(FioSize::Percent(value));
    }
    let mult = size_unit(&suffix, base).ok_or(bad(what, expected))?;
    let bytes = value * mult;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(bad(what, "a size below 16 EiB"));
    }
    Ok(FioSize::Bytes(bytes as u64))
}

/// What a size suffix (lower case, possibly empty) multiplies by under `base`, as fio's `__get_mult_bytes`
/// (parse.c) reads it: only the whole IEC forms `kib mib gib tib pib` are powers of the other base (fio's
/// compatibility mode); every other suffix is matched by its first letter, so `k`, `kb` and `ki` alike are
/// powers of the base (`1Mi` is 1,048,576 bytes by default, as fio issues it).
fn size_unit(suffix: &str, base: KbBase) -> Option<f64> {
    let (kb, other) = match base {
        KbBase::Binary => (1024f64, 1000f64),
        KbBase::Decimal => (1000f64, 1024f64),
    };
    let power = |c: &str| ["k", "m", "g", "t", "p"].iter().position(|p| *p == c).map(|i| i as i32 + 1);
    match suffix {
        "" | "b" => Some(1.0),
        _ => match suffix.strip_suffix("ib") {
            Some(prefix) => power(prefix).map(|n| other.powi(n)),
            None => {
                let stem = suffix.strip_suffix('b').or_else(|| suffix.strip_suffix('i')).unwrap_or(suffix);
                power(stem).map(|n| kb.powi(n))
            }
        },
    }
}

pub fn parse_size(text: &str, base: KbBase) -> Result<u64, BadValue> {
    match parse_size_or_percent(text, base, false)? {
        FioSize::Bytes(b) => Ok(b),
        FioSize::Percent(_) => unreachable!("percentages are refused when not allowed"),
    }
}

/// `low-high` or `low:high` (fio accepts both separators for ranges).
pub fn parse_range(text: &str, base: KbBase) -> Result<(u64, u64), BadValue> {
    let expected = "a range of sizes such as 4k-64k (the smaller first)";
    let (low, high) = text.split_once('-').or_else(|| text.split_once(':')).ok_or(bad("size range", expected))?;
    let low = parse_size(low, base).map_err(|_| bad("size range", expected))?;
    let high = parse_size(high, base).map_err(|_| bad("size range", expected))?;
    if low == 0 || low > high {
        return Err(bad("size range", expected));
    }
    Ok((low, high))
}

/// One direction's bssplit: `4k/10:64k/50:32k/` — sizes with optional percentages.
pub fn parse_split(text: &str, base: KbBase) -> Result<Vec<(u64, Option<u32>)>, BadValue> {
    let expected = "block sizes with percentages such as 4k/10:64k/50:32k/40";
    let mut entries = Vec::new();
    for part in text.split(':').map(str::trim).filter(|p| !p.is_empty()) {
        let (size, weight) = part.split_once('/').unwrap_or((part, ""));
        let size = parse_size(size, base).map_err(|_| bad("block size split", expected))?;
        let weight = match weight.trim() {
            "" => None,
            w => Some(w.parse::<u32>().ok().filter(|w| *w <= 100).ok_or(bad("block size split", expected))?),
        };
        if size == 0 {
            return Err(bad("block size split", expected));
        }
        entries.push((size, weight));
    }
    if entries.is_empty() {
        return Err(bad("block size split", expected));
    }
    Ok(entries)
}

/// fio's per-direction values (`bs=4k,64k`): one value for every direction, or `read,write[,trim]`, where an
/// empty entry leaves that direction at its default and a missing trim entry takes the write value.
#[derive(Debug, Clone, PartialEq)]
pub struct PerDirection<T> {
    pub read: Option<T>,
    pub write: Option<T>,
}

impl<T: Clone + PartialEq> PerDirection<T> {
    pub fn parse(text: &str, mut one: impl FnMut(&str) -> Result<T, BadValue>) -> Result<Self, BadValue> {
        let parts: Vec<&str> = text.split(',').map(str::trim).collect();
        if parts.len() > 3 {
            return Err(bad("per-direction value", "at most three values: read,write,trim"));
        }
        let mut get = |i: usize| -> Result<Option<T>, BadValue> {
            match parts.get(i) {
                Some(p) if !p.is_empty() => one(p).map(Some),
                _ => Ok(None),
            }
        };
        let read = get(0)?;
        let write = if parts.len() == 1 { read.clone() } else { get(1)? };
        // A trim value is parsed so that a malformed one is reported, but streamcap does not trim.
        get(2)?;
        Ok(PerDirection { read, write })
    }
}

/// Time units for options whose bare numbers are not seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    Seconds,
    Millis,
    Micros,
}

/// A time: a number with an optional suffix (`us`/`usec`, `ms`/`msec`, `s`/`sec`, `m`/`min`, `h`, `d`); a
/// bare number is in the option's default unit.
pub fn parse_time(text: &str, default: TimeUnit) -> Result<Duration, BadValue> {
    let expected = match default {
        TimeUnit::Seconds => "a time such as 30 (seconds), 500ms, 2m or 1h",
        TimeUnit::Millis => "a time such as 500 (milliseconds), 2s or 100us",
        TimeUnit::Micros => "a time such as 100 (microseconds), 10ms or 1s",
    };
    let seconds = if looks_like_arithmetic(text) {
        let units = |w: &str| if w.is_empty() { None } else { time_unit(w, default) };
        let (value, units_used) = evaluate_with_units(text, &units).map_err(|e| bad_arithmetic("time", &e))?;
        if units_used { value } else { value * time_unit("", default).expect("the default unit") }
    } else {
        let (value, suffix) = split_number(text).ok_or(bad("time", expected))?;
        value * time_unit(&suffix.to_ascii_lowercase(), default).ok_or(bad("time", expected))?
    };
    if !seconds.is_finite() || !(0.0..=1e12).contains(&seconds) {
        return Err(bad("time", expected));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Seconds per unit of a time suffix (lower case); no suffix is the option's default unit.
fn time_unit(suffix: &str, default: TimeUnit) -> Option<f64> {
    Some(match suffix {
        "" => match default {
            TimeUnit::Seconds => 1.0,
            TimeUnit::Millis => 1e-3,
            TimeUnit::Micros => 1e-6,
        },
        "ns" | "nsec" => 1e-9,
        "us" | "usec" => 1e-6,
        "ms" | "msec" => 1e-3,
        "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "d" => 86400.0,
        _ => return None,
    })
}

/// A whole number, with fio's size suffixes allowed (`number_ios=1m`).
pub fn parse_int(text: &str, base: KbBase) -> Result<u64, BadValue> {
    if looks_like_arithmetic(text) {
        return parse_size(text, base).map_err(|e| BadValue { what: "number", ..e });
    }
    let (value, _) = split_number(text).ok_or(bad("number", "a whole number such as 8"))?;
    if value.fract() != 0.0 {
        return Err(bad("number", "a whole number such as 8"));
    }
    parse_size(text, base).map_err(|_| bad("number", "a whole number such as 8 (k and m suffixes allowed)"))
}

/// 0 or 1 (also true/false, yes/no, on/off); a bare option name means 1.
pub fn parse_bool(text: &str) -> Result<bool, BadValue> {
    match text.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(bad("boolean", "0 or 1")),
    }
}

/// A percentage from 0 to 100 (a trailing `%` is allowed).
pub fn parse_percent(text: &str) -> Result<u8, BadValue> {
    let text = text.trim();
    text.strip_suffix('%')
        .unwrap_or(text)
        .trim()
        .parse::<u8>()
        .ok()
        .filter(|p| *p <= 100)
        .ok_or(bad("percentage", "a whole number from 0 to 100"))
}

/// fio's percentile_list: `99:99.9:99.99`, each above 0 and at most 100.
pub fn parse_percentile_list(text: &str) -> Result<Vec<f64>, BadValue> {
    let expected = "percentiles separated by colons, such as 50:99:99.9";
    let list: Vec<f64> = text
        .split(':')
        .map(|p| p.trim().parse::<f64>().ok().filter(|v| *v > 0.0 && *v <= 100.0))
        .collect::<Option<_>>()
        .ok_or(bad("percentile list", expected))?;
    if list.is_empty() || list.len() > 64 {
        return Err(bad("percentile list", expected));
    }
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: KbBase = KbBase::Binary;
    const D: KbBase = KbBase::Decimal;

    #[test]
    fn sizes_follow_kb_base_and_its_iec_inversion() {
        assert_eq!(parse_size("4096", B), Ok(4096));
        assert_eq!(parse_size("4k", B), Ok(4096));
        assert_eq!(parse_size("4K", B), Ok(4096));
        assert_eq!(parse_size("4kb", B), Ok(4096));
        assert_eq!(parse_size("4KB", B), Ok(4096));
        assert_eq!(parse_size("1g", B), Ok(1 << 30));
        assert_eq!(parse_size("1t", B), Ok(1 << 40));
        // Compatibility mode (default): IEC prefixes are powers of 10.
        assert_eq!(parse_size("4KiB", B), Ok(4000));
        // Issue 29: `Ki`, `Mi`, `Gi` without the `B` are matched by their first letter in fio, so powers of
        // kb_base: fio issues 1,048,576 bytes for size=1Mi (tests/fio_compat.rs checks it against fio).
        assert_eq!(parse_size("4Ki", B), Ok(4096));
        assert_eq!(parse_size("1Mi", B), Ok(1 << 20));
        assert_eq!(parse_size("1Gi", B), Ok(1 << 30));
        assert_eq!(parse_size("1mi", D), Ok(1_000_000));
        assert_eq!(parse_size("(2*1)Mi", B), Ok(2 << 20));
        assert_eq!(parse_size("1MiB", B), Ok(1_000_000));
        // kb_base=1000: SI prefixes are powers of 10, IEC prefixes powers of 2.
        assert_eq!(parse_size("4k", D), Ok(4000));
        assert_eq!(parse_size("4kB", D), Ok(4000));
        assert_eq!(parse_size("4KiB", D), Ok(4096));
        assert_eq!(parse_size("1GiB", D), Ok(1 << 30));
    }

    #[test]
    fn sizes_take_hex_and_fractions_and_refuse_junk() {
        assert_eq!(parse_size("0x1000", B), Ok(4096));
        assert_eq!(parse_size("1.5k", B), Ok(1536));
        assert_eq!(parse_size(" 8m ", B), Ok(8 << 20));
        for junk in ["4q", "", "k", "-4k", "4kk", "4 k b", "1e9", "(4k*2", "2-4k"] {
            assert!(parse_size(junk, B).is_err(), "{junk}");
        }
        // Without the b, fio matches `ki` by its first letter: the job's own base (fio 3.33 issues 4096 bytes for
        // size=4Ki; this read 4000 before issue 29).
        assert_eq!(parse_size("4ki", B), Ok(4096));
        assert_eq!(parse_size("1mi", D), Ok(1_000_000));
    }

    #[test]
    fn arithmetic_in_sizes_numbers_and_times() {
        assert_eq!(parse_size("4*1024m", B), Ok(4 << 30));
        assert_eq!(parse_size("(4*1024)m", B), Ok(4 << 30));
        assert_eq!(parse_size("8*192", B), Ok(1536), "a keyword already replaced by its number");
        assert_eq!(parse_size("(2k)", D), Ok(2000), "kb_base applies inside expressions too");
        assert_eq!(parse_int("(2^4)", B), Ok(16));
        assert_eq!(parse_time("(2*30)", TimeUnit::Seconds), Ok(Duration::from_secs(60)));
        assert_eq!(parse_time("1m+30s", TimeUnit::Seconds), Ok(Duration::from_secs(90)));
        assert_eq!(parse_time("(10*5)", TimeUnit::Micros), Ok(Duration::from_micros(50)));
        let err = parse_size("(4*)m", B).unwrap_err();
        assert_eq!(err.expected, ARITHMETIC_EXPECTED);
        assert!(parse_time("(1-2)", TimeUnit::Seconds).is_err(), "no negative times");
    }

    #[test]
    fn percentages_where_allowed() {
        assert_eq!(parse_size_or_percent("50%", B, true), Ok(FioSize::Percent(50.0)));
        assert_eq!(parse_size_or_percent("1g", B, true), Ok(FioSize::Bytes(1 << 30)));
        assert!(parse_size_or_percent("50%", B, false).is_err());
        assert!(parse_size_or_percent("150%", B, true).is_err());
        assert_eq!(parse_percent("70"), Ok(70));
        assert_eq!(parse_percent("70%"), Ok(70));
        assert!(parse_percent("101").is_err());
    }

    #[test]
    fn ranges_and_splits() {
        assert_eq!(parse_range("4k-64k", B), Ok((4096, 65536)));
        assert_eq!(parse_range("4k:64k", B), Ok((4096, 65536)));
        assert!(parse_range("64k-4k", B).is_err());
        assert!(parse_range("4k", B).is_err());
        assert_eq!(parse_split("4k/10:64k/50:32k/", B), Ok(vec![(4096, Some(10)), (65536, Some(50)), (32768, None)]));
        assert!(parse_split("4k/x", B).is_err());
        assert!(parse_split("", B).is_err());
    }

    #[test]
    fn per_direction_values() {
        let size = |t: &str| parse_size(t, B);
        let one = PerDirection::parse("4k", size).unwrap();
        assert_eq!((one.read, one.write), (Some(4096), Some(4096)));
        let two = PerDirection::parse("4k,64k", size).unwrap();
        assert_eq!((two.read, two.write), (Some(4096), Some(65536)));
        let write_only = PerDirection::parse(",8k", size).unwrap();
        assert_eq!((write_only.read, write_only.write), (None, Some(8192)));
        let three = PerDirection::parse("4k,8k,16k", size).unwrap();
        assert_eq!(three.write, Some(8192));
        assert!(PerDirection::parse("4k,8k,16k,32k", size).is_err());
        assert!(PerDirection::parse("4k,8q", size).is_err());
    }

    #[test]
    fn times_use_the_option_default_unit() {
        assert_eq!(parse_time("30", TimeUnit::Seconds), Ok(Duration::from_secs(30)));
        assert_eq!(parse_time("2m", TimeUnit::Seconds), Ok(Duration::from_secs(120)));
        assert_eq!(parse_time("1h", TimeUnit::Seconds), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_time("500ms", TimeUnit::Seconds), Ok(Duration::from_millis(500)));
        assert_eq!(parse_time("100", TimeUnit::Micros), Ok(Duration::from_micros(100)));
        assert_eq!(parse_time("10ms", TimeUnit::Micros), Ok(Duration::from_millis(10)));
        assert_eq!(parse_time("500", TimeUnit::Millis), Ok(Duration::from_millis(500)));
        assert_eq!(parse_time("250usec", TimeUnit::Seconds), Ok(Duration::from_micros(250)));
        assert!(parse_time("10 parsecs", TimeUnit::Seconds).is_err());
        assert!(parse_time("", TimeUnit::Seconds).is_err());
    }

    #[test]
    fn integers_booleans_and_percentiles() {
        assert_eq!(parse_int("8", B), Ok(8));
        assert_eq!(parse_int("1k", B), Ok(1024));
        assert!(parse_int("1.5", B).is_err());
        assert_eq!(parse_bool("1"), Ok(true));
        assert_eq!(parse_bool("0"), Ok(false));
        assert!(parse_bool("2").is_err());
        assert_eq!(parse_percentile_list("50:99:99.9"), Ok(vec![50.0, 99.0, 99.9]));
        assert!(parse_percentile_list("50::99").is_err());
        assert!(parse_percentile_list("0").is_err());
        assert_eq!(KbBase::parse("1000"), Ok(KbBase::Decimal));
        assert!(KbBase::parse("512").is_err());
    }
}
