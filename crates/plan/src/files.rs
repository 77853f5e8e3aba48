//! Which files each phase uses and which bytes of them each worker addresses.
//!
//! A directory target's file table is the union of what its phases need: the shared data files `data.N`
//! (phases that name no files), and files a phase names (`file-names`; `{worker}` in a name gives each worker its
//! own file, and phases naming the same file share it). Every file is created as large as the most demanding
//! phase needs. Within a file, a phase uses `[offset, offset + len)`; with `offset-increment`, worker N starts N
//! increments further (fio's offset_increment). Files laid end to end (`file-sizes`) are `concatenated`'s. A file
//! or device target is the one file there is.

use std::collections::BTreeMap;

use super::defaults;
use crate::spec::{PhaseSpec, Sharing, SizeOrPercent};
use crate::workload::Region;

/// What one phase uses of the file table, before it is split between workers.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct FileUse {
    /// Per worker, the names of the files it works on.
    pub names_per_worker: Vec<Vec<String>>,
    /// Each worker has files of its own (`{worker}` in the names).
    pub own_files: bool,
    /// First byte used in every file.
    pub base: u64,
    /// Bytes used in every file (for the whole phase; split between workers unless they own their files).
    pub len: u64,
    /// Worker N starts `N × increment` after `base`.
    pub increment: Option<u64>,
    /// `file-sizes`: each named file's size, the files laid end to end; `base` and `len` then address that
    /// concatenation instead of each file.
    pub concatenated: Option<Vec<u64>>,
}

impl FileUse {
    /// Distinct file names, in first-use order.
    pub fn distinct_names(&self) -> Vec<&str> {
        let mut seen = std::collections::HashSet::new();
        self.names_per_worker.iter().flatten().map(String::as_str).filter(|n| seen.insert(*n)).collect()
    }

    /// Bytes a file must hold for this phase; `None` past 16 EiB (offsets and increments are the user's
    /// numbers, so every step is checked).
    pub fn file_size_needed(&self, jobs: u32) -> Option<u64> {
        match self.increment {
            Some(inc) => self
                .base
                .checked_add(inc.checked_mul(u64::from(jobs.saturating_sub(1)))?)?
                .checked_add(self.worker_len(jobs)),
            None => self.base.checked_add(self.len),
        }
    }

    /// Bytes of each file that one worker addresses when increments place the workers.
    fn worker_len(&self, jobs: u32) -> u64 {
        if self.own_files { self.len } else { self.len / u64::from(jobs) }
    }

    /// The bytes addressed: every file's `len`, or the part of the concatenation (without the pieces too short
    /// for a `block`, see `spans`).
    pub fn data_set(&self, files: usize, block: u64) -> u64 {
        match &self.concatenated {
            Some(sizes) => self.spans(sizes, block).iter().map(|s| s.2).sum(),
            None => self.len * files as u64,
        }
    }

    /// Each distinct file's size for this phase: its own size in a concatenation, else what the phase needs.
    fn sizes_needed(&self, jobs: u32) -> Vec<(&str, u64)> {
        let names = self.distinct_names();
        match &self.concatenated {
            Some(sizes) => names.into_iter().zip(sizes.iter().copied()).collect(),
            // Checked when the use was made (`directory_use`).
            None => names.into_iter().map(|n| (n, self.file_size_needed(jobs).unwrap_or(u64::MAX))).collect(),
        }
    }
}

