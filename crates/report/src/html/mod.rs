//! The HTML report: one self-contained page per result (or comparison) — inline CSS, inline SVG charts made when
//! the report is written, no script, no font, no image and no link that would fetch anything. A
//! Content-Security-Policy of `default-src 'none'` makes the browser itself refuse any request, so a page that
//! tried would log an error instead. Light and dark follow `prefers-color-scheme`; print styles drop the
//! backgrounds and keep charts whole. Sections: a check's glance (`glance`) and verdict or the summary first, the
//! phase table and the notices and cache flags, then charts, then the facts (host, devices, configuration). A
//! sweep's many short passes get its curves instead of
//! per-phase timelines and latency charts (`sweep`).

mod cache;
mod capacity;
mod charts;
mod compare;
mod glance;
mod mark_labels;
mod svg;
mod sweep;
mod tables;

use std::io::{self, Write};

use super::Renderer;
use super::markdown::command_name;
use crate::results::RunResult;
use capacity::{Search, capacity_charts};
pub use svg::esc;
pub(crate) use tables::table;

/// The self-contained HTML page.
pub struct Html;

const STYLE: &str = include_str!("style.css");

/// The head and the page header; `title` and `subtitle` are plain text.
pub(crate) fn page_start(out: &mut dyn Write, title: &str, subtitle: &str) -> io::Result<()> {
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"color-scheme\" content=\"light dark\">\n\
         <title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<header><h1>{}</h1><p class=\"sub\">{}</p></header>\n<main>\n",
        esc(title),
        esc(title),
        esc(subtitle)
    )
}

pub(crate) fn page_end(out: &mut dyn Write, footer: &str) -> io::Result<()> {
    write!(out, "</main>\n<footer>{}</footer>\n</body>\n</html>\n", esc(footer))
}

/// A section with a heading; `body` is HTML.
pub(crate) fn section(out: &mut dyn Write, id: &str, heading: &str, body: &str) -> io::Result<()> {
    if body.is_empty() {
        return Ok(());
    }
    write!(out, "<section id=\"{}\">\n<h2>{}</h2>\n{body}</section>\n", esc(id), esc(heading))
}

fn subtitle(result: &RunResult) -> String {
    let h = &result.host;
    format!(
        "{} · {} × {} · {} RAM · {} · {}{}",
        h.hostname,
        h.cpu_count,
        h.cpu_model,
        h.ram,
        result.started_at,
        match result.status {
            crate::results::RunStatus::Completed => "completed",
            crate::results::RunStatus::Interrupted => "interrupted",
            crate::results::RunStatus::IoError => "stopped by an I/O error",
            crate::results::RunStatus::Failed => "failed",
            crate::results::RunStatus::Running => "still running when written",
        },
        if result.phases.iter().any(|p| p.cache_affected) { " · cache-affected figures flagged below" } else { "" }
    )
}

/// Every capacity search in the result: the streams command's, or one per format of a check.
fn searches(result: &RunResult) -> Vec<Search<'_>> {
    let mut out = Vec::new();
    // A check's streams result is its last format's search, which the check's own verdict below holds too: drawn
    // once, from the verdict (issue 30: the 1080p charts appeared twice).
    if let Some(s) = result.streams.as_ref().filter(|_| result.check.is_none()) {
        out.push(Search {
            key: "streams".into(),
            label: s.label.clone(),
            steps: &s.steps,
            answer: s.capacity.as_ref(),
            estimate: s.estimate.as_ref(),
            target: s.target,
        });
    }
    if let Some(check) = &result.check {
        for v in &check.verdict {
            let max_startup_s = check.max_startup_s();
            let target = crate::results::QualityTarget { max_stalled_streams: 0, max_startup_s, steady_within_s: 0.0 };
            out.push(Search {
                key: v.name.clone(),
                label: v.label.clone(),
                steps: &v.steps,
                answer: Some(&v.capacity),
                estimate: v.estimate.as_ref(),
                target,
            });
        }
    }
    out
}

fn charts_html(charts: &[svg::Chart]) -> String {
    charts.iter().map(svg::Chart::html).collect()
}

impl Renderer for Html {
    fn render(&self, result: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        let command = command_name(result);
        // A sweep's buffered passes are cache-affected on purpose: its cliff explains them, so they are not flagged.
        let judged = result.sweep.as_ref().map(|_| crate::report::sweep::judged(result));
        let shown = judged.as_ref().unwrap_or(result);
        page_start(out, &format!("streamcap {command} · {}", result.target.path), &subtitle(shown))?;
        summary_sections(out, result)?;
        if let Some(cluster) = &result.cluster {
            let body = super::cluster::cluster_html(cluster);
            section(out, "ranks", "Clients (MPI ranks): each rank's share", &body)?;
        }
        let capacity: Vec<svg::Chart> = searches(result).iter().flat_map(capacity_charts).collect();
        section(out, "capacity", "Stream capacity", &charts_html(&capacity))?;
        if !result.phases.is_empty() {
            let mut body = tables::phase_table(shown);
            // A fio file's jobs on devices of their own (run --device): where each ran.
            for line in super::phases::on_lines(&result.phases) {
                body.push_str(&format!("<p class=\"words\">{}</p>", esc(&line)));
            }
            for line in super::latency_target::lines(&result.phases) {
                body.push_str(&format!("<p class=\"words\">{}</p>", esc(&line)));
            }
            section(out, "phases", "Phases", &body)?;
        }
        // Before the charts: the header says figures are "flagged below", and the flags change how the charts
        // read (issue 30: the warning came at byte 82k of a 117k page).
        section(out, "notices", "Notices and cache flags", &tables::notices(shown))?;
        if result.sweep.is_some() {
            let why = "<p class=\"none\">A sweep's passes are short and many: the curves above take the place of \
                       per-phase timelines and latency charts (the JSON keeps every phase's intervals).</p>";
            section(out, "devices", "Devices", &format!("{why}{}", tables::device_table(result).unwrap_or_default()))?;
        } else {
            phase_charts(out, result)?;
        }
        section(out, "host", "Host and devices", &tables::host_facts(result))?;
        section(out, "config", "Configuration", &tables::configuration(result))?;
        let footer =
            format!("streamcap {} · result schema {} v{}", result.tool.version, result.schema, result.schema_version);
        page_end(out, &footer)
    }
}

