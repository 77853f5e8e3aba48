//! From the options of fio jobs to streamcap phases: one `PhaseSpec` per job section, in file order.
//!
//! The conversions that are not one-to-one, and why:
//! - fio's `size` (and `io_size`) are per job clone; streamcap's `size` and `io-size` are for the whole phase.
//!   Clones with their own files (fio's default `jobname.jobnum.filenum`, or a `filename_format` with
//!   `$jobnum`) multiply the data set by `numjobs`; clones of one named file address that same file
//!   (`sharing = whole`) unless `offset_increment` gives each its own region.
//! - Without `time_based` a fio job ends after `size × loops` of I/O or at `runtime`, whichever comes first:
//!   both bounds are carried (`io-size` and `runtime`). With `time_based`, only the runtime.
//! - fio jobs start together unless `stonewall` (or `wait_for`) says otherwise: a job without it runs
//!   `concurrent` with the phase before it.
//! - Reporting groups start at every `stonewall` and `new_group`; with `group_reporting` the phases of a group
//!   share a `group` label (set only when a group has several phases: one phase is already one report).
//! - Defaults that differ between fio and streamcap are written out: fio uses buffered I/O (`direct=0`) and
//!   the psync engine unless told otherwise.
//!
//! Must not: read files or the environment (the reader did), or decide anything the planner decides.

use std::path::{Path, PathBuf};

use super::files::map_files;
use super::ini::{Entry, Location, Section};
use super::options::{JobOptions, OptionError, Said, Value};
use super::values::{FioSize, PerDirection};
use crate::spec::{
    ArrivalSpec, BlockSizeSpec, DistributionSpec, EngineChoice, JobSpec, PhaseSpec, RwMode, Sharing, SizeOrPercent,
    SpecOrigin,
};
use crate::units::{ByteRate, Bytes};

/// One job section with its effective options.
pub(super) struct Job {
    pub name: String,
    pub at: Location,
    pub options: JobOptions,
}

/// Turns the sections of a fio file into a job.
pub fn map_sections(path: &Path, sections: &[Section]) -> Result<JobSpec, OptionError> {
    let mut global: Vec<Entry> = Vec::new();
    let mut jobs = Vec::new();
    for section in sections {
        if section.is_global() {
            // A [global] applies to the jobs after it, on top of any earlier [global].
            global.extend(section.entries.iter().cloned());
            continue;
        }
        let options = JobOptions::parse(global.iter().chain(section.entries.iter()))?;
        let name = options.text("name").map_or_else(|| section.name.clone(), str::to_string);
        jobs.push(Job { name, at: section.at.clone(), options });
    }
    if jobs.is_empty() {
        return Err(OptionError {
            at: Location { file: path.to_path_buf(), line: 1 },
            message: "the file has no job section: add one such as [randread] after [global]".into(),
        });
    }
    let mut spec = JobSpec {
        origin: SpecOrigin::Fio { path: path.to_path_buf() },
        target: None,
        interval: None,
        phases: Vec::new(),
        notices: Vec::new(),
    };
    let single = jobs.len() == 1;
    for (index, job) in jobs.iter().enumerate() {
        let mapped = map_job(job, single, &mut spec.notices)?;
        if let Some(target) = mapped.target {
            match &spec.target {
                Some(existing) if *existing != target => {
                    return Err(OptionError {
                        at: job.at.clone(),
                        message: format!(
                            "job '{}' uses {} but an earlier job uses {}: streamcap runs a job file against one \
                             target; split the file",
                            job.name,
                            target.display(),
                            existing.display()
                        ),
                    });
                }
                _ => spec.target = Some(target),
            }
        }
        if let Some(interval) = mapped.interval {
            spec.interval = Some(spec.interval.map_or(interval, |i| i.min(interval)));
        }
        let mut phase = mapped.phase;
        phase.concurrent = concurrency(&jobs, index, &mut spec.notices)?;
        spec.phases.push(phase);
    }
    assign_groups(&jobs, &mut spec.phases);
    for job in &jobs {
        for (option, why) in &job.options.no_effect {
            let notice = format!("fio option '{option}' has no effect in streamcap: {why}");
            if !spec.notices.contains(&notice) {
                spec.notices.push(notice);
            }
        }
    }
    Ok(spec)
}

