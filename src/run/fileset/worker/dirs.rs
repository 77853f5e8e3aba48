//! The directory operations of a file-set thread: mkdir, rmdir and getattr of a directory (fio's dircreate,
//! dirdelete and dirstat). Same rules as the file operations in `worker.rs`: claim before touching, record
//! every operation, no allocation.

use std::io;
use std::time::Instant;

use super::{Step, Worker};
use crate::metrics::OpClass;

impl Worker<'_> {
    pub(super) fn mkdir(&mut self) -> Step {
        let dir = match self.pick(false, true) {
            Ok(d) => d,
            Err(step) => return step,
        };
        let parent_ok = self.s.tree.shape.parent(dir).is_none_or(|p| self.s.state.dirs.get(p));
        if parent_ok {
            self.dir_path(dir);
            let due = self.pace();
            let t0 = Instant::now();
            let result = std::fs::create_dir(&self.path);
            let t1 = Instant::now();
            match result {
                Ok(()) => {
                    self.record(OpClass::Mkdir, 0, t0, t1, due);
                    self.s.state.dirs.set(dir, true);
                }
                Err(e) => self.fail(OpClass::Mkdir, dir, 0, &e, t1),
            }
        }
        self.s.dirs_busy.set(dir, false);
        Step::Again
    }

    pub(super) fn rmdir(&mut self) -> Step {
        let dir = match self.pick(true, true) {
            Ok(d) => d,
            Err(step) => return step,
        };
        self.dir_path(dir);
        let due = self.pace();
        let t0 = Instant::now();
        let result = std::fs::remove_dir(&self.path);
        let t1 = Instant::now();
        self.s.dirs_busy.set(dir, false);
        match result {
            Ok(()) => {
                self.not_empty = 0;
                self.record(OpClass::Rmdir, 0, t0, t1, due);
                self.s.state.dirs.set(dir, false);
            }
            // A directory that still holds files is not a candidate: not an error, and not an operation.
            Err(e) if e.kind() == io::ErrorKind::DirectoryNotEmpty => {
                self.not_empty += 1;
                if self.not_empty > 2 * self.s.tree.dirs + 16 {
                    return Step::Done;
                }
            }
            Err(e) => self.fail(OpClass::Rmdir, dir, 0, &e, t1),
        }
        Step::Again
    }

    /// getattr of an existing directory (fio dirstat).
    pub(super) fn stat_dir(&mut self) -> Step {
        let dir = match self.pick(true, true) {
            Ok(d) => d,
            Err(step) => return step,
        };
        self.dir_path(dir);
        let due = self.pace();
        let t0 = Instant::now();
        let result = std::fs::metadata(&self.path);
        let t1 = Instant::now();
        self.s.dirs_busy.set(dir, false);
        match result {
            Ok(_) => self.record(OpClass::Getattr, 0, t0, t1, due),
            Err(e) => self.fail(OpClass::Getattr, dir, 0, &e, t1),
        }
        Step::Again
    }
}
