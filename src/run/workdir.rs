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
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use rustix::fs::OFlags;

use super::owned::{OwnedDir, OwnedError, Registration, register};
use crate::plan::TargetPlan;

/// The file in every work directory that says who made it (and, with `--keep`, that it is to be kept).
pub(super) const MARKER: &str = ".streamcap-run";
pub(super) const KEPT_LINE: &str = "kept";
/// The prefix libfuse's high-level API gives a removed file that is still open (see `remove_dir_after_fuse_releases`).
const FUSE_HIDDEN: &str = ".fuse_hidden";
/// How long the removal waits for FUSE to let go of hidden removed files: its releases come after close(), and a
/// busy machine delays them.
const FUSE_RELEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

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
    #[error("cannot create {path}: {cause}{}", create_hint(cause))]
    Create { path: PathBuf, cause: io::Error },
    #[error(transparent)]
    Owned(#[from] OwnedError),
}

fn create_hint(cause: &io::Error) -> &'static str {
    match cause.kind() {
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
fn parse_run_id(name: &str) -> Option<(&str, u32)> {
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
    /// open of its files goes through the handle too.
    pub fn create(target: &TargetPlan, keep: bool) -> Result<WorkDir, WorkDirError> {
        let dir = target.work_dir.clone().expect("directory targets have a work directory");
        let name = dir.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
        let err = |path: &Path| {
            let path = path.to_path_buf();
            move |cause| WorkDirError::Create { path, cause }
        };
        let base = prepare_base(&target.path)?;
        let handle = base.create_dir(&name)?;
        let marker_path = dir.join(MARKER);
        let create = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL;
        let marker = match handle.open_file(Path::new(MARKER), create | OFlags::APPEND) {
            Ok(marker) => marker,
            Err(e) => {
                let _ = base.remove_dir(&name);
                return Err(err(&marker_path)(e));
            }
        };
        rustix::fs::flock(&marker, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| err(&marker_path)(e.into()))?;
        writeln!(&marker, "streamcap work directory\nhost {}\npid {}", host_label(), std::process::id())
            .map_err(err(&marker_path))?;
        let listing = marker.try_clone().map_err(err(&marker_path))?;
        let mut work = WorkDir {
            dir,
            name,
            files: Vec::new(),
            keep,
            removed: false,
            marker: Some(marker),
            owned: Some(register(handle, Some(listing))),
            base,
        };
        // Only the files of the target's table that streamcap creates (the user's own media files are elsewhere
        // and only read).
        for file in target.files.iter().filter(|f| f.created) {
            let file_name = file.path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
            let owned = work.owned.as_ref().expect("registered until removed");
            let handle = owned.open(Path::new(&file_name), create).map_err(err(&file.path))?;
            work.files.push(file_name);
            handle.set_len(file.size.0).map_err(err(&file.path))?;
        }
        Ok(work)
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Marks the directory kept now rather than at the end (a journaled run: if it is killed, its data and
    /// journal stay for `--verify-only`, and no later run takes them for a killed run's leftovers).
    pub fn keep_from_now(&mut self) -> io::Result<()> {
        self.keep = true;
        match &mut self.marker {
            Some(marker) => writeln!(marker, "{KEPT_LINE}"),
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
        self.remove_dir_after_fuse_releases()?;
        if let Some(parent) = self.dir.parent() {
            // Only succeeds when empty, which is exactly when it should go.
            let _ = fs::remove_dir(parent);
        }
        self.removed = true;
        Ok(())
    }
}

impl WorkDir {
    /// Removes the (by now empty) work directory. On a FUSE filesystem served by libfuse's high-level API (sshfs),
    /// a file unlinked while the daemon still counts it open is renamed to `.fuse_hidden…` instead, and the kernel
    /// sends the RELEASE of a closed file asynchronously, after close() has returned: even a file closed before it
    /// was unlinked can be hidden for a moment, and rmdir then fails with ENOTEMPTY. libfuse unlinks the hidden
    /// file itself once the release arrives, so while every entry left is a `.fuse_hidden…` name, rmdir is tried
    /// again for a bounded time. Those files are not deleted here: their names do not say which file they were
    /// (streamcap never unlinks a file it cannot prove it created), and libfuse removes them anyway.
    fn remove_dir_after_fuse_releases(&self) -> io::Result<()> {
        let deadline = std::time::Instant::now() + FUSE_RELEASE_WAIT;
        loop {
            match self.base.remove_dir(&self.name) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(e)
                    if e.raw_os_error() == Some(libc::ENOTEMPTY)
                        && std::time::Instant::now() < deadline
                        && self.only_fuse_hidden_left() =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                other => return other.map_err(|e| self.naming_what_is_left(e)),
            }
        }
    }

    /// A "Directory not empty" error names what is left in the directory (the first few), so that a failure
    /// says which file stayed.
    fn naming_what_is_left(&self, e: io::Error) -> io::Error {
        if e.raw_os_error() != Some(libc::ENOTEMPTY) {
            return e;
        }
        let names = self.base.open_dir(&self.name).ok().and_then(|d| d.names().ok()).unwrap_or_default();
        let more = names.len().saturating_sub(5);
        let more = if more > 0 { format!(" and {more} more") } else { String::new() };
        let shown: Vec<&str> = names.iter().take(5).map(AsRef::as_ref).collect();
        io::Error::new(e.kind(), format!("{e}; left in it: {}{more}", shown.join(", ")))
    }

    /// Whether the work directory holds nothing but FUSE's hidden removed files (and at least one).
    fn only_fuse_hidden_left(&self) -> bool {
        let names = self.base.open_dir(&self.name).ok().and_then(|d| d.names().ok());
        names.is_some_and(|names| !names.is_empty() && names.iter().all(|n| n.starts_with(FUSE_HIDDEN)))
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// The names a marker lists as created in its directory (`file NAME` lines; plain names only).
fn listed_files(marker: &str) -> Vec<String> {
    marker
        .lines()
        .filter_map(|l| l.strip_prefix("file "))
        .filter(|n| !n.is_empty() && !n.contains('/') && *n != "." && *n != ".." && *n != MARKER)
        .map(str::to_string)
        .collect()
}

/// Names streamcap gave its files before markers listed them: `data.N`, `media-…​.bin`, `ingest-…​.bin`; and the
/// verification manifest of a `--keep --verify` run killed between writing it and marking the directory kept.
fn is_own_name(name: &str) -> bool {
    name == crate::verify::MANIFEST_FILE
        || name == crate::verify::MAP_FILE
        || name.strip_prefix("data.").is_some_and(|n| n.parse::<u32>().is_ok())
        || (["media-", "title-", "ingest-"].iter().any(|p| name.starts_with(p)) && name.ends_with(".bin"))
}

/// What the stale clean-up removed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Stale {
    /// Work directories removed.
    pub removed: Vec<PathBuf>,
    /// Bytes they held (allocated blocks).
    pub freed: u64,
}

/// Removes work directories of this host's streamcap runs that nobody holds (the marker's lock is free: the
/// process that made it is gone, however it died), with everything streamcap made in them: data files, test
/// media, ingest files. Not kept ones, not other hosts', not anything without a marker, not another user's.
pub fn remove_stale(target: &Path) -> Stale {
    let mut stale = Stale::default();
    let Ok(base) = existing_base(target) else { return stale };
    for name in base.names().unwrap_or_default() {
        if name.starts_with(crate::plan::TREE_DIR_PREFIX) && name.ends_with(".lock") {
            super::fileset::remove_orphan_lock(&base, &name);
            continue;
        }
        if name.starts_with(crate::plan::TREE_DIR_PREFIX) {
            if let Some(freed) = super::fileset::remove_abandoned_tree(&base, &name) {
                stale.removed.push(base.path().join(&name));
                stale.freed += freed;
            }
            continue;
        }
        let Some((host, _pid)) = parse_run_id(&name) else { continue };
        if host != host_label() {
            continue;
        }
        let Ok(dir) = base.open_dir(&name) else { continue };
        if let Some(freed) = remove_abandoned(&base, &dir, &name) {
            stale.removed.push(dir.path().to_path_buf());
            stale.freed += freed;
        }
    }
    let _ = fs::remove_dir(base.path());
    stale
}

/// `TARGET/.streamcap` when it exists and passes the checks of `owned` (never created here).
fn existing_base(target: &Path) -> Result<OwnedDir, WorkDirError> {
    let meta = fs::symlink_metadata(target.join(".streamcap"))
        .map_err(|cause| WorkDirError::Create { path: target.join(".streamcap"), cause })?;
    if !meta.is_dir() {
        return Err(WorkDirError::Owned(OwnedError::Unsafe {
            path: target.join(".streamcap"),
            why: "is not a directory".into(),
            fix: "remove it",
        }));
    }
    prepare_base(target)
}

/// Removes an abandoned work directory (its marker unlocked, not kept) and returns the bytes freed; `None` when
/// it is in use or kept. Files streamcap does not know are left, and the directory and marker with them.
fn remove_abandoned(base: &OwnedDir, dir: &OwnedDir, name: &str) -> Option<u64> {
    let marker = dir.open_file(Path::new(MARKER), OFlags::RDONLY).ok()?;
    rustix::fs::flock(&marker, rustix::fs::FlockOperation::NonBlockingLockExclusive).ok()?;
    let mut text = String::new();
    io::Read::read_to_string(&mut (&marker).take(1 << 20), &mut text).ok()?;
    if !text.starts_with("streamcap work directory") || text.lines().any(|l| l == KEPT_LINE) {
        return None;
    }
    let listed = listed_files(&text);
    let mut freed = 0;
    let mut unknown = false;
    for entry in dir.names().ok()? {
        if entry == MARKER {
            continue;
        }
        if listed.contains(&entry) || is_own_name(&entry) {
            freed += dir.allocated(&entry);
            dir.remove_file(&entry).ok()?;
        } else {
            unknown = true;
        }
    }
    if unknown {
        // Stays recognisable (and is tried again): streamcap never deletes a file it does not know as its own.
        return None;
    }
    dir.remove_file(MARKER).ok()?;
    base.remove_dir(name).ok()?;
    Some(freed)
}

#[cfg(test)]
#[path = "workdir_tests.rs"]
mod tests;
