//! What `streamcap sweep` runs, as one job of raw phases, and every default it uses (the one table of them).
//! For each file size (smallest first), each I/O mode (buffered, then direct) and each record size, five
//! passes over a file of that size, in iozone's order: write, re-write, read, re-read, random read. Nothing is
//! dropped from the page cache between passes (`invalidate` off), as iozone does not: that is how the re-reads
//! of a file that fits in RAM come from RAM, and how the size where they stop doing so (the cliff) shows. Each
//! write ends with an fsync (`end-fsync`), measured apart by the core as a sync operation.
//!
//! Each size has a file of its own (`sweep-SIZE`), so the disk holds the sum of the sizes at the end.

use crate::spec::{BlockSizeSpec, JobSpec, PhaseSpec, RwMode, SpecOrigin};
use crate::units::{Bytes, KIB};

/// The smallest default size.
pub const FIRST_SIZE: Bytes = Bytes::kib(64);
/// Default record sizes.
pub const RECORDS: [Bytes; 2] = [Bytes::kib(64), Bytes::mib(1)];
/// The default sizes stop at this many times the effective RAM: far enough past the RAM that the page cache
/// cannot hold the file.
pub const RAM_FACTOR: u64 = 2;
/// ... and the sum of all sizes' files stays under this share of the free space (the default sizes double, so
/// their sum is about twice the largest).
pub const FREE_SHARE: u64 = 2;
/// The time budget unless told (`--budget`): the sweep stops between sizes when the next would run past it.
pub const BUDGET: std::time::Duration = std::time::Duration::from_secs(15 * 60);
/// Sizes and offsets of direct I/O are whole 4 KiB units.
const ALIGN: u64 = 4 * KIB;

/// The five passes over each file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    Write,
    Rewrite,
    Read,
    Reread,
    RandomRead,
}

impl Pass {
    pub const ALL: [Pass; 5] = [Pass::Write, Pass::Rewrite, Pass::Read, Pass::Reread, Pass::RandomRead];

    pub fn label(self) -> &'static str {
        match self {
            Pass::Write => "write",
            Pass::Rewrite => "re-write",
            Pass::Read => "read",
            Pass::Reread => "re-read",
            Pass::RandomRead => "random read",
        }
    }

    fn rw(self) -> RwMode {
        match self {
            Pass::Write | Pass::Rewrite => RwMode::Write,
            Pass::Read | Pass::Reread => RwMode::Read,
            Pass::RandomRead => RwMode::RandRead,
        }
    }
}

/// What one phase of the job measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub size: Bytes,
    pub record: Bytes,
    pub direct: bool,
    pub pass: Pass,
}

/// The sizes, records and modes of a sweep.
#[derive(Debug, Clone)]
pub struct Settings {
    pub sizes: Vec<Bytes>,
    pub records: Vec<Bytes>,
    /// Buffered first, then direct (either may be left out).
    pub modes: Vec<bool>,
}

impl Settings {
    /// Every phase's key, in the order the job runs them. A record larger than the file is left out.
    pub fn keys(&self) -> Vec<Key> {
        let mut keys = Vec::new();
        for &size in &self.sizes {
            for &direct in &self.modes {
                for &record in self.records.iter().filter(|r| r.0 <= size.0) {
                    keys.extend(Pass::ALL.map(|pass| Key { size, record, direct, pass }));
                }
            }
        }
        keys
    }

    /// Bytes the files take on disk at the end (each size has a file of its own).
    pub fn disk_bytes(&self) -> Bytes {
        Bytes(self.sizes.iter().map(|s| s.0).sum())
    }
}

