//! How many scheduler threads serve a stream phase's viewers, chosen from the engine, the audience and the
//! target, with the reason in words for the plan. A media server has a reader per stream (or a pool of them),
//! so the device's queue holds a read for every viewer that waits for one; streamcap's viewers must reach the
//! storage the same way or they measure streamcap's own thread count:
//! - the sync engine reads one chunk at a time per thread: one thread per viewer (up to `THREADS_MAX`, then the
//!   viewers share them), so no viewer waits behind another's read;
//! - a btrfs pool with copies (raid1, raid1c3/4, raid10) under the read policy `pid` sends a read to copy
//!   `pid % copies` of the reading thread (fs/btrfs/volumes.c, `find_live_mirror`): one thread per viewer too,
//!   so the viewers spread over every copy as a server's readers do, whatever the engine;
//! - otherwise io_uring (and http) keep a read in flight per viewer on one thread per CPU.
//!
//! On such a pool the threads' ids are also spread over the copies (`ThreadPlan::spread`): thread `i` gets an id
//! equal to `i` modulo the copies (crates/run/src/spread.rs), so the viewers' reads fall on each copy alike.
//!
//! `--workers` (a phase's `workers`) overrides all of it. Pure: the pool's facts come in `Facts::mirrors`.
//!
//! On such a pool the viewers' direct reads are not io_uring's to make (`viewer_engine`): io_uring first issues
//! a read inline with IOCB_NOWAIT, and btrfs refuses every NOWAIT direct read longer than a page with EAGAIN
//! (fs/btrfs/direct-io.c, `btrfs_dio_iomap_begin`: "!write && IOMAP_NOWAIT && length > PAGE_SIZE"), so io_uring
//! hands each one to an io-wq worker thread (`iou-wrk-TID`), which issues the bio. The pid read policy then
//! follows the workers' pids, whatever the viewers' threads are: one member of a raid1 pair read 61.8 % of a
//! step and its mirror 17.6 %. A media server's reads come from its own threads, so there the viewers read with
//! the sync engine, a thread each, and the plan says why. The same on a FUSE filesystem (sshfs), for another
//! reason: there io_uring hands no read to a worker (none ran through a step of 22 viewers over sshfs) but issues
//! it inline, where it blocks the submitting scheduler thread until the file server answers, so the viewers of
//! a thread per CPU wait behind each other's reads: an issue lag of 523 ms (p99) where the sync engine's thread
//! each had 3.7 ms, and `check --quick` started 18–19 × 1080p where sync started 21–22 (docs/validation.md,
//! finding 5).

use serde::Serialize;

use super::Facts;
use super::streams_limits::THREAD_HEADROOM;
use crate::engine::EngineKind;

/// The most scheduler threads a step starts by default: one per viewer up to here, then viewers share them.
/// nginx's thread pool for blocking reads has 32 threads by default and a server of one process per stream
/// has one each; 256 covers the audiences a single disk or small pool serves, at 256 KiB of buffer each.
pub const THREADS_MAX: u32 = 256;

/// A pool whose members hold copies of each block and whose read policy picks the copy by the reading
/// thread (btrfs raid1, raid1c3, raid1c4, raid10 under `pid`), as gathered for planning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mirrors {
    /// The data profile's name ("raid1", "raid10" …).
    pub profile: String,
    /// Copies of each block, of which one serves a read.
    pub copies: u32,
    /// The pool's members.
    pub members: u32,
    /// The read policy ("pid"; `None`: a kernel before 5.11, which always uses pid).
    pub policy: Option<String>,
}

impl Mirrors {
    /// Whether the copy a read goes to depends on the reading thread.
    pub fn by_thread(&self) -> bool {
        self.copies > 1 && self.policy.as_deref().is_none_or(|p| p == "pid")
    }
}

/// The scheduler threads of a stream phase: a step of `n` viewers runs `for_viewers(n)` of them, each with up
/// to `slots_per_worker` reads in flight, the viewers dealt round-robin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadPlan {
    /// A step starts at least this many threads (fewer only when it has fewer viewers).
    pub least: u32,
    /// Viewers per thread before a step starts another one.
    pub viewers_per_thread: u32,
    /// Never more threads than this.
    pub most: u32,
    /// Reads in flight per thread at most.
    pub slots_per_worker: u32,
    /// The copies the pool picks by the reading thread's id: thread `i`'s id is `i` modulo this, so the
    /// viewers spread over the copies evenly (1: any ids).
    pub spread: u32,
    /// Why these, in words for the plan.
    pub why: String,
}

