//! The stream-capacity charts of a streams or check result: for each search (one per format in a check), the
//! streams that stalled and the start-up p99 at every count measured, passing and failing counts apart, with the
//! answer, the quality target and the raw-rate bounds of the estimate marked.

use super::charts::num;
use super::svg::{Axis, Chart, Mark, Series, Style, headroom};
use crate::results::{CapacityAnswer, CapacityEstimate, QualityTarget, StreamsStep};

/// One capacity search, whatever command ran it.
pub struct Search<'a> {
    /// "1080p" or "streams": part of the chart ids.
    pub key: String,
    pub label: String,
    pub steps: &'a [StreamsStep],
    pub answer: Option<&'a CapacityAnswer>,
    pub estimate: Option<&'a CapacityEstimate>,
    pub target: QualityTarget,
}

/// Steps as two point series: counts that met the target and counts that missed it.
fn split(steps: &[StreamsStep], value: fn(&StreamsStep) -> f64) -> Vec<Series> {
    let pick = |ok: bool| {
        steps.iter().filter(|s| s.meets_target == ok).map(|s| Some((f64::from(s.count), value(s)))).collect()
    };
    vec![
        Series::new("met the target", Style::Points, 0, pick(true)),
        Series::new("missed it", Style::Points, 3, pick(false)),
    ]
}

/// The answer and the raw-rate bounds, where they fit on the axis; bounds far off are said in the hint.
fn marks(search: &Search, max_x: f64, hint: &mut String) -> Vec<Mark> {
    let mut marks = Vec::new();
    if let Some(a) = search.answer.filter(|a| a.measured()) {
        let range = a.range().filter(|(low, high)| low < high).map_or(String::new(), |(l, h)| format!(" ({l}–{h})"));
        marks.push(Mark::Vertical(f64::from(a.streams), format!("answer {}{range}", a.streams)));
    }
    if let Some(e) = search.estimate {
        let bounds = if (e.iops_bound - e.bandwidth_bound).abs() < 0.5 {
            vec![("random-read and bandwidth bounds", e.iops_bound)]
        } else {
            vec![("random-read bound", e.iops_bound), ("bandwidth bound", e.bandwidth_bound)]
        };
        for (what, bound) in bounds {
            if bound <= max_x {
                marks.push(Mark::Vertical(bound, format!("{what} {bound:.0}")));
            } else {
                hint.push_str(&format!(" The {what} ({bound:.0}) is off the chart."));
            }
        }
    }
    marks
}

fn x_axis(search: &Search) -> (Axis, f64) {
    let counts = search.steps.iter().map(|s| f64::from(s.count)).fold(0.0, f64::max);
    // A bound far beyond the counts measured would squeeze them into a corner: it is named in the hint instead.
    let near = |b: f64| if b <= counts * 3.0 { b } else { 0.0 };
    let bounds = search.estimate.map_or(0.0, |e| near(e.iops_bound).max(near(e.bandwidth_bound)));
    let max_x = headroom(counts.max(bounds));
    (Axis::linear("concurrent streams", 0.0, max_x, num), max_x)
}

/// Streams stalled, and start-up p99, at each count of one search.
pub fn capacity_charts(search: &Search) -> Vec<Chart> {
    if search.steps.is_empty() {
        return Vec::new();
    }
    let (x, max_x) = x_axis(search);
    let mut hint =
        "Where the missed points begin is the capacity; the marks show the answer and the raw-rate bounds.".to_string();
    let stall_marks = marks(search, max_x, &mut hint);
    let stalls = split(search.steps, |s| f64::from(s.streams_stalled));
    let most = search.steps.iter().map(|s| f64::from(s.streams_stalled)).fold(0.0, f64::max);
    // Whole counts: at least 0, 1 and 2 on the axis, so that it has three ticks to read (issue 30).
    let mut y = Axis::linear("streams that stalled (count)", 0.0, headroom(most.max(2.0)), num);
    y.ticks = (most < 5.0).then(|| (0..=(most as u32 + 1).max(2)).map(|k| (f64::from(k), k.to_string())).collect());
    let first = Chart {
        id: format!("capacity-stalls-{}", search.key),
        title: format!("Stalls by stream count: {}", search.label),
        hint,
        x,
        y,
        series: stalls,
        marks: stall_marks,
    };
    let (x, max_x) = x_axis(search);
    let startup = split(search.steps, |s| s.startup.at(99.0).unwrap_or(0) as f64 / 1e9);
    let slowest = search.steps.iter().map(|s| s.startup.at(99.0).unwrap_or(0) as f64 / 1e9).fold(0.0, f64::max);
    let mut marks = marks(search, max_x, &mut String::new());
    let limit = search.target.max_startup_s;
    marks.push(Mark::Horizontal(limit, format!("target {limit} s")));
    let second = Chart {
        id: format!("capacity-startup-{}", search.key),
        title: format!("Start-up p99 by stream count: {}", search.label),
        hint: "Start-up grows with load before streams stall: points near the target line are close to the limit."
            .into(),
        x,
        y: Axis::linear("start-up time, 99th percentile (s)", 0.0, headroom(slowest.max(limit)), num),
        series: startup,
        marks,
    };
    vec![first, second]
}
