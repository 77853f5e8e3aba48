//! Held shares across ranks: vdbench's controlled max (a skew said, no rate) when the workloads of one phase run
//! on the ranks of several hds. Each rank's workers hold their shares through a flow of the phase's own
//! (`run/flow.rs`); this thread tells the other ranks what this rank's members of that flow have issued and
//! weigh, every [`TICK`], and sets what it hears from them as the flow's remote figures, so a member on one
//! rank waits when it is ahead of its share of every rank's I/O together.
//!
//! vdbench itself does not do this: each slave's waiter holds the skew of the workloads of that slave only
//! (docs/vdbench.md, *Several workloads in one rd*); streamcap holds the skew that the file says.
//!
//! The exchange runs beside the workers on its own thread, point to point between the ranks that have members
//! (no collective call, no MPI call and no allocation per I/O); a member's check reads two more atomics.
//!
//! What a rank hears is a tick and a transport hop old. Held to stale counts, two ranks that are both at their
//! shares would each wait for the other's next message and crawl; so a peer's count is taken as what it said
//! plus twice what it issued at its last heard rate since then and for one more tick, plus [`HEADROOM`]. A rank
//! ahead of its share thus runs at most a few ticks of the others' I/O over it before it waits, which does not
//! add up over a run (it is held back to its share as the real counts arrive), and a rank at its share is not
//! held by the age of what it heard. Starting from nothing, the allowance doubles every tick or so until the
//! storage, not the exchange, sets the pace.
//!
//! Must not: issue I/O, time it, or decide who is held (the flow does).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::{Key, PhaseSync};
use crate::run::flow::{FlowGroup, Flows};

/// How often a rank tells the others its count: with two small messages per peer per tick, a hundredth of a
/// second keeps what a rank runs over its share within a few hundredths of a second of the others' I/O.
const TICK: Duration = Duration::from_millis(10);

/// I/O a peer is taken to be ahead of what it said, whatever its rate: so that ranks just started, or slowed
/// down for a moment, are not held to a crawl by one another.
const HEADROOM: u64 = 16;

/// A phase's flow whose members run on several ranks, as one rank sees it.
pub struct HeldAcross {
    group: Arc<FlowGroup>,
    /// The other ranks with members, in rank order, with the weight of their members in the plan.
    peers: Vec<(u32, u64)>,
}

impl HeldAcross {
    /// The flow `id` of `flows`, when its members (`members`: each one's rank and weight; `None` runs on every
    /// rank) all belong to one rank each, some to this rank (`mine`) and some to others. Until the others are
    /// heard from, they are taken to have issued nothing, with the weights they are planned to have.
    pub fn new(flows: &Flows, id: u64, mine: u32, members: &[(Option<u32>, u64)]) -> Option<HeldAcross> {
        // Members that run on every rank hold their shares on each rank, which holds them over all ranks too.
        let ranks: Vec<u32> = members.iter().map(|(rank, _)| *rank).collect::<Option<_>>()?;
        if !ranks.contains(&mine) {
            return None;
        }
        let mut peers: Vec<(u32, u64)> = Vec::new();
        for (rank, weight) in members.iter().filter_map(|(r, w)| r.filter(|&r| r != mine).map(|r| (r, *w))) {
            match peers.iter_mut().find(|(r, _)| *r == rank) {
                Some(peer) => peer.1 += weight,
                None => peers.push((rank, weight)),
            }
        }
        peers.sort_unstable();
        if peers.is_empty() {
            return None;
        }
        let group = flows.group(id);
        let unheard: Vec<Option<Heard>> = vec![None; peers.len()];
        group.set_remote(remote_figures(&peers, &unheard, Instant::now()).0, peers.iter().map(|p| p.1).sum());
        Some(HeldAcross { group, peers })
    }
}