/// `Some(true)` when the job starts together with the one before it.
fn concurrency(jobs: &[Job], index: usize, notices: &mut Vec<String>) -> Result<Option<bool>, OptionError> {
    if index == 0 {
        return Ok(None);
    }
    let job = &jobs[index];
    if let Some(said) = job.options.get("wait_for") {
        let Some(waited) = jobs[..index].iter().position(|j| j.name == said.raw) else {
            return Err(OptionError {
                at: said.at.clone(),
                message: format!(
                    "option 'wait_for': '{}' is not the name of an earlier job; expected one of: {}",
                    said.raw,
                    jobs[..index].iter().map(|j| j.name.as_str()).collect::<Vec<_>>().join(", ")
                ),
            });
        };
        if waited + 1 != index {
            notices.push(format!(
                "job '{}' waits for '{}'; streamcap starts it after the phase just before it, '{}'",
                job.name,
                said.raw,
                jobs[index - 1].name
            ));
        }
        return Ok(None);
    }
    Ok((!job.options.flag("stonewall")).then_some(true))
}

/// fio's reporting groups: a new one at every stonewall and new_group.
fn assign_groups(jobs: &[Job], phases: &mut [PhaseSpec]) {
    let mut group_of = Vec::with_capacity(jobs.len());
    let mut current = 0usize;
    for (i, job) in jobs.iter().enumerate() {
        if i > 0
            && (job.options.flag("stonewall") || job.options.flag("new_group") || job.options.get("wait_for").is_some())
        {
            current += 1;
        }
        group_of.push(current);
    }
    for (i, job) in jobs.iter().enumerate() {
        let members: Vec<usize> = (0..jobs.len()).filter(|j| group_of[*j] == group_of[i]).collect();
        if job.options.flag("group_reporting") && members.len() > 1 {
            phases[i].group = Some(jobs[members[0]].name.clone());
        }
    }
}

struct Mapped {
    phase: PhaseSpec,
    target: Option<PathBuf>,
    interval: Option<std::time::Duration>,
}

pub(super) fn fail(said: &Said, option: &str, message: impl std::fmt::Display) -> OptionError {
    OptionError { at: said.at.clone(), message: format!("option '{option}': {message}") }
}

fn map_job(job: &Job, single: bool, notices: &mut Vec<String>) -> Result<Mapped, OptionError> {
    let o = &job.options;
    let mut phase = PhaseSpec { name: Some(job.name.clone()), ..Default::default() };

    let rw = map_rw(job, &mut phase, notices)?;
    if rw.is_mixed() {
        phase.rdpct = match (o.int("rwmixread"), o.int("rwmixwrite")) {
            (Some(r), _) => Some(r as u8),
            (None, Some(w)) => Some(100 - w as u8),
            (None, None) => None,
        };
    }
    if let Some(said) = o.get("percentage_random") {
        phase.percentage_random =
            one_direction(o.per_direction("percentage_random"), rw, said, "percentage_random")?.map(|p| p as u8);
    }
    (phase.bs, phase.bs_write) = map_block_sizes(o, rw)?;
    if let Some(said) = o.get("blockalign") {
        phase.align = one_direction(o.per_direction("blockalign"), rw, said, "blockalign")?.map(Bytes);
    }

    let jobs = o.int("numjobs").unwrap_or(1);
    if jobs == 0 {
        return Err(fail(o.get("numjobs").expect("said"), "numjobs", "'0' is not allowed; expected 1 or more"));
    }
    phase.jobs = (jobs > 1).then_some(jobs as u32);
    let files = map_files(job, single, &mut phase)?;

    // Data set: fio's size is per clone.
    let nrfiles = files.per_clone_files;
    let per_clone = match (o.size("size"), o.size("filesize")) {
        (Some(FioSize::Bytes(b)), _) => Some(b),
        (Some(FioSize::Percent(p)), _) => {
            phase.size_percent = Some(p);
            None
        }
        (None, Some(FioSize::Bytes(f))) => Some(f.saturating_mul(nrfiles)),
        (None, _) => None,
    };
    let clones_share_bytes = files.shared && o.get("offset_increment").is_none();
    if let Some(bytes) = per_clone {
        let total = if clones_share_bytes { bytes } else { bytes.saturating_mul(jobs) };
        phase.size = Some(Bytes(total));
    } else if phase.size_percent.is_none() && !files.target_is_device {
        notices.push(format!("job '{}' gives no size: streamcap uses its default data set size", job.name));
    }
    if files.shared && jobs > 1 && o.get("offset_increment").is_none() {
        phase.sharing = Some(Sharing::Whole);
    }
    phase.offset = o.size("offset").map(size_or_percent);
    phase.offset_increment = o.size("offset_increment").map(size_or_percent);
    phase.number_ios = o.int("number_ios").filter(|n| *n > 0);

    map_time(job, &mut phase, per_clone, jobs, notices)?;
    map_engine(job, &mut phase, notices)?;
    map_pacing(job, &mut phase, rw)?;
    map_random(job, &mut phase, notices)?;

    if let Some(said) = o.get("percentile_list") {
        let list = super::values::parse_percentile_list(&said.raw)
            .map_err(|bad| OptionError::bad_value(&said.at, "percentile_list", &said.raw, &bad))?;
        phase.percentiles = Some(list);
    }
    if o.bool("clat_percentiles") == Some(false) {
        notices.push("clat_percentiles=0: streamcap always reports latency percentiles".into());
    }
    if o.flag("lat_percentiles") {
        notices.push("lat_percentiles: streamcap's percentiles are of completion latency (fio's clat)".into());
    }
    if let Some(said) = o.get("continue_on_error") {
        phase.continue_on_error = match said.raw.trim().to_ascii_lowercase().as_str() {
            "none" | "0" => None,
            "all" | "1" => Some(true),
            "read" | "write" | "io" | "verify" => {
                notices.push(format!(
                    "continue_on_error={}: streamcap goes on after any I/O error, not only that kind",
                    said.raw
                ));
                Some(true)
            }
            _ => {
                return Err(fail(
                    said,
                    "continue_on_error",
                    format!("'{}' is not a kind of error; expected none, read, write, io, verify or all", said.raw),
                ));
            }
        };
    }
    // fio's logs: the bare option names them after the job.
    let log = |option: &str| o.text(option).map(|t| if t.is_empty() { job.name.clone() } else { t.to_string() });
    phase.bw_log = log("write_bw_log");
    phase.iops_log = log("write_iops_log");
    phase.lat_log = log("write_lat_log");
    let interval = o.time("log_avg_msec").filter(|t| !t.is_zero());
    Ok(Mapped { phase, target: files.target, interval })
}

