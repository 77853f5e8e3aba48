//! fio's token-based flow control (`flow`, `flow_id`, `flow_sleep`): the workers of the jobs that share a flow
//! id issue I/O in proportion to their jobs' weights (flow=3 and flow=1 run 3:1).
//!
//! As fio does it: a flow keeps one counter of the I/O its members issued (starting at 1) and the sum of their
//! weights; a member whose own count is a larger share of the counter than its weight is of the sum waits
//! `flow_sleep` (at least `RECHECK`) and looks again, otherwise it counts its I/O and goes on. A member leaves
//! the flow when its worker ends, taking its count and weight with it, so the others are no longer held back.
//!
//! Must not: issue or time I/O (the schedule and the core do).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::plan::FlowSpec;

/// The shortest wait of a member ahead of its share (fio spins when flow_sleep is 0; streamcap does not).
const RECHECK: Duration = Duration::from_micros(20);

#[derive(Debug)]
struct FlowGroup {
    counter: AtomicU64,
    weight: AtomicU64,
}

/// The flows of a run, by flow id, created when their first member joins.
#[derive(Debug, Default)]
pub(super) struct Flows {
    groups: Mutex<HashMap<u64, Arc<FlowGroup>>>,
}

impl Flows {
    /// A worker joins the flow `spec` names, with its job's weight.
    pub fn join(&self, spec: &FlowSpec) -> FlowMember {
        let mut groups = self.groups.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let group = groups
            .entry(spec.id)
            .or_insert_with(|| Arc::new(FlowGroup { counter: AtomicU64::new(1), weight: AtomicU64::new(0) }))
            .clone();
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
        let counter = self.group.counter.load(Ordering::Relaxed).max(1);
        let weights = self.group.weight.load(Ordering::Relaxed).max(1);
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
}
