//! The directories streamcap owns — `TARGET/.streamcap`, each run's work directory, each file-set tree root —
//! held open as directory handles, and the one way files inside them are opened: relative to the handle, with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` (per component with O_NOFOLLOW on kernels without it). No
//! symlink put in place of a data file, no directory renamed or swapped under the run and no `..` can send a
//! write anywhere else: the handle stays on the directory streamcap made, whatever its path names later.
//!
//! A directory is used only when it is a real directory, on the target's filesystem, owned by this user and not
//! writable by others (in a world-writable sticky directory such as /tmp, another user could otherwise pre-create
//! `.streamcap` and swap what is inside it). Files created through a registered directory have their device and
//! inode recorded; every later open compares them, so a file replaced between phases stops the run instead of
//! being written.
//!
//! Registered directories are a process-wide table because every open of a data file must consult them, from
//! whichever runner (raw, file-set, streams) opens it: `run::open_data_file` asks [`open_registered`] first.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};

/// Why a directory streamcap would use is refused, or could not be made.
#[derive(Debug, thiserror::Error)]
pub enum OwnedError {
    #[error("{path} {why}; streamcap keeps its data in a directory of its own there: {fix}")]
    Unsafe { path: PathBuf, why: String, fix: &'static str },
    #[error("cannot create {path}: {cause}{}", full_hint(cause))]
    Io { path: PathBuf, cause: io::Error },
}

/// What a full filesystem means for the user, after the OS's words (empty for other errors).
pub(super) fn full_hint(cause: &io::Error) -> &'static str {
    match cause.kind() {
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => {
            "; the filesystem is full (or the quota used up): free space on it, or choose another target"
        }
        _ => "",
    }
}

const REMOVE_IT: &str = "remove it, or choose another target";

/// A directory streamcap made or checked, open.
#[derive(Debug)]
pub struct OwnedDir {
    path: PathBuf,
    fd: OwnedFd,
}

fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Refuses a directory that is not this user's, or that other users may write into.
fn check_owner(path: &Path, stat: &rustix::fs::Stat) -> Result<(), OwnedError> {
    let unsafe_dir = |why: String, fix| OwnedError::Unsafe { path: path.to_path_buf(), why, fix };
    if stat.st_uid != euid() {
        return Err(unsafe_dir(
            format!("is owned by another user (uid {}, not {})", stat.st_uid, euid()),
            "another user could change what is in it while streamcap writes there; remove it, or choose \
             another target",
        ));
    }
    if stat.st_mode & 0o022 != 0 {
        return Err(unsafe_dir(
            format!("is writable by other users (mode {:o})", stat.st_mode & 0o7777),
            "run `chmod go-w` on it, or remove it",
        ));
    }
    Ok(())
}

impl OwnedDir {
    /// `TARGET/.streamcap`, created (mode 0755) when missing: a real directory on the target's filesystem,
    /// owned by this user and not writable by others.
    pub fn open_base(target: &Path) -> Result<OwnedDir, OwnedError> {
        let path = target.join(".streamcap");
        let io_err = |cause: io::Error| OwnedError::Io { path: path.clone(), cause };
        let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let target_fd =
            rustix::fs::openat(rustix::fs::CWD, target, dir_flags, Mode::empty()).map_err(|e| io_err(e.into()))?;
        match rustix::fs::mkdirat(&target_fd, ".streamcap", Mode::from_raw_mode(0o755)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(io_err(e.into())),
        }
        let fd = open_dir_at(&target_fd, Path::new(".streamcap"), &path)?;
        let stat = rustix::fs::fstat(&fd).map_err(|e| io_err(e.into()))?;
        if stat.st_dev != rustix::fs::fstat(&target_fd).map_err(|e| io_err(e.into()))?.st_dev {
            return Err(OwnedError::Unsafe {
                path,
                why: "is on another filesystem than the target (a mount point?)".into(),
                fix: REMOVE_IT,
            });
        }
        check_owner(&path, &stat)?;
        Ok(OwnedDir { path, fd })
    }

