//! fio's options for the shape of written data onto `data` (spec::DataSpec): dedupe_percentage, dedupe_mode,
//! dedupe_working_set_percentage, dedupe_global, buffer_compress_percentage, buffer_compress_chunk and
//! zero_buffers, and refill_buffers (fresh random bytes for every write). fio's unit of deduplication is each write's buffer, and so is streamcap's by default.

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
    if data != DataSpec::default() {
        phase.data = Some(data);
    }
    Ok(())
}
