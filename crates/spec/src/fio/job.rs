//! One fio job → one `PhaseSpec`: the data set, stop conditions, engine, pacing, randomness and reporting
//! options. Each step records its own problem and the others still run, so a job with several mistakes reports
//! them all.
//!
//! The conversions that are not one-to-one, and why:
//! - fio's `size` (and `io_size`) are per job clone; streamcap's `size` and `io-size` are for the whole phase.
//!   Clones with their own files (fio's default `jobname.jobnum.filenum`, or a `filename_format` with
//!   `$jobnum`) multiply the data set by `numjobs`; clones of one named file address that same file
//!   (`sharing = whole`) unless `offset_increment` gives each its own region.
//! - Without `time_based` a fio job ends after `size × loops` of I/O or at `runtime`, whichever comes first:
//!   both bounds are carried (`io-size` and `runtime`). With `time_based`, only the runtime.
//! - Defaults that differ between fio and streamcap are written out: fio uses buffered I/O (`direct=0`) and
//!   the psync engine unless told otherwise.

use super::data::map_data;
use super::durability::{buffered_libaio_is_synchronous, map_direct_and_sync, map_engine};
use super::engines::EngineUse;
use super::fileops::map_file_ops;
use super::files::map_files;
use super::mapping::{Job, Mapped};
use super::options::{OptionError, Problems, Said};
use super::rw::{map_block_sizes, map_rw, one_direction};
use super::steady::map_steady;
use super::values::FioSize;
use super::verify::map_verify;
use super::zones::map_zones;
use crate::spec::{ArrivalSpec, PhaseSpec, Sharing, SizeOrPercent};
use crate::units::{ByteRate, Bytes};

pub(super) fn fail(said: &Said, option: &str, message: impl std::fmt::Display) -> OptionError {
    OptionError { at: said.at.clone(), message: format!("option '{option}': {message}") }
}

/// Maps one job, recording its problems; `None` when it had any.
pub(super) fn map_job(job: &Job, single: bool, notices: &mut Vec<String>, problems: &mut Problems) -> Option<Mapped> {
    let before = problems.list.len();
    let o = &job.options;
    let mut phase = PhaseSpec { name: Some(job.name.clone()), ..Default::default() };
    if let EngineUse::FileOps(engine) = job.engine {
        let target = problems.take(map_file_ops(job, engine, &mut phase, notices)).flatten();
        return (problems.list.len() == before).then_some(Mapped { phase, target, interval: None });
    }
    let rw = problems.take(map_rw(job, &mut phase, notices));
    if let Some(rw) = rw {
        if rw.is_mixed() {
            phase.rdpct = match (o.int("rwmixread"), o.int("rwmixwrite")) {
                (Some(r), _) => Some(r as u8),
                (None, Some(w)) => Some(100 - w as u8),
                (None, None) => None,
            };
        }
        if let Some(said) = o.get("percentage_random") {
            let pct = problems.take(one_direction(o.per_direction("percentage_random"), rw, said, "percentage_random"));
            phase.percentage_random = pct.flatten().map(|p| p as u8);
        }
        problems.take(map_block_sizes(o, rw).map(|sizes| (phase.bs, phase.bs_write) = sizes));
        if let Some(said) = o.get("blockalign") {
            let align = problems.take(one_direction(o.per_direction("blockalign"), rw, said, "blockalign"));
            phase.align = align.flatten().map(Bytes);
        }
        problems.take(map_pacing(job, &mut phase, rw));
    }
    let jobs = o.int("numjobs").unwrap_or(1);
    if jobs == 0 {
        problems.push(fail(o.get("numjobs").expect("said"), "numjobs", "'0' is not allowed; expected 1 or more"));
    }
    phase.jobs = (jobs > 1).then_some(jobs.min(u64::from(u32::MAX)) as u32);
    let files = problems.take(map_files(job, single, &mut phase));
    let mut target = None;
    if let Some(files) = files {
        target = files.target.clone();
        let per_clone = data_set(job, &files, jobs.max(1), &mut phase, notices);
        problems.take(map_time(job, &mut phase, per_clone, jobs.max(1), notices));
    }
    problems.take(map_engine(job, &mut phase, notices));
    problems.take(map_direct_and_sync(job, &mut phase, notices));
    buffered_libaio_is_synchronous(job, &mut phase, notices);
    problems.take(map_verify(job, &mut phase, notices));
    problems.take(map_data(job, &mut phase));
    problems.take(map_zones(job, &mut phase));
    problems.take(map_random(job, &mut phase, notices));
    problems.take(map_reporting(job, &mut phase, notices));
    phase.steady_state = problems.take(map_steady(job, notices)).flatten();
    // streamcap checks steady state once per reporting interval: fio's ss_interval sets it unless
    // log_avg_msec does.
    let check = o.time("steadystate_check_interval").filter(|_| phase.steady_state.is_some());
    // A histogram log alone sets the interval its lines need.
    let hist = o.time("log_hist_msec").filter(|_| o.text("write_hist_log").is_some());
    let interval = o.time("log_avg_msec").or(hist).or(check).filter(|t| !t.is_zero());
    (problems.list.len() == before).then_some(Mapped { phase, target, interval })
}

