//! `DataSpec`: what the written bytes look like, for storage that deduplicates or compresses (fio's
//! dedupe_* and buffer_compress_*, vdbench's dedupratio, dedupunit and compratio; the TOML table `data`).
//!
//! Without it streamcap writes random buffers, filled once, with every 4 KiB stamped with its offset and a
//! counter (as fio does by default, with scramble_buffers): no two blocks are identical, but a compressor that
//! looks across blocks (ZFS lz4 over a 128 KiB record) finds the repeated bytes. With it, a share of the units
//! repeats one written before and a share of every chunk is zeros, so the array sees the ratios the user asked;
//! both at 0 gives fresh random bytes for every write, which nothing compresses.

use serde::{Deserialize, Serialize};

use crate::units::Bytes;

/// The longest `pattern` (bytes): a pattern is repeated into every write buffer, so longer ones buy nothing a
/// reader of the data could tell apart, and the plan keeps it inline.
pub const MAX_PATTERN: usize = 512;

/// The shape of written data, as asked. Percentages are 0–100.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct DataSpec {
    /// Percent of written units that repeat one written before (fio dedupe_percentage).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dedupe_percent: Option<f64>,
    /// The unit that is unique or repeated. Default: each write's whole buffer, as fio does; vdbench's
    /// dedupunit (every write block size must be a multiple of it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dedupe_unit: Option<Bytes>,
    /// Repeated units are drawn from a working set of this percent of the data set (fio
    /// dedupe_mode=working_set with dedupe_working_set_percentage). Default: a repeated unit repeats the last
    /// unique one the worker wrote (fio dedupe_mode=repeat).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dedupe_working_set: Option<f64>,
    /// The working set as a count of units instead of a share of the data set (vdbench dedupsets=N, a count
    /// of sets); wins over `dedupe-working-set`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dedupe_sets: Option<u64>,
    /// With a working set: all workers draw from one set (fio dedupe_global), so their files deduplicate
    /// against each other too. Default: a set per worker.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dedupe_global: Option<bool>,
    /// Decide by address, as vdbench does: whether a unit is unique or a copy of one of the working set's units
    /// (its sets) is a function of where it is written (file and offset), so a rewrite writes the same kind
    /// again and the ratio holds under random rewrites. `dedupe-percent` is then the share of addresses that
    /// hold a copy, the sets being among them (vdbench's dedupratio=R is 100 × (1 − 1/R)); the sets are
    /// shared by every file. Needs `dedupe-unit` and a working set (`dedupe-working-set` or `dedupe-sets`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dedupe_by_address: Option<bool>,
    /// Percent of every chunk that is zeros, so that a compressor saves about that share (fio
    /// buffer_compress_percentage; vdbench compratio=R is 100 × (1 − 1/R)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compress_percent: Option<f64>,
    /// Every write is these bytes over and over from its first byte (fio buffer_pattern; TOML: an array of
    /// bytes, `pattern = [0xde, 0xad, 0xbe, 0xef]`), with no stamp: fully deduplicable and compressible.
    /// Not with the dedupe or compression percentages. At most [`MAX_PATTERN`] bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pattern: Option<Vec<u8>>,
    /// The chunk the compressible share is laid out in: random bytes, then zeros (fio buffer_compress_chunk;
    /// default 512 bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compress_chunk: Option<Bytes>,
}

impl DataSpec {
    /// A copy of `self` with every field that `over` says replaced by `over`'s value.
    pub fn overlay(&self, over: &DataSpec) -> DataSpec {
        DataSpec {
            dedupe_percent: over.dedupe_percent.or(self.dedupe_percent),
            dedupe_unit: over.dedupe_unit.or(self.dedupe_unit),
            dedupe_working_set: over.dedupe_working_set.or(self.dedupe_working_set),
            dedupe_sets: over.dedupe_sets.or(self.dedupe_sets),
            dedupe_global: over.dedupe_global.or(self.dedupe_global),
            dedupe_by_address: over.dedupe_by_address.or(self.dedupe_by_address),
            compress_percent: over.compress_percent.or(self.compress_percent),
            compress_chunk: over.compress_chunk.or(self.compress_chunk),
            pattern: over.pattern.clone().or_else(|| self.pattern.clone()),
        }
    }

