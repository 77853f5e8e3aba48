//! The tables and fact lists of the HTML report: phases, devices, stream steps, the check's headline figures and
//! verdict (each drawn from its subject's row model, `report::rows`, so it reads as in the terminal and
//! Markdown), host and device facts, notices and cache flags, and the full effective configuration. Every piece
//! of text from the result is escaped here (`table`, which `Rows::html` draws with).

use std::fmt::Write as _;

use super::svg::esc;
use crate::results::{CheckSummary, RunResult, RunStatus, StreamsResult};

/// A table; `right` marks numeric columns.
pub fn table(header: &[&str], right: &[bool], rows: &[Vec<String>]) -> String {
    let align = |i: usize| if right.get(i).copied().unwrap_or(false) { " class=\"num\"" } else { "" };
    let mut out = String::from("<table><thead><tr>");
    for (i, h) in header.iter().enumerate() {
        let _ = write!(out, "<th{}>{}</th>", align(i), esc(h));
    }
    out.push_str("</tr></thead><tbody>");
    for row in rows {
        out.push_str("<tr>");
        for (i, c) in row.iter().enumerate() {
            let _ = write!(out, "<td{}>{}</td>", align(i), esc(c));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>\n");
    out
}

/// Every column of the phase table: the page has room for them all.
pub fn phase_table(result: &RunResult) -> String {
    crate::report::phases::phase_rows(&result.phases, true).html()
}

/// What each device beneath the target did during each phase.
pub fn device_table(result: &RunResult) -> Option<String> {
    crate::report::phases::device_rows(&result.phases).map(|rows| rows.html())
}

/// The steps of a streams run, every column.
pub fn steps_table(streams: &StreamsResult) -> String {
    crate::report::streams::step_rows(streams).html()
}

/// The check's headline figures.
pub fn check_figures(check: &CheckSummary) -> String {
    crate::report::check::figure_rows(check).html()
}

/// The check's verdict, one row per format.
pub fn verdict_table(check: &CheckSummary) -> String {
    crate::report::check::verdict_rows(check).html()
}

/// Host, filesystem and every device beneath the target.
pub fn host_facts(result: &RunResult) -> String {
    let h = &result.host;
    let mut rows = vec![
        vec!["host".into(), h.hostname.clone()],
        vec!["CPU".into(), format!("{} × {}", h.cpu_count, h.cpu_model)],
        vec!["RAM".into(), h.ram.to_string()],
        vec!["system".into(), format!("{} · Linux {}", h.os, h.kernel)],
        vec!["target".into(), format!("{} ({})", result.target.path, result.target.kind)],
    ];
    if let Some(fs) = &result.target.filesystem {
        let at = format!(
            "{} on {} at {} · {} free of {} · {}",
            fs.fs_type,
            fs.source,
            fs.mount_point.display(),
            fs.free,
            fs.total,
            fs.options
        );
        rows.push(vec!["filesystem".into(), at]);
    }
    if let Some(pool) = &result.target.pool {
        rows.push(vec!["pool".into(), crate::report::inspect::pool_words(pool)]);
    }
    if let Some(why) = &result.target.memory_backed {
        rows.push(vec!["memory-backed".into(), why.clone()]);
    }
    for line in crate::results::throttle_words(&result.target.throttles) {
        rows.push(vec!["limit".into(), line]);
    }
    let mut out = table(&["fact", "value"], &[false, false], &rows);
    let devices = crate::report::inspect::device_fact_rows(&result.target);
    if !devices.is_empty() {
        out.push_str(&devices.html());
    }
    out
}

/// Notices, cache flags, errors and failures, in words; empty when there is nothing to say.
pub fn notices(result: &RunResult) -> String {
    let mut items: Vec<(&str, String)> = result.notices.iter().map(|n| ("note", n.clone())).collect();
    for p in &result.phases {
        if p.cache_affected {
            let why = if p.direct {
                "the target keeps its data in RAM"
            } else {
                "buffered I/O on a data set under twice the RAM"
            };
            items.push((
                "cache",
                format!("'{}' may describe memory rather than storage: {why}; treat it as an upper bound", p.name),
            ));
        }
        // One item per phase for a whole pool, as the terminal says it.
        if let Some(line) = crate::report::terminal::cache_beneath(p) {
            items.push(("implausible", line.trim_start_matches("cache beneath: ").to_string()));
        }
        if let Some(steady) = &p.steady_state {
            items.push(("steady state", format!("'{}': {}", p.name, super::super::steady::steady_words(steady))));
        }
        if p.errors.count > 0 {
            items.push(("errors", format!("'{}' had {} failed operations", p.name, p.errors.count)));
            for e in p.errors.records.iter().take(5) {
                items.push((
                    "errors",
                    format!("{} {} at offset {} ({} bytes): {}", e.op, e.path, e.offset, e.len, e.message),
                ));
            }
        }
        if let Some(f) = &p.failure {
            items.push(("failed", format!("'{}': {f}", p.name)));
        }
    }
    if result.status == RunStatus::Interrupted {
        items.push(("interrupted", "the figures cover the part that ran".into()));
    }
    let mut out = String::new();
    if !items.is_empty() {
        out.push_str("<ul class=\"notices\">");
        for (kind, text) in items {
            let _ = write!(out, "<li class=\"{kind}\"><b>{kind}:</b> {}</li>", esc(&text));
        }
        out.push_str("</ul>\n");
    }
    out
}

/// The command line and the full effective configuration.
pub fn configuration(result: &RunResult) -> String {
    let config = serde_json::to_string_pretty(&result.config).unwrap_or_default();
    format!(
        "<p class=\"cmd\"><code>{}</code></p><details><summary>effective configuration (every default filled in)</summary><pre>{}</pre></details>\n",
        esc(&result.command.join(" ")),
        esc(&config)
    )
}
