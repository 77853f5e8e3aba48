//! The library of titles kept between runs, on disk: `TARGET/.streamcap/library/`, the titles
//! (`title-NNNN.bin`, as a run wrote them in its work directory and moved them there) and a marker,
//! `.streamcap-library`, that says what it holds. `plan::kept_library` decides what a run does with it; this
//! finds it (for the facts), holds it while a run reads it, removes it, and keeps a run's titles in it.
//!
//! Locks are `flock`s on the marker, dropped by the kernel however a process ends: a run that reads the library
//! holds a shared lock for as long as it lives; removing it or moving titles in takes the exclusive lock without
//! waiting, so a library another run reads is never touched. The marker says `complete` only once every title
//! is in place and on the disk: a library without it (a run killed while it moved its titles in) is removed by
//! the next run's stale clean-up (`remove_incomplete`) when nobody holds it. Only the marker and names of titles
//! are ever removed from the directory, and the directory passes the checks of `owned` (this user's, not
//! writable by others, not a symlink) before anything in it is read or removed.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use rustix::fs::{FlockOperation, OFlags, flock};

use super::RunObserver;
use super::owned::{OwnedDir, Registration, register};
use super::workdir::host_label;
use crate::plan::{KEPT_LIBRARY_DIR, KeptLibrary, LibraryKeeping, LibraryUse, TargetPlan, is_title};

/// The marker in the kept library's directory.
pub const LIBRARY_MARKER: &str = ".streamcap-library";
const COMPLETE: &str = "complete";
/// A marker larger than this is not one streamcap wrote.
const MARKER_CAP: u64 = 4096;

/// What a marker says.
#[derive(Debug, Default, PartialEq, Eq)]
struct Marker {
    titles: u32,
    title_bytes: u64,
    written: Option<u64>,
    complete: bool,
}

impl Marker {
    fn parse(text: &str) -> Marker {
        let mut marker = Marker::default();
        for line in text.lines() {
            let mut words = line.splitn(2, ' ');
            match (words.next(), words.next()) {
                (Some("titles"), Some(n)) => marker.titles = n.parse().unwrap_or(0),
                (Some("title-bytes"), Some(n)) => marker.title_bytes = n.parse().unwrap_or(0),
                (Some("written"), Some(n)) => marker.written = n.parse().ok(),
                (Some(COMPLETE), None) => marker.complete = true,
                _ => {}
            }
        }
        marker
    }

    fn text(&self) -> String {
        let mut text = format!(
            "streamcap library\nversion 1\nhost {}\ntitles {}\ntitle-bytes {}\n",
            host_label(),
            self.titles,
            self.title_bytes
        );
        if let Some(written) = self.written {
            text.push_str(&format!("written {written}\n"));
        }
        if self.complete {
            text.push_str(&format!("{COMPLETE}\n"));
        }
        text
    }
}

/// `TARGET/.streamcap/library`, if it exists and passes the checks of `owned` (never created here).
fn open_library_dir(target: &Path) -> Option<OwnedDir> {
    let base = target.join(".streamcap");
    std::fs::symlink_metadata(&base).ok().filter(|m| m.is_dir())?;
    OwnedDir::open_existing(&base).ok()?.open_dir(KEPT_LIBRARY_DIR).ok()
}

fn read_marker(file: &mut File) -> io::Result<Marker> {
    let mut text = String::new();
    file.take(MARKER_CAP).read_to_string(&mut text)?;
    Ok(Marker::parse(&text))
}

/// The complete library kept under `target`, if there is one: its marker says `complete`, and every title is a
/// regular file of at least the marker's title size. `in_use`: another run holds its lock.
pub fn find(target: &Path) -> Option<KeptLibrary> {
    let dir = open_library_dir(target)?;
    let mut marker_file = dir.open_file(Path::new(LIBRARY_MARKER), OFlags::RDONLY).ok()?;
    let marker = read_marker(&mut marker_file).ok()?;
    if !marker.complete || marker.titles == 0 || marker.title_bytes == 0 {
        return None;
    }
    for n in 0..marker.titles {
        let title = dir.open_file(&PathBuf::from(crate::plan::title_name(n)), OFlags::RDONLY).ok()?;
        let meta = title.metadata().ok()?;
        if !meta.is_file() || meta.len() < marker.title_bytes {
            return None;
        }
    }
    let in_use = flock(&marker_file, FlockOperation::NonBlockingLockExclusive).is_err();
    Some(KeptLibrary {
        dir: dir.path().to_path_buf(),
        titles: marker.titles,
        title_bytes: marker.title_bytes,
        written: marker.written,
        in_use,
    })
}

