//! Putting data in place before a phase that reads (or writes at random): each data file is written once,
//! sequentially, with the same stamped random content as a write phase. Not measured.
//!
//! Reading a file that was never written would measure the filesystem's handling of holes (no device I/O at
//! all), which is the kind of flattering number streamcap exists to avoid. Also here: dropping a file's pages
//! from the page cache before a buffered phase, as fio's `invalidate=1` does, so that one phase's writes do not
//! become the next phase's cache hits; and what each kind of phase needs of its files before it starts
//! (`FilesNeed`).

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use super::open::{OpenFor, open_data_file};
use super::prepare::{PassError, PassFile, pass};
use crate::engine::EngineKind;
use crate::plan::{FilePlan, RawPlan};
use crate::verify::Verifier;

#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    /// Opening, writing or reading a file failed; the text names the file, the offset and the error.
    #[error("{0}")]
    Open(String),
    /// One write of `len` bytes at `offset` failed somewhere in its range (the kernel may have split it; what
    /// was stored before the failing part is not reported back).
    #[error(
        "cannot write {len} bytes of data into {path} at offset {offset}: {}{}",
        crate::limits::explain(cause),
        full_hint(cause)
    )]
    Write { path: PathBuf, offset: u64, len: u64, cause: io::Error },
    #[error("cannot read {path} into the page cache: {cause}")]
    Read { path: PathBuf, cause: io::Error },
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

/// Writes the ranges of every file in `files` on the I/O core (`prepare::pass`), flushing each; then drops what
/// the writes left in the page cache — after direct writes too: btrfs writes part of a direct request through the
/// page cache in some cases and drops those pages only where it can, and a phase that reads the file must find
/// none (a CI run found 62 pages of a 29 MiB stream media file on btrfs raid1 cached after its direct fill and
/// direct reads; where they came from is not proved).
/// `progress(done, total)` counts bytes.
pub fn fill(
    files: Vec<PassFile>,
    direct: bool,
    engine: EngineKind,
    interrupted: Arc<AtomicBool>,
    progress: &mut (dyn FnMut(u64, u64) + Send),
) -> Result<(), LayoutError> {
    let paths: Vec<PathBuf> = files.iter().map(|f| f.path.clone()).collect();
    pass(files, true, direct, engine, interrupted, progress).map_err(LayoutError::from)?;
    for path in &paths {
        invalidate(path, true);
    }
    Ok(())
}

/// What filling `file` (number `index` of the run's file table) must write: all of it, except, in a verified
/// run, the blocks an earlier phase wrote and the verifier expects to find. A write phase cut short by its
/// runtime leaves the file partly written; filling those blocks again would make each look like a lost write.
pub fn to_fill(file: &FilePlan, index: u32, verifier: Option<&Verifier>) -> PassFile {
    match verifier {
        Some(verifier) => PassFile { path: file.path.clone(), ranges: verifier.unknown_ranges(index) },
        None => PassFile::whole(file),
    }
}

impl From<PassError> for LayoutError {
    fn from(e: PassError) -> LayoutError {
        match e {
            PassError::Interrupted => LayoutError::Interrupted,
            PassError::Failed(why) => LayoutError::Open(why),
            PassError::Io { write: true, path, offset, len, errno } => {
                LayoutError::Write { path, offset, len, cause: io::Error::from_raw_os_error(errno) }
            }
            PassError::Io { write: false, path, errno, .. } => {
                LayoutError::Read { path, cause: io::Error::from_raw_os_error(errno) }
            }
        }
    }
}

/// Flushes dirty pages and asks the kernel to drop the file's cached pages (best effort: the kernel may keep
/// pages that are mapped or still under writeback).
pub fn invalidate(path: &Path, writable: bool) {
    if let Ok(file) = open_data_file(path, if writable { OpenFor::write(false) } else { OpenFor::read(false) }) {
        if writable {
            let _ = file.sync_data();
        }
        drop_cached_pages(&file);
    }
}

/// Reads every file once through the page cache (fio pre_read), so that a buffered phase starts warm. Not
/// measured.
pub fn pre_read(files: &[FilePlan], engine: EngineKind, interrupted: Arc<AtomicBool>) -> Result<(), LayoutError> {
    let files: Vec<PassFile> = files.iter().map(PassFile::whole).collect();
    pass(files, false, false, engine, interrupted, &mut |_, _| {}).map_err(LayoutError::from)
}

