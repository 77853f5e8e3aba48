//! fio's options for the shape of written data onto `data` (spec::DataSpec): dedupe_percentage, dedupe_mode,
//! dedupe_working_set_percentage, dedupe_global, buffer_compress_percentage, buffer_compress_chunk and
//! zero_buffers, refill_buffers (fresh random bytes for every write) and buffer_pattern. fio's unit of deduplication is each write's buffer, and so is streamcap's by default.

use super::job::fail;
use super::mapping::Job;
use super::options::OptionError;
use super::values::FioSize;
use crate::spec::{DataSpec, PhaseSpec};
use crate::units::Bytes;

/// fio's dedupe_working_set_percentage default.
const WORKING_SET_PERCENT: f64 = 5.0;

pub(super) fn map_data(job: &Job, phase: &mut PhaseSpec) -> Result<(), OptionError> {
    let o = &job.options;
    let working_set = match o.get("dedupe_mode").map(|s| (s, s.raw.trim().to_ascii_lowercase())) {
        None => false,
        Some((_, mode)) if mode == "repeat" => false,
        Some((_, mode)) if mode == "working_set" => true,
        Some((said, mode)) => {
            return Err(fail(
                said,
                "dedupe_mode",
                format!("'{mode}' is not a dedupe mode; expected repeat or working_set"),
            ));
        }
    };
    if let Some(said) = o.get("dedupe_global").filter(|_| o.flag("dedupe_global") && !working_set) {
        return Err(fail(said, "dedupe_global", "needs dedupe_mode=working_set, as in fio"));
    }
    let mut data = DataSpec {
        dedupe_percent: o.int("dedupe_percentage").map(|p| p as f64),
        dedupe_working_set: working_set
            .then(|| o.int("dedupe_working_set_percentage").map_or(WORKING_SET_PERCENT, |p| p as f64)),
        dedupe_global: o.flag("dedupe_global").then_some(true),
        compress_percent: o.int("buffer_compress_percentage").map(|p| p as f64),
        compress_chunk: match o.size("buffer_compress_chunk") {
            Some(FioSize::Bytes(b)) if b > 0 => Some(Bytes(b)),
            _ => None,
        },
        ..Default::default()
    };
    // fio's zero_buffers: every buffer all zeros — the whole of each chunk compressible.
    if o.flag("zero_buffers") {
        data.compress_percent = Some(100.0);
    }
    // fio's refill_buffers: fresh random bytes for every write, which no compressor can shrink.
    if o.flag("refill_buffers") && data.compress_percent.is_none() {
        data.compress_percent = Some(0.0);
    }
    if let Some(said) = o.get("buffer_pattern") {
        data.pattern = Some(buffer_pattern(&said.raw).map_err(|why| fail(said, "buffer_pattern", why))?);
    }
    if data != DataSpec::default() {
        phase.data = Some(data);
    }
    Ok(())
}

/// fio's buffer_pattern (lib/pattern.c `parse_and_fill_pattern`): pieces in any order, each `0x` hex digits
/// (bytes in the order written; an odd count makes the first digit a byte of its own), a decimal number (its
/// bytes, least significant first, as few as hold it; 0 is one zero byte; a negative one as 32 bits), or a
/// `"string"`. A `'file'` and the `%o` format are refused with what to write instead.
fn buffer_pattern(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        if let Some(quoted) = rest.strip_prefix('"') {
            let end = quoted.find('"').ok_or("a string is not closed: write \"abcd\"")?;
            out.extend_from_slice(&quoted.as_bytes()[..end]);
            rest = &quoted[end + 1..];
        } else if let Some(hex) = rest.strip_prefix("0x").or_else(|| rest.strip_prefix("0X")) {
            let mut digits = hex.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(hex.len());
            // fio looks back for a following 0x: `0xff0x14` is 0xff then 0x14.
            if hex[digits..].starts_with(['x', 'X']) && digits > 0 {
                digits -= 1;
            }
            if digits == 0 {
                return Err("0x needs hex digits, such as 0xdeadbeef".into());
            }
            let (head, tail) = hex[..digits].split_at(digits % 2);
            let pairs = (0..tail.len()).step_by(2).map(|i| &tail[i..i + 2]);
            for byte in std::iter::once(head).filter(|h| !h.is_empty()).chain(pairs) {
                out.push(u8::from_str_radix(byte, 16).map_err(|e| e.to_string())?);
            }
            rest = &hex[digits..];
        } else if rest.starts_with(|c: char| c.is_ascii_digit() || c == '-') {
            let end = rest[1..].find(|c: char| !c.is_ascii_digit()).map_or(rest.len(), |e| e + 1);
            let value: i64 = rest[..end].parse().map_err(|_| format!("'{}' is not a number", &rest[..end]))?;
            let value = i32::try_from(value).map_err(|_| "a number must fit in 32 bits".to_string())? as u32;
            let bytes = value.to_le_bytes();
            let used = if value == 0 { 1 } else { 4 - (value.leading_zeros() / 8) as usize };
            out.extend_from_slice(&bytes[..used]);
            rest = &rest[end..];
        } else {
            return Err(format!(
                "'{rest}' is not supported: give 0x hex bytes, a decimal number or a \"string\" (a 'file' or the \
                 %o offset format is not supported)"
            ));
        }
    }
    if out.is_empty() || out.len() > crate::spec::MAX_PATTERN {
        return Err(format!("the pattern has {} bytes; give 1 to {}", out.len(), crate::spec::MAX_PATTERN));
    }
    Ok(out)
}
