//! The read-back of verified data as a schedule on the I/O core (`ReadBack`), as prepare.rs's passes are: every
//! file that holds verified blocks is read from start to end in large pieces, several in flight on io_uring, and
//! each block of each piece is checked by the [`Verifier`]. One file is open at a time, in the engine's one
//! spare file slot, so a file-set tree of millions of files never holds more than one descriptor.
//!
//! Reads are direct where the filesystem allows it, so the page cache cannot hand back what was written instead
//! of what was stored. Each request is rounded up to a whole number of pages (the alignment direct I/O needs)
//! and has the role `Role::UntilEof`: a file that ends inside its last page, or earlier, is not an error to the core; this
//! schedule judges what came back. A read that failed is recorded with its operation, path, offset and errno,
//! and the pass goes on with the next piece (the blocks of the failed piece are not checked). A regular file that
//! ends before the blocks written to it (truncated, before or during the pass) is checked as far as it goes; the
//! written blocks past its end are lost, reported as one range with its offsets when the file is done. One that
//! is gone is not read at all. Files in a directory held open for the run (a work directory; a kept run's, for
//! `--verify-only`) are opened beneath it, never through a symbolic link, and only if they are regular files.
//!
//! Must not: issue I/O itself (the core does) or decide how the outcome is reported (verify_pass.rs does).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustix::fs::OFlags;

use super::core::{Ctx, Io, Next, Role, Schedule};
use super::open::{OpenFor, open_data_file};
use super::owned::open_registered;
use crate::engine::{OpKind, page_round_up};
use crate::metrics::ErrorRecord;
use crate::plan::defaults;
use crate::verify::Verifier;

/// Bytes read per request, about: rounded down to whole blocks and whole pages, at least one of each.
const PIECE: u64 = 4 << 20;

/// The bytes of one request for blocks of `block` bytes: a whole number of blocks and of pages.
pub(super) fn piece_for(block: u32) -> u64 {
    let block = u64::from(block.max(1));
    let (mut a, mut b) = (block, 4096);
    while b != 0 {
        (a, b) = (b, a % b);
    }
    let unit = block / a * 4096;
    (PIECE / unit).max(1) * unit
}

/// The read-back of every file of a verifier that holds written blocks.
pub struct ReadBack<'a> {
    verifier: &'a Verifier,
    /// The verifier's files, by its file number.
    paths: &'a [PathBuf],
    /// The files to read (those with written blocks), in order, with the bytes written to each.
    files: Vec<(u32, u64)>,
    next_file: usize,
    current: Option<Current>,
    direct: bool,
    /// `--verify-only`: every file lies in a directory held open by the caller, and none is opened otherwise.
    confined: bool,
    piece: u64,
    errors: ReadErrors,
    /// Every file was read to its end (or found missing): the pass was not cut short.
    complete: bool,
}

/// The file being read.
struct Current {
    file: u32,
    /// Bytes written to it, as the verifier knows it.
    size: u64,
    /// Where reading stops: `size`, or where the file ends when it ends earlier (it was truncated).
    end: u64,
    /// The next offset to ask for.
    next: u64,
    /// A regular file's handle, to learn its length after a short read (`None`: a device, opened as given).
    regular: Option<File>,
}

