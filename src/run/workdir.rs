//! The work directory: `TARGET/.streamcap/<run id>/`, where a directory target's data files live.
//!
//! streamcap creates the directory and every file in it (O_EXCL: never an existing file), and removes them when
//! the run ends — also on error, panic or Ctrl-C, through `Drop` — unless `--keep` was given. Work directories
//! left by a run that was killed outright (a second Ctrl-C, SIGKILL) are recognised by their host name and dead
//! process id and removed by the next run on the same host, with a notice. The host name matters: on a share
//! (NFS, SMB, a volume mounted in several containers) another machine's process ids mean nothing here, so
//! another host's directories are never touched.

use std::fs::{self, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use crate::plan::TargetPlan;

pub struct WorkDir {
    dir: PathBuf,
    files: Vec<PathBuf>,
    keep: bool,
    removed: bool,
}

#[derive(Debug, thiserror::Error)]
#[error("cannot create {path}: {source}")]
pub struct WorkDirError {
    pub path: PathBuf,
    #[source]
    pub source: io::Error,
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

impl WorkDir {
    /// Creates the work directory and its (empty, sparse) data files.
    pub fn create(target: &TargetPlan, keep: bool) -> Result<WorkDir, WorkDirError> {
        let dir = target.work_dir.clone().expect("directory targets have a work directory");
        let err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| WorkDirError { path, source }
        };
        if let Some(parent) = dir.parent() {
            fs::create_dir_all(parent).map_err(err(parent))?;
        }
        fs::create_dir(&dir).map_err(err(&dir))?;
        let mut work = WorkDir { dir, files: Vec::new(), keep, removed: false };
        for file in &target.files {
            let handle = OpenOptions::new().write(true).create_new(true).open(&file.path).map_err(err(&file.path))?;
            work.files.push(file.path.clone());
            handle.set_len(file.size.0).map_err(err(&file.path))?;
        }
        Ok(work)
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Removes the data files and the directory (and `.streamcap` when it is left empty). Idempotent.
    pub fn remove(&mut self) -> io::Result<()> {
        if self.removed || self.keep {
            return Ok(());
        }
        for file in &self.files {
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

/// Removes work directories of streamcap runs whose process is gone. Returns what was removed.
pub fn remove_stale(target: &Path) -> Vec<PathBuf> {
    let base = target.join(".streamcap");
    let Ok(entries) = fs::read_dir(&base) else { return Vec::new() };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some((host, pid)) = parse_run_id(&name) else { continue };
        if host != host_label() || pid == std::process::id() || process_is_streamcap(pid) {
            continue;
        }
        if fs::remove_dir_all(entry.path()).is_ok() {
            removed.push(entry.path());
        }
    }
    let _ = fs::remove_dir(&base);
    removed
}

fn process_is_streamcap(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|comm| comm.trim().starts_with("streamcap"))
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

    #[test]
    fn stale_directories_of_dead_processes_are_removed() {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().join(".streamcap");
        let stale = base.join(format!("run-{}-999999999-1", host_label()));
        fs::create_dir_all(&stale).unwrap();
        fs::write(stale.join("data.0"), b"x").unwrap();
        let mine = base.join(format!("run-{}-{}-1", host_label(), std::process::id()));
        fs::create_dir_all(&mine).unwrap();
        let other_host = base.join("run-elsewhere.example-999999999-1");
        fs::create_dir_all(&other_host).unwrap();
        assert_eq!(remove_stale(root.path()), vec![stale.clone()]);
        assert!(!stale.exists() && mine.exists() && other_host.exists(), "only this host's dead runs go");
    }
}
