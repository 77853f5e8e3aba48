//! `OpSource`: the endless stream of operations one worker issues — direction, file, offset, length.
//!
//! A worker's address space is a list of regions (a file and a byte range in it) laid end to end. Sequential
//! access keeps a cursor per region and moves between regions as the file service says (all of one, then the
//! next; one operation each in turn; or a random one each time), wrapping at the end; random access picks a unit
//! of `unit` bytes (the smallest block size) with the configured distribution and maps it back to a region. A mix
//! (`random_percent`) draws each operation random or sequential; a sequential one continues where the last
//! operation in that region ended, as fio's percentage_random does. An operation never crosses the end of a
//! region: a random one is pulled back so that it fits; a sequential one is shortened to the bytes left, so that
//! one pass writes (or reads) every byte of the regions, whatever the mix of block sizes.
//!
//! fio's offset modifiers (`Offsets`): a sequential step adds a fixed amount to the offset after each operation
//! (`rw=write:4k` leaves 4 KiB holes, `rw=read:-8k` with 4 KiB blocks walks backwards), wrapping to the start of
//! the region (or, backwards, to its end plus the step) when it runs off, which ends the pass over that region;
//! `random_every` takes a new random offset only every Nth operation (`rw=randread:8`), the ones between continue
//! sequentially or repeat the same offset (fio's `rw_sequencer`). A zoned distribution is applied to each region
//! (file) on its own, as fio applies it to each file. vdbench's `stride=(min,max)` replaces each random offset
//! by a skip forward from the end of the last operation, over the regions laid end to end.

use serde::{Deserialize, Serialize};

use super::blocksize::{BlockSizes, SizePicker};
use super::distribution::{Distribution, Sampler};
use super::random_map::RandomMap;
use super::rng::Rng;
use super::shuffle::Shuffle;

/// A byte range of one file that a worker may touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Region {
    /// Index into the run's file table.
    pub file: u32,
    /// First byte.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
}

/// Order of accesses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Access {
    Sequential,
    Random { distribution: Distribution },
}

/// Everything that decides one worker's operations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadConfig {
    pub regions: Vec<Region>,
    pub access: Access,
    /// Percentage of operations that are reads (0–100).
    pub read_percent: u8,
    pub block_sizes: BlockSizes,
    /// Block sizes of writes when they differ from `block_sizes` (which then apply to reads).
    pub write_sizes: Option<BlockSizes>,
    /// Offsets are multiples of this (bytes); 4096 for direct I/O.
    pub align: u32,
    pub seed: u64,
    /// With random access: percentage of operations at a random offset, the rest sequential (100: all random).
    pub random_percent: u8,
    /// How sequential access moves between regions.
    pub file_service: FileService,
    /// fio's offset modifiers (rw=read:-8k, rw=randread:8, rw_sequencer).
    #[serde(default)]
    pub offsets: Offsets,
}

/// fio's offset modifiers; the default changes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Offsets {
    /// Sequential access: bytes added to the offset after each operation (negative: backwards).
    pub step: i64,
    /// Random access: a new random offset every this many operations (0 or 1: every operation).
    pub random_every: u32,
    /// Between random offsets, repeat the last offset instead of continuing sequentially.
    pub identical: bool,
    /// In place of a random offset, skip forward (vdbench stride=).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stride: Option<Stride>,
}

/// vdbench's `stride=(min,max)`, bytes: each skip is `min` plus a random whole number of the operation's length
/// below `max − min` (`WG_entry.blockBoundarySeek`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stride {
    pub min: u64,
    pub max: u64,
}

/// How a worker with several regions (files) moves between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileService {
    /// All of one region, then the next.
    Sequential,
    /// One operation per region in turn.
    RoundRobin,
    /// A random region for each operation.
    Random,
}

/// What the next operation's offset is.
enum Pick {
    Random,
    Sequential,
    /// The last offset again (rw_sequencer=identical).
    Same,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Read,
    Write,
}

