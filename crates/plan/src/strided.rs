//! fio's zonemode=strided as regions: each worker region becomes its zones — `size` bytes at every `range` +
//! `skip` — laid end to end, so the sequential walk over a worker's regions transfers a zone, jumps, and
//! transfers the next, as fio does; a pass ends after the last zone of the region.

use crate::spec::{RwMode, StridedSpec};
use crate::units::Bytes;
use crate::workload::Region;

/// More zones than this in one worker would take memory out of proportion (24 bytes each).
const MAX_ZONES: u64 = 1 << 20;

/// The zones of each worker's regions.
pub(super) fn zone_regions(
    regions: Vec<Vec<Region>>,
    strided: &StridedSpec,
    rw: RwMode,
    max_block: u64,
) -> Result<Vec<Vec<Region>>, String> {
    if rw.is_random() {
        return Err(format!(
            "strided zones (fio zonemode=strided) are supported with sequential I/O; rw is {rw}: use read, write \
             or readwrite"
        ));
    }
    if strided.size.0 < max_block || !strided.size.0.is_multiple_of(max_block) {
        return Err(format!(
            "strided.size ({}) must be a whole number of blocks ({}): a block would straddle two zones",
            strided.size,
            Bytes(max_block)
        ));
    }
    let stride = strided.stride();
    regions
        .into_iter()
        .map(|worker| {
            worker.into_iter().map(|r| zones(r, strided.size.0, stride)).try_fold(Vec::new(), |mut all, zones| {
                all.extend(zones?);
                Ok(all)
            })
        })
        .collect()
}

fn zones(region: Region, size: u64, stride: u64) -> Result<Vec<Region>, String> {
    let count = region.len.div_ceil(stride.max(1));
    if count > MAX_ZONES {
        return Err(format!(
            "{count} strided zones in one region is more than {MAX_ZONES}: use larger zones (size, range or skip)"
        ));
    }
    Ok((0..count)
        .map(|k| k * stride)
        .map(|at| Region { file: region.file, start: region.start + at, len: size.min(region.len - at) })
        .filter(|zone| zone.len >= size.min(region.len))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_are_taken_at_every_stride_and_a_short_last_one_is_dropped() {
        let strided = StridedSpec { size: Bytes(256 << 10), range: None, skip: Bytes(2 << 20) };
        let region = Region { file: 3, start: 4096, len: 10 << 20 };
        let out = zone_regions(vec![vec![region]], &strided, RwMode::Read, 65536).unwrap();
        let starts: Vec<u64> = out[0].iter().map(|r| r.start - 4096).collect();
        let stride = (256 << 10) + (2 << 20);
        assert_eq!(starts, [0, stride, 2 * stride, 3 * stride, 4 * stride]);
        assert!(out[0].iter().all(|r| r.len == 256 << 10 && r.file == 3));
    }

    #[test]
    fn random_io_and_blocks_that_straddle_zones_are_refused() {
        let strided = StridedSpec { size: Bytes(96 << 10), range: None, skip: Bytes(0) };
        let region = Region { file: 0, start: 0, len: 1 << 20 };
        assert!(zone_regions(vec![vec![region]], &strided, RwMode::RandRead, 4096).unwrap_err().contains("sequential"));
        assert!(zone_regions(vec![vec![region]], &strided, RwMode::Read, 65536).unwrap_err().contains("whole number"));
    }
}
