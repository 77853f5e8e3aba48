//! fio's token-based flow control (`flow`, `flow_id`, `flow_sleep`): the workers of the jobs that share a flow
//! id issue I/O in proportion to their jobs' weights (flow=3 and flow=1 run 3:1).
//!
//! As fio does it: a flow keeps one counter of the I/O its members issued (starting at 1) and the sum of their
//! weights; a member whose own count is a larger share of the counter than its weight is of the sum waits and
//! looks again, otherwise it counts its I/O and goes on. A member leaves the flow when its worker ends, taking
//! its count and weight with it, so the others are no longer held back. So every member must have joined before
//! any issues, and members that run for the same time must start at the same instant: a worker joins when it is
//! set up, and the workers of a phase — and of all the phases of a stage (`run/stage.rs`: `CommonStart`) — start
//! together once all are set up. (With a start of their own per phase, tens of ms apart on a busy machine, the
//! phase that started first left the flow first and the other ran free: flow=3 and flow=1 ran 0.7:1 to 3.5:1.)
//!
//! How long a held member waits: `flow_sleep` when the fio job gives one (fio's meaning). Otherwise (fio's
//! default of 0, where fio retries at once, and vdbench's controlled max) it follows the pace of the others: it
//! sleeps about as long as the others take, at the rate they issued since it last looked, to issue the I/O that
//! brings it back to its share ([`FlowMember::held_wait`], bounded by [`RECHECK`] and [`MAX_HOLD`]). A fixed
//! short recheck made a held worker spin: 98 % of a core at 6.9 k IOPS. Parking on a condition the others signal
//! would wake it just in time too, but every member would then check for sleepers (and make a system call when
//! one sleeps) on each of its own I/O — the members that set the pace would pay for those that wait — and across
//! ranks the others' counts arrive on the exchange thread anyway. Estimating the catch-up keeps the members at
//! their shares on the same path as before; a member that sleeps a little too long is behind its share when it
//! wakes and is then not held until it has caught up, so the error does not add up over a run.
//!
//! Across the ranks of a multi-host run (vdbench's controlled max with wds on several hds), a flow also counts
//! what the members on the other ranks issued and weigh: `cluster::shares` sets those figures a few times a
//! second from the other ranks' counts, and a member compares its count with the local and remote ones together.
//!
//! Must not: issue or time I/O (the schedule and the core do), or talk to other ranks.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::plan::FlowSpec;

/// The shortest wait of a member ahead of its share (fio spins when flow_sleep is 0; streamcap does not).
const RECHECK: Duration = Duration::from_micros(20);

/// The longest wait of a member ahead of its share when no `flow_sleep` is given: the others' pace is looked at
/// again at least this often, so a member whose others speed up (or leave) is held back at most this long.
const MAX_HOLD: Duration = Duration::from_millis(10);

/// One flow id's counters.
#[derive(Debug)]
pub(super) struct FlowGroup {
    counter: AtomicU64,
    weight: AtomicU64,
    /// I/O the flow's members on other ranks issued, as last heard.
    remote_counted: AtomicU64,
    /// The weights of the flow's members on other ranks, as last heard.
    remote_weight: AtomicU64,
}

impl FlowGroup {
    fn new() -> FlowGroup {
        FlowGroup {
            counter: AtomicU64::new(1),
            weight: AtomicU64::new(0),
            remote_counted: AtomicU64::new(0),
            remote_weight: AtomicU64::new(0),
        }
    }

    /// What this process's members have issued (the counter starts at 1) and weigh together.
    pub fn local(&self) -> (u64, u64) {
        (self.counter.load(Ordering::Relaxed).saturating_sub(1), self.weight.load(Ordering::Relaxed))
    }

    /// What the members on the other ranks have issued and weigh together, as last set.
    pub fn remote(&self) -> (u64, u64) {
        (self.remote_counted.load(Ordering::Relaxed), self.remote_weight.load(Ordering::Relaxed))
    }

    /// What the members on the other ranks have issued and weigh together.
    pub fn set_remote(&self, counted: u64, weight: u64) {
        self.remote_counted.store(counted, Ordering::Relaxed);
        self.remote_weight.store(weight, Ordering::Relaxed);
    }
}

/// The flows of a run, by flow id, created when their first member joins.
#[derive(Debug, Default)]
pub(super) struct Flows {
    groups: Mutex<HashMap<u64, Arc<FlowGroup>>>,
}

