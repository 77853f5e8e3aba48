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
//! What it must not do: read clocks for measurement, touch engines, or decide anything on one rank that another
//! rank must decide the same way without exchanging it first.

mod gate;
mod mailbox;
mod phase;
mod shares;
mod step;

// Also for the tests of the crates above (feature `test-support`, a dev-dependency of theirs).
#[cfg(any(test, feature = "test-support"))]
pub mod local;

use std::time::Duration;

pub use gate::Ready;
pub(super) use gate::{agree_measured, agree_ready, settle};
pub use mailbox::{Key, Mailbox};
pub use phase::{PhaseSync, RankEnd};
pub(super) use phase::{agree_end, agree_start, link, say_done};
pub(super) use shares::{HeldAcross, hold_across};
pub(super) use step::{merge_step, viewers_of};

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
}

/// How long a rank waits for a message before it says so (and waits on: a rank that died ends the job).
const PATIENCE: Duration = Duration::from_secs(60);

/// The ranks of a run, with their host names.
pub struct Cluster {
    transport: Box<dyn Transport>,
    hosts: Vec<String>,
}

impl Cluster {
    /// Joins the ranks: every rank says its host name, and all learn everyone's. Collective: every rank calls it.
    pub fn join(transport: Box<dyn Transport>, host: &str) -> Cluster {
        let mut cluster = Cluster { transport, hosts: Vec::new() };
        let hosts = cluster.exchange(Key::new(Key::HOSTS, 0, 0), host.as_bytes());
        cluster.hosts = hosts.into_iter().map(|h| String::from_utf8_lossy(&h).into_owned()).collect();
        cluster
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
            while all.iter().any(Option::is_none) {
                let missing = all.iter().enumerate().filter(|(_, a)| a.is_none()).map(|(rank, _)| rank as u32);
                let (from, bytes) = self.wait(key, &self.names(missing));
                all[from as usize] = Some(bytes);
            }
            let all: Vec<Vec<u8>> = all.into_iter().map(Option::unwrap_or_default).collect();
            let packed = pack(&all);
            for to in 1..self.size() {
                self.transport.send(to, key.reply(), packed.clone());
            }
            all
        } else {
            self.transport.send(0, key, mine.to_vec());
            let (_, packed) = self.wait(key.reply(), &self.name(0));
            unpack(&packed).unwrap_or_else(|| vec![Vec::new(); size])
        }
    }

    /// Rank 0's `value` on every rank. Collective.
    pub fn broadcast(&self, key: Key, value: &[u8]) -> Vec<u8> {
        let mine = if self.is_root() { value } else { &[] };
        self.exchange(key, mine).into_iter().next().unwrap_or_default()
    }

    pub fn send(&self, to: u32, key: Key, payload: Vec<u8>) {
        self.transport.send(to, key, payload);
    }

    /// "rank 1 (b), rank 3 (d)", for messages.
    pub fn names(&self, ranks: impl Iterator<Item = u32>) -> String {
        ranks.map(|rank| self.name(rank)).collect::<Vec<_>>().join(", ")
    }

    /// The next message under `key`, waiting as long as it takes (a rank that died ends the whole job under
    /// mpirun); says once a minute what it is waiting for, naming `whom`. A rank that lives on behind a broken
    /// link is not noticed by mpirun (Open MPI 4.1): the message then names it, and says what to do.
    pub fn wait(&self, key: Key, whom: &str) -> (u32, Vec<u8>) {
        let mut minutes = 0u64;
        loop {
            if let Some(message) = self.transport.mailbox().wait(key, PATIENCE) {
                return message;
            }
            minutes += PATIENCE.as_secs() / 60;
            eprintln!(
                "streamcap {}: still waiting for {whom} after {minutes} min (message {}/{}/{}); if its host or the \
                 network to it failed, stop the run (Ctrl-C on mpirun, then end the ranks that are left) and remove \
                 the work directories under TARGET/.streamcap by hand (docs/multi-host.md)",
                self.name(self.rank()),
                key.kind,
                key.a,
                key.b
            );
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
    use super::local::ranks;
    use super::*;

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