/// The data set: fio's size is per clone. Returns the per-clone size in bytes, when known.
fn data_set(
    job: &Job,
    files: &super::files::Files,
    jobs: u64,
    phase: &mut PhaseSpec,
    notices: &mut Vec<String>,
) -> Option<u64> {
    let o = &job.options;
    let per_clone = match (o.size("size"), o.size("filesize")) {
        (Some(FioSize::Bytes(b)), _) => Some(b),
        (Some(FioSize::Percent(p)), _) => {
            phase.size_percent = Some(p);
            None
        }
        (None, Some(FioSize::Bytes(f))) => Some(f.saturating_mul(files.per_clone_files)),
        (None, _) => None,
    };
    let clones_share_bytes = files.shared && o.get("offset_increment").is_none();
    if let Some(bytes) = per_clone {
        let total = if clones_share_bytes { bytes } else { bytes.saturating_mul(jobs) };
        phase.size = Some(Bytes(total));
    } else if phase.size_percent.is_none() && !files.target_is_device && !o.flag("fill_device") {
        notices.push(format!("job '{}' gives no size: streamcap uses its default data set size", job.name));
    }
    if files.shared && jobs > 1 && o.get("offset_increment").is_none() {
        phase.sharing = Some(Sharing::Whole);
    }
    phase.offset = o.size("offset").map(size_or_percent);
    phase.fio.offset_increment = o.size("offset_increment").map(size_or_percent);
    phase.fio.number_ios = o.int("number_ios").filter(|n| *n > 0);
    // fio's fill_device: the size is whatever fills the target (worked out when planning), not `size`.
    if o.flag("fill_device") {
        phase.fill_device = Some(true);
        phase.size = None;
        return None;
    }
    per_clone
}

fn size_or_percent(size: FioSize) -> SizeOrPercent {
    match size {
        FioSize::Bytes(b) => SizeOrPercent::Bytes(Bytes(b)),
        FioSize::Percent(p) => SizeOrPercent::Percent(p),
    }
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
        // A size not in bytes (size=100%, a device's whole size): fio's loops are passes over each clone's
        // region, so the clones of a shared file make `jobs` passes over it each loop (issue 29: size=100% with
        // loops=2 ran one pass).
        None if loops > 1 => {
            let clones = if phase.sharing == Some(Sharing::Whole) { jobs } else { 1 };
            phase.io_passes = Some((loops.saturating_mul(clones)) as f64);
        }
        None if bounded => notices.push(format!(
            "job '{}': without a size in bytes streamcap cannot bound the I/O to size × loops; it runs for the \
             runtime, or one pass over the data",
            job.name
        )),
        None => {}
    }
    Ok(())
}