/// One operation to issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    pub dir: Direction,
    pub file: u32,
    pub offset: u64,
    pub len: u32,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WorkloadError {
    #[error("the workload has no data to work on (no regions)")]
    NoRegions,
    #[error("a block size of {block} bytes does not fit in a region of {region} bytes; use a larger --size")]
    RegionTooSmall { block: u32, region: u64 },
    #[error("a region of {region} bytes is not a whole number of {align}-byte units")]
    RegionMisaligned { region: u64, align: u32 },
    #[error("block size {0} is not a multiple of the alignment {1}")]
    Misaligned(u32, u32),
    #[error("read percentage {0} is above 100")]
    BadReadPercent(u8),
    #[error("the workloads of a mix have no weight: give at least one a share above zero")]
    NoWeight,
}

pub struct OpSource {
    regions: Vec<Region>,
    /// Start of each region in the concatenated address space, for mapping a random position back.
    region_starts: Vec<u64>,
    /// Sequential cursor of each region (bytes from its start).
    cursors: Vec<u64>,
    /// The region sequential operations are in.
    current: usize,
    /// Random operations in the current region so far (random access under sequential file service).
    ops_in_region: u64,
    file_service: FileService,
    random: Option<(Sampler, u64)>,
    /// Uniform random access: each unit once per pass (fio's random map), in place of `random`'s sampler.
    shuffle: Option<Shuffle>,
    /// Uniform random access with several block sizes on one region: the units of the pass covered so far, so
    /// that an operation starts on a free unit and is trimmed where it meets covered ones (fio's random map;
    /// `random_map`). It replaces the shuffle there.
    map: Option<RandomMap>,
    /// Zoned access: one sampler per region (zones are per file); the region is chosen first.
    zoned: Vec<Sampler>,
    random_percent: u8,
    offsets: Offsets,
    /// Operations left until the next new random offset (`random_every`).
    until_random: u32,
    /// Offset of the last operation in its region (for `identical`).
    last_offset: u64,
    /// A stride has been taken (vdbench's first one is at the start).
    strode: bool,
    sizes: SizePicker,
    write_sizes: Option<SizePicker>,
    read_percent: u8,
    align: u64,
    rng: Rng,
}

impl OpSource {
    pub fn new(config: &WorkloadConfig) -> Result<OpSource, WorkloadError> {
        let (align, all_sizes) = Self::check(config)?;
        let mut region_starts = Vec::with_capacity(config.regions.len());
        let mut total = 0;
        for region in &config.regions {
            region_starts.push(total);
            total += region.len;
        }
        let (random, zoned, random_percent) = Self::samplers(config, &all_sizes, total);
        let shuffle = match (&config.access, &random) {
            (Access::Random { distribution: Distribution::Uniform }, Some((_, unit))) => Shuffle::new(total / unit),
            _ => None,
        };
        let unit = random.as_ref().map(|r| r.1);
        let map = unit.and_then(|unit| RandomMap::for_workload(config, shuffle.is_some(), unit, &all_sizes, total));
        Ok(OpSource {
            map,
            regions: config.regions.clone(),
            region_starts,
            cursors: vec![0; config.regions.len()],
            current: 0,
            ops_in_region: 0,
            file_service: config.file_service,
            random,
            shuffle,
            zoned,
            random_percent,
            offsets: config.offsets,
            until_random: 0,
            last_offset: 0,
            strode: false,
            sizes: SizePicker::new(&config.block_sizes),
            write_sizes: config.write_sizes.as_ref().map(SizePicker::new),
            read_percent: config.read_percent,
            align: u64::from(align),
            rng: Rng::new(config.seed),
        })
    }