/// What the command found, before any chart of phases: the verdict of a check, the plateaus of a cache run, the
/// curves of a sweep, the steps of a streams run.
fn summary_sections(out: &mut dyn Write, result: &RunResult) -> io::Result<()> {
    if let Some(check) = &result.check {
        section(out, "glance", "At a glance", &glance::glance(result, check))?;
        let mut verdict = tables::verdict_table(check);
        for v in &check.verdict {
            verdict.push_str(&format!("<p class=\"words\">{}</p>", esc(&v.capacity.words)));
        }
        for line in super::check::verdict_legend(check) {
            verdict.push_str(&format!("<p class=\"hint\">{}</p>", esc(&line)));
        }
        let title = format!("Verdict: {}", check.verdict_title());
        section(out, "verdict", &title, &verdict)?;
        if let Some(household) = &check.household {
            let title = super::check_household::title(household);
            section(out, "household", &title, &super::check_household::html_body(household))?;
        }
        if let Some(b) = &check.breaks_first {
            let (title, body) = super::during::html_section(b);
            section(out, "breaks", title, &body)?;
        }
        section(out, "figures", "Headline figures", &tables::check_figures(check))?;
        section(out, "planner", "Planner", &super::check_hint::html_body(check))?;
    }
    if let Some(cache) = &result.cache {
        section(out, "cache", "Cache and media plateaus", &cache::cache_section(cache))?;
    }
    if let Some(s) = &result.sweep {
        section(
            out,
            "sweep",
            "File-size sweep: throughput by file size, and the cache cliff",
            &sweep::sweep_section(s),
        )?;
    }
    if let Some(check) = &result.check {
        section(out, "steps", "Steps of each format's search", &check_steps(result, check))?;
    }
    if let Some(streams) = result.streams.as_ref().filter(|_| result.check.is_none()) {
        let mut body = tables::steps_table(streams);
        if let Some(answer) = &streams.capacity {
            body.push_str(&format!("<p class=\"words\"><b>{}</b></p>", esc(&answer.words)));
        }
        if let Some(household) = &streams.household {
            let title = super::check_household::title(household);
            body.push_str(&format!("<h3>{}</h3>{}", esc(&title), super::check_household::html_body(household)));
        }
        for line in super::during::streams_lines(streams) {
            body.push_str(&format!("<p>{}</p>", esc(line.trim_start())));
        }
        for line in super::streams_client::client_lines(result, streams) {
            body.push_str(&format!("<p class=\"client\">{}</p>", esc(line.trim_start())));
        }
        if let Some(c) = streams.estimate.as_ref().and_then(|e| e.comparison.as_ref()) {
            body.push_str(&format!("<p>{}</p>", esc(c)));
        }
        section(out, "steps", &format!("Streams: {}", streams.label), &body)?;
    }
    Ok(())
}

/// Every format's step table (issue 30: only the last format's, the one the check's streams result holds, was
/// shown), under the format's name; the step columns and words are the streams command's.
fn check_steps(result: &RunResult, check: &crate::results::CheckSummary) -> String {
    let Some(template) = &result.streams else { return String::new() };
    let mut body = String::new();
    for v in check.verdict.iter().filter(|v| !v.steps.is_empty()) {
        let mut streams = template.clone();
        streams.label = v.label.clone();
        streams.steps = v.steps.clone();
        body.push_str(&format!("<h3>{}</h3>{}", esc(&v.label), tables::steps_table(&streams)));
    }
    body
}

/// Timelines, the device timeline with the device table, and the latency curves of the phases.
fn phase_charts(out: &mut dyn Write, result: &RunResult) -> io::Result<()> {
    section(out, "timelines", "Over time", &charts_html(&charts::timelines(result)))?;
    let mut devices = match charts::device_timeline(result) {
        Some(chart) => chart.html(),
        None => "<p class=\"none\">This result has no per-device interval series (a streams result keeps the \
                 busiest device of each step instead, and a network target has no device).</p>"
            .into(),
    };
    devices.push_str(&tables::device_table(result).unwrap_or_default());
    section(out, "devices", "Devices", &devices)?;
    section(out, "latency", "Latency distribution", &charts_html(&charts::latency_curves(result)))
}