    /// An existing directory named by `path` (a kept run's, for `--verify-only`): its last component not a
    /// symlink, this user's, not writable by others.
    pub fn open_existing(path: &Path) -> Result<OwnedDir, OwnedError> {
        let io_err = |cause: io::Error| OwnedError::Io { path: path.to_path_buf(), cause };
        let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = match (path.parent().filter(|p| !p.as_os_str().is_empty()), path.file_name()) {
            (parent, Some(name)) => {
                let parent = parent.unwrap_or(Path::new("."));
                let parent_fd = rustix::fs::openat(rustix::fs::CWD, parent, dir_flags, Mode::empty())
                    .map_err(|e| io_err(e.into()))?;
                open_dir_at(&parent_fd, Path::new(name), path)?
            }
            // `.`, `..` or `/`: no last component that could be a link.
            (_, None) => {
                rustix::fs::openat(rustix::fs::CWD, path, dir_flags, Mode::empty()).map_err(|e| io_err(e.into()))?
            }
        };
        check_owner(path, &rustix::fs::fstat(&fd).map_err(|e| io_err(e.into()))?)?;
        Ok(OwnedDir { path: path.to_path_buf(), fd })
    }

    /// Makes the directory `name` in this one (it must not exist yet) and opens it.
    pub fn create_dir(&self, name: &str) -> Result<OwnedDir, OwnedError> {
        let path = self.path.join(name);
        rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(0o755))
            .map_err(|e| OwnedError::Io { path: path.clone(), cause: e.into() })?;
        self.open_dir(name)
    }

    /// Opens the existing directory `name` in this one: not a symlink, this user's, not writable by others.
    pub fn open_dir(&self, name: &str) -> Result<OwnedDir, OwnedError> {
        let path = self.path.join(name);
        let fd = open_dir_at(&self.fd, Path::new(name), &path)?;
        let stat = rustix::fs::fstat(&fd).map_err(|e| OwnedError::Io { path: path.clone(), cause: e.into() })?;
        check_owner(&path, &stat)?;
        Ok(OwnedDir { path, fd })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A second handle to the same directory.
    pub fn try_clone(&self) -> Result<OwnedDir, OwnedError> {
        let fd = self.fd.try_clone().map_err(|cause| OwnedError::Io { path: self.path.clone(), cause })?;
        Ok(OwnedDir { path: self.path.clone(), fd })
    }

    /// Flushes the directory's entries to the disk (after a file was created in it, so that the file's name
    /// survives a crash).
    pub fn sync(&self) -> io::Result<()> {
        Ok(rustix::fs::fsync(&self.fd)?)
    }

    /// Opens `relative` beneath this directory without following any symlink or leaving it (`flags` get
    /// O_NOFOLLOW and O_CLOEXEC; new files get mode 0644). A file owned by another user is refused.
    pub fn open_file(&self, relative: &Path, flags: OFlags) -> io::Result<File> {
        let flags = flags | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        // openat2 refuses a mode without O_CREAT.
        let mode = if flags.contains(OFlags::CREATE) { Mode::from_raw_mode(0o644) } else { Mode::empty() };
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        let fd = match rustix::fs::openat2(&self.fd, relative, flags, mode, resolve) {
            // Kernels before 5.6 lack openat2; seccomp filters may refuse it.
            Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => {
                open_per_component(&self.fd, relative, flags, mode)?
            }
            other => other?,
        };
        if rustix::fs::fstat(&fd)?.st_uid != euid() {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{} is owned by another user: streamcap opens only its own files", relative.display()),
            ));
        }
        Ok(File::from(fd))
    }

    /// Removes the file `name` from this directory (not following anything).
    pub fn remove_file(&self, name: &str) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(&self.fd, name, AtFlags::empty())?)
    }

    /// Moves the file `name` of this directory into `to`, under the same name (both on one filesystem).
    pub fn rename_into(&self, name: &str, to: &OwnedDir) -> io::Result<()> {
        Ok(rustix::fs::renameat(&self.fd, name, &to.fd, name)?)
    }

    /// Removes the empty directory `name` from this directory.
    pub fn remove_dir(&self, name: &str) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(&self.fd, name, AtFlags::REMOVEDIR)?)
    }

    /// The names in this directory (not `.` and `..`).
    pub fn names(&self) -> io::Result<Vec<String>> {
        let mut dir = rustix::fs::Dir::read_from(&self.fd)?;
        let mut names = Vec::new();
        while let Some(entry) = dir.read() {
            let name = entry?.file_name().to_string_lossy().to_string();
            if name != "." && name != ".." {
                names.push(name);
            }
        }
        Ok(names)
    }

    /// (device, inode) of the entry `name` in this directory, not following a symlink.
    pub fn identity_of(&self, name: &str) -> Option<(u64, u64)> {
        let stat = rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        Some((stat.st_dev, stat.st_ino))
    }

    /// Bytes allocated to the file `name` in this directory (0 when it cannot be told).
    pub fn allocated(&self, name: &str) -> u64 {
        rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW).map_or(0, |s| s.st_blocks as u64 * 512)
    }
}