fn size_or_percent(size: FioSize) -> SizeOrPercent {
    match size {
        FioSize::Bytes(b) => SizeOrPercent::Bytes(Bytes(b)),
        FioSize::Percent(p) => SizeOrPercent::Percent(p),
    }
}

/// rw (with the `randread:8` suffix) → mode, and the suffix as a percentage of random offsets.
fn map_rw(job: &Job, phase: &mut PhaseSpec, notices: &mut Vec<String>) -> Result<RwMode, OptionError> {
    let Some(said) = job.options.get("rw") else {
        phase.rw = Some(RwMode::Read);
        return Ok(RwMode::Read);
    };
    let expected = "read, write, randread, randwrite, rw (readwrite) or randrw, optionally with :N";
    let (mode, suffix) = said.raw.split_once(':').map_or((said.raw.as_str(), None), |(m, s)| (m, Some(s)));
    let mode = mode.trim().to_ascii_lowercase();
    if mode.contains("trim") {
        return Err(fail(said, "rw", format!("'{}': streamcap does not issue trims; expected {expected}", said.raw)));
    }
    let rw: RwMode = mode
        .parse()
        .map_err(|_| fail(said, "rw", format!("'{}' is not an I/O pattern; expected {expected}", said.raw)))?;
    if let Some(suffix) = suffix {
        let n: u64 = suffix.trim().parse().ok().filter(|n| *n > 0).ok_or_else(|| {
            fail(
                said,
                "rw",
                format!("'{}': the part after ':' must be a whole number above 0, as in randread:8", said.raw),
            )
        })?;
        if !rw.is_random() {
            if n > 1 {
                return Err(fail(
                    said,
                    "rw",
                    format!("'{}': sequential I/O with holes is not supported yet; use rw={mode}", said.raw),
                ));
            }
        } else if n > 1 && job.options.get("percentage_random").is_none() {
            // fio takes a new random offset every N operations and runs sequentially in between: on average
            // 100/N % of the offsets are random.
            let pct = (100.0 / n as f64).round() as u8;
            phase.percentage_random = Some(pct);
            notices.push(format!(
                "job '{}': rw={} becomes percentage_random={pct} (random offsets at the same average rate, \
                 not every {n}th operation)",
                job.name, said.raw
            ));
        }
    }
    phase.rw = Some(rw);
    Ok(rw)
}

