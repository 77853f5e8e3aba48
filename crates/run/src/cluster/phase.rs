//! One set of workers across ranks: they start together (the start agreement is the barrier), a rank that ends
//! tells rank 0, which stops the others — all of them when the first finishes its budget (stonewalling, as IO500
//! does), when one was interrupted or when one failed — and the end agreement gives every rank the same outcome,
//! so every rank goes on (or stops) the same way. A lost rank (`watch.rs`) stops the phase on every rank that is
//! left, as a failure naming it; a rank cut off from rank 0 stops its own share the same way.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::{Cluster, Key};
use crate::run::StopReason;
use crate::run::phase::PhaseControl;

/// How one run of workers takes part in a multi-rank run.
#[derive(Clone, Copy)]
pub struct PhaseSync<'c> {
    pub cluster: &'c Cluster,
    /// The phase's index in the plan.
    pub phase: usize,
    /// Which run of workers within the phase (a stream phase runs one per step).
    pub step: u64,
    /// The phase ends for every rank when the first finishes its budget. Stream steps end by their watch time
    /// and are not cut short.
    pub stonewall: bool,
}

impl PhaseSync<'_> {
    fn key(&self, kind: u8) -> Key {
        Key::new(kind, self.phase as u64, self.step)
    }
}

/// How one rank's share of a phase ended.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RankEnd {
    /// The rank, 0-based.
    pub rank: u32,
    /// Its host name.
    pub host: String,
    /// How this rank's workers ended (`Completed` also when another rank stopped them).
    pub stop: StopReason,
    /// Measured time (after the ramp) until this rank's last worker finished.
    pub measured: Duration,
}

/// The start agreement: every rank's set-up result; the first failure, named by rank and host, or `None` to go.
/// Also the start barrier: no rank returns before every rank's workers are ready (or failed).
pub fn agree_start(sync: &PhaseSync<'_>, local_error: Option<&str>) -> Option<String> {
    let mine = match local_error {
        Some(error) => [b"E", error.as_bytes()].concat(),
        None => b"R".to_vec(),
    };
    let cluster = sync.cluster;
    let all = cluster.exchange(sync.key(Key::START), &mine);
    all.iter().enumerate().find_map(|(rank, said)| {
        let named = cluster.name(rank as u32);
        if cluster.unreachable(rank as u32) {
            return Some(format!("{named}: {}", cluster.lost_reason()));
        }
        let error = said.strip_prefix(b"E")?;
        Some(format!("{named}: {}", String::from_utf8_lossy(error)))
    })
}

/// What rank 0 orders a rank to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    /// The first rank finished its budget: stop, this is no failure.
    Stonewall = 1,
    /// A rank was interrupted: stop the whole run.
    Interrupt = 2,
    /// A rank failed or hit an I/O error: stop the phase.
    Abort = 3,
}

fn apply(order: u8, control: &PhaseControl) {
    match order {
        o if o == Order::Interrupt as u8 => control.interrupted.store(true, Ordering::Relaxed),
        o if o == Order::Stonewall as u8 || o == Order::Abort as u8 => {
            control.stopped_by_peer.store(true, Ordering::Relaxed);
            control.abort.store(true, Ordering::Relaxed);
        }
        _ => {}
    }
}

fn stop_code(stop: &StopReason) -> u8 {
    match stop {
        StopReason::Completed => 0,
        StopReason::Interrupted => 1,
        StopReason::IoError => 2,
        StopReason::Failed(_) => 3,
    }
}

/// Says that this rank's workers have all ended, and how (every rank, rank 0 too, tells rank 0).
pub fn say_done(sync: &PhaseSync<'_>, stop: &StopReason) {
    sync.cluster.send(0, sync.key(Key::DONE), vec![stop_code(stop)]);
}