/// Opens a directory relative to `dirfd` without following a symlink in its place.
fn open_dir_at(dirfd: &impl AsFd, name: &Path, path: &Path) -> Result<OwnedFd, OwnedError> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    rustix::fs::openat(dirfd, name, flags, Mode::empty()).map_err(|e| {
        let unsafe_dir = |why: &str| OwnedError::Unsafe { path: path.to_path_buf(), why: why.into(), fix: REMOVE_IT };
        let is_link = || {
            rustix::fs::statat(dirfd, name, AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|s| rustix::fs::FileType::from_raw_mode(s.st_mode) == rustix::fs::FileType::Symlink)
        };
        match e {
            // O_NOFOLLOW|O_DIRECTORY on a symlink says ENOTDIR (or ELOOP without O_DIRECTORY).
            rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR if is_link() => unsafe_dir("is a symbolic link"),
            rustix::io::Errno::NOTDIR => unsafe_dir("exists and is not a directory"),
            e => OwnedError::Io { path: path.to_path_buf(), cause: e.into() },
        }
    })
}

/// The fallback of `open_file`: every component a plain name, every directory opened with O_NOFOLLOW.
fn open_per_component(dirfd: &OwnedFd, relative: &Path, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
    let names: Vec<&std::ffi::OsStr> = relative
        .components()
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            _ => Err(io::Error::new(io::ErrorKind::InvalidInput, "not a plain relative path")),
        })
        .collect::<io::Result<_>>()?;
    let Some((last, dirs)) = names.split_last() else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "an empty path"));
    };
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut current: Option<OwnedFd> = None;
    for name in dirs {
        let next = match &current {
            Some(fd) => rustix::fs::openat(fd, *name, dir_flags, Mode::empty())?,
            None => rustix::fs::openat(dirfd, *name, dir_flags, Mode::empty())?,
        };
        current = Some(next);
    }
    Ok(match &current {
        Some(fd) => rustix::fs::openat(fd, *last, flags, mode)?,
        None => rustix::fs::openat(dirfd, *last, flags, mode)?,
    })
}

/// A directory registered for the run, with what it holds.
struct Registered {
    dir: OwnedDir,
    /// The work directory's marker: every file created here is listed in it, so that whoever finds the
    /// directory abandoned removes exactly those.
    marker: Option<Mutex<File>>,
    /// (device, inode) of each file created through the registry (work directories only), by path relative to
    /// the directory.
    identities: Mutex<HashMap<PathBuf, (u64, u64)>>,
    /// Names the marker lists already (written there, and flushed, before the files were made).
    listed: Mutex<Vec<PathBuf>>,
}

static REGISTRY: Mutex<Vec<Arc<Registered>>> = Mutex::new(Vec::new());

/// A directory in the registry; it leaves the registry when this is dropped.
pub struct Registration(Arc<Registered>);

/// Adds `dir` to the directories whose files are opened only through their handle. `marker`: where the names
/// of files created there are listed (a work directory's marker).
pub fn register(dir: OwnedDir, marker: Option<File>) -> Registration {
    let entry = Arc::new(Registered {
        dir,
        marker: marker.map(Mutex::new),
        identities: Mutex::default(),
        listed: Mutex::default(),
    });
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner()).push(entry.clone());
    Registration(entry)
}

impl Registration {
    pub fn dir(&self) -> &OwnedDir {
        &self.0.dir
    }

    /// Says that the marker lists `names` already (and has been flushed): creating them adds no line.
    pub fn listed(&self, names: Vec<PathBuf>) {
        self.0.listed.lock().unwrap_or_else(|e| e.into_inner()).extend(names);
    }

    /// Opens (or with O_CREAT|O_EXCL, creates) `relative` in the registered directory; see [`open_registered`].
    pub fn open(&self, relative: &Path, flags: OFlags) -> io::Result<File> {
        self.0.open(relative, flags)
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        REGISTRY.lock().unwrap_or_else(|e| e.into_inner()).retain(|e| !Arc::ptr_eq(e, &self.0));
    }
}