    /// Refuses a workload whose sizes, regions and alignment do not fit together; returns the alignment and
    /// every block size (reads and writes).
    fn check(config: &WorkloadConfig) -> Result<(u32, Vec<u32>), WorkloadError> {
        if config.regions.is_empty() {
            return Err(WorkloadError::NoRegions);
        }
        if config.read_percent > 100 {
            return Err(WorkloadError::BadReadPercent(config.read_percent));
        }
        let align = config.align.max(1);
        let mut all_sizes = config.block_sizes.sizes();
        all_sizes.extend(config.write_sizes.iter().flat_map(|w| w.sizes()));
        // Operations that are all at random offsets may be smaller than the offset alignment (fio's blockalign
        // larger than the block size); anything sequential continues where the last one ended, so it may not.
        let all_random = matches!(config.access, Access::Random { .. })
            && config.random_percent >= 100
            && config.offsets.random_every <= 1
            && config.offsets.stride.is_none();
        for &size in &all_sizes {
            if size == 0 || (size % align != 0 && !all_random) {
                return Err(WorkloadError::Misaligned(size, align));
            }
        }
        if let Some(odd) = config.regions.iter().find(|r| r.len == 0 || r.len % u64::from(align) != 0) {
            return Err(WorkloadError::RegionMisaligned { region: odd.len, align });
        }
        // Random operations must fit anywhere in a region; sequential ones are shortened at a region's end.
        let max_block = all_sizes.iter().copied().max().unwrap_or(0);
        if matches!(config.access, Access::Random { .. })
            && let Some(small) = config.regions.iter().find(|r| r.len < u64::from(max_block))
        {
            return Err(WorkloadError::RegionTooSmall { block: max_block, region: small.len });
        }
        Ok((align, all_sizes))
    }

    /// Random access: the sampler over all `total` bytes in units of the smallest block size, one per region
    /// when zones apply to each file, and the share of random operations.
    fn samplers(config: &WorkloadConfig, all_sizes: &[u32], total: u64) -> (Option<(Sampler, u64)>, Vec<Sampler>, u8) {
        match &config.access {
            Access::Sequential => (None, Vec::new(), 0),
            Access::Random { distribution } => {
                let unit = u64::from(all_sizes.iter().copied().min().unwrap_or(1));
                let zoned = match distribution {
                    Distribution::Zoned { .. } if config.regions.len() > 1 => {
                        config.regions.iter().map(|r| Sampler::with_unit(distribution, r.len / unit, unit)).collect()
                    }
                    _ => Vec::new(),
                };
                let sampler = Sampler::with_unit(distribution, total / unit, unit);
                (Some((sampler, unit)), zoned, config.random_percent.min(100))
            }
        }
    }

    #[inline]
    pub fn next_op(&mut self) -> Op {
        let dir = match self.read_percent {
            100 => Direction::Read,
            0 => Direction::Write,
            pct => {
                if self.rng.below(100) < u64::from(pct) {
                    Direction::Read
                } else {
                    Direction::Write
                }
            }
        };
        let len = match (&mut self.write_sizes, dir) {
            (Some(writes), Direction::Write) => writes.pick(&mut self.rng),
            _ => self.sizes.pick(&mut self.rng),
        };
        let (file, offset, len) = match self.pick_kind() {
            Pick::Random => self.random_op(len),
            Pick::Sequential => self.sequential_op(len),
            Pick::Same => self.same_op(len),
        };
        Op { dir, file, offset, len }
    }

    /// Whether this operation takes a new random offset, continues sequentially or repeats the last offset.
    #[inline]
    fn pick_kind(&mut self) -> Pick {
        if self.random_percent == 0 {
            return Pick::Sequential;
        }
        if self.offsets.random_every > 1 {
            // fio's rw=randread:N: the first operation and every Nth after it are a new offset.
            if self.until_random > 0 {
                self.until_random -= 1;
                return if self.offsets.identical { Pick::Same } else { Pick::Sequential };
            }
            self.until_random = self.offsets.random_every - 1;
        }
        let at_random = match self.random_percent {
            100 => true,
            pct => self.rng.below(100) < u64::from(pct),
        };
        if at_random { Pick::Random } else { Pick::Sequential }
    }