impl ThreadPlan {
    /// The threads a step of `viewers` viewers runs.
    pub fn for_viewers(&self, viewers: u32) -> u32 {
        self.for_depth(viewers).min(viewers).max(1)
    }

    /// The threads a raw phase of `depth` reads in flight runs to read as the viewers would (the estimate's): as
    /// for that many viewers, but never fewer than `least`.
    pub fn for_depth(&self, depth: u32) -> u32 {
        depth.div_ceil(self.viewers_per_thread.max(1)).max(self.least).min(self.most).max(1)
    }
}

/// What the choice depends on besides the facts.
#[derive(Debug, Clone, Copy)]
pub struct ThreadAsk {
    pub engine: EngineKind,
    /// `--workers`, if given: the threads, whatever else.
    pub workers: Option<u32>,
    /// Reads in flight per thread the engine holds (the asked `--inflight`, lowered to the engine's depth).
    pub slots_per_worker: u32,
    /// Ingest writers, which are threads too.
    pub ingest_writers: u32,
}

/// Chooses the scheduler threads: see the module's notes. The reads in flight in all never exceed what one
/// thread per CPU with `slots_per_worker` each would hold (the memory `check_request` allowed), and the threads
/// never exceed what this process may start.
pub fn choose_threads(ask: ThreadAsk, facts: &Facts) -> ThreadPlan {
    let cpus = facts.cpus.max(1);
    let slots = ask.slots_per_worker.max(1);
    let mirrors = facts.mirrors.as_ref().filter(|m| m.by_thread() && ask.engine != EngineKind::Http);
    let spread = mirrors.map_or(1, |m| m.copies);
    if let Some(w) = ask.workers {
        let why = format!("{w} scheduler thread(s), as asked (--workers), up to {slots} read(s) in flight each");
        return ThreadPlan { least: w, viewers_per_thread: u32::MAX, most: w, slots_per_worker: slots, spread, why };
    }
    let room =
        facts.limits.threads.map_or(u64::MAX, |t| t.saturating_sub(THREAD_HEADROOM + u64::from(ask.ingest_writers)));
    let most = u64::from(THREADS_MAX).min(room).max(u64::from(cpus)) as u32;
    let per_cpu = ThreadPlan {
        least: cpus,
        viewers_per_thread: u32::MAX,
        most: cpus,
        slots_per_worker: slots,
        spread,
        why: String::new(),
    };
    let budget = u64::from(cpus) * u64::from(slots);
    let spread_slots = (budget / u64::from(most)).clamp(1, u64::from(slots)) as u32;
    let share = |most: u32| {
        if most < THREADS_MAX { format!("up to {most} (what this process may start)") } else { format!("up to {most}") }
    };
    match (ask.engine, mirrors) {
        (EngineKind::Http | EngineKind::Null, _) => ThreadPlan {
            why: format!("{cpus} scheduler thread(s), one per CPU, up to {slots} read(s) in flight each"),
            ..per_cpu
        },
        (_, Some(m)) => ThreadPlan {
            least: pool_least(m, cpus, most),
            viewers_per_thread: 1,
            most,
            slots_per_worker: if slots == 1 { 1 } else { spread_slots },
            spread,
            why: mirrors_why(m, &share(most), pool_least(m, cpus, most)),
        },
        (_, None) if slots == 1 => ThreadPlan {
            least: cpus,
            viewers_per_thread: 1,
            most,
            slots_per_worker: 1,
            spread,
            why: format!(
                "the {} engine reads one chunk at a time per thread, so one scheduler thread per viewer, {} \
                 (then the viewers share them)",
                ask.engine.name(),
                share(most)
            ),
        },
        _ => ThreadPlan {
            why: format!("{cpus} scheduler thread(s), one per CPU, up to {slots} read(s) in flight each"),
            ..per_cpu
        },
    }
}