/// What a peer last said, and when it was heard.
#[derive(Debug, Clone, Copy)]
struct Heard {
    counted: u64,
    weight: u64,
    at: Instant,
    /// Its I/O per second between its last two messages.
    rate: f64,
}

/// The remote figures of the flow: every peer's count as estimated now, and its weight (as planned until it is
/// heard from).
fn remote_figures(peers: &[(u32, u64)], heard: &[Option<Heard>], now: Instant) -> (u64, u64) {
    let (mut counted, mut weight) = (0u64, 0u64);
    for ((_, planned), heard) in peers.iter().zip(heard) {
        let Some(h) = heard else {
            (counted, weight) = (counted + HEADROOM, weight + planned);
            continue;
        };
        let ahead = 2.0 * h.rate * (now.saturating_duration_since(h.at) + TICK).as_secs_f64();
        counted += h.counted + ahead as u64 + HEADROOM;
        weight += h.weight;
    }
    (counted, weight)
}

/// This rank's figures: I/O counted, then weight.
fn encode((counted, weight): (u64, u64)) -> Vec<u8> {
    [counted.to_le_bytes(), weight.to_le_bytes()].concat()
}

fn decode(bytes: &[u8]) -> Option<(u64, u64)> {
    let counted = u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?);
    let weight = u64::from_le_bytes(bytes.get(8..16)?.try_into().ok()?);
    Some((counted, weight))
}

/// Runs the exchange of one phase until `over` is set (this rank's workers have all ended), then tells the
/// others once more, so that they see this rank's members leave.
pub fn hold_across(sync: &PhaseSync<'_>, held: &HeldAcross, over: &AtomicBool) {
    let cluster = sync.cluster;
    let key = Key::new(Key::SHARES, sync.phase as u64, sync.step);
    let publish = || {
        let mine = encode(held.group.local());
        for &(peer, _) in &held.peers {
            cluster.send(peer, key, mine.clone());
        }
    };
    let began = Instant::now();
    let mut heard: Vec<Option<Heard>> = vec![None; held.peers.len()];
    while !over.load(Ordering::Relaxed) {
        publish();
        let next = Instant::now() + TICK;
        loop {
            let now = Instant::now();
            let (remote, _) = remote_figures(&held.peers, &heard, now);
            held.group.set_remote(remote, held.group.remote().1);
            let Some((from, bytes)) = cluster.wait_for(key, next.saturating_duration_since(now)) else { break };
            let (Some(slot), Some((counted, weight))) = (held.peers.iter().position(|p| p.0 == from), decode(&bytes))
            else {
                continue;
            };
            let at = Instant::now();
            let (before, since) = heard[slot].map_or((0, began), |h| (h.counted, h.at));
            let seconds = at.saturating_duration_since(since).as_secs_f64().max(1e-6);
            let rate = counted.saturating_sub(before) as f64 / seconds;
            heard[slot] = Some(Heard { counted, weight, at, rate });
            let weights = held.peers.iter().zip(&heard).map(|((_, p), h)| h.map_or(*p, |h| h.weight)).sum();
            held.group.set_remote(remote_figures(&held.peers, &heard, at).0, weights);
        }
    }
    publish();
    // What the peers sent since is of no use now; a message or two more may still come while they end.
    while cluster.wait_for(key, Duration::ZERO).is_some() {}
}

#[cfg(test)]
mod tests {
    use super::super::local::ranks;
    use super::*;
    use crate::plan::FlowSpec;

    #[test]
    fn only_flows_with_members_here_and_elsewhere_are_held_across_ranks() {
        let flows = Flows::default();
        assert!(HeldAcross::new(&flows, 1, 0, &[(None, 5), (None, 5)]).is_none(), "every rank runs all");
        assert!(HeldAcross::new(&flows, 1, 2, &[(Some(0), 5), (Some(1), 5)]).is_none(), "none here");
        assert!(HeldAcross::new(&flows, 1, 0, &[(Some(0), 5), (Some(0), 5)]).is_none(), "all here");
        let held = HeldAcross::new(&flows, 1, 1, &[(Some(0), 8), (Some(1), 2), (Some(3), 1)]).expect("held");
        assert_eq!(held.peers, [(0, 8), (3, 1)]);
        assert_eq!(held.group.remote(), (2 * HEADROOM, 9), "the others' planned weights");
    }

