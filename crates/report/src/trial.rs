//! Renders a `TrialResult` (`streamcap trial`): per layout built, each figure measured beside the planner's
//! prediction and their ratio, then what failed or stopped. Reads only `results` types.

use std::io::{self, Write};

use super::rows::{Rows, num, text};
use super::{Renderer, Summary};
use crate::results::{SERVED_TOLERANCE, TrialFigure, TrialLayout, TrialResult};

fn number(value: f64) -> String {
    if value >= 100.0 { format!("{value:.0}") } else { format!("{value:.1}") }
}

/// Part of the figure did not reach the devices within its phase: a cache's rate (the same tolerance as a
/// stream step's).
fn cache_figure(f: &TrialFigure) -> bool {
    f.on_devices.is_some_and(|share| share < 1.0 - SERVED_TOLERANCE)
}

fn predicted(f: &TrialFigure) -> String {
    match f.predicted_low {
        Some(low) => format!("{} … {}", number(low), number(f.predicted)),
        None => number(f.predicted),
    }
}

/// The comparison table in the terminal.
impl Renderer<TrialResult> for Summary {
    fn render(&self, result: &TrialResult, out: &mut dyn Write) -> io::Result<()> {
        write_trial(out, result)
    }
}

fn write_trial(out: &mut dyn Write, result: &TrialResult) -> io::Result<()> {
    let devices: Vec<&str> = result.devices.iter().map(|d| d.path.as_str()).collect();
    writeln!(
        out,
        "streamcap {} · trial of {} devices ({}) · predictions for drives as '{}' ({}) · streams of {} ({} Mbit/s, {} KiB chunks)",
        result.tool.version,
        devices.len(),
        devices.join(", "),
        result.drive.name,
        result.drive.source,
        result.format,
        result.bitrate_bps / 1_000_000,
        result.chunk_bytes / 1024
    )?;
    writeln!(out, "{}", figure_rows(&result.layouts).terminal(comfy_table::presets::NOTHING))?;
    write_notes(out, &result.layouts, result.interrupted)
}

/// One row per figure of each layout built: the prediction, the measurement and their ratio.
fn figure_rows(layouts: &[TrialLayout]) -> Rows {
    let mut rows = Rows::new(&[
        text("layout"),
        text("figure"),
        num("predicted"),
        num("measured"),
        num("measured ÷ predicted"),
        num("devices moved"),
    ]);
    for layout in layouts {
        for (i, f) in layout.figures.iter().enumerate() {
            rows.push(vec![
                if i == 0 { format!("{} × {}", layout.layout, layout.members) } else { String::new() },
                format!("{} ({})", f.figure, f.unit),
                predicted(f),
                f.measured.map_or_else(
                    || "-".into(),
                    |m| {
                        let cached = match (f.cache_served.is_some(), cache_figure(f)) {
                            (true, _) => " †",
                            (false, true) => " ‡",
                            (false, false) => "",
                        };
                        format!("{}{}{cached}", if f.lower_bound { "≥ " } else { "" }, number(m))
                    },
                ),
                f.ratio.map_or_else(|| "-".into(), |r| format!("{r:.2}")),
                f.on_devices.map_or_else(|| "-".into(), |share| format!("{share:.2} ×")),
            ]);
        }
    }
    rows
}

