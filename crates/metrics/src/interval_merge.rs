//! One phase's intervals merged from several sources that each send theirs in order: a phase's workers (the
//! coordinator's `run/gather.rs`) or a multi-host run's ranks (rank 0's `app/cluster/merge.rs`). An interval is
//! complete once every source has sent it, or a later one, or has finished; complete intervals come out in
//! order, their recorders merged by adding histograms, so the sum of what comes out is every source's
//! operations. It knows nothing of time or of who the sources are: each interval carries the caller's own
//! data (`T`: its elapsed time, or its start and length), combined as the caller says.

use std::collections::BTreeMap;

use super::Recorder;

/// The intervals of one phase still waiting for some source.
pub struct IntervalMerge<T> {
    /// Intervals some source may still add to: merged recorder and the caller's data, by index.
    pending: BTreeMap<u64, (Recorder, T)>,
    /// Highest interval index each source has sent.
    reported: Vec<Option<u64>>,
    /// Sources that will send no more.
    finished: Vec<bool>,
}

impl<T> IntervalMerge<T> {
    pub fn new(sources: usize) -> IntervalMerge<T> {
        IntervalMerge { pending: BTreeMap::new(), reported: vec![None; sources], finished: vec![false; sources] }
    }

    /// Adds `source`'s interval `index`. The first recorder of an interval is kept as its merge; a later one is
    /// added to it and given back (to be reused), and its `data` folded into the interval's with `combine`.
    /// A source outside the merge is ignored (its recorder given back).
    pub fn add(
        &mut self,
        source: usize,
        index: u64,
        recorder: Recorder,
        data: T,
        combine: impl FnOnce(&mut T, T),
    ) -> Option<Recorder> {
        let Some(reported) = self.reported.get_mut(source) else { return Some(recorder) };
        *reported = (*reported).max(Some(index));
        match self.pending.get_mut(&index) {
            Some((merged, mine)) => {
                merged.merge(&recorder);
                combine(mine, data);
                Some(recorder)
            }
            None => {
                self.pending.insert(index, (recorder, data));
                None
            }
        }
    }

    /// `source` will send no more intervals of this phase.
    pub fn finish(&mut self, source: usize) {
        if let Some(f) = self.finished.get_mut(source) {
            *f = true;
        }
    }

    /// The next interval no source can still add to (with `all`, the next one whatever the sources said):
    /// its index, merged recorder and data.
    pub fn pop_ready(&mut self, all: bool) -> Option<(u64, Recorder, T)> {
        let (&index, _) = self.pending.first_key_value()?;
        let complete = (self.reported.iter().zip(&self.finished))
            .all(|(reported, &finished)| finished || reported.is_some_and(|r| r >= index));
        if !complete && !all {
            return None;
        }
        let (recorder, data) = self.pending.remove(&index).expect("key just seen");
        Some((index, recorder, data))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::OpClass;

    fn recorder(ops: u64) -> Recorder {
        let mut recorder = Recorder::new(false);
        (0..ops).for_each(|i| recorder.record(OpClass::Read, 4096, 1000 + i));
        recorder
    }

    #[test]
    fn an_interval_comes_out_once_every_source_is_past_it() {
        let mut merge: IntervalMerge<u32> = IntervalMerge::new(2);
        let add = |m: &mut IntervalMerge<u32>, source, index, ops, data| {
            m.add(source, index, recorder(ops), data, |mine, theirs| *mine += theirs)
        };
        assert!(add(&mut merge, 0, 0, 5, 1).is_none(), "the first recorder of an interval is kept");
        assert!(merge.pop_ready(false).is_none(), "source 1 has not sent interval 0");
        let back = add(&mut merge, 1, 0, 7, 2).expect("merged, given back");
        assert_eq!(back.total_ops(), 7);
        add(&mut merge, 0, 1, 3, 4);
        let (index, merged, data) = merge.pop_ready(false).expect("interval 0 is complete");
        assert_eq!((index, merged.total_ops(), data), (0, 12, 3));
        assert!(merge.pop_ready(false).is_none(), "source 1 may still send interval 1");
        merge.finish(1);
        assert_eq!(merge.pop_ready(false).map(|(i, r, _)| (i, r.total_ops())), Some((1, 3)));
        add(&mut merge, 0, 2, 1, 0);
        merge.finish(0);
        add(&mut merge, 1, 3, 1, 0);
        assert_eq!(merge.pop_ready(false).map(|(i, ..)| i), Some(2));
        assert!(merge.pop_ready(false).is_some(), "every source finished");
        assert!(add(&mut merge, 5, 0, 1, 0).is_some(), "an unknown source is given back");
        assert!(merge.pop_ready(true).is_none());
    }
}