    /// A peer counts as what it said plus twice its rate over the age of what it said and one more tick, plus
    /// the headroom; one not heard from yet as the headroom, with its planned weight.
    #[test]
    fn a_peer_is_taken_to_be_ahead_of_what_it_said_by_its_rate() {
        let at = Instant::now();
        let heard = Heard { counted: 100, weight: 3, at, rate: 1000.0 };
        let peers = [(1, 8), (2, 5)];
        let now = at + Duration::from_millis(5);
        assert_eq!(remote_figures(&peers, &[Some(heard), None], now), (100 + 30 + 2 * HEADROOM, 3 + 5));
        let idle = Heard { rate: 0.0, ..heard };
        assert_eq!(remote_figures(&peers[..1], &[Some(idle)], now + Duration::from_secs(9)), (100 + HEADROOM, 3));
    }

    /// Two ranks, one member each (weights 8 and 2): rank 1 issues 100 I/O and idles; rank 0 gets its share of
    /// them (at least 4 per rank 1's 1) and is then held, until rank 1's member leaves and it goes free.
    #[test]
    fn a_member_is_held_by_the_other_ranks_count_until_they_leave() {
        let (idle, checked) = (AtomicBool::new(false), AtomicBool::new(false));
        let got = ranks(2, |cluster| {
            let sync = PhaseSync { cluster: &cluster, phase: 4, step: 0, stonewall: true };
            let flows = Flows::default();
            let members = [(Some(0), 8), (Some(1), 2)];
            let held = HeldAcross::new(&flows, 9, cluster.rank(), &members).expect("held across");
            let weight = members[cluster.rank() as usize].1;
            let mut member = flows.join(&FlowSpec { id: 9, weight, sleep: Duration::ZERO });
            let over = AtomicBool::new(false);
            let until = Instant::now() + Duration::from_secs(30);
            let waiting = |done: &dyn Fn() -> bool| {
                while !done() && Instant::now() < until {
                    std::thread::sleep(Duration::from_micros(100));
                }
            };
            std::thread::scope(|scope| {
                let exchange = scope.spawn(|| hold_across(&sync, &held, &over));
                let mut issued = 0u64;
                let mut outcome = (0, false, false);
                if cluster.rank() == 1 {
                    while issued < 100 && Instant::now() < until {
                        issued += u64::from(!member.ahead());
                    }
                    idle.store(true, Ordering::Relaxed);
                    waiting(&|| checked.load(Ordering::Relaxed));
                    member.leave();
                } else {
                    let mut step = || issued += u64::from(!member.ahead());
                    while !idle.load(Ordering::Relaxed) && Instant::now() < until {
                        step();
                    }
                    // Once rank 1's rate is heard to be 0, its count is what it said plus the headroom.
                    waiting(&|| held.group.remote().0 == 100 + HEADROOM);
                    (0..100_000).for_each(|_| step());
                    outcome = (issued, member.ahead(), false);
                    checked.store(true, Ordering::Relaxed);
                    waiting(&|| held.group.remote().1 == 0);
                    outcome.2 = !member.ahead();
                }
                over.store(true, Ordering::Relaxed);
                exchange.join().expect("the exchange ended");
                (issued, outcome)
            })
        });
        assert_eq!(got[1].0, 100);
        let (issued, held, freed) = got[0].1;
        assert!(issued >= 400, "rank 0 issued {issued} against rank 1's 100, short of its share");
        assert!(held, "rank 0 was not held with {issued} against rank 1's 100");
        assert!(freed, "rank 0 was still held after rank 1's member left");
    }
}
