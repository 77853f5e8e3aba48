//! What `streamcap cache` measures, as one job of raw phases, and every size and duration it uses (the one table
//! of its defaults). The phases, in the order they run and why:
//!
//! 1. sustained media: direct 1 MiB sequential reads from the start of the first half of the region. Only the
//!    fill (or nothing, on a device) came before, so no cache beneath holds what it reads first;
//! 2. access time: direct 4 KiB random reads, one at a time, over the whole region;
//! 3. page cache: buffered 1 MiB re-reads of a small region read into RAM beforehand (`pre-read`, no
//!    `invalidate`);
//! 4. device cache: direct 1 MiB re-reads of a region stepped up by four from 1 MiB, to find where the drive's
//!    or controller's cache ends;
//! 5. each plateau again beside a concurrent load phase (`concurrent`: a random load of 64 KiB at queue depth 4
//!    on a file of its own in a directory, or on the same file or device, reads only, otherwise). The media
//!    plateau reads the second half of the region here, which nothing has read yet.
//!
//! The app derives the plateaus from these phases by name (`summary`).

use std::time::Duration;

use crate::spec::{Format, JobSpec, PhaseSpec, RwMode, SizeOrPercent, SpecOrigin};
use crate::units::{Bytes, MIB};

/// Measured time of each plateau, and the warm-up before it.
pub const RUNTIME: Duration = Duration::from_secs(3);
pub const RAMP: Duration = Duration::from_millis(500);
/// The region of a directory target: this, or an eighth of the free space when that is smaller (room for the
/// region, the load's file and headroom).
pub const DIRECTORY_REGION: Bytes = Bytes::gib(1);
/// Below this the media and access time say little; the command refuses to start.
pub const MIN_REGION: Bytes = Bytes::mib(64);
/// The page-cache region: small enough to stay resident (at most a quarter of the effective RAM).
pub const PAGE_CACHE_REGION: Bytes = Bytes::mib(64);
/// Device-cache regions: from the first, times the factor, up to the last (and at most a quarter of the region).
pub const FIRST_STEP: Bytes = Bytes::mib(1);
pub const STEP_FACTOR: u64 = 4;
pub const LAST_STEP: Bytes = Bytes::mib(256);
/// Reads of the throughput plateaus, and how many are in flight.
pub const BLOCK: Bytes = Bytes::mib(1);
const DEPTH: u32 = 4;
/// The concurrent load's reads and writes, and how many are in flight.
const LOAD_BLOCK: &str = "64k";
const LOAD_DEPTH: u32 = 4;
/// The stream the bounds are worked out for, unless told.
pub const FORMAT: &str = "2160p-hevc";

/// Names of the phases (the summary finds them by name); `+ load` marks the same plateau under load.
pub const MEDIA: &str = "media";
pub const ACCESS: &str = "access time";
pub const PAGE_CACHE: &str = "page cache";
pub const UNDER_LOAD: &str = " + load";
pub const LOAD_PREFIX: &str = "load beside ";

/// The default stream of the bounds.
pub fn default_format() -> Format {
    Format::parse(FORMAT).expect("the default format is in the table")
}

/// The name of a device-cache step's phase.
pub fn step_name(region: Bytes) -> String {
    format!("device cache {region}")
}

/// Everything the job depends on.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Bytes the media and access-time plateaus read (whole MiB).
    pub region: Bytes,
    pub page_region: Bytes,
    pub steps: Vec<Bytes>,
    pub runtime: Duration,
    /// Bytes per read of the throughput plateaus.
    pub block: Bytes,
    /// The load as asked (mode and mix), or none.
    pub load: Option<PhaseSpec>,
    /// A directory target: the load gets a file of its own there.
    pub directory: bool,
}

