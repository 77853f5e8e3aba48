//! The FUSE filesystem itself: every call passes through to a backing directory, and reads, writes and removals
//! first ask the [`Rules`] which faults to inject.
//!
//! Every file is opened with FOPEN_DIRECT_IO, so the kernel's page cache sits neither above nor beside it: each
//! read and write a program issues reaches this code as one request with its own offset and length (up to the
//! kernel's request size), and a fault injected here is exactly what the program sees. Attributes and entries
//! are never cached (TTL 0), so the kernel always asks. Inode numbers are this filesystem's own, handed out per
//! path; the table only grows (tests are small). It must not touch anything outside the backing directory.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner, OpenFlags,
    RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs,
    ReplyWrite, Request, TimeOrNow, WriteFlags,
};

use super::rules::{Fault, Op, Rules};

const TTL: Duration = Duration::ZERO;

/// Inodes (by path relative to the backing root) and open files.
#[derive(Default)]
struct Table {
    paths: HashMap<u64, PathBuf>,
    inodes: HashMap<PathBuf, u64>,
    next_ino: u64,
    files: HashMap<u64, (u64, Arc<File>)>,
    next_fh: u64,
    /// Files removed while open, hidden as libfuse's high-level API hides them (`Rules::hide_open_removed`):
    /// inode → hidden path, removed when the last handle is released.
    hidden: HashMap<u64, PathBuf>,
}

impl Table {
    fn ino_of(&mut self, path: &Path) -> u64 {
        if let Some(&ino) = self.inodes.get(path) {
            return ino;
        }
        self.next_ino += 1;
        let ino = self.next_ino;
        self.paths.insert(ino, path.to_path_buf());
        self.inodes.insert(path.to_path_buf(), ino);
        ino
    }

    fn is_open(&self, ino: u64) -> bool {
        self.files.values().any(|(i, _)| *i == ino)
    }

    fn forget_path(&mut self, path: &Path) {
        if let Some(ino) = self.inodes.remove(path) {
            self.paths.remove(&ino);
        }
    }
}

pub struct FaultFs {
    backing: PathBuf,
    table: Mutex<Table>,
    rules: Arc<Mutex<Rules>>,
}