/// How a directory phase uses files: names, and bytes per file.
pub(super) fn directory_use(spec: &PhaseSpec, default_files: u32, align: u64) -> Result<FileUse, String> {
    let jobs = spec.jobs.unwrap_or(defaults::JOBS);
    let names = phase_file_names(spec, default_files)?;
    if let Some(sizes) = &spec.file_sizes {
        return super::concatenated::concatenated_use(spec, names, sizes, jobs, align);
    }
    let own_files = names.iter().any(|n| n.contains("{worker}"));
    let names_per_worker: Vec<Vec<String>> =
        (0..jobs).map(|w| names.iter().map(|n| n.replace("{worker}", &w.to_string())).collect()).collect();
    let distinct = {
        let mut all: Vec<&String> = names_per_worker.iter().flatten().collect();
        all.sort();
        all.dedup();
        all.len() as u64
    };
    let size = spec.size.unwrap_or(defaults::SIZE).0;
    // A part of a file (an offset said: vdbench's range=, whose ends are already rounded to whole 4 KiB as
    // vdbench rounds them) keeps its length; a whole file is sized in whole MiB.
    let whole_mib = size / distinct >= defaults::FILE_GRANULE && spec.offset.is_none();
    let granule = if whole_mib { defaults::FILE_GRANULE } else { align.max(4096) };
    let len = size / distinct / granule * granule;
    if len == 0 {
        return Err(format!(
            "the data set leaves less than {} per file ({distinct} files): use a larger --size or fewer --files",
            crate::units::Bytes(granule)
        ));
    }
    let percent_error = |key: &str| {
        format!(
            "{key} as a percentage needs an existing file or block device as the target (in a directory, \
             streamcap decides the file sizes): give it in bytes"
        )
    };
    if spec.size_percent.is_some() {
        return Err(percent_error("size"));
    }
    let base = match spec.offset {
        None => 0,
        Some(SizeOrPercent::Bytes(b)) => aligned("offset", b.0, align)?,
        Some(SizeOrPercent::Percent(_)) => return Err(percent_error("offset")),
    };
    let increment = match spec.fio.offset_increment {
        None => None,
        Some(SizeOrPercent::Bytes(b)) => Some(aligned("offset-increment", b.0, align)?),
        Some(SizeOrPercent::Percent(_)) => return Err(percent_error("offset-increment")),
    };
    let usage = FileUse { names_per_worker, own_files, base, len, increment, concatenated: None };
    if usage.file_size_needed(jobs).is_none() {
        return Err(past_16_eib(&usage, jobs));
    }
    Ok(usage)
}

/// The names of a phase's files: the names it gives (checked), or the shared data files.
fn phase_file_names(spec: &PhaseSpec, default_files: u32) -> Result<Vec<String>, String> {
    // Counted before any name is made: `--files 100000000` once built 100 million names (5 GB) to refuse them.
    let count = spec.file_names.as_ref().map_or(spec.files.unwrap_or(default_files) as usize, Vec::len);
    if count > defaults::MAX_FILES_PER_WORKER {
        return Err(too_many_files(count));
    }
    match &spec.file_names {
        Some(names) if names.is_empty() => Err("file-names is empty: name at least one file".into()),
        Some(names) => {
            for name in names {
                check_file_name(name)?;
            }
            Ok(names.clone())
        }
        None => Ok((0..spec.files.unwrap_or(default_files)).map(|i| format!("data.{i}")).collect()),
    }
}

/// Every worker keeps its files open for the whole phase (no open/close in the measured loop).
fn too_many_files(count: usize) -> String {
    format!(
        "{count} files per job is more than the {} a job keeps open: for many small files use a file-set \
         workload (a [phase.fileset] table, or a vdbench fsd/fwd file), which opens and closes files as it goes",
        defaults::MAX_FILES_PER_WORKER
    )
}

fn past_16_eib(usage: &FileUse, jobs: u32) -> String {
    format!(
        "offset {} plus {jobs} jobs × offset-increment {} and the data per file ({}) is past 16 EiB, the largest \
         file size: use smaller values",
        crate::units::Bytes(usage.base),
        crate::units::Bytes(usage.increment.unwrap_or(0)),
        crate::units::Bytes(usage.len)
    )
}

/// How a phase uses the one file or device of a file or block-device target of `size` bytes.
pub(super) fn single_target_use(spec: &PhaseSpec, size: u64, align: u64) -> Result<FileUse, String> {
    if spec.file_names.is_some() {
        return Err("file-names need a directory as the target (streamcap creates the files there)".into());
    }
    let jobs = spec.jobs.unwrap_or(defaults::JOBS);
    let of_size = |key: &str, v: SizeOrPercent| match v {
        SizeOrPercent::Bytes(b) => aligned(key, b.0, align),
        SizeOrPercent::Percent(p) => Ok((size as f64 * p / 100.0) as u64 / align * align),
    };
    let base = spec.offset.map(|o| of_size("offset", o)).transpose()?.unwrap_or(0);
    let increment = spec.fio.offset_increment.map(|o| of_size("offset-increment", o)).transpose()?;
    if base >= size {
        return Err(format!("offset {} is beyond the end of the target ({})", crate::units::Bytes(base), size));
    }
    let asked = match (spec.size, spec.size_percent) {
        (Some(b), _) => b.0,
        (None, Some(p)) => (size as f64 * p / 100.0) as u64,
        (None, None) => {
            (size - base).saturating_sub(increment.map_or(0, |i| i.saturating_mul(u64::from(jobs.saturating_sub(1)))))
        }
    };
    // An existing file smaller than the size asked is read whole (a device that small was refused already).
    let len = asked.min(size - base) / align * align;
    let usage = FileUse {
        names_per_worker: vec![vec![String::new()]; jobs as usize],
        own_files: false,
        base,
        len,
        increment,
        concatenated: None,
    };
    let Some(needed) = usage.file_size_needed(jobs) else { return Err(past_16_eib(&usage, jobs)) };
    if needed > size {
        return Err(format!(
            "the phase needs {} of the target (offset {} + data {}), but it holds only {}: use a smaller size or \
             offset",
            crate::units::Bytes(needed),
            crate::units::Bytes(base),
            crate::units::Bytes(len),
            crate::units::Bytes(size)
        ));
    }
    Ok(usage)
}

