//! The watch over the other ranks of a multi-host run: a thread beside the run that sends a heartbeat every
//! [`Patience::every`] (rank 0 to every rank, every other rank to rank 0: the star the exchanges use) and
//! declares a rank lost when nothing at all — no heartbeat, no other message — has arrived from it for
//! [`Patience::lost_after`]. Rank 0 watches every rank; every other rank watches rank 0 only, since it talks to
//! no one else (a rank that has lost rank 0 is cut off from the whole run).
//!
//! Why a heartbeat and not a deadline on each wait: a fill or a stream step may rightly take long, and a rank
//! waiting for another's message cannot tell a slow rank from a lost one. Heartbeats come from their own thread,
//! whatever the rank's workers are doing, so silence means the host, its network or the process is gone (Open
//! MPI 4.1 ends the job when a rank dies, but not when a live rank becomes unreachable behind a broken link).
//!
//! What it must not do: decide what the run does about a lost rank (the phases' stop link and the exchanges in
//! `mod.rs` do), or block the run's own messages.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{Key, Transport};

/// How often a rank says it is alive, and after how much silence another rank is declared lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Patience {
    /// Time between two heartbeats.
    pub every: Duration,
    /// Silence after which a rank is lost.
    pub lost_after: Duration,
}

impl Patience {
    /// A heartbeat a second; lost after 20 s of silence: twenty missed heartbeats, far beyond a busy host's
    /// scheduling delays and a shaped link's queue of interval messages (a few KiB each), yet short enough that
    /// a run with a lost host ends within half a minute of the loss.
    pub const DEFAULT: Patience = Patience { every: Duration::from_secs(1), lost_after: Duration::from_secs(20) };
}

/// The watch's thread and what it found.
pub(super) struct Watch {
    /// Whether each rank was declared lost, by rank.
    lost: Arc<Vec<AtomicBool>>,
    patience: Patience,
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Watch {
    /// Starts watching; `hosts` name the ranks in the message said when one is lost.
    pub(super) fn start(transport: Arc<dyn Transport>, hosts: Vec<String>, patience: Patience) -> Watch {
        let lost: Arc<Vec<AtomicBool>> = Arc::new((0..transport.size()).map(|_| AtomicBool::new(false)).collect());
        let (stop, stopped) = mpsc::channel::<()>();
        let seen = lost.clone();
        let thread = std::thread::Builder::new()
            .name("streamcap-watch".into())
            .spawn(move || {
                let since = Instant::now();
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(patience.every) {
                    if !beat(transport.as_ref(), &seen, &hosts, patience, since) {
                        return;
                    }
                }
            })
            .ok();
        Watch { lost, patience, stop: Some(stop), thread }
    }

    pub(super) fn is_lost(&self, rank: u32) -> bool {
        self.lost.get(rank as usize).is_some_and(|l| l.load(Ordering::Relaxed))
    }

    pub(super) fn patience(&self) -> Patience {
        self.patience
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One heartbeat: says this rank is alive to the ranks it watches, and declares lost those silent too long.
/// `false` once there is no one left to watch.
fn beat(transport: &dyn Transport, lost: &[AtomicBool], hosts: &[String], patience: Patience, since: Instant) -> bool {
    let rank = transport.rank();
    let watched: Vec<u32> = if rank == 0 { (1..transport.size()).collect() } else { vec![0] };
    let watched: Vec<u32> = watched.into_iter().filter(|&r| !lost[r as usize].load(Ordering::Relaxed)).collect();
    for &peer in &watched {
        transport.send(peer, Key::new(Key::HEARTBEAT, 0, 0), Vec::new());
    }
    let mailbox = transport.mailbox();
    let mut left = false;
    for &peer in &watched {
        let heard = mailbox.heard(peer).map_or(since, |at| at.max(since));
        if heard.elapsed() <= patience.lost_after {
            left = true;
            continue;
        }
        lost[peer as usize].store(true, Ordering::Relaxed);
        eprintln!("{}", lost_message(rank, peer, hosts, patience));
        mailbox.wake();
    }
    left
}

fn name(rank: u32, hosts: &[String]) -> String {
    match hosts.get(rank as usize) {
        Some(host) => format!("rank {rank} ({host})"),
        None => format!("rank {rank}"),
    }
}

/// What a rank says when it declares `peer` lost.
fn lost_message(rank: u32, peer: u32, hosts: &[String], patience: Patience) -> String {
    let (me, them) = (name(rank, hosts), name(peer, hosts));
    let host = hosts.get(peer as usize).map_or("its host", String::as_str);
    let silent = patience.lost_after.as_secs();
    if rank == 0 {
        format!(
            "streamcap {me}: {them} is lost: no message from it for {silent} s (its host stopped, or the network \
             to it failed); the other ranks stop and remove their data, and the result is kept, marked failed. \
             Check that {host} is up and reachable from here (ping, ssh), and that its work directory \
             TARGET/.streamcap/run-{host}-* is gone (its rank removes it when it notices the loss too)"
        )
    } else {
        format!(
            "streamcap {me}: lost {them}: no message from it for {silent} s (its host stopped, or the network to \
             it failed); this rank stops and removes its data. Check that this host reaches {host} (ping, ssh); \
             the result, if any, is written on {host}"
        )
    }
}

/// Why a lost rank's share of the run ended, for the phase's and the run's error.
pub(super) fn lost_reason(patience: Patience) -> String {
    format!(
        "lost: no message from it for {} s (its host stopped, or the network to it failed); check that the host \
         is up and reachable, and that its work directory under TARGET/.streamcap is gone",
        patience.lost_after.as_secs()
    )
}
