//! The other processes of a multi-host run (MPI ranks), as the run layer sees them: a [`Transport`] that moves
//! bytes between ranks, a [`Mailbox`] that files what arrives by [`Key`], and [`Cluster`], which the phases use to
//! agree (exchange) and to tell one another when to stop. It knows nothing of MPI: `src/mpi/` implements the
//! transport when the `mpi` feature is on, and the tests here use an in-process one (`local.rs`).
//!
//! Every agreement is an exchange through rank 0, made of point-to-point messages keyed by what it is about (a
//! phase and its step), never a collective call: concurrent phases run their exchanges at the same time on
//! different threads, and messages keyed by phase cannot be paired with the wrong one, which MPI collectives
//! (matched only by their order) would do. A transport never blocks a sender for long, and rank 0 enters an
//! exchange only after it has received everything the other ranks send before that exchange, so no two ranks
//! can wait on each other.
//!
//! A rank that falls silent (its host or the link to it gone: `watch.rs`) is lost for good: no one waits for it
//! or sends to it any more, an exchange gives it an empty share (`unreachable` says whose share that is), and a
//! rank that has lost rank 0 is cut off: its exchanges return at once with only its own share.
//!
//! What it must not do: read clocks for measurement, touch engines, or decide anything on one rank that another
//! rank must decide the same way without exchanging it first.

mod gate;
mod mailbox;
mod phase;
mod shares;
mod step;
mod watch;

// Also for the tests of the crates above (feature `test-support`, a dev-dependency of theirs).
#[cfg(any(test, feature = "test-support"))]
pub mod local;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub use gate::Ready;
pub(super) use gate::{agree_measured, agree_ready, settle};
pub use mailbox::{Key, Mailbox};
pub use phase::{PhaseSync, RankEnd};
pub(super) use phase::{agree_end, agree_start, link, say_done};
pub(super) use shares::{HeldAcross, hold_across};
pub(super) use step::{merge_step, viewers_of};
pub use watch::Patience;
use watch::Watch;

/// Moves bytes between the ranks of a run. Messages from one rank to another arrive in the order they were sent.
pub trait Transport: Send + Sync {
    /// This process's rank, 0-based.
    fn rank(&self) -> u32;
    /// Number of ranks.
    fn size(&self) -> u32;
    /// Sends `payload` under `key` to rank `to` (possibly this rank). Returns at once; delivery is reliable.
    fn send(&self, to: u32, key: Key, payload: Vec<u8>);
    /// Where this rank's incoming messages are filed.
    fn mailbox(&self) -> &Mailbox;
    /// The launcher is tearing the job down (Ctrl-C on mpirun): end without the orderly goodbye, which would wait
    /// for a launcher that no longer answers. Messages already sent are still delivered.
    fn skip_finalize(&self) {}
    /// A rank was lost: end without the orderly goodbye and without waiting for messages to it to leave (they
    /// never will).
    fn abandon(&self) {
        self.skip_finalize();
    }
}

/// How often a waiting rank looks whether a rank it waits for was lost.
const LOOK: Duration = Duration::from_millis(200);

/// The ranks of a run, with their host names.
pub struct Cluster {
    transport: Arc<dyn Transport>,
    hosts: Vec<String>,
    /// Dropped before the transport (`Drop`): its thread sends through it.
    watch: Option<Watch>,
    /// The ranks rank 0 said were lost (its answers to exchanges name them), by rank.
    told: Vec<AtomicBool>,
}

impl Cluster {
    /// Joins the ranks: every rank says its host name, and all learn everyone's, and the watch starts
    /// (`Patience::DEFAULT`). Collective: every rank calls it.
    pub fn join(transport: Box<dyn Transport>, host: &str) -> Cluster {
        Cluster::join_with(transport, host, Patience::DEFAULT)
    }

    /// [`Cluster::join`] with the watch's heartbeat and deadline given.
    pub fn join_with(transport: Box<dyn Transport>, host: &str, patience: Patience) -> Cluster {
        let transport: Arc<dyn Transport> = Arc::from(transport);
        let told = (0..transport.size()).map(|_| AtomicBool::new(false)).collect();
        let mut cluster = Cluster { transport, hosts: Vec::new(), watch: None, told };
        let hosts = cluster.exchange(Key::new(Key::HOSTS, 0, 0), host.as_bytes());
        cluster.hosts = hosts.into_iter().map(|h| String::from_utf8_lossy(&h).into_owned()).collect();
        if cluster.size() > 1 {
            cluster.watch = Some(Watch::start(cluster.transport.clone(), cluster.hosts.clone(), patience));
        }
        cluster
    }

    /// Whether this rank can no longer hear from `rank`: rank 0 declared it lost (and said so), or this rank lost
    /// rank 0 (and with it every other rank).
    pub fn unreachable(&self, rank: u32) -> bool {
        let Some(watch) = &self.watch else { return false };
        if rank == self.rank() {
            false
        } else if self.is_root() {
            watch.is_lost(rank)
        } else {
            watch.is_lost(0) || self.told.get(rank as usize).is_some_and(|t| t.load(Ordering::Relaxed))
        }
    }

