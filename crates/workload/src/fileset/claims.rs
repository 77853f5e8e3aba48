//! Which files threads are working on, and whether several may work on one at once.
//!
//! Without sharing (vdbench's default) a thread claims a file exclusively: one bit per file, no two threads on
//! the same file. With sharing (vdbench's `fileio=(random,shared)`, streamcap's `shared = true`) the reads and
//! writes of a shared workload may use a file other threads are reading and writing too, as vdbench's
//! `FileEntry.setFileBusy` keeps a use count; operations that change what exists (create, delete, the target of
//! copy and move) and every thread of a workload that does not share still claim a file exclusively, as
//! vdbench's `setFileBusyExc`. That needs a count per file, so only trees a shared workload works on pay for it
//! (2 bytes per file; the plan caps such trees at `MAX_SHARED_TREE_FILES`).

use std::sync::atomic::{AtomicU16, AtomicU32, Ordering};

use super::BitSet;

/// Files of a tree with a shared workload, at most: their use counts take 2 bytes each (256 MiB at most).
pub const MAX_SHARED_TREE_FILES: u64 = 1 << 27;

/// The count of a file held exclusively.
const EXCLUSIVE: u16 = u16::MAX;

/// The claims on a tree's files.
#[derive(Debug)]
pub struct FileClaims {
    kind: Kind,
    /// The most threads that held one file at once (1 once anything was claimed, without sharing).
    most: AtomicU32,
}

#[derive(Debug)]
enum Kind {
    Bits(BitSet),
    Counts(Box<[AtomicU16]>),
}

impl FileClaims {
    /// Claims on `files` files; `sharing`: some workload may share them (a use count per file).
    pub fn new(files: u64, sharing: bool) -> FileClaims {
        let kind = if sharing {
            Kind::Counts((0..files).map(|_| AtomicU16::new(0)).collect())
        } else {
            Kind::Bits(BitSet::new(files, false))
        };
        FileClaims { kind, most: AtomicU32::new(0) }
    }

    /// Claims file `i`, shared with other sharing users or alone; false when it cannot be had now.
    #[inline]
    pub fn claim(&self, i: u64, shared: bool) -> bool {
        let users = match &self.kind {
            Kind::Bits(bits) => u16::from(bits.claim(i)),
            Kind::Counts(counts) => {
                let count = &counts[i as usize];
                let next = |c: u16| match c {
                    0 if !shared => Some(EXCLUSIVE),
                    // Below EXCLUSIVE − 1: 4096 threads at most (checked by the plan) never get near it.
                    c if shared && c < EXCLUSIVE - 1 => Some(c + 1),
                    _ => None,
                };
                match count.fetch_update(Ordering::AcqRel, Ordering::Acquire, next) {
                    Ok(before) if shared => before + 1,
                    Ok(_) => 1,
                    Err(_) => 0,
                }
            }
        };
        if users == 0 {
            return false;
        }
        // Read first: the write (a shared cache line every thread touches) happens only when the figure grows.
        if u32::from(users) > self.most.load(Ordering::Relaxed) {
            self.most.fetch_max(u32::from(users), Ordering::Relaxed);
        }
        true
    }

    /// Gives back a claim this thread holds on file `i`.
    #[inline]
    pub fn release(&self, i: u64) {
        match &self.kind {
            Kind::Bits(bits) => bits.set(i, false),
            Kind::Counts(counts) => {
                let release = |c: u16| match c {
                    EXCLUSIVE => Some(0),
                    c => c.checked_sub(1),
                };
                let _ = counts[i as usize].fetch_update(Ordering::AcqRel, Ordering::Acquire, release);
            }
        }
    }

    /// The most threads that held one file at once so far.
    pub fn most(&self) -> u32 {
        self.most.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_sharing_one_thread_holds_a_file() {
        let claims = FileClaims::new(3, false);
        assert!(claims.claim(1, false));
        assert!(!claims.claim(1, false));
        // A shared claim on a tree without sharing is still exclusive.
        assert!(!claims.claim(1, true));
        claims.release(1);
        assert!(claims.claim(1, true));
        assert_eq!(claims.most(), 1);
    }

    #[test]
    fn sharers_hold_a_file_together_and_keep_exclusive_claims_out() {
        let claims = FileClaims::new(2, true);
        assert!((0..4).all(|_| claims.claim(0, true)));
        assert_eq!(claims.most(), 4);
        assert!(!claims.claim(0, false), "a delete or create must wait for the sharers");
        (0..3).for_each(|_| claims.release(0));
        assert!(!claims.claim(0, false));
        claims.release(0);
        assert!(claims.claim(0, false));
        assert!(!claims.claim(0, true), "sharers wait for an exclusive holder");
        claims.release(0);
        assert!(claims.claim(0, true));
        assert!(claims.claim(1, false) && !claims.claim(1, false));
    }
}
