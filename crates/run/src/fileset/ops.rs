//! The metadata operations of a file-set schedule: picking a file or directory and claiming it, then open,
//! create, mkdir, rmdir, delete, stat (of files, or of directories for fio's dirstat), chmod, access, copy and
//! move — each a system call made here, timed and recorded through the core. Opened and created files go into the engine's file table for their transfers.

use std::fs::Permissions;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::schedule::{FileSetSchedule, Step};
use crate::metrics::OpClass;
use crate::plan::FileOp;
use crate::run::core::Ctx;
use crate::run::open::{Create, OpenFor, open_data_file};
use crate::workload::fileset::Selection;

impl FileSetSchedule<'_> {
    /// One operation of the workload (for reads and writes: the open that starts a file's transfers).
    pub(super) fn step(&mut self, ctx: &mut Ctx<'_>) -> Step {
        let due = match self.take_due(ctx.now) {
            Ok(due) => due,
            Err(at) => return Step::Wait(at),
        };
        match self.operation() {
            FileOp::Read | FileOp::Write => self.open_file(ctx, due),
            FileOp::Create => self.create(ctx, due),
            FileOp::Mkdir => self.mkdir(ctx, due),
            FileOp::Rmdir => self.rmdir(ctx, due),
            FileOp::Getattr if self.s.workload.dirs => self.stat_dir(ctx, due),
            op => self.on_existing(ctx, op, due),
        }
    }

    /// Picks a file (or directory) whose existence is `want`, and claims it: alone, or — the reads and writes of
    /// a shared workload — together with other sharers. `Again` when every candidate was busy; `Done` when there
    /// is none left.
    fn pick(&mut self, want: bool, dirs: bool) -> Result<u64, Step> {
        let w = self.s.workload;
        let share = !dirs && w.shared && self.format.is_none() && matches!(w.operation, FileOp::Read | FileOp::Write);
        let (files_busy, dirs_busy) = (self.s.files_busy, self.s.dirs_busy);
        let claim = |i| if dirs { dirs_busy.claim(i) } else { files_busy.claim(i, share) };
        let release = |i| if dirs { dirs_busy.set(i, false) } else { files_busy.release(i) };
        let (exists, selector) =
            if dirs { (&*self.s.state.dirs, &mut self.dirs) } else { (&*self.s.state.files, &mut self.files) };
        let once = matches!(w.select, Selection::Once | Selection::RandomOnce) || self.format.is_some();
        for _ in 0..16 {
            let Some(mut i) = selector.next(&mut self.rng) else { return Err(Step::Done) };
            if dirs && w.operation == FileOp::Rmdir {
                // Deepest directories first, so that parents are empty by the time they come up.
                i = exists.len() - 1 - i;
            }
            if !once {
                match exists.find(i, want) {
                    Some(found) => i = found,
                    None => return Err(Step::Done),
                }
            }
            if exists.get(i) == want && claim(i) {
                if exists.get(i) == want {
                    return Ok(i);
                }
                release(i);
            }
        }
        Err(Step::Again)
    }

    fn file_path(&mut self, file: u64) {
        self.path.clear();
        self.path.push_str(&self.root);
        self.path.push('/');
        self.s.tree.push_file(file, &mut self.path);
    }

    fn dir_path(&mut self, dir: u64) {
        let (level, index) = self.s.tree.shape.dir_level(dir);
        self.path.clear();
        self.path.push_str(&self.root);
        self.path.push('/');
        self.s.tree.shape.push_dir(level, index, &mut self.path);
    }

    /// Opens an existing file for its transfers.
    fn open_file(&mut self, ctx: &mut Ctx<'_>, due: Option<std::time::Duration>) -> Step {
        let file = match self.pick(true, false) {
            Ok(f) => f,
            Err(step) => return step,
        };
        self.file_path(file);
        let size = self.s.tree.file_size(file);
        if self.deletes_first(file, size) {
            return self.recreate(ctx, file, size, due);
        }
        let writes = self.s.workload.read_percent < 100;
        let how = OpenFor { write: writes, create: Create::No, direct: self.s.state.direct, sync: false };
        let started = Instant::now();
        let handle = open_data_file(Path::new(&self.path), how);
        let ended = Instant::now();
        match handle.map(|h| ctx.files.put(0, Some(h))) {
            Ok(Ok(_)) => {
                ctx.record(OpClass::Open, 0, started, ended, due);
                self.opened(file, size, false);
            }
            Ok(Err(e)) => {
                self.fail(ctx, OpClass::Open, &io::Error::other(e.to_string()));
                self.s.files_busy.release(file);
            }
            Err(e) => {
                self.fail(ctx, OpClass::Open, &e);
                self.s.files_busy.release(file);
            }
        }
        Step::Again
    }

    /// vdbench `fileio=(sequential,delete)`: a whole file is deleted before it is written; one a `stopafter`
    /// visit left part-way is written on from there instead (vdbench deletes only a file of its full size).
    fn deletes_first(&self, file: u64, size: u64) -> bool {
        let w = self.s.workload;
        if !w.delete_first || self.format.is_some() {
            return false;
        }
        let left_at = self.resume.map_or(0, |r| r[file as usize].load(Ordering::Relaxed));
        left_at == 0 || left_at >= size
    }

    /// Deletes a claimed file and creates it again, empty, for its sequential writes: a delete and a create,
    /// each timed (vdbench counts the create also as an open).
    fn recreate(&mut self, ctx: &mut Ctx<'_>, file: u64, size: u64, due: Option<std::time::Duration>) -> Step {
        let started = Instant::now();
        let removed = std::fs::remove_file(&self.path);
        let ended = Instant::now();
        if let Err(e) = removed {
            self.fail(ctx, OpClass::Delete, &e);
            self.s.files_busy.release(file);
            return Step::Again;
        }
        ctx.record(OpClass::Delete, 0, started, ended, due);
        let how = OpenFor { write: true, create: Create::New, direct: self.s.state.direct, sync: false };
        let started = Instant::now();
        let handle = open_data_file(Path::new(&self.path), how);
        let ended = Instant::now();
        match handle.map(|h| ctx.files.put(0, Some(h))) {
            Ok(Ok(_)) => {
                ctx.record(OpClass::Create, 0, started, ended, None);
                if let Some(resume) = self.resume {
                    resume[file as usize].store(0, Ordering::Relaxed);
                }
                self.opened(file, size, false);
            }
            Ok(Err(e)) => {
                self.s.state.files.set(file, false);
                self.fail(ctx, OpClass::Create, &io::Error::other(e.to_string()));
                self.s.files_busy.release(file);
            }
            Err(e) => {
                self.s.state.files.set(file, false);
                self.fail(ctx, OpClass::Create, &e);
                self.s.files_busy.release(file);
            }
        }
        Step::Again
    }

    /// Creates a file and starts filling it. In the format step with `restart`, a file already whole is kept.
    fn create(&mut self, ctx: &mut Ctx<'_>, due: Option<std::time::Duration>) -> Step {
        let file = match self.pick(false, false) {
            Ok(f) => f,
            Err(step) => return step,
        };
        self.file_path(file);
        let size = self.s.tree.file_size(file);
        let restart = self.format == Some(true);
        if restart && std::fs::metadata(&self.path).is_ok_and(|m| m.len() >= size) {
            self.s.state.files.set(file, true);
            self.s.files_busy.release(file);
            return Step::Again;
        }
        let create = if restart { Create::Truncate } else { Create::New };
        let how = OpenFor { write: true, create, direct: self.s.state.direct, sync: false };
        let started = Instant::now();
        let handle = open_data_file(Path::new(&self.path), how);
        let ended = Instant::now();
        match handle.map(|h| ctx.files.put(0, Some(h))) {
            Ok(Ok(_)) => {
                ctx.record(OpClass::Create, 0, started, ended, due);
                self.s.state.files.set(file, true);
                self.created += 1;
                self.opened(file, size, true);
            }
            Ok(Err(e)) => {
                self.fail(ctx, OpClass::Create, &io::Error::other(e.to_string()));
                self.s.files_busy.release(file);
            }
            Err(e) => {
                self.fail(ctx, OpClass::Create, &e);
                self.s.files_busy.release(file);
            }
        }
        Step::Again
    }

    fn mkdir(&mut self, ctx: &mut Ctx<'_>, due: Option<std::time::Duration>) -> Step {
        let dir = match self.pick(false, true) {
            Ok(d) => d,
            Err(step) => return step,
        };
        let parent_ok = self.s.tree.shape.parent(dir).is_none_or(|p| self.s.state.dirs.get(p));
        if parent_ok {
            self.dir_path(dir);
            let started = Instant::now();
            let result = std::fs::create_dir(&self.path);
            let ended = Instant::now();
            match result {
                Ok(()) => {
                    ctx.record(OpClass::Mkdir, 0, started, ended, due);
                    self.s.state.dirs.set(dir, true);
                }
                Err(e) => self.fail(ctx, OpClass::Mkdir, &e),
            }
        }
        self.s.dirs_busy.set(dir, false);
        Step::Again
    }

    fn rmdir(&mut self, ctx: &mut Ctx<'_>, due: Option<std::time::Duration>) -> Step {
        let dir = match self.pick(true, true) {
            Ok(d) => d,
            Err(step) => return step,
        };
        self.dir_path(dir);
        let started = Instant::now();
        let result = std::fs::remove_dir(&self.path);
        let ended = Instant::now();
        self.s.dirs_busy.set(dir, false);
        match result {
            Ok(()) => {
                self.not_empty = 0;
                ctx.record(OpClass::Rmdir, 0, started, ended, due);
                self.s.state.dirs.set(dir, false);
            }
            // A directory that still holds files is not a candidate: not an error, and not an operation.
            Err(e) if e.kind() == io::ErrorKind::DirectoryNotEmpty => {
                self.not_empty += 1;
                if self.not_empty > 2 * self.s.tree.dirs + 16 {
                    return Step::Done;
                }
            }
            Err(e) => self.fail(ctx, OpClass::Rmdir, &e),
        }
        Step::Again
    }

    /// getattr of an existing directory (fio dirstat).
    fn stat_dir(&mut self, ctx: &mut Ctx<'_>, due: Option<std::time::Duration>) -> Step {
        let dir = match self.pick(true, true) {
            Ok(d) => d,
            Err(step) => return step,
        };
        self.dir_path(dir);
        let started = Instant::now();
        let result = std::fs::metadata(&self.path);
        let ended = Instant::now();
        self.s.dirs_busy.set(dir, false);
        match result {
            Ok(_) => ctx.record(OpClass::Getattr, 0, started, ended, due),
            Err(e) => self.fail(ctx, OpClass::Getattr, &e),
        }
        Step::Again
    }

    /// delete, open, close, getattr, setattr, access, copy, move: operations on an existing file.
    fn on_existing(&mut self, ctx: &mut Ctx<'_>, op: FileOp, due: Option<std::time::Duration>) -> Step {
        let file = match self.pick(true, false) {
            Ok(f) => f,
            Err(step) => return step,
        };
        self.file_path(file);
        let target = match op {
            FileOp::Copy | FileOp::Move => match self.pick(false, false) {
                Ok(t) => {
                    self.other.clear();
                    self.other.push_str(&self.root);
                    self.other.push('/');
                    self.s.tree.push_file(t, &mut self.other);
                    Some(t)
                }
                Err(step) => {
                    self.s.files_busy.release(file);
                    return step;
                }
            },
            _ => None,
        };
        if matches!(op, FileOp::Open | FileOp::Close) {
            self.open_close(ctx, due);
        } else {
            let started = Instant::now();
            let (class, result) = self.metadata_call(op);
            let ended = Instant::now();
            match result {
                Ok(bytes) => {
                    ctx.record(class, bytes, started, ended, due);
                    self.mark(op, file, target);
                }
                Err(e) => self.fail(ctx, class, &e),
            }
        }
        self.s.files_busy.release(file);
        if let Some(t) = target {
            self.s.files_busy.release(t);
        }
        Step::Again
    }

    /// vdbench's open (and close) operation: the open and the close timed apart.
    fn open_close(&mut self, ctx: &mut Ctx<'_>, due: Option<std::time::Duration>) {
        let started = Instant::now();
        let handle = open_data_file(Path::new(&self.path), OpenFor::read(self.s.state.direct));
        let opened = Instant::now();
        match handle {
            Ok(handle) => {
                ctx.record(OpClass::Open, 0, started, opened, due);
                drop(handle);
                ctx.record(OpClass::Close, 0, opened, Instant::now(), None);
            }
            Err(e) => self.fail(ctx, OpClass::Open, &e),
        }
    }

    /// The system call of a metadata operation on `self.path` (and `self.other`): its class and bytes moved.
    fn metadata_call(&mut self, op: FileOp) -> (OpClass, io::Result<u64>) {
        match op {
            FileOp::Delete => (OpClass::Delete, std::fs::remove_file(&self.path).map(|()| 0)),
            FileOp::Getattr => (OpClass::Getattr, std::fs::metadata(&self.path).map(|_| 0)),
            FileOp::Setattr => {
                self.mode_toggle = !self.mode_toggle;
                let mode = if self.mode_toggle { 0o640 } else { 0o644 };
                (OpClass::Setattr, std::fs::set_permissions(&self.path, Permissions::from_mode(mode)).map(|()| 0))
            }
            FileOp::Access => (
                OpClass::Access,
                rustix::fs::access(self.path.as_str(), rustix::fs::Access::READ_OK)
                    .map(|()| 0)
                    .map_err(io::Error::from),
            ),
            FileOp::Copy => (OpClass::Copy, std::fs::copy(&self.path, &self.other)),
            FileOp::Move => (OpClass::Move, std::fs::rename(&self.path, &self.other).map(|()| 0)),
            FileOp::Read
            | FileOp::Write
            | FileOp::Create
            | FileOp::Mkdir
            | FileOp::Rmdir
            | FileOp::Open
            | FileOp::Close => {
                unreachable!("dispatched by step")
            }
        }
    }

    /// What a successful operation changed in the tree's state. A deleted file's content, and a copy's or move's
    /// target (whose planned size is not the source's), are forgotten by verification until written again.
    fn mark(&mut self, op: FileOp, file: u64, target: Option<u64>) {
        if let Some(v) = self.s.verify {
            let forget = |f: u64| v.verifier.forget(v.file(f));
            match op {
                FileOp::Delete => forget(file),
                FileOp::Copy => target.into_iter().for_each(forget),
                FileOp::Move => [Some(file), target].into_iter().flatten().for_each(forget),
                _ => {}
            }
        }
        let files = &self.s.state.files;
        match op {
            FileOp::Delete => files.set(file, false),
            FileOp::Copy => files.set(target.expect("copy has a target"), true),
            FileOp::Move => {
                files.set(file, false);
                files.set(target.expect("move has a target"), true);
            }
            _ => {}
        }
    }
}
