//! Renders a `TrialResult` (`streamcap trial`): per layout built, each figure measured beside the planner's
//! prediction and their ratio, then what failed or stopped. Reads only `results` types.

use std::io::{self, Write};

use super::rows::{Rows, num, text};
use super::{Renderer, Summary};
use crate::results::{TrialFigure, TrialLayout, TrialResult};

fn number(value: f64) -> String {
    if value >= 100.0 { format!("{value:.0}") } else { format!("{value:.1}") }
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
    write_notes(out, result)
}

/// One row per figure of each layout built: the prediction, the measurement and their ratio.
fn figure_rows(layouts: &[TrialLayout]) -> Rows {
    let mut rows =
        Rows::new(&[text("layout"), text("figure"), num("predicted"), num("measured"), num("measured ÷ predicted")]);
    for layout in layouts {
        for (i, f) in layout.figures.iter().enumerate() {
            rows.push(vec![
                if i == 0 { format!("{} × {}", layout.layout, layout.members) } else { String::new() },
                format!("{} ({})", f.figure, f.unit),
                predicted(f),
                f.measured.map_or_else(
                    || "-".into(),
                    |m| {
                        let cached = if f.cache_served.is_some() { " †" } else { "" };
                        format!("{}{}{cached}", if f.lower_bound { "≥ " } else { "" }, number(m))
                    },
                ),
                f.ratio.map_or_else(|| "-".into(), |r| format!("{r:.2}")),
            ]);
        }
    }
    rows
}

/// What failed or stopped, and what the marks in the table mean.
fn write_notes(out: &mut dyn Write, result: &TrialResult) -> io::Result<()> {
    for layout in &result.layouts {
        if let Some(why) = &layout.failure {
            writeln!(out, "{} ({}): {why}", layout.layout, layout.status)?;
        }
    }
    if result.layouts.iter().any(|l| l.figures.iter().any(|f| f.predicted_low.is_some())) {
        writeln!(
            out,
            "Streams on btrfs mirrors: 'low … high' is one reader thread (one copy, btrfs's pid read policy) … many \
             (every copy); io_uring's worker threads put a measurement in between (docs/planning.md)."
        )?;
    }
    if result.layouts.iter().any(|l| l.figures.iter().any(|f| f.lower_bound)) {
        writeln!(out, "≥: the stream search reached its limit (twice the prediction) without a stall.")?;
    }
    let cached: Vec<String> = result
        .layouts
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
    if result.interrupted {
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
        assert_eq!(rows.rows[0], ["btrfs-raid1 × 2", "streams (streams)", "20.0 … 40.0", "≥ 42.0 †", "1.05"]);
        assert_eq!(rows.rows[1][0], "", "the layout is named on its first row only");
        assert_eq!(rows.rows[1][3..], ["-", "-"]);
    }
}
