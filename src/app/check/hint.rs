//! check's one-line hint from the planner (issue 12): the drive under the checked directory is modelled from
//! the check's own raw phases (`planning::drive_from_result`), and `planning::plan` says what `DRIVES` such
//! drives would serve in the layouts people build, against the drive alone, for the most demanding format the
//! check sustained. The line is given only when a layout would clearly serve more (`CLEARLY` times). The ratio is
//! the planner's unrounded bounds (4.19 ÷ 1.05, never floors of them, 4 ÷ 1), applied to what the check
//! measured, so the figure stays tied to this drive, and capped at what `DRIVES` drives' sequential reads carry:
//! no layout serves more than its drives read. Only figures the drive served count: where the check's reads or
//! its streams came from the page cache or a cache beneath the OS (`cache_reason`), the line says so and gives
//! no figure. A target on several devices (a pool) is answered by `pool`: one member inferred from the pool's
//! measurement, then the layouts of those drives. No I/O, no printing: the line goes into the check summary, and
//! the renderer prints it.

use crate::planning::{
    self, Drive, FileWorkload, FromResultError, Goal, Layout, PlanRequest, StreamDemand, StreamFormat,
    drive_from_result,
};
use crate::results::{FormatVerdict, Layer, LayoutAnswer, PlannerMember, RunResult, own_device_reads};
use crate::units::{Bitrate, Bytes};

use super::profile::{CHUNK, RAW_PHASES};

mod pool;

/// Drives in the pool the hint imagines.
const DRIVES: usize = 4;
/// How many times the drive alone's streams a layout must serve to be worth a line.
const CLEARLY: f64 = 1.5;
/// The layouts compared: those a media server is built with (md and btrfs mirrors, RAID10, parity).
const LAYOUTS: [Layout; 7] = [
    Layout::Mirror2,
    Layout::Raid10,
    Layout::Raid5,
    Layout::Raid6,
    Layout::BtrfsRaid1,
    Layout::BtrfsRaid10,
    Layout::BtrfsRaid5,
];

/// What the planner says at the end of a check: its line, and for a pool the member it inferred.
#[derive(Debug, Default, PartialEq)]
pub struct Hint {
    pub line: Option<String>,
    pub member: Option<PlannerMember>,
}

/// The planner's line for a finished check, if it has one to give.
pub fn planner_hint(result: &RunResult, verdict: &[FormatVerdict]) -> Hint {
    // Only the check's own raw phases: the estimate's random reads use the stream chunk, not 4 KiB.
    let mut raw = result.clone();
    raw.phases.retain(|p| RAW_PHASES.contains(&p.name.as_str()));
    if let Some(why) = cache_reason(&raw, verdict) {
        let line = format!(
            "planner: no hint from this check: {why}, so they describe no drive the planner could model \
             (docs/planning.md)"
        );
        return Hint { line: Some(line), member: None };
    }
    let drive = match drive_from_result("this drive", &raw, None) {
        Ok(drive) => drive,
        Err(FromResultError::Pool { count, .. }) => return pool::pool_hint(&raw, verdict, count),
        Err(_) => return Hint::default(),
    };
    let Some((format, name)) = compared_format(verdict) else { return Hint::default() };
    let ceiling = sequential_ceiling(drive.read.0, DRIVES, format);
    let Some((layout, ratio)) = best_layout(drive, format, name) else { return Hint::default() };
    let line = (ratio >= CLEARLY).then(|| {
        format!(
            "planner: {DRIVES} drives like this one as {layout} would serve about {ratio:.1}× the {name} streams \
             ({}); compare every layout with `streamcap plan --drive-result <this check's JSON> --count {DRIVES}`",
            figure_words(ratio, format.streams, ceiling, DRIVES)
        )
    });
    Hint { line, member: None }
}

/// Streams of `format` that `drives` drives reading at `read` bytes/s each carry at most: no layout serves more
/// than its drives' sequential reads.
fn sequential_ceiling(read: f64, drives: usize, format: &FormatVerdict) -> f64 {
    drives as f64 * read / (format.bitrate_bps as f64 / 8.0)
}