fn errno(e: std::io::Error) -> Errno {
    Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn time(secs: i64, nsecs: i64) -> SystemTime {
    if secs >= 0 { UNIX_EPOCH + Duration::new(secs as u64, nsecs as u32) } else { UNIX_EPOCH }
}

fn kind_of(meta: &fs::Metadata) -> FileType {
    FileType::from_std(meta.file_type()).unwrap_or(FileType::RegularFile)
}

impl FaultFs {
    pub fn new(backing: PathBuf, rules: Arc<Mutex<Rules>>) -> FaultFs {
        let mut table = Table { next_ino: 1, next_fh: 1, ..Default::default() };
        table.paths.insert(INodeNo::ROOT.0, PathBuf::new());
        table.inodes.insert(PathBuf::new(), INodeNo::ROOT.0);
        FaultFs { backing, table: Mutex::new(table), rules }
    }

    fn rel(&self, ino: INodeNo) -> Result<PathBuf, Errno> {
        lock(&self.table).paths.get(&ino.0).cloned().ok_or(Errno::ENOENT)
    }

    fn attr(&self, ino: u64, rel: &Path) -> Result<FileAttr, Errno> {
        let meta = fs::symlink_metadata(self.backing.join(rel)).map_err(errno)?;
        Ok(FileAttr {
            ino: INodeNo(ino),
            size: meta.len(),
            blocks: meta.blocks(),
            atime: time(meta.atime(), meta.atime_nsec()),
            mtime: time(meta.mtime(), meta.mtime_nsec()),
            ctime: time(meta.ctime(), meta.ctime_nsec()),
            crtime: UNIX_EPOCH,
            kind: kind_of(&meta),
            perm: (meta.mode() & 0o7777) as u16,
            nlink: meta.nlink() as u32,
            uid: meta.uid(),
            gid: meta.gid(),
            rdev: meta.rdev() as u32,
            flags: 0,
            blksize: 4096,
        })
    }

    /// The entry for `name` in `parent`, registering its inode.
    fn entry(&self, parent: INodeNo, name: &OsStr) -> Result<FileAttr, Errno> {
        let rel = self.rel(parent)?.join(name);
        fs::symlink_metadata(self.backing.join(&rel)).map_err(errno)?;
        let ino = lock(&self.table).ino_of(&rel);
        self.attr(ino, &rel)
    }

    fn file(&self, fh: FileHandle) -> Result<(u64, Arc<File>), Errno> {
        lock(&self.table).files.get(&fh.0).cloned().ok_or(Errno::EBADF)
    }

    fn register(&self, ino: u64, file: File) -> u64 {
        let mut table = lock(&self.table);
        table.next_fh += 1;
        let fh = table.next_fh;
        table.files.insert(fh, (ino, Arc::new(file)));
        fh
    }

    fn faults(&self, op: Op, ino: u64, offset: u64, len: u64) -> Vec<Fault> {
        let path = lock(&self.table).paths.get(&ino).map(|p| p.display().to_string()).unwrap_or_default();
        let faults = lock(&self.rules).faults_for(op, &path, offset, len);
        // Latency spikes happen before anything else, and outside every lock.
        for fault in &faults {
            if let Fault::Delay(d) = fault {
                std::thread::sleep(*d);
            }
        }
        faults
    }

    fn do_read(&self, fh: FileHandle, offset: u64, size: u32) -> Result<Vec<u8>, Errno> {
        let (ino, file) = self.file(fh)?;
        let faults = self.faults(Op::Read, ino, offset, u64::from(size));
        let mut len = size as usize;
        for fault in &faults {
            match *fault {
                Fault::Errno(e) => return Err(Errno::from_i32(e)),
                Fault::Short(n) => len = len.min(n as usize),
                _ => {}
            }
        }
        let mut data = vec![0u8; len];
        let mut done = 0;
        while done < len {
            match file.read_at(&mut data[done..], offset + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(errno(e)),
            }
        }
        data.truncate(done);
        for fault in &faults {
            if let Fault::FlipBit { byte, bit } = *fault
                && let Some(b) = data.get_mut(byte as usize)
            {
                *b ^= 1 << bit;
            }
        }
        Ok(data)
    }

    fn do_write(&self, fh: FileHandle, offset: u64, data: &[u8]) -> Result<u32, Errno> {
        let (ino, file) = self.file(fh)?;
        let faults = self.faults(Op::Write, ino, offset, data.len() as u64);
        let mut stored = std::borrow::Cow::Borrowed(data);
        let mut at = offset;
        for fault in &faults {
            match *fault {
                Fault::Errno(e) => return Err(Errno::from_i32(e)),
                Fault::Lose => return Ok(data.len() as u32),
                Fault::Misdirect { delta } => at = offset.checked_add_signed(delta).ok_or(Errno::EINVAL)?,
                Fault::Short(n) => stored = std::borrow::Cow::Owned(stored[..stored.len().min(n as usize)].to_vec()),
                Fault::FlipBit { byte, bit } => {
                    let mut copy = stored.into_owned();
                    if let Some(b) = copy.get_mut(byte as usize) {
                        *b ^= 1 << bit;
                    }
                    stored = std::borrow::Cow::Owned(copy);
                }
                Fault::Delay(_) => {}
            }
        }
        file.write_all_at(&stored, at).map_err(errno)?;
        // A misdirected write says it wrote what was asked, where it was asked.
        Ok(if at != offset { data.len() } else { stored.len() } as u32)
    }
}

impl Filesystem for FaultFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self.entry(parent, name) {
            Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.rel(ino).and_then(|rel| self.attr(ino.0, &rel)) {
            Ok(attr) => reply.attr(&TTL, &attr),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let result = self.rel(ino).and_then(|rel| {
            let path = self.backing.join(&rel);
            if let Some(size) = size {
                OpenOptions::new().write(true).open(&path).and_then(|f| f.set_len(size)).map_err(errno)?;
            }
            if let Some(mode) = mode {
                fs::set_permissions(&path, fs::Permissions::from_mode(mode & 0o7777)).map_err(errno)?;
            }
            self.attr(ino.0, &rel)
        });
        match result {
            Ok(attr) => reply.attr(&TTL, &attr),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, mode: u32, umask: u32, reply: ReplyEntry) {
        let result = self.rel(parent).and_then(|rel| {
            let path = self.backing.join(rel.join(name));
            fs::create_dir(&path).map_err(errno)?;
            fs::set_permissions(&path, fs::Permissions::from_mode(mode & !umask & 0o7777)).map_err(errno)?;
            self.entry(parent, name)
        });
        match result {
            Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.remove(parent, name, false, reply);
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.remove(parent, name, true, reply);
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        _flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let result = self.rel(parent).and_then(|from| {
            let (from, to) = (from.join(name), self.rel(newparent)?.join(newname));
            fs::rename(self.backing.join(&from), self.backing.join(&to)).map_err(errno)?;
            let mut table = lock(&self.table);
            table.forget_path(&to);
            // Everything at or under the old path moves with it.
            let moved: Vec<(PathBuf, u64)> =
                table.inodes.iter().filter(|(p, _)| p.starts_with(&from)).map(|(p, &i)| (p.clone(), i)).collect();
            for (old, ino) in moved {
                let new = to.join(old.strip_prefix(&from).expect("filtered on this prefix"));
                table.inodes.remove(&old);
                table.inodes.insert(new.clone(), ino);
                table.paths.insert(ino, new);
            }
            Ok(())
        });
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let result = self.rel(parent).and_then(|rel| {
            let rel = rel.join(name);
            let mut options = OpenOptions::new();
            options.read(true).write(true).mode(mode & !umask & 0o7777);
            if flags & libc::O_EXCL != 0 {
                options.create_new(true);
            } else {
                options.create(true).truncate(flags & libc::O_TRUNC != 0);
            }
            let file = options.open(self.backing.join(&rel)).map_err(errno)?;
            let ino = lock(&self.table).ino_of(&rel);
            let attr = self.attr(ino, &rel)?;
            Ok((attr, self.register(ino, file)))
        });
        match result {
            Ok((attr, fh)) => reply.created(&TTL, &attr, Generation(0), FileHandle(fh), FopenFlags::FOPEN_DIRECT_IO),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let result = self.rel(ino).and_then(|rel| {
            let access = flags.0 & libc::O_ACCMODE;
            let file = OpenOptions::new()
                .read(access != libc::O_WRONLY)
                .write(access != libc::O_RDONLY)
                .truncate(flags.0 & libc::O_TRUNC != 0)
                .open(self.backing.join(rel))
                .map_err(errno)?;
            Ok(self.register(ino.0, file))
        });
        match result {
            Ok(fh) => reply.opened(FileHandle(fh), FopenFlags::FOPEN_DIRECT_IO),
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match self.do_read(fh, offset, size) {
            Ok(data) => reply.data(&data),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        match self.do_write(fh, offset, data) {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(e),
        }
    }

    fn flush(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _owner: LockOwner, reply: ReplyEmpty) {
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        let mut table = lock(&self.table);
        if let Some((ino, _)) = table.files.remove(&fh.0)
            && !table.is_open(ino)
            && let Some(hidden) = table.hidden.remove(&ino)
        {
            let _ = fs::remove_file(self.backing.join(&hidden));
            table.forget_path(&hidden);
        }
        reply.ok();
    }

    fn fsync(&self, _req: &Request, _ino: INodeNo, fh: FileHandle, datasync: bool, reply: ReplyEmpty) {
        let result =
            self.file(fh).and_then(|(_, f)| if datasync { f.sync_data() } else { f.sync_all() }.map_err(errno));
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn readdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        let listing = self.rel(ino).and_then(|rel| {
            let mut names: Vec<(String, FileType)> = fs::read_dir(self.backing.join(&rel))
                .map_err(errno)?
                .flatten()
                .map(|e| {
                    (
                        e.file_name().to_string_lossy().to_string(),
                        e.metadata().map_or(FileType::RegularFile, |m| kind_of(&m)),
                    )
                })
                .collect();
            names.sort_by(|a, b| a.0.cmp(&b.0));
            let mut table = lock(&self.table);
            let mut entries =
                vec![(ino.0, FileType::Directory, ".".to_string()), (ino.0, FileType::Directory, "..".to_string())];
            for (name, kind) in names {
                entries.push((table.ino_of(&rel.join(&name)), kind, name));
            }
            Ok(entries)
        });
        match listing {
            Ok(entries) => {
                for (i, (ino, kind, name)) in entries.into_iter().enumerate().skip(offset as usize) {
                    if reply.add(INodeNo(ino), i as u64 + 1, kind, name) {
                        break;
                    }
                }
                reply.ok();
            }
            Err(e) => reply.error(e),
        }
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        match rustix::fs::statvfs(&self.backing) {
            Ok(s) => reply.statfs(
                s.f_blocks,
                s.f_bfree,
                s.f_bavail,
                s.f_files,
                s.f_ffree,
                s.f_bsize as u32,
                s.f_namemax as u32,
                s.f_frsize as u32,
            ),
            Err(e) => reply.error(Errno::from_i32(e.raw_os_error())),
        }
    }

    fn access(&self, _req: &Request, _ino: INodeNo, _mask: fuser::AccessFlags, reply: ReplyEmpty) {
        reply.ok();
    }
}

impl FaultFs {
    fn remove(&self, parent: INodeNo, name: &OsStr, dir: bool, reply: ReplyEmpty) {
        let result = self.rel(parent).and_then(|rel| {
            let rel = rel.join(name);
            let path = self.backing.join(&rel);
            let faults = lock(&self.rules).faults_for(Op::Unlink, &rel.display().to_string(), 0, 0);
            if let Some(e) = faults.iter().find_map(|f| if let Fault::Errno(e) = f { Some(*e) } else { None }) {
                return Err(Errno::from_i32(e));
            }
            let mut table = lock(&self.table);
            let open = table.inodes.get(&rel).copied().filter(|&ino| table.is_open(ino));
            if let Some(ino) = open.filter(|_| !dir && lock(&self.rules).hide_open_removed) {
                // libfuse's high-level API (sshfs) renames a file removed while open, and removes it at release.
                let hidden = rel.with_file_name(format!(".fuse_hidden{ino:08x}00000001"));
                fs::rename(&path, self.backing.join(&hidden)).map_err(errno)?;
                table.forget_path(&rel);
                table.inodes.insert(hidden.clone(), ino);
                table.paths.insert(ino, hidden.clone());
                table.hidden.insert(ino, hidden);
                return Ok(());
            }
            if dir { fs::remove_dir(&path) } else { fs::remove_file(&path) }.map_err(errno)?;
            table.forget_path(&rel);
            Ok(())
        });
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }
}
