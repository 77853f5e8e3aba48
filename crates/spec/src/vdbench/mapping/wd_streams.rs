//! A raw wd's `streams=n` (vdbench 5.04.06: `WD_entry` reads it, `RD_entry.adjustThreadCount` and
//! `StreamContext`, `IO_task.processSingleIO` run it): the lun (or the sd's range) is cut into n equal pieces,
//! each read or written sequentially from its start by its own share of the sd's threads, whatever seekpct says
//! (`IO_task` overrides every lba with its stream's next one). The threads are raised to a multiple of n, as
//! vdbench raises them. In streamcap a stream is a worker of its own with its slice of the lun: `jobs` = n,
//! `iodepth` = threads / n, sequential; over several sds, each sd its own n streams (a part with jobs = n).
//!
//! Must not: decide phases or parts (`raw.rs` refuses streams beside another wd or over several hosts).

use super::words::Seek;
use super::{Mapper, fail, whole};
use crate::spec::vdbench::VdbError;
use crate::spec::vdbench::model::Record;

impl Mapper<'_> {
    /// The wd's stream count, with the seek and the sd's `threads` as streams make them: sequential (a pass
    /// of each stream still ends a `seekpct=eof` run), and threads a multiple of the streams.
    pub(super) fn streams(
        &mut self,
        wd: &Record,
        seek: Seek,
        threads: u64,
    ) -> Result<(Option<u32>, Seek, u64), VdbError> {
        let Some(n) = whole(wd, "streams", "a number of streams, 2 or more")? else { return Ok((None, seek, threads)) };
        if !(2..=4096).contains(&n) {
            let p = wd.get("streams").expect("just read");
            return Err(fail(
                wd,
                p,
                format!("streams={n}: give at least two streams, as vdbench requires (and at most 4096)"),
            ));
        }
        if seek.percent > 0 {
            self.notice(format!(
                "vdbench {}: with streams= every I/O is sequential within its stream, whatever seekpct= says, as in \
                 vdbench",
                wd.label()
            ));
        }
        let raised = threads.div_ceil(n) * n;
        // Concatenated sds run on the wd's (or the rd's) threads, which `run_phase` shares out rounding up.
        if raised != threads && !self.concatenate {
            self.notice(format!(
                "vdbench {}: {threads} threads raised to {raised}, a multiple of streams={n}, as vdbench raises them",
                wd.label()
            ));
        }
        Ok((Some(n as u32), Seek { percent: 0, eof: seek.eof }, raised))
    }
}
