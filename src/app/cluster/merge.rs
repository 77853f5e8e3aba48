//! Rank 0's merge of every rank's intervals of one phase: an interval is reported once every rank has sent it
//! (or a later one, or finished the phase), with the ranks' recorders merged by adding their histograms, so the
//! merged series and the phase totals (the sum of the merged intervals) hold every operation of every rank.
//! The ordering is `metrics::IntervalMerge`, as the coordinator's merge of its workers' snapshots
//! (`run/gather.rs`); this adds the interval's start and length and the bytes an interval travels in.

use std::time::Duration;

use crate::metrics::{IntervalMerge, Recorder, WireError, decode_recorder, encode_recorder};

/// One interval of one rank, as sent to rank 0.
pub struct RankInterval {
    /// The interval's index in the phase's series.
    pub index: u64,
    /// Its start, from the start of measurement.
    pub start: Duration,
    pub length: Duration,
    pub recorder: Recorder,
}

impl RankInterval {
    pub fn encode(index: u64, start: Duration, length: Duration, recorder: &Recorder) -> Vec<u8> {
        let mut out = Vec::new();
        for v in [index, start.as_nanos() as u64, length.as_nanos() as u64] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&encode_recorder(recorder));
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<RankInterval, WireError> {
        let word =
            |i: usize| -> Option<u64> { Some(u64::from_le_bytes(bytes.get(i * 8..i * 8 + 8)?.try_into().ok()?)) };
        let (Some(index), Some(start), Some(length)) = (word(0), word(1), word(2)) else {
            return Err(WireError("cut short"));
        };
        Ok(RankInterval {
            index,
            start: Duration::from_nanos(start),
            length: Duration::from_nanos(length),
            recorder: decode_recorder(&bytes[24..])?,
        })
    }
}

/// The merge of one phase's intervals over `ranks` ranks.
pub struct PhaseMerge {
    /// Intervals some rank may still add to, each with its earliest start and longest length.
    intervals: IntervalMerge<(Duration, Duration)>,
    /// Every interval reported so far, merged.
    pub totals: Recorder,
    /// Intervals reported so far.
    pub emitted: u64,
}

impl PhaseMerge {
    pub fn new(ranks: usize) -> PhaseMerge {
        PhaseMerge { intervals: IntervalMerge::new(ranks), totals: Recorder::new(false), emitted: 0 }
    }

    pub fn add(&mut self, rank: u32, interval: RankInterval) {
        let span = (interval.start, interval.length);
        let combine = |(start, length): &mut (Duration, Duration), (s, l): (Duration, Duration)| {
            *start = (*start).min(s);
            *length = (*length).max(l);
        };
        // A rank's recorder merged into the interval's is given back: it was decoded for this, and is dropped.
        self.intervals.add(rank as usize, interval.index, interval.recorder, span, combine);
    }

    /// Rank `rank` will send no more intervals of this phase.
    pub fn finish(&mut self, rank: u32) {
        self.intervals.finish(rank as usize);
    }

    /// Intervals no rank can still add to (every one, with `all`), in order: (index, start, length, recorder).
    pub fn ready(&mut self, all: bool) -> Vec<(u64, Duration, Duration, Recorder)> {
        let mut out = Vec::new();
        while let Some((index, recorder, (start, length))) = self.intervals.pop_ready(all) {
            self.totals.merge(&recorder);
            self.emitted += 1;
            out.push((index, start, length, recorder));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::OpClass;

    fn interval(index: u64, ops: u64) -> RankInterval {
        let mut recorder = Recorder::new(false);
        for i in 0..ops {
            recorder.record(OpClass::Read, 4096, 1000 + i);
        }
        let start = Duration::from_secs(index);
        let bytes = RankInterval::encode(index, start, Duration::from_secs(1), &recorder);
        RankInterval::decode(&bytes).expect("decodes")
    }

    #[test]
    fn an_interval_waits_for_every_rank_and_totals_add_up() {
        let mut merge = PhaseMerge::new(3);
        merge.add(0, interval(0, 5));
        merge.add(1, interval(0, 7));
        assert!(merge.ready(false).is_empty(), "rank 2 has not sent interval 0");
        merge.add(2, interval(1, 3));
        let ready = merge.ready(false);
        assert_eq!(ready.len(), 1, "interval 0 is complete (rank 2 skipped it), 1 is not");
        assert_eq!(ready[0].3.total_ops(), 12);
        merge.add(0, interval(1, 1));
        merge.finish(1);
        let ready = merge.ready(false);
        assert_eq!((ready[0].0, ready[0].3.total_ops()), (1, 4));
        merge.add(0, interval(2, 2));
        assert!(merge.ready(false).is_empty());
        assert_eq!(merge.ready(true).len(), 1);
        assert_eq!(merge.totals.total_ops(), 5 + 7 + 3 + 1 + 2);
        assert_eq!(merge.emitted, 3);
    }

    #[test]
    fn short_bytes_are_an_error() {
        assert!(RankInterval::decode(&[1, 2, 3]).is_err());
    }
}