/// Tells the kernel how a buffered phase will read `file`, as fio's fadvise_hint does: read-ahead for
/// sequential access, none for random access, where each 4 KiB read would otherwise bring in up to 128 KiB around
/// it and later random reads would hit the cache instead of the storage. Best effort: advice is not a guarantee.
pub fn advise_pattern(file: &File, random: bool) {
    let advice = if random { rustix::fs::Advice::Random } else { rustix::fs::Advice::Sequential };
    let _ = rustix::fs::fadvise(file, 0, None, advice);
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

/// What a phase needs of its files before it starts: which files (this rank's), whether they must hold data,
/// whether to drop or warm their cached pages, and the engine that fills or warms them.
pub(super) struct FilesNeed<'a> {
    pub files: Vec<u32>,
    pub needs_data: bool,
    pub invalidate: bool,
    pub pre_read: bool,
    pub engine: EngineKind,
    /// A raw phase's plan, whose regions say how much of each file pre_read warms.
    raw: Option<&'a RawPlan>,
}

impl<'a> FilesNeed<'a> {
    /// A raw phase's files, as this rank (`None`: a run of one process) uses them.
    pub fn of_raw(raw: &'a RawPlan, rank: Option<u32>) -> FilesNeed<'a> {
        FilesNeed {
            files: raw.files_on(rank),
            needs_data: raw.needs_data,
            invalidate: raw.invalidate,
            pre_read: raw.pre_read,
            engine: raw.engine,
            raw: Some(raw),
        }
    }

    /// A stream phase's media: filled first when streamcap writes them, never dropped from or read into the cache.
    pub fn media(files: Vec<u32>, needs_data: bool, engine: EngineKind) -> FilesNeed<'static> {
        FilesNeed { files, needs_data, invalidate: false, pre_read: false, engine, raw: None }
    }

    /// What fio's pre_read reads of each file: from its start to the end of the last byte the phase addresses (a
    /// phase over the first 64 MiB of a disk warms those, not the whole disk).
    pub fn read_extents(&self, files: &[u32], used: &[&FilePlan]) -> Vec<FilePlan> {
        let regions = || self.raw.into_iter().flat_map(|p| &p.workers).flat_map(|w| w.workload.regions.iter());
        files
            .iter()
            .zip(used)
            .map(|(&index, file)| {
                let end = regions().filter(|r| r.file == index).map(|r| r.start + r.len).max().unwrap_or(file.size.0);
                FilePlan { size: crate::units::Bytes(end.min(file.size.0)), ..(*file).clone() }
            })
            .collect()
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
        let mut last = (0, 0);
        fill(
            vec![PassFile::whole(&plan)],
            true,
            EngineKind::Sync,
            Arc::new(AtomicBool::new(false)),
            &mut |done, total| {
                assert!(done <= total);
                last = (done, total);
            },
        )
        .unwrap();
        assert_eq!(last, (9 << 20, 9 << 20), "progress ends at the whole");
        let data = std::fs::read(&plan.path).unwrap();
        assert_eq!(data.len(), 9 << 20);
        assert_eq!(&data[8 << 20..(8 << 20) + 8], &(8u64 << 20).to_le_bytes(), "stamped with its offset");
        // No hole is left: every 4 KiB block carries its stamp.
        assert!(data.chunks(4096).enumerate().all(|(i, b)| b[..8] == ((i as u64) * 4096).to_le_bytes()));
    }

    #[test]
    fn fills_only_the_ranges_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let plan = FilePlan { path: dir.path().join("d"), size: Bytes::mib(3), created: true };
        File::create(&plan.path).unwrap().set_len(plan.size.0).unwrap();
        let ranges = vec![0..1 << 20, (2 << 20) + 4096..3 << 20];
        let file = PassFile { path: plan.path.clone(), ranges };
        fill(vec![file], true, EngineKind::Sync, Arc::new(AtomicBool::new(false)), &mut |_, _| {}).unwrap();
        let data = std::fs::read(&plan.path).unwrap();
        let stamped = |i: usize| data[i * 4096..i * 4096 + 8] == ((i as u64) * 4096).to_le_bytes();
        assert!((0..256).all(stamped), "the first range is filled");
        assert!(data[1 << 20..(2 << 20) + 4096].iter().all(|&b| b == 0), "the gap is left as it was");
        assert!((513..768).all(stamped), "the second range is filled");
    }

    #[test]
    fn stops_when_interrupted() {
        let dir = tempfile::tempdir().unwrap();
        let plan = FilePlan { path: dir.path().join("d"), size: Bytes::mib(8), created: true };
        File::create(&plan.path).unwrap();
        let err = fill(
            vec![PassFile::whole(&plan)],
            false,
            EngineKind::Sync,
            Arc::new(AtomicBool::new(true)),
            &mut |_, _| {},
        )
        .unwrap_err();
        assert!(matches!(err, LayoutError::Interrupted));
    }
}
