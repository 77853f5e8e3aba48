//! The contract between the one I/O core (`run::core`) and the work it drives: the `Io` a schedule asks for
//! (and its `Role`), what it wants `Next`, the `Ctx` it decides in, and the `Schedule` trait every kind of work
//! implements — and every compatibility wrapper, which is a schedule around another. Moved out of core.rs,
//! which passed 500 lines; the core re-exports all of it. Its `testing` module drives schedules without a core.
//!
//! Must not: run anything; the core does.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::control::PhaseControl;
use super::tally::{Failure, Tally};
use crate::engine::OpKind;
use crate::metrics::OpClass;

/// One I/O a schedule asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Io {
    /// Read, write, fsync or fdatasync.
    pub kind: OpKind,
    /// Index into the engine's file table.
    pub file: u32,
    /// Byte offset in the file.
    pub offset: u64,
    /// Bytes to transfer (0 for flushes).
    pub len: u32,
    /// When the I/O was due, from the worker's origin; `None` when the work is not paced.
    pub due: Option<Duration>,
    /// The schedule's own mark (a viewer's number), handed back on completion.
    pub tag: u32,
    /// What it is to the work: the work itself, a check of recent writes, or a read to the end of a file.
    pub role: Role,
    /// Its own I/O priority (fio cmdprio; see `engine::Request::prio`); 0: the worker thread's.
    pub prio: u16,
}

/// What an I/O is to its schedule's work, beyond its kind. One byte, so that `Io` stays 40 bytes: it is copied
/// into the in-flight table and out of it for every I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The work itself: counted against the I/O budget; fewer bytes than asked is an error (a short transfer).
    Work,
    /// A verification read-back of recent writes (`--verify-backlog`): not part of the work's amount, so not
    /// counted against the I/O budget.
    Check,
    /// A read that may meet the end of its file (the read-back of a file that may have been truncated, or whose
    /// last piece was rounded up to the direct-I/O alignment): fewer bytes than asked is what the file holds
    /// there, not an error. The core records the bytes read and the schedule hears `Ok(bytes)` and judges.
    UntilEof,
}

// The core copies an `Io` into its in-flight table and out again for every I/O: keep it at five words.
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Io>() == 40);

impl Io {
    /// A read or write of the work itself.
    pub const fn transfer(kind: OpKind, file: u32, offset: u64, len: u32, due: Option<Duration>) -> Io {
        Io { kind, file, offset, len, due, tag: 0, role: Role::Work, prio: 0 }
    }
}

/// What a schedule wants next.
#[derive(Debug)]
pub enum Next {
    /// Issue this now.
    Io(Io),
    /// Nothing before this time (from the worker's origin): a paced I/O, a viewer's next chunk, a pause.
    At(Duration),
    /// Nothing until an I/O in flight completes.
    AfterCompletion,
    /// No more work: the worker ends once what is in flight has completed.
    Done,
}

/// What a schedule may use while it decides: the time, what is in flight, and a place to record work it did
/// itself (a file-set schedule opens and creates files between transfers).
pub struct Ctx<'a> {
    /// From the worker's origin.
    pub now: Duration,
    pub in_flight: usize,
    /// The ramp is over: an I/O issued now is measured (its completion recorded, its bytes counted).
    pub measuring: bool,
    /// The engine's file table, for schedules that open files as they go.
    pub files: &'a mut dyn crate::engine::FileTable,
    pub(super) origin: Instant,
    pub(super) tally: &'a mut Tally,
    pub(super) control: &'a PhaseControl,
    pub(super) continue_on_error: bool,
}

impl Ctx<'_> {
    /// Records an operation the schedule did itself, timed from `started` to `ended`; `due` from the origin.
    pub fn record(&mut self, class: OpClass, bytes: u64, started: Instant, ended: Instant, due: Option<Duration>) {
        self.tally.record_timed(class, bytes, started, ended, due.map(|d| self.origin + d));
    }

    /// Records an operation of the schedule's own that failed; it stops the phase unless errors are tolerated.
    #[cold]
    pub fn failed(&mut self, failure: Failure<'_>) {
        self.tally.error(failure, Instant::now());
        if !self.continue_on_error {
            self.control.abort.store(true, Ordering::Relaxed);
        }
    }
}

