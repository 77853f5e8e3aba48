//! The one function that opens data files: every data file, media file, ingest file and file-set file that an
//! engine reads or writes is opened here, so that how streamcap opens them (direct I/O, O_SYNC, creating only
//! what does not exist) is decided in one place.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Whether an open may create the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Create {
    /// The file must exist.
    No,
    /// The file must not exist yet: streamcap creates it.
    New,
    /// Create it, or empty a file of streamcap's own that is already there (a file-set tree being restarted).
    Truncate,
}

/// How a data file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFor {
    pub write: bool,
    pub create: Create,
    /// O_DIRECT: bypass the page cache.
    pub direct: bool,
    /// O_SYNC: every write is durable when it completes (fio sync=1).
    pub sync: bool,
}

impl OpenFor {
    pub const fn read(direct: bool) -> OpenFor {
        OpenFor { write: false, create: Create::No, direct, sync: false }
    }

    pub const fn write(direct: bool) -> OpenFor {
        OpenFor { write: true, create: Create::No, direct, sync: false }
    }

    pub const fn create(direct: bool) -> OpenFor {
        OpenFor { write: true, create: Create::New, direct, sync: false }
    }
}

/// Opens `path` as `how` says. Reads also open for writing only when asked. A file beneath a directory streamcap
/// owns (a work directory, a file-set tree) is opened through that directory's handle (`owned`): never through
/// a symlink, never outside it, never a file that replaced the one streamcap created.
pub fn open_data_file(path: &Path, how: OpenFor) -> io::Result<File> {
    if let Some(opened) = super::owned::open_registered(path, oflags(how)) {
        return opened;
    }
    let mut options = OpenOptions::new();
    options.read(true).write(how.write || how.create != Create::No);
    match how.create {
        Create::No => {}
        Create::New => {
            options.create_new(true);
        }
        Create::Truncate => {
            options.create(true).truncate(true);
        }
    }
    let flags = if how.direct { libc::O_DIRECT } else { 0 } | if how.sync && how.write { libc::O_SYNC } else { 0 };
    if flags != 0 {
        options.custom_flags(flags);
    }
    options.open(path)
}

/// The open(2) flags of `how`, for opens through a directory handle.
fn oflags(how: OpenFor) -> rustix::fs::OFlags {
    use rustix::fs::OFlags;
    let write = how.write || how.create != Create::No;
    let mut flags = if write { OFlags::RDWR } else { OFlags::RDONLY };
    match how.create {
        Create::No => {}
        Create::New => flags |= OFlags::CREATE | OFlags::EXCL,
        Create::Truncate => flags |= OFlags::CREATE | OFlags::TRUNC,
    }
    if how.direct {
        flags |= OFlags::DIRECT;
    }
    if how.sync && how.write {
        flags |= OFlags::SYNC;
    }
    flags
}
