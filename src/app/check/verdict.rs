//! The stream-capacity part of a check: for each video format, write its test media, run the capacity search
//! (`streams_steps::find_capacity`) from the estimate's hint, and turn the answer into a line of the verdict table.
//!
//! "Limited by" names what stopped more streams in the search (stalls, start-up time, read errors, or the
//! search's upper limit), followed by the estimate's binding bound (IOPS or bandwidth). "Headroom" compares the
//! sustained count with the bandwidth ceiling: how many streams of the format the measured sequential read
//! bandwidth would carry at 100 %.

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};

use super::profile::Settings;
use crate::app::streams_estimate::{RawRates, compare, estimate, measure_raw};
use crate::app::streams_media::{Media, prepare_media};
use crate::app::streams_steps::{StepRunner, find_capacity};
use crate::engine::EngineKind;
use crate::results::{CapacityAnswer, CapacityEstimate, FormatVerdict, QualityTarget, StreamsStep};
use crate::run::Interrupt;
use crate::streams::{Assignment, ChunkSize, Format, Mix, SearchSettings, StreamsConfig, defaults};

/// The chunk every viewer asks for (the `streams` default).
const CHUNK: u64 = 1 << 20;

/// The quality target of the verdict: no stream stalls and every stream starts within 2 s.
pub const TARGET: QualityTarget = QualityTarget { max_stalled_streams: 0, max_startup_s: 2.0 };

/// What the searches share.
pub struct StreamSetup<'a> {
    pub dir: &'a std::path::Path,
    pub settings: &'a Settings,
    pub engine: EngineKind,
    pub devices: Vec<(String, String)>,
    pub memory_backed: bool,
    pub interrupt: &'a Interrupt,
    pub flag: &'a AtomicBool,
}

pub fn config(format: &Format, settings: &Settings) -> StreamsConfig {
    StreamsConfig {
        mix: Mix(vec![(format.clone(), 1)]),
        chunk: ChunkSize::Bytes(CHUNK),
        buffer: std::time::Duration::from_secs(10),
        prebuffer: std::time::Duration::from_secs(2),
        watch: settings.watch,
        ramp: Some(settings.stream_ramp),
        seek_every: None,
        assignment: Assignment::One,
        media_length: settings.media_length,
        seed: defaults::SEED,
        vbr: None,
    }
}

/// Writes `format`'s test media under the check's directory.
pub fn media(setup: &StreamSetup<'_>, config: &StreamsConfig) -> Result<Media> {
    prepare_media(setup.dir, config, config.media_needed(1), None, false, false, setup.flag)
        .with_context(|| format!("cannot write the test media for {}", config.mix.label()))
}

/// Raw read rates on a media file (random chunk reads, sequential reads), for every format's estimate: the
/// chunk is the same for all, so one measurement serves them all.
pub fn raw_rates(setup: &StreamSetup<'_>, media: &Media) -> Result<RawRates> {
    measure_raw(&media.files[0].path, CHUNK, media.direct, setup.interrupt, setup.settings.estimate_time)
}

/// Runs the capacity search for one format on its media; `on_step` sees every step.
pub fn search_format(
    setup: &StreamSetup<'_>,
    format: &Format,
    config: &StreamsConfig,
    media: &Media,
    rates: Option<RawRates>,
    on_step: &mut dyn FnMut(&StreamsStep),
) -> Result<FormatVerdict> {
    let mut est = rates.map(|r| estimate(r, config));
    let hint = est.as_ref().map_or(8, |e| e.streams.max(1));
    let s = setup.settings;
    let start = ((f64::from(hint) * s.start_factor) as u32).max(1);
    let limit = ((f64::from(hint) * s.limit_factor).ceil() as u32).max(start).max(4);
    let runner = StepRunner {
        config,
        media,
        engine: setup.engine,
        workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
        inflight: defaults::SLOTS_PER_WORKER,
        target: TARGET,
        devices: setup.devices.clone(),
        interrupted: setup.flag,
        ingest: None,
    };
    let settings = SearchSettings { start, limit, precision: s.precision };
    let (answer, steps) = find_capacity(&runner, settings, on_step)?;
    if let Some(e) = est.as_mut() {
        compare(e, answer.streams, setup.memory_backed);
    }
    let interrupted = setup.flag.load(Ordering::Relaxed);
    Ok(verdict(format, answer, est, steps, rates.map(|r| r.sequential_mbps), interrupted))
}

fn verdict(
    format: &Format,
    answer: CapacityAnswer,
    estimate: Option<CapacityEstimate>,
    steps: Vec<StreamsStep>,
    sequential_mbps: Option<f64>,
    interrupted: bool,
) -> FormatVerdict {
    let stream_mbps = format.bitrate.bits_per_sec() as f64 / 8e6;
    let ceiling = sequential_mbps.map_or(0, |m| (m / stream_mbps).floor() as u32);
    let headroom_pct =
        if ceiling > 0 { (f64::from(ceiling) - f64::from(answer.streams)) / f64::from(ceiling) * 100.0 } else { 0.0 };
    let seen = limited_by(&answer, &steps, interrupted);
    let limited_by = match &estimate {
        Some(e) => format!("{seen} ({})", if e.limited_by == "iops" { "IOPS" } else { "bandwidth" }),
        None => seen.to_string(),
    };
    FormatVerdict {
        name: format.name.clone(),
        label: format.label.clone(),
        bitrate_bps: format.bitrate.bits_per_sec(),
        streams: answer.streams,
        limited_by,
        bandwidth_ceiling: ceiling,
        headroom_pct,
        capacity: answer,
        estimate,
        steps,
    }
}

/// What the search saw at the first count that failed.
fn limited_by(answer: &CapacityAnswer, steps: &[StreamsStep], interrupted: bool) -> &'static str {
    if interrupted {
        return "interrupted";
    }
    let Some(failing) = answer.first_failing.and_then(|n| steps.iter().rev().find(|s| s.count == n)) else {
        return if answer.at_limit { "search limit" } else { "—" };
    };
    if failing.errors > 0 {
        "read errors"
    } else if failing.streams_stalled > TARGET.max_stalled_streams {
        "stalls"
    } else if failing.streams_slow_start > 0 {
        "start-up time"
    } else {
        "—"
    }
}
