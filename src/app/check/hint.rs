//! check's one-line hint from the planner (issue 12): the drive under the checked directory is modelled from
//! the check's own raw phases (`planning::drive_from_result`), and `planning::plan` says what `DRIVES` such
//! drives would serve in the layouts people build, against the drive alone, for the most demanding format the
//! check sustained. The line is given only when a layout would clearly serve more (`CLEARLY` times); the
//! planner's ratio is applied to what the check measured, so the figure stays tied to this drive. A target on
//! several devices (a pool) is answered by `pool`: one member inferred from the pool's measurement, then the
//! layouts of those drives. No I/O, no printing: the line goes into the check summary, and the renderer prints
//! it.

use crate::planning::{
    self, Drive, FileWorkload, FromResultError, Goal, Layout, PlanRequest, StreamDemand, StreamFormat,
    drive_from_result,
};
use crate::results::{FormatVerdict, LayoutAnswer, PlannerMember, RunResult};
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
    let drive = match drive_from_result("this drive", &raw, None) {
        Ok(drive) => drive,
        Err(FromResultError::Pool { count, .. }) => return pool::pool_hint(&raw, verdict, count),
        Err(_) => return Hint::default(),
    };
    let Some((format, name)) = compared_format(verdict) else { return Hint::default() };
    let Some((layout, ratio)) = best_layout(drive, format, name) else { return Hint::default() };
    let line = (ratio >= CLEARLY).then(|| {
        format!(
            "planner: {DRIVES} drives like this one as {layout} would serve about {ratio:.1}× the {name} streams \
             (≈ {:.0} against {} here); compare every layout with `streamcap plan --drive-result <this check's \
             JSON> --count {DRIVES}`",
            ratio * f64::from(format.streams),
            format.streams
        )
    });
    Hint { line, member: None }
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
    };
    Some(planning::plan(&request, Vec::new(), String::new()).ok()?.answers)
}

/// The layout of `DRIVES` drives like `drive` that serves the most streams of `format`, and how many times the
/// drive alone's streams that is.
fn best_layout(drive: Drive, format: &FormatVerdict, label: &str) -> Option<(String, f64)> {
    let alone = answers(vec![drive.clone()], vec![Layout::Single], format, label)?.first()?.healthy.streams;
    let pool = answers(vec![drive; DRIVES], LAYOUTS.to_vec(), format, label)?.into_iter().next()?;
    (alone > 0).then(|| (pool.layout, f64::from(pool.healthy.streams) / f64::from(alone)))
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

    #[test]
    fn a_drive_without_the_checks_raw_phases_gets_no_line() {
        // The fixture's phases are a run's, not the check's: nothing to model the drive from.
        assert_eq!(planner_hint(&fixture(), &[]), Hint::default());
    }
}
