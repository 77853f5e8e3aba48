//! Writing under the rule of `mod.rs`: a whole file at once ([`write`]: a temporary file in the same directory,
//! synced, renamed over the path), a file written as the command goes ([`create_stream`]: created the same way
//! with its first bytes, then appended to through the descriptor, so `tail -f` sees every row and nothing is
//! ever written through whatever the path names later), standard output for `-` (a closed pipe ends it
//! quietly), and a directory kept beside an output ([`OutDir`], the history's `pending/`).

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use super::place::Place;
use super::{OutFileError, is_stdout};

/// Writes `bytes` as the whole content of `path`, or to standard output for `-`. The path is judged again here,
/// whatever was checked before.
pub fn write(path: &Path, bytes: &[u8]) -> Result<(), OutFileError> {
    if is_stdout(path) {
        return to_stdout(bytes).map_err(|cause| OutFileError::Io { label: "standard output".into(), cause });
    }
    replace(&Place::judge(path.display().to_string(), path)?, bytes)
}

fn replace(place: &Place, bytes: &[u8]) -> Result<(), OutFileError> {
    let (temp, mut file) = create_temp(place)?;
    if let Err(cause) = file.write_all(bytes).and_then(|()| file.sync_data()) {
        discard(place, &temp);
        return Err(OutFileError::Io { label: place.label.clone(), cause });
    }
    rename_into_place(place, &temp)
}

/// Numbers temporary files, so that two writes of one process never share one.
static TEMPORARY: AtomicU32 = AtomicU32::new(0);

/// A new temporary file beside the place (`.NAME.tmp-PID-N`), with the permissions of the file it will replace.
/// Temporaries of the same name that killed writers left are removed first (`leftovers`).
fn create_temp(place: &Place) -> Result<(OsString, File), OutFileError> {
    super::leftovers::remove(place);
    let mut temp = super::leftovers::temp_prefix(place);
    temp.push(format!("{}-{}", std::process::id(), TEMPORARY.fetch_add(1, Ordering::Relaxed)));
    let mode = place.existing.map_or(0o644, |(_, _, mode)| mode);
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(&place.dir, &temp, flags, Mode::from_raw_mode(mode))
        .map_err(|e| OutFileError::Io { label: place.label.clone(), cause: e.into() })?;
    if place.existing.is_some() {
        // The replacement keeps the replaced file's permissions, which the umask would narrow.
        let _ = rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode));
    }
    Ok((temp, File::from(fd)))
}

/// Renames the temporary over the name once what is there now is judged again (absent, or a regular file that
/// is not an input); otherwise removes the temporary. `renameat` replaces a name: it never writes through a
/// symbolic link that appeared in between.
fn rename_into_place(place: &Place, temp: &OsStr) -> Result<(), OutFileError> {
    if let Err(e) = place.judge_again() {
        discard(place, temp);
        return Err(e);
    }
    if let Err(e) = rustix::fs::renameat(&place.dir, temp, &place.dir, &place.name) {
        discard(place, temp);
        return Err(OutFileError::Io { label: place.label.clone(), cause: e.into() });
    }
    // The new name survives a crash too; a filesystem that cannot sync a directory loses nothing else.
    let _ = rustix::fs::fsync(&place.dir);
    Ok(())
}

fn discard(place: &Place, temp: &OsStr) {
    let _ = rustix::fs::unlinkat(&place.dir, temp, AtFlags::empty());
}

fn to_stdout(bytes: &[u8]) -> io::Result<()> {
    let mut out = io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// An output written as the command goes (the interval CSV).
pub struct Stream {
    sink: Sink,
}

enum Sink {
    /// `-`; `closed` once the reader went away (`| head`): the rest is dropped quietly.
    Stdout {
        closed: bool,
    },
    File(File),
}

/// Creates the output at `path` holding `first` (a temporary renamed into place, as [`write`] does) and returns
/// it open for appending; `-` is standard output.
pub fn create_stream(path: &Path, first: &[u8]) -> Result<Stream, OutFileError> {
    if is_stdout(path) {
        let mut stream = Stream { sink: Sink::Stdout { closed: false } };
        stream.write_all(first).map_err(|cause| OutFileError::Io { label: "standard output".into(), cause })?;
        return Ok(stream);
    }
    let place = Place::judge(path.display().to_string(), path)?;
    let (temp, mut file) = create_temp(&place)?;
    if let Err(cause) = file.write_all(first) {
        discard(&place, &temp);
        return Err(OutFileError::Io { label: place.label.clone(), cause });
    }
    rename_into_place(&place, &temp)?;
    Ok(Stream { sink: Sink::File(file) })
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.sink {
            Sink::File(file) => file.write(buf),
            Sink::Stdout { closed: true } => Ok(buf.len()),
            Sink::Stdout { closed } => match io::stdout().write_all(buf) {
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                    *closed = true;
                    Ok(buf.len())
                }
                other => other.map(|()| buf.len()),
            },
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.sink {
            Sink::File(file) => file.flush(),
            Sink::Stdout { closed: true } => Ok(()),
            Sink::Stdout { closed } => match io::stdout().flush() {
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                    *closed = true;
                    Ok(())
                }
                other => other,
            },
        }
    }
}

/// A directory beside an output where files are kept for later (the history's `pending/`): a real directory,
/// never reached through a symbolic link, created with mode 0700 when asked. Its files follow the rule too.
pub struct OutDir {
    parent: OwnedFd,
    name: OsString,
    fd: OwnedFd,
    path: PathBuf,
}

