//! A line of the verdict table from a format's stream phase: its capacity search's answer, the estimate from
//! the raw rates, and what stopped more streams.
//!
//! "Limited by" names what stopped more streams in the search (stalls, start-up time, read errors, or the
//! search's upper limit), followed by the estimate's binding bound (IOPS or bandwidth). "Headroom" compares the
//! sustained count with the bandwidth ceiling: how many streams of the format the measured sequential read
//! bandwidth would carry at 100 %.

use super::profile::TARGET_MAX_STALLED;
use crate::results::{CapacityAnswer, FormatVerdict, StreamsResult, StreamsStep};
use crate::streams::Format;

/// The verdict for `format` from its stream phase's result (complete, or partial while its search runs).
pub fn verdict(format: &Format, streams: &StreamsResult) -> FormatVerdict {
    let answer = streams.capacity.clone().unwrap_or_else(|| CapacityAnswer {
        streams: streams.steps.iter().filter(|s| s.meets_target).map(|s| s.count).max().unwrap_or(0),
        first_failing: None,
        failing_reason: None,
        at_limit: false,
        interrupted: true,
        words: "search interrupted".into(),
    });
    let stream_mbps = format.bitrate.bits_per_sec() as f64 / 8e6;
    let sequential_mbps = streams.estimate.as_ref().map(|e| e.sequential_mbps);
    let ceiling = sequential_mbps.map_or(0, |m| (m / stream_mbps).floor() as u32);
    let headroom_pct =
        if ceiling > 0 { (f64::from(ceiling) - f64::from(answer.streams)) / f64::from(ceiling) * 100.0 } else { 0.0 };
    let seen = limited_by(&answer, &streams.steps);
    let limited_by = match &streams.estimate {
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
        estimate: streams.estimate.clone(),
        steps: streams.steps.clone(),
    }
}

/// What the search saw at the first count that failed.
fn limited_by(answer: &CapacityAnswer, steps: &[StreamsStep]) -> &'static str {
    if answer.interrupted {
        return "interrupted";
    }
    let Some(failing) = answer.first_failing.and_then(|n| steps.iter().rev().find(|s| s.count == n)) else {
        return if answer.at_limit { "search limit" } else { "—" };
    };
    if failing.errors > 0 {
        "read errors"
    } else if failing.streams_stalled > TARGET_MAX_STALLED {
        "stalls"
    } else if failing.streams_slow_start + failing.streams_not_started + failing.streams_startup_stalled > 0
        || failing.streams_not_steady > 0
    {
        "start-up time"
    } else {
        "—"
    }
}
