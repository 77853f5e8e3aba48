//! Renders a `PlanningResult` (`streamcap plan`): the ranked table — usable capacity, protection overhead,
//! streams healthy, degraded and rebuilding, file-workload reads/s and the costs — then what limits each of the
//! shown answers, the refused layouts and the model's notes; as a terminal table or as Markdown. Reads only
//! `results` types.

use std::io::{self, Write};

use comfy_table::{CellAlignment, Table};

use crate::results::{LayoutAnswer, PlanningResult};

/// Terminal table or Markdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanningStyle {
    Terminal,
    Markdown,
}

const HEADER: [&str; 13] = [
    "#",
    "pool",
    "layout",
    "usable",
    "overhead",
    "survives",
    "streams",
    "degraded",
    "rebuilding",
    "reads/s",
    "per usable TB",
    "per stream",
    "per 1k reads/s",
];

fn money(value: Option<f64>) -> String {
    match value {
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.2}"),
        None => "-".into(),
    }
}

fn row(a: &LayoutAnswer) -> [String; 13] {
    [
        a.rank.to_string(),
        a.pool.clone(),
        a.layout.clone(),
        format!("{:.1} TB", a.usable_bytes as f64 / 1e12),
        format!("{:.0} %", a.overhead_pct),
        format!("{} drive{}", a.tolerates, if a.tolerates == 1 { "" } else { "s" }),
        a.healthy.streams.to_string(),
        if a.degraded.unavailable_pct > 0.0 {
            format!("{} ({:.0} % lost)", a.degraded.streams, a.degraded.unavailable_pct)
        } else {
            a.degraded.streams.to_string()
        },
        a.rebuilding.streams.to_string(),
        format!("{:.0}", a.healthy.reads_per_s),
        money(a.cost_per_usable_tb),
        money(a.healthy.cost_per_stream),
        money(a.healthy.cost_per_1000_reads),
    ]
}

fn workload_line(result: &PlanningResult) -> String {
    let w = &result.workload;
    let total: u32 = w.mix.iter().map(|f| f.weight).sum::<u32>().max(1);
    let mix: Vec<String> = w
        .mix
        .iter()
        .map(|f| format!("{} % {} ({} Mbit/s)", f.weight * 100 / total, f.name, f.bitrate_bps / 1_000_000))
        .collect();
    let ingest = if w.ingest_mbps > 0.0 {
        format!(" · ingest {:.0} MB/s over {} writer(s)", w.ingest_mbps, w.ingest_writers)
    } else {
        String::new()
    };
    let f = &w.file;
    format!(
        "streams: {} · chunk {} KiB{ingest} · file workload: {:.0} % reads of {} KiB, {} threads, {}",
        mix.join(", "),
        w.chunk_bytes / 1024,
        f.read_pct,
        f.transfer_bytes / 1024,
        f.threads,
        f.fileio
    )
}

/// Writes the plan: the first `top` answers (all with 0).
pub fn write_planning(
    out: &mut dyn Write,
    result: &PlanningResult,
    top: usize,
    style: PlanningStyle,
) -> io::Result<()> {
    let shown = if top == 0 { result.answers.len() } else { top.min(result.answers.len()) };
    let currency = result.currency.as_deref().unwrap_or("no prices");
    let heading = format!("streamcap {} · plan · ranked by {} · costs in {currency}", result.tool.version, result.goal);
    match style {
        PlanningStyle::Terminal => {
            writeln!(out, "{heading}\n{}", workload_line(result))?;
            let mut table = Table::new();
            table.load_style(comfy_table::presets::NOTHING);
            table.set_header(HEADER);
            for a in &result.answers[..shown] {
                table.add_row(row(a));
            }
            for i in [0, 3, 4, 6, 7, 8, 9, 10, 11, 12] {
                if let Some(column) = table.column_mut(i) {
                    column.set_cell_alignment(CellAlignment::Right);
                }
            }
            writeln!(out, "{table}")?;
        }
        PlanningStyle::Markdown => {
            writeln!(out, "## {heading}\n\n{}\n", workload_line(result))?;
            writeln!(out, "| {} |", HEADER.join(" | "))?;
            writeln!(out, "|{}", "---|".repeat(HEADER.len()))?;
            for a in &result.answers[..shown] {
                writeln!(out, "| {} |", row(a).join(" | "))?;
            }
            writeln!(out)?;
        }
    }
    if shown < result.answers.len() {
        writeln!(out, "{shown} of {} answers shown (--top 0 shows all; --json keeps all).", result.answers.len())?;
    }
    write_details(out, result, shown, style)
}

fn write_details(out: &mut dyn Write, result: &PlanningResult, shown: usize, style: PlanningStyle) -> io::Result<()> {
    let bullet = if style == PlanningStyle::Markdown { "- " } else { "  " };
    writeln!(out, "\nWhat limits each answer:")?;
    for a in &result.answers[..shown] {
        let rebuild =
            a.rebuild.as_ref().map_or(String::new(), |r| format!("; a rebuild reads {} for {:.1} h", r.reads, r.hours));
        writeln!(out, "{bullet}{}. {} {}: {}{rebuild}", a.rank, a.pool, a.layout, a.healthy.streams_limit)?;
        for f in a.healthy.per_format.iter().filter(|_| a.healthy.per_format.len() > 1) {
            writeln!(out, "{bullet}   {} alone: {} streams ({})", f.name, f.streams, f.limit)?;
        }
        writeln!(
            out,
            "{bullet}   sequential: {:.0} MB/s read by one reader, {:.0} by many, {:.0} written by one writer; file \
             workload {:.0} reads/s + {:.0} writes/s ({})",
            a.healthy.seq_read_one_mbps,
            a.healthy.seq_read_many_mbps,
            a.healthy.seq_write_mbps,
            a.healthy.reads_per_s,
            a.healthy.writes_per_s,
            a.healthy.file_limit
        )?;
    }
    if !result.refused.is_empty() {
        writeln!(out, "\nNot possible:")?;
        for r in &result.refused {
            writeln!(out, "{bullet}{} {}: {}", r.pool, r.layout, r.why)?;
        }
    }
    writeln!(out, "\nNotes:")?;
    for note in &result.notes {
        writeln!(out, "{bullet}{note}")?;
    }
    Ok(())
}