    /// Whether any rank was lost (seen from here).
    pub fn any_lost(&self) -> bool {
        (0..self.size()).any(|rank| self.unreachable(rank))
    }

    /// Why an unreachable rank's share ended ("lost: no message from it for 20 s …"), to follow its name.
    pub fn lost_reason(&self) -> String {
        watch::lost_reason(self.watch.as_ref().map_or(Patience::DEFAULT, Watch::patience))
    }

    pub fn rank(&self) -> u32 {
        self.transport.rank()
    }

    pub fn size(&self) -> u32 {
        self.transport.size()
    }

    pub fn is_root(&self) -> bool {
        self.rank() == 0
    }

    /// The host name of every rank, in rank order.
    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// "rank 2 (host b)", for messages.
    pub fn name(&self, rank: u32) -> String {
        match self.hosts.get(rank as usize) {
            Some(host) => format!("rank {rank} ({host})"),
            None => format!("rank {rank}"),
        }
    }

    /// Every rank's `mine`, in rank order, on every rank. Collective: every rank calls it with the same key. It is
    /// also a barrier: no rank returns before every rank has called it.
    pub fn exchange(&self, key: Key, mine: &[u8]) -> Vec<Vec<u8>> {
        let size = self.size() as usize;
        if self.is_root() {
            let mut all: Vec<Option<Vec<u8>>> = vec![None; size];
            all[0] = Some(mine.to_vec());
            // A lost rank's share stays empty.
            let pending = |all: &[Option<Vec<u8>>], rank: u32| all[rank as usize].is_none() && !self.unreachable(rank);
            while (0..size as u32).any(|rank| pending(&all, rank)) {
                let missing = self.names((0..size as u32).filter(|&rank| pending(&all, rank)));
                if let Some((from, bytes)) = self.wait_from(key, |rank| pending(&all, rank), &missing) {
                    all[from as usize] = Some(bytes);
                }
            }
            let all: Vec<Vec<u8>> = all.into_iter().map(Option::unwrap_or_default).collect();
            // The answer ends with which ranks are lost, so that every rank tells a lost share from an empty one.
            let lost: Vec<u8> = (0..size as u32).map(|rank| u8::from(self.unreachable(rank))).collect();
            let packed = pack(&[&all[..], &[lost]].concat());
            for to in 1..self.size() {
                self.send(to, key.reply(), packed.clone());
            }
            all
        } else {
            self.send(0, key, mine.to_vec());
            match self.wait_from(key.reply(), |rank| rank == 0, &self.name(0)) {
                Some((_, packed)) => {
                    let mut all = unpack(&packed).unwrap_or_else(|| vec![Vec::new(); size + 1]);
                    let lost = all.pop().unwrap_or_default();
                    for (told, _) in self.told.iter().zip(lost).filter(|(_, lost)| *lost != 0) {
                        told.store(true, Ordering::Relaxed);
                    }
                    all.resize(size, Vec::new());
                    all
                }
                // Cut off: this rank's own share only.
                None => (0..size).map(|r| if r == self.rank() as usize { mine.to_vec() } else { Vec::new() }).collect(),
            }
        }
    }

    /// Rank 0: one message under `key` from every other rank that is not lost, in the order they came.
    pub fn gather(&self, key: Key, whom: &str) -> Vec<(u32, Vec<u8>)> {
        let mut heard = vec![false; self.size() as usize];
        heard[self.rank() as usize] = true;
        let mut got = Vec::new();
        let pending = |heard: &[bool], rank: u32| !heard[rank as usize] && !self.unreachable(rank);
        while (0..self.size()).any(|rank| pending(&heard, rank)) {
            if let Some((from, bytes)) = self.wait_from(key, |rank| pending(&heard, rank), whom) {
                heard[from as usize] = true;
                got.push((from, bytes));
            }
        }
        got
    }

    /// Rank 0's `value` on every rank. Collective.
    pub fn broadcast(&self, key: Key, value: &[u8]) -> Vec<u8> {
        let mine = if self.is_root() { value } else { &[] };
        self.exchange(key, mine).into_iter().next().unwrap_or_default()
    }

    /// Sends `payload` to rank `to`, unless it is unreachable (a message to a lost host would never leave).
    pub fn send(&self, to: u32, key: Key, payload: Vec<u8>) {
        if !self.unreachable(to) {
            self.transport.send(to, key, payload);
        }
    }

    /// "rank 1 (b), rank 3 (d)", for messages.
    pub fn names(&self, ranks: impl Iterator<Item = u32>) -> String {
        ranks.map(|rank| self.name(rank)).collect::<Vec<_>>().join(", ")
    }