/// What failed or stopped, and what the marks in the table mean.
fn write_notes(out: &mut dyn Write, layouts: &[TrialLayout], interrupted: bool) -> io::Result<()> {
    for layout in layouts {
        if let Some(why) = &layout.failure {
            writeln!(out, "{} ({}): {why}", layout.layout, layout.status)?;
        }
    }
    if layouts.iter().any(|l| l.figures.iter().any(|f| f.predicted_low.is_some())) {
        writeln!(
            out,
            "Streams on btrfs mirrors: 'low … high' is one reader thread (one copy, btrfs's pid read policy) … many \
             (every copy); io_uring's worker threads put a measurement in between (docs/planning.md)."
        )?;
    }
    if layouts.iter().any(|l| l.figures.iter().any(|f| f.on_devices.is_some())) {
        writeln!(
            out,
            "Sequential and random figures: direct I/O timed after a ramp (a throttle's or a drive cache's first \
             burst left out); 'devices moved': bytes the devices read or wrote in the same time for each byte \
             measured — 1 or more when all of it reached them within the phase (2 for a mirror's writes, about \
             n ÷ (n − 1) for parity's)."
        )?;
    }
    if layouts.iter().any(|l| l.figures.iter().any(cache_figure)) {
        writeln!(
            out,
            "‡: the devices moved less than was measured: part of that figure is a cache's rate, not the devices'."
        )?;
    }
    if layouts.iter().any(|l| l.figures.iter().any(|f| f.lower_bound)) {
        writeln!(
            out,
            "≥: the stream search reached its limit (what the devices could serve together) without a stall."
        )?;
    }
    let cached: Vec<String> = layouts
        .iter()
        .flat_map(|l| {
            l.figures.iter().filter_map(move |f| f.cache_served.map(|n| format!("{} ({})", l.layout, number(n))))
        })
        .collect();
    if !cached.is_empty() {
        writeln!(
            out,
            "†: a larger count passed only from a cache, its devices reading less than its viewers received, and is \
             not counted: {}.",
            cached.join(", ")
        )?;
    }
    if interrupted {
        writeln!(out, "Interrupted: the table holds what was measured before Ctrl-C.")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_row_says_the_range_the_bound_and_the_cache() {
        let figure = TrialFigure {
            figure: "streams".into(),
            unit: "streams".into(),
            predicted: 40.0,
            predicted_low: Some(20.0),
            measured: Some(42.0),
            ratio: Some(1.05),
            lower_bound: true,
            cache_served: Some(60.0),
            on_devices: None,
        };
        let layout = TrialLayout {
            layout: "btrfs-raid1".into(),
            label: "btrfs raid1".into(),
            members: 2,
            status: "measured".into(),
            failure: None,
            figures: vec![figure.clone(), TrialFigure { measured: None, ratio: None, ..figure }],
        };
        let rows = figure_rows(&[layout]);
        assert_eq!(rows.rows[0], ["btrfs-raid1 × 2", "streams (streams)", "20.0 … 40.0", "≥ 42.0 †", "1.05", "-"]);
        assert_eq!(rows.rows[1][0], "", "the layout is named on its first row only");
        assert_eq!(rows.rows[1][3..], ["-", "-", "-"]);
    }

    /// The raid5 write of issue 28 (1.46 × its prediction) was checked against what its members wrote: a write
    /// row says what the devices moved for it, and a figure they did not move is marked as a cache's.
    #[test]
    fn a_raw_figure_says_what_the_devices_moved_and_marks_a_cache_s_rate() {
        let write = TrialFigure {
            figure: "seq write".into(),
            unit: "MB/s".into(),
            predicted: 60.0,
            predicted_low: None,
            measured: Some(57.0),
            ratio: Some(0.95),
            lower_bound: false,
            cache_served: None,
            // 4 members of a btrfs raid5 wrote 1.38 bytes for each byte written (parity, partial rows).
            on_devices: Some(1.38),
        };
        // A buffered write measured before writeback: the devices wrote a fifth of it within the phase.
        let cached = TrialFigure { measured: Some(900.0), ratio: Some(15.0), on_devices: Some(0.2), ..write.clone() };
        let layout = TrialLayout {
            layout: "btrfs-raid5".into(),
            label: "btrfs raid5".into(),
            members: 4,
            status: "measured".into(),
            failure: None,
            figures: vec![write, cached],
        };
        let rows = figure_rows(std::slice::from_ref(&layout));
        assert_eq!(rows.rows[0][3..], ["57.0", "0.95", "1.38 ×"]);
        assert_eq!(rows.rows[1][3..], ["900 ‡", "15.00", "0.20 ×"]);
        let mut notes = Vec::new();
        write_notes(&mut notes, &[layout], false).unwrap();
        let notes = String::from_utf8(notes).unwrap();
        assert!(notes.contains("‡: the devices moved less than was measured"), "{notes}");
        assert!(notes.contains("timed after a ramp"), "{notes}");
    }
}
