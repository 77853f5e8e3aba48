//! A comparison as one HTML page: which run is which, warnings, the side-by-side table with verdicts, then the
//! runs overlaid — per matched phase, throughput over the measured time and the latency percentile curve of its
//! main operation class; per capacity search (or fixed-count streams run), the streams that stalled and the
//! start-up p99 at each count — one colour per run.

use std::io::{self, Write};

use super::charts::{curve, latency_chart, num};
use super::svg::{Axis, Chart, Series, Style, esc, headroom};
use super::{Html, charts_html, page_end, page_start, section, tables};
use crate::report::Renderer;
use crate::report::compare::{Comparison, Row, Verdict};
use crate::results::{OpResult, PhaseResult, StreamsStep};

fn main_op(p: &PhaseResult) -> Option<(&'static str, &OpResult)> {
    p.read.as_ref().filter(|o| o.ops > 0).map(|o| ("read", o)).or(p
        .write
        .as_ref()
        .filter(|o| o.ops > 0)
        .map(|o| ("write", o)))
}

fn overlaid_phase(c: &Comparison, phases: &[&PhaseResult], n: usize) -> Vec<Chart> {
    let Some((op, _)) = main_op(phases[0]) else { return Vec::new() };
    let mut timeline = Vec::new();
    let mut curves = Vec::new();
    for (k, (p, run)) in phases.iter().zip(&c.runs).enumerate() {
        let class = |i: &crate::results::IntervalPoint| if op == "read" { i.read.clone() } else { i.write.clone() };
        let points = p.intervals.iter().map(|i| class(i).map(|c| (i.start_s + i.length_s / 2.0, c.mbps))).collect();
        timeline.push(Series::new(&format!("{} {op}", run.key), Style::Line, k, points));
        let o = if op == "read" { p.read.as_ref() } else { p.write.as_ref() };
        if let Some(o) = o.filter(|o| o.ops > 0) {
            curves.push(Series::new(&format!("{} {op}", run.key), Style::Line, k, curve(&o.latency)));
        }
    }
    let end = phases.iter().flat_map(|p| p.intervals.last().map(|i| i.start_s + i.length_s)).fold(1e-3, f64::max);
    let top = timeline.iter().flat_map(|s| s.points.iter().flatten().map(|p| p.1)).fold(0.0, f64::max);
    let name = &phases[0].name;
    let mut charts = vec![Chart {
        id: format!("compare-timeline-{n}"),
        title: format!("Throughput over time: {name} ({op})"),
        hint: "Lines that overlap within their wiggle are the same; a gap wider than the wiggle is a real difference."
            .into(),
        x: Axis::linear("time into the measured phase (s)", 0.0, end, num),
        y: Axis::linear("throughput (MB/s, 10⁶ bytes/s)", 0.0, headroom(top), num),
        series: timeline,
        marks: Vec::new(),
    }];
    if !curves.is_empty() {
        charts.push(latency_chart(format!("compare-latency-{n}"), &format!("{name} ({op})"), curves));
    }
    charts
}

fn searches(c: &Comparison) -> Vec<(String, Vec<&[StreamsStep]>)> {
    let mut out = Vec::new();
    let all_streams: Option<Vec<&[StreamsStep]>> =
        c.runs.iter().map(|r| r.result.streams.as_ref().map(|s| s.steps.as_slice())).collect();
    if let (Some(steps), Some(s)) = (all_streams, &c.runs[0].result.streams) {
        out.push((s.label.clone(), steps));
    }
    for v in c.runs[0].result.check.iter().flat_map(|k| &k.verdict) {
        let steps: Option<Vec<&[StreamsStep]>> = c
            .runs
            .iter()
            .map(|r| r.result.check.as_ref()?.verdict.iter().find(|w| w.name == v.name).map(|w| w.steps.as_slice()))
            .collect();
        if let Some(steps) = steps {
            out.push((v.label.clone(), steps));
        }
    }
    out
}

fn overlaid_capacity(c: &Comparison) -> Vec<Chart> {
    searches(c).into_iter().enumerate().flat_map(|(n, (label, runs))| overlaid_search(c, n, &label, &runs)).collect()
}

/// One point series per run: `value` at each count the run measured.
fn per_run(c: &Comparison, runs: &[&[StreamsStep]], value: fn(&StreamsStep) -> f64) -> Vec<Series> {
    runs.iter()
        .zip(&c.runs)
        .enumerate()
        .map(|(k, (steps, run))| {
            let points = steps.iter().map(|s| Some((f64::from(s.count), value(s)))).collect();
            Series::new(&run.key, Style::Points, k, points)
        })
        .collect()
}