impl Registered {
    fn open(&self, relative: &Path, flags: OFlags) -> io::Result<File> {
        // Work directories (with a marker) hold a few files, each tracked; a file-set tree's base holds
        // millions, which are opened beneath the handle but not tracked one by one.
        let creates = self.marker.as_ref().filter(|_| flags.contains(OFlags::CREATE | OFlags::EXCL));
        if let Some(marker) = creates {
            // Listed, and on the disk, before the file exists: a crash never leaves a file its marker does not name.
            let listed = self.listed.lock().unwrap_or_else(|e| e.into_inner()).iter().any(|n| n == relative);
            if !listed {
                let mut marker = marker.lock().unwrap_or_else(|e| e.into_inner());
                writeln!(marker, "file {}", relative.display())?;
                marker.sync_data()?;
            }
        }
        let file = self.dir.open_file(relative, flags)?;
        let stat = rustix::fs::fstat(&file)?;
        let identity = (stat.st_dev, stat.st_ino);
        let mut identities = self.identities.lock().unwrap_or_else(|e| e.into_inner());
        if creates.is_some() {
            identities.insert(relative.to_path_buf(), identity);
        } else if identities.get(relative).is_some_and(|known| *known != identity) {
            return Err(io::Error::other(format!(
                "{} was replaced while the run went on (it is no longer the file streamcap created): stopping, \
                 since streamcap writes only files it created",
                self.dir.path().join(relative).display()
            )));
        }
        Ok(file)
    }
}

/// Opens `path` through the registered directory that holds it, if one does: beneath its handle, following no
/// symlink, and refusing a file that is not the one created there. `None` when no registered directory holds
/// `path` (a user's existing file or device, opened as given).
pub fn open_registered(path: &Path, flags: OFlags) -> Option<io::Result<File>> {
    let entry = {
        let registry = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        registry
            .iter()
            .filter(|e| path.starts_with(e.dir.path()) && path != e.dir.path())
            .max_by_key(|e| e.dir.path().as_os_str().len())
            .cloned()?
    };
    let relative = path.strip_prefix(entry.dir.path()).ok()?;
    Some(entry.open(relative, flags))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn files_open_beneath_the_handle_and_never_through_a_symlink() {
        let root = tempfile::tempdir().unwrap();
        let base = OwnedDir::open_base(root.path()).unwrap();
        let work = register(base.create_dir("run-x").unwrap(), None);
        let data = root.path().join(".streamcap/run-x/data.0");
        let created = open_registered(&data, OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL).unwrap();
        drop(created.unwrap());
        open_registered(&data, OFlags::RDWR).unwrap().unwrap();
        // A symlink put in its place is not followed.
        let victim = root.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        std::fs::remove_file(&data).unwrap();
        std::os::unix::fs::symlink(&victim, &data).unwrap();
        assert!(open_registered(&data, OFlags::RDWR).unwrap().is_err());
        // Nor is `..` or an absolute path a way out.
        assert!(work.open(Path::new("../../victim"), OFlags::RDWR).is_err());
        assert!(work.open(Path::new("/etc/passwd"), OFlags::RDONLY).is_err());
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    }

    #[test]
    fn a_file_replaced_by_another_is_refused_on_reopen() {
        let root = tempfile::tempdir().unwrap();
        let base = OwnedDir::open_base(root.path()).unwrap();
        let dir = base.create_dir("run-y").unwrap();
        let marker = dir.open_file(Path::new("marker"), OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL).unwrap();
        let _work = register(dir, Some(marker));
        let data = root.path().join(".streamcap/run-y/data.0");
        drop(open_registered(&data, OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL).unwrap().unwrap());
        let listed = std::fs::read_to_string(root.path().join(".streamcap/run-y/marker")).unwrap();
        assert_eq!(listed, "file data.0\n", "files created in a work directory are listed in its marker");
        let other = root.path().join(".streamcap/run-y/other");
        std::fs::write(&other, b"not ours").unwrap();
        std::fs::rename(&other, &data).unwrap();
        let err = open_registered(&data, OFlags::RDWR).unwrap().unwrap_err();
        assert!(err.to_string().contains("was replaced"), "{err}");
    }

    #[test]
    fn a_base_writable_by_others_or_swapped_for_a_symlink_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().join(".streamcap");
        std::fs::create_dir(&base).unwrap();
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = OwnedDir::open_base(root.path()).unwrap_err().to_string();
        assert!(err.contains("writable by other users") && err.contains("chmod go-w"), "{err}");
        std::fs::remove_dir(&base).unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), &base).unwrap();
        assert!(OwnedDir::open_base(root.path()).unwrap_err().to_string().contains("symbolic link"));
    }

    #[test]
    fn unregistered_paths_are_left_to_the_caller() {
        assert!(open_registered(Path::new("/dev/null"), OFlags::RDONLY).is_none());
    }
}
