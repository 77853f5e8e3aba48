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

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::plan::TargetPlan;

/// The file in every work directory that says who made it (and, with `--keep`, that it is to be kept).
pub(super) const MARKER: &str = ".streamcap-run";
pub(super) const KEPT_LINE: &str = "kept";

pub struct WorkDir {
    dir: PathBuf,
    files: Vec<PathBuf>,
    keep: bool,
    removed: bool,
    /// The marker, open and exclusively locked for the life of the run.
    marker: std::fs::File,
}

#[derive(Debug, thiserror::Error)]
pub enum WorkDirError {
    #[error("cannot create {path}: {cause}{}", create_hint(cause))]
    Create { path: PathBuf, cause: io::Error },
    #[error(
        "{path} {why}; streamcap keeps its data in a directory of its own there: remove it, or choose another target"
    )]
    Unsafe { path: PathBuf, why: &'static str },
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
fn host_label() -> String {
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

/// Makes sure `TARGET/.streamcap` is a real directory on TARGET's filesystem, creating it if needed.
pub(super) fn prepare_base(target: &Path, base: &Path) -> Result<(), WorkDirError> {
    let unsafe_base = |why| WorkDirError::Unsafe { path: base.to_path_buf(), why };
    let create = |cause| WorkDirError::Create { path: base.to_path_buf(), cause };
    let meta = match fs::symlink_metadata(base) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => match fs::create_dir(base) {
            Ok(()) => return Ok(()),
            // Another streamcap run created it a moment ago: check what is there now.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => fs::symlink_metadata(base).map_err(create)?,
            Err(e) => return Err(create(e)),
        },
        Err(e) => return Err(create(e)),
    };
    if meta.file_type().is_symlink() {
        return Err(unsafe_base("is a symbolic link"));
    }
    if !meta.is_dir() {
        return Err(unsafe_base("exists and is not a directory"));
    }
    let target_dev = fs::metadata(target).map_err(create)?.dev();
    if meta.dev() != target_dev {
        return Err(unsafe_base("is on another filesystem than the target (a mount point?)"));
    }
    Ok(())
}

impl WorkDir {
    /// Creates the work directory, its marker and its (empty, sparse) data files — the files of the target's
    /// table that streamcap creates (the user's own media files are elsewhere and only read).
    pub fn create(target: &TargetPlan, keep: bool) -> Result<WorkDir, WorkDirError> {
        let dir = target.work_dir.clone().expect("directory targets have a work directory");
        let err = |path: &Path| {
            let path = path.to_path_buf();
            move |cause| WorkDirError::Create { path, cause }
        };
        let base = dir.parent().expect("the work directory sits in TARGET/.streamcap");
        prepare_base(&target.path, base)?;
        fs::create_dir(&dir).map_err(err(&dir))?;
        let marker_path = dir.join(MARKER);
        let marker = match OpenOptions::new().write(true).create_new(true).open(&marker_path) {
            Ok(marker) => marker,
            Err(e) => {
                let _ = fs::remove_dir(&dir);
                return Err(err(&marker_path)(e));
            }
        };
        let mut work = WorkDir { dir, files: Vec::new(), keep, removed: false, marker };
        rustix::fs::flock(&work.marker, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| err(&marker_path)(e.into()))?;
        writeln!(work.marker, "streamcap work directory\nhost {}\npid {}", host_label(), std::process::id())
            .map_err(err(&marker_path))?;
        for file in target.files.iter().filter(|f| f.created) {
            let handle = OpenOptions::new().write(true).create_new(true).open(&file.path).map_err(err(&file.path))?;
            work.files.push(file.path.clone());
            handle.set_len(file.size.0).map_err(err(&file.path))?;
        }
        Ok(work)
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Removes the data files, the marker and the directory (and `.streamcap` when it is left empty); with
    /// `--keep`, marks the directory as kept instead, so no later run removes it. Idempotent.
    pub fn remove(&mut self) -> io::Result<()> {
        if self.removed {
            return Ok(());
        }
        if self.keep {
            writeln!(self.marker, "{KEPT_LINE}")?;
            self.removed = true;
            return Ok(());
        }
        for file in self.files.iter().chain([&self.dir.join(MARKER)]) {
            match fs::remove_file(file) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        match fs::remove_dir(&self.dir) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        if let Some(parent) = self.dir.parent() {
            // Only succeeds when empty, which is exactly when it should go.
            let _ = fs::remove_dir(parent);
        }
        self.removed = true;
        Ok(())
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// Removes work directories of this host's streamcap runs whose process is gone (not kept ones, not other
/// hosts', not anything without a marker). Returns what was removed.
pub fn remove_stale(target: &Path) -> Vec<PathBuf> {
    let base = target.join(".streamcap");
    if base_is_usable(target, &base).is_none() {
        return Vec::new();
    }
    let Ok(entries) = fs::read_dir(&base) else { return Vec::new() };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some((host, _pid)) = parse_run_id(&name) else { continue };
        if host != host_label() {
            continue;
        }
        let dir = entry.path();
        if is_abandoned_work_dir(&dir) && remove_own_files(&dir).is_ok() {
            removed.push(dir);
        }
    }
    let _ = fs::remove_dir(&base);
    removed
}

/// `Some(())` when `base` exists as a real directory on the target's filesystem.
fn base_is_usable(target: &Path, base: &Path) -> Option<()> {
    let meta = fs::symlink_metadata(base).ok()?;
    let same_fs = fs::metadata(target).ok()?.dev() == meta.dev();
    (meta.is_dir() && !meta.file_type().is_symlink() && same_fs).then_some(())
}

/// A real directory (not a symlink) whose marker nobody holds locked and does not say "kept".
fn is_abandoned_work_dir(dir: &Path) -> bool {
    let is_dir = fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir() && !m.file_type().is_symlink());
    let marker = dir.join(MARKER);
    let unlocked = fs::File::open(&marker)
        .is_ok_and(|file| rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_ok());
    let text = fs::read_to_string(&marker);
    is_dir
        && unlocked
        && text.is_ok_and(|t| t.starts_with("streamcap work directory") && !t.lines().any(|l| l == KEPT_LINE))
}

/// Removes the marker and `data.N` files, then the directory itself, which fails (leaving it) if anything else
/// is in there: streamcap never deletes a file it does not recognise as its own.
fn remove_own_files(dir: &Path) -> io::Result<()> {
    for entry in fs::read_dir(dir)?.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        // The verification manifest of a `--keep --verify` run killed between writing it and marking the
        // directory kept is streamcap's too.
        let verify = name == crate::verify::MANIFEST_FILE || name == crate::verify::MAP_FILE;
        let ours = name == MARKER || verify || name.strip_prefix("data.").is_some_and(|n| n.parse::<u32>().is_ok());
        if ours {
            fs::remove_file(entry.path())?;
        }
    }
    fs::remove_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{FilePlan, TargetKind};
    use crate::units::Bytes;

    fn target(root: &Path) -> TargetPlan {
        let dir = root.join(".streamcap").join("run-test");
        TargetPlan {
            kind: TargetKind::Directory,
            path: root.to_path_buf(),
            work_dir: Some(dir.clone()),
            files: (0..2)
                .map(|i| FilePlan { path: dir.join(format!("data.{i}")), size: Bytes::mib(1), created: true })
                .collect(),
            writes_allowed: true,
            memory_backed: None,
        }
    }

    #[test]
    fn creates_sized_files_and_removes_everything() {
        let root = tempfile::tempdir().unwrap();
        let mut work = WorkDir::create(&target(root.path()), false).unwrap();
        assert_eq!(fs::metadata(work.path().join("data.1")).unwrap().len(), 1 << 20);
        work.remove().unwrap();
        assert_eq!(fs::read_dir(root.path()).unwrap().count(), 0, "nothing left behind");
    }

    #[test]
    fn run_ids_name_the_host_and_the_process() {
        let id = run_id();
        let (host, pid) = parse_run_id(&id).unwrap();
        assert_eq!((host, pid), (host_label().as_str(), std::process::id()));
    }

    #[test]
    fn never_reuses_an_existing_directory() {
        let root = tempfile::tempdir().unwrap();
        let _first = WorkDir::create(&target(root.path()), true).unwrap();
        assert!(WorkDir::create(&target(root.path()), false).is_err());
    }

    /// A work directory as a killed run leaves it.
    fn abandoned(base: &Path, name: &str, kept: bool) -> PathBuf {
        let dir = base.join(name);
        fs::create_dir_all(&dir).unwrap();
        let marker =
            if kept { "streamcap work directory\nhost h\npid 1\nkept\n" } else { "streamcap work directory\n" };
        fs::write(dir.join(MARKER), marker).unwrap();
        fs::write(dir.join("data.0"), b"x").unwrap();
        dir
    }

    #[test]
    fn stale_directories_of_dead_processes_are_removed() {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().join(".streamcap");
        let stale = abandoned(&base, &format!("run-{}-999999999-1", host_label()), false);
        fs::write(stale.join(crate::verify::MANIFEST_FILE), b"{}").unwrap();
        fs::write(stale.join(crate::verify::MAP_FILE), b"\x01").unwrap();
        let other_host = abandoned(&base, "run-elsewhere.example-999999999-1", false);
        assert_eq!(remove_stale(root.path()), vec![stale.clone()]);
        assert!(!stale.exists() && other_host.exists(), "only this host's dead runs go");
    }

    #[test]
    fn a_live_run_is_never_taken_for_a_dead_one() {
        // Regression: liveness was judged by process id and name, so a renamed binary (or a run in another pid
        // namespace) looked dead and its directory was deleted under it. The marker's lock decides now.
        let root = tempfile::tempdir().unwrap();
        let live = WorkDir::create(&target(root.path()), false).unwrap();
        let renamed = root.path().join(".streamcap").join(format!("run-{}-999999998-1", host_label()));
        fs::rename(live.path(), &renamed).unwrap();
        assert!(remove_stale(root.path()).is_empty());
        assert!(renamed.join("data.0").exists());
    }

    #[test]
    fn kept_and_unmarked_directories_and_foreign_files_survive() {
        // Regression: --keep data was deleted by the next run as "an earlier, killed run".
        let root = tempfile::tempdir().unwrap();
        let base = root.path().join(".streamcap");
        let kept = abandoned(&base, &format!("run-{}-999999991-1", host_label()), true);
        let unmarked = base.join(format!("run-{}-999999992-1", host_label()));
        fs::create_dir_all(&unmarked).unwrap();
        let with_user_file = abandoned(&base, &format!("run-{}-999999993-1", host_label()), false);
        fs::write(with_user_file.join("notes.txt"), b"mine").unwrap();
        assert!(remove_stale(root.path()).is_empty());
        assert!(kept.join("data.0").exists() && unmarked.exists());
        assert!(with_user_file.join("notes.txt").exists(), "a file streamcap does not know is never deleted");
    }

    #[test]
    fn keep_marks_the_directory_so_no_later_run_removes_it() {
        let root = tempfile::tempdir().unwrap();
        let mut work = WorkDir::create(&target(root.path()), true).unwrap();
        work.remove().unwrap();
        let marker = fs::read_to_string(work.path().join(MARKER)).unwrap();
        assert!(marker.lines().any(|l| l == KEPT_LINE));
        assert!(!is_abandoned_work_dir(work.path()));
    }

    #[test]
    fn a_symlinked_streamcap_directory_is_neither_used_nor_cleaned() {
        // Regression: `.streamcap -> /elsewhere` put the data files (and stale-directory deletions) outside the
        // target, on another device, while every figure described the target's device.
        let root = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let victim = abandoned(elsewhere.path(), &format!("run-{}-999999999-1", host_label()), false);
        std::os::unix::fs::symlink(elsewhere.path(), root.path().join(".streamcap")).unwrap();
        let err = WorkDir::create(&target(root.path()), false).err().expect("refused");
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert!(remove_stale(root.path()).is_empty());
        assert!(victim.join("data.0").exists());
    }

    #[test]
    fn a_file_named_streamcap_is_refused() {
        let root = tempfile::tempdir().unwrap();
        fs::write(root.path().join(".streamcap"), b"not a directory").unwrap();
        let err = WorkDir::create(&target(root.path()), false).err().expect("refused");
        assert!(err.to_string().contains("not a directory"), "{err}");
    }
}
