//! Unit tests of the operation source (`source.rs`), in a file of their own so that it stays under 500 lines.

use super::*;

fn config(access: Access, regions: Vec<Region>, sizes: BlockSizes) -> WorkloadConfig {
    WorkloadConfig {
        regions,
        access,
        read_percent: 100,
        block_sizes: sizes,
        align: 4096,
        seed: 5,
        write_sizes: None,
        random_percent: 100,
        file_service: FileService::Sequential,
        offsets: Offsets::default(),
    }
}

fn offsets(src: &mut OpSource, n: usize) -> Vec<u64> {
    (0..n).map(|_| src.next_op().offset).collect()
}

#[test]
fn sequential_walks_every_region_in_order_and_wraps() {
    let regions = vec![Region { file: 0, start: 0, len: 16384 }, Region { file: 1, start: 8192, len: 8192 }];
    let mut src = OpSource::new(&config(Access::Sequential, regions, BlockSizes::Fixed { size: 4096 })).unwrap();
    let got: Vec<(u32, u64)> = (0..7).map(|_| src.next_op()).map(|op| (op.file, op.offset)).collect();
    assert_eq!(got, vec![(0, 0), (0, 4096), (0, 8192), (0, 12288), (1, 8192), (1, 12288), (0, 0)]);
}

#[test]
fn random_ops_stay_inside_regions_and_aligned() {
    let regions = vec![Region { file: 0, start: 0, len: 1 << 20 }, Region { file: 3, start: 1 << 20, len: 1 << 20 }];
    let sizes = BlockSizes::Range { min: 4096, max: 65536, step: 4096 };
    for distribution in [Distribution::Uniform, Distribution::Zipf { theta: 1.1 }] {
        let mut src = OpSource::new(&config(
            Access::Random { distribution: distribution.clone() },
            regions.clone(),
            sizes.clone(),
        ))
        .unwrap();
        let mut files = std::collections::BTreeSet::new();
        for _ in 0..20_000 {
            let op = src.next_op();
            let r = regions.iter().find(|r| r.file == op.file).unwrap();
            assert!(op.offset >= r.start && op.offset + u64::from(op.len) <= r.start + r.len, "{op:?}");
            assert_eq!(op.offset % 4096, 0);
            files.insert(op.file);
        }
        assert_eq!(files.len(), 2, "{distribution:?} reaches both files");
    }
}

#[test]
fn read_percentage_is_honoured() {
    let mut cfg =
        config(Access::Sequential, vec![Region { file: 0, start: 0, len: 1 << 20 }], BlockSizes::Fixed { size: 4096 });
    cfg.read_percent = 70;
    let mut src = OpSource::new(&cfg).unwrap();
    let reads = (0..100_000).filter(|_| src.next_op().dir == Direction::Read).count();
    assert!((69_000..71_000).contains(&reads), "{reads}");
}

#[test]
fn same_seed_gives_the_same_offsets() {
    let cfg = config(
        Access::Random { distribution: Distribution::Uniform },
        vec![Region { file: 0, start: 0, len: 1 << 30 }],
        BlockSizes::Fixed { size: 4096 },
    );
    let a: Vec<u64> = {
        let mut s = OpSource::new(&cfg).unwrap();
        (0..100).map(|_| s.next_op().offset).collect()
    };
    let b: Vec<u64> = {
        let mut s = OpSource::new(&cfg).unwrap();
        (0..100).map(|_| s.next_op().offset).collect()
    };
    assert_eq!(a, b);
}

#[test]
fn round_robin_takes_one_operation_per_file_in_turn_and_still_covers_every_byte() {
    let regions = vec![Region { file: 0, start: 0, len: 3 * 4096 }, Region { file: 1, start: 0, len: 3 * 4096 }];
    let mut cfg = config(Access::Sequential, regions, BlockSizes::Fixed { size: 4096 });
    cfg.file_service = FileService::RoundRobin;
    let mut src = OpSource::new(&cfg).unwrap();
    let got: Vec<(u32, u64)> = (0..7).map(|_| src.next_op()).map(|op| (op.file, op.offset)).collect();
    assert_eq!(got, vec![(1, 0), (0, 0), (1, 4096), (0, 4096), (1, 8192), (0, 8192), (1, 0)]);
}