impl<'a> ReadBack<'a> {
    /// A pass over the files of `verifier` at `paths` (same order) that hold written blocks.
    pub(super) fn new(verifier: &'a Verifier, paths: &'a [PathBuf], direct: bool, confined: bool) -> ReadBack<'a> {
        let files = verifier
            .files()
            .enumerate()
            .map(|(file, (_, size))| (file as u32, size))
            .filter(|&(file, _)| (file as usize) < paths.len() && verifier.has_written(file))
            .collect();
        let piece = piece_for(verifier.block_size());
        let errors = ReadErrors { kept: Vec::new(), count: 0 };
        ReadBack {
            verifier,
            paths,
            files,
            next_file: 0,
            current: None,
            direct,
            confined,
            piece,
            errors,
            complete: false,
        }
    }

    /// Bytes the pass reads at most: what was written to its files.
    pub(super) fn total(&self) -> u64 {
        self.files.iter().map(|&(_, size)| size).sum()
    }

    /// The bytes of one request (the engine's buffers are this long).
    pub(super) fn piece(&self) -> u64 {
        self.piece
    }

    /// Every file was read to its end.
    pub(super) fn complete(&self) -> bool {
        self.complete
    }

    /// The failed reads: the first few in full, and how many in all.
    pub(super) fn into_errors(self) -> (Vec<ErrorRecord>, u64) {
        (self.errors.kept, self.errors.count)
    }

    /// Records that the pass stopped (its engine failed) while reading the current file (`at` from its start).
    pub(super) fn stopped(&mut self, why: &str, at: Duration) {
        let (path, offset, len) = match &self.current {
            Some(cur) => (self.paths[cur.file as usize].as_path(), cur.next, cur.size - cur.next),
            None => (Path::new(""), 0, 0),
        };
        self.errors.record(path, offset, len, (libc::EIO, format!("the read-back stopped: {why}")), at);
    }

    /// Opens `file` into the engine's file slot, or settles it: missing (its blocks are lost) or failed.
    fn open(&mut self, ctx: &mut Ctx<'_>, file: u32, size: u64) {
        let path = &self.paths[file as usize];
        let opened = match open_for_pass(path, self.direct, self.confined) {
            Ok(opened) => opened,
            Err(Unread::Missing(why)) => return self.verifier.missing(file, 0, &why),
            Err(Unread::Failed(e)) => return self.errors.record(path, 0, size, e, ctx.now),
        };
        // What is not there any more is not asked for: a file truncated before the pass is read up to its end.
        let length = opened.regular.as_ref().and_then(|f| f.metadata().ok()).map(|m| m.len());
        let end = length.map_or(size, |length| length.min(size));
        if let Err(e) = ctx.files.put(0, Some(opened.handle)) {
            return self.errors.record(path, 0, size, (libc::EIO, e.to_string()), ctx.now);
        }
        self.current = Some(Current { file, size, end, next: 0, regular: opened.regular });
    }

    /// The current file is done (nothing of it in flight): its blocks past where it ends are lost.
    fn close(&mut self, ctx: &mut Ctx<'_>) {
        let Some(cur) = self.current.take() else { return };
        // The slot is emptied before the next file is put there; the file closes when dropped.
        drop(ctx.files.put(0, None));
        if cur.end < cur.size {
            let why =
                format!("the file ends at byte {}, before the {} bytes written (it was truncated)", cur.end, cur.size);
            self.verifier.missing(cur.file, cur.end, &why);
        }
    }
}

impl Schedule for ReadBack<'_> {
    fn next(&mut self, ctx: &mut Ctx<'_>) -> Next {
        loop {
            if let Some(cur) = self.current.as_mut() {
                if cur.next < cur.end {
                    let wanted = (cur.end - cur.next).min(self.piece);
                    // A whole number of pages (≤ `piece`, a multiple of the page): direct I/O takes it.
                    let len = page_round_up(wanted as usize) as u32;
                    let io = Io { role: Role::UntilEof, ..Io::transfer(OpKind::Read, 0, cur.next, len, None) };
                    cur.next += wanted;
                    return Next::Io(io);
                }
                if ctx.in_flight > 0 {
                    return Next::AfterCompletion;
                }
                self.close(ctx);
            }
            let Some(&(file, size)) = self.files.get(self.next_file) else {
                self.complete = true;
                return Next::Done;
            };
            self.next_file += 1;
            self.open(ctx, file, size);
        }
    }

    /// Checks the blocks a piece brought. A short read of a regular file that now ends there (it was truncated)
    /// checks what it did read, and the file's reading ends there; any other failed or short read is recorded.
    fn completed(&mut self, io: &Io, result: Result<u32, i32>, now: Duration, buf: &[u8]) -> bool {
        let Some(cur) = self.current.as_mut() else { return true };
        let path = &self.paths[cur.file as usize];
        // The bytes this piece is for, as the read-back of old counted them (for records of failures).
        let len = (cur.size.saturating_sub(io.offset)).min(self.piece);
        match result {
            Ok(n) if u64::from(n) >= len => check_piece(self.verifier, cur.file, io.offset, &buf[..len as usize]),
            Ok(n) if cur.ends_by(io.offset + u64::from(n)) => {
                check_piece(self.verifier, cur.file, io.offset, &buf[..n as usize]);
                cur.end = cur.end.min(io.offset + u64::from(n));
            }
            Ok(n) => {
                let why = format!("short read: {n} of {len} bytes (the file ends early)");
                self.errors.record(path, io.offset, len, (libc::EIO, why), now);
            }
            Err(errno) => {
                let why = std::io::Error::from_raw_os_error(errno).to_string();
                self.errors.record(path, io.offset, len, (errno, why), now);
            }
        }
        true
    }

    fn finish(&mut self, _now: Duration) {
        self.current = None;
    }

    fn path(&self, _file: u32) -> &Path {
        self.current.as_ref().map_or(Path::new(""), |cur| &self.paths[cur.file as usize])
    }
}

