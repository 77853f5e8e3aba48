//! The work directory: `TARGET/.streamcap/<run id>/`, where a directory target's data files live.
//!
//! streamcap creates the directory and every file in it (O_EXCL: never an existing file), and removes them when
//! the run ends — also on error, panic or Ctrl-C, through `Drop` — unless `--keep` was given. Work directories
//! left by a run that was killed outright (a second Ctrl-C, SIGKILL) are removed by the next run on the same
//! host, with a notice. A run holds an exclusive `flock` on its marker file for as long as it lives, and the
//! kernel drops the lock when the process dies however it dies: a directory is abandoned exactly when its lock
//! can be taken. (Process ids would not do: a renamed binary, or a run in another pid namespace sharing the
//! volume, would look dead.) Other hosts' directories are never touched, since their locks may not be visible
//! over a network filesystem.
//!
//! What streamcap will not do, because each would put data or deletions somewhere the user did not choose:
//! follow `.streamcap` when it is a symlink (the data files would land on another device, and every figure would
//! describe the wrong disk), use it when it lives on another filesystem than TARGET, delete a directory that
//! lacks its marker file or was kept with `--keep`, or delete anything but its own marker, `data.N` and
//! verification manifest files.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use rustix::fs::OFlags;

use super::fuse_release;
use super::owned::{OwnedDir, OwnedError, Registration, register};
use crate::plan::{FilePlan, TargetPlan};

/// The file in every work directory that says who made it (and, with `--keep`, that it is to be kept).
pub(super) const MARKER: &str = ".streamcap-run";
pub(super) const KEPT_LINE: &str = "kept";

pub struct WorkDir {
    dir: PathBuf,
    /// The directory's name in `.streamcap`.
    name: String,
    /// Names of the data files created with it.
    files: Vec<String>,
    keep: bool,
    removed: bool,
    /// The marker, open and exclusively locked for the life of the run (closed just before it is removed).
    marker: Option<std::fs::File>,
    /// The directory's handle, registered: every open of its files goes through it (dropped with the marker,
    /// since it holds a copy of it).
    owned: Option<Registration>,
    /// `TARGET/.streamcap`, to remove the work directory from.
    base: OwnedDir,
}

#[derive(Debug, thiserror::Error)]
pub enum WorkDirError {
    #[error("cannot create {path}: {}{}", crate::limits::explain(cause), create_hint(cause))]
    Create { path: PathBuf, cause: io::Error },
    #[error(transparent)]
    Owned(#[from] OwnedError),
}

/// The error for a failure to create `path`.
fn create_error(path: &Path) -> impl FnOnce(io::Error) -> WorkDirError + use<> {
    let path = path.to_path_buf();
    move |cause| WorkDirError::Create { path, cause }
}

fn create_hint(cause: &io::Error) -> &'static str {
    match cause.kind() {
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => {
            "; the filesystem is full (or the quota used up): free space on it, or choose another target"
        }
        io::ErrorKind::PermissionDenied => {
            "; streamcap creates its data files under TARGET/.streamcap, so it needs write permission in the \
             target directory: choose one you can write to, or run as a user who can"
        }
        io::ErrorKind::ReadOnlyFilesystem => {
            "; the filesystem is read-only: test it with a read mode on a file or device"
        }
        _ => "",
    }
}

/// The name of this process's work directory: `run-<host>-<pid>-<unix seconds>`.
pub fn run_id() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    format!("run-{}-{}-{secs}", host_label(), std::process::id())
}

/// The host name with anything but letters, digits and dots replaced, so it is safe in a file name and cannot
/// contain the `-` that separates the fields.
pub(super) fn host_label() -> String {
    let name = rustix::system::uname().nodename().to_string_lossy().to_string();
    let label: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' { c } else { '_' }).collect();
    if label.is_empty() { "unknown".into() } else { label }
}

/// (host, pid) of a work directory name made by [`run_id`].
pub(super) fn parse_run_id(name: &str) -> Option<(&str, u32)> {
    let mut fields = name.strip_prefix("run-")?.split('-');
    let host = fields.next()?;
    let pid = fields.next()?.parse().ok()?;
    Some((host, pid))
}

/// `TARGET/.streamcap`, created when missing: a real directory on TARGET's filesystem, owned by this user and
/// not writable by others (see `owned`).
pub(super) fn prepare_base(target: &Path) -> Result<OwnedDir, WorkDirError> {
    OwnedDir::open_base(target).map_err(WorkDirError::from)
}

