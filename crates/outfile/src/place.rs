//! Where an output goes, judged: the directory that holds it, opened (following the symbolic links of the
//! directory path, as any program does), refused when it is in /dev or a kernel filesystem or not writable; and
//! its last component, looked at without following a symbolic link: absent, or a regular file that is not an
//! input of the command. Also the history database's place (its side files: journal, WAL, shared memory,
//! `pending/`), and the creation of a missing parent directory outside the kernel's filesystems.

use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{Access, AtFlags, CWD, FileType, Mode, OFlags};

use super::{OutFileError, is_input};

/// A checked output: its directory, open, and its name in it.
pub(super) struct Place {
    pub label: String,
    pub dir: OwnedFd,
    pub dir_path: PathBuf,
    pub name: OsString,
    /// The regular file there now: (device, inode, permission bits).
    pub existing: Option<(u64, u64, u32)>,
}

/// Which file an output names, to tell two outputs apart: the file there, or the directory and the name.
pub(super) enum Identity {
    File(u64, u64),
    Entry(u64, u64, OsString),
}

impl Identity {
    pub fn same_as(&self, other: &Identity) -> bool {
        match (self, other) {
            (Identity::File(d, i), Identity::File(e, j)) => d == e && i == j,
            (Identity::Entry(d, i, n), Identity::Entry(e, j, m)) => d == e && i == j && n == m,
            _ => false,
        }
    }
}

/// Filesystems streamcap never writes into, by `statfs` type: the kernel's view of itself.
const KERNEL_FILESYSTEMS: [(i64, &str); 13] = [
    (0x9fa0, "the kernel's process filesystem (proc)"),
    (0x6265_6572, "the kernel's sysfs"),
    (0x1cd1, "the terminals' filesystem (devpts)"),
    (0x0027_e0eb, "a cgroup filesystem"),
    (0x6367_7270, "the cgroup2 filesystem"),
    (0x6462_6720, "debugfs"),
    (0x7472_6163, "tracefs"),
    (0x7363_6673, "securityfs"),
    (0xcafe_4a11, "the BPF filesystem"),
    (0x6165_676c, "pstore"),
    (0xde5e_81e4, "efivarfs"),
    (0x6265_6570, "configfs"),
    (0xf97c_ff8c, "selinuxfs"),
];

impl Place {
    /// Judges `path` (named `label` in messages); see the module's rules.
    pub fn judge(label: String, path: &Path) -> Result<Place, OutFileError> {
        let (dir_path, name) = split(&label, path)?;
        let dir = open_dir(&label, &dir_path)?;
        // What is there first (/dev/null is refused as a device), then where it is.
        let existing = judge_entry(&label, &dir, &name)?;
        refuse_kernel_dirs(&label, &dir, &dir_path)?;
        if let Err(e) = rustix::fs::accessat(&dir, ".", Access::WRITE_OK, AtFlags::empty()) {
            return Err(OutFileError::NotWritable { label, dir: dir_path, cause: e.into() });
        }
        if existing.is_some()
            && let Err(e) = rustix::fs::accessat(&dir, &name, Access::WRITE_OK, AtFlags::SYMLINK_NOFOLLOW)
        {
            return Err(OutFileError::FileNotWritable { label, cause: e.into() });
        }
        Ok(Place { label, dir, dir_path, name, existing })
    }

    /// The place `name` in a directory already open and judged (a directory kept beside an output).
    pub fn in_dir(label: String, dir: OwnedFd, dir_path: PathBuf, name: OsString) -> Result<Place, OutFileError> {
        let existing = judge_entry(&label, &dir, &name)?;
        Ok(Place { label, dir, dir_path, name, existing })
    }

    pub fn identity(&self) -> Identity {
        if let Some((dev, ino, _)) = self.existing {
            return Identity::File(dev, ino);
        }
        let stat = rustix::fs::fstat(&self.dir).ok();
        Identity::Entry(stat.map_or(0, |s| s.st_dev), stat.map_or(0, |s| s.st_ino), self.name.clone())
    }

