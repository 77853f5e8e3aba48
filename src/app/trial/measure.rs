//! The short measurement trial makes on each layout (and, without a catalogue, on the first device alone): a
//! job of sequential 1 MiB writes and reads (one job, queue depth 4), 4 KiB random reads by one synchronous
//! thread, and a stream-capacity search for one format, planned and run like every other command's (facts →
//! `build_plan` → `run::execute` with the `ResultRecorder`) — no I/O loop of its own. The figures are read back
//! from the phases of the `RunResult` by name, each with what the devices moved for it in the same time.
//!
//! Every raw phase, the write too, runs for `--runtime` after a ramp of half of it, as `check`'s raw phases do:
//! a blkio throttle lets one slice's worth through at once whenever its group has been idle, and a drive's
//! write cache takes a burst faster than its media, so a phase as short as writing a 32 MiB data set once
//! (0.44 s on a btrfs raid5 of four 20 MB/s members) measured that burst: 26 MB/s per member, 1.3–1.5 × the
//! throttle (docs/planning.md, "Trial").

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};

use super::super::facts::gather;
use super::super::observer::ResultRecorder;
use super::super::output::result_skeleton;
use crate::plan::{RunOptions, build_plan};
use crate::results::{Layer, PhaseResult, RunResult, RunStatus};
use crate::run::{Interrupt, ProgressLine, execute, run_id};
use crate::spec::{Assignment, ChunkSize, Format, JobSpec, PhaseSpec, SpecKind, SpecOrigin, StreamsSpec};
use crate::spec::{EngineChoice, RwMode};
use crate::units::{Bytes, format_duration, format_latency};

/// Names of the phases, in order (the figures are found by name).
pub const SEQ_WRITE: &str = "seq-write 1M qd4";
pub const SEQ_READ: &str = "seq-read 1M qd4";
pub const RANDOM_1: &str = "rand-read 4k, 1 thread";
const RANDOM_DEEP: &str = "rand-read 4k qd32";
/// The drive's best sequential rate needs a deep enough queue: a throttled loop device read at half its limit
/// at depth 4 (issue 28).
const SEQ_READ_DEEP: &str = "seq-read 1M qd16";
const STREAMS: &str = "streams";
/// Length of the stream phase's one media file.
const MEDIA_LENGTH: Duration = Duration::from_secs(30);

/// How long and how much to measure.
#[derive(Debug, Clone)]
pub struct Settings {
    pub size: Bytes,
    pub runtime: Duration,
    pub format: Format,
    pub chunk: Bytes,
    /// `--engine`: the engine of every phase but the one-thread random reads (`None`: the default engine).
    pub engine: Option<EngineChoice>,
}

impl Settings {
    /// The most data a layout holds at once: the raw phases' file, and the media file beside it (btrfs raid1
    /// puts a small data set on few members, so the planner is told).
    pub fn data_set(&self) -> Bytes {
        let media = self.format.bitrate.byte_rate().bytes_per_sec() * MEDIA_LENGTH.as_secs_f64();
        Bytes(self.size.0 + media as u64)
    }
}

fn raw(name: &str, rw: RwMode, bs: &str, iodepth: u32, s: &Settings) -> PhaseSpec {
    PhaseSpec {
        name: Some(name.into()),
        rw: Some(rw),
        bs: Some(bs.parse().expect("a fixed block size parses")),
        iodepth: Some(iodepth),
        size: Some(s.size),
        // Timed, the write too (over the data set again and again): see the top of the file.
        runtime: Some(s.runtime),
        ramp: Some(ramp(s)),
        direct: Some(true),
        engine: s.engine,
        ..PhaseSpec::default()
    }
}

/// The warm-up before each raw phase's measured time: half the runtime.
pub fn ramp(s: &Settings) -> Duration {
    s.runtime / 2
}

fn job(phases: Vec<PhaseSpec>) -> JobSpec {
    JobSpec { origin: SpecOrigin::Default, target: None, interval: None, phases, notices: Vec::new() }
}