/// Streams stalled and start-up p99 by count, every run's steps overlaid (a fixed-count run is one point).
fn overlaid_search(c: &Comparison, n: usize, label: &str, runs: &[&[StreamsStep]]) -> Vec<Chart> {
    let startup = |s: &StreamsStep| s.startup.at(99.0).unwrap_or(0) as f64 / 1e9;
    let stalls = per_run(c, runs, |s| f64::from(s.streams_stalled));
    let startups = per_run(c, runs, startup);
    let max_x = runs.iter().flat_map(|s| s.iter().map(|x| f64::from(x.count))).fold(1.0, f64::max);
    let max_y = runs.iter().flat_map(|s| s.iter().map(|x| f64::from(x.streams_stalled))).fold(1.0, f64::max);
    let slowest = runs.iter().flat_map(|s| s.iter().map(startup)).fold(0.0, f64::max);
    let x = || Axis::linear("concurrent streams", 0.0, headroom(max_x), num);
    vec![
        Chart {
            id: format!("compare-capacity-{n}"),
            title: format!("Stalls by stream count: {label}"),
            hint: "The run whose points leave zero at a higher count sustains more streams.".into(),
            x: x(),
            y: Axis::linear("streams that stalled (count)", 0.0, headroom(max_y), num),
            series: stalls,
            marks: Vec::new(),
        },
        Chart {
            id: format!("compare-startup-{n}"),
            title: format!("Start-up p99 by stream count: {label}"),
            hint: "At the same count, the lower point starts its streams sooner; start-up grows before streams \
                   stall."
                .into(),
            x: x(),
            y: Axis::linear("start-up time, 99th percentile (s)", 0.0, headroom(slowest), num),
            series: startups,
            marks: Vec::new(),
        },
    ]
}

/// The verdict cell, coloured by direction.
fn verdict_class(row: &Row, n: usize) -> &'static str {
    match row.verdict(n) {
        Verdict::Better(_) => "better",
        Verdict::Worse(_) => "worse",
        _ => "",
    }
}

impl Renderer<Comparison> for Html {
    fn render(&self, c: &Comparison, out: &mut dyn Write) -> io::Result<()> {
        let keys: Vec<&str> = c.runs.iter().map(|r| r.key.as_str()).collect();
        page_start(out, "streamcap compare", &format!("{} runs: {}", c.runs.len(), keys.join(", ")))?;
        let mut runs = String::from("<ul>");
        for line in c.legend() {
            runs.push_str(&format!("<li>{}</li>", esc(&line)));
        }
        runs.push_str("</ul>");
        for w in &c.warnings {
            runs.push_str(&format!("<p class=\"warn\"><b>warning:</b> {}</p>", esc(w)));
        }
        section(out, "runs", "Runs", &runs)?;
        if c.rows.is_empty() {
            let nothing = format!("<p>{}</p>", esc(crate::report::compare::NOTHING_IN_COMMON));
            section(out, "table", "Side by side", &nothing)?;
            return page_end(out, &format!("streamcap {} · compare", env!("CARGO_PKG_VERSION")));
        }
        let (header, rows) = c.table();
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        let right: Vec<bool> = (0..header.len()).map(|i| i >= 2 && i + 1 < header.len()).collect();
        let mut body = tables::table(&header, &right, &rows);
        // Mark each verdict cell's direction (the table is built from plain text).
        for (row, cells) in c.rows.iter().zip(&rows) {
            let class = (1..c.runs.len()).map(|n| verdict_class(row, n)).find(|k| !k.is_empty()).unwrap_or("");
            let last = esc(cells.last().map_or("", String::as_str));
            if !class.is_empty() {
                body = body.replacen(
                    &format!("<td>{last}</td></tr>"),
                    &format!("<td class=\"{class}\">{last}</td></tr>"),
                    1,
                );
            }
        }
        body.push_str(&format!("<p class=\"hint\">{}</p>", esc(crate::report::compare::RULE)));
        section(out, "table", "Side by side", &body)?;
        section(out, "capacity", "Stream capacity, overlaid", &charts_html(&overlaid_capacity(c)))?;
        let phases: Vec<Chart> =
            c.matched_phases().iter().enumerate().flat_map(|(n, p)| overlaid_phase(c, p, n)).collect();
        section(out, "phases", "Phases, overlaid", &charts_html(&phases))?;
        page_end(out, &format!("streamcap {} · compare", env!("CARGO_PKG_VERSION")))
    }
}