    #[inline]
    fn random_op(&mut self, len: u32) -> (u32, u64, u32) {
        if let Some(stride) = self.offsets.stride {
            return self.stride_op(stride, len);
        }
        if self.map.is_some() {
            return self.mapped_op(len);
        }
        let (sampler, unit) = self.random.as_mut().expect("random operations have a sampler");
        let unit = *unit;
        let drawn = match self.shuffle.as_mut() {
            Some(shuffle) => shuffle.next(&mut self.rng),
            None => sampler.sample(&mut self.rng),
        };
        let mut position = drawn * unit;
        let index = match self.file_service {
            _ if self.regions.len() == 1 => 0,
            // Zoned: the file by its share of the bytes; the place within it from its own zones, below.
            FileService::Random if !self.zoned.is_empty() => {
                let total = self.region_starts.last().copied().unwrap_or(0) + self.regions.last().map_or(0, |r| r.len);
                let anywhere = self.rng.below(total);
                self.region_starts.partition_point(|&s| s <= anywhere) - 1
            }
            FileService::Random => self.region_starts.partition_point(|&s| s <= position) - 1,
            // In turn, or all of one before the next: the distribution picks the place, the service the file.
            FileService::RoundRobin | FileService::Sequential => self.next_region(),
        };
        if let Some(zones) = self.zoned.get(index) {
            // Zones are per file: the place within the chosen region comes from its own zones.
            position = self.region_starts[index] + zones.sample(&mut self.rng) * unit;
        }
        let r = self.regions[index];
        let within = (position.saturating_sub(self.region_starts[index]) % r.len).min(r.len - u64::from(len));
        let offset = within / self.align * self.align;
        // A sequential operation after this one continues from here (fio's percentage_random).
        self.current = index;
        self.cursors[index] = offset + u64::from(len);
        self.last_offset = offset;
        (r.file, r.start + offset, len)
    }

    /// A random operation under the random map: a unit drawn uniformly, or the next one not covered after it,
    /// the operation trimmed to the units free from there (fio's `get_next_rand_offset` and `mark_random_map`).
    #[inline]
    fn mapped_op(&mut self, len: u32) -> (u32, u64, u32) {
        let unit = self.random.as_ref().map_or(1, |r| r.1);
        let r = self.regions[0];
        let units = r.len / unit;
        let map = self.map.as_mut().expect("mapped_op runs with a map");
        let drawn = self.rng.below(units);
        let first = match map.next_free(drawn) {
            Some(first) => first,
            None => {
                // Every unit covered: the pass is over; fio resets the file's map and takes the block drawn.
                map.clear();
                drawn
            }
        };
        let want = u64::from(len).div_ceil(unit);
        let run = map.cover_run(first, want, units);
        let (offset, len) = match first + want > units {
            // At the end of the region the operation is pulled back so that it fits, as without the map.
            true if run == units - first => ((r.len - u64::from(len)) / self.align * self.align, len),
            _ => (first * unit, (run * unit).min(u64::from(len)) as u32),
        };
        self.current = 0;
        self.cursors[0] = offset + u64::from(len);
        self.last_offset = offset;
        (r.file, r.start + offset, len)
    }