/// The job on a layout: the raw phases, then the capacity search up to `limit` streams.
pub fn layout_job(s: &Settings, limit: u32) -> JobSpec {
    let mut random = raw(RANDOM_1, RwMode::RandRead, "4k", 1, s);
    random.engine = Some(EngineChoice::Sync);
    let streams = StreamsSpec {
        format: Some(s.format.clone()),
        max: Some(true),
        chunk: Some(ChunkSize::Bytes(s.chunk.0)),
        // Scaled from tests/plan_validation.rs (6 s viewing, 1 s ramp, 2 s buffer, 1 s prebuffer for a 2 s
        // runtime): the buffer must be short beside the viewing, or a step ends before any viewer could stall.
        duration: Some(s.runtime * 3),
        ramp: Some(s.runtime / 2),
        buffer: Some(s.runtime),
        prebuffer: Some(s.runtime / 2),
        files: Some(Assignment::One),
        media_length: Some(MEDIA_LENGTH),
        precision: Some(10.0),
        limit: Some(limit.max(1)),
        estimate: Some(false),
        workers: Some(1),
        ..StreamsSpec::default()
    };
    let streams = PhaseSpec {
        name: Some(STREAMS.into()),
        kind: Some(SpecKind::Streams(Box::new(streams))),
        engine: s.engine,
        ..PhaseSpec::default()
    };
    job(vec![raw(SEQ_WRITE, RwMode::Write, "1M", 4, s), raw(SEQ_READ, RwMode::Read, "1M", 4, s), random, streams])
}

/// Refuses a `--runtime` under which the stream search could not give an answer: its players keep a buffer as
/// long as the runtime, and a buffer must hold more than one chunk (`plan::longest_chunk`). Checked before any device is
/// touched: `--runtime 1s` gave 1080p players a 1 s buffer for 1.05 s chunks, and the trial reported "sustains
/// 0 × 1080p" for every layout.
pub fn check_runtime(s: &Settings) -> Result<()> {
    let job = layout_job(s, 1);
    let spec = job.phases.iter().find_map(|p| p.streams()).expect("the layout job has a stream phase");
    let config = crate::plan::streams_config(spec, None);
    let (chunk, _) = crate::plan::longest_chunk(&config);
    if s.runtime <= chunk {
        anyhow::bail!(
            "--runtime {} is too short for the stream search: its players keep a buffer as long as the runtime, \
             and a buffer must hold more than one chunk of {} ({} = {} of media) or the players stall before \
             every chunk whatever the layout; give --runtime {} or more, or a smaller --chunk",
            format_duration(s.runtime),
            s.format.name,
            s.chunk,
            format_latency(chunk),
            format_duration(Duration::from_secs((chunk.as_secs_f64() * 2.0).ceil() as u64))
        );
    }
    Ok(())
}

/// The job on one raw device, enough for `planning::drive_from_result`: sequential MB/s at queue depth 4 and
/// 16 (the best is taken) and random reads at queue depth 1 and 32.
pub fn drive_job(s: &Settings) -> JobSpec {
    let mut random = raw(RANDOM_1, RwMode::RandRead, "4k", 1, s);
    random.engine = Some(EngineChoice::Sync);
    job(vec![
        raw(SEQ_WRITE, RwMode::Write, "1M", 4, s),
        raw(SEQ_READ, RwMode::Read, "1M", 4, s),
        raw(SEQ_READ_DEEP, RwMode::Read, "1M", 16, s),
        random,
        deep_random(s),
    ])
}

/// Random reads at queue depth 32 on io_uring whatever `--engine` says: the sync engine keeps one read in
/// flight per worker, and this phase is the drive's rate at depth (the plan falls back to sync, saying so, where
/// io_uring is unavailable).
fn deep_random(s: &Settings) -> PhaseSpec {
    let mut deep = raw(RANDOM_DEEP, RwMode::RandRead, "4k", 32, s);
    deep.engine = Some(EngineChoice::IoUring);
    deep
}

/// Runs `job` on `target` (a directory on a built layout, or a blank device) through the one path, and
/// returns the result with whatever phases finished (an interrupted run keeps its finished phases).
pub fn measure(target: &Path, job: &JobSpec, interrupt: &Interrupt, quiet: bool) -> Result<RunResult> {
    let gathered = gather(target, true)?;
    let options = RunOptions { run_id: run_id(), allow_device_writes: true, ..Default::default() };
    let plan = build_plan(job, &gathered.facts, &options)
        .with_context(|| format!("cannot plan the measurement of {}", target.display()))?;
    let progress = ProgressLine::new(!quiet);
    let skeleton = result_skeleton(&plan, &gathered);
    let mut recorder = ResultRecorder::new(&plan, skeleton, None, None, progress);
    let outcome = execute(&plan, interrupt, false, &mut recorder);
    recorder.progress.clear();
    let outcome = outcome.with_context(|| format!("the measurement of {} failed", target.display()))?;
    let mut result = recorder.result;
    result.status = if outcome.interrupted { RunStatus::Interrupted } else { RunStatus::Completed };
    Ok(result)
}

