//! Exclusive use of a block device between streamcap processes: a lock file per device number,
//! `/run/streamcap/lock-MAJ:MIN`, held with an exclusive `flock` for as long as the device is used, and saying
//! who holds it. Two write runs, two trials, or a trial and a run never share a device: the second is refused
//! naming the first, before it touches anything. The kernel's exclusive open (O_EXCL, taken by the run beside
//! this lock) keeps out mounts and other programs; this lock also covers what O_EXCL cannot: a trial between
//! its layouts, when the devices are blank and nothing holds them open.
//!
//! Keyed by device number, not by name: /dev/loop3 and /dev/disk/by-id/… are one lock. Within one process the
//! lock is shared (a trial holds it, and the runs it starts on the same devices take it again), since flock
//! would refuse a second open of the same file even from the same process. The file is removed by its holder
//! while still locked, and whoever takes a lock checks that the file it locked is still the one at the path.
//! Where `/run/streamcap` cannot be made (a user without root), there is no lock file, and the exclusive open
//! alone stands.

use std::fs::File;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rustix::fs::{AtFlags, FlockOperation, Mode, OFlags};

use super::RunError;

/// Where the lock files live: a memory filesystem, emptied at boot, so a lock never outlives its machine's run.
pub const LOCK_DIR: &str = "/run/streamcap";

#[derive(Debug, thiserror::Error)]
pub enum DeviceLockError {
    #[error(
        "{device} is in use by another streamcap ({holder}): two runs or trials on one device would write over \
         each other; wait for it to finish, or choose another device"
    )]
    Busy { device: PathBuf, holder: String },
    #[error("cannot lock {device} for exclusive use ({path}): {cause}")]
    Io { device: PathBuf, path: PathBuf, cause: io::Error },
}

struct Held {
    key: (u32, u32),
    dir: PathBuf,
    file: File,
    /// Guards of this process holding it.
    count: usize,
}

static HELD: Mutex<Vec<Held>> = Mutex::new(Vec::new());

fn held() -> std::sync::MutexGuard<'static, Vec<Held>> {
    HELD.lock().unwrap_or_else(|e| e.into_inner())
}

/// This process's hold on one device; the lock is let go when the last guard for the device is dropped.
#[derive(Debug)]
pub struct DeviceLock {
    /// The device number and the lock directory; `None`: no lock file could be used (see the module's note).
    key: Option<((u32, u32), PathBuf)>,
}

/// Takes the lock of the block device at `device` (any name for it) for `what` ("run", "trial"), or refuses
/// naming the streamcap process that holds it.
pub fn lock_device(device: &Path, what: &str) -> Result<DeviceLock, DeviceLockError> {
    lock_in(Path::new(LOCK_DIR), device, what)
}

/// [`lock_device`] with the lock files in `dir` (tests use their own).
pub fn lock_in(dir: &Path, device: &Path, what: &str) -> Result<DeviceLock, DeviceLockError> {
    let meta = std::fs::metadata(device).map_err(|cause| io_err(device, device, cause))?;
    if !meta.file_type().is_block_device() {
        return Ok(DeviceLock { key: None });
    }
    let key = (rustix::fs::major(meta.rdev()), rustix::fs::minor(meta.rdev()));
    let mut table = held();
    if let Some(h) = table.iter_mut().find(|h| h.key == key && h.dir == dir) {
        h.count += 1;
        return Ok(DeviceLock { key: Some((key, dir.to_path_buf())) });
    }
    let Some(dir_fd) = open_lock_dir(dir, device)? else { return Ok(DeviceLock { key: None }) };
    let name = format!("lock-{}:{}", key.0, key.1);
    let path = dir.join(&name);
    loop {
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&dir_fd, &name, flags, Mode::from_raw_mode(0o644))
            .map_err(|e| io_err(device, &path, e.into()))?;
        let file = File::from(fd);
        match rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                return Err(DeviceLockError::Busy { device: device.to_path_buf(), holder: holder_of(&text) });
            }
            Err(e) => return Err(io_err(device, &path, e.into())),
        }
        // The holder before us may have removed the file as it let go: a lock on a file no longer at the path
        // locks nothing, so take the one there now.
        let mine = rustix::fs::fstat(&file).map_err(|e| io_err(device, &path, e.into()))?;
        let there = rustix::fs::statat(&dir_fd, &name, AtFlags::SYMLINK_NOFOLLOW).ok();
        if there.is_some_and(|s| (s.st_dev, s.st_ino) == (mine.st_dev, mine.st_ino)) {
            let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
            let text = format!(
                "pid {}\nhost {}\ncommand streamcap {what}\nsince {since}\n",
                std::process::id(),
                super::workdir::host_label()
            );
            file.set_len(0)
                .and_then(|()| std::os::unix::fs::FileExt::write_all_at(&file, text.as_bytes(), 0))
                .map_err(|cause| io_err(device, &path, cause))?;
            table.push(Held { key, dir: dir.to_path_buf(), file, count: 1 });
            return Ok(DeviceLock { key: Some((key, dir.to_path_buf())) });
        }
    }
}

