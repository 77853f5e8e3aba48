//! The sweep section of the HTML report: the size × record × mode table of the terminal and Markdown, the cliff
//! in words, then one chart per pass (re-read first: that is where the cliff shows) of MB/s against file size,
//! both on log scales, one line per record size and mode (colour by record, dashed for direct I/O), with the
//! effective RAM and the cliff marked and, on the read passes, the device's own speed. Pure functions from a
//! `SweepSummary`; the page decides where they go.

use super::charts::num;
use super::svg::{Axis, Chart, Mark, Series, Style, esc};
use crate::report::sweep::{closing_lines, settings_line, sweep_rows};
use crate::results::{SweepPoint, SweepSummary};
use crate::units::{Bytes, format_mbps};

/// One pass of the sweep as a chart: id, name, its figure, whether the device's read speed belongs on it, hint.
type Pass = (&'static str, &'static str, fn(&SweepPoint) -> Option<f64>, bool, &'static str);

const PASSES: [Pass; 6] = [
    (
        "reread",
        "re-read",
        |p| p.reread_mbps,
        true,
        "Where the buffered lines fall from RAM's speed to the direct line, the page cache no longer holds the \
         file: that is the cliff, and it should sit near the effective RAM.",
    ),
    (
        "write",
        "write",
        |p| p.write_no_flush_mbps.or(p.write_mbps),
        false,
        "Buffered writes without their closing fsync (iozone's write): while the file fits in RAM they only fill \
         the page cache, a plateau at memory's speed; past the RAM, buffered and direct lines meet.",
    ),
    (
        "write-fsync",
        "write + fsync",
        |p| p.write_mbps,
        false,
        "The same writes with their closing fsync (iozone -e): the flush pays the disk for every dirty page, so \
         buffered files that fit in RAM fall towards the device's speed too.",
    ),
    (
        "rewrite",
        "re-write",
        |p| p.rewrite_mbps,
        false,
        "The same file written again (no allocation): a gap above the write line is what allocating blocks costs.",
    ),
    (
        "read",
        "read",
        |p| p.read_mbps,
        true,
        "The first read after the writes: a buffered file that still fits in RAM comes from the page cache.",
    ),
    (
        "random",
        "random read",
        |p| p.random_read_mbps,
        false,
        "One record at a time at random offsets: once files outgrow RAM, small records pay a seek each.",
    ),
];

/// The whole section body: settings, table, the cliff in words, one chart per pass.
pub fn sweep_section(sweep: &SweepSummary) -> String {
    let mut body = format!("<p>{}.</p>", esc(&settings_line(sweep)));
    body.push_str(&sweep_rows(sweep).html());
    for (k, line) in closing_lines(sweep).iter().enumerate() {
        let class = if k == 0 { "words" } else { "warn" };
        body.push_str(&format!("<p class=\"{class}\">{}</p>", esc(line)));
    }
    for chart in sweep_charts(sweep) {
        body.push_str(&chart.html());
    }
    body
}

/// One chart per pass that has a figure.
pub fn sweep_charts(sweep: &SweepSummary) -> Vec<Chart> {
    PASSES.iter().filter_map(|pass| pass_chart(sweep, pass)).collect()
}

/// The (record, direct) pairs measured, buffered first, records smallest first.
fn lines(sweep: &SweepSummary) -> Vec<(u64, bool)> {
    let mut keys: Vec<(u64, bool)> = sweep.points.iter().map(|p| (p.record_bytes, p.direct)).collect();
    keys.sort_by_key(|(record, direct)| (*direct, *record));
    keys.dedup();
    keys
}

/// Colour by record size (its place among the records swept), dashed for direct I/O.
fn series(sweep: &SweepSummary, (record, direct): (u64, bool), figure: fn(&SweepPoint) -> Option<f64>) -> Series {
    let mut points: Vec<(f64, f64)> = sweep
        .points
        .iter()
        .filter(|p| p.record_bytes == record && p.direct == direct)
        .filter_map(|p| figure(p).filter(|v| *v > 0.0).map(|v| (p.size_bytes as f64, v)))
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let colour = sweep.records_bytes.iter().position(|r| *r == record).unwrap_or(0);
    let name = format!("{} {}", Bytes(record), if direct { "direct" } else { "buffered" });
    let mut s = Series::new(&name, Style::Line, colour, points.into_iter().map(Some).collect());
    s.dashed = direct;
    s
}

/// The file-size axis: log scale, ticks at the sizes swept (every other one, or fewer, when they would crowd).
fn size_axis(sweep: &SweepSummary) -> Option<Axis> {
    let (first, last) = (*sweep.sizes_bytes.first()? as f64, *sweep.sizes_bytes.last()? as f64);
    let mut x = Axis::log("file size (log scale)", first / 1.5, last * 1.5, num);
    let every = sweep.sizes_bytes.len().div_ceil(10).max(1);
    x.ticks = Some(sweep.sizes_bytes.iter().step_by(every).map(|s| (*s as f64, Bytes(*s).to_string())).collect());
    Some(x)
}

/// The effective RAM and the cliff, where they fall on the axis; the RAM beyond the largest file is said in the
/// hint instead (a mark at the edge would claim a size that was not swept).
fn marks(sweep: &SweepSummary, x: &Axis, device_level: bool, hint: &mut String) -> Vec<Mark> {
    let mut marks = Vec::new();
    if let Some(c) = &sweep.cliff {
        let (a, b) = (c.cached_up_to_bytes as f64, c.device_from_bytes as f64);
        let words =
            format!("cliff: RAM up to {}, disk from {}", Bytes(c.cached_up_to_bytes), Bytes(c.device_from_bytes));
        marks.push(Mark::Band(a, b, words.clone()));
        marks.push(Mark::Vertical((a * b).sqrt(), words));
        if device_level {
            marks.push(Mark::Horizontal(
                c.device_mbps,
                format!("device (direct reads) {} MB/s", format_mbps(c.device_mbps)),
            ));
        }
    }
    let ram = sweep.effective_ram_bytes as f64;
    let label = format!("effective RAM {}", Bytes(sweep.effective_ram_bytes));
    if ram >= x.min && ram <= x.max {
        marks.push(Mark::Vertical(ram, label));
    } else {
        hint.push_str(&format!(" The {label} lies outside the sizes swept."));
    }
    marks
}

fn pass_chart(sweep: &SweepSummary, &(id, name, figure, device_level, hint): &Pass) -> Option<Chart> {
    let series: Vec<Series> = lines(sweep).into_iter().map(|key| series(sweep, key, figure)).collect();
    let values: Vec<f64> = series.iter().flat_map(|s| s.points.iter().flatten().map(|p| p.1)).collect();
    if values.is_empty() {
        return None;
    }
    let x = size_axis(sweep)?;
    let mut hint = hint.to_string();
    let marks = marks(sweep, &x, device_level, &mut hint);
    let level = sweep.cliff.as_ref().filter(|_| device_level).map(|c| c.device_mbps);
    let lo = values.iter().copied().chain(level).fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().chain(level).fold(0.0, f64::max);
    Some(Chart {
        id: format!("sweep-{id}"),
        title: format!("{} by file size", capitalised(name)),
        hint,
        x,
        y: Axis::log("throughput (MB/s = 10⁶ bytes/s, log scale)", lo / 1.5, (hi * 1.5).max(lo * 10.0), num),
        series,
        marks,
    })
}

fn capitalised(name: &str) -> String {
    let mut chars = name.chars();
    chars.next().map_or(String::new(), |c| c.to_uppercase().chain(chars).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::SweepCliff;

    fn point(size: u64, record: u64, direct: bool, reread: f64) -> SweepPoint {
        SweepPoint {
            size_bytes: size << 20,
            record_bytes: record << 10,
            direct,
            write_mbps: Some(100.0),
            write_no_flush_mbps: Some(150.0),
            write_flush_s: Some(0.1),
            rewrite_mbps: None,
            rewrite_no_flush_mbps: None,
            rewrite_flush_s: None,
            read_mbps: None,
            reread_mbps: Some(reread),
            random_read_mbps: None,
        }
    }

    fn sweep(ram_mib: u64) -> SweepSummary {
        let mut points = Vec::new();
        for (size, fast) in [(16, 3000.0), (64, 2800.0), (256, 110.0)] {
            points.push(point(size, 1024, false, fast));
            points.push(point(size, 1024, true, 105.0));
            points.push(point(size, 64, false, fast / 2.0));
        }
        SweepSummary {
            sizes_bytes: vec![16 << 20, 64 << 20, 256 << 20],
            records_bytes: vec![64 << 10, 1 << 20],
            memory_limit_bytes: None,
            effective_ram_bytes: ram_mib << 20,
            points,
            cliff: Some(SweepCliff {
                cached_up_to_bytes: 64 << 20,
                device_from_bytes: 256 << 20,
                cached_mbps: 2800.0,
                fallen_mbps: 110.0,
                device_mbps: 105.0,
            }),
            implausible_cliff: None,
            words: "the cliff".into(),
            bound: None,
            budget_s: 900.0,
            budget_stopped: false,
            partial: false,
        }
    }

    #[test]
    fn one_chart_per_pass_measured_one_line_per_record_and_mode() {
        let charts = sweep_charts(&sweep(128));
        let ids: Vec<&str> = charts.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["sweep-reread", "sweep-write", "sweep-write-fsync"], "passes without figures have no chart");
        let reread = &charts[0];
        let names: Vec<&str> = reread.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["64 KiB buffered", "1 MiB buffered", "1 MiB direct"]);
        assert_eq!((reread.series[0].colour, reread.series[1].colour, reread.series[2].colour), (0, 1, 1));
        assert!(reread.series[2].dashed && !reread.series[1].dashed);
        assert!(reread.series.iter().all(|s| s.points.len() == 3));
        assert!(reread.x.log && reread.y.log);
    }

    #[test]
    fn the_cliff_and_the_ram_are_marked_and_a_ram_off_the_axis_is_said() {
        let charts = sweep_charts(&sweep(128));
        let svg = charts[0].html();
        assert!(svg.contains(">cliff: RAM up to 64 MiB, disk from 256 MiB<"), "{svg}");
        assert!(svg.contains(">effective RAM 128 MiB<") && svg.contains(">device (direct reads) 105 MB/s<"));
        assert!(!charts[1].html().contains("device (direct reads)"), "the device's read speed is not a write level");
        let far = sweep_charts(&sweep(64 << 10));
        assert!(!far[0].html().contains(">effective RAM"));
        assert!(far[0].hint.ends_with("The effective RAM 64 GiB lies outside the sizes swept."), "{}", far[0].hint);
    }
}
