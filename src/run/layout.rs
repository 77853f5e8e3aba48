//! Putting data in place before a phase that reads (or writes at random): each data file is written once,
//! sequentially, with the same stamped random content as a write phase. Not measured.
//!
//! Reading a file that was never written would measure the filesystem's handling of holes (no device I/O at
//! all), which is the kind of flattering number streamcap exists to avoid. Also here: dropping a file's pages
//! from the page cache before a buffered phase, as fio's `invalidate=1` does, so that one phase's writes do not
//! become the next phase's cache hits.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use super::pattern::{fill_random, stamp};
use super::worker_setup::open_data_file;
use crate::engine::{BufferPool, Completion, Engine, OpKind, Request, SyncEngine, Wait};
use crate::plan::FilePlan;
use crate::workload::Rng;

const CHUNK: usize = 4 << 20;

#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    #[error("{0}")]
    Open(String),
    /// One write of `len` bytes at `offset` failed somewhere in its range (the kernel may have split it; what
    /// was stored before the failing part is not reported back).
    #[error("cannot write {len} bytes of data into {path} at offset {offset}: {cause}{}", full_hint(cause))]
    Write { path: PathBuf, offset: u64, len: u64, cause: io::Error },
    #[error("cannot read {path} into the page cache: {cause}")]
    Read { path: PathBuf, cause: io::Error },
    #[error("cannot allocate a write buffer: {0}")]
    Buffer(String),
    #[error("interrupted while filling the data files")]
    Interrupted,
}

/// What a full filesystem means for the user, after the OS error text.
fn full_hint(cause: &io::Error) -> &'static str {
    if cause.raw_os_error() == Some(libc::ENOSPC) {
        "; the filesystem is full: free space on it, or use a smaller --size"
    } else {
        ""
    }
}

/// Writes every file in `files` from start to end through the sync engine (the engine layer is the only code
/// that writes data), and flushes each. `progress(done, total)` is called after each chunk.
pub fn fill(
    files: &[&FilePlan],
    direct: bool,
    interrupted: &AtomicBool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(), LayoutError> {
    let total: u64 = files.iter().map(|f| f.size.0).sum();
    let handles = files
        .iter()
        .map(|f| open_data_file(&f.path, direct, true, false))
        .collect::<Result<Vec<_>, _>>()
        .map_err(LayoutError::Open)?;
    let pool = BufferPool::new(1, CHUNK).map_err(|e| LayoutError::Buffer(e.to_string()))?;
    let mut engine = SyncEngine::new(handles, pool);
    fill_random(engine.buffer_mut(0), &mut Rng::new(0xF111));
    let mut completions = Vec::with_capacity(1);
    let (mut done, mut counter) = (0, 0);
    for (index, file) in files.iter().enumerate() {
        let write_error = |offset, len| move |cause| LayoutError::Write { path: file.path.clone(), offset, len, cause };
        let mut offset = 0;
        while offset < file.size.0 {
            if interrupted.load(Ordering::Relaxed) {
                return Err(LayoutError::Interrupted);
            }
            let len = (file.size.0 - offset).min(CHUNK as u64) as u32;
            stamp(&mut engine.buffer_mut(0)[..len as usize], offset, counter);
            counter += 1;
            let request = Request { slot: 0, kind: OpKind::Write, file: index as u32, offset, len };
            perform(&mut engine, request, &mut completions).map_err(write_error(offset, u64::from(len)))?;
            offset += u64::from(len);
            done += u64::from(len);
            progress(done, total);
        }
        let flush = Request { slot: 0, kind: OpKind::Fsync, file: index as u32, offset: 0, len: 0 };
        perform(&mut engine, flush, &mut completions).map_err(write_error(file.size.0, 0))?;
    }
    drop(engine);
    if !direct {
        for file in files {
            invalidate(&file.path, true);
        }
    }
    Ok(())
}

/// Runs one request to completion; a short write is an error here (prefill writes whole chunks within the file).
fn perform(engine: &mut SyncEngine, request: Request, out: &mut Vec<Completion>) -> io::Result<()> {
    out.clear();
    engine.submit(&[request]).map_err(io::Error::other)?;
    engine.reap(1, Wait::Forever, out).map_err(io::Error::other)?;
    match out.first().map(|c| c.result) {
        Some(Ok(n)) if n == request.len || matches!(request.kind, OpKind::Fsync | OpKind::Fdatasync) => Ok(()),
        Some(Ok(n)) => {
            Err(io::Error::new(io::ErrorKind::WriteZero, format!("short write: {n} of {} bytes", request.len)))
        }
        Some(Err(errno)) => Err(io::Error::from_raw_os_error(errno)),
        None => Err(io::Error::other("the engine returned no completion")),
    }
}

/// Flushes dirty pages and asks the kernel to drop the file's cached pages (best effort: the kernel may keep
/// pages that are mapped or still under writeback).
pub fn invalidate(path: &Path, writable: bool) {
    if let Ok(file) = open_data_file(path, false, writable, false) {
        if writable {
            let _ = file.sync_data();
        }
        drop_cached_pages(&file);
    }
}

/// Reads every file once through the page cache (fio pre_read), so that a buffered phase starts warm. Not
/// measured.
pub fn pre_read(files: &[&FilePlan], interrupted: &AtomicBool) -> Result<(), LayoutError> {
    use std::io::Read;
    let mut buffer = vec![0u8; CHUNK];
    for file in files {
        let mut handle = open_data_file(&file.path, false, false, false).map_err(LayoutError::Open)?;
        loop {
            if interrupted.load(Ordering::Relaxed) {
                return Err(LayoutError::Interrupted);
            }
            match handle.read(&mut buffer) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(cause) => return Err(LayoutError::Read { path: file.path.clone(), cause }),
            }
        }
    }
    Ok(())
}

fn drop_cached_pages(file: &File) {
    let _ = rustix::fs::fadvise(file, 0, None, rustix::fs::Advice::DontNeed);
}

/// Whether the filesystem under `path` accepts O_DIRECT: opening with it fails with EINVAL where it does not.
/// Any other failure (permissions, a missing file) is an error of its own, not a lack of direct I/O.
pub fn direct_io_supported(path: &Path) -> io::Result<bool> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(path) {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Bytes;

    #[test]
    fn fills_whole_files_with_stamped_data() {
        let dir = tempfile::tempdir().unwrap();
        let plan = FilePlan { path: dir.path().join("d"), size: Bytes::mib(9), created: true };
        File::create(&plan.path).unwrap().set_len(plan.size.0).unwrap();
        let mut calls = 0;
        fill(&[&plan], true, &AtomicBool::new(false), &mut |done, total| {
            calls += 1;
            assert!(done <= total);
        })
        .unwrap();
        assert_eq!(calls, 3);
        let data = std::fs::read(&plan.path).unwrap();
        assert_eq!(data.len(), 9 << 20);
        assert_eq!(&data[8 << 20..(8 << 20) + 8], &(8u64 << 20).to_le_bytes(), "stamped with its offset");
        // No hole is left: every 4 KiB block carries its stamp.
        assert!(data.chunks(4096).enumerate().all(|(i, b)| b[..8] == ((i as u64) * 4096).to_le_bytes()));
    }

    #[test]
    fn stops_when_interrupted() {
        let dir = tempfile::tempdir().unwrap();
        let plan = FilePlan { path: dir.path().join("d"), size: Bytes::mib(8), created: true };
        File::create(&plan.path).unwrap();
        let err = fill(&[&plan], false, &AtomicBool::new(true), &mut |_, _| {}).unwrap_err();
        assert!(matches!(err, LayoutError::Interrupted));
    }
}
