//! The io_uring engine: many requests in flight per thread, one system call per batch.
//!
//! Choices that make it at least as cheap per I/O as fio's io_uring engine:
//! - buffers and files are registered with the kernel once (READ_FIXED/WRITE_FIXED and the fixed file table),
//!   which saves pinning pages and looking up the file on every request; each falls back to the plain form when
//!   registration is refused (for example by a memlock limit);
//! - the ring is single-issuer with deferred task work, so completions are processed only when we ask for them;
//! - `submit` makes one `io_uring_enter` per call, so the caller decides the batching (by default one request
//!   per call, fio's `iodepth_batch_submit=1`: batching submissions saves system calls, but measured on a
//!   virtio disk it cut 4 KiB random-read IOPS at queue depth 32 by a third, 84k against 120k, because the
//!   device sees bursts instead of a steady stream); `queue` leaves the last batch to `reap`, which submits it
//!   and waits in one system call;
//! - an fsync is queued with IO_DRAIN, so it covers every write submitted before it, as `fsync=N` promises;
//! - a request longer than its slot's buffer becomes one READV/WRITEV whose iovecs all point at that buffer
//!   (the stream driver reads a 1 MiB chunk through 256 KiB): one request and one completion as before, a
//!   quarter of the memory. Those iovecs live in a table built once, one row per slot;
//! - except a direct read on btrfs: btrfs reads a vectored direct read whose pieces share memory through the page
//!   cache (fs/btrfs/direct-io.c, `check_direct_read`: two iovecs with the same base make `btrfs_direct_read`
//!   return 0, and the read is done buffered, silently), because it verifies each sector's checksum in the
//!   memory the data landed in. There such a read is a chain of plain reads, one buffer each, linked
//!   (IO_LINK, so each piece is issued when the one before it completed and never overwrites it early) and
//!   posting one completion only (CQE_SKIP_SUCCESS on all but the last; a piece that fails or comes up short
//!   posts its own and the kernel drops the rest of the chain's, `io_fail_links`). The piece's index rides in
//!   the high half of the completion's user data, so the bytes transferred are `index × buffer + result`.
//!   Twenty viewers on a btrfs raid10 read 335 MB from the pool's members this way, and 30 MB (the media once,
//!   then the page cache) as one vectored read;
//! - and a direct read on btrfs lands in registered (pinned) buffers, whatever the caller asked: btrfs reads into
//!   user memory with page faults disabled (`btrfs_direct_read`: `pagefault_disable`, `nofault`), faults the
//!   pages in and tries again, and when that makes no progress it reads the rest through the page cache
//!   (`filemap_read` in `btrfs_file_read_iter`) — served from RAM once another viewer of the same file brought it
//!   in. Unpinned slot buffers, never touched before their first read, did that: fifty viewers of one file on a
//!   btrfs raid1 near its limit received 5–7 % more than the members read, and 11.5 MiB of the 29 MiB file sat
//!   in the page cache afterwards; registered, the kernel reads into pinned pages (no fault), and the members
//!   read exactly what the viewers received, nothing cached. Where registration is refused (a memlock limit)
//!   every page of the pool is touched once instead.
//!
//! The only unsafe code: pushing entries whose buffers (and iovec rows) the kernel will use, and registering
//! the buffers. Both are sound because the buffers and the iovec table are owned by this struct, dropped after
//! the ring and only after every in-flight request has completed (see `Drop`).

#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

use io_uring::{IoUring, opcode, squeue, types};

use super::{
    BufferPool, Caps, Completion, Engine, EngineError, EngineKind, FileTable, OpKind, Request, Wait, btrfs_direct,
};

pub struct UringEngine {
    // Field order matters: the ring is dropped before the buffers and files it refers to.
    ring: IoUring,
    buffers: BufferPool,
    files: Vec<Option<File>>,
    /// `pieces` iovecs per slot, for requests longer than a slot's buffer; never resized (the kernel reads
    /// a row while its request is in flight).
    iovecs: Vec<libc::iovec>,
    pieces: usize,
    registered_buffers: bool,
    registered_files: bool,
    /// Reads longer than a slot's buffer are chains of linked reads rather than one vectored read (see above).
    chained: bool,
    /// Entries pushed to the submission queue but not yet passed to the kernel.
    unsubmitted: usize,
    in_flight: usize,
}