/// The engine a stream phase's viewers read with: `engine`, except where io_uring's reads would be issued by
/// kernel workers rather than by the viewers (see the module's notes): its direct reads on a pool whose copy is
/// picked by the reading thread, and every read on a FUSE filesystem. Those read with the sync engine, and the
/// words say why.
pub fn viewer_engine(engine: EngineKind, direct: bool, facts: &Facts) -> (EngineKind, Option<String>) {
    if engine != EngineKind::IoUring {
        return (engine, None);
    }
    if let Some(m) = facts.mirrors.as_ref().filter(|m| m.by_thread() && direct) {
        let why = format!(
            "on btrfs {}, io_uring's direct reads are issued by kernel workers (btrfs refuses a non-blocking direct \
             read longer than a page, so io_uring hands each to an io-wq thread), whose pid picks the copy: the \
             viewers read with the sync engine, as a server's own threads would",
            m.profile
        );
        return (EngineKind::Sync, Some(why));
    }
    let Some(fs) = &facts.fuse else { return (engine, None) };
    let why = format!(
        "on {fs} (FUSE), io_uring issues each read inline and the read blocks the scheduler thread that submits \
         it until the file server answers, so a thread per CPU has one read in flight at a time: the viewers read \
         with the sync engine, a thread each, as a server's own threads would"
    );
    (EngineKind::Sync, Some(why))
}

/// The fewest threads on a pool whose copy is picked by thread: two per member (at least one per copy and per
/// CPU). A step has a thread per viewer anyway; this is for the estimate's phases, whose sequential reads at
/// depth 4 read four places of the library with four threads: on a four-device raid1 those fell in chunks of one
/// pair of members (two of four) as often as not, and the estimate, which caps the capacity search, was half
/// the pool's.
fn pool_least(m: &Mirrors, cpus: u32, most: u32) -> u32 {
    cpus.max(m.copies).max(m.members.saturating_mul(2)).min(most.max(cpus))
}

