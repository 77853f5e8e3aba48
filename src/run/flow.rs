//! fio's token-based flow control (`flow`, `flow_id`, `flow_sleep`): the workers of the jobs that share a flow
//! id issue I/O in proportion to their jobs' weights (flow=3 and flow=1 run 3:1).
//!
//! As fio does it: a flow keeps one counter of the I/O its members issued (starting at 1) and the sum of their
//! weights; a member whose own count is a larger share of the counter than its weight is of the sum waits
//! `flow_sleep` (at least `RECHECK`) and looks again, otherwise it counts its I/O and goes on. A member leaves
//! the flow when its worker ends, taking its count and weight with it, so the others are no longer held back.
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
        FlowMember { group, weight: spec.weight, count: 0, wait: spec.sleep.max(RECHECK), joined: true }
    }
}

/// One worker's place in a flow.
#[derive(Debug)]
pub(super) struct FlowMember {
    group: Arc<FlowGroup>,
    weight: u64,
    /// I/O this worker counted in the flow.
    count: u64,
    /// How long to wait when ahead of its share.
    pub wait: Duration,
    joined: bool,
}

impl FlowMember {
    /// Whether this worker is ahead of its share and must wait; when it is not, its next I/O is counted.
    #[inline]
    pub fn ahead(&mut self) -> bool {
        let group = &self.group;
        // Two more relaxed loads than fio's check: zero unless the flow spans ranks.
        let counter = group.counter.load(Ordering::Relaxed).max(1) + group.remote_counted.load(Ordering::Relaxed);
        let weights = (group.weight.load(Ordering::Relaxed) + group.remote_weight.load(Ordering::Relaxed)).max(1);
        // count / counter > weight / weights, without division.
        if u128::from(self.count) * u128::from(weights) > u128::from(self.weight) * u128::from(counter) {
            return true;
        }
        self.group.counter.fetch_add(1, Ordering::Relaxed);
        self.count += 1;
        false
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
        assert_eq!(a.wait, RECHECK);
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