impl OutDir {
    /// The directory `name` beside the file `path` (which is judged as an output first); `None` when it does not
    /// exist and `create` is false.
    pub fn beside(path: &Path, name: &str, create: bool) -> Result<Option<OutDir>, OutFileError> {
        let place = Place::judge(path.display().to_string(), path)?;
        let dir_path = place.dir_path.join(name);
        let label = dir_path.display().to_string();
        let io_err = |e: rustix::io::Errno| OutFileError::Io { label: label.clone(), cause: e.into() };
        if create {
            match rustix::fs::mkdirat(&place.dir, name, Mode::from_raw_mode(0o700)) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(e) => return Err(io_err(e)),
            }
        }
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(&place.dir, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) if !create => return Ok(None),
            Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => {
                return Err(OutFileError::Refused {
                    label,
                    what: "not a real directory (a symbolic link or a file)".into(),
                    fix: "remove it".into(),
                });
            }
            Err(e) => return Err(io_err(e)),
        };
        Ok(Some(OutDir { parent: place.dir, name: name.into(), fd, path: dir_path }))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the file `name` in this directory (a temporary renamed into place); returns its path.
    pub fn write(&self, name: &str, bytes: &[u8]) -> Result<PathBuf, OutFileError> {
        let path = self.path.join(name);
        let label = path.display().to_string();
        let dir = self.fd.try_clone().map_err(|cause| OutFileError::Io { label: label.clone(), cause })?;
        replace(&Place::in_dir(label, dir, self.path.clone(), name.into())?, bytes)?;
        Ok(path)
    }

    /// The regular files in this directory whose names end with `suffix`, sorted.
    pub fn files(&self, suffix: &str) -> Vec<String> {
        let Ok(mut dir) = rustix::fs::Dir::read_from(&self.fd) else { return Vec::new() };
        let mut names = Vec::new();
        while let Some(Ok(entry)) = dir.read() {
            let name = entry.file_name().to_string_lossy().to_string();
            if name.ends_with(suffix) && entry.file_type() == FileType::RegularFile {
                names.push(name);
            }
        }
        names.sort();
        names
    }

    /// Reads the file `name` (not following a symbolic link, never opening anything but a regular file), at
    /// most `cap` bytes.
    pub fn read(&self, name: &str, cap: u64) -> io::Result<Vec<u8>> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.fd, name, flags, Mode::empty())?;
        if FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode) != FileType::RegularFile {
            return Err(io::Error::other(format!("{name} is not a regular file")));
        }
        let mut bytes = Vec::new();
        File::from(fd).take(cap).read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    pub fn remove(&self, name: &str) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(&self.fd, name, AtFlags::empty())?)
    }

    /// Removes this directory if it is empty.
    pub fn remove_if_empty(self) {
        let _ = rustix::fs::unlinkat(&self.parent, &self.name, AtFlags::REMOVEDIR);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_replaces_a_regular_file_keeping_its_mode_and_leaves_no_temporary() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("r.json");
        write(&file, b"one").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        write(&file, b"two").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"two");
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary left");
    }

    #[test]
    fn a_symlink_a_fifo_and_a_device_are_never_written() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let link = dir.path().join("r.csv");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        assert!(write(&link, b"x").is_err());
        assert!(create_stream(&link, b"x").is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays a link");
        let fifo = dir.path().join("fifo.html");
        rustix::fs::mknodat(rustix::fs::CWD, &fifo, FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
        assert!(write(&fifo, b"x").unwrap_err().to_string().contains("FIFO"), "refused at once, never opened");
        assert!(write(Path::new("/dev/null"), b"x").is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3, "no temporary left");
    }

    #[test]
    fn a_stream_is_in_place_after_its_first_bytes_and_appends_through_its_descriptor() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("r.csv");
        std::fs::write(&file, "old\n").unwrap();
        let mut stream = create_stream(&file, b"header\n").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "header\n");
        // Whatever the path names later is not written: the rows go to the file streamcap made.
        let moved = dir.path().join("moved.csv");
        std::fs::rename(&file, &moved).unwrap();
        std::os::unix::fs::symlink("/nonexistent", &file).unwrap();
        stream.write_all(b"row\n").unwrap();
        stream.flush().unwrap();
        assert_eq!(std::fs::read_to_string(&moved).unwrap(), "header\nrow\n");
    }

    #[test]
    fn a_kept_directory_is_real_and_its_files_plain() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("h.db");
        assert!(OutDir::beside(&db, "pending", false).unwrap().is_none());
        let pending = OutDir::beside(&db, "pending", true).unwrap().unwrap();
        pending.write("a.json", b"{}").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("pending/b.json")).unwrap();
        assert_eq!(pending.files(".json"), ["a.json"], "a symlink is not one of its files");
        assert!(pending.read("b.json", 100).is_err());
        assert_eq!(pending.read("a.json", 100).unwrap(), b"{}");
        pending.remove("a.json").unwrap();
        pending.remove("b.json").unwrap();
        pending.remove_if_empty();
        assert!(!dir.path().join("pending").exists());
        std::os::unix::fs::symlink("/tmp", dir.path().join("pending")).unwrap();
        assert!(OutDir::beside(&db, "pending", true).is_err(), "never through a symlink");
    }
}
