//! `fill-device` (fio fill_device): a phase without a size gets the size that fills the target — the free space
//! of a directory's filesystem less the headroom streamcap always leaves (fio writes until ENOSPC, which would
//! leave other programs on that filesystem none), or the whole of a block device. Worked out from the facts
//! before the target is planned, so the free-space check and the dry run see the size that will be written.

use std::borrow::Cow;

use super::{Facts, PlanError, TargetFacts, defaults};
use crate::spec::JobSpec;
use crate::units::{Bytes, MIB};

/// The job with every filling phase sized; the job itself when no phase fills.
pub(super) fn resolve_fill<'a>(
    job: &'a JobSpec,
    facts: &Facts,
    notices: &mut Vec<String>,
) -> Result<Cow<'a, JobSpec>, PlanError> {
    let fills = |p: &crate::spec::PhaseSpec| p.fill_device == Some(true) && p.size.is_none();
    if !job.phases.iter().any(fills) {
        return Ok(Cow::Borrowed(job));
    }
    let size = fill_size(&facts.target, notices)?;
    let mut job = job.clone();
    for phase in job.phases.iter_mut().filter(|p| fills(p)) {
        phase.size = Some(size);
    }
    Ok(Cow::Owned(job))
}

fn fill_size(target: &TargetFacts, notices: &mut Vec<String>) -> Result<Bytes, PlanError> {
    let reserve = defaults::FREE_SPACE_RESERVE;
    match target {
        TargetFacts::Directory { path, free: Some(free), .. } => {
            let size = Bytes(free.0.saturating_sub(reserve.0) / MIB * MIB);
            if size.0 == 0 {
                return Err(PlanError(format!(
                    "fill-device: {} has {free} free, no more than the {reserve} streamcap leaves: free some space",
                    path.display()
                )));
            }
            notices.push(format!(
                "fill-device: the data set is {size}, the free space of {} less {reserve} of headroom (fio writes \
                 until the filesystem is full)",
                path.display()
            ));
            Ok(size)
        }
        TargetFacts::Directory { path, free: None, .. } => Err(PlanError(format!(
            "fill-device needs the free space of {}, which its filesystem does not report: give a size",
            path.display()
        ))),
        TargetFacts::BlockDevice { size, .. } => Ok(*size),
        TargetFacts::File { path, .. } => Err(PlanError(format!(
            "fill-device fills a filesystem or a block device; {} is a file, which streamcap only reads: give its \
             directory, or a size",
            path.display()
        ))),
        TargetFacts::Remote { .. } => Err(PlanError("fill-device needs a local directory or block device".into())),
    }
}