impl Flows {
    /// The counters of flow `id`, created if no member has joined yet.
    pub fn group(&self, id: u64) -> Arc<FlowGroup> {
        let mut groups = self.groups.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        groups.entry(id).or_insert_with(|| Arc::new(FlowGroup::new())).clone()
    }

    /// A worker joins the flow `spec` names, with its job's weight.
    pub fn join(&self, spec: &FlowSpec) -> FlowMember {
        let group = self.group(spec.id);
        group.weight.fetch_add(spec.weight, Ordering::Relaxed);
        let sleep = (!spec.sleep.is_zero()).then_some(spec.sleep.max(RECHECK));
        FlowMember { group, weight: spec.weight, count: 0, sleep, pace: Pace::default(), joined: true }
    }
}

/// One worker's place in a flow.
#[derive(Debug)]
pub(super) struct FlowMember {
    group: Arc<FlowGroup>,
    weight: u64,
    /// I/O this worker counted in the flow.
    count: u64,
    /// How long to wait when ahead of its share, when said (fio flow_sleep); otherwise it follows the pace.
    sleep: Option<Duration>,
    pace: Pace,
    joined: bool,
}

/// What a held member last saw of the others, to time its next look by their pace.
#[derive(Debug, Default, Clone, Copy)]
struct Pace {
    /// When it last looked (the worker's time since the phase's origin), and the others' count then.
    seen: Option<(Duration, u64)>,
    /// When it meant to look again.
    until: Duration,
    /// Its last wait, doubled while the others issue nothing.
    last: Duration,
}

impl FlowMember {
    /// Whether this worker is ahead of its share and must wait; when it is not, its next I/O is counted.
    #[inline]
    pub fn ahead(&mut self) -> bool {
        let (counter, weights) = self.totals();
        // count / counter > weight / weights, without division.
        if u128::from(self.count) * u128::from(weights) > u128::from(self.weight) * u128::from(counter) {
            return true;
        }
        self.group.counter.fetch_add(1, Ordering::Relaxed);
        self.count += 1;
        false
    }

    /// The flow's counter and weights, with what its members on other ranks issued and weigh.
    #[inline]
    fn totals(&self) -> (u64, u64) {
        let group = &self.group;
        // Two more relaxed loads than fio's check: zero unless the flow spans ranks.
        let counter = group.counter.load(Ordering::Relaxed).max(1) + group.remote_counted.load(Ordering::Relaxed);
        let weights = (group.weight.load(Ordering::Relaxed) + group.remote_weight.load(Ordering::Relaxed)).max(1);
        (counter, weights)
    }

    /// How long to wait before looking again, once [`ahead`](Self::ahead) said this member is ahead of its share;
    /// `now` is the worker's time since the phase's origin. With fio's flow_sleep, that sleep. Otherwise the time
    /// the others take to issue the I/O it is ahead by, at the rate they issued since it last looked: with c its
    /// count, w its weight, C the counter and W the weights, it is back at its share once the counter reaches
    /// c·W/w, which is c·W/w − C more of the others' I/O. Woken early (one of its own I/O completed), it keeps
    /// the time it chose; when the others issued nothing since it looked, it waits twice as long as last time.
    pub fn held_wait(&mut self, now: Duration) -> Duration {
        if let Some(sleep) = self.sleep {
            return sleep;
        }
        let (counter, weights) = self.totals();
        let pace = &mut self.pace;
        if now < pace.until {
            return pace.until - now;
        }
        let others = counter.saturating_sub(self.count);
        let back_at_share = (u128::from(self.count) * u128::from(weights)).div_ceil(u128::from(self.weight.max(1)));
        let short = back_at_share.saturating_sub(u128::from(counter)).max(1) as f64;
        let wait = match pace.seen {
            Some((at, before)) if now > at && others > before => {
                let rate = (others - before) as f64 / (now - at).as_secs_f64();
                Duration::from_secs_f64((short / rate).min(MAX_HOLD.as_secs_f64()))
            }
            _ => pace.last * 2,
        }
        .clamp(RECHECK, MAX_HOLD);
        *pace = Pace { seen: Some((now, others)), until: now + wait, last: wait };
        wait
    }

