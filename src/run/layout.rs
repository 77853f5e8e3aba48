//! Putting data in place before a phase that reads (or writes at random): each data file is written once,
//! sequentially, with the same stamped random content as a write phase. Not measured.
//!
//! Reading a file that was never written would measure the filesystem's handling of holes (no device I/O at
//! all), which is the kind of flattering number streamcap exists to avoid. Also here: dropping a file's pages
//! from the page cache before a buffered phase, as fio's `invalidate=1` does, so that one phase's writes do not
//! become the next phase's cache hits.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use super::pattern::{fill_random, stamp};
use super::worker_setup::open_data_file;
use crate::engine::BufferPool;
use crate::plan::FilePlan;
use crate::workload::Rng;

const CHUNK: usize = 4 << 20;

#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    #[error("{0}")]
    Open(String),
    #[error("cannot write data into {path} at offset {offset}: {cause}")]
    Write { path: PathBuf, offset: u64, cause: io::Error },
    #[error("cannot allocate a write buffer: {0}")]
    Buffer(String),
    #[error("interrupted while filling the data files")]
    Interrupted,
}

/// Writes every file in `files` from start to end. `progress(done, total)` is called after each chunk.
pub fn fill(
    files: &[&FilePlan],
    direct: bool,
    interrupted: &AtomicBool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(), LayoutError> {
    let total: u64 = files.iter().map(|f| f.size.0).sum();
    let mut pool = BufferPool::new(1, CHUNK).map_err(|e| LayoutError::Buffer(e.to_string()))?;
    fill_random(pool.slot_mut(0), &mut Rng::new(0xF111));
    let mut done = 0;
    let mut counter = 0;
    for file in files {
        let handle = open_data_file(&file.path, direct, true).map_err(LayoutError::Open)?;
        let mut offset = 0;
        while offset < file.size.0 {
            if interrupted.load(Ordering::Relaxed) {
                return Err(LayoutError::Interrupted);
            }
            let len = (file.size.0 - offset).min(CHUNK as u64) as usize;
            let buffer = &mut pool.slot_mut(0)[..len];
            stamp(buffer, offset, counter);
            counter += 1;
            write_all_at(&handle, buffer, offset).map_err(|cause| LayoutError::Write {
                path: file.path.clone(),
                offset,
                cause,
            })?;
            offset += len as u64;
            done += len as u64;
            progress(done, total);
        }
        handle.sync_data().map_err(|cause| LayoutError::Write {
            path: file.path.clone(),
            offset: file.size.0,
            cause,
        })?;
        if !direct {
            drop_cached_pages(&handle);
        }
    }
    Ok(())
}

fn write_all_at(file: &File, mut buffer: &[u8], mut offset: u64) -> io::Result<()> {
    while !buffer.is_empty() {
        match file.write_at(buffer, offset) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::WriteZero, "the write made no progress")),
            Ok(n) => {
                buffer = &buffer[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Flushes dirty pages and asks the kernel to drop the file's cached pages (best effort: the kernel may keep
/// pages that are mapped or still under writeback).
pub fn invalidate(path: &Path, writable: bool) {
    if let Ok(file) = open_data_file(path, false, writable) {
        if writable {
            let _ = file.sync_data();
        }
        drop_cached_pages(&file);
    }
}

fn drop_cached_pages(file: &File) {
    let _ = rustix::fs::fadvise(file, 0, None, rustix::fs::Advice::DontNeed);
}

/// Whether the filesystem under `path` accepts O_DIRECT (opening with it fails with EINVAL where it does not).
pub fn direct_io_supported(path: &Path) -> bool {
    open_data_file(path, true, false).is_ok()
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