/// The default sizes: powers of two from 64 KiB up to twice the effective RAM, while the sum of the files stays
/// under half the free space. Returns the sizes, and why they stop short of twice the RAM when they do.
pub fn default_sizes(ram: Bytes, free: Option<Bytes>) -> (Vec<Bytes>, Option<String>) {
    let goal = ram.0.saturating_mul(RAM_FACTOR);
    let room = free.map_or(u64::MAX, |f| f.0 / FREE_SHARE);
    let mut sizes = Vec::new();
    let (mut size, mut sum) = (FIRST_SIZE.0, 0u64);
    while size <= goal && sum + size <= room {
        sizes.push(Bytes(size));
        sum += size;
        size *= 2;
    }
    let largest = sizes.last().map_or(0, |s| s.0);
    let bound = (largest < goal).then(|| {
        format!(
            "the sizes stop at {} because the files of all sizes must fit in half the free space ({} free), short \
             of twice the effective RAM ({}) where the page cache can no longer hold a file",
            Bytes(largest),
            free.unwrap_or_default(),
            Bytes(goal)
        )
    });
    (sizes, bound)
}

/// A size as asked, in whole 4 KiB units (direct I/O needs them).
pub fn aligned(size: Bytes) -> Bytes {
    Bytes(size.0 / ALIGN * ALIGN)
}

/// The whole job: one raw phase per key.
pub fn sweep_job(settings: &Settings) -> JobSpec {
    let phases = settings.keys().iter().map(phase).collect();
    JobSpec { origin: SpecOrigin::Default, target: None, interval: None, phases, notices: Vec::new() }
}

fn phase(key: &Key) -> PhaseSpec {
    let writes = matches!(key.pass, Pass::Write | Pass::Rewrite);
    PhaseSpec {
        name: Some(name(key)),
        rw: Some(key.pass.rw()),
        bs: Some(BlockSizeSpec::Fixed(key.record)),
        iodepth: Some(1),
        size: Some(key.size),
        file_names: Some(vec![format!("sweep-{}", key.size.0)]),
        direct: Some(key.direct),
        // iozone's way: what a pass left in the page cache stays there for the next.
        invalidate: Some(false),
        end_fsync: writes.then_some(true),
        ..PhaseSpec::default()
    }
}

/// "64 MiB 1 MiB buffered re-read".
pub fn name(key: &Key) -> String {
    let mode = if key.direct { "direct" } else { "buffered" };
    format!("{} {} {mode} {}", key.size, key.record, key.pass.label())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_sizes_double_to_twice_the_ram_within_half_the_free_space() {
        let (sizes, bound) = default_sizes(Bytes::mib(1), Some(Bytes::gib(100)));
        assert_eq!(sizes.first(), Some(&Bytes::kib(64)));
        assert_eq!(sizes.last(), Some(&Bytes::mib(2)));
        assert_eq!(bound, None);
        let (sizes, bound) = default_sizes(Bytes::gib(16), Some(Bytes::gib(8)));
        assert_eq!(sizes.last(), Some(&Bytes::gib(2)), "64K + … + 2G < 4G, + 4G would not be");
        assert!(bound.unwrap().contains("stop at 2 GiB"));
    }

    #[test]
    fn the_job_runs_five_passes_per_size_mode_and_record_in_iozone_order() {
        let settings = Settings {
            sizes: vec![Bytes::kib(64), Bytes::mib(4)],
            records: RECORDS.to_vec(),
            modes: vec![false, true],
        };
        let keys = settings.keys();
        assert_eq!(keys.len(), 5 * (2 + 2 * 2), "no 1 MiB records in a 64 KiB file");
        let job = sweep_job(&settings);
        job.check().unwrap();
        let first = &job.phases[0];
        assert_eq!(first.name.as_deref(), Some("64 KiB 64 KiB buffered write"));
        assert_eq!((first.end_fsync, first.invalidate, first.direct), (Some(true), Some(false), Some(false)));
        let names: Vec<&str> = job.phases[..5].iter().map(|p| p.name.as_deref().unwrap()).collect();
        assert!(names[4].ends_with("random read") && job.phases[4].end_fsync.is_none());
        assert_eq!(job.phases[5].name.as_deref(), Some("64 KiB 64 KiB direct write"));
        assert_eq!(job.phases[10].file_names, Some(vec!["sweep-4194304".to_string()]));
        assert_eq!(settings.disk_bytes(), Bytes::kib(64 + 4096));
    }
}