/// A kept library this run reads: its shared lock, and its directory registered so that every open of a title
/// goes beneath its handle, following no symlink.
pub struct LibraryHold {
    marker: File,
    dir: OwnedDir,
    _registration: Registration,
}

/// Why the kept library cannot be used as planned.
#[derive(Debug, thiserror::Error)]
#[error("the library kept in {dir}: {why}")]
pub struct LibraryError {
    pub dir: PathBuf,
    pub why: String,
}

impl LibraryError {
    fn new(dir: &Path, why: impl Into<String>) -> LibraryError {
        LibraryError { dir: dir.to_path_buf(), why: why.into() }
    }
}

/// Takes a lock on `marker`, trying for up to `patience` (a run moving its titles in holds the exclusive lock
/// for a moment).
fn lock_within(marker: &File, operation: FlockOperation, patience: Duration) -> bool {
    let started = Instant::now();
    loop {
        match flock(marker, operation) {
            Ok(()) => return true,
            Err(_) if started.elapsed() < patience => std::thread::sleep(Duration::from_millis(50)),
            Err(_) => return false,
        }
    }
}

/// Holds the kept library `keeping` names for reading: shared lock, and the marker still saying what the plan
/// read (another run may have replaced it since).
pub fn hold(keeping: &LibraryKeeping) -> Result<LibraryHold, LibraryError> {
    let gone = || LibraryError::new(&keeping.dir, "it is gone since the run was planned: run again");
    let dir = OwnedDir::open_existing(&keeping.dir).map_err(|e| LibraryError::new(&keeping.dir, e.to_string()))?;
    let mut marker = dir.open_file(Path::new(LIBRARY_MARKER), OFlags::RDONLY).map_err(|_| gone())?;
    if !lock_within(&marker, FlockOperation::NonBlockingLockShared, Duration::from_secs(10)) {
        return Err(LibraryError::new(&keeping.dir, "another run is replacing it: run again when it is done"));
    }
    // A run that replaced it may have removed it while this one waited for the lock: the marker locked must
    // still be the one in the directory.
    let locked = rustix::fs::fstat(&marker).map_err(|_| gone())?;
    if dir.identity_of(LIBRARY_MARKER) != Some((locked.st_dev, locked.st_ino)) {
        return Err(gone());
    }
    let found = read_marker(&mut marker).map_err(|_| gone())?;
    if !found.complete || (found.titles, found.title_bytes) != (keeping.titles, keeping.title_bytes) {
        return Err(LibraryError::new(&keeping.dir, "another run replaced it since this run was planned: run again"));
    }
    let registration = register(dir.try_clone().map_err(|e| LibraryError::new(&keeping.dir, e.to_string()))?, None);
    Ok(LibraryHold { marker, dir, _registration: registration })
}

impl LibraryHold {
    /// Removes the library this run read (`--remove-library`), unless another run reads it too.
    pub fn remove(self) -> Result<u64, LibraryError> {
        if flock(&self.marker, FlockOperation::NonBlockingLockExclusive).is_err() {
            return Err(LibraryError::new(self.dir.path(), "another run reads it: it stays"));
        }
        remove_contents(&self.dir).map_err(|e| LibraryError::new(self.dir.path(), e.to_string()))
    }
}