    /// The next message under `key`, waiting as long as it takes while the ranks it may come from (`pending`)
    /// live: `None` once one of them is unreachable, or none is left, and no message is waiting. A rank that is alive but slow (a
    /// long fill) is waited for; once a minute this says what it waits for, naming `whom`.
    pub fn wait_from(&self, key: Key, pending: impl Fn(u32) -> bool, whom: &str) -> Option<(u32, Vec<u8>)> {
        let started = Instant::now();
        let mut said = 0;
        loop {
            if let Some(message) = self.transport.mailbox().wait(key, LOOK) {
                return Some(message);
            }
            let mut pending = (0..self.size()).filter(|&rank| pending(rank)).peekable();
            if pending.peek().is_none() || pending.any(|rank| self.unreachable(rank)) {
                return None;
            }
            let minutes = started.elapsed().as_secs() / 60;
            if minutes > said {
                said = minutes;
                let lost_after = self.watch.as_ref().map_or(Patience::DEFAULT, Watch::patience).lost_after;
                eprintln!(
                    "streamcap {}: still waiting for {whom} after {minutes} min (message {}/{}/{}); it is alive (its \
                     heartbeats arrive), so it is busy or slow; a rank silent for {} s is declared lost",
                    self.name(self.rank()),
                    key.kind,
                    key.a,
                    key.b,
                    lost_after.as_secs()
                );
            }
        }
    }

    /// See [`Transport::skip_finalize`].
    pub fn skip_finalize(&self) {
        self.transport.skip_finalize();
    }

    /// The next message under `key` if one arrives within `timeout`.
    pub fn wait_for(&self, key: Key, timeout: Duration) -> Option<(u32, Vec<u8>)> {
        self.transport.mailbox().wait(key, timeout)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let lost = self.any_lost();
        drop(self.watch.take());
        if lost {
            self.transport.abandon();
        }
    }
}

/// Several byte strings as one: a count, then each length and its bytes.
fn pack(parts: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + parts.iter().map(|p| p.len() + 8).sum::<usize>());
    out.extend_from_slice(&(parts.len() as u32).to_le_bytes());
    for part in parts {
        out.extend_from_slice(&(part.len() as u64).to_le_bytes());
        out.extend_from_slice(part);
    }
    out
}

fn unpack(mut bytes: &[u8]) -> Option<Vec<Vec<u8>>> {
    let count = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?);
    bytes = &bytes[4..];
    let mut parts = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let len = usize::try_from(u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?)).ok()?;
        let part = bytes.get(8..8 + len)?;
        parts.push(part.to_vec());
        bytes = &bytes[8 + len..];
    }
    Some(parts)
}

#[cfg(test)]
mod tests {
    use super::local::{ranks, ranks_with};
    use super::*;

    /// Heartbeats every 20 ms, lost after 400 ms: short for tests, yet many beats.
    pub(super) const QUICK: Patience =
        Patience { every: Duration::from_millis(20), lost_after: Duration::from_millis(400) };

    /// A rank cut off before an exchange: rank 0 stops waiting for it once it is lost and gives it an empty
    /// share, the rank that is left gets the same, and the cut-off rank returns with its own share only. Guards
    /// the hang of a run with a host lost behind a broken link (Open MPI 4.1 does not notice it).
    #[test]
    fn an_exchange_goes_on_without_a_lost_rank() {
        let got = ranks_with(3, QUICK, |cluster, cut| {
            if cluster.rank() == 2 {
                cut.cut(2);
            }
            let started = Instant::now();
            let all = cluster.exchange(Key::new(Key::USER, 9, 0), &[cluster.rank() as u8 + 1]);
            (all, (0..3).map(|r| cluster.unreachable(r)).collect::<Vec<_>>(), started.elapsed())
        });
        assert_eq!(got[0].0, [vec![1], vec![2], vec![]]);
        assert_eq!(got[1].0, [vec![1], vec![2], vec![]]);
        assert_eq!(got[2].0, [vec![], vec![], vec![3]]);
        assert_eq!(got[0].1, [false, false, true]);
        assert_eq!(got[1].1, [false, false, true], "rank 0's answer says rank 2 is lost");
        assert_eq!(got[2].1, [true, true, false], "rank 2 is cut off");
        for (_, _, took) in &got {
            assert!(*took >= QUICK.lost_after && *took < Duration::from_secs(30), "{took:?}");
        }
    }

    #[test]
    fn pack_and_unpack_are_inverse() {
        let parts = vec![b"a".to_vec(), Vec::new(), vec![7; 300]];
        assert_eq!(unpack(&pack(&parts)), Some(parts));
        assert_eq!(unpack(&[1, 0, 0, 0, 9]), None);
    }

    #[test]
    fn exchange_gives_every_rank_everything_in_rank_order() {
        let got = ranks(4, |cluster| {
            let key = Key::new(Key::USER, 3, 0);
            let mine = format!("r{}", cluster.rank());
            let all = cluster.exchange(key, mine.as_bytes());
            let again = cluster.exchange(Key::new(Key::USER, 4, 0), &[cluster.rank() as u8]);
            (cluster.hosts().to_vec(), all, again)
        });
        for (hosts, all, again) in got {
            assert_eq!(hosts, ["host0", "host1", "host2", "host3"]);
            assert_eq!(all, [b"r0".to_vec(), b"r1".to_vec(), b"r2".to_vec(), b"r3".to_vec()]);
            assert_eq!(again, [vec![0], vec![1], vec![2], vec![3]]);
        }
    }
}