impl WorkDir {
    /// Creates the work directory, its marker and its (empty, sparse) data files, all through the directory's
    /// handle (never by a path that could have been swapped), and registers the directory so that every later
    /// open of its files goes through the handle too. The marker — who made the directory and every file it will
    /// hold — is written and flushed to the disk (the file, the directory and `.streamcap`) before any data file
    /// exists, so a crash at any moment leaves data files only beside a marker that lists them. Whatever fails,
    /// nothing is left behind (`.streamcap` included, when this made it).
    pub fn create(target: &TargetPlan, keep: bool) -> Result<WorkDir, WorkDirError> {
        let dir = target.work_dir.clone().expect("directory targets have a work directory");
        let name = dir.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
        let planned: Vec<&FilePlan> = target.files.iter().filter(|f| f.created).collect();
        let mut tries = 0;
        let mut work = loop {
            tries += 1;
            // Opened again on every try: the clean-up that removed the directory removes `.streamcap` with it
            // when that is left empty.
            let base = match prepare_base(&target.path) {
                Err(WorkDirError::Owned(OwnedError::Io { cause, .. }))
                    if cause.kind() == io::ErrorKind::NotFound && tries < 50 =>
                {
                    continue;
                }
                other => other?,
            };
            match WorkDir::start(&base, &dir, &name, keep) {
                Ok(Some(work)) => break work,
                // A later run took the directory, in the moment between its making and the marker's lock, for
                // one a crash left, and removed it: make it again.
                Ok(None) if tries < 50 => std::thread::sleep(std::time::Duration::from_millis(20)),
                Ok(None) => {
                    let cause = io::Error::other("it was removed again and again while it was being made");
                    return Err(WorkDirError::Create { path: dir, cause });
                }
                Err(e) => {
                    // Only succeeds when empty: what this call made, and nothing of anyone else's.
                    let _ = fs::remove_dir(base.path());
                    return Err(e);
                }
            }
        };
        work.write_marker(&planned)?;
        for file in planned {
            let file_name = file.path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
            let owned = work.owned.as_ref().expect("registered until removed");
            let create = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL;
            let handle = owned.open(Path::new(&file_name), create).map_err(create_error(&file.path))?;
            work.files.push(file_name);
            handle.set_len(file.size.0).map_err(create_error(&file.path))?;
        }
        Ok(work)
    }

    /// Makes the directory and its marker, locked: `None` when the marker was removed before the lock was taken
    /// (see `create`). From here on, dropping the `WorkDir` removes what was made.
    fn start(base: &OwnedDir, dir: &Path, name: &str, keep: bool) -> Result<Option<WorkDir>, WorkDirError> {
        let handle = match base.create_dir(name) {
            Ok(handle) => handle,
            // Still there from the try before, or gone (with `.streamcap`) before it could be opened.
            Err(OwnedError::Io { cause, .. })
                if matches!(cause.kind(), io::ErrorKind::AlreadyExists | io::ErrorKind::NotFound) =>
            {
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        };
        let marker_path = dir.join(MARKER);
        let create = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::APPEND;
        let marker = match handle.open_file(Path::new(MARKER), create) {
            Ok(marker) => marker,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                let _ = base.remove_dir(name);
                return Err(create_error(&marker_path)(e));
            }
        };
        let listing = marker.try_clone().map_err(create_error(&marker_path))?;
        let work = WorkDir {
            dir: dir.to_path_buf(),
            name: name.to_string(),
            files: Vec::new(),
            keep,
            removed: false,
            marker: Some(marker),
            owned: Some(register(handle, Some(listing))),
            base: base.try_clone().map_err(WorkDirError::from)?,
        };
        let marker = work.marker.as_ref().expect("just set");
        rustix::fs::flock(marker, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| create_error(&marker_path)(e.into()))?;
        let mine = rustix::fs::fstat(marker).map_err(|e| create_error(&marker_path)(e.into()))?;
        let dir_handle = work.owned.as_ref().expect("just set").dir();
        if dir_handle.identity_of(MARKER) != Some((mine.st_dev, mine.st_ino)) {
            let mut gone = work;
            // Nothing of ours is left to remove; the directory itself may still be there.
            gone.removed = true;
            gone.marker = None;
            gone.owned = None;
            let _ = gone.base.remove_dir(&gone.name);
            return Ok(None);
        }
        Ok(Some(work))
    }