impl Current {
    /// Whether the file is a regular file that ends at or before `end` now.
    fn ends_by(&self, end: u64) -> bool {
        self.regular.as_ref().and_then(|f| f.metadata().ok()).is_some_and(|m| m.len() <= end)
    }
}

/// The failed reads of the pass: the first few in full, and how many in all.
struct ReadErrors {
    kept: Vec<ErrorRecord>,
    count: u64,
}

impl ReadErrors {
    /// Counts a failed read of `len` bytes at `offset` of `path`, `at` after the pass began, and keeps it while
    /// fewer than `defaults::ERRORS_KEPT` are kept.
    #[cold]
    fn record(&mut self, path: &Path, offset: u64, len: u64, (errno, message): (i32, String), at: Duration) {
        self.count += 1;
        if self.kept.len() < defaults::ERRORS_KEPT {
            self.kept.push(ErrorRecord {
                op: "read".into(),
                path: path.display().to_string(),
                offset,
                len,
                errno,
                message,
                at_s: at.as_secs_f64(),
            });
        }
    }
}

/// Checks every verified block of `file` that lies within `data`, the bytes read at `offset`.
fn check_piece(verifier: &Verifier, file: u32, offset: u64, data: &[u8]) {
    for (index, at, block_len) in verifier.blocks_within(file, offset, data.len()) {
        verifier.check(file, index, &data[at..at + block_len]);
    }
}

/// A file open for the pass, and for a regular file a second handle to learn its length.
struct Opened {
    handle: File,
    regular: Option<File>,
}

/// Why a file was not read: it is not there as a file streamcap wrote (its written blocks are lost), or opening
/// it failed (an errno with words, as a failed read's).
enum Unread {
    Missing(String),
    Failed((i32, String)),
}

/// Opens `path` for the pass (with O_DIRECT when `direct` and the filesystem allows it). A file beneath a
/// directory held open for the run (`owned.rs`) is opened beneath it with O_NOFOLLOW and O_NONBLOCK and must be a
/// regular file; with `confined` every file must be.
fn open_for_pass(path: &Path, direct: bool, confined: bool) -> Result<Opened, Unread> {
    let failed = |e: std::io::Error| Unread::Failed((e.raw_os_error().unwrap_or(libc::EIO), e.to_string()));
    let flags = |direct: bool| {
        let base = OFlags::RDONLY | OFlags::NONBLOCK;
        if direct { base | OFlags::DIRECT } else { base }
    };
    let registered = match open_registered(path, flags(direct)) {
        Some(Err(e)) if direct && e.raw_os_error() == Some(libc::EINVAL) => open_registered(path, flags(false)),
        other => other,
    };
    match registered {
        Some(Ok(file)) => {
            let kind = file.metadata().map_err(failed)?.file_type();
            if !kind.is_file() {
                return Err(Unread::Missing(format!(
                    "it is now {}, not the regular file written (not read)",
                    kind_of(kind)
                )));
            }
            let regular = file.try_clone().map_err(failed)?;
            Ok(Opened { handle: file, regular: Some(regular) })
        }
        Some(Err(e)) => Err(unopened(e)),
        None if confined => Err(Unread::Missing(
            "its directory could not be opened as one of the kept run's (missing, or a symbolic link)".into(),
        )),
        None => Ok(Opened { handle: open_data_file(path, OpenFor::read(direct)).map_err(failed)?, regular: None }),
    }
}

/// A failed open beneath a held directory: a file that is gone or a symbolic link in its place is missing (what
/// was written there is lost); anything else is a failure to read.
fn unopened(e: std::io::Error) -> Unread {
    match e.raw_os_error() {
        Some(libc::ENOENT) => Unread::Missing("the file is missing (deleted)".into()),
        Some(libc::ELOOP) => Unread::Missing("a symbolic link is in its place, which is never followed".into()),
        Some(errno) => Unread::Failed((errno, e.to_string())),
        None => Unread::Failed((libc::EIO, e.to_string())),
    }
}

fn kind_of(kind: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a named pipe (FIFO)"
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "something else"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_piece_is_whole_blocks_and_whole_pages() {
        assert_eq!(piece_for(4096), PIECE);
        assert_eq!(piece_for(512), PIECE);
        assert_eq!(piece_for(8 << 20), 8 << 20, "at least one block");
        let odd = piece_for(1536);
        assert!(odd.is_multiple_of(1536) && odd.is_multiple_of(4096) && odd <= PIECE && odd > PIECE - 12288, "{odd}");
    }
}