/// A source of I/O driven by the core. Implementations do no I/O through engines themselves.
pub trait Schedule {
    /// Called only when the core has a free slot; an `Io` returned is issued at once.
    fn next(&mut self, ctx: &mut Ctx<'_>) -> Next;

    /// Right before `io` is issued, with its slot's buffer (`io.len` long at most): fill a write's data, claim
    /// what must not be touched twice at once. `false`: do not issue it (it is dropped, and the core asks again).
    fn prepare(&mut self, _io: &Io, _buf: &mut [u8]) -> bool {
        true
    }

    /// An I/O completed: bytes transferred or the errno, `now` from the worker's origin, and the slot's buffer
    /// (what a read brought, or its last piece when it was longer than the buffer). Returns whether its lateness
    /// counts (a viewer's chunk thrown away after a seek does not).
    fn completed(&mut self, _io: &Io, _result: Result<u32, i32>, _now: Duration, _buf: &[u8]) -> bool {
        true
    }

    /// A measured I/O completed as asked (after `completed`): its total latency in nanoseconds (fio's lat: from
    /// when the core took it into its slot to its completion) and its bytes. For schedules that steer by what
    /// the storage does (`depth_search::DepthSearched`); the default does nothing and compiles to nothing.
    #[inline]
    fn measured(&mut self, _io: &Io, _latency_ns: u64, _bytes: u32) {}

    /// When the work ends by its runtime or budget (not by Ctrl-C or an error): a flush still owed.
    fn owed_flush(&mut self) -> Option<Io> {
        None
    }

    /// The worker is about to end (`now` from its origin): close what is open, end what is under way.
    fn finish(&mut self, _now: Duration) {}

    /// The path behind a file index, for error messages.
    fn path(&self, file: u32) -> &Path;
}

/// What the unit tests of schedule wrappers drive them with: a `Ctx` without a core, and a scripted schedule.
#[cfg(test)]
pub(super) mod testing {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    use super::*;
    use crate::engine::{EngineError, FileTable};

    struct NoFiles;

    impl FileTable for NoFiles {
        fn put(&mut self, _index: u32, _file: Option<std::fs::File>) -> Result<Option<std::fs::File>, EngineError> {
            Ok(None)
        }
    }

    /// Calls `f` with a `Ctx` at `now` (from the origin), `in_flight` I/Os in flight, the ramp over when
    /// `measuring`.
    pub fn with_ctx<R>(now: Duration, in_flight: usize, measuring: bool, f: impl FnOnce(&mut Ctx<'_>) -> R) -> R {
        let origin = Instant::now();
        let mut tally = Tally::new(0, false, origin);
        let control = PhaseControl::new(Arc::new(AtomicBool::new(false)));
        let mut files = NoFiles;
        let mut ctx = Ctx {
            now,
            in_flight,
            measuring,
            files: &mut files,
            origin,
            tally: &mut tally,
            control: &control,
            continue_on_error: false,
        };
        f(&mut ctx)
    }

    /// Asks `schedule` for work as the core does (`next`, then `prepare` of an I/O): the I/O taken, or what was
    /// answered instead (`Err`: refused by `prepare`, or not an I/O).
    pub fn take<S: Schedule>(schedule: &mut S, now: Duration, in_flight: usize, measuring: bool) -> Result<Io, Next> {
        match with_ctx(now, in_flight, measuring, |ctx| schedule.next(ctx)) {
            Next::Io(io) => {
                let mut buf = vec![0u8; io.len as usize];
                if schedule.prepare(&io, &mut buf) { Ok(io) } else { Err(Next::AfterCompletion) }
            }
            other => Err(other),
        }
    }

    /// 4 KiB I/Os of `kinds` in turn, for ever; `prepare` refuses while `refuse`; `owed` is a flush still owed.
    pub struct Script {
        pub kinds: Vec<OpKind>,
        pub given: usize,
        pub refuse: bool,
        pub role: Role,
        pub owed: Option<Io>,
    }

    impl Script {
        pub fn of(kinds: &[OpKind]) -> Script {
            Script { kinds: kinds.to_vec(), given: 0, refuse: false, role: Role::Work, owed: None }
        }
    }

    impl Schedule for Script {
        fn next(&mut self, _ctx: &mut Ctx<'_>) -> Next {
            let kind = self.kinds[self.given % self.kinds.len()];
            self.given += 1;
            Next::Io(Io { role: self.role, ..Io::transfer(kind, 0, 0, 4096, None) })
        }

        fn prepare(&mut self, _io: &Io, _buf: &mut [u8]) -> bool {
            !self.refuse
        }

        fn owed_flush(&mut self) -> Option<Io> {
            self.owed.take()
        }

        fn path(&self, _file: u32) -> &Path {
            Path::new("script")
        }
    }
}