    /// Writes who made the directory and every file it will hold into the marker, and flushes the marker, the
    /// directory and `.streamcap` to the disk.
    fn write_marker(&mut self, planned: &[&FilePlan]) -> Result<(), WorkDirError> {
        let marker_path = self.dir.join(MARKER);
        let mut text = format!("streamcap work directory\nhost {}\npid {}\n", host_label(), std::process::id());
        let mut names = Vec::new();
        for file in planned {
            let name = file.path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
            text.push_str(&format!("file {name}\n"));
            names.push(PathBuf::from(name));
        }
        let marker = self.marker.as_mut().expect("set until removed");
        marker.write_all(text.as_bytes()).and_then(|()| marker.sync_all()).map_err(create_error(&marker_path))?;
        let owned = self.owned.as_ref().expect("registered until removed");
        owned.listed(names);
        owned.dir().sync().map_err(create_error(&self.dir))?;
        self.base.sync().map_err(create_error(self.base.path()))
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The directory's handle, until it is removed.
    pub fn dir(&self) -> Option<&OwnedDir> {
        self.owned.as_ref().map(Registration::dir)
    }

    /// Marks the directory kept now rather than at the end (a journaled run: if it is killed, its data and
    /// journal stay for `--verify-only`, and no later run takes them for a killed run's leftovers).
    pub fn keep_from_now(&mut self) -> io::Result<()> {
        self.keep = true;
        match &mut self.marker {
            // On the disk before the run writes anything it would regret losing.
            Some(marker) => writeln!(marker, "{KEPT_LINE}").and_then(|()| marker.sync_data()),
            None => Ok(()),
        }
    }

    /// Removes the data files, the marker and the directory (and `.streamcap` when it is left empty), through
    /// the directory's handle; with `--keep`, marks the directory as kept instead, so no later run removes it.
    /// Idempotent.
    pub fn remove(&mut self) -> io::Result<()> {
        if self.removed {
            return Ok(());
        }
        if self.keep {
            if let Some(marker) = &mut self.marker {
                writeln!(marker, "{KEPT_LINE}")?;
            }
            self.removed = true;
            return Ok(());
        }
        // Files created here by others of streamcap's writers (ingest) are listed in the marker too.
        let listed = listed_files(&std::fs::read_to_string(self.dir.join(MARKER)).unwrap_or_default());
        let Some(owned) = &self.owned else { return Ok(()) };
        let dir = owned.dir();
        for name in self.files.iter().chain(&listed).map(String::as_str) {
            match dir.remove_file(name) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        // The marker is closed (both copies, and with them the lock) before it is removed: a FUSE filesystem
        // such as sshfs renames a removed file that is still open to `.fuse_hidden…` until it is closed, and the
        // directory would not be empty (FUSE's release of a closed file can still come late: see
        // `remove_dir_after_fuse_releases`). Only the marker is left by now, so a run that takes the directory for
        // abandoned in between removes nothing but what this one is about to.
        let dir = self.base.open_dir(&self.name).map_err(io::Error::other)?;
        self.marker = None;
        self.owned = None;
        match dir.remove_file(MARKER) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        drop(dir);
        remove_dir_after_fuse_releases(&self.base, &self.name)?;
        if let Some(parent) = self.dir.parent() {
            // Only succeeds when empty, which is exactly when it should go (another run's hidden file may be
            // on its way out).
            let _ = fuse_release::remove_dir(parent);
        }
        self.removed = true;
        Ok(())
    }
}

/// Removes the (by now empty) directory `name` of `base`, waiting out FUSE's hidden removed files (sshfs: see
/// `fuse_release`). A directory already gone is fine; one that stays non-empty says what is left in it.
pub(super) fn remove_dir_after_fuse_releases(base: &OwnedDir, name: &str) -> io::Result<()> {
    let path = base.path().join(name);
    match fuse_release::retry_while_hidden(&path, || base.remove_dir(name)) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other.map_err(|e| naming_what_is_left(base, name, e)),
    }
}

/// A "Directory not empty" error names what is left in the directory (the first few), so that a failure says
/// which file stayed.
fn naming_what_is_left(base: &OwnedDir, name: &str, e: io::Error) -> io::Error {
    if e.raw_os_error() != Some(libc::ENOTEMPTY) {
        return e;
    }
    let names = base.open_dir(name).ok().and_then(|d| d.names().ok()).unwrap_or_default();
    let more = names.len().saturating_sub(5);
    let more = if more > 0 { format!(" and {more} more") } else { String::new() };
    let shown: Vec<&str> = names.iter().take(5).map(AsRef::as_ref).collect();
    io::Error::new(e.kind(), format!("{e}; left in it: {}{more}", shown.join(", ")))
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// The names a marker lists as created in its directory (`file NAME` lines; plain names only).
pub(super) fn listed_files(marker: &str) -> Vec<String> {
    marker
        .lines()
        .filter_map(|l| l.strip_prefix("file "))
        .filter(|n| !n.is_empty() && !n.contains('/') && *n != "." && *n != ".." && *n != MARKER)
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
#[path = "workdir_tests.rs"]
mod tests;