/// The value for the directions the mode uses: refused when a mixed mode gives reads and writes different ones.
fn one_direction(
    values: Option<&PerDirection<u64>>,
    rw: RwMode,
    said: &Said,
    option: &str,
) -> Result<Option<u64>, OptionError> {
    let values = values.expect("the option was said with a per-direction value");
    match (rw.read_percent(Some(50)), values.read, values.write) {
        (100, r, _) => Ok(r),
        (0, _, w) => Ok(w),
        (_, r, w) if r == w => Ok(r),
        _ => Err(fail(
            said,
            option,
            format!(
                "'{}': different values for reads and writes in a mixed job are not supported yet; give one value",
                said.raw
            ),
        )),
    }
}

/// bssplit, else bsrange, else bs (fio's order of precedence).
/// fio's block size when a job gives none for a direction.
const FIO_DEFAULT_BS: u64 = 4096;

/// Block sizes of reads, and of writes when a mixed job gives them apart (`bs=4k,64k`).
type DirectedSizes = (Option<BlockSizeSpec>, Option<BlockSizeSpec>);

fn map_block_sizes(o: &JobOptions, rw: RwMode) -> Result<DirectedSizes, OptionError> {
    let pick = |read: Option<BlockSizeSpec>, write: Option<BlockSizeSpec>, said: &Said, option: &str| {
        let read_percent = rw.read_percent(Some(50));
        match (read_percent, read, write) {
            (100, r, _) => Ok((r, None)),
            (0, _, w) => Ok((w, None)),
            (_, r, w) if r == w => Ok((r, None)),
            (_, Some(r), Some(w)) => Ok((Some(r), Some(w))),
            // An empty entry is fio's default block size for that direction.
            (_, None, Some(w)) => Ok((Some(BlockSizeSpec::Fixed(Bytes(FIO_DEFAULT_BS))), Some(w))),
            (_, Some(r), None) => Ok((Some(r), Some(BlockSizeSpec::Fixed(Bytes(FIO_DEFAULT_BS))))),
            _ => Err(fail(
                said,
                option,
                format!("'{}': give the block size of both directions (e.g. 4k,64k) or one for both", said.raw),
            )),
        }
    };
    if let Some(said) = o.get("bssplit") {
        let Value::Splits(v) = &said.value else { unreachable!("bssplit parses to splits") };
        let convert = |s: &Option<Vec<(u64, Option<u32>)>>| {
            s.as_ref().map(|e| BlockSizeSpec::Split(e.iter().map(|(b, w)| (Bytes(*b), *w)).collect()))
        };
        let spec = pick(convert(&v.read), convert(&v.write), said, "bssplit")?;
        for side in [&spec.0, &spec.1] {
            if let Some(BlockSizeSpec::Split(entries)) = side {
                BlockSizeSpec::split_weights(entries)
                    .map_err(|why| fail(said, "bssplit", format!("'{}': {why}", said.raw)))?;
            }
        }
        return Ok(spec);
    }
    if let Some(said) = o.get("bsrange") {
        let Value::Ranges(v) = &said.value else { unreachable!("bsrange parses to ranges") };
        let convert = |r: Option<(u64, u64)>| {
            r.map(
                |(a, b)| if a == b { BlockSizeSpec::Fixed(Bytes(a)) } else { BlockSizeSpec::Range(Bytes(a), Bytes(b)) },
            )
        };
        return pick(convert(v.read), convert(v.write), said, "bsrange");
    }
    if let Some(said) = o.get("bs") {
        let v = o.per_direction("bs").expect("bs parses to sizes");
        if v.read == Some(0) || v.write == Some(0) {
            return Err(fail(said, "bs", format!("'{}': a block size must be above zero", said.raw)));
        }
        return pick(
            v.read.map(|b| BlockSizeSpec::Fixed(Bytes(b))),
            v.write.map(|b| BlockSizeSpec::Fixed(Bytes(b))),
            said,
            "bs",
        );
    }
    Ok((None, None))
}

fn map_time(
    job: &Job,
    phase: &mut PhaseSpec,
    per_clone: Option<u64>,
    jobs: u64,
    notices: &mut Vec<String>,
) -> Result<(), OptionError> {
    let o = &job.options;
    phase.runtime = o.time("runtime").filter(|t| !t.is_zero());
    phase.ramp = o.time("ramp_time").filter(|t| !t.is_zero());
    phase.start_delay = o.time("startdelay").filter(|t| !t.is_zero());
    let loops = o.int("loops").unwrap_or(1).max(1);
    if o.flag("time_based") {
        if phase.runtime.is_none() {
            return Err(fail(
                o.get("time_based").expect("said"),
                "time_based",
                "needs a runtime: add runtime=60 (seconds) or remove time_based",
            ));
        }
        return Ok(());
    }
    let io_per_clone = match o.size("io_size") {
        Some(FioSize::Bytes(b)) => Some(b),
        _ => per_clone,
    };
    let bounded = phase.runtime.is_some() || loops > 1 || o.get("io_size").is_some();
    match io_per_clone {
        Some(bytes) if bounded => phase.io_size = Some(Bytes(bytes.saturating_mul(loops).saturating_mul(jobs))),
        Some(_) => {}
        None if bounded => notices.push(format!(
            "job '{}': without a size in bytes streamcap cannot bound the I/O to size × loops; it runs for the \
             runtime, or one pass over the data",
            job.name
        )),
        None => {}
    }
    Ok(())
}

