//! I/O engines: the only code that issues reads, writes and flushes to the storage under test.
//!
//! The contract (docs/architecture.md, "Engine contract"):
//! - `submit(batch) -> accepted` passes requests to the kernel now (one system call per batch); `queue(batch)`
//!   only queues them, and the next `reap(min, wait, out)` passes them to the kernel and waits for completions
//!   in the same system call. A synchronous engine does the I/O inside `submit`/`queue` and returns the
//!   completions on the next `reap`. How requests are grouped into batches is the caller's choice (it stamps
//!   each batch's submission time just before handing it over).
//! - Engines never read clocks, never touch metrics and never see the job: the worker stamps times and keeps
//!   the accounting. A request names a *slot* of a fixed in-flight table sized to the queue depth; the slot owns
//!   one buffer of the engine's [`BufferPool`], so there is no allocation per I/O.
//! - Dispatch happens once per worker through [`AnyEngine`] (an enum), then a generic loop runs on the concrete
//!   engine type: no dynamic call per I/O.
//!
//! Files are opened by the caller and handed over at construction, so that an engine can register them with the
//! kernel (io_uring fixed files) and the caller keeps the knowledge of paths for error messages.

#![deny(unsafe_code)]

// The crates below this one that its code names as `crate::NAME::…` (docs/architecture.md, "Layers").
pub(crate) use ::limits;

mod buffers;
mod finished;
mod http;
mod http_wire;
mod null;
mod sync;
mod tls;
mod uring;

use std::fs::File;
use std::io;
use std::time::Duration;

pub use buffers::BufferPool;
pub use http::{HttpEngine, connections};
pub use http_wire::{HttpError, HttpPiece, HttpPieces, HttpUrl, fetch_text, probe_size};
pub use null::{NullEngine, NullFault};
pub use sync::SyncEngine;
pub use tls::{Wire, set_insecure};
pub use uring::{UringEngine, io_uring_available};

/// What a request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Read,
    Write,
    /// Flush the file's data and metadata (fsync). Ordered after every request submitted before it.
    Fsync,
    /// Flush the file's data and only the metadata needed to read it back (fdatasync). Ordered likewise.
    Fdatasync,
}

/// One I/O to perform. `slot` selects both the in-flight entry and the buffer. A read or write longer than the
/// slot's buffer passes through the buffer piece after piece (see `EngineSetup::max_transfer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// Index into the worker's in-flight table and the engine's buffer pool (0 ≤ slot < queue depth).
    pub slot: u32,
    /// Read, write, fsync or fdatasync.
    pub kind: OpKind,
    /// Index into the files the engine was built with.
    pub file: u32,
    /// Byte offset in the file.
    pub offset: u64,
    /// Bytes to transfer (ignored for `Fsync` and `Fdatasync`).
    pub len: u32,
    /// The request's own I/O priority as the kernel takes it (class << 13 | level; fio cmdprio); 0: the
    /// thread's. Only the io_uring engine passes it on (the sqe's ioprio).
    pub prio: u16,
}

/// The end of one request: the bytes transferred, or the OS error number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// The slot of the request that completed.
    pub slot: u32,
    /// Bytes transferred (may be fewer than asked: a short transfer), or the OS error number (errno).
    pub result: Result<u32, i32>,
}

/// How long `reap` may block when fewer than `min` completions are ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Until `min` completions are ready.
    Forever,
    /// At most this long; then return what is ready (possibly nothing).
    AtMost(Duration),
}

/// The engines a user can choose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineKind {
    /// pread/pwrite/fsync from the worker thread; queue depth 1.
    Sync,
    /// Linux io_uring with registered buffers and files.
    IoUring,
    /// Performs no I/O; completes every request at once (or after a set delay). Measures streamcap's own cost.
    Null,
    /// Paced byte-range GETs over keep-alive HTTP connections (remote media of `streams`); one request in
    /// flight per connection.
    Http,
}

impl EngineKind {
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Sync => "sync",
            EngineKind::IoUring => "io_uring",
            EngineKind::Null => "null",
            EngineKind::Http => "http",
        }
    }

    /// The deepest queue this engine can keep in flight per worker.
    pub fn max_queue_depth(self) -> u32 {
        match self {
            EngineKind::Sync => 1,
            EngineKind::IoUring | EngineKind::Null | EngineKind::Http => 4096,
        }
    }
}

/// What an engine supports, for the result's record of how the I/O was issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Which engine this is.
    pub kind: EngineKind,
    /// Requests the engine holds in flight at most (its slots and buffers): what was asked, clamped to
    /// `EngineKind::max_queue_depth` (1 for sync).
    pub queue_depth: u32,
    /// io_uring: buffers registered with the kernel (READ_FIXED / WRITE_FIXED).
    pub registered_buffers: bool,
    /// io_uring: files registered with the kernel (fixed file table).
    pub registered_files: bool,
}