#[test]
fn a_random_percentage_mixes_jumps_with_sequential_runs() {
    let regions = vec![Region { file: 0, start: 0, len: 1 << 30 }];
    let mut cfg =
        config(Access::Random { distribution: Distribution::Uniform }, regions, BlockSizes::Fixed { size: 4096 });
    cfg.random_percent = 25;
    let mut src = OpSource::new(&cfg).unwrap();
    let mut last_end = 0;
    let mut sequential = 0;
    for _ in 0..10_000 {
        let op = src.next_op();
        if op.offset == last_end {
            sequential += 1;
        }
        last_end = op.offset + u64::from(op.len);
    }
    assert!((7_000..8_000).contains(&sequential), "{sequential} of 10000 continued sequentially");
}

#[test]
fn writes_take_their_own_block_sizes() {
    let regions = vec![Region { file: 0, start: 0, len: 1 << 30 }];
    let mut cfg =
        config(Access::Random { distribution: Distribution::Uniform }, regions, BlockSizes::Fixed { size: 4096 });
    cfg.read_percent = 50;
    cfg.write_sizes = Some(BlockSizes::Fixed { size: 65536 });
    let mut src = OpSource::new(&cfg).unwrap();
    for _ in 0..1000 {
        let op = src.next_op();
        let expected = if op.dir == Direction::Read { 4096 } else { 65536 };
        assert_eq!(op.len, expected, "{op:?}");
    }
}

#[test]
fn rejects_random_blocks_larger_than_a_region() {
    let cfg = config(
        Access::Random { distribution: Distribution::Uniform },
        vec![Region { file: 0, start: 0, len: 4096 }],
        BlockSizes::Fixed { size: 8192 },
    );
    assert_eq!(OpSource::new(&cfg).err(), Some(WorkloadError::RegionTooSmall { block: 8192, region: 4096 }));
}

#[test]
fn one_sequential_pass_covers_every_byte_whatever_the_block_sizes() {
    // Regression: with a block-size range the tail of each region was skipped, leaving holes that a later
    // read phase read as if they were data.
    let regions = vec![Region { file: 0, start: 0, len: 100 * 4096 }, Region { file: 1, start: 4096, len: 7 * 4096 }];
    let sizes = BlockSizes::Range { min: 4096, max: 65536, step: 4096 };
    let mut src = OpSource::new(&config(Access::Sequential, regions, sizes)).unwrap();
    let mut covered = 0;
    let mut expected = (0u32, 0u64);
    while covered < 107 * 4096 {
        let op = src.next_op();
        if (op.file, op.offset) != expected {
            assert_eq!((op.file, op.offset), (1, 4096), "the only jump is to the next region");
        }
        covered += u64::from(op.len);
        expected = (op.file, op.offset + u64::from(op.len));
    }
    assert_eq!(covered, 107 * 4096, "exactly one pass, no byte skipped or repeated");
    let wrapped = src.next_op();
    assert_eq!((wrapped.file, wrapped.offset), (0, 0), "the second pass starts over");
}

#[test]
fn a_positive_step_leaves_holes_and_ends_the_pass_at_the_end() {
    // fio rw=write:4k with bs=4k: every other block, then the region again from its start.
    let mut cfg =
        config(Access::Sequential, vec![Region { file: 0, start: 0, len: 8 * 4096 }], BlockSizes::Fixed { size: 4096 });
    cfg.offsets.step = 4096;
    let mut src = OpSource::new(&cfg).unwrap();
    assert_eq!(offsets(&mut src, 6), [0, 8192, 16384, 24576, 0, 8192]);
}

#[test]
fn a_negative_step_reads_backwards_as_fio_does() {
    // fio's backwards-read example: bs=4k, rw=read:-8k. After the first block the position runs off the start
    // and goes on from the end less 8k, then walks down 4k at a time.
    let mut cfg =
        config(Access::Sequential, vec![Region { file: 0, start: 0, len: 8 * 4096 }], BlockSizes::Fixed { size: 4096 });
    cfg.offsets.step = -8192;
    let mut src = OpSource::new(&cfg).unwrap();
    let k = 4096;
    assert_eq!(offsets(&mut src, 9), [0, 6 * k, 5 * k, 4 * k, 3 * k, 2 * k, k, 0, 6 * k]);
}