/// Removes the titles and the marker of the library directory `dir`, then the directory (when only they were
/// in it) and `.streamcap` (when that is left empty); the caller holds the exclusive lock. Returns the bytes
/// the titles held.
fn remove_contents(dir: &OwnedDir) -> io::Result<u64> {
    let freed = remove_titles(dir)?;
    dir.remove_file(LIBRARY_MARKER).or_else(|e| if e.kind() == io::ErrorKind::NotFound { Ok(()) } else { Err(e) })?;
    // Both only succeed when empty: a file someone else put there stays, with its directory.
    let _ = super::fuse_release::remove_dir(dir.path());
    if let Some(base) = dir.path().parent() {
        let _ = super::fuse_release::remove_dir(base);
    }
    Ok(freed)
}

/// Removes the library kept under `target` that this run replaces, before it writes its own. `Ok(false)`:
/// another run took it meanwhile and it stays.
pub fn remove_kept(target: &Path) -> Result<bool, LibraryError> {
    let Some(dir) = open_library_dir(target) else { return Ok(true) };
    let Ok(marker) = dir.open_file(Path::new(LIBRARY_MARKER), OFlags::RDONLY) else { return Ok(true) };
    if flock(&marker, FlockOperation::NonBlockingLockExclusive).is_err() {
        return Ok(false);
    }
    remove_contents(&dir).map(|_| true).map_err(|e| LibraryError::new(dir.path(), e.to_string()))
}

/// Moves this run's titles (`names`, in order, from its work directory `from`) into the kept library's
/// directory under `target` and marks it complete: the next run reads them. Refused, leaving the titles where
/// they are, when another run holds a library there.
pub fn keep(target: &Path, from: &OwnedDir, names: &[String], title_bytes: u64) -> Result<PathBuf, LibraryError> {
    let base = OwnedDir::open_base(target).map_err(|e| LibraryError::new(&target.join(".streamcap"), e.to_string()))?;
    let path = base.path().join(KEPT_LIBRARY_DIR);
    let fail = |e: io::Error| LibraryError::new(&path, e.to_string());
    let dir = match base.create_dir(KEPT_LIBRARY_DIR) {
        Ok(dir) => dir,
        Err(_) => base.open_dir(KEPT_LIBRARY_DIR).map_err(|e| LibraryError::new(&path, e.to_string()))?,
    };
    let mut marker = dir.open_file(Path::new(LIBRARY_MARKER), OFlags::RDWR | OFlags::CREATE).map_err(fail)?;
    if flock(&marker, FlockOperation::NonBlockingLockExclusive).is_err() {
        return Err(LibraryError::new(&path, "another run holds it: this run's library is not kept"));
    }
    let mut state = Marker { titles: names.len() as u32, title_bytes, written: None, complete: false };
    rewrite(&mut marker, &state).map_err(fail)?;
    // What an earlier library left (a run that replaced nothing, or a library only partly kept).
    remove_titles(&dir).map_err(fail)?;
    let moved = names.iter().try_for_each(|name| from.rename_into(name, &dir));
    if let Err(e) = moved.and_then(|()| dir.sync()).and_then(|()| from.sync()) {
        let _ = remove_contents(&dir);
        return Err(fail(e));
    }
    state.written = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).ok().map(|d| d.as_secs());
    state.complete = true;
    rewrite(&mut marker, &state).and_then(|()| dir.sync()).map_err(fail)?;
    Ok(path)
}

/// Removes the titles (and only the titles) of the library directory `dir`; returns the bytes they held.
fn remove_titles(dir: &OwnedDir) -> io::Result<u64> {
    let mut freed = 0;
    for name in dir.names()?.into_iter().filter(|n| is_title(Path::new(n))) {
        freed += dir.allocated(&name);
        dir.remove_file(&name)?;
    }
    Ok(freed)
}

/// Replaces the marker's text with `state`'s and flushes it to the disk.
fn rewrite(marker: &mut File, state: &Marker) -> io::Result<()> {
    use std::io::Seek;
    marker.set_len(0)?;
    marker.seek(io::SeekFrom::Start(0))?;
    marker.write_all(state.text().as_bytes())?;
    marker.sync_all()
}