/// A failure of the engine itself (not of one I/O, which is reported in its [`Completion`]). The message
/// includes the OS error, because it often travels as text (from a worker thread to the coordinator).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("cannot set up io_uring: {}", crate::limits::explain(.0))]
    Setup(io::Error),
    #[error("cannot allocate {bytes} bytes of aligned I/O buffers: {}", crate::limits::explain(.cause))]
    Buffers { bytes: usize, cause: io::Error },
    #[error("io_uring_enter failed: {0}")]
    Enter(io::Error),
    /// Waiting for sockets (the HTTP source of `streams`) failed.
    #[error("epoll_wait failed: {0}")]
    Poll(io::Error),
    #[error("{0}")]
    Connect(HttpError),
    #[error("cannot put a file in slot {index} of the engine's file table: {cause}")]
    FileTable { index: u32, cause: io::Error },
}

/// An engine's table of open files, for work that opens and closes files as it goes (a file set's transfers).
/// The table's size is fixed when the engine is built (`EngineSetup::spare_file_slots`).
pub trait FileTable {
    /// Puts `file` (or nothing) at `index` and returns what was there. The caller must not do this while a
    /// request on that index is in flight.
    fn put(&mut self, index: u32, file: Option<File>) -> Result<Option<File>, EngineError>;
}

/// The operations every engine offers. Implementations keep this cheap: it is called per batch.
pub trait Engine {
    fn caps(&self) -> Caps;

    /// Passes `requests` to the kernel now, in one system call; returns how many were accepted (the rest must
    /// be offered again later). The caller must not reuse a slot until its completion has been reaped.
    fn submit(&mut self, requests: &[Request]) -> Result<usize, EngineError>;

    /// As `submit`, but the requests reach the kernel with the next `reap`, in the same system call as the
    /// wait. The caller must call `reap` next. Engines without a submission queue perform them at once.
    fn queue(&mut self, requests: &[Request]) -> Result<usize, EngineError> {
        self.submit(requests)
    }

    /// Appends completions to `out`, waiting (per `wait`) until at least `min` are ready. Returns how many were
    /// appended.
    fn reap(&mut self, min: usize, wait: Wait, out: &mut Vec<Completion>) -> Result<usize, EngineError>;

    /// The buffer of `slot`, to fill before a write or to inspect after a read.
    fn buffer_mut(&mut self, slot: u32) -> &mut [u8];

    /// Requests submitted and not yet reaped.
    fn in_flight(&self) -> usize;

    /// The engine's file table (used only by schedules that open files as they go; not per I/O).
    fn file_table(&mut self) -> &mut dyn FileTable;

    /// For a completion that failed: what happened, in words, when an errno says too little (an HTTP status).
    /// Taken once; local engines have nothing to add.
    fn error_detail(&mut self, _slot: u32) -> Option<String> {
        None
    }
}

/// The engine a worker runs, chosen once. Workers `match` on it and call a generic loop.
// One per worker, built once and never moved in the hot loop: boxing the ring would only add an indirection.
#[allow(clippy::large_enum_variant)]
pub enum AnyEngine {
    Sync(SyncEngine),
    IoUring(UringEngine),
    Null(NullEngine),
    Http(HttpEngine),
}

impl AnyEngine {
    /// Calls `f` on every slot's buffer (to fill write buffers once, before the work starts).
    pub fn for_each_buffer(&mut self, f: &mut dyn FnMut(&mut [u8])) {
        let slots = self.caps().queue_depth;
        for slot in 0..slots {
            match self {
                AnyEngine::Sync(e) => f(e.buffer_mut(slot)),
                AnyEngine::IoUring(e) => f(e.buffer_mut(slot)),
                AnyEngine::Null(e) => f(e.buffer_mut(slot)),
                AnyEngine::Http(e) => f(e.buffer_mut(slot)),
            }
        }
    }

    pub fn caps(&self) -> Caps {
        match self {
            AnyEngine::Sync(e) => e.caps(),
            AnyEngine::IoUring(e) => e.caps(),
            AnyEngine::Null(e) => e.caps(),
            AnyEngine::Http(e) => e.caps(),
        }
    }
}

