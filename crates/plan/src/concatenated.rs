//! Files laid end to end (`file-sizes`; vdbench's concatenated sds): each file at its own size, one address
//! space of their total, of which `offset` and `size` give the part a phase addresses; that part is cut at the
//! files' ends into the regions a worker walks as one. Pure: no I/O.

use super::files::{FileUse, aligned};
use crate::spec::{PhaseSpec, SizeOrPercent};
use crate::units::Bytes;
use crate::workload::Region;

/// Files laid end to end (`file-sizes`, vdbench's concatenated sds): each file as large as its size (whole
/// `align` units), and `offset` and `size` (bytes or percent) a part of their total, which is what the phase
/// addresses.
pub(super) fn concatenated_use(
    spec: &PhaseSpec,
    names: Vec<String>,
    sizes: &[Bytes],
    jobs: u32,
    align: u64,
) -> Result<FileUse, String> {
    let unit = align.max(4096);
    let sizes: Vec<u64> = sizes.iter().map(|s| s.0 / unit * unit).collect();
    if let Some(i) = sizes.iter().position(|&s| s == 0) {
        return Err(format!("file-sizes: {} holds no whole {} block", names[i], Bytes(unit)));
    }
    let total = sizes.iter().try_fold(0u64, |sum, &s| sum.checked_add(s)).ok_or("file-sizes add up past 16 EiB")?;
    let of_total = |key: &str, v: SizeOrPercent| match v {
        SizeOrPercent::Bytes(b) => aligned(key, b.0, align),
        SizeOrPercent::Percent(p) => Ok((total as f64 * p / 100.0) as u64 / unit * unit),
    };
    let base = spec.offset.map(|o| of_total("offset", o)).transpose()?.unwrap_or(0);
    let len = match (spec.size, spec.size_percent) {
        (Some(b), _) => b.0 / unit * unit,
        (None, Some(p)) => (total as f64 * p / 100.0) as u64 / unit * unit,
        (None, None) => total.saturating_sub(base),
    };
    if len == 0 || base.checked_add(len).is_none_or(|end| end > total) {
        return Err(format!(
            "offset {} and size {} address past the end of the files laid end to end ({}): use a smaller size or \
             offset",
            Bytes(base),
            Bytes(len),
            Bytes(total)
        ));
    }
    if spec.fio.offset_increment.is_some() {
        return Err("offset-increment does not apply to files laid end to end (file-sizes)".into());
    }
    let names_per_worker = vec![names; jobs as usize];
    Ok(FileUse { names_per_worker, own_files: false, base, len, increment: None, concatenated: Some(sizes) })
}

impl FileUse {
    /// The concatenation's part `[base, base + len)` cut at the files' ends: (file number, start, length). A piece
    /// shorter than a `block` is left out: vdbench moves an I/O that would straddle two sds to the next one
    /// (`ConcatSds.translateConcatToRealSd`), so it never lands in such a piece either.
    pub(super) fn spans(&self, sizes: &[u64], block: u64) -> Vec<(usize, u64, u64)> {
        let (from, to) = (self.base, self.base + self.len);
        let mut at = 0;
        let mut spans = Vec::new();
        for (i, &size) in sizes.iter().enumerate() {
            let (start, end) = (from.max(at), to.min(at + size));
            if start < end && end - start >= block {
                spans.push((i, start - at, end - start));
            }
            at += size;
        }
        spans
    }
}

/// The regions of the concatenation's part, the files named by `index_of`; refused when no piece holds a block.
pub(super) fn regions(
    usage: &FileUse,
    sizes: &[u64],
    index_of: &dyn Fn(&str) -> u32,
    block: u64,
) -> Result<Vec<Region>, String> {
    let names = &usage.names_per_worker[0];
    let regions: Vec<Region> = usage
        .spans(sizes, block)
        .into_iter()
        .map(|(i, start, len)| Region { file: index_of(&names[i]), start, len })
        .collect();
    if regions.is_empty() {
        return Err(format!(
            "the part of the files laid end to end ({} from {}) holds no whole block of {}: use a larger size",
            Bytes(usage.len),
            Bytes(usage.base),
            Bytes(block)
        ));
    }
    Ok(regions)
}

#[cfg(test)]
mod tests {
    use super::super::files::{directory_use, file_table, worker_regions};
    use super::*;
    use crate::spec::Sharing;

    /// file-sizes: 8 and 24 MiB laid end to end; an offset and size of the 32 MiB cut across the two files.
    #[test]
    fn files_laid_end_to_end_keep_their_sizes_and_a_part_cuts_across_them() {
        let spec = PhaseSpec {
            file_names: Some(vec!["a".into(), "b".into()]),
            file_sizes: Some(vec![Bytes::mib(8), Bytes::mib(24)]),
            offset: Some(SizeOrPercent::Bytes(Bytes::mib(4))),
            size: Some(Bytes::mib(8)),
            ..Default::default()
        };
        let usage = directory_use(&spec, 1, 4096).unwrap();
        assert_eq!(usage.data_set(2, 4096), 8 << 20);
        assert_eq!(
            file_table(&[(usage.clone(), 1)]).into_iter().collect::<Vec<_>>(),
            [("a".into(), 8 << 20), ("b".into(), 24 << 20)]
        );
        let index = |n: &str| u32::from(n == "b");
        let regions = worker_regions(&usage, &index, true, Sharing::Split, 4096, 4096).unwrap();
        let half = 4 << 20;
        assert_eq!(regions[0], [Region { file: 0, start: half, len: half }, Region { file: 1, start: 0, len: half }]);
        // A piece shorter than a block is left out, as vdbench moves an I/O straddling two files to the next.
        let sliver = PhaseSpec { offset: Some(SizeOrPercent::Bytes(Bytes((8 << 20) - 4096))), ..spec.clone() };
        let usage = directory_use(&sliver, 1, 4096).unwrap();
        let regions = worker_regions(&usage, &index, true, Sharing::Split, 4096, 65536).unwrap();
        assert_eq!(regions[0], [Region { file: 1, start: 0, len: (8 << 20) - 4096 }]);
        assert_eq!(usage.data_set(2, 65536), (8 << 20) - 4096);
        let past = PhaseSpec { size: Some(Bytes::mib(30)), ..spec };
        assert!(directory_use(&past, 1, 4096).unwrap_err().contains("past the end of the files laid end to end"));
    }
}