pub(super) fn aligned(key: &str, value: u64, align: u64) -> Result<u64, String> {
    if !value.is_multiple_of(align) {
        return Err(format!(
            "{key} {} is not a multiple of {}, which direct I/O needs here: round it",
            crate::units::Bytes(value),
            crate::units::Bytes(align)
        ));
    }
    Ok(value)
}

/// A name inside the work directory: no path separators, nothing hidden, nothing that climbs out.
fn check_file_name(name: &str) -> Result<(), String> {
    let plain = name.replace("{worker}", "0");
    if plain.is_empty() || plain.contains('/') || plain.starts_with('.') || plain.contains('\0') {
        return Err(format!(
            "file name '{name}' must be a plain name inside streamcap's work directory (no '/', not starting \
             with '.')"
        ));
    }
    Ok(())
}

/// The file table of a directory target: name → size, the largest any phase needs.
pub(super) fn file_table(uses: &[(FileUse, u32)]) -> BTreeMap<String, u64> {
    let mut table: BTreeMap<String, u64> = BTreeMap::new();
    for (usage, jobs) in uses {
        for (name, needed) in usage.sizes_needed(*jobs) {
            let entry = table.entry(name.to_string()).or_insert(0);
            *entry = (*entry).max(needed);
        }
    }
    table
}

/// The regions each worker addresses. `index_of` maps a file name to its index in the run's file table.
pub(super) fn worker_regions(
    usage: &FileUse,
    index_of: &dyn Fn(&str) -> u32,
    random: bool,
    sharing: Sharing,
    align: u64,
    block: u64,
) -> Result<Vec<Vec<Region>>, String> {
    let jobs = usage.names_per_worker.len() as u32;
    if let Some(sizes) = &usage.concatenated {
        let regions = super::concatenated::regions(usage, sizes, index_of, block)?;
        return match sharing {
            Sharing::Whole => Ok(vec![regions; jobs as usize]),
            Sharing::Split => split_regions(&regions, jobs, random, align, block),
        };
    }
    if let Some(inc) = usage.increment {
        let len = usage.worker_len(jobs) / align * align;
        if len < block {
            return Err(format!(
                "each of {jobs} jobs gets {} per file, less than a block of {}: use a larger size or fewer jobs",
                crate::units::Bytes(len),
                crate::units::Bytes(block)
            ));
        }
        return Ok(usage
            .names_per_worker
            .iter()
            .enumerate()
            .map(|(w, names)| {
                let start = usage.base + inc * w as u64;
                names.iter().map(|n| Region { file: index_of(n), start, len }).collect()
            })
            .collect());
    }
    let regions_of = |names: &[String]| -> Vec<Region> {
        names.iter().map(|n| Region { file: index_of(n), start: usage.base, len: usage.len }).collect()
    };
    if usage.own_files {
        return Ok(usage.names_per_worker.iter().map(|names| regions_of(names)).collect());
    }
    let regions = regions_of(&usage.names_per_worker[0]);
    match sharing {
        Sharing::Whole => Ok(vec![regions; jobs as usize]),
        Sharing::Split => split_regions(&regions, jobs, random, align, block),
    }
}

