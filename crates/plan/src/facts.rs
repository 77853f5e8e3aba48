//! Facts about the machine and the target that a plan depends on, gathered by the caller (from `sysinfo`) so
//! that building a plan stays pure and testable with made-up facts.

use std::path::PathBuf;

use crate::engine::HttpUrl;
use crate::units::Bytes;

#[derive(Debug, Clone)]
pub struct Facts {
    pub target: TargetFacts,
    /// The RAM this process may fill with page cache (the smaller of MemTotal and its memory cgroup's limit),
    /// to judge whether a buffered data set fits in it.
    pub ram: Bytes,
    /// Whether an io_uring ring can be created here; the error text otherwise.
    pub io_uring: Result<(), String>,
    /// Why the target's data lives in RAM (tmpfs, zram, a loop device over a cached file), if it does: then
    /// even direct I/O measures memory, and every result is marked cache-affected.
    pub memory_backed: Option<String>,
    /// The cgroup I/O limits (blkio throttles) on the devices beneath, one sentence per device ("loop0: reads
    /// limited to 40 MiB/s … by a blkio throttle …"): every plan says them, since figures that reach such a
    /// limit describe the throttle, not the device.
    pub throttles: Vec<String>,
    /// The anchors file-set trees name (other than the target), as found.
    pub anchors: Vec<AnchorFacts>,
    /// CPUs this process may use (the default number of stream scheduler threads).
    pub cpus: u32,
    /// The user's media directories that stream phases read (`use-existing`): each directory with its regular,
    /// visible files and their sizes, sorted by path.
    pub media_libraries: Vec<(PathBuf, Vec<(PathBuf, u64)>)>,
    /// Memory and threads this run may still take (cgroup and process limits); a plan that needs more is
    /// refused before anything is allocated.
    pub limits: ResourceLimits,
    /// The pool beneath keeps copies and picks the one a read goes to by the reading thread (btrfs raid1 or
    /// raid10 under the read policy `pid`): stream phases then give every viewer its own thread.
    pub mirrors: Option<super::streams_threads::Mirrors>,
    /// The FUSE filesystem the target lies on, by its type ("fuse.sshfs"); `None`: not FUSE. io_uring's reads
    /// there block the thread that submits them: stream phases' viewers read with the sync engine
    /// (`streams_threads::viewer_engine`).
    pub fuse: Option<String>,
    /// What a `scrub` background load runs on a directory target: btrfs's own scrub, or a full read of the
    /// device the filesystem sits on; `None` where neither can be found (`--during scrub` is refused).
    pub scrub: Option<ScrubTarget>,
    /// The devices the job's phases name as their own (a fio file's jobs, mapped with `run --device`), each
    /// as found (a `BlockDevice`, or whatever else is there); empty when the phases run on `target`.
    pub devices: Vec<TargetFacts>,
    /// The HLS media playlists among the user's media and the URLs (`.m3u8`), each resolved into its segments
    /// with their sizes; a stream phase plays such a title segment by segment.
    pub playlists: Vec<::streams::SegmentedTitle>,
    /// The library of titles an earlier run kept under the target (`TARGET/.streamcap/library`), complete.
    pub kept_library: Option<super::KeptLibrary>,
}

/// Where a `scrub` background load reads (`--during scrub`, `streams::background`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ScrubTarget {
    /// The target is on btrfs: `btrfs scrub start -B` on this path (any path of the filesystem names it).
    Btrfs { path: PathBuf },
    /// A parity check's full sequential read of the block device the target's filesystem sits on.
    Device { path: PathBuf, size: u64 },
}

