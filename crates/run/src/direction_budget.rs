//! Per-direction data budgets (vdbench's maxdataread and maxdatawritten) as a schedule wrapper: the worker
//! stops once it has issued that many bytes of reads, or of writes, after the ramp. The core knows nothing of
//! them; it keeps only the budgets every kind of work has (bytes, operations, time).
//!
//! The wrapper counts a read or write when the core takes it (after the inner schedule's `prepare` accepted it;
//! a refused one is never issued) and only when the ramp is over (`Ctx::measuring`, read when the I/O was asked
//! for, which is the moment the core decides whether it is measured), so the count agrees with the core's
//! measured bytes. A check of recent writes (`Role::Check`) is not work and does not count. Once a budget is
//! spent it answers the inner schedule's owed flushes (as the core does when the runtime ends) and then `Done`.
//!
//! Per I/O: two `Option` checks in `next` and an addition in `prepare`. Must not: issue I/O or read a clock.

use std::path::Path;
use std::time::Duration;

use super::schedule::{Ctx, Io, Next, Role, Schedule};
use crate::engine::OpKind;
use crate::plan::DirectionBytes;

/// A schedule that stops after so many bytes read, or written (see the module's header).
pub(super) struct DirectionBudget<S> {
    inner: S,
    budget: DirectionBytes,
    read: u64,
    written: u64,
    /// The ramp was over when the I/O now being prepared was asked for.
    measuring: bool,
}

impl<S: Schedule> DirectionBudget<S> {
    pub(super) fn new(inner: S, budget: DirectionBytes) -> DirectionBudget<S> {
        DirectionBudget { inner, budget, read: 0, written: 0, measuring: false }
    }

    /// A direction has issued its budget.
    #[inline]
    fn spent(&self) -> bool {
        self.budget.read.is_some_and(|b| self.read >= b) || self.budget.written.is_some_and(|b| self.written >= b)
    }
}

impl<S: Schedule> Schedule for DirectionBudget<S> {
    #[inline]
    fn next(&mut self, ctx: &mut Ctx<'_>) -> Next {
        if self.spent() {
            return self.inner.owed_flush().map_or(Next::Done, Next::Io);
        }
        self.measuring = ctx.measuring;
        self.inner.next(ctx)
    }

    #[inline]
    fn prepare(&mut self, io: &Io, buf: &mut [u8]) -> bool {
        if !self.inner.prepare(io, buf) {
            return false;
        }
        if self.measuring && io.role != Role::Check {
            match io.kind {
                OpKind::Read => self.read += u64::from(io.len),
                OpKind::Write => self.written += u64::from(io.len),
                OpKind::Fsync | OpKind::Fdatasync => {}
            }
        }
        true
    }

    #[inline]
    fn completed(&mut self, io: &Io, result: Result<u32, i32>, now: Duration, buf: &[u8]) -> bool {
        self.inner.completed(io, result, now, buf)
    }

    #[inline]
    fn measured(&mut self, io: &Io, latency_ns: u64, bytes: u32) {
        self.inner.measured(io, latency_ns, bytes);
    }

    fn owed_flush(&mut self) -> Option<Io> {
        self.inner.owed_flush()
    }

    fn finish(&mut self, now: Duration) {
        self.inner.finish(now);
    }

    fn path(&self, file: u32) -> &Path {
        self.inner.path(file)
    }
}

#[cfg(test)]
mod tests {
    use super::super::schedule::testing::{Script, take};
    use super::*;

    const NOW: Duration = Duration::from_secs(1);

    fn budget(read: Option<u64>, written: Option<u64>) -> DirectionBytes {
        DirectionBytes { read, written }
    }

    #[test]
    fn a_read_budget_ends_the_work_after_exactly_that_many_bytes_read() {
        // vdbench maxdataread=16k on half reads: the fourth read spends it, and nothing follows it.
        let mut s = DirectionBudget::new(Script::of(&[OpKind::Read, OpKind::Write]), budget(Some(16384), None));
        let mut taken = Vec::new();
        while let Ok(io) = take(&mut s, NOW, 0, true) {
            taken.push(io.kind);
        }
        let reads = taken.iter().filter(|&&k| k == OpKind::Read).count();
        assert_eq!((reads, taken.len()), (4, 7), "{taken:?}");
        assert!(matches!(take(&mut s, NOW, 0, true), Err(Next::Done)));
    }

    #[test]
    fn a_write_budget_leaves_reads_unbounded_until_it_is_spent() {
        let mut s =
            DirectionBudget::new(Script::of(&[OpKind::Read, OpKind::Read, OpKind::Write]), budget(None, Some(8192)));
        let mut taken = Vec::new();
        while let Ok(io) = take(&mut s, NOW, 0, true) {
            taken.push(io.kind);
        }
        assert_eq!(taken, [OpKind::Read, OpKind::Read, OpKind::Write, OpKind::Read, OpKind::Read, OpKind::Write]);
    }

    #[test]
    fn the_ramp_read_backs_and_refused_io_do_not_count() {
        let mut s = DirectionBudget::new(Script::of(&[OpKind::Read]), budget(Some(8192), None));
        for _ in 0..10 {
            take(&mut s, NOW, 0, false).expect("in the ramp nothing counts");
        }
        s.inner.role = Role::Check;
        for _ in 0..10 {
            take(&mut s, NOW, 0, true).expect("a verification read-back is not work");
        }
        (s.inner.role, s.inner.refuse) = (Role::Work, true);
        for _ in 0..10 {
            assert!(matches!(take(&mut s, NOW, 0, true), Err(Next::AfterCompletion)), "refused: never issued");
        }
        s.inner.refuse = false;
        assert_eq!(s.read, 0);
        take(&mut s, NOW, 0, true).unwrap();
        take(&mut s, NOW, 0, true).unwrap();
        assert!(matches!(take(&mut s, NOW, 0, true), Err(Next::Done)));
    }

    #[test]
    fn a_spent_budget_lets_the_owed_flush_out_before_it_ends_the_work() {
        let mut s = DirectionBudget::new(Script::of(&[OpKind::Write]), budget(None, Some(4096)));
        s.inner.owed = Some(Io::transfer(OpKind::Fsync, 0, 0, 0, None));
        assert_eq!(take(&mut s, NOW, 0, true).unwrap().kind, OpKind::Write);
        assert_eq!(take(&mut s, NOW, 1, true).unwrap().kind, OpKind::Fsync, "as the core does when time is up");
        assert!(matches!(take(&mut s, NOW, 1, true), Err(Next::Done)));
        assert_eq!(s.written, 4096, "a flush moves no data");
    }
}