/// Random phases: every worker gets every region. Sequential: the regions, laid end to end, are cut into
/// `jobs` contiguous slices of whole `align` units, as equal as that allows, covering every byte — so a
/// sequential write phase leaves no hole for a later read to find.
pub(super) fn split_regions(
    regions: &[Region],
    jobs: u32,
    random: bool,
    align: u64,
    block: u64,
) -> Result<Vec<Vec<Region>>, String> {
    if random || jobs == 1 {
        return Ok(vec![regions.to_vec(); jobs as usize]);
    }
    let total: u64 = regions.iter().map(|r| r.len).sum();
    if total / u64::from(jobs) < block {
        return Err(format!(
            "the data set ({}) is too small to give each of {jobs} jobs a block of {}; use fewer --jobs or a larger --size",
            crate::units::Bytes(total),
            crate::units::Bytes(block)
        ));
    }
    let units = total / align;
    let mut slices = Vec::with_capacity(jobs as usize);
    let (mut region, mut offset) = (0, 0);
    for w in 0..jobs as usize {
        let mut need = share(units, jobs, w) * align;
        let mut mine = Vec::new();
        while need > 0 && region < regions.len() {
            let r = regions[region];
            let take = need.min(r.len - offset);
            mine.push(Region { file: r.file, start: r.start + offset, len: take });
            need -= take;
            offset += take;
            if offset == r.len {
                region += 1;
                offset = 0;
            }
        }
        slices.push(mine);
    }
    Ok(slices)
}

/// Worker `w`'s part of `units` shared between `jobs`: the remainder goes one each to the first workers.
pub(super) fn share(units: u64, jobs: u32, w: usize) -> u64 {
    units / u64::from(jobs) + u64::from((w as u64) < units % u64::from(jobs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Bytes;

    #[test]
    fn worker_names_give_each_worker_its_own_files() {
        let spec = PhaseSpec {
            jobs: Some(3),
            size: Some(Bytes::mib(12)),
            file_names: Some(vec!["job.{worker}.0".into()]),
            ..Default::default()
        };
        let usage = directory_use(&spec, 1, 4096).unwrap();
        assert!(usage.own_files);
        assert_eq!(usage.distinct_names(), ["job.0.0", "job.1.0", "job.2.0"]);
        assert_eq!(usage.len, 4 << 20, "the data set is spread over the three files");
        let names = usage.distinct_names();
        let index = |n: &str| names.iter().position(|x| *x == n).unwrap() as u32;
        let regions = worker_regions(&usage, &index, false, Sharing::Split, 4096, 4096).unwrap();
        assert_eq!(regions[2], vec![Region { file: 2, start: 0, len: 4 << 20 }]);
    }

    #[test]
    fn offset_increment_places_workers_one_after_another() {
        let spec = PhaseSpec {
            jobs: Some(4),
            size: Some(Bytes::gib(4)),
            offset: Some(SizeOrPercent::Bytes(Bytes::mib(1))),
            fio: crate::spec::FioExtras {
                offset_increment: Some(SizeOrPercent::Bytes(Bytes::gib(1))),
                ..Default::default()
            },
            ..Default::default()
        };
        let usage = single_target_use(&spec, 8 << 30, 4096).unwrap();
        let regions = worker_regions(&usage, &|_| 0, false, Sharing::Split, 4096, 4096).unwrap();
        assert_eq!(regions[3], vec![Region { file: 0, start: (1 << 20) + (3 << 30), len: 1 << 30 }]);
        let too_far = PhaseSpec { offset: Some(SizeOrPercent::Bytes(Bytes::gib(5))), ..spec };
        assert!(single_target_use(&too_far, 8 << 30, 4096).unwrap_err().contains("holds only"));
    }

    #[test]
    fn percentages_are_of_the_device_and_refused_in_directories() {
        let spec =
            PhaseSpec { size_percent: Some(25.0), offset: Some(SizeOrPercent::Percent(50.0)), ..Default::default() };
        let usage = single_target_use(&spec, 1 << 30, 4096).unwrap();
        assert_eq!((usage.base, usage.len), (1 << 29, 1 << 28));
        assert!(directory_use(&spec, 1, 4096).unwrap_err().contains("percentage"));
    }

    #[test]
    fn whole_sharing_gives_every_worker_everything_and_names_stay_inside() {
        let spec = PhaseSpec { jobs: Some(2), file_names: Some(vec!["shared".into()]), ..Default::default() };
        let usage = directory_use(&spec, 1, 4096).unwrap();
        let regions = worker_regions(&usage, &|_| 0, false, Sharing::Whole, 4096, 4096).unwrap();
        assert_eq!(regions[0], regions[1]);
        let table = file_table(&[(usage, 2)]);
        assert_eq!(table.len(), 1);
        for bad in ["../x", "a/b", ".hidden", ""] {
            let spec = PhaseSpec { file_names: Some(vec![bad.into()]), ..Default::default() };
            assert!(directory_use(&spec, 1, 4096).is_err(), "{bad}");
        }
    }
}