    /// The entry at the name now (just before a rename): absent, or a regular file that is not an input.
    pub fn judge_again(&self) -> Result<(), OutFileError> {
        judge_entry(&self.label, &self.dir, &self.name).map(|_| ())
    }
}

/// The directory and the last component of `path`; a path that names no file (`/`, `..`, `dir/`) is refused,
/// as a directory when it is one.
fn split(label: &str, path: &Path) -> Result<(PathBuf, OsString), OutFileError> {
    let bytes = path.as_os_str().as_bytes();
    let names_dir = bytes.is_empty() || bytes.ends_with(b"/") || bytes.ends_with(b"/.") || bytes == b".";
    let name = path.file_name().filter(|_| !names_dir && !bytes.ends_with(b".."));
    let Some(name) = name else {
        if path.is_dir() {
            return Err(directory(label, path));
        }
        return Err(OutFileError::NoName { label: label.to_string() });
    };
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    Ok((parent.to_path_buf(), name.to_os_string()))
}

fn directory(label: &str, path: &Path) -> OutFileError {
    let flag = label.split(' ').next().unwrap_or(label);
    let flag = if flag.starts_with("--") { format!("{flag} ") } else { String::new() };
    OutFileError::Refused {
        label: label.to_string(),
        what: "a directory".into(),
        fix: format!("give a file name, e.g. {flag}{}", path.join("result.json").display()),
    }
}

fn open_dir(label: &str, dir: &Path) -> Result<OwnedFd, OutFileError> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    rustix::fs::openat(CWD, dir, flags, Mode::empty()).map_err(|e| match e {
        rustix::io::Errno::NOENT => OutFileError::NoDirectory { label: label.to_string(), dir: dir.to_path_buf() },
        rustix::io::Errno::NOTDIR => OutFileError::NotDirectory { label: label.to_string(), dir: dir.to_path_buf() },
        e => OutFileError::Io { label: label.to_string(), cause: e.into() },
    })
}

/// Refuses a directory in /dev (the device filesystem) or on one of the kernel's own filesystems.
fn refuse_kernel_dirs(label: &str, dir: &OwnedFd, dir_path: &Path) -> Result<(), OutFileError> {
    let refuse = |kind| OutFileError::SystemDirectory { label: label.to_string(), dir: dir_path.to_path_buf(), kind };
    // `f_type` is an i64 here and an i32 on 32-bit machines.
    #[allow(clippy::unnecessary_cast)]
    if let Ok(fs) = rustix::fs::fstatfs(dir)
        && let Some((_, kind)) = KERNEL_FILESYSTEMS.iter().find(|(magic, _)| *magic == fs.f_type as i64)
    {
        return Err(refuse(kind));
    }
    let (Ok(here), Ok(dev)) = (rustix::fs::fstat(dir), rustix::fs::stat("/dev")) else { return Ok(()) };
    let root_dev = rustix::fs::stat("/").map_or(0, |s| s.st_dev);
    // /dev is its own filesystem (devtmpfs) almost everywhere; where it is not, only /dev itself is refused.
    let in_dev = here.st_dev == dev.st_dev && (dev.st_dev != root_dev || here.st_ino == dev.st_ino);
    if in_dev {
        return Err(refuse("the device filesystem (/dev)"));
    }
    Ok(())
}

