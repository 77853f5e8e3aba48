//! The planner's side of the trial: the drive model (a catalogue entry, or the first device measured alone)
//! and, per layout, what `planning::plan` predicts for exactly the trial's measurement — sequential 1 MiB
//! writes and reads, 4 KiB random reads by one thread, and streams of the format with one reader thread (one
//! copy of a btrfs mirror) and with many (every copy). The comparison rows are built here too.

use std::path::Path;

use anyhow::{Context, Result, bail};

use super::measure::{Measured, Settings};
use crate::planning::{self, Drive, FileWorkload, Goal, Layout, PlanRequest, StreamDemand, StreamFormat};
use crate::results::{PlannedDrive, ServiceFigures, TrialFigure, rfc3339};
use crate::spec::Format;

/// The catalogue entry `name` (or the catalogue's only drive).
pub fn catalogue_drive(path: &Path, name: Option<&str>) -> Result<Drive> {
    let drives = super::super::plan_cmd::read_catalogue(path)?;
    let names = || drives.iter().map(|d| d.name.as_str()).collect::<Vec<_>>().join(", ");
    match name {
        Some(name) => drives.iter().find(|d| d.name == name).cloned().with_context(|| {
            format!("--drive {name} is not in {} (it has {}): name one of them", path.display(), names())
        }),
        None if drives.len() == 1 => Ok(drives[0].clone()),
        None => bail!("{} describes several drives ({}): say which with --drive NAME", path.display(), names()),
    }
}

/// What the planner predicts for one layout of `n` drives.
pub struct Prediction {
    /// One reader thread (the trial's stream scheduler thread and its random reader).
    pub one: ServiceFigures,
    /// Many reader threads: streams using every copy.
    pub many: ServiceFigures,
    pub drive: PlannedDrive,
}

pub fn predict(drive: &Drive, layout: Layout, n: usize, settings: &Settings) -> Result<Prediction> {
    let (format, chunk) = (&settings.format, settings.chunk);
    let request = |reader_threads| PlanRequest {
        pools: vec![vec![drive.clone(); n]],
        layouts: vec![layout],
        demand: StreamDemand {
            formats: vec![StreamFormat {
                name: format.name.clone(),
                label: format.label.clone(),
                bitrate: format.bitrate,
                weight: 1,
            }],
            chunk,
            reader_threads,
            ingest: None,
        },
        file: FileWorkload { threads: 1, ..FileWorkload::default() },
        goal: Goal::Streams,
        rebuild_share: 0.5,
        sequential_request: planning::defaults::SEQUENTIAL_REQUEST,
        data_set: Some(settings.data_set()),
        controller: None,
    };
    let now = rfc3339(std::time::SystemTime::now());
    let answer = |threads| -> Result<(ServiceFigures, PlannedDrive)> {
        let mut result = planning::plan(&request(threads), Vec::new(), now.clone())?;
        let Some(answer) = result.answers.pop() else {
            let why = result.refused.first().map_or_else(String::new, |r| r.why.clone());
            bail!("the planner cannot model {layout} of {n} drives: {why}");
        };
        Ok((answer.healthy, result.drives.remove(0)))
    };
    let (one, drive) = answer(Some(1))?;
    let (many, _) = answer(None)?;
    Ok(Prediction { one, many, drive })
}

/// The comparison rows of one layout.
pub fn rows(p: &Prediction, m: &Measured, format: &Format) -> Vec<TrialFigure> {
    let row = |figure: &str, unit: &str, predicted: f64, low: Option<f64>, measured: Option<f64>| TrialFigure {
        figure: figure.into(),
        unit: unit.into(),
        predicted,
        predicted_low: low.filter(|l| (l - predicted).abs() > 0.5),
        measured,
        ratio: measured.filter(|_| predicted > 0.0).map(|v| v / predicted),
        lower_bound: false,
        cache_served: None,
        on_devices: None,
    };
    let on = |mut f: TrialFigure, share: Option<f64>| {
        f.on_devices = share;
        f
    };
    let streams = f64::from(p.many.streams);
    let mut streams_row =
        row(&format!("streams of {}", format.name), "streams", streams, Some(f64::from(p.one.streams)), m.streams);
    streams_row.lower_bound = m.streams_at_limit;
    streams_row.cache_served = m.streams_cache_served;
    vec![
        on(row("seq write", "MB/s", p.one.seq_write_mbps, None, m.seq_write_mbps), m.on_devices[0]),
        on(row("seq read", "MB/s", p.one.seq_read_one_mbps, None, m.seq_read_mbps), m.on_devices[1]),
        on(row("random 4k read, 1 thread", "reads/s", p.one.reads_per_s, None, m.random_reads), m.on_devices[2]),
        streams_row,
    ]
}
