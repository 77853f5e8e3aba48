//! How a fio job's I/O reaches the storage: the engine and its queue (`ioengine`, `iodepth`, `iodepth_batch`,
//! `io_submit_mode`), direct or buffered I/O, and the durability options (`sync`, `fsync`, `fdatasync`,
//! `end_fsync`, `fsync_on_close`, `invalidate`, `pre_read`). fio's defaults are written out where streamcap's
//! differ: buffered I/O and the psync engine.

use super::engines::EngineUse;
use super::job::fail;
use super::mapping::Job;
use super::options::OptionError;
use crate::spec::{EngineChoice, PhaseSpec};

/// The engine (already classified), its queue, and fio's submission mode.
pub(super) fn map_engine(job: &Job, phase: &mut PhaseSpec, notices: &mut Vec<String>) -> Result<(), OptionError> {
    let o = &job.options;
    phase.engine = Some(match job.engine {
        EngineUse::Io(choice) => choice,
        EngineUse::FileOps(_) => unreachable!("file engines are mapped to file-set phases"),
    });
    phase.iodepth = o.int("iodepth").map(|d| d.clamp(1, u64::from(u32::MAX)) as u32);
    phase.iodepth_batch = o.int("iodepth_batch").filter(|b| *b > 0).map(|b| b.min(u64::from(u32::MAX)) as u32);
    if let Some(said) = o.get("io_submit_mode") {
        match said.raw.trim() {
            "inline" => {}
            "offload" => notices.push(format!(
                "job '{}': io_submit_mode=offload: streamcap submits from the worker thread that prepared the I/O; \
                 what offload is for, latency measured from when a paced I/O was due, streamcap reports anyway \
                 (due latency)",
                job.name
            )),
            other => return Err(fail(said, "io_submit_mode", format!("'{other}': expected inline or offload"))),
        }
    }
    // fio's character devices that store nothing: what they measure is the engine itself, streamcap's null.
    if let Some(said) = o.get("filename").filter(|s| matches!(s.raw.trim(), "/dev/null" | "/dev/zero")) {
        notices.push(format!(
            "job '{}': filename={} stores nothing; streamcap runs the job on its null engine (no storage touched)",
            job.name,
            said.raw.trim()
        ));
        phase.engine = Some(EngineChoice::Null);
    }
    Ok(())
}

/// Linux's native AIO (libaio) does buffered I/O inside io_submit, one request after another, so a buffered
/// libaio job of fio never has more than one I/O at the storage whatever its iodepth: it is a synchronous job.
/// streamcap runs it on its sync engine, which does the same (one read or write at a time per job), so that the
/// same file measures the same thing: io_uring at depth 1 punts buffered I/O it cannot serve from the cache to
/// a kernel worker and measured 0.36–0.65× of fio there. io_uring is the engine for buffered I/O in flight.
pub(super) fn buffered_libaio_is_synchronous(job: &Job, phase: &mut PhaseSpec, notices: &mut Vec<String>) {
    let libaio = job.options.text("ioengine").is_some_and(|e| e.trim() == "libaio");
    if libaio && phase.direct == Some(false) {
        notices.push(format!(
            "job '{}': ioengine=libaio with buffered I/O: the kernel serves buffered AIO inside io_submit, one I/O \
             at a time, so under fio it has one I/O at the storage whatever iodepth says; streamcap runs it on its \
             sync engine the same way (set ioengine=io_uring, or direct=1, for I/O in flight)",
            job.name
        ));
        phase.iodepth = Some(1);
        phase.engine = Some(EngineChoice::Sync);
    }
}

/// Direct or buffered I/O, and what makes writes durable.
pub(super) fn map_direct_and_sync(
    job: &Job,
    phase: &mut PhaseSpec,
    notices: &mut Vec<String>,
) -> Result<(), OptionError> {
    let o = &job.options;
    phase.direct = match (o.bool("direct"), o.bool("buffered")) {
        (Some(d), _) => Some(d),
        (None, Some(b)) => Some(!b),
        (None, None) => {
            if phase.engine != Some(EngineChoice::Null) {
                notices.push(format!(
                    "job '{}' does not set direct=1: like fio, streamcap uses buffered I/O through the page cache",
                    job.name
                ));
            }
            Some(false)
        }
    };
    if let Some(said) = o.get("sync") {
        match said.raw.trim() {
            "0" | "none" => {}
            "1" | "sync" => phase.sync_writes = Some(true),
            "dsync" => {
                notices.push("sync=dsync: streamcap opens the files with O_SYNC (a superset of O_DSYNC)".into());
                phase.sync_writes = Some(true);
            }
            _ => {
                return Err(fail(
                    said,
                    "sync",
                    format!("'{}' is not a sync mode; expected 0, 1, none, sync or dsync", said.raw),
                ));
            }
        }
    }
    phase.fsync_every = o.int("fsync").filter(|n| *n > 0);
    phase.fio.fdatasync_every = o.int("fdatasync").filter(|n| *n > 0);
    if o.bool("end_fsync") == Some(true) {
        phase.end_fsync = Some(true);
    }
    if o.bool("fsync_on_close") == Some(true) {
        notices.push("fsync_on_close: streamcap fsyncs every written file at the end of the phase (end_fsync)".into());
        phase.end_fsync = Some(true);
    }
    if o.bool("invalidate") == Some(false) {
        phase.invalidate = Some(false);
    }
    if o.bool("pre_read") == Some(true) {
        phase.pre_read = Some(true);
    }
    map_fadvise_hint(job, phase)
}

/// fio's fadvise_hint: 1 (its default) advises the kernel of the job's pattern, as streamcap does for buffered
/// phases; 0 gives no advice. fio's `sequential` and `random` force one pattern whatever the job does, which
/// streamcap cannot: refused, rather than run meaning something else.
fn map_fadvise_hint(job: &Job, phase: &mut PhaseSpec) -> Result<(), OptionError> {
    let Some(said) = job.options.get("fadvise_hint") else { return Ok(()) };
    phase.fio.access_hint = Some(match said.raw.trim() {
        "" | "1" | "true" | "on" | "yes" => true,
        "0" | "false" | "off" | "no" => false,
        other => {
            let why = format!(
                "'{other}': streamcap advises the kernel of the job's own pattern (fadvise_hint=1, fio's default) or \
                 not at all (0); a forced sequential or random hint is not supported"
            );
            return Err(fail(said, "fadvise_hint", why));
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::spec::EngineChoice;
    use crate::spec::fio::tests::parse;

    #[test]
    fn buffered_libaio_runs_on_the_sync_engine_at_depth_one_and_direct_libaio_keeps_its_depth() {
        let job = parse("[a]\nsize=1m\nrw=randread\nioengine=libaio\niodepth=16\n").unwrap();
        let p = &job.phases[0];
        assert_eq!((p.engine, p.iodepth), (Some(EngineChoice::Sync), Some(1)));
        assert!(job.notices.iter().any(|n| n.contains("sync engine")), "{:?}", job.notices);
        let job = parse("[a]\nsize=1m\nrw=randread\nioengine=libaio\niodepth=16\ndirect=1\n").unwrap();
        assert_eq!((job.phases[0].engine, job.phases[0].iodepth), (Some(EngineChoice::IoUring), Some(16)));
    }
}
