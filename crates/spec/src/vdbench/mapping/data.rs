//! vdbench's data shape: the general parameters dedupratio, dedupunit, dedupsets and compratio onto `data`
//! (spec::DataSpec), for raw (sd/wd) and file-system (fsd/fwd) runs alike.
//!
//! vdbench's dedupratio=R means R written units for each unique one; dedupsets (default 5 % of all the units)
//! is how many distinct units the duplicates are copies of. vdbench decides per block address (Dedup.java,
//! DedupBitMap.java): whether the dedupunit at an address is unique or a copy, and of which set, is fixed by
//! the address, so rewrites keep the ratio; streamcap does the same (`data.dedupe-by-address`): 1 − 1/R of the
//! addresses hold copies, the sets among them, and the sets are shared by every file as vdbench's are
//! (dedupacross=yes). dedupsets as a count (`dedupsets=1000`) is that many sets. compratio=C means data that
//! compresses C to 1: 1 − 1/C of every chunk is zeros.

use super::super::VdbError;
use super::super::expand::Loop;
use super::super::lexer::{Param, unprotect};
use super::super::model::Model;
use super::super::model::Record;
use super::super::values::{Item, Units, parse_items};
use super::words::{loop_err, loop_num};
use crate::spec::DataSpec;
use crate::units::Bytes;

/// vdbench's defaults: dedupunit=128k, dedupsets=5%.
const DEDUP_UNIT: u64 = 128 << 10;
const DEDUP_SETS_PERCENT: f64 = 5.0;

/// The data shape the general parameters ask for; `None` when they ask for none.
pub(super) fn data_shape(model: &Model) -> Result<Option<DataSpec>, VdbError> {
    let said = |name: &str| model.general.iter().rev().find(|(c, _)| *c == name).map(|(_, p)| p);
    let ratio = |name: &str| -> Result<Option<f64>, VdbError> {
        let Some(p) = said(name) else { return Ok(None) };
        match number(p)? {
            Item::Num(r) if (1.0..=1e6).contains(&r) => Ok(Some(r)),
            _ => Err(wrong(p, "a ratio of at least 1, such as 2 (two written units for each unique one)")),
        }
    };
    let (dedup, comp) = (ratio("dedupratio")?, ratio("compratio")?);
    let unit = match said("dedupunit").map(|p| (number(p), p)) {
        None => None,
        Some((Ok(Item::Num(u)), _)) if u >= 512.0 && u.fract() == 0.0 => Some(Bytes(u as u64)),
        Some((_, p)) => return Err(wrong(p, "a size of at least 512 bytes, such as 4k or 128k")),
    };
    // A percentage of the unique units, or a count of sets (vdbench: "dedupsets=nnn … the number of sets",
    // 1m for a million).
    let (sets, count) = match said("dedupsets").map(|p| (number(p), p)) {
        None => (DEDUP_SETS_PERCENT, None),
        Some((Ok(Item::Percent(s)), _)) if s > 0.0 && s <= 100.0 => (s, None),
        Some((Ok(Item::Num(n)), _)) if n >= 1.0 && n.fract() == 0.0 => (DEDUP_SETS_PERCENT, Some(n as u64)),
        Some((_, p)) => {
            return Err(wrong(p, "a percentage of the unique units, such as 5%, or a count of sets, such as 1000"));
        }
    };
    let mut data = DataSpec::default();
    if let Some(r) = dedup.filter(|r| *r > 1.0) {
        data.dedupe_percent = Some(100.0 * (1.0 - 1.0 / r));
        data.dedupe_unit = Some(unit.unwrap_or(Bytes(DEDUP_UNIT)));
        data.dedupe_working_set = Some(sets);
        data.dedupe_sets = count;
        data.dedupe_by_address = Some(true);
    }
    if let Some(c) = comp.filter(|c| *c > 1.0) {
        data.compress_percent = Some(100.0 * (1.0 - 1.0 / c));
    }
    Ok((data != DataSpec::default()).then_some(data))
}

fn number(p: &Param) -> Result<Item, VdbError> {
    match parse_items(&p.value, Units::Size) {
        Ok(items) if items.len() == 1 => Ok(items.into_iter().next().expect("one")),
        _ => Err(wrong(p, "one value")),
    }
}

fn wrong(p: &Param, expected: &str) -> VdbError {
    VdbError::keyword(&p.at, &p.key, None, format!("'{}' is not {expected}", unprotect(&p.value)))
}

/// An rd's `forcompratio=` loop: the value of this combination as the phase's data (compressible share only);
/// `merge` lays the general dedup parameters over it. Ratio 1 is fresh random bytes for every write.
pub(super) fn loop_compression(
    loops: &[Loop],
    combination: &[Item],
    rd: &Record,
) -> Result<Option<DataSpec>, VdbError> {
    let Some((l, item)) = loops.iter().zip(combination).find(|(l, _)| l.keyword == "forcompratio") else {
        return Ok(None);
    };
    match loop_num(l, item, rd)? {
        c if (1.0..=1e6).contains(&c) => {
            Ok(Some(DataSpec { compress_percent: Some(100.0 * (1.0 - 1.0 / c)), ..DataSpec::default() }))
        }
        c => Err(loop_err(l, rd, format!("{c} is not a compression ratio of at least 1, such as 2"))),
    }
}

/// A phase's data: the general parameters' shape, with an rd's `forcompratio` value in place of `compratio`.
pub(super) fn merge(general: Option<&DataSpec>, own: Option<DataSpec>) -> Option<DataSpec> {
    match (general, own) {
        (Some(g), Some(own)) => Some(DataSpec { compress_percent: own.compress_percent, ..g.clone() }),
        (g, own) => own.or_else(|| g.cloned()),
    }
}

pub(super) fn is_shape_key(canonical: &str) -> bool {
    matches!(canonical, "dedupratio" | "dedupunit" | "dedupsets" | "compratio")
}