/// The lock directory, made (mode 0755) when missing; `None` when this user may not make or use it. A directory
/// that is a symlink, or that another user could write into, is refused: a lock there would mean nothing.
fn open_lock_dir(dir: &Path, device: &Path) -> Result<Option<rustix::fd::OwnedFd>, DeviceLockError> {
    match rustix::fs::mkdir(dir, Mode::from_raw_mode(0o755)) {
        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
        Err(rustix::io::Errno::ACCESS | rustix::io::Errno::PERM | rustix::io::Errno::ROFS) => return Ok(None),
        Err(e) => return Err(io_err(device, dir, e.into())),
    }
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::open(dir, flags, Mode::empty()).map_err(|e| io_err(device, dir, e.into()))?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| io_err(device, dir, e.into()))?;
    let euid = rustix::process::geteuid().as_raw();
    if (stat.st_uid != 0 && stat.st_uid != euid) || stat.st_mode & 0o022 != 0 {
        let why = format!(
            "it is owned by uid {} with mode {:o}; it must be root's (or yours) and not writable by others: remove it",
            stat.st_uid,
            stat.st_mode & 0o7777
        );
        return Err(io_err(device, dir, io::Error::new(io::ErrorKind::PermissionDenied, why)));
    }
    if rustix::fs::access(dir, rustix::fs::Access::WRITE_OK).is_err() {
        return Ok(None);
    }
    Ok(Some(fd))
}

fn io_err(device: &Path, path: &Path, cause: io::Error) -> DeviceLockError {
    DeviceLockError::Io { device: device.to_path_buf(), path: path.to_path_buf(), cause }
}

/// "pid 4242 on host nas1, streamcap trial, for 12 s" from a lock file's text.
fn holder_of(text: &str) -> String {
    let field = |key: &str| text.lines().find_map(|l| l.strip_prefix(key)).map(str::trim);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let mut out = format!("pid {} on host {}", field("pid ").unwrap_or("?"), field("host ").unwrap_or("?"));
    if let Some(command) = field("command ") {
        out.push_str(&format!(", {command}"));
    }
    if let Some(since) = field("since ").and_then(|s| s.parse::<u64>().ok()) {
        out.push_str(&format!(", for {} s", now.saturating_sub(since)));
    }
    out
}

/// The devices of a block-device target that a phase writes (every one of several devices that phases name as
/// their own need not be written, and one only read may be in use elsewhere); the one device of a one-device target.
fn written_devices(plan: &crate::plan::Plan) -> Vec<&std::path::Path> {
    let table = &plan.target.files;
    if table.len() <= 1 {
        return vec![plan.target.path.as_path()];
    }
    let writers = plan.phases.iter().filter_map(|p| p.raw()).filter(|raw| raw.writes());
    let mut written: Vec<u32> = writers.flat_map(|raw| raw.files.iter().copied()).collect();
    written.sort_unstable();
    written.dedup();
    written.into_iter().map(|i| table[i as usize].path.as_path()).collect()
}

/// A block device the run holds open from its start to its end (see [`hold_for_run`]).
pub(super) struct HeldDevice {
    _lock: Option<DeviceLock>,
    _file: File,
}

/// The devices of a block-device target, held open for the whole run. Those a phase writes exclusively (their
/// lock, then O_EXCL: no other run, mount or program uses them meanwhile); the others read-only, because the
/// kernel drops a block device's page cache when its last opener closes it (`blkdev_flush_mapping`): on an
/// unmounted disk the pre-read before a buffered phase (`cache`'s page-cache plateau) was gone by the time the
/// phase opened the device again, and the plateau measured the disk (280 MB/s on a loop device throttled to
/// 21 MB/s, the first pass through the region read from the device).
pub(super) fn hold_for_run(plan: &crate::plan::Plan) -> Result<Vec<HeldDevice>, RunError> {
    if plan.target.kind != crate::plan::TargetKind::BlockDevice {
        return Ok(Vec::new());
    }
    let written = if plan.target.writes_allowed { written_devices(plan) } else { Vec::new() };
    let mut held = Vec::new();
    for device in &written {
        let (lock, file) = hold_exclusively(device)?;
        held.push(HeldDevice { _lock: Some(lock), _file: file });
    }
    let read_only = plan.target.files.iter().map(|f| f.path.as_path()).filter(|p| !written.contains(p));
    for device in read_only {
        let file = File::open(device).map_err(|cause| RunError::Open { path: device.to_path_buf(), cause })?;
        held.push(HeldDevice { _lock: None, _file: file });
    }
    Ok(held)
}

