//! One step of a `streams` run (a count of viewers driven for the watch time) and the capacity search over
//! steps. `find_capacity` is the library entry point for `streamcap check`: it runs the search on prepared media
//! and returns the answer with the curve.

use std::sync::atomic::AtomicBool;

use anyhow::Result;

use super::streams_ingest::{IngestSpec, run_writers};
use super::streams_media::Media;
use crate::engine::EngineKind;
use crate::results::{
    CapacityAnswer, DeviceResult, QualityTarget, StepContext, StreamsStep, build_step, device_activity,
};
use crate::streams::{DrivePlan, SearchSettings, StreamsConfig, defaults, drive, search};
use crate::sysinfo::{ProcessCpu, read_diskstats};
/// How to run each step.
pub struct StepRunner<'a> {
    pub config: &'a StreamsConfig,
    pub media: &'a Media,
    pub engine: EngineKind,
    pub workers: usize,
    pub inflight: u32,
    pub target: QualityTarget,
    /// (kernel name, role) of the devices beneath the target.
    pub devices: Vec<(String, String)>,
    pub interrupted: &'a AtomicBool,
    /// Background writers in the work directory beside each step's viewers.
    pub ingest: Option<IngestSpec>,
}

impl StepRunner<'_> {
    /// Runs `count` viewers to the end of their watch and summarises them.
    pub fn measure(&self, count: u32) -> Result<StreamsStep> {
        let viewers = self.config.viewers(count, &mut |key| self.media.index_of(key));
        let bitrates: Vec<u64> = {
            let formats = self.config.mix.assign(count);
            formats.iter().map(|&f| self.config.mix.0[f].0.bitrate.bits_per_sec()).collect()
        };
        let plan = DrivePlan {
            files: self.media.files.clone(),
            viewers,
            engine: self.engine,
            direct: self.media.direct,
            workers: self.workers,
            slots_per_worker: self.inflight,
            slot_buffer_max: defaults::SLOT_BUFFER_MAX,
        };
        let mut before = None;
        let writers_dir = self.media.work_dir().filter(|_| self.ingest.is_some());
        let (outcome, ingest) = std::thread::scope(|scope| {
            let writers = self.ingest.zip(writers_dir).map(|(spec, dir)| {
                let (watch, direct) = (self.config.watch + self.config.ramp_for(count), self.media.direct);
                scope.spawn(move || run_writers(spec, dir, count, watch, direct, self.interrupted))
            });
            let outcome = drive(&plan, self.interrupted, &mut || {
                before = Some((read_diskstats().unwrap_or_default(), ProcessCpu::read(), std::time::Instant::now()));
            });
            (outcome, writers.and_then(|w| w.join().ok()))
        });
        let outcome = outcome?;
        let (disks_before, cpu_before, started) = before.expect("on_start runs before the drive");
        let cpu_after = ProcessCpu::read();
        let devices: Vec<DeviceResult> =
            device_activity(&self.devices, &disks_before, &read_diskstats().unwrap_or_default(), started.elapsed());
        let mut step = build_step(
            &outcome,
            StepContext {
                count,
                bitrates: &bitrates,
                target: self.target,
                cpu: cpu_after.cpu_since(&cpu_before),
                peak_rss_bytes: cpu_after.max_rss.0,
                devices,
            },
        );
        step.ingest = ingest;
        Ok(step)
    }
}

/// The capacity search as a library call (for `streamcap check`): the answer, with every step measured.
/// `on_step` sees each step as it finishes (progress, saving partial results).
pub fn find_capacity(
    runner: &StepRunner<'_>,
    settings: SearchSettings,
    on_step: &mut dyn FnMut(&StreamsStep),
) -> Result<(CapacityAnswer, Vec<StreamsStep>)> {
    let mut steps: Vec<StreamsStep> = Vec::new();
    let outcome = search(settings, &mut |count| {
        let step = runner.measure(count)?;
        on_step(&step);
        let passed = step.meets_target;
        steps.push(step);
        Ok::<_, anyhow::Error>(if runner.interrupted.load(std::sync::atomic::Ordering::Relaxed) {
            None
        } else {
            Some(passed)
        })
    })?;
    let label = runner.config.mix.label();
    let failing = outcome.first_failing.and_then(|n| steps.iter().rev().find(|s| s.count == n));
    let failing_reason = failing.and_then(|s| s.failure_reason(&runner.target));
    let quality = if runner.target.max_stalled_streams == 0 {
        "with no stall".to_string()
    } else {
        format!("with at most {} stalled", runner.target.max_stalled_streams)
    };
    let mut words = format!("sustains {} × {label} {quality}", outcome.best);
    match (outcome.first_failing, &failing_reason) {
        (Some(n), Some(why)) => words.push_str(&format!("; at {n}, {why}")),
        _ if outcome.at_limit => words.push_str(" (the search limit; it may sustain more)"),
        _ => {}
    }
    if outcome.stopped {
        words.push_str(" (search interrupted)");
    }
    let answer = CapacityAnswer {
        streams: outcome.best,
        first_failing: outcome.first_failing,
        failing_reason,
        at_limit: outcome.at_limit,
        words,
    };
    Ok((answer, steps))
}