fn map_engine(job: &Job, phase: &mut PhaseSpec, notices: &mut Vec<String>) -> Result<(), OptionError> {
    let o = &job.options;
    phase.engine = Some(match o.get("ioengine") {
        None => EngineChoice::Sync,
        Some(said) => match said.raw.trim() {
            "psync" | "sync" | "pvsync" | "pvsync2" | "vsync" => EngineChoice::Sync,
            "libaio" | "io_uring" | "posixaio" => EngineChoice::IoUring,
            "null" => EngineChoice::Null,
            other => {
                return Err(fail(
                    said,
                    "ioengine",
                    format!(
                        "the '{other}' engine is not supported; expected psync, sync, pvsync, pvsync2 (streamcap's sync \
                     engine), libaio, io_uring, posixaio (streamcap's io_uring engine) or null"
                    ),
                ));
            }
        },
    });
    phase.iodepth = o.int("iodepth").map(|d| d.clamp(1, u64::from(u32::MAX)) as u32);
    phase.iodepth_batch = o.int("iodepth_batch").filter(|b| *b > 0).map(|b| b.min(u64::from(u32::MAX)) as u32);
    phase.direct = match (o.bool("direct"), o.bool("buffered")) {
        (Some(d), _) => Some(d),
        (None, Some(b)) => Some(!b),
        (None, None) => {
            notices.push(format!(
                "job '{}' does not set direct=1: like fio, streamcap uses buffered I/O through the page cache",
                job.name
            ));
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
    phase.fdatasync_every = o.int("fdatasync").filter(|n| *n > 0);
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
    Ok(())
}

fn map_pacing(job: &Job, phase: &mut PhaseSpec, rw: RwMode) -> Result<(), OptionError> {
    let o = &job.options;
    let value = |name: &str| -> Result<Option<u64>, OptionError> {
        match o.get(name) {
            Some(said) => Ok(one_direction(o.per_direction(name), rw, said, name)?.filter(|v| *v > 0)),
            None => Ok(None),
        }
    };
    phase.rate = value("rate")?.map(|b| ByteRate(b as f64));
    phase.rate_iops = value("rate_iops")?;
    phase.rate_min = value("rate_min")?.map(|b| ByteRate(b as f64));
    phase.rate_min_iops = value("rate_iops_min")?;
    if let Some(said) = o.get("rate_process") {
        let process: ArrivalSpec = said.raw.parse().map_err(|_| {
            fail(said, "rate_process", format!("'{}' is not an arrival process; expected linear or poisson", said.raw))
        })?;
        phase.rate_process = Some(process);
    }
    phase.thinktime = o.time("thinktime").filter(|t| !t.is_zero());
    phase.thinktime_blocks = o.int("thinktime_blocks").filter(|n| *n > 0).map(|n| n.min(u64::from(u32::MAX)) as u32);
    Ok(())
}

fn map_random(job: &Job, phase: &mut PhaseSpec, notices: &mut Vec<String>) -> Result<(), OptionError> {
    let o = &job.options;
    phase.seed = o.int("randseed");
    if o.bool("randrepeat") == Some(false) && phase.seed.is_none() {
        notices.push(format!(
            "job '{}': randrepeat=0 has no effect: streamcap repeats the same offsets on every run unless given \
             another randseed",
            job.name
        ));
    }
    if let Some(said) = o.get("random_distribution") {
        let text = said.raw.trim().to_ascii_lowercase();
        let expected = "random, zipf:θ, pareto:h or normal:σ (σ in % of the data set)";
        if text.starts_with("zoned") || text.matches(':').count() > 1 {
            return Err(fail(
                said,
                "random_distribution",
                format!("'{}' is not supported yet; expected {expected}", said.raw),
            ));
        }
        let spec: DistributionSpec = text.replace("gauss", "normal").parse().map_err(|_| {
            fail(said, "random_distribution", format!("'{}' is not a distribution; expected {expected}", said.raw))
        })?;
        phase.distribution = Some(spec);
    }
    Ok(())
}