/// Takes the device's lock (no other streamcap run or trial uses it meanwhile), then opens it with O_EXCL (the
/// kernel refuses that while it is mounted or held, and refuses to mount it while it is open).
fn hold_exclusively(device: &Path) -> Result<(DeviceLock, File), RunError> {
    use std::os::unix::fs::OpenOptionsExt;
    let lock = lock_device(device, "run")?;
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_EXCL).open(device).map_err(|cause| {
        if cause.raw_os_error() == Some(libc::EBUSY) {
            RunError::DeviceBusy { path: device.to_path_buf() }
        } else {
            RunError::Open { path: device.to_path_buf(), cause }
        }
    })?;
    Ok((lock, file))
}

impl Drop for DeviceLock {
    fn drop(&mut self) {
        let Some((key, dir)) = &self.key else { return };
        let mut table = held();
        let Some(i) = table.iter().position(|h| h.key == *key && h.dir == *dir) else { return };
        table[i].count -= 1;
        if table[i].count == 0 {
            let h = table.swap_remove(i);
            // Removed while still locked, then let go by closing.
            let _ = std::fs::remove_file(h.dir.join(format!("lock-{}:{}", key.0, key.1)));
            drop(h.file);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block device every Linux machine has a node for is not needed: /dev/loop-control is a character
    /// device, so tests make the lock of a real block device only where one exists.
    fn some_block_device() -> Option<PathBuf> {
        std::fs::read_dir("/dev")
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| std::fs::metadata(p).is_ok_and(|m| m.file_type().is_block_device()))
    }

    #[test]
    fn a_lock_is_shared_within_the_process_and_removed_by_its_last_holder() {
        let Some(device) = some_block_device() else { return };
        let dir = tempfile::tempdir().unwrap();
        let locks = dir.path().join("locks");
        let first = lock_in(&locks, &device, "trial").unwrap();
        let again = lock_in(&locks, &device, "run").unwrap();
        let files = || std::fs::read_dir(&locks).unwrap().count();
        assert_eq!(files(), 1);
        let text = std::fs::read_to_string(std::fs::read_dir(&locks).unwrap().next().unwrap().unwrap().path()).unwrap();
        assert!(text.contains(&format!("pid {}", std::process::id())) && text.contains("streamcap trial"), "{text}");
        drop(first);
        assert_eq!(files(), 1, "still held by the second guard");
        drop(again);
        assert_eq!(files(), 0, "the last holder removes it");
    }

    #[test]
    fn another_holder_is_named() {
        let Some(device) = some_block_device() else { return };
        let dir = tempfile::tempdir().unwrap();
        let meta = std::fs::metadata(&device).unwrap();
        let name = format!("lock-{}:{}", rustix::fs::major(meta.rdev()), rustix::fs::minor(meta.rdev()));
        // Another process's lock: an open file description of its own, locked.
        std::fs::write(dir.path().join(&name), "pid 4242\nhost nas1\ncommand streamcap trial\nsince 0\n").unwrap();
        let other = File::open(dir.path().join(&name)).unwrap();
        rustix::fs::flock(&other, FlockOperation::LockExclusive).unwrap();
        let err = lock_in(dir.path(), &device, "run").unwrap_err().to_string();
        assert!(
            err.contains("pid 4242 on host nas1, streamcap trial") && err.contains("in use by another streamcap"),
            "{err}"
        );
        drop(other);
        drop(lock_in(dir.path(), &device, "run").expect("free once the other lets go"));
    }

    #[test]
    fn a_lock_directory_others_may_write_is_refused() {
        let Some(device) = some_block_device() else { return };
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
        let err = lock_in(dir.path(), &device, "run").unwrap_err().to_string();
        assert!(err.contains("not writable by others"), "{err}");
        assert!(lock_in(dir.path(), Path::new("/dev/null"), "run").is_ok(), "not a block device: nothing to lock");
    }
}