impl Settings {
    /// `region`: as asked, or the default for the target; `ram`: the effective RAM; the measured time and the
    /// block size of the throughput plateaus as asked.
    pub fn new(
        region: Bytes,
        ram: Bytes,
        (runtime, block): (Option<Duration>, Option<Bytes>),
        load: Option<PhaseSpec>,
        directory: bool,
    ) -> Self {
        let region = Bytes(region.0 / MIB * MIB);
        let page_region = Bytes(PAGE_CACHE_REGION.0.min(ram.0 / 4 / MIB * MIB).min(region.0).max(MIB));
        let largest = LAST_STEP.0.min(region.0 / 4);
        let first = FIRST_STEP.0.max(block.unwrap_or(BLOCK).0);
        let steps = std::iter::successors(Some(first), |s| Some(s * STEP_FACTOR))
            .take_while(|s| *s <= largest)
            .map(Bytes)
            .collect();
        let block = block.unwrap_or(BLOCK);
        let runtime = runtime.unwrap_or(RUNTIME);
        Settings { region, page_region, steps, runtime, block, load, directory }
    }

    /// A rough forecast of the wall time, for the progress line (fills and pre-reads come on top).
    pub fn forecast(&self) -> Duration {
        let alone = 3 + self.steps.len() as u32;
        let loaded = if self.load.is_some() { 4 } else { 0 };
        (self.runtime + RAMP) * (alone + loaded)
    }
}

/// The default region of a directory with `free` bytes free: 1 GiB, or an eighth of the free space.
pub fn directory_region(free: Option<Bytes>) -> Bytes {
    match free {
        Some(free) => Bytes(DIRECTORY_REGION.0.min(free.0 / 8 / MIB * MIB)),
        None => DIRECTORY_REGION,
    }
}

/// The whole job.
pub fn cache_job(s: &Settings) -> JobSpec {
    let half = Bytes(s.region.0 / 2 / MIB * MIB);
    let mut alone = vec![
        read(s, MEDIA, RwMode::Read, s.block, DEPTH, half, None),
        read(s, ACCESS, RwMode::RandRead, Bytes::kib(4), 1, s.region, None),
        page_cache(s, PAGE_CACHE),
    ];
    alone.extend(s.steps.iter().map(|&step| read(s, &step_name(step), RwMode::Read, s.block, DEPTH, step, None)));
    let mut phases = alone;
    if let Some(load) = &s.load {
        let media = format!("{MEDIA}{UNDER_LOAD}");
        let access = format!("{ACCESS}{UNDER_LOAD}");
        let page = format!("{PAGE_CACHE}{UNDER_LOAD}");
        let mut measured = vec![
            read(s, &media, RwMode::Read, s.block, DEPTH, half, Some(half)),
            read(s, &access, RwMode::RandRead, Bytes::kib(4), 1, s.region, None),
            page_cache(s, &page),
        ];
        if let Some(&first) = s.steps.first() {
            let name = format!("{}{UNDER_LOAD}", step_name(first));
            measured.push(read(s, &name, RwMode::Read, s.block, DEPTH, first, None));
        }
        for phase in measured {
            let beside = load_phase(s, load, phase.name.as_deref().unwrap_or_default());
            phases.push(phase);
            phases.push(beside);
        }
    }
    JobSpec { origin: SpecOrigin::Default, target: None, interval: None, phases, notices: Vec::new() }
}

/// A measured read phase over `[offset, offset + size)`.
fn read(s: &Settings, name: &str, rw: RwMode, bs: Bytes, depth: u32, size: Bytes, offset: Option<Bytes>) -> PhaseSpec {
    PhaseSpec {
        name: Some(name.into()),
        rw: Some(rw),
        bs: Some(crate::spec::BlockSizeSpec::Fixed(bs)),
        iodepth: Some(depth),
        size: Some(size),
        offset: offset.map(SizeOrPercent::Bytes),
        runtime: Some(s.runtime),
        ramp: Some(RAMP),
        // Direct I/O, or the plan stops with a clear error where the filesystem refuses it: a cache benchmark
        // that quietly fell back to buffered reads would measure the page cache everywhere.
        direct: Some(true),
        ..PhaseSpec::default()
    }
}

/// Buffered re-reads of the page-cache region, read into RAM beforehand and not dropped.
fn page_cache(s: &Settings, name: &str) -> PhaseSpec {
    page_cache_phase(name, s.page_region, s.runtime, s.block)
}