fn phase<'a>(result: &'a RunResult, name: &str) -> Option<&'a PhaseResult> {
    result.phases.iter().find(|p| p.name == name && p.status == RunStatus::Completed)
}

/// What one layout measured; `None` where the phase did not finish.
#[derive(Debug, Clone, Copy, Default)]
pub struct Measured {
    pub seq_write_mbps: Option<f64>,
    pub seq_read_mbps: Option<f64>,
    pub random_reads: Option<f64>,
    /// What the devices moved for each byte of the three raw phases in their measured time (`on_devices`):
    /// writes, sequential reads, random reads.
    pub on_devices: [Option<f64>; 3],
    pub streams: Option<f64>,
    /// The stream search reached its limit without a failure: `streams` is a lower bound.
    pub streams_at_limit: bool,
    /// The largest count that passed only from a cache (never counted in `streams`).
    pub streams_cache_served: Option<f64>,
}

pub fn figures(result: &RunResult) -> Measured {
    let rate = |name: &str, read: bool, mbps: bool| {
        let p = phase(result, name)?;
        let o = if read { p.read.as_ref() } else { p.write.as_ref() }?;
        Some(if mbps { o.mbps } else { o.iops })
    };
    let capacity = phase(result, STREAMS)
        .and_then(|p| p.streams.as_ref())
        .and_then(|s| s.capacity.as_ref())
        .filter(|c| !c.interrupted);
    Measured {
        seq_write_mbps: rate(SEQ_WRITE, false, true),
        seq_read_mbps: rate(SEQ_READ, true, true),
        random_reads: rate(RANDOM_1, true, false),
        on_devices: [
            phase(result, SEQ_WRITE).and_then(|p| on_devices(p, false)),
            phase(result, SEQ_READ).and_then(|p| on_devices(p, true)),
            phase(result, RANDOM_1).and_then(|p| on_devices(p, true)),
        ],
        streams: capacity.map(|c| f64::from(c.streams)),
        streams_at_limit: capacity.is_some_and(|c| c.at_limit),
        streams_cache_served: phase(result, STREAMS)
            .and_then(|p| p.streams.as_ref())
            .and_then(|s| s.steps.iter().filter(|s| s.meets_target && !s.counts()).map(|s| s.count).max())
            .map(f64::from),
    }
}

/// Bytes the target's own devices (a pool's members, or the device measured) read (`read`) or wrote in the
/// phase's measured time, for each byte the phase read or wrote: at least 1 when everything measured reached
/// them within the phase (a mirror writes 2, a btrfs raid5 of four about 1.38: n ÷ (n − 1) for parity, and the
/// parity of a row a request covers only in part written twice), below 1 for the share a cache served or
/// held. `None` without device counters (no block device beneath) or bytes.
pub fn on_devices(p: &PhaseResult, read: bool) -> Option<f64> {
    let moved = if read { p.read.as_ref() } else { p.write.as_ref() }?.bytes;
    let own = p.devices.iter().filter(|d| d.layer() == Layer::Own);
    let devices: u64 = own.map(|d| if read { d.own_read_bytes() } else { d.own_write_bytes() }).sum();
    (moved > 0 && !p.devices.is_empty()).then(|| devices as f64 / moved as f64)
}

/// The first failed operation or phase failure of a result, in words, if any.
pub fn problem(result: &RunResult) -> Option<String> {
    result.phases.iter().find_map(|p| {
        p.failure.as_ref().map(|f| format!("phase '{}' failed: {f}", p.name)).or_else(|| {
            p.errors.records.first().map(|e| {
                format!(
                    "phase '{}': {} failed operations; the first: {} at {}: {}",
                    p.name, p.errors.count, e.op, e.offset, e.message
                )
            })
        })
    })
}
