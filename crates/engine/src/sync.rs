//! The synchronous engine: pread(2), pwrite(2) and fsync(2) issued from the worker thread.
//!
//! The I/O happens inside `submit`; completions wait in a small fixed queue until `reap`. Its queue depth is 1,
//! like fio's psync: with a blocking call there is never more than one request in flight per thread, and
//! pretending otherwise would report queueing inside streamcap as device latency.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use super::finished::Finished;
use super::{BufferPool, Caps, Completion, Engine, EngineError, EngineKind, FileTable, OpKind, Request, Wait};

pub struct SyncEngine {
    files: Vec<Option<File>>,
    buffers: BufferPool,
    finished: Finished,
}

impl SyncEngine {
    pub fn new(files: Vec<Option<File>>, mut buffers: BufferPool) -> SyncEngine {
        if files.iter().flatten().any(super::btrfs_direct) {
            buffers.prefault();
        }
        let finished = Finished::new(buffers.slots());
        SyncEngine { files, buffers, finished }
    }
}

fn perform(files: &[Option<File>], buffers: &mut BufferPool, request: &Request) -> Result<u32, i32> {
    let Some(file) = files.get(request.file as usize).and_then(Option::as_ref) else { return Err(libc::EBADF) };
    let result = match request.kind {
        // A request longer than the slot's buffer passes through it piece after piece (EngineSetup::max_transfer).
        OpKind::Read => {
            let buffer = buffers.slot_mut(request.slot);
            let size = buffer.len();
            transfer_all(request.len as usize, |done| {
                let piece = (request.len as usize - done).min(size - done % size);
                file.read_at(&mut buffer[done % size..][..piece], request.offset + done as u64)
            })
        }
        OpKind::Write => {
            let buffer = buffers.slot(request.slot);
            let size = buffer.len();
            transfer_all(request.len as usize, |done| {
                let piece = (request.len as usize - done).min(size - done % size);
                file.write_at(&buffer[done % size..][..piece], request.offset + done as u64)
            })
        }
        OpKind::Fsync => file.sync_all().map(|()| 0),
        OpKind::Fdatasync => file.sync_data().map(|()| 0),
    };
    result.map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
}

/// Repeats a positional transfer until `len` bytes are done or the file ends (a short count is returned then).
/// Short transfers happen on regular files only at end of file, but signals can interrupt a large one.
fn transfer_all(len: usize, mut step: impl FnMut(usize) -> io::Result<usize>) -> io::Result<u32> {
    let mut done = 0;
    while done < len {
        match step(done) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(done as u32)
}

impl Engine for SyncEngine {
    fn caps(&self) -> Caps {
        Caps { kind: EngineKind::Sync, queue_depth: 1, registered_buffers: false, registered_files: false }
    }

    fn submit(&mut self, requests: &[Request]) -> Result<usize, EngineError> {
        let (files, buffers) = (&self.files, &mut self.buffers);
        Ok(self.finished.complete_each(requests, |request| perform(files, buffers, request)))
    }

    fn reap(&mut self, _min: usize, _wait: Wait, out: &mut Vec<Completion>) -> Result<usize, EngineError> {
        Ok(self.finished.hand_over(out))
    }

    fn buffer_mut(&mut self, slot: u32) -> &mut [u8] {
        self.buffers.slot_mut(slot)
    }

    fn in_flight(&self) -> usize {
        self.finished.len()
    }

    fn file_table(&mut self) -> &mut dyn FileTable {
        self
    }
}

impl FileTable for SyncEngine {
    fn put(&mut self, index: u32, file: Option<File>) -> Result<Option<File>, EngineError> {
        match self.files.get_mut(index as usize) {
            Some(place) => Ok(std::mem::replace(place, file)),
            None => Err(EngineError::FileTable { index, cause: io::Error::from_raw_os_error(libc::EBADF) }),
        }
    }
}