/// The page-cache plateau as a phase: buffered re-reads of `region` (from the start of the file), read into RAM
/// beforehand and not dropped. `check` measures its cache section with this same phase.
pub fn page_cache_phase(name: &str, region: Bytes, runtime: Duration, block: Bytes) -> PhaseSpec {
    PhaseSpec {
        name: Some(name.into()),
        rw: Some(RwMode::Read),
        bs: Some(crate::spec::BlockSizeSpec::Fixed(block)),
        iodepth: Some(DEPTH),
        size: Some(region),
        runtime: Some(runtime),
        ramp: Some(RAMP),
        direct: Some(false),
        invalidate: Some(false),
        pre_read: Some(true),
        ..PhaseSpec::default()
    }
}

/// The load beside the measured phase `of`: random, 64 KiB at queue depth 4, for as long as the measured phase.
fn load_phase(s: &Settings, load: &PhaseSpec, of: &str) -> PhaseSpec {
    let base = PhaseSpec {
        name: Some(format!("{LOAD_PREFIX}{}", of.trim_end_matches(UNDER_LOAD))),
        bs: Some(LOAD_BLOCK.parse().expect("a fixed block size parses")),
        iodepth: Some(LOAD_DEPTH),
        size: Some(s.region),
        runtime: Some(s.runtime),
        ramp: Some(RAMP),
        concurrent: Some(true),
        // In a directory the load has a file of its own, so its writes never touch what is measured.
        file_names: s.directory.then(|| vec!["load".to_string()]),
        ..PhaseSpec::default()
    };
    base.overlay(load)
}

/// The load in words, for the summary.
pub fn load_words(load: &crate::cli::Load) -> String {
    format!("{load}, {} random at queue depth {LOAD_DEPTH}", Bytes::parse(LOAD_BLOCK).unwrap_or(Bytes::kib(64)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load() -> Option<PhaseSpec> {
        Some(PhaseSpec { rw: Some(RwMode::RandRw), rdpct: Some(70), ..PhaseSpec::default() })
    }

    #[test]
    fn the_job_measures_every_plateau_alone_then_beside_the_load() {
        let s = Settings::new(Bytes::gib(1), Bytes::gib(16), (None, None), load(), true);
        assert_eq!(s.steps, [1, 4, 16, 64, 256].map(Bytes::mib));
        let job = cache_job(&s);
        job.check().unwrap();
        let names: Vec<&str> = job.phases.iter().map(|p| p.name.as_deref().unwrap()).collect();
        assert_eq!(&names[..4], [MEDIA, ACCESS, PAGE_CACHE, "device cache 1 MiB"]);
        assert_eq!(names.len(), 3 + 5 + 8);
        let media_loaded = job.phases.iter().position(|p| p.name.as_deref() == Some("media + load")).unwrap();
        let beside = &job.phases[media_loaded + 1];
        assert_eq!(beside.concurrent, Some(true));
        assert_eq!(beside.rdpct, Some(70));
        assert_eq!(beside.file_names.as_deref(), Some(&["load".to_string()][..]));
        assert_eq!(job.phases[media_loaded].offset, Some(SizeOrPercent::Bytes(Bytes::mib(512))), "the unread half");
        let page = &job.phases[2];
        assert_eq!((page.direct, page.invalidate, page.pre_read), (Some(false), Some(false), Some(true)));
    }

    #[test]
    fn small_regions_and_small_ram_shrink_the_steps_and_the_page_cache_region() {
        let s = Settings::new(Bytes::mib(64), Bytes::mib(128), (Some(Duration::from_secs(1)), None), None, false);
        assert_eq!(s.steps, [Bytes::mib(1), Bytes::mib(4), Bytes::mib(16)]);
        assert_eq!(s.page_region, Bytes::mib(32));
        let job = cache_job(&s);
        assert_eq!(job.phases.len(), 3 + 3, "no load: the plateaus alone");
        assert_eq!(directory_region(Some(Bytes::gib(4))), Bytes::mib(512));
        assert_eq!(directory_region(Some(Bytes::gib(100))), Bytes::gib(1));
    }
}