/// The stop link of a phase, run on its own thread beside the coordinator until `over` is set (after this rank
/// said it is done). Rank 0 hears every rank end and gives the orders; the others carry them out.
pub fn link(sync: &PhaseSync<'_>, control: &PhaseControl, over: &AtomicBool) {
    let cluster = sync.cluster;
    if !cluster.is_root() {
        let mut cut_off = false;
        while !over.load(Ordering::Relaxed) {
            if let Some((_, order)) = cluster.wait_for(sync.key(Key::STOP), Duration::from_millis(20)) {
                apply(order.first().copied().unwrap_or(0), control);
            } else if !cut_off && cluster.unreachable(0) {
                cut_off = true;
                apply(Order::Abort as u8, control);
            }
        }
        return;
    }
    let size = cluster.size() as usize;
    let mut done = vec![false; size];
    let mut ordered: Option<Order> = None;
    while done.iter().any(|d| !d) {
        let missing = cluster.names((0..size as u32).filter(|&r| !done[r as usize]));
        let waited =
            cluster.wait_from(sync.key(Key::DONE), |r| !done[r as usize], &format!("{missing} to finish the phase"));
        let order = match waited {
            // A rank was lost: it will not say it is done, and the others stop.
            None => {
                (0..size).filter(|&r| cluster.unreachable(r as u32)).for_each(|r| done[r] = true);
                Order::Abort
            }
            Some((from, said)) => {
                done[from as usize] = true;
                match said.first().copied().unwrap_or(0) {
                    0 if sync.stonewall => Order::Stonewall,
                    0 => continue,
                    1 => Order::Interrupt,
                    _ => Order::Abort,
                }
            }
        };
        // A stonewall order may be followed by a stronger one (a rank that failed while stopping).
        if ordered.is_some_and(|o| o as u8 >= order as u8) {
            continue;
        }
        ordered = Some(order);
        for rank in (1..size).filter(|&r| !done[r]) {
            cluster.send(rank as u32, sync.key(Key::STOP), vec![order as u8]);
        }
        if !done[0] {
            apply(order as u8, control);
        }
    }
}

