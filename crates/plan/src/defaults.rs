//! The one table of defaults for everything a phase leaves unsaid. Change a default here and nowhere else.

use std::time::Duration;

use crate::units::{Bytes, MIB};

/// Data-set size when none is given (files in a directory target).
pub const SIZE: Bytes = Bytes::gib(1);
/// Number of files the data set is spread over.
pub const FILES: u32 = 1;
/// Block size.
pub const BLOCK_SIZE: Bytes = Bytes::kib(4);
/// Worker threads.
pub const JOBS: u32 = 1;
/// Operations in flight per worker (io_uring).
pub const IODEPTH: u32 = 1;
/// io_uring requests passed to the kernel per system call (fio's `iodepth_batch_submit` default).
pub const IODEPTH_BATCH: u32 = 1;
/// Warm-up excluded from results.
pub const RAMP: Duration = Duration::ZERO;
/// Reporting interval for progress and series.
pub const INTERVAL: Duration = Duration::from_secs(1);
/// Seed of the random generators (fixed, like fio's `randrepeat=1`, so runs repeat the same offsets).
pub const SEED: u64 = 0x5EED_CAFE;
/// Offset alignment when neither direct I/O nor the block sizes demand more.
pub const BUFFERED_ALIGN: u32 = 512;
/// Offset and size alignment for direct I/O when the filesystem does not report its own (statx DIOALIGN).
pub const DIRECT_ALIGN: u32 = 4096;
/// Files are sized in whole multiples of this, so that prefill and sequential phases use full blocks.
pub const FILE_GRANULE: u64 = MIB;
/// Free space left untouched on the target filesystem, over and above the data set.
pub const FREE_SPACE_RESERVE: Bytes = Bytes::mib(64);
/// Points kept in a phase's interval series before neighbours are merged.
pub const SERIES_POINTS: usize = 2048;
/// Error records kept per phase (all errors are counted).
pub const ERRORS_KEPT: usize = 100;
/// Bad blocks kept with their details by `--verify` (all are counted).
pub const BAD_BLOCKS_KEPT: usize = 1000;
/// Files one raw-I/O worker may use (it keeps them all open; many small files are a file-set workload's job).
pub const MAX_FILES_PER_WORKER: usize = 1024;
/// How long a file-set phase runs its workloads when it does not say (vdbench's `elapsed` default).
pub const FILESET_RUNTIME: Duration = Duration::from_secs(30);
/// How much longer than its runtime an unpaced raw-I/O worker goes on when nothing it issued after the ramp has
/// completed by then (`run`'s overtime): long enough for a device stuck behind another's writeback (a loop
/// device over a busy host disk held its reads for over 0.75 s), short enough that a dead one is not waited on
/// for long. After it no new request is issued; those in flight drain as at any deadline. A phase that needed
/// it says so.
pub const RAW_OVERTIME: Duration = Duration::from_secs(5);
/// Bytes per write when the format step fills files.
pub const FORMAT_CHUNK: Bytes = Bytes::mib(1);
/// Threads that create files at the same time in the format step: enough to keep a device's queue busy with
/// small files (vdbench's format uses 8 too).
pub const FORMAT_THREADS: u32 = 8;