#[test]
fn random_every_n_runs_sequentially_or_repeats_in_between() {
    let regions = vec![Region { file: 0, start: 0, len: 1 << 30 }];
    let mut cfg =
        config(Access::Random { distribution: Distribution::Uniform }, regions, BlockSizes::Fixed { size: 4096 });
    cfg.offsets.random_every = 4;
    let mut src = OpSource::new(&cfg).unwrap();
    let got = offsets(&mut src, 12);
    for run in got.chunks(4) {
        assert_eq!(run, [run[0], run[0] + 4096, run[0] + 8192, run[0] + 12288], "{got:?}");
    }
    assert!(got[0] != got[4] && got[4] != got[8], "a new random start every 4: {got:?}");
    cfg.offsets.identical = true;
    let mut src = OpSource::new(&cfg).unwrap();
    let got = offsets(&mut src, 8);
    assert!(got[..4].iter().all(|o| *o == got[0]) && got[4..].iter().all(|o| *o == got[4]), "{got:?}");
}

#[test]
fn zones_apply_to_each_file_on_its_own() {
    use crate::workload::{Zone, ZoneSize};
    // Two files; 100 % of accesses to the first quarter of each, as fio applies zones per file.
    let len = 64 * 4096;
    let regions = vec![Region { file: 0, start: 0, len }, Region { file: 1, start: 0, len }];
    let zones = vec![
        Zone { access_percent: 100.0, size: ZoneSize::Percent(25.0) },
        Zone { access_percent: 0.0, size: ZoneSize::Percent(75.0) },
    ];
    let mut cfg = config(
        Access::Random { distribution: Distribution::Zoned { zones } },
        regions,
        BlockSizes::Fixed { size: 4096 },
    );
    cfg.file_service = FileService::Random;
    let mut src = OpSource::new(&cfg).unwrap();
    let mut files = [0u32; 2];
    for _ in 0..4000 {
        let op = src.next_op();
        assert!(op.offset < len / 4, "{op:?}");
        files[op.file as usize] += 1;
    }
    assert!(files.iter().all(|&n| n > 1500), "both files: {files:?}");
}

/// vdbench's stride=(8k,16k) with 4 KiB transfers: the first operation at the start, then each a skip of 8 or 12
/// KiB past the end of the one before, over both regions as one, and from the start again past the end.
#[test]
fn strides_skip_forward_within_their_bounds_over_the_regions_as_one() {
    let regions = vec![Region { file: 0, start: 0, len: 1 << 20 }, Region { file: 1, start: 4096, len: 1 << 20 }];
    let mut cfg =
        config(Access::Random { distribution: Distribution::Uniform }, regions, BlockSizes::Fixed { size: 4096 });
    cfg.offsets.stride = Some(Stride { min: 8192, max: 16384 });
    let mut src = OpSource::new(&cfg).unwrap();
    // Positions in the regions laid end to end (file 1's offsets start at 4096).
    let ops: Vec<u64> = (0..400)
        .map(|_| src.next_op())
        .map(|op| if op.file == 0 { op.offset } else { (1 << 20) + op.offset - 4096 })
        .collect();
    assert_eq!(ops[0], 0);
    let (mut skips, mut wrapped, mut in_second) = (std::collections::BTreeSet::new(), 0, 0);
    for pair in ops.windows(2) {
        if pair[1] == 0 {
            wrapped += 1;
            continue;
        }
        skips.insert(pair[1] - (pair[0] + 4096));
        in_second += usize::from(pair[1] >= 1 << 20);
    }
    assert_eq!(skips.into_iter().collect::<Vec<_>>(), [8192, 12288], "skips of min + a whole number of transfers");
    assert!(wrapped >= 1 && in_second > 50, "both regions, then the start again: {wrapped} wraps, {in_second}");
}

/// Regression: what was left of a region was cut to a u32, so a region of exactly 4 GiB gave every operation a
/// length of 0 (a 4 GiB fio job on the null engine counted ops and moved no bytes), and one of 17 GiB moved bytes
/// only in its last 1 GiB.
#[test]
fn regions_of_4_gib_and_more_give_whole_operations() {
    for len in [4u64 << 30, 17 << 30, (4 << 30) + 4096] {
        for sequencer in [false, true] {
            let regions = vec![Region { file: 0, start: 0, len }];
            let access = match sequencer {
                false => Access::Sequential,
                true => Access::Random { distribution: Distribution::Uniform },
            };
            let mut cfg = config(access, regions, BlockSizes::Fixed { size: 4096 });
            (cfg.offsets.identical, cfg.offsets.random_every) = (sequencer, 4);
            let mut src = OpSource::new(&cfg).unwrap();
            assert!((0..8).map(|_| src.next_op().len).all(|l| l == 4096), "{len} identical {sequencer}");
        }
    }
}