/// Whether this kernel lets us create a ring at all (it may be disabled by sysctl or blocked by seccomp).
pub fn io_uring_available() -> Result<(), io::Error> {
    IoUring::new(2).map(|_| ())
}

fn build_ring(entries: u32) -> Result<IoUring, io::Error> {
    // Newest, cheapest setup first; older kernels reject the flags with EINVAL.
    IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(entries)
        .or_else(|_| IoUring::builder().setup_coop_taskrun().build(entries))
        .or_else(|_| IoUring::new(entries))
}

impl UringEngine {
    /// `max_transfer`: the longest request (bytes); `pin`: register the buffers (see `EngineSetup`).
    pub fn new(
        files: Vec<Option<File>>,
        mut buffers: BufferPool,
        max_transfer: usize,
        pin: bool,
    ) -> Result<UringEngine, EngineError> {
        let depth = buffers.slots() as u32;
        let pieces = max_transfer.div_ceil(buffers.slot_size()).max(1);
        let on_btrfs = files.iter().flatten().any(btrfs_direct);
        let chain = (2..=4096).contains(&pieces) && on_btrfs;
        // A chained read takes one submission entry per piece (at most 32,768 entries: the kernel's limit).
        let entries = if chain { depth.saturating_mul(pieces as u32) } else { depth };
        let ring = build_ring(entries.next_power_of_two().clamp(2, 32_768)).map_err(EngineError::Setup)?;
        // Without CQE_SKIP_SUCCESS (kernels before 5.17) a chain would post a completion per piece: the read
        // stays vectored there, and the step's device figures show what btrfs did with it.
        let chained = chain && ring.params().is_feature_skip_cqe_on_success();

        let slot_iovecs = buffers.iovecs();
        // SAFETY: every iovec points into `buffers`, which this struct owns and drops only after the ring.
        let registered_buffers =
            (pin || on_btrfs) && unsafe { ring.submitter().register_buffers(&slot_iovecs) }.is_ok();
        if on_btrfs && !registered_buffers {
            buffers.prefault();
        }
        // An empty place is registered as -1 (a sparse slot), filled later through `FileTable::put`.
        let fds: Vec<i32> = files.iter().map(|f| f.as_ref().map_or(-1, |f| f.as_raw_fd())).collect();
        let registered_files = !fds.is_empty() && ring.submitter().register_files(&fds).is_ok();

        let iovecs = if pieces > 1 {
            slot_iovecs.iter().flat_map(|iov| std::iter::repeat_n(*iov, pieces)).collect()
        } else {
            Vec::new()
        };
        Ok(UringEngine {
            ring,
            buffers,
            files,
            iovecs,
            pieces,
            registered_buffers,
            registered_files,
            chained,
            unsubmitted: 0,
            in_flight: 0,
        })
    }

    /// Points the slot's iovec row at its buffer, `len` bytes in whole buffers and a last partial piece.
    /// Returns the row and its length. A request longer than `pieces` buffers is cut short (and so reported
    /// as a short transfer by the caller).
    fn pieces_for(&mut self, slot: u32, len: u32) -> (*const libc::iovec, u32) {
        let size = self.buffers.slot_size();
        let n = (len as usize).div_ceil(size).clamp(1, self.pieces);
        let row = &mut self.iovecs[slot as usize * self.pieces..][..n];
        let mut left = len as usize;
        for iov in row.iter_mut() {
            iov.iov_len = left.min(size);
            left -= iov.iov_len;
        }
        (row.as_ptr(), n as u32)
    }