/// "≈ 16 against 4 here; 4 such drives read at most 16.8 streams' worth": the ratio applied to the measured
/// count, floored, and never above the ceiling.
fn figure_words(ratio: f64, measured: u32, ceiling: f64, drives: usize) -> String {
    let figure = (ratio * f64::from(measured)).min(ceiling).floor();
    format!("≈ {figure:.0} against {measured} here; {drives} such drives read at most {ceiling:.1} streams' worth")
}

/// Why the check's figures describe a cache rather than the drive, if they do: a raw read phase the devices
/// did not serve, or stream steps of the compared format whose bytes the devices did not read.
fn cache_reason(raw: &RunResult, verdict: &[FormatVerdict]) -> Option<String> {
    if let Some((phase, why)) = raw.phases.iter().find_map(|p| Some((p, planning::cache_served(p)?))) {
        return Some(format!("its '{}' phase {why}", phase.name));
    }
    let (format, name) = compared_format(verdict)?;
    let viewers: f64 = format.steps.iter().map(|s| s.delivered_mbps * s.duration_s * 1e6).sum();
    let devices: u64 = format.steps.iter().map(|s| own_device_reads(&s.devices)).sum();
    let recorded = format.steps.iter().flat_map(|s| &s.devices).any(|d| d.layer() == Layer::Own);
    (recorded && viewers > 0.0 && (devices as f64) < 0.5 * viewers).then(|| {
        format!(
            "its {name} viewers read {} while the devices read {}: the page cache served the streams",
            Bytes(viewers as u64),
            Bytes(devices)
        )
    })
}

/// The most demanding format the check sustained at least one stream of, and its short name ("2160p remux").
fn compared_format(verdict: &[FormatVerdict]) -> Option<(&FormatVerdict, &str)> {
    let format = verdict.iter().filter(|v| v.streams > 0).max_by_key(|v| v.bitrate_bps)?;
    Some((format, format.label.split(" (").next().unwrap_or(&format.label)))
}

/// The planner's answers for `pool` in `layouts`, best first by streams of `format` (many reader threads, a
/// full pool).
fn answers(pool: Vec<Drive>, layouts: Vec<Layout>, format: &FormatVerdict, label: &str) -> Option<Vec<LayoutAnswer>> {
    let demand = StreamDemand {
        formats: vec![StreamFormat {
            name: format.name.clone(),
            label: label.into(),
            bitrate: Bitrate(format.bitrate_bps),
            weight: 1,
        }],
        chunk: Bytes(CHUNK),
        reader_threads: None,
        ingest: None,
    };
    let request = PlanRequest {
        pools: vec![pool],
        layouts,
        demand,
        file: FileWorkload::default(),
        goal: Goal::Streams,
        rebuild_share: 0.5,
        sequential_request: planning::defaults::SEQUENTIAL_REQUEST,
        data_set: None,
        controller: None,
    };
    Some(planning::plan(&request, Vec::new(), String::new()).ok()?.answers)
}

/// The planner's unrounded streams of the one format of `answer`'s demand.
fn exact(answer: &LayoutAnswer) -> f64 {
    answer.healthy.per_format.first().map_or(f64::from(answer.healthy.streams), |f| f.exact)
}