/// The stale clean-up's part: removes a library under `base` (`TARGET/.streamcap`) that is not complete and
/// that nobody holds (a run killed while it moved its titles in). Returns the directory and the bytes freed.
pub(super) fn remove_incomplete(base: &OwnedDir) -> Option<(PathBuf, u64)> {
    let dir = base.open_dir(KEPT_LIBRARY_DIR).ok()?;
    // No marker at all: a crash between making the directory and its marker; only titles can be in it.
    let mut marker = dir.open_file(Path::new(LIBRARY_MARKER), OFlags::RDONLY).ok();
    if let Some(file) = marker.as_mut() {
        flock(&*file, FlockOperation::NonBlockingLockExclusive).ok()?;
        if read_marker(file).is_ok_and(|m| m.complete) {
            return None;
        }
    }
    let freed = remove_contents(&dir).ok()?;
    drop(marker);
    Some((dir.path().to_path_buf(), freed))
}

/// What a run does with the kept library, from its start to its end (`TargetPlan::library`).
pub(super) enum Keeper {
    /// No kept library involved, or nothing left to do.
    Nothing,
    /// Reading the kept library; `remove`: it goes at the end (`--remove-library`).
    Reading { hold: LibraryHold, remove: bool },
    /// This run's titles go to the kept library at the end, if they were all written.
    Keeping { title_bytes: u64 },
}

impl Keeper {
    /// Holds the kept library the run reads, or removes the one it replaces (a notice when another run reads it
    /// meanwhile: then this run's library is not kept).
    pub fn start(target: &TargetPlan, observer: &mut dyn RunObserver) -> Result<Keeper, LibraryError> {
        let Some(keeping) = &target.library else { return Ok(Keeper::Nothing) };
        match keeping.how {
            LibraryUse::Reuse { .. } => Ok(Keeper::Reading { hold: hold(keeping)?, remove: !keeping.keep }),
            LibraryUse::Write { replace } => {
                if replace && !remove_kept(&target.path)? {
                    observer.notice(&format!(
                        "the library kept in {} is being read by another run: it stays, and this run's is not kept",
                        keeping.dir.display()
                    ));
                    return Ok(Keeper::Nothing);
                }
                Ok(if keeping.keep { Keeper::Keeping { title_bytes: keeping.title_bytes } } else { Keeper::Nothing })
            }
        }
    }

    /// At the end of the run (also an interrupted one), before the work directory `work_dir` goes: keeps this
    /// run's titles when every one was written (`filled`, by file of the table), or removes the library it read
    /// when asked; what happened, in words. Idempotent.
    pub fn finish(&mut self, target: &TargetPlan, work_dir: Option<&OwnedDir>, filled: &[bool]) -> Option<String> {
        let titles: Vec<usize> =
            (0..target.files.len()).filter(|&i| target.files[i].created && is_title(&target.files[i].path)).collect();
        let written = titles.iter().all(|&i| filled[i]);
        let names: Vec<String> = titles
            .iter()
            .filter_map(|&i| target.files[i].path.file_name().map(|n| n.to_string_lossy().to_string()))
            .collect();
        match std::mem::replace(self, Keeper::Nothing) {
            Keeper::Nothing => None,
            Keeper::Reading { hold, remove: false } => {
                drop(hold);
                None
            }
            Keeper::Reading { hold, remove: true } => Some(match hold.remove() {
                Ok(freed) => {
                    format!("removed the kept library ({}), as --remove-library asks", crate::units::Bytes(freed))
                }
                Err(e) => e.to_string(),
            }),
            Keeper::Keeping { .. } if !written || names.is_empty() => None,
            Keeper::Keeping { title_bytes } => {
                let from = work_dir?;
                Some(match keep(&target.path, from, &names, title_bytes) {
                    Ok(dir) => format!(
                        "the library ({} in {} titles) is kept in {} for the next run: runs on this target read \
                         the same titles and compare (--fresh-library writes a new one, --remove-library removes it)",
                        crate::units::Bytes(title_bytes * names.len() as u64),
                        names.len(),
                        dir.display()
                    ),
                    Err(e) => format!("{e}; it was removed with the run's other files"),
                })
            }
        }
    }
}

#[cfg(test)]
#[path = "library_store_tests.rs"]
mod tests;