    fn entry(&mut self, request: &Request) -> squeue::Entry {
        let ptr = self.buffers.slot_ptr(request.slot);
        let (len, offset, slot, prio) = (request.len, request.offset, request.slot, request.prio);
        let through =
            len as usize > self.buffers.slot_size() && !matches!(request.kind, OpKind::Fsync | OpKind::Fdatasync);
        let (iov, n) = if through { self.pieces_for(slot, len) } else { (std::ptr::null(), 0) };
        macro_rules! build {
            ($fd:expr) => {
                match (request.kind, self.registered_buffers) {
                    (OpKind::Read, _) if through => opcode::Readv::new($fd, iov, n).offset(offset).ioprio(prio).build(),
                    (OpKind::Write, _) if through => {
                        opcode::Writev::new($fd, iov, n).offset(offset).ioprio(prio).build()
                    }
                    (OpKind::Read, true) => {
                        opcode::ReadFixed::new($fd, ptr, len, slot as u16).offset(offset).ioprio(prio).build()
                    }
                    (OpKind::Read, false) => opcode::Read::new($fd, ptr, len).offset(offset).ioprio(prio).build(),
                    (OpKind::Write, true) => {
                        opcode::WriteFixed::new($fd, ptr, len, slot as u16).offset(offset).ioprio(prio).build()
                    }
                    (OpKind::Write, false) => opcode::Write::new($fd, ptr, len).offset(offset).ioprio(prio).build(),
                    (OpKind::Fsync, _) => opcode::Fsync::new($fd).build().flags(squeue::Flags::IO_DRAIN),
                    (OpKind::Fdatasync, _) => opcode::Fsync::new($fd)
                        .flags(types::FsyncFlags::DATASYNC)
                        .build()
                        .flags(squeue::Flags::IO_DRAIN),
                }
            };
        }
        let entry = if self.registered_files {
            build!(types::Fixed(request.file))
        } else {
            let fd = self.files.get(request.file as usize).and_then(Option::as_ref).map_or(-1, |f| f.as_raw_fd());
            build!(types::Fd(fd))
        };
        entry.user_data(request.slot as u64)
    }

    /// The pieces a request is read in: more than one only for a chained read longer than its slot's buffer.
    fn chain_pieces(&self, request: &Request) -> usize {
        let size = self.buffers.slot_size();
        if self.chained && request.kind == OpKind::Read && request.len as usize > size {
            (request.len as usize).div_ceil(size).min(self.pieces)
        } else {
            1
        }
    }

    /// Piece `k` of `n` of a chained read: the slot's buffer filled from `offset + k × buffer`, linked to the
    /// next piece and silent on success unless it is the last.
    fn piece_entry(&mut self, request: &Request, k: usize, n: usize) -> squeue::Entry {
        let size = self.buffers.slot_size();
        let ptr = self.buffers.slot_ptr(request.slot);
        let len = (request.len as usize - k * size).min(size) as u32;
        let offset = request.offset + (k * size) as u64;
        let (slot, prio) = (request.slot, request.prio);
        macro_rules! build {
            ($fd:expr) => {
                if self.registered_buffers {
                    opcode::ReadFixed::new($fd, ptr, len, slot as u16).offset(offset).ioprio(prio).build()
                } else {
                    opcode::Read::new($fd, ptr, len).offset(offset).ioprio(prio).build()
                }
            };
        }
        let entry = if self.registered_files {
            build!(types::Fixed(request.file))
        } else {
            let fd = self.files.get(request.file as usize).and_then(Option::as_ref).map_or(-1, |f| f.as_raw_fd());
            build!(types::Fd(fd))
        };
        let entry = if k + 1 < n { entry.flags(squeue::Flags::IO_LINK | squeue::Flags::SKIP_SUCCESS) } else { entry };
        entry.user_data(u64::from(slot) | ((k as u64) << 32))
    }

    /// Pushes a chained read's pieces, all or none; false when the submission queue has no room for them.
    fn push_chain(&mut self, request: &Request, n: usize) -> bool {
        let room = {
            let sq = self.ring.submission();
            sq.capacity() - sq.len()
        };
        if room < n {
            return false;
        }
        for k in 0..n {
            let entry = self.piece_entry(request, k, n);
            // SAFETY: as in `queue`: the entry points at this request's slot buffer, alive until Drop.
            let pushed = unsafe { self.ring.submission().push(&entry) };
            debug_assert!(pushed.is_ok(), "room was checked above");
        }
        true
    }

    /// Passes queued entries to the kernel and waits for `want` completions, or up to `timeout`.
    fn enter(&mut self, want: usize, wait: Wait) -> Result<(), EngineError> {
        let submitter = self.ring.submitter();
        let result = match wait {
            Wait::Forever => submitter.submit_and_wait(want),
            Wait::AtMost(timeout) => {
                let ts = types::Timespec::from(timeout);
                let args = types::SubmitArgs::new().timespec(&ts);
                submitter.submit_with_args(want, &args)
            }
        };
        match result {
            Ok(_) => {
                self.unsubmitted = 0;
                Ok(())
            }
            // A timeout, a signal (Ctrl-C) or a full completion queue: what was submitted stays submitted;
            // the caller looks at what is ready and decides.
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME | libc::EINTR | libc::EBUSY | libc::EAGAIN)) => {
                self.unsubmitted = self.ring.submission().len();
                Ok(())
            }
            Err(e) => Err(EngineError::Enter(e)),
        }
    }
}