/// The layout of `DRIVES` drives like `drive` that serves the most streams of `format`, and how many times the
/// drive alone's streams that is: the ratio of the model's unrounded bounds, at most `DRIVES`.
fn best_layout(drive: Drive, format: &FormatVerdict, label: &str) -> Option<(String, f64)> {
    let alone = exact(answers(vec![drive.clone()], vec![Layout::Single], format, label)?.first()?);
    let pool = answers(vec![drive; DRIVES], LAYOUTS.to_vec(), format, label)?.into_iter().next()?;
    (alone > 0.0).then(|| (pool.layout.clone(), (exact(&pool) / alone).min(DRIVES as f64)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> RunResult {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/result-v1.json"))
            .expect("the fixture exists");
        serde_json::from_str(&text).expect("the fixture parses")
    }

    #[test]
    fn a_pool_gets_the_planner_command_for_its_members() {
        let mut result = fixture();
        let mut second = result.target.devices[0].clone();
        second.name = "vdb".into();
        result.target.devices.push(second);
        let line = planner_hint(&result, &[]).line.unwrap();
        assert!(line.contains("spans 2 devices") && line.contains("--count 2"), "{line}");
    }

    /// The check fixture as measured on one loop device throttled to 40 MiB/s (41.9 MB/s) of reads and 89
    /// requests/s, sustaining `remux` streams of 2160p remux. The planner's bounds for it are 2.9 streams for
    /// the drive alone and 11.6 for four: floored, 11 ÷ 2 = 5.5, the "5.5× (≈ 22 against 4 here)",
    /// where four such drives read at most 16.8 streams' worth.
    fn throttled_loop(remux: u32) -> (RunResult, Vec<FormatVerdict>) {
        let mut result: RunResult = serde_json::from_str(
            &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/check-v1.json")).unwrap(),
        )
        .unwrap();
        result.phases[1].read.as_mut().unwrap().mbps = 41.943_04;
        result.phases[2].read.as_mut().unwrap().iops = 89.0;
        result.phases[3].read.as_mut().unwrap().iops = 89.0;
        let check = result.check.as_mut().unwrap();
        let format = check.verdict.iter_mut().find(|v| v.name == "2160p-remux").unwrap();
        format.streams = remux;
        let verdict = check.verdict.clone();
        (result, verdict)
    }

    #[test]
    fn the_ratio_is_of_unrounded_bounds_and_the_figure_never_passes_the_drives_reads() {
        // Issue 24: "4 drives … would serve about 5.5× (≈ 22 against 4 here)", a ratio of floored bounds.
        let (result, verdict) = throttled_loop(4);
        let line = planner_hint(&result, &verdict).line.unwrap();
        assert!(line.contains("would serve about 4.0× the 2160p remux streams"), "{line}");
        assert!(line.contains("(≈ 16 against 4 here; 4 such drives read at most 16.8 streams' worth)"), "{line}");
        // A measured count the ratio would carry past the ceiling is held at it.
        let (result, verdict) = throttled_loop(5);
        let line = planner_hint(&result, &verdict).line.unwrap();
        assert!(line.contains("(≈ 16 against 5 here; 4 such drives read at most 16.8"), "{line}");
    }

    #[test]
    fn page_cache_figures_give_no_hint_and_say_why() {
        // The sequential reads came from RAM: the devices read nothing of them.
        let (mut result, verdict) = throttled_loop(4);
        result.phases[1].devices[0].activity.read_bytes = crate::units::Bytes(0);
        let line = planner_hint(&result, &verdict).line.unwrap();
        assert!(line.starts_with("planner: no hint from this check: its 'seq-read 1M qd8' phase read"), "{line}");
        assert!(line.contains("the page cache served it") && !line.contains('≈'), "{line}");
        // The streams came from RAM: the viewers read what the devices did not.
        let (result, mut verdict) = throttled_loop(4);
        let remux = verdict.iter_mut().find(|v| v.name == "2160p-remux").unwrap();
        for device in remux.steps.iter_mut().flat_map(|s| &mut s.devices) {
            device.activity.read_bytes = crate::units::Bytes(0);
        }
        let line = planner_hint(&result, &verdict).line.unwrap();
        assert!(
            line.contains("its 2160p remux viewers read") && line.contains("page cache served the streams"),
            "{line}"
        );
    }

    #[test]
    fn a_drive_without_the_checks_raw_phases_gets_no_line() {
        // The fixture's phases are a run's, not the check's: nothing to model the drive from.
        assert_eq!(planner_hint(&fixture(), &[]), Hint::default());
    }
}