    /// vdbench's stride: from the end of the last operation, `min` plus a random whole number of `len` below
    /// `max − min` further, over the regions laid end to end (vdbench's concatenated sds); an operation that would
    /// cross the end of its region starts the next region, and past the last one the first begins again, as
    /// vdbench goes back to the start of the lun. The first operation is at the start.
    #[inline]
    fn stride_op(&mut self, stride: Stride, len: u32) -> (u32, u64, u32) {
        let len64 = u64::from(len);
        let total = self.region_starts[self.regions.len() - 1] + self.regions[self.regions.len() - 1].len;
        let mut at = 0;
        if self.strode {
            let steps = stride.max.saturating_sub(stride.min) / len64;
            let skip = stride.min + if steps > 0 { self.rng.below(steps) * len64 } else { 0 };
            at = (self.region_starts[self.current] + self.cursors[self.current]).saturating_add(skip);
        }
        self.strode = true;
        if at >= total {
            at = 0;
        }
        let mut index = self.region_starts.partition_point(|&s| s <= at) - 1;
        let mut within = (at - self.region_starts[index]) / self.align * self.align;
        if within + len64 > self.regions[index].len {
            (index, within) = ((index + 1) % self.regions.len(), 0);
        }
        self.current = index;
        self.cursors[index] = within + len64;
        self.last_offset = within;
        let r = self.regions[index];
        (r.file, r.start + within, len)
    }

    /// fio's rw_sequencer=identical: the same offset as the last operation (pulled back if this one is longer).
    #[inline]
    fn same_op(&mut self, len: u32) -> (u32, u64, u32) {
        let r = self.regions[self.current];
        let offset = self.last_offset.min(r.len - u64::from(len).min(r.len)) / self.align * self.align;
        let len = within(len, r.len - offset);
        (r.file, r.start + offset, len)
    }

    #[inline]
    fn sequential_op(&mut self, len: u32) -> (u32, u64, u32) {
        let mut index = self.current;
        if self.file_service != FileService::Sequential && self.regions.len() > 1 {
            index = self.next_region();
        } else if self.cursors[index] >= self.regions[index].len {
            index = (index + 1) % self.regions.len();
        }
        if self.cursors[index] >= self.regions[index].len {
            self.cursors[index] = 0;
        }
        self.current = index;
        let r = self.regions[index];
        // Region lengths and block sizes are whole alignment units, so what is left is too.
        let at = self.cursors[index];
        let len = within(len, r.len - at);
        self.cursors[index] = self.after(at + u64::from(len), r.len);
        self.last_offset = at;
        (r.file, r.start + at, len)
    }

    /// Where the next sequential operation in a region of `len` bytes starts when this one ended at `end`: there,
    /// or `step` bytes further (fio's rw=write:4k, rw=read:-8k). Running off the end ends the pass over the
    /// region (`len`: the next region, or this one again from its start); running off the start backwards goes
    /// on from the end plus the step, in the same region, as fio does.
    #[inline]
    fn after(&self, end: u64, len: u64) -> u64 {
        let step = self.offsets.step;
        if step == 0 {
            return end;
        }
        let next = end as i128 + i128::from(step);
        if next >= 0 && (next as u64) < len {
            return next as u64;
        }
        if step > 0 {
            return len;
        }
        // Backwards off the start: from the end again, a step in, on an alignment boundary.
        let from_end = (len as i128 + i128::from(step)).max(0) as u64;
        from_end / self.align * self.align
    }

    /// The region of the next operation under round-robin or random file service; under sequential service
    /// (random access only), the current one for as many operations as it has units, then the next.
    #[inline]
    fn next_region(&mut self) -> usize {
        match self.file_service {
            FileService::RoundRobin => (self.current + 1) % self.regions.len(),
            FileService::Random => self.rng.below(self.regions.len() as u64) as usize,
            FileService::Sequential => {
                self.ops_in_region += 1;
                if self.ops_in_region > self.regions[self.current].len / self.align {
                    self.ops_in_region = 1;
                    (self.current + 1) % self.regions.len()
                } else {
                    self.current
                }
            }
        }
    }
}

/// `len`, cut to the `room` left in a region. The room is compared as a u64: a region with 4 GiB or more left
/// gave every operation a length of `room as u32` (0 at exactly 4 GiB), so a 4 GiB data set moved no bytes.
#[inline]
fn within(len: u32, room: u64) -> u32 {
    u32::try_from(room).map_or(len, |room| len.min(room))
}

#[cfg(test)]
#[path = "source_tests.rs"]
mod tests;