/// What is at `name` in `dir`, not following a symbolic link: nothing (`None`) or a regular file that is not
/// an input (its device, inode and permission bits); anything else is refused with what it is.
fn judge_entry(label: &str, dir: &OwnedFd, name: &OsStr) -> Result<Option<(u64, u64, u32)>, OutFileError> {
    let stat = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => stat,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(e) => return Err(OutFileError::Io { label: label.to_string(), cause: e.into() }),
    };
    let refused =
        |what: String, fix: &str| OutFileError::Refused { label: label.to_string(), what, fix: fix.to_string() };
    const PLAIN: &str = "streamcap writes only regular files: give the name of a plain file (or a new one)";
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => {}
        FileType::Directory => {
            let path = Path::new(label.rsplit(' ').next().unwrap_or(label));
            return Err(directory(label, path));
        }
        FileType::Symlink => {
            let to = rustix::fs::readlinkat(dir, name, Vec::new())
                .map(|t| String::from_utf8_lossy(t.as_bytes()).to_string())
                .unwrap_or_default();
            let dangling = rustix::fs::statat(dir, name, AtFlags::empty()).is_err();
            let what = format!("a symbolic link (to {to}{})", if dangling { ", which does not exist" } else { "" });
            return Err(refused(
                what,
                "streamcap never writes through a symbolic link, which may lead anywhere: name the file itself, or \
                 remove the link",
            ));
        }
        FileType::Fifo => return Err(refused("a named pipe (FIFO), not a regular file".into(), PLAIN)),
        FileType::CharacterDevice | FileType::BlockDevice => {
            return Err(refused("a device, not a regular file".into(), PLAIN));
        }
        FileType::Socket => return Err(refused("a socket, not a regular file".into(), PLAIN)),
        FileType::Unknown => return Err(refused("not a regular file".into(), PLAIN)),
    }
    if is_input((stat.st_dev, stat.st_ino)) {
        return Err(OutFileError::Input { label: label.to_string() });
    }
    Ok(Some((stat.st_dev, stat.st_ino, stat.st_mode & 0o777)))
}

/// Creates the missing directories above `path` (as `mkdir -p`), after refusing a place in /dev or a kernel
/// filesystem: the nearest directory that exists is judged first.
pub fn create_parent_dirs(label: &str, path: &Path) -> Result<(), OutFileError> {
    let Some(parent) = judge_nearest_dir(label, path)? else { return Ok(()) };
    std::fs::create_dir_all(parent).map_err(|cause| OutFileError::Io { label: label.to_string(), cause })
}

/// The parent of `path` when it does not exist yet, after judging the nearest directory above it that does (not
/// in /dev or a kernel filesystem); `None` when the parent exists.
fn judge_nearest_dir<'p>(label: &str, path: &'p Path) -> Result<Option<&'p Path>, OutFileError> {
    let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) else { return Ok(None) };
    if parent.is_dir() {
        return Ok(None);
    }
    let existing = parent.ancestors().skip(1).find(|a| a.as_os_str().is_empty() || a.is_dir());
    let existing = existing.filter(|a| !a.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let fd = open_dir(label, existing)?;
    refuse_kernel_dirs(label, &fd, existing)?;
    Ok(Some(parent))
}

/// Side files SQLite keeps beside a database, by suffix.
const DATABASE_SIDE_FILES: [&str; 3] = ["-journal", "-wal", "-shm"];

/// The history database at `path`, judged as an output (a regular file or absent, not in /dev, not through a
/// symbolic link), with its side files (`-journal`, `-wal`, `-shm`: regular or absent) and `pending/` (a real
/// directory or absent). Returns the path to hand SQLite: the canonical directory and the name, which holds no
/// symbolic link, so SQLite's `SQLITE_OPEN_NOFOLLOW` accepts it.
pub fn database(path: &Path) -> Result<PathBuf, OutFileError> {
    let label = format!("--history-db {}", path.display());
    if super::is_stdout(path) {
        return Err(OutFileError::Refused {
            label,
            what: "standard output, which cannot hold a database".into(),
            fix: "give the path of a file".into(),
        });
    }
    let place = Place::judge(label.clone(), path)?;
    for suffix in DATABASE_SIDE_FILES {
        let mut side = place.name.clone();
        side.push(suffix);
        judge_entry(&format!("{}{suffix} (the database's {} file)", path.display(), &suffix[1..]), &place.dir, &side)?;
    }
    match rustix::fs::statat(&place.dir, "pending", AtFlags::SYMLINK_NOFOLLOW) {
        Ok(s) if FileType::from_raw_mode(s.st_mode) != FileType::Directory => {
            return Err(OutFileError::Refused {
                label: format!("{} (where runs are kept when the database cannot be written)", path_beside(path)),
                what: "not a real directory (a symbolic link or a file)".into(),
                fix: "remove it, or choose another --history-db".into(),
            });
        }
        _ => {}
    }
    let dir = std::fs::canonicalize(&place.dir_path).map_err(|cause| OutFileError::Io { label, cause })?;
    Ok(dir.join(&place.name))
}

