//! The charts of one result's phases: interval timelines (MB/s, IOPS, latency p50/p99) with the phases laid end
//! to end, ramps shaded and boundaries marked; the per-device timeline (pool members stacked, other devices as
//! lines); and the latency percentile curve of each phase on log axes. Pure functions from `results` types to
//! `svg::Chart`s; the page decides where they go.

use super::svg::{Axis, Chart, Mark, Series, Style, headroom};
use crate::results::{ClassPoint, IntervalPoint, LatencySummary, PhaseResult, RunResult};
use crate::units::format_latency_ns;

/// A figure drawn over time.
#[derive(Clone, Copy)]
pub enum Figure {
    Mbps,
    Iops,
    Latency,
}

/// Compact numbers for tick labels: "0", "2.5", "40", "1.5k", "2M".
pub fn num(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if a >= 1e4 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Where each phase starts on a shared time axis: phases end to end, each ramp before its measured time.
pub struct Timeline {
    starts: Vec<f64>,
    pub end: f64,
}

impl Timeline {
    pub fn new(phases: &[&PhaseResult]) -> Timeline {
        let mut starts = Vec::new();
        let mut t = 0.0;
        for p in phases {
            starts.push(t);
            let last = p.intervals.last().map_or(0.0, |i| i.start_s + i.length_s);
            t += p.ramp_s + p.duration_s.max(last);
        }
        Timeline { starts, end: t }
    }

    /// The x of an interval's middle.
    pub fn x(&self, k: usize, phase: &PhaseResult, point: &IntervalPoint) -> f64 {
        self.starts[k] + phase.ramp_s + point.start_s + point.length_s / 2.0
    }

    /// Ramps shaded, boundaries marked with the next phase's name.
    pub fn marks(&self, phases: &[&PhaseResult]) -> Vec<Mark> {
        let mut marks = Vec::new();
        for (k, p) in phases.iter().enumerate() {
            if p.ramp_s > 0.0 {
                marks.push(Mark::Band(
                    self.starts[k],
                    self.starts[k] + p.ramp_s,
                    format!("{}: ramp, not measured", p.name),
                ));
            }
            marks.push(Mark::Vertical(self.starts[k], p.name.clone()));
        }
        marks
    }
}

/// Phases that have an interval series.
pub fn timed(result: &RunResult) -> Vec<&PhaseResult> {
    result.phases.iter().filter(|p| !p.intervals.is_empty()).collect()
}

fn class(point: &IntervalPoint, write: bool) -> Option<&ClassPoint> {
    if write { point.write.as_ref() } else { point.read.as_ref() }.filter(|c| c.ops > 0)
}

/// Picks a figure from an interval's class.
type Pick = Box<dyn Fn(&ClassPoint) -> f64>;

/// One series of a figure over the phases; `None` between phases breaks the line.
pub fn series_points(
    phases: &[&PhaseResult],
    timeline: &Timeline,
    value: &dyn Fn(&IntervalPoint) -> Option<f64>,
) -> Vec<Option<(f64, f64)>> {
    let mut points = Vec::new();
    for (k, phase) in phases.iter().enumerate() {
        for point in &phase.intervals {
            points.push(value(point).map(|v| (timeline.x(k, phase, point), v)));
        }
        points.push(None);
    }
    points
}

/// The series of one figure for one run: read and write (latency: p50 solid and p99 dashed of each).
pub fn figure_series(
    phases: &[&PhaseResult],
    timeline: &Timeline,
    figure: Figure,
    colour: usize,
    prefix: &str,
) -> Vec<Series> {
    let mut out = Vec::new();
    for (c, write) in [(0, false), (1, true)] {
        let op = if write { "write" } else { "read" };
        let name = |what: &str| format!("{prefix}{op}{what}").trim().to_string();
        let picks: Vec<(String, bool, Pick)> = match figure {
            Figure::Mbps => vec![(name(""), false, Box::new(|p| p.mbps))],
            Figure::Iops => vec![(name(""), false, Box::new(|p| p.iops))],
            Figure::Latency => vec![
                (name(" p50"), false, Box::new(|p| p.lat_p50_ns as f64)),
                (name(" p99"), true, Box::new(|p| p.lat_p99_ns as f64)),
            ],
        };
        for (label, dashed, pick) in picks {
            let points = series_points(phases, timeline, &|i| class(i, write).map(&pick));
            let mut s = Series::new(&label, Style::Line, colour + c, points);
            s.dashed = dashed;
            out.push(s);
        }
    }
    out
}

/// The y axis of a figure, sized to the series.
pub fn figure_axis(figure: Figure, series: &[Series]) -> Axis {
    let values = series.iter().flat_map(|s| s.points.iter().flatten().map(|p| p.1));
    let (lo, hi) = values.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    match figure {
        Figure::Mbps => Axis::linear("throughput (MB/s, 10⁶ bytes/s)", 0.0, headroom(hi), num),
        Figure::Iops => Axis::linear("operations per second (IOPS)", 0.0, headroom(hi), num),
        Figure::Latency => {
            let lo = if lo.is_finite() && lo > 0.0 { lo / 1.5 } else { 1e3 };
            Axis::log("latency (log scale)", lo, (hi * 1.5).max(lo * 10.0), format_latency_ns)
        }
    }
}

pub fn figure_text(figure: Figure) -> (&'static str, &'static str, &'static str) {
    match figure {
        Figure::Mbps => (
            "mbps",
            "Throughput over time",
            "Look for dips and a slow decline: a steady line means the device kept its rate for the whole phase.",
        ),
        Figure::Iops => (
            "iops",
            "Operations per second over time",
            "Look for a rate that sags after a while (a cache or write buffer filling up) or drops to zero (stalls).",
        ),
        Figure::Latency => (
            "latency",
            "Latency over time, p50 (solid) and p99 (dashed)",
            "Look at the gap between p50 and p99: a wide or growing gap means some requests wait much longer than most.",
        ),
    }
}

/// MB/s, IOPS and latency over time, one chart each.
pub fn timelines(result: &RunResult) -> Vec<Chart> {
    let phases = timed(result);
    if phases.is_empty() {
        return Vec::new();
    }
    let timeline = Timeline::new(&phases);
    [Figure::Mbps, Figure::Iops, Figure::Latency]
        .into_iter()
        .map(|figure| {
            let series = figure_series(&phases, &timeline, figure, 0, "");
            let (id, title, hint) = figure_text(figure);
            Chart {
                id: format!("timeline-{id}"),
                title: title.into(),
                hint: hint.into(),
                x: Axis::linear("time (s; phases end to end, ramps shaded)", 0.0, timeline.end.max(1e-3), num),
                y: figure_axis(figure, &series),
                series,
                marks: timeline.marks(&phases),
            }
        })
        .collect()
}

/// Each device's read + write MB/s over time: pool members stacked (they share the work), others as lines (a
/// loop device and its backing disk carry the same bytes, so stacking them would count them twice).
pub fn device_timeline(result: &RunResult) -> Option<Chart> {
    let phases = timed(result);
    let names = device_names(&phases);
    if names.is_empty() || phases.iter().all(|p| p.intervals.iter().all(|i| i.devices.is_empty())) {
        return None;
    }
    // Pool members share the work: the pool's own list when the result has one, else the devices' roles.
    let pool: Vec<&str> = result.target.pool.iter().flat_map(|p| p.members.iter().map(|m| m.name.as_str())).collect();
    let is_member =
        |name: &str, role: &str| if pool.is_empty() { role.contains("member") } else { pool.contains(&name) };
    let stacked = names.iter().filter(|(name, role)| is_member(name, role)).count() >= 2;
    let timeline = Timeline::new(&phases);
    let mut below = vec![0.0; phases.iter().map(|p| p.intervals.len() + 1).sum()];
    let mut series = Vec::new();
    for (c, (name, role)) in names.iter().enumerate() {
        if stacked && !is_member(name, role) {
            continue;
        }
        let rate = |i: &IntervalPoint| i.devices.iter().find(|d| &d.name == name).map(|d| d.read_mbps + d.write_mbps);
        let mut points = series_points(&phases, &timeline, &rate);
        if stacked {
            for (p, floor) in points.iter_mut().zip(below.iter_mut()) {
                if let Some((_, y)) = p {
                    *y += *floor;
                    *floor = *y;
                }
            }
        }
        let style = if stacked { Style::Stacked } else { Style::Line };
        series.push(Series::new(&format!("{name} ({role})"), style, c, points));
    }
    let (title, hint) = if stacked {
        (
            "Pool members over time, stacked",
            "Each band is one member's share: a band near zero is a member that does no work.",
        )
    } else {
        (
            "Devices over time",
            "Each line is one device beneath the target; a device near 100 % of its peak is the limit.",
        )
    };
    let y = figure_axis(Figure::Mbps, &series);
    Some(Chart {
        id: "devices".into(),
        title: title.into(),
        hint: hint.into(),
        x: Axis::linear("time (s; phases end to end, ramps shaded)", 0.0, timeline.end.max(1e-3), num),
        y: Axis { title: "device read + write (MB/s)".into(), ..y },
        series,
        marks: timeline.marks(&phases),
    })
}

/// Every device the phases measured, as (name, role), in the order they first appear.
fn device_names(phases: &[&PhaseResult]) -> Vec<(String, String)> {
    phases.iter().flat_map(|p| p.devices.iter().map(|d| (d.activity.name.clone(), d.role.clone()))).fold(
        Vec::new(),
        |mut seen, d| {
            if !seen.iter().any(|s: &(String, String)| s.0 == d.0) {
                seen.push(d);
            }
            seen
        },
    )
}

/// x of a percentile on the "nines" scale: 90 → 1, 99 → 2, 99.9 → 3.
pub fn nines(p: f64) -> f64 {
    -(1.0 - p / 100.0).max(1e-6).log10()
}

/// The percentile axis: nines, labelled as percentiles.
pub fn percentile_axis(max_p: f64) -> Axis {
    let ticks =
        [(0.0, "0"), (50.0, "50"), (90.0, "90"), (99.0, "99"), (99.9, "99.9"), (99.99, "99.99"), (99.999, "99.999")];
    let top = nines(max_p).max(1.0);
    let ticks =
        ticks.iter().filter(|(p, _)| nines(*p) <= top + 1e-9).map(|(p, l)| (nines(*p), format!("{l} %"))).collect();
    let mut axis = Axis::linear("percentile (log scale of 1 − p)", 0.0, top, num);
    axis.ticks = Some(ticks);
    axis
}

/// A percentile curve as points on (nines, ns).
pub fn curve(latency: &LatencySummary) -> Vec<Option<(f64, f64)>> {
    latency.percentiles_ns.iter().filter(|p| p.p < 100.0 && p.ns > 0).map(|p| Some((nines(p.p), p.ns as f64))).collect()
}

/// One chart per phase: a curve per operation class.
pub fn latency_curves(result: &RunResult) -> Vec<Chart> {
    let mut charts = Vec::new();
    for phase in &result.phases {
        let ops = [("read", &phase.read), ("write", &phase.write), ("sync", &phase.sync)];
        let series: Vec<Series> = ops
            .iter()
            .enumerate()
            .filter_map(|(c, (name, op))| {
                op.as_ref().filter(|o| o.ops > 0).map(|o| Series::new(name, Style::Line, c, curve(&o.latency)))
            })
            .filter(|s| !s.points.is_empty())
            .collect();
        if series.is_empty() {
            continue;
        }
        charts.push(latency_chart(format!("latency-{}", phase.index), &phase.name, series));
    }
    charts
}

/// A percentile chart of some curves.
pub fn latency_chart(id: String, name: &str, series: Vec<Series>) -> Chart {
    let values: Vec<(f64, f64)> = series.iter().flat_map(|s| s.points.iter().flatten().copied()).collect();
    let max_x = values.iter().map(|p| p.0).fold(1.0, f64::max);
    let lo = values.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let hi = values.iter().map(|p| p.1).fold(0.0, f64::max);
    let max_p = 100.0 * (1.0 - 10f64.powf(-max_x));
    Chart {
        id,
        title: format!("Latency percentiles: {name}"),
        hint:
            "Read right to left: the flat part is the typical request; where the curve turns up, the slow tail begins."
                .into(),
        x: percentile_axis(max_p),
        y: Axis::log("latency (log scale)", lo / 1.5, (hi * 1.5).max(lo * 10.0), format_latency_ns),
        series,
        marks: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nines_spread_the_tail() {
        assert!((nines(90.0) - 1.0).abs() < 1e-9);
        assert!((nines(99.9) - 3.0).abs() < 1e-9);
        assert_eq!(nines(100.0), 6.0);
    }

    #[test]
    fn pool_members_are_stacked_and_other_devices_are_lines() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/result-v1.json");
        let mut result = crate::results::read_result(std::path::Path::new(path)).unwrap();
        let chart = device_timeline(&result).unwrap();
        assert!(chart.series.iter().all(|s| s.style == Style::Line) && chart.series.len() == 1);
        // A second member beside vda, both members of a pool: two stacked bands, the second on top of the first.
        for phase in &mut result.phases {
            let mut second = phase.devices[0].clone();
            second.activity.name = "vdb".into();
            phase.devices.push(second);
            for d in &mut phase.devices {
                d.role = "btrfs pool member".into();
            }
            for point in &mut phase.intervals {
                let mut other = point.devices[0].clone();
                other.name = "vdb".into();
                point.devices.push(other);
            }
        }
        let chart = device_timeline(&result).unwrap();
        assert_eq!(chart.series.len(), 2);
        assert!(chart.series.iter().all(|s| s.style == Style::Stacked));
        let (first, second) = (&chart.series[0].points, &chart.series[1].points);
        for (a, b) in first.iter().zip(second).filter_map(|(a, b)| a.zip(*b)) {
            assert!((b.1 - 2.0 * a.1).abs() < 1e-9, "the second band sits on the first");
        }
    }

    #[test]
    fn tick_numbers_are_short() {
        assert_eq!(num(0.0), "0");
        assert_eq!(num(2.5), "2.5");
        assert_eq!(num(15_000.0), "15k");
        assert_eq!(num(2_000_000.0), "2M");
    }
}