    /// The worker ends: its count and weight leave the flow.
    pub fn leave(&mut self) {
        if std::mem::take(&mut self.joined) {
            self.group.counter.fetch_sub(self.count, Ordering::Relaxed);
            self.group.weight.fetch_sub(self.weight, Ordering::Relaxed);
        }
    }
}

impl Drop for FlowMember {
    fn drop(&mut self) {
        self.leave();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(id: u64, weight: u64) -> FlowSpec {
        FlowSpec { id, weight, sleep: Duration::ZERO }
    }

    /// Members that take turns asking get I/O in proportion to their weights.
    #[test]
    fn members_issue_in_proportion_to_their_weights() {
        let flows = Flows::default();
        let (mut a, mut b) = (flows.join(&spec(0, 8)), flows.join(&spec(0, 1)));
        let mut other = flows.join(&spec(5, 1));
        let (mut ran_a, mut ran_b) = (0u32, 0u32);
        for _ in 0..9000 {
            ran_a += u32::from(!a.ahead());
            ran_b += u32::from(!b.ahead());
        }
        assert!(!other.ahead(), "another flow id is not held back");
        assert!((7.5..8.5).contains(&(f64::from(ran_a) / f64::from(ran_b))), "{ran_a}:{ran_b}");
        // Once the heavy member leaves, the light one is no longer held back.
        a.leave();
        assert!((0..100).all(|_| !b.ahead()));
    }

    /// fio's flow_sleep, when given, is the wait; without it a held member waits as long as the others take to
    /// issue what it is ahead by, at the rate they went since it last looked, within RECHECK and MAX_HOLD.
    #[test]
    fn a_held_member_waits_flow_sleep_or_as_long_as_the_others_take_to_catch_up() {
        let flows = Flows::default();
        let mut slept = flows.join(&FlowSpec { id: 1, weight: 1, sleep: Duration::from_millis(3) });
        assert_eq!(slept.held_wait(Duration::ZERO), Duration::from_millis(3));
        // Its peer is on another rank (the remote figures), with the same weight.
        flows.group(0).set_remote(0, 1);
        let mut mine = flows.join(&spec(0, 1));
        let (us, ms) = (Duration::from_micros, Duration::from_millis);
        assert!(!mine.ahead() && !mine.ahead() && mine.ahead(), "two I/O of its own against none");
        assert_eq!(mine.held_wait(ms(0)), RECHECK, "nothing seen of the others yet");
        assert_eq!(mine.held_wait(us(5)), us(15), "woken early, it keeps the time it chose");
        assert_eq!(mine.held_wait(ms(1)), 2 * RECHECK, "the others issued nothing: twice as long");
        // The others issue 10 in 1 ms (10,000 a second); it catches up with 12 against their 10 and is one I/O
        // ahead of its share (it is back at it once the counter, 23, reaches 24): 0.1 ms.
        flows.group(0).set_remote(10, 1);
        assert_eq!((0..20).filter(|_| !mine.ahead()).count(), 10);
        assert_eq!(mine.held_wait(ms(2)), us(100));
        // At 10 I/O a second, one I/O takes longer than MAX_HOLD.
        flows.group(0).set_remote(11, 1);
        assert_eq!(mine.held_wait(ms(102)), MAX_HOLD);
        // Nothing more from them: the wait doubles up to MAX_HOLD.
        (1..12).for_each(|i| _ = mine.held_wait(ms(102) + MAX_HOLD * i));
        assert_eq!(mine.held_wait(ms(500)), MAX_HOLD);
    }

    /// A member on this rank with 8 of 10 weights is held to 4 of its I/O for each one the other rank's members
    /// issued, and goes free once they have left (weight 0).
    #[test]
    fn remote_counts_hold_a_member_to_its_share_across_ranks() {
        let flows = Flows::default();
        flows.group(3).set_remote(0, 2);
        let mut mine = flows.join(&spec(3, 8));
        let run = |member: &mut FlowMember| (0..1000).filter(|_| !member.ahead()).count();
        let early = run(&mut mine);
        assert!(early <= 5, "ran {early} before the other rank issued anything");
        flows.group(3).set_remote(100, 2);
        assert_eq!(flows.group(3).local(), (early as u64, 8));
        let later = early + run(&mut mine);
        assert!((400..=406).contains(&later), "{later} against the other rank's 100");
        flows.group(3).set_remote(100, 0);
        assert_eq!(run(&mut mine), 1000, "no longer held once the other members left");
    }
}