/// Everything needed to build an engine for one worker.
pub struct EngineSetup {
    /// Which engine to build.
    pub kind: EngineKind,
    /// Requests in flight wanted; the engine clamps it to 1..=`EngineKind::max_queue_depth`.
    pub queue_depth: u32,
    /// Size of each slot's buffer in bytes: the largest block size, rounded up to the page size.
    pub buffer_size: usize,
    /// The longest request in bytes. When it exceeds `buffer_size`, a request longer than its slot's buffer is
    /// transferred *through* that buffer, piece after piece (a vectored transfer whose pieces all point at the
    /// slot), so its data is not kept whole: for readers that discard what they read (stream viewers).
    pub max_transfer: usize,
    /// Register (and so pin) the buffers with io_uring. Pinning makes every slot resident at once; unpinned,
    /// only the slots ever used take memory (the caller reuses the most recently freed slot first).
    pub pin_buffers: bool,
    /// The files requests name by index (opened by the caller, with O_DIRECT where wanted); io_uring registers
    /// them.
    pub files: Vec<File>,
    /// Empty places after `files` in the engine's file table, for files opened during the work (`FileTable`).
    pub spare_file_slots: u32,
    /// Only for the http engine: one URL per connection (its "files").
    pub urls: Vec<HttpUrl>,
    /// Only for the http engine, by connection (empty: none): the pieces a connection fetches instead of byte
    /// ranges of its URL (a playlist's segments); a request's `offset` then names the piece.
    pub http_pieces: Vec<Option<std::sync::Arc<HttpPieces>>>,
    /// Only for the null engine: a sleep before each `reap` that has completions to hand back (tests and
    /// overhead measurement); zero: none.
    pub null_latency: Duration,
    /// Only for the null engine: failures to inject (tests).
    pub null_faults: Vec<NullFault>,
}

impl EngineSetup {
    /// A setup for `kind` with `queue_depth` buffers of `buffer_size` bytes each (also the longest transfer),
    /// pinned, no files yet; the other fields are set with struct update syntax.
    pub fn new(kind: EngineKind, queue_depth: u32, buffer_size: usize) -> EngineSetup {
        EngineSetup {
            kind,
            queue_depth,
            buffer_size,
            max_transfer: buffer_size,
            pin_buffers: true,
            files: Vec::new(),
            spare_file_slots: 0,
            urls: Vec::new(),
            http_pieces: Vec::new(),
            null_latency: Duration::ZERO,
            null_faults: Vec::new(),
        }
    }
}

impl AnyEngine {
    /// Builds the engine. For io_uring this must run on the thread that will submit (the ring is created
    /// single-issuer).
    pub fn build(setup: EngineSetup) -> Result<AnyEngine, EngineError> {
        let queue_depth = setup.queue_depth.clamp(1, setup.kind.max_queue_depth());
        let buffers = BufferPool::new(queue_depth as usize, setup.buffer_size)?;
        let mut files: Vec<Option<File>> = setup.files.into_iter().map(Some).collect();
        files.extend((0..setup.spare_file_slots).map(|_| None));
        Ok(match setup.kind {
            EngineKind::Sync => AnyEngine::Sync(SyncEngine::new(files, buffers)),
            EngineKind::IoUring => {
                AnyEngine::IoUring(UringEngine::new(files, buffers, setup.max_transfer, setup.pin_buffers)?)
            }
            EngineKind::Null => AnyEngine::Null(NullEngine::new(buffers, setup.null_latency, setup.null_faults)),
            EngineKind::Http => AnyEngine::Http(
                HttpEngine::connect(setup.urls, queue_depth)
                    .map_err(EngineError::Connect)?
                    .with_pieces(setup.http_pieces),
            ),
        })
    }
}

/// btrfs's `f_type` (statfs(2), `BTRFS_SUPER_MAGIC`).
const BTRFS_MAGIC: i64 = 0x9123_683E;

/// Whether `file` is opened with O_DIRECT on btrfs, whose direct reads go through the page cache, silently,
/// unless every byte lands in memory of its own that needs no page fault (`uring.rs` says how and why; the sync
/// engine touches its buffers once, `BufferPool::prefault`).
#[allow(clippy::unnecessary_cast)] // `f_type` is an i64 here, an i32 or u32 on other targets
pub(crate) fn btrfs_direct(file: &File) -> bool {
    let direct = rustix::fs::fcntl_getfl(file).is_ok_and(|f| f.contains(rustix::fs::OFlags::DIRECT));
    direct && rustix::fs::fstatfs(file).is_ok_and(|s| s.f_type as i64 == BTRFS_MAGIC)
}

/// Rounds `n` up to a multiple of the page size (4096), the alignment O_DIRECT needs on every filesystem
/// seen so far (statx DIOALIGN reports 512 or 4096).
pub const fn page_round_up(n: usize) -> usize {
    n.div_ceil(4096) * 4096
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sync_engine_is_depth_one() {
        assert_eq!(EngineKind::Sync.max_queue_depth(), 1);
        assert_eq!(page_round_up(1), 4096);
        assert_eq!(page_round_up(4096), 4096);
        assert_eq!(page_round_up(4097), 8192);
    }
}
