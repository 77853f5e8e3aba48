//! The viewers' side of titles that are playlists (`streams::SegmentedTitle`): each viewer of such a title has
//! a place of its own in the engine's file table, and each of its requests opens the segment's file there
//! (read-only, O_DIRECT where the filesystem takes it; the file before it is closed) and reads it whole in one
//! request, as a web server serves a segment. Over http the segment is named to the engine by its number
//! (`Io::offset`) and the engine sends that segment's pre-built request (`engine::HttpPieces`).
//!
//! Nothing is allocated per request: the paths are C strings made when the worker is set up, and a direct
//! read's pages are rounded around the segment's bytes here rather than copied anywhere.

use std::ffi::CString;
use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::metrics::OpClass;
use crate::run::core::{Ctx, Failure, Io, Role};
use ::streams::{SegmentSource, SegmentedTitle};

/// Direct reads start and end on these boundaries (`TargetFacts::Directory::dio_align` is at most a page).
const PAGE: u64 = 4096;

/// A title's segment files, ready to open.
pub struct TitleFiles {
    pub title: Arc<SegmentedTitle>,
    paths: Vec<PathBuf>,
    c_paths: Vec<CString>,
}

impl TitleFiles {
    /// The files of `title` (its URLs have none: they are fetched by the http engine).
    pub fn new(title: Arc<SegmentedTitle>) -> Result<TitleFiles, String> {
        let mut paths = Vec::new();
        let mut c_paths = Vec::new();
        for source in &title.sources {
            if let SegmentSource::File(path) = source {
                let c = CString::new(path.as_os_str().as_bytes())
                    .map_err(|_| format!("{}: a segment path holds a NUL byte", title.playlist))?;
                paths.push(path.clone());
                c_paths.push(c);
            }
        }
        Ok(TitleFiles { title, paths, c_paths })
    }
}

/// One viewer's place in the file table.
struct Slot {
    files: Arc<TitleFiles>,
    /// The source open there (for messages), and the bytes a read of the current segment must bring.
    open: usize,
    needed: u32,
    len: u32,
}

/// The segmented viewers' places of one scheduler thread, by file-table index.
#[derive(Default)]
pub struct SegmentSlots {
    slots: Vec<Option<Slot>>,
    /// Try O_DIRECT; cleared for good once the filesystem refused it.
    direct: bool,
    remote: bool,
}

impl SegmentSlots {
    pub fn new(direct: bool, remote: bool) -> SegmentSlots {
        SegmentSlots { slots: Vec::new(), direct, remote }
    }

    /// Gives file-table index `index` to a viewer of `files`.
    pub fn assign(&mut self, index: u32, files: Arc<TitleFiles>) {
        let i = index as usize;
        if self.slots.len() <= i {
            self.slots.resize_with(i + 1, || None);
        }
        self.slots[i] = Some(Slot { files, open: 0, needed: 0, len: 0 });
    }

    /// The I/O of segment `segment` for the request `io` (the viewer's place, the segment's offset and bytes):
    /// over http the segment's number; locally the segment's file opened into the viewer's place and its pages
    /// read to the segment's end. `Err(errno)` when the file cannot be opened (recorded as a failed open).
    pub fn prepare(&mut self, ctx: &mut Ctx<'_>, io: Io, segment: u32) -> Result<Io, i32> {
        if self.remote {
            return Ok(Io { offset: u64::from(segment), ..io });
        }
        let slot = self.slots[io.file as usize].as_mut().expect("a segmented viewer has its place");
        let s = slot.files.title.segments[segment as usize];
        let source = s.source as usize;
        let started = Instant::now();
        let opened = open_read(&slot.files.c_paths[source], &mut self.direct);
        slot.open = source;
        match opened {
            Ok(file) => {
                // The file before it closes as it leaves the table.
                let _ = ctx.files.put(io.file, Some(file));
                ctx.record(OpClass::Open, 0, started, Instant::now(), None);
            }
            Err(errno) => {
                let path = &slot.files.paths[source];
                let message = std::io::Error::from_raw_os_error(errno).to_string();
                let failure = Failure { class: OpClass::Open, op: "open", path, offset: 0, len: 0, errno, message };
                ctx.failed(failure);
                return Err(errno);
            }
        }
        let start = s.offset / PAGE * PAGE;
        let end = (s.offset + s.len).div_ceil(PAGE) * PAGE;
        (slot.needed, slot.len) = ((s.offset + s.len - start) as u32, s.len as u32);
        Ok(Io { offset: start, len: (end - start) as u32, role: Role::UntilEof, ..io })
    }

    /// What a local segment read brought, as the viewer counts it: the segment's bytes when the pages read hold
    /// all of it, else what came (a short read: the viewer fails it).
    pub fn result(&self, file: u32, result: Result<u32, i32>) -> Result<u32, i32> {
        match self.slots.get(file as usize).and_then(Option::as_ref) {
            Some(slot) if !self.remote => result.map(|n| if n >= slot.needed { slot.len } else { n }),
            _ => result,
        }
    }

    /// The segment file open in place `file`, for messages.
    pub fn path(&self, file: u32) -> Option<&Path> {
        let slot = self.slots.get(file as usize)?.as_ref()?;
        slot.files.paths.get(slot.open).map(PathBuf::as_path)
    }
}

/// Opens a segment read-only, with O_DIRECT while the filesystem takes it (EINVAL: it does not; buffered from
/// then on, as the plan's "direct I/O where the filesystem allows it" says).
fn open_read(path: &CString, direct: &mut bool) -> Result<File, i32> {
    use rustix::fs::{Mode, OFlags, open};
    let flags = OFlags::RDONLY | OFlags::CLOEXEC;
    if *direct {
        match open(path.as_c_str(), flags | OFlags::DIRECT, Mode::empty()) {
            Ok(fd) => return Ok(File::from(fd)),
            Err(rustix::io::Errno::INVAL) => *direct = false,
            Err(e) => return Err(e.raw_os_error()),
        }
    }
    open(path.as_c_str(), flags, Mode::empty()).map(File::from).map_err(|e| e.raw_os_error())
}
