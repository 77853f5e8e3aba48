//! Worker threads whose thread ids spread evenly over a pool's copies.
//!
//! A btrfs pool with copies (raid1, raid10) under the read policy `pid` sends a read to copy `pid % copies` of
//! the reading thread (fs/btrfs/volumes.c, `find_live_mirror`), and the plan gives each viewer its own thread so
//! that the viewers spread over the copies as a server's readers do (`crates/plan/src/streams_threads.rs`).
//! Threads started one after the other mostly get consecutive ids, but any other thread or process started
//! meanwhile takes an id from the same counter: a step of nine viewers could put six on one copy and three on
//! the other, and that copy's members then bound the step at two thirds of the pool (a quick check's 2160p HEVC
//! search on a raid10 failed 9 viewers where the pool carries 12, docs/validation.md). So threads are started
//! first, each says its id, and worker `i` is handed to a thread whose id is `i` modulo the copies; a thread
//! whose id is not needed is let go.

use std::io;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::{Scope, ScopedJoinHandle};

/// Work handed to a started thread.
pub(super) type Job<'scope, R> = Box<dyn FnOnce() -> R + Send + 'scope>;

/// A started thread waiting for its job; dropped without one, it ends with `R::default()`.
pub(super) struct Waiting<'scope, R> {
    job: Sender<Job<'scope, R>>,
    handle: ScopedJoinHandle<'scope, R>,
}

impl<'scope, R> Waiting<'scope, R> {
    /// Hands the thread its job; its handle gives the job's result.
    pub fn run(self, job: Job<'scope, R>) -> ScopedJoinHandle<'scope, R> {
        // The thread waits for this message until its sender is dropped: it cannot have gone.
        let _ = self.job.send(job);
        self.handle
    }
}

/// At most this many threads are started beyond `count` before giving up on an even spread (another process
/// taking every other id in lockstep): the threads are then used as they came.
const EXTRA_MOST: usize = 64;

/// Starts `count` waiting threads in `scope`, thread `i` with an id equal to `i` modulo `copies` where the ids
/// allow it (see the module's notes). An error is the first thread that could not be started.
pub(super) fn threads_by_copy<'scope, 'env, R: Default + Send + 'scope>(
    scope: &'scope Scope<'scope, 'env>,
    count: usize,
    copies: u32,
) -> io::Result<Vec<Waiting<'scope, R>>> {
    let copies = copies.max(1) as usize;
    if copies == 1 {
        // Any ids do: none is waited for.
        return (0..count).map(|_| start_waiting(scope).map(|(thread, _)| thread)).collect();
    }
    // Workers 0, copies, 2 × copies … want copy 0; the first `count % copies` copies have one more.
    let wanted: Vec<usize> = (0..copies).map(|c| count / copies + usize::from(c < count % copies)).collect();
    let mut by_copy: Vec<Vec<Waiting<'scope, R>>> = (0..copies).map(|_| Vec::new()).collect();
    let mut extra = Vec::new();
    let mut started = 0;
    while (0..copies).any(|c| by_copy[c].len() < wanted[c]) && started < count + EXTRA_MOST {
        let (thread, id) = start_waiting(scope)?;
        started += 1;
        let id = id.recv().map_err(|_| io::Error::other("a worker thread ended before it said its id"))?;
        let copy = id as usize % copies;
        if by_copy[copy].len() < wanted[copy] { by_copy[copy].push(thread) } else { extra.push(thread) }
    }
    let mut threads = Vec::with_capacity(count);
    for i in 0..count {
        let thread = by_copy[i % copies].pop().or_else(|| extra.pop()).expect("started at least `count` threads");
        threads.push(thread);
    }
    Ok(threads)
}

/// Starts one thread that says its id (on the receiver returned) and then waits for its job.
fn start_waiting<'scope, 'env, R: Default + Send + 'scope>(
    scope: &'scope Scope<'scope, 'env>,
) -> io::Result<(Waiting<'scope, R>, Receiver<i32>)> {
    let (job_tx, job_rx) = mpsc::channel::<Job<'scope, R>>();
    let (id_tx, id_rx) = mpsc::sync_channel(1);
    let handle = std::thread::Builder::new().spawn_scoped(scope, move || {
        let _ = id_tx.send(thread_id());
        job_rx.recv().map_or_else(|_| R::default(), |job| job())
    })?;
    Ok((Waiting { job: job_tx, handle }, id_rx))
}

/// The calling thread's id, as the kernel's pid read policy sees it.
fn thread_id() -> i32 {
    rustix::thread::gettid().as_raw_nonzero().get()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Sets its flag when dropped: a failed assertion must still stop the loop, or the scope waits for ever.
    struct StopOnDrop<'a>(&'a AtomicBool);

    impl Drop for StopOnDrop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }

    #[test]
    fn workers_alternate_copies_while_other_threads_take_ids() {
        // Another thread starting short-lived threads in a loop takes ids between ours, as other processes do
        // (without the spread, nine threads got ids 14384-86, 14388-89, 14391, 14393, 14395-96).
        let stop = AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let _ = std::thread::spawn(|| {}).join();
                }
            });
            let _stop = StopOnDrop(&stop);
            for count in [9, 10, 33] {
                let threads = threads_by_copy::<i32>(scope, count, 2).expect("threads start");
                let tids: Vec<i32> =
                    threads.into_iter().map(|t| t.run(Box::new(thread_id)).join().expect("joins")).collect();
                let copies: Vec<usize> = tids.iter().map(|t| *t as usize % 2).collect();
                let expected: Vec<usize> = (0..count).map(|i| i % 2).collect();
                assert_eq!(copies, expected, "thread ids {tids:?}");
            }
        });
    }

    #[test]
    fn one_copy_takes_the_threads_as_they_come_and_unused_ones_end() {
        std::thread::scope(|scope| {
            let threads = threads_by_copy::<u32>(scope, 3, 1).expect("threads start");
            assert_eq!(threads.len(), 3);
            let mut threads = threads.into_iter();
            let first = threads.next().expect("three");
            drop(threads);
            assert_eq!(first.run(Box::new(|| 7)).join().expect("joins"), 7);
        });
    }
}
