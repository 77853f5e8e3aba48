//! fio's per-command I/O priorities in a raw worker: which reads and writes carry an I/O priority of their own
//! (`plan::CmdPrio`, from cmdprio_percentage or cmdprio_bssplit). Each I/O draws a number under 100; the rules of
//! its direction that match its block size (or every size) are walked in order, adding up their percentages,
//! and the first whose running total passes the draw gives its priority; none: 0, the thread's own.
//!
//! Must not: issue I/O or know the engine (the core copies the priority into the request).

use crate::plan::{CmdPrio, PrioShare};
use crate::workload::Rng;

pub(super) struct PrioPicker {
    rules: CmdPrio,
    rng: Rng,
}

impl PrioPicker {
    pub fn new(rules: CmdPrio, seed: u64) -> PrioPicker {
        PrioPicker { rules, rng: Rng::new(seed) }
    }

    /// The priority of a read or write of `len` bytes.
    #[inline]
    pub fn pick(&mut self, write: bool, len: u32) -> u16 {
        let rules: &[PrioShare] = if write { &self.rules.write } else { &self.rules.read };
        let draw = self.rng.below(100);
        let mut total = 0u64;
        for rule in rules.iter().filter(|r| r.bs.is_none_or(|bs| bs == len)) {
            total += u64::from(rule.percent);
            if draw < total {
                return rule.ioprio;
            }
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_size_gets_its_shares_of_priorities() {
        let share = |bs, percent, ioprio| PrioShare { bs, percent, ioprio };
        let rules = CmdPrio {
            read: vec![share(Some(4096), 25, 1), share(Some(4096), 75, 2), share(Some(8192), 0, 3)],
            write: vec![share(None, 20, 4)],
        };
        let mut picker = PrioPicker::new(rules, 7);
        let mut counts = [0u32; 5];
        for _ in 0..10_000 {
            counts[picker.pick(false, 4096) as usize] += 1;
            counts[picker.pick(false, 8192) as usize] += 1;
            counts[picker.pick(true, 65536) as usize] += 1;
        }
        assert!((2200..2800).contains(&counts[1]) && (7200..7800).contains(&counts[2]), "{counts:?}");
        assert_eq!(counts[3], 0);
        assert!((1700..2300).contains(&counts[4]), "{counts:?}");
        // 8 KiB reads (0 %) and 80 % of the writes: the thread's own.
        assert!((17_700..18_300).contains(&counts[0]), "{counts:?}");
    }
}