impl Engine for UringEngine {
    fn caps(&self) -> Caps {
        Caps {
            kind: EngineKind::IoUring,
            queue_depth: self.buffers.slots() as u32,
            registered_buffers: self.registered_buffers,
            registered_files: self.registered_files,
        }
    }

    fn submit(&mut self, requests: &[Request]) -> Result<usize, EngineError> {
        let accepted = self.queue(requests)?;
        self.ring.submit().map_err(EngineError::Enter)?;
        self.unsubmitted = 0;
        Ok(accepted)
    }

    fn queue(&mut self, requests: &[Request]) -> Result<usize, EngineError> {
        let mut accepted = 0;
        for request in requests {
            let n = self.chain_pieces(request);
            if n > 1 {
                if !self.push_chain(request, n) {
                    break;
                }
                accepted += 1;
                continue;
            }
            let entry = self.entry(request);
            // SAFETY: the entry points at this request's slot buffer in `self.buffers` (alive until Drop, which
            // waits for all in-flight requests) and at a file in `self.files` or the registered table.
            let pushed = unsafe { self.ring.submission().push(&entry) };
            if pushed.is_err() {
                break;
            }
            accepted += 1;
        }
        self.unsubmitted += accepted;
        self.in_flight += accepted;
        Ok(accepted)
    }

    fn reap(&mut self, min: usize, wait: Wait, out: &mut Vec<Completion>) -> Result<usize, EngineError> {
        let min = min.min(self.in_flight);
        let ready = self.ring.completion().len();
        if self.unsubmitted > 0 || ready < min {
            self.enter(min.saturating_sub(ready), wait)?;
        }
        let before = out.len();
        // A chained read's completion names the piece it came from (0 for every other request): the pieces
        // before it were whole.
        let size = self.buffers.slot_size() as u64;
        for cqe in self.ring.completion() {
            let (result, data) = (cqe.result(), cqe.user_data());
            let before = (data >> 32) * size;
            let result = if result >= 0 { Ok((before + result as u64) as u32) } else { Err(-result) };
            out.push(Completion { slot: data as u32, result });
        }
        let reaped = out.len() - before;
        self.in_flight -= reaped;
        Ok(reaped)
    }

    fn buffer_mut(&mut self, slot: u32) -> &mut [u8] {
        self.buffers.slot_mut(slot)
    }

    fn in_flight(&self) -> usize {
        self.in_flight
    }

    fn file_table(&mut self) -> &mut dyn FileTable {
        self
    }
}

impl FileTable for UringEngine {
    fn put(&mut self, index: u32, file: Option<File>) -> Result<Option<File>, EngineError> {
        let fail = |cause| EngineError::FileTable { index, cause };
        let Some(place) = self.files.get_mut(index as usize) else {
            return Err(fail(io::Error::from_raw_os_error(libc::EBADF)));
        };
        if self.registered_files {
            let fd = file.as_ref().map_or(-1, |f| f.as_raw_fd());
            self.ring.submitter().register_files_update(index, &[fd]).map_err(fail)?;
        }
        Ok(std::mem::replace(place, file))
    }
}

impl Drop for UringEngine {
    /// Waits for every in-flight request, so the kernel never writes into a buffer after it is unmapped.
    fn drop(&mut self) {
        let mut scratch = Vec::with_capacity(self.in_flight);
        let mut attempts = 0;
        while self.in_flight > 0 && attempts < 10_000 {
            scratch.clear();
            if self.reap(self.in_flight, Wait::Forever, &mut scratch).is_err() {
                attempts += 100;
            }
            attempts += 1;
        }
        // The ring holds its own reference to each registered file, and dropping the ring leaves them to the
        // kernel's deferred teardown of it, after this returns: a FUSE filesystem (sshfs) then still counts the file
        // open when the run removes it, hides it as `.fuse_hidden…`, and the work directory is not empty yet.
        // Unregistered here, they are released before the engine is gone.
        if self.registered_files {
            let _ = self.ring.submitter().unregister_files();
        }
    }
}