/// The end agreement: every rank's end, in rank order, and the phase's stop reason for all of them (the worst:
/// a failure, named by rank and host, then an interruption, then an I/O error).
pub fn agree_end(sync: &PhaseSync<'_>, stop: &StopReason, measured: Duration) -> (StopReason, Vec<RankEnd>) {
    let cluster = sync.cluster;
    let mine = RankEnd {
        rank: cluster.rank(),
        host: cluster.hosts().get(cluster.rank() as usize).cloned().unwrap_or_default(),
        stop: stop.clone(),
        measured,
    };
    let bytes = serde_json::to_vec(&mine).expect("a rank's end is plain data");
    let ends: Vec<RankEnd> = cluster
        .exchange(sync.key(Key::END), &bytes)
        .iter()
        .enumerate()
        .map(|(rank, b)| {
            serde_json::from_slice(b).unwrap_or_else(|e| RankEnd {
                rank: rank as u32,
                host: cluster.hosts().get(rank).cloned().unwrap_or_default(),
                stop: StopReason::Failed(match cluster.unreachable(rank as u32) {
                    true => cluster.lost_reason(),
                    false => format!("its report could not be read ({e})"),
                }),
                measured: Duration::ZERO,
            })
        })
        .collect();
    // The lowest rank among the worst: a rank cut off from rank 0 names rank 0.
    let worst = ends.iter().max_by_key(|e| (stop_code(&e.stop), std::cmp::Reverse(e.rank))).map(|e| match &e.stop {
        StopReason::Failed(why) => StopReason::Failed(format!("{}: {why}", cluster.name(e.rank))),
        other => other.clone(),
    });
    (worst.unwrap_or(StopReason::Completed), ends)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::local::{ranks, ranks_with};
    use super::super::watch::Patience;
    use super::*;

    fn control() -> PhaseControl {
        PhaseControl::new(Arc::new(AtomicBool::new(false)))
    }

    /// One rank's phase as the coordinator runs it: the stop link on its own thread, `work` (the "workers",
    /// returning this rank's failure), then say done with the stop, end the link and join it. Returns the stop.
    fn linked(sync: &PhaseSync<'_>, control: &PhaseControl, work: impl FnOnce() -> Option<String>) -> StopReason {
        let over = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let linked = scope.spawn(|| link(sync, control, &over));
            let failure = work();
            let stop = control.stop_reason(failure);
            say_done(sync, &stop);
            over.store(true, Ordering::Relaxed);
            linked.join().expect("the link ended");
            stop
        })
    }

    /// "Workers" that run until they are stopped.
    fn until_stopped(control: &PhaseControl) {
        while !control.stop_requested() {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn the_first_failure_is_named_and_every_rank_hears_it() {
        let got = ranks(3, |cluster| {
            let sync = PhaseSync { cluster: &cluster, phase: 1, step: 0, stonewall: true };
            let error = (cluster.rank() == 2).then_some("cannot open data.0");
            agree_start(&sync, error)
        });
        for said in got {
            assert_eq!(said.as_deref(), Some("rank 2 (host2): cannot open data.0"));
        }
    }

    /// Rank 1 finishes its budget first; the others are told to stop, not as a failure, and every rank ends with
    /// the same outcome.
    #[test]
    fn the_first_rank_done_stops_the_others_and_all_agree_on_the_end() {
        let got = ranks(3, |cluster| {
            let sync = PhaseSync { cluster: &cluster, phase: 0, step: 0, stonewall: true };
            let control = control();
            assert_eq!(agree_start(&sync, None), None);
            let stop = linked(&sync, &control, || {
                if cluster.rank() != 1 {
                    until_stopped(&control);
                }
                None
            });
            let measured = Duration::from_secs(u64::from(cluster.rank()) + 1);
            agree_end(&sync, &stop, measured)
        });
        for (stop, ends) in got {
            assert_eq!(stop, StopReason::Completed);
            assert_eq!(ends.iter().map(|e| e.measured.as_secs()).collect::<Vec<_>>(), [1, 2, 3]);
            assert!(ends.iter().all(|e| e.stop == StopReason::Completed), "{ends:?}");
        }
    }

    #[test]
    fn an_interrupted_rank_interrupts_the_others_and_a_failure_wins_the_end() {
        let got = ranks(3, |cluster| {
            let sync = PhaseSync { cluster: &cluster, phase: 2, step: 5, stonewall: false };
            let control = control();
            agree_start(&sync, None);
            let stop = linked(&sync, &control, || {
                if cluster.rank() == 0 {
                    control.interrupted.store(true, Ordering::Relaxed);
                }
                until_stopped(&control);
                (cluster.rank() == 2).then(|| "engine gone".to_string())
            });
            (control.interrupted.load(Ordering::Relaxed), agree_end(&sync, &stop, Duration::ZERO).0)
        });
        for (interrupted, stop) in got {
            assert!(interrupted);
            assert_eq!(stop, StopReason::Failed("rank 2 (host2): engine gone".into()));
        }
    }

    /// Rank 2's host is lost in the middle of a phase whose workers run until stopped: rank 0 declares it lost,
    /// stops rank 1, and both end the phase failed, naming rank 2; rank 2 notices it lost rank 0 and stops its
    /// own share too. Guards the hang: the ranks waited for the lost one without end.
    #[test]
    fn a_lost_rank_stops_the_phase_on_every_rank_and_is_named() {
        let quick = Patience { every: Duration::from_millis(20), lost_after: Duration::from_millis(400) };
        let got = ranks_with(3, quick, |cluster, cut| {
            let sync = PhaseSync { cluster: &cluster, phase: 0, step: 0, stonewall: false };
            let control = control();
            assert_eq!(agree_start(&sync, None), None);
            let stop = linked(&sync, &control, || {
                if cluster.rank() == 2 {
                    cut.cut(2);
                }
                until_stopped(&control);
                None
            });
            agree_end(&sync, &stop, Duration::ZERO).0
        });
        let lost = |name: &str| match &got[if name == "rank 2 (host2)" { 0 } else { 2 }] {
            StopReason::Failed(why) => why.starts_with(&format!("{name}: lost: no message from it for 0 s")),
            _ => false,
        };
        assert!(lost("rank 2 (host2)"), "{got:?}");
        assert_eq!(got[1], got[0]);
        assert!(lost("rank 0 (host0)"), "{got:?}");
    }
}