/// Why a pool whose copy is picked by thread gets a thread per viewer, in words.
fn mirrors_why(m: &Mirrors, up_to: &str, least: u32) -> String {
    format!(
        "btrfs {} of {} devices picks the copy a read goes to by the reading thread (read policy pid, pid % {}): \
         one scheduler thread per viewer, {up_to}, so the viewers' reads spread over every copy as a server's \
         readers do; at least {least} threads (two per member: the estimate's sequential reads reach every member)",
        m.profile, m.members, m.copies
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::ResourceLimits;

    fn ask(engine: EngineKind) -> ThreadAsk {
        ThreadAsk { engine, workers: None, slots_per_worker: engine.max_queue_depth().min(256), ingest_writers: 0 }
    }

    fn raid(profile: &str, copies: u32, policy: Option<&str>) -> Facts {
        let mirrors = Mirrors { profile: profile.into(), copies, members: 4, policy: policy.map(Into::into) };
        Facts { mirrors: Some(mirrors), ..Facts::directory(None) }
    }

    #[test]
    fn the_sync_engine_gets_a_thread_per_viewer_up_to_the_cap() {
        let plan = choose_threads(ask(EngineKind::Sync), &Facts::directory(None));
        assert_eq!((plan.least, plan.viewers_per_thread, plan.most, plan.slots_per_worker), (2, 1, THREADS_MAX, 1));
        assert_eq!([1, 2, 3, 37, 256, 1000].map(|n| plan.for_viewers(n)), [1, 2, 3, 37, 256, 256]);
        assert!(
            plan.why.contains("one chunk at a time per thread, so one scheduler thread per viewer"),
            "{}",
            plan.why
        );
        // A pids limit of 40 threads leaves 32 for scheduler threads (8 kept free, none for ingest).
        let tight =
            Facts { limits: ResourceLimits { threads: Some(40), ..Default::default() }, ..Facts::directory(None) };
        let plan = choose_threads(ask(EngineKind::Sync), &tight);
        assert_eq!(plan.for_viewers(100), 32);
        assert!(plan.why.contains("up to 32 (what this process may start)"), "{}", plan.why);
    }

    #[test]
    fn io_uring_keeps_one_thread_per_cpu_unless_a_pool_picks_copies_by_thread() {
        let plan = choose_threads(ask(EngineKind::IoUring), &Facts::directory(None));
        assert_eq!([1, 2, 40, 1000].map(|n| plan.for_viewers(n)), [1, 2, 2, 2]);
        assert_eq!(plan.slots_per_worker, 256);
        let plan = choose_threads(ask(EngineKind::IoUring), &raid("raid1", 2, Some("pid")));
        assert_eq!([1, 2, 40, 1000].map(|n| plan.for_viewers(n)), [1, 2, 40, 256]);
        // The reads in flight in all stay what two threads of 256 held.
        assert_eq!(plan.slots_per_worker, 2);
        assert!(plan.why.contains("btrfs raid1 of 4 devices picks the copy"), "{}", plan.why);
        assert_eq!((plan.least, plan.for_depth(4), plan.for_depth(16)), (8, 8, 16));
        let plan = choose_threads(ask(EngineKind::IoUring), &raid("raid1c3", 3, None));
        assert_eq!((plan.least, plan.for_viewers(2), plan.for_viewers(4)), (8, 2, 4));
        // Round-robin reads alternate copies whatever the thread: one thread per CPU does.
        let plan = choose_threads(ask(EngineKind::IoUring), &raid("raid10", 2, Some("round-robin")));
        assert_eq!(plan.for_viewers(40), 2);
    }

    #[test]
    fn threads_spread_their_ids_over_the_copies_a_pool_picks_by_thread() {
        for engine in [EngineKind::Sync, EngineKind::IoUring] {
            assert_eq!(choose_threads(ask(engine), &raid("raid10", 2, Some("pid"))).spread, 2);
            assert_eq!(choose_threads(ask(engine), &raid("raid1c3", 3, None)).spread, 3);
            assert_eq!(choose_threads(ask(engine), &raid("raid1", 2, Some("round-robin"))).spread, 1);
            assert_eq!(choose_threads(ask(engine), &Facts::directory(None)).spread, 1);
        }
        let asked = ThreadAsk { workers: Some(3), ..ask(EngineKind::Sync) };
        assert_eq!(choose_threads(asked, &raid("raid1", 2, Some("pid"))).spread, 2, "--workers threads too");
        assert_eq!(choose_threads(ask(EngineKind::Http), &raid("raid1", 2, Some("pid"))).spread, 1, "nginx reads");
    }

    #[test]
    fn io_uring_viewers_on_a_pool_that_picks_copies_by_thread_read_with_sync() {
        let pid = raid("raid1", 2, Some("pid"));
        let (engine, why) = viewer_engine(EngineKind::IoUring, true, &pid);
        assert_eq!(engine, EngineKind::Sync);
        let why = why.unwrap_or_default();
        assert!(why.contains("issued by kernel workers") && why.contains("read with the sync engine"), "{why}");
        // Buffered reads, another read policy, no pool, or another engine: as asked.
        assert_eq!(viewer_engine(EngineKind::IoUring, false, &pid), (EngineKind::IoUring, None));
        let rr = raid("raid10", 2, Some("round-robin"));
        assert_eq!(viewer_engine(EngineKind::IoUring, true, &rr), (EngineKind::IoUring, None));
        assert_eq!(viewer_engine(EngineKind::IoUring, true, &Facts::directory(None)), (EngineKind::IoUring, None));
        assert_eq!(viewer_engine(EngineKind::Http, true, &pid), (EngineKind::Http, None));
        // Before 5.11 there is no policy file, and the kernel reads by pid.
        assert_eq!(viewer_engine(EngineKind::IoUring, true, &raid("raid1", 2, None)).0, EngineKind::Sync);
    }

    #[test]
    fn io_uring_viewers_on_a_fuse_filesystem_read_with_sync() {
        let sshfs = Facts { fuse: Some("fuse.sshfs".into()), ..Facts::directory(None) };
        for direct in [true, false] {
            let (engine, why) = viewer_engine(EngineKind::IoUring, direct, &sshfs);
            assert_eq!(engine, EngineKind::Sync);
            let why = why.unwrap_or_default();
            assert!(
                why.starts_with("on fuse.sshfs (FUSE)") && why.contains("with the sync engine, a thread each"),
                "{why}"
            );
        }
        assert_eq!(viewer_engine(EngineKind::Sync, true, &sshfs), (EngineKind::Sync, None));
        // With sync, a thread per viewer.
        let plan = choose_threads(ask(EngineKind::Sync), &sshfs);
        assert_eq!(plan.for_viewers(22), 22);
    }

    #[test]
    fn workers_asked_are_taken_as_they_are() {
        let asked = ThreadAsk { workers: Some(3), ..ask(EngineKind::Sync) };
        let plan = choose_threads(asked, &raid("raid1", 2, Some("pid")));
        assert_eq!([1, 3, 50].map(|n| plan.for_viewers(n)), [1, 3, 3]);
        assert!(plan.why.starts_with("3 scheduler thread(s), as asked (--workers)"), "{}", plan.why);
    }
}