fn map_pacing(job: &Job, phase: &mut PhaseSpec, rw: crate::spec::RwMode) -> Result<(), OptionError> {
    let o = &job.options;
    let value = |name: &str| -> Result<Option<u64>, OptionError> {
        match o.get(name) {
            Some(said) => Ok(one_direction(o.per_direction(name), rw, said, name)?.filter(|v| *v > 0)),
            None => Ok(None),
        }
    };
    phase.rate = value("rate")?.map(|b| ByteRate(b as f64));
    phase.rate_iops = value("rate_iops")?;
    phase.fio.rate_min = value("rate_min")?.map(|b| ByteRate(b as f64));
    phase.fio.rate_min_iops = value("rate_iops_min")?;
    if let Some(said) = o.get("rate_process") {
        let process: ArrivalSpec = said.raw.parse().map_err(|_| {
            fail(said, "rate_process", format!("'{}' is not an arrival process; expected linear or poisson", said.raw))
        })?;
        phase.rate_process = Some(process);
    }
    phase.fio.thinktime = o.time("thinktime").filter(|t| !t.is_zero());
    phase.fio.thinktime_blocks =
        o.int("thinktime_blocks").filter(|n| *n > 0).map(|n| n.min(u64::from(u32::MAX)) as u32);
    Ok(())
}

fn map_random(job: &Job, phase: &mut PhaseSpec, notices: &mut Vec<String>) -> Result<(), OptionError> {
    let o = &job.options;
    phase.seed = o.int("randseed");
    // fio's randrepeat=0: "seed the random number generator ... in a predictable way so the pattern is
    // repeatable across runs" is off, so each run draws its own seed (a randseed said wins, as in fio).
    if o.bool("randrepeat") == Some(false) && phase.seed.is_none() {
        let seed = fresh_seed();
        phase.seed = Some(seed);
        notices.push(format!(
            "job '{}': randrepeat=0: the offsets differ from run to run, as in fio; this run's seed is {seed} \
             (randseed={seed} repeats it)",
            job.name
        ));
    }
    if let Some(said) = o.get("random_generator") {
        match said.raw.trim() {
            "tausworthe" | "lfsr" | "tausworthe64" => notices.push(format!(
                "random_generator={}: streamcap draws offsets with its own generator (xoshiro256++); uniform \
                 random offsets visit each block once per pass, as fio's random map does",
                said.raw.trim()
            )),
            _ => {
                return Err(fail(said, "random_generator", "expected tausworthe, lfsr or tausworthe64"));
            }
        }
    }
    if let Some(said) = o.get("random_distribution") {
        phase.distribution = Some(super::rw::distribution(said, o.base)?);
    }
    Ok(())
}

/// A seed no earlier run had: the standard library's per-process random hash keys (seeded from the OS).
fn fresh_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new().build_hasher().finish()
}

fn map_reporting(job: &Job, phase: &mut PhaseSpec, notices: &mut Vec<String>) -> Result<(), OptionError> {
    let o = &job.options;
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
    if let Some(said) = o.get("unified_rw_reporting") {
        match said.raw.trim() {
            "none" | "0" => {}
            _ => return Err(fail(said, "unified_rw_reporting", "streamcap reports reads and writes apart; use none")),
        }
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
    phase.hist_log = log("write_hist_log");
    phase.log_hist_msec = o.time("log_hist_msec").filter(|t| !t.is_zero());
    if let Some(said) = o.get("log_hist_coarseness") {
        match o.int("log_hist_coarseness").filter(|&c| c <= 6) {
            Some(c) => phase.log_hist_coarseness = Some(c as u8),
            None => {
                return Err(fail(said, "log_hist_coarseness", format!("'{}' is not 0 to 6, as fio takes", said.raw)));
            }
        }
    }
    Ok(())
}