/// What the machine lets this process take. `None` where it cannot be known (no limit found, or not readable):
/// then only the plan's own caps apply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResourceLimits {
    /// Bytes this process may still allocate: available memory (MemAvailable), or less under a memory cgroup
    /// limit or the address-space limit (`ulimit -v`).
    pub memory: Option<Bytes>,
    /// Which of those `memory` is (for the refusal's words; thread stacks and malloc arenas count under
    /// `ulimit -v`).
    pub memory_bound: crate::limits::MemoryBound,
    /// Malloc arenas the process may make at most (`limits::MALLOC_ARENAS_PER_CPU` per CPU): each new thread's
    /// costs `limits::MALLOC_ARENA_BYTES` of address space under `ulimit -v`.
    pub malloc_arenas: u64,
    /// Threads this process may still start: the tightest of the pids cgroup limits (`pids.max − pids.current`
    /// up the hierarchy), RLIMIT_NPROC for non-root users, and the kernel's `threads-max`.
    pub threads: Option<u64>,
    /// Remote media: the open files and ephemeral ports its connections need (`streams_sockets`); `None`
    /// where they were not gathered (local targets).
    pub sockets: Option<SocketLimits>,
}

/// What bounds the connections a client can hold: one file descriptor each, and one ephemeral port each per
/// server address.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SocketLimits {
    /// The soft open-file limit (`ulimit -n`), after raising it to the hard one.
    pub open_files: u64,
    /// The hard open-file limit (`ulimit -Hn`).
    pub open_files_hard: u64,
    /// Descriptors open already.
    pub open_now: u64,
    /// `net.ipv4.ip_local_port_range`, first and last; `None` when it could not be read.
    pub ports: Option<(u16, u16)>,
}

/// A directory a file-set tree is anchored in.
#[derive(Debug, Clone)]
pub struct AnchorFacts {
    /// As the job gave it.
    pub path: PathBuf,
    pub state: AnchorState,
}

#[derive(Debug, Clone)]
pub enum AnchorState {
    Missing,
    NotDirectory,
    Directory {
        canonical: PathBuf,
        /// Space an unprivileged writer can still use; `None` when the filesystem reports no capacity.
        free: Option<Bytes>,
    },
}

#[derive(Debug, Clone)]
pub enum TargetFacts {
    Directory {
        path: PathBuf,
        /// Space an unprivileged writer can still use; `None` when the filesystem reports no capacity at all
        /// (ramfs, some FUSE filesystems), so free space cannot be known.
        free: Option<Bytes>,
        /// Direct-I/O offset alignment reported by the filesystem (statx DIOALIGN), if any.
        dio_align: Option<u32>,
    },
    File {
        path: PathBuf,
        size: Bytes,
    },
    BlockDevice {
        path: PathBuf,
        size: Bytes,
        logical_block: u32,
        /// Where the device or one of its partitions is mounted.
        mounted_at: Vec<PathBuf>,
        /// Pools, holders or swap that use the device.
        in_use_by: Vec<String>,
        /// What the device shares bytes with under another name (a loop device over a mounted image):
        /// refused whatever the flags.
        overlaps: Vec<String>,
        /// A filesystem or partition-table signature found on the device.
        signature: Option<String>,
    },
    /// Remote media: the target as given, and each URL with its probed size in bytes.
    Remote {
        text: String,
        media: Vec<(HttpUrl, u64)>,
    },
}

// Also for the tests of the crates above (feature `test-support`, a dev-dependency of theirs).
#[cfg(any(test, feature = "test-support"))]
impl Facts {
    /// Made-up facts for tests: a directory at `/srv` with `free` bytes, 16 GiB of RAM, io_uring, two CPUs and
    /// no limits; a test overrides what it is about (`Facts { ram: …, ..Facts::directory(…) }`).
    pub fn directory(free: Option<Bytes>) -> Facts {
        Facts {
            target: TargetFacts::Directory { path: PathBuf::from("/srv"), free, dio_align: None },
            ram: Bytes::gib(16),
            io_uring: Ok(()),
            memory_backed: None,
            throttles: Vec::new(),
            anchors: Vec::new(),
            cpus: 2,
            media_libraries: Vec::new(),
            playlists: Vec::new(),
            limits: ResourceLimits::default(),
            mirrors: None,
            fuse: None,
            scrub: None,
            devices: Vec::new(),
            kept_library: None,
        }
    }
}
