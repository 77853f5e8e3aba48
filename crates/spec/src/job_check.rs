//! `PhaseSpec::check`: values that are wrong whatever the target — ranges and combinations — each refused with a
//! sentence that names the key and the fix. Kept apart from the type so that `job.rs` stays the list of keys.

use std::time::Duration;

use super::job::PhaseSpec;
use super::strided::{StrideSpec, StridedSpec};
use super::values::BlockSizeSpec;
use crate::units::Bytes;

impl PhaseSpec {
    /// Checks values that are wrong whatever the target: ranges and combinations. Returns the first problem as a
    /// sentence that names the key and the fix.
    pub fn check(&self) -> Result<(), String> {
        self.check_mix_and_counts()?;
        self.check_amounts_and_rates()?;
        self.check_verify()?;
        self.check_file_sizes()?;
        self.fio.strided.as_ref().map_or(Ok(()), StridedSpec::check)?;
        self.vdbench.stride.as_ref().map_or(Ok(()), StrideSpec::check)?;
        if let Some(BlockSizeSpec::Fixed(Bytes(0))) = self.bs {
            return Err("bs must be above zero".into());
        }
        if let Some(streams) = self.streams() {
            streams.check()?;
        }
        if let Some(parts) = &self.parts {
            return self.check_parts(parts);
        }
        if self.skew.is_some() || self.queue.is_some() || self.rank.is_some() {
            return Err("skew, queue and rank belong to a part of a phase ([[phase.part]]), not to a phase".into());
        }
        Ok(())
    }

    /// `file-sizes` gives one size above zero to each named file, and files of a worker's own (`{worker}`) are
    /// not laid end to end with the others.
    fn check_file_sizes(&self) -> Result<(), String> {
        let Some(sizes) = &self.file_sizes else { return Ok(()) };
        let names = self.file_names.as_deref().unwrap_or_default();
        if sizes.len() != names.len() {
            return Err(format!(
                "file-sizes gives {} sizes for {} file-names: give one size for each named file, in order",
                sizes.len(),
                names.len()
            ));
        }
        if sizes.contains(&Bytes(0)) {
            return Err("file-sizes must all be above zero".into());
        }
        if names.iter().any(|n| n.contains("{worker}")) {
            return Err(
                "file-sizes lays the named files end to end for every worker: drop {worker} from the names".into()
            );
        }
        Ok(())
    }

    /// The read percentage against the mode, and the counts that must be at least 1 and at most 4096.
    fn check_mix_and_counts(&self) -> Result<(), String> {
        if let Some(p) = self.rdpct
            && p > 100
        {
            return Err(format!("rdpct {p} is above 100: give a percentage of reads from 0 to 100"));
        }
        if self.rdpct.is_some() && self.rw.is_some_and(|rw| !rw.is_mixed()) {
            return Err(format!(
                "rdpct only applies to mixed modes, but rw is {}: use rw readwrite or randrw",
                self.rw.expect("checked above")
            ));
        }
        for (key, value) in [
            ("jobs", self.jobs),
            ("iodepth", self.iodepth),
            ("iodepth-batch", self.iodepth_batch),
            ("files", self.files),
        ] {
            if value == Some(0) {
                return Err(format!("{key} must be at least 1"));
            }
        }
        if self.jobs.is_some_and(|j| j > 4096) {
            return Err("jobs above 4096 is not supported: use fewer worker threads with a deeper iodepth".into());
        }
        if self.iodepth.is_some_and(|d| d > 4096) {
            return Err(
                "iodepth above 4096 is not supported: use at most 4096, and more jobs for more in flight".into()
            );
        }
        Ok(())
    }

    /// Sizes, run time, rates and flushes.
    fn check_amounts_and_rates(&self) -> Result<(), String> {
        if let Some(passes) = self.io_passes
            && !(passes > 0.0 && passes <= 1e6)
        {
            return Err(format!("io-passes is {passes}: give a number of passes above 0, such as 1 or 2.5"));
        }
        if self.size == Some(Bytes(0)) {
            return Err("size must be above zero".into());
        }
        if self.io_size == Some(Bytes(0)) {
            return Err("io-size must be above zero".into());
        }
        if (self.vdbench.io_read.is_some() || self.vdbench.io_written.is_some()) && self.kind.is_some() {
            return Err("io-read and io-written bound raw phases only: remove them from this file-set or streams \
                        phase"
                .into());
        }
        if self.runtime == Some(Duration::ZERO) {
            return Err("runtime must be above zero".into());
        }
        if self.rate.is_some() && self.rate_iops.is_some() {
            return Err("give either rate (bytes per second) or rate-iops (operations per second), not both".into());
        }
        if self.rate_iops == Some(0) {
            return Err("rate-iops must be above zero".into());
        }
        // A curve point's rate (a percentage of an earlier maximum) is a rate too: vdbench's iorate=curve paces
        // its points with the rd's arrival process.
        if self.rate_process.is_some()
            && self.rate.is_none()
            && self.rate_iops.is_none()
            && self.vdbench.rate_percent_of_max.is_none()
        {
            return Err("rate-process needs a rate: add rate, rate-iops or rate-percent-of-max".into());
        }
        if self.fsync_every == Some(0) {
            return Err("fsync-every must be at least 1 (it counts writes between flushes)".into());
        }
        Ok(())
    }

    /// Verify's read-back backlog.
    fn check_verify(&self) -> Result<(), String> {
        if self.verify_backlog == Some(0) {
            return Err("verify-backlog must be at least 1 (it counts writes between read-backs)".into());
        }
        if self.verify_backlog.is_some_and(|n| n > 1 << 20) {
            return Err("verify-backlog above 1048576 writes is not supported: read back more often".into());
        }
        if self.journal.is_some() && self.verify.is_none() {
            return Err("journal needs verify: add verify (crc32c, xxhash, sha256 or pattern)".into());
        }
        if self.verify_backlog.is_some() && self.verify.is_none() {
            return Err("verify-backlog needs verify: add verify (crc32c, xxhash, sha256 or pattern)".into());
        }
        let Some(data) = &self.data else { return Ok(()) };
        data.check()?;
        if self.verify.is_some() && data.shapes() {
            return Err("verify and a data shape (dedupe or compression) cannot be combined: a verified block \
                        carries a header that makes it unique and incompressible; drop one of them"
                .into());
        }
        Ok(())
    }
}