/// Checks the history database at `path` before a command runs: as [`database`] when its directory exists,
/// else the nearest directory above it (the database's directories are created when it is first written).
pub fn check_database(path: &Path) -> Result<(), OutFileError> {
    let label = format!("--history-db {}", path.display());
    match judge_nearest_dir(&label, path)? {
        Some(_) => Ok(()),
        None => database(path).map(|_| ()),
    }
}

fn path_beside(database: &Path) -> String {
    database.with_file_name("pending").display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(path: &Path) -> Result<Place, OutFileError> {
        Place::judge(format!("--json {}", path.display()), path)
    }

    #[test]
    fn only_a_regular_file_or_nothing_is_accepted() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        let file = p.join("r.json");
        assert!(judged(&file).unwrap().existing.is_none());
        std::fs::write(&file, "x").unwrap();
        assert!(judged(&file).unwrap().existing.is_some());
        let err = |path: &Path| judged(path).err().expect("refused").to_string();
        assert!(err(p).contains("is a directory"), "{}", err(p));
        assert!(err(&p.join("sub/")).contains("does not name a file") || err(&p.join("sub/")).contains("directory"));
        std::os::unix::fs::symlink(&file, p.join("link.json")).unwrap();
        assert!(err(&p.join("link.json")).contains("a symbolic link (to"), "{}", err(&p.join("link.json")));
        std::os::unix::fs::symlink(p.join("nowhere"), p.join("dangling.json")).unwrap();
        assert!(err(&p.join("dangling.json")).contains("which does not exist"));
        rustix::fs::mknodat(CWD, p.join("fifo"), FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
        assert!(err(&p.join("fifo")).contains("named pipe (FIFO)"));
        assert!(err(Path::new("/dev/null")).contains("a device"), "{}", err(Path::new("/dev/null")));
        assert!(err(&p.join("no/r.json")).contains("does not exist; create it first"));
        assert!(err(Path::new("/")).contains("is a directory"));
    }

    #[test]
    fn dev_proc_and_sys_are_refused_even_for_a_new_name() {
        for path in ["/dev/streamcap-outfile-test.json", "/proc/self/streamcap.json", "/sys/streamcap.json"] {
            let err = judged(Path::new(path)).err().expect("refused").to_string();
            assert!(err.contains("where streamcap never writes"), "{path}: {err}");
        }
        let err = create_parent_dirs("--history-db", Path::new("/dev/streamcap-outfile-test/h.db")).unwrap_err();
        assert!(err.to_string().contains("device filesystem"), "{err}");
        assert!(!Path::new("/dev/streamcap-outfile-test").exists());
    }

    #[test]
    fn a_database_is_refused_beside_a_symlinked_journal_or_pending_directory() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("h.db");
        assert_eq!(database(&db).unwrap(), std::fs::canonicalize(dir.path()).unwrap().join("h.db"));
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("h.db-journal")).unwrap();
        assert!(database(&db).unwrap_err().to_string().contains("journal file) is a symbolic link"));
        std::fs::remove_file(dir.path().join("h.db-journal")).unwrap();
        std::os::unix::fs::symlink("/etc", dir.path().join("pending")).unwrap();
        assert!(database(&db).unwrap_err().to_string().contains("not a real directory"));
        assert!(database(Path::new("/dev/null")).unwrap_err().to_string().contains("a device"));
    }
}