    /// Ranges and combinations, as a sentence naming the key and the fix.
    pub fn check(&self) -> Result<(), String> {
        let percent = |key: &str, v: Option<f64>, low_open: bool| match v {
            Some(p) if !(0.0..=100.0).contains(&p) || (low_open && p == 0.0) => {
                let range = if low_open { "above 0 and at most 100" } else { "from 0 to 100" };
                Err(format!("data.{key} is {p}: give a percentage {range}"))
            }
            _ => Ok(()),
        };
        percent("dedupe-percent", self.dedupe_percent, false)?;
        percent("dedupe-working-set", self.dedupe_working_set, true)?;
        percent("compress-percent", self.compress_percent, false)?;
        if let Some(pattern) = &self.pattern {
            if pattern.is_empty() || pattern.len() > MAX_PATTERN {
                return Err(format!("data.pattern has {} bytes: give 1 to {MAX_PATTERN}", pattern.len()));
            }
            let percent = |p: Option<f64>| p.is_some_and(|p| p > 0.0);
            if percent(self.dedupe_percent) || percent(self.compress_percent) {
                return Err("data.pattern writes the same bytes everywhere: not with data.dedupe-percent or \
                            data.compress-percent; give one or the other"
                    .into());
            }
        }
        if self.dedupe_sets == Some(0) {
            return Err("data.dedupe-sets is 0: give at least 1 unit for the repeats to copy".into());
        }
        if let Some(unit) = self.dedupe_unit
            && (unit.0 < 512 || unit.0 % 512 != 0 || unit.0 > 64 << 20)
        {
            return Err(format!("data.dedupe-unit is {unit}: give a multiple of 512 bytes up to 64 MiB"));
        }
        if let Some(chunk) = self.compress_chunk
            && (chunk.0 == 0 || chunk.0 > 64 << 20)
        {
            return Err(format!("data.compress-chunk is {chunk}: give a size above 0 and up to 64 MiB"));
        }
        if self.dedupe_global == Some(true) && self.dedupe_working_set.is_none() {
            return Err("data.dedupe-global needs data.dedupe-working-set: workers can share only a working set \
                        of units (fio: dedupe_global needs dedupe_mode=working_set)"
                .into());
        }
        self.check_by_address()
    }

    /// What deciding by address needs: a unit, a working set for the copies, no per-worker set.
    fn check_by_address(&self) -> Result<(), String> {
        if self.dedupe_by_address != Some(true) {
            return Ok(());
        }
        if self.dedupe_unit.is_none() {
            return Err("data.dedupe-by-address needs data.dedupe-unit: the address is counted in units".into());
        }
        if self.dedupe_working_set.is_none() && self.dedupe_sets.is_none() {
            return Err("data.dedupe-by-address needs data.dedupe-working-set or data.dedupe-sets: the sets the \
                        copies are of (vdbench's dedupsets, 5 % by default)"
                .into());
        }
        if self.dedupe_global == Some(true) {
            return Err(
                "data.dedupe-by-address shares its sets among all files already: remove data.dedupe-global".into()
            );
        }
        if let (Some(set), Some(copies)) = (self.dedupe_working_set, self.dedupe_percent)
            && set > copies
        {
            return Err(format!(
                "data.dedupe-working-set ({set} %) is more than data.dedupe-percent ({copies} %): with \
                 data.dedupe-by-address the sets are among the copied units; give fewer sets (vdbench: more \
                 dedupsets than non-unique blocks)"
            ));
        }
        Ok(())
    }

    /// Whether written units repeat, compress or carry a pattern: a header per block (verify) would defeat that.
    pub fn shapes(&self) -> bool {
        self.dedupe_percent.is_some_and(|p| p > 0.0)
            || self.compress_percent.is_some_and(|p| p > 0.0)
            || self.pattern.is_some()
    }

    /// Whether writes are filled by the shaper at all: any percentage said, 0 included. With both at 0 every
    /// write gets fresh random bytes (fio refill_buffers), which no compressor can shrink; streamcap's default
    /// (random buffers filled once, each 4 KiB stamped) defeats deduplication but not a compressor that looks
    /// across blocks.
    pub fn fills(&self) -> bool {
        self.dedupe_percent.is_some() || self.compress_percent.is_some() || self.pattern.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_combinations_are_checked_with_the_key_named() {
        let bad = DataSpec { dedupe_percent: Some(101.0), ..Default::default() };
        assert!(bad.check().unwrap_err().contains("data.dedupe-percent is 101"));
        let bad = DataSpec { dedupe_working_set: Some(0.0), ..Default::default() };
        assert!(bad.check().unwrap_err().contains("above 0"));
        let bad = DataSpec { dedupe_unit: Some(Bytes(1000)), ..Default::default() };
        assert!(bad.check().unwrap_err().contains("multiple of 512"));
        let bad = DataSpec { dedupe_global: Some(true), ..Default::default() };
        assert!(bad.check().unwrap_err().contains("needs data.dedupe-working-set"));
        let good = DataSpec { dedupe_percent: Some(50.0), compress_percent: Some(0.0), ..Default::default() };
        assert!(good.check().is_ok() && good.shapes());
        let refill = DataSpec { compress_percent: Some(0.0), ..Default::default() };
        assert!(!refill.shapes() && refill.fills());
        assert!(!DataSpec { dedupe_unit: Some(Bytes(4096)), ..Default::default() }.fills());
        let by_address = DataSpec {
            dedupe_percent: Some(50.0),
            dedupe_by_address: Some(true),
            dedupe_working_set: Some(5.0),
            ..Default::default()
        };
        assert!(by_address.check().unwrap_err().contains("needs data.dedupe-unit"));
        let by_address = DataSpec { dedupe_unit: Some(Bytes(8192)), ..by_address };
        assert!(by_address.check().is_ok());
        let too_many = DataSpec { dedupe_working_set: Some(60.0), ..by_address };
        assert!(too_many.check().unwrap_err().contains("more than data.dedupe-percent"));
    }

    #[test]
    fn overlay_keeps_what_the_later_layer_does_not_say() {
        let global = DataSpec { dedupe_percent: Some(30.0), compress_percent: Some(50.0), ..Default::default() };
        let job = DataSpec { dedupe_percent: Some(60.0), ..Default::default() };
        let both = global.overlay(&job);
        assert_eq!((both.dedupe_percent, both.compress_percent), (Some(60.0), Some(50.0)));
    }
}
