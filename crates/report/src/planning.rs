//! Renders a `PlanningResult` (`streamcap plan`): the ranked table — usable capacity, protection overhead,
//! streams healthy, degraded and rebuilding, file-workload reads/s and the costs — then what limits each of the
//! shown answers, the refused layouts and the model's notes; as a terminal table or as Markdown (`Ranked` through
//! `Summary` or `Markdown`), the table's rows built once for both. Reads only `results` types.

use std::io::{self, Write};

use super::rows::{Column, Rows, num, text};
use super::{Markdown, Renderer, Summary};
use crate::results::{LayoutAnswer, PlanningResult};

/// A plan as a report shows it: its first `top` answers (0: all); the JSON keeps them all.
pub struct Ranked<'a> {
    /// The planner's whole answer.
    pub result: &'a PlanningResult,
    /// How many answers the table shows, best first; 0 shows all.
    pub top: usize,
}

/// The ranked table's columns, the same in the terminal and in Markdown.
const COLUMNS: [Column; 13] = [
    num("#"),
    text("pool"),
    text("layout"),
    num("usable"),
    num("overhead"),
    text("survives"),
    num("streams"),
    num("degraded"),
    num("rebuilding"),
    num("reads/s"),
    num("per usable TB"),
    num("per stream"),
    num("per 1k reads/s"),
];

fn money(value: Option<f64>) -> String {
    match value {
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.2}"),
        None => "-".into(),
    }
}

fn row(a: &LayoutAnswer) -> Vec<String> {
    vec![
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

/// The ranked answers shown, built once for both formats.
fn answer_rows(answers: &[LayoutAnswer]) -> Rows {
    let mut rows = Rows::new(&COLUMNS);
    for a in answers {
        rows.push(row(a));
    }
    rows
}

impl Ranked<'_> {
    fn shown(&self) -> usize {
        let all = self.result.answers.len();
        if self.top == 0 { all } else { self.top.min(all) }
    }

    fn heading(&self) -> String {
        let r = self.result;
        let currency = r.currency.as_deref().unwrap_or("no prices");
        format!("streamcap {} · plan · ranked by {} · costs in {currency}", r.tool.version, r.goal)
    }

    /// "3 of 12 answers shown …" when some are not.
    fn more(&self, out: &mut dyn Write) -> io::Result<()> {
        let (shown, all) = (self.shown(), self.result.answers.len());
        if shown < all {
            writeln!(out, "{shown} of {all} answers shown (--top 0 shows all; --json keeps all).")?;
        }
        Ok(())
    }
}

/// The plan as a terminal table, then what limits each answer, the refused layouts and the notes.
impl Renderer<Ranked<'_>> for Summary {
    fn render(&self, plan: &Ranked<'_>, out: &mut dyn Write) -> io::Result<()> {
        let shown = plan.shown();
        writeln!(out, "{}\n{}", plan.heading(), workload_line(plan.result))?;
        let table = answer_rows(&plan.result.answers[..shown]).terminal(comfy_table::presets::NOTHING);
        writeln!(out, "{table}")?;
        plan.more(out)?;
        write_details(out, plan.result, shown, "  ")
    }
}

/// The plan as Markdown: the same table and details, as a heading, a table and lists.
impl Renderer<Ranked<'_>> for Markdown {
    fn render(&self, plan: &Ranked<'_>, out: &mut dyn Write) -> io::Result<()> {
        let shown = plan.shown();
        writeln!(out, "## {}\n\n{}\n", plan.heading(), workload_line(plan.result))?;
        answer_rows(&plan.result.answers[..shown]).markdown(out)?;
        plan.more(out)?;
        write_details(out, plan.result, shown, "- ")
    }
}

fn write_details(out: &mut dyn Write, result: &PlanningResult, shown: usize, bullet: &str) -> io::Result<()> {
    writeln!(out, "\nWhat limits each answer:")?;
    for a in &result.answers[..shown] {
        let rebuild =
            a.rebuild.as_ref().map_or(String::new(), |r| format!("; a rebuild reads {} for {:.1} h", r.reads, r.hours));
        writeln!(out, "{bullet}{}. {} {}: {}{rebuild}", a.rank, a.pool, a.layout, a.healthy.streams_limit)?;
        for f in a.healthy.per_format.iter().filter(|_| a.healthy.per_format.len() > 1) {
            writeln!(out, "{bullet}   {} alone: {} streams ({})", f.name, f.streams, f.limit)?;
        }
        let h = &a.healthy;
        // Many readers interleave on each member, so every request of theirs is positioned anew; one reader
        // streams. Say so where it makes many slower than one.
        let why = if h.seq_read_many_mbps < h.seq_read_one_mbps * 0.98 {
            " (many readers' requests interleave, each positioned anew)"
        } else {
            ""
        };
        let file = match (h.reads_per_s > 0.0, h.writes_per_s > 0.0) {
            (true, true) => format!("{:.0} reads/s + {:.0} writes/s", h.reads_per_s, h.writes_per_s),
            (false, true) => format!("{:.0} writes/s", h.writes_per_s),
            _ => format!("{:.0} reads/s", h.reads_per_s),
        };
        writeln!(
            out,
            "{bullet}   sequential: {:.0} MB/s read by one reader, {:.0} by many{why}, {:.0} written by one writer; \
             file workload {file} ({})",
            h.seq_read_one_mbps, h.seq_read_many_mbps, h.seq_write_mbps, h.file_limit
        )?;
    }
    if !result.refused.is_empty() {
        writeln!(out, "\nNot possible:")?;
        for r in &result.refused {
            writeln!(out, "{bullet}{} {}: {}", r.pool, r.layout, r.why)?;
        }
    }
    write_measured(out, result, bullet)?;
    writeln!(out, "\nNotes:")?;
    for note in &result.notes {
        writeln!(out, "{bullet}{note}")?;
    }
    Ok(())
}

/// `plan --result`: each measured pool's figures and what each costs, beside the model's answers above.
fn write_measured(out: &mut dyn Write, result: &PlanningResult, bullet: &str) -> io::Result<()> {
    if result.measured.is_empty() {
        return Ok(());
    }
    let currency = result.currency.as_deref().unwrap_or("");
    writeln!(out, "\nMeasured (--result):")?;
    for m in &result.measured {
        let pool = m.pool.as_deref().map_or(String::new(), |p| format!(", {p}"));
        let usable = m.usable_bytes.map_or(String::new(), |u| format!(", {:.2} TB usable", u as f64 / 1e12));
        writeln!(out, "{bullet}{} ({}{pool}{usable}):", m.name, m.target)?;
        let figure = |v: Option<f64>, unit: &str, cost: Option<f64>, per: &str| match v {
            Some(v) => {
                let cost = cost.map_or(String::new(), |c| format!(" ({c:.2} {currency} {per})"));
                format!("{v:.0} {unit}{cost}")
            }
            None => format!("no {unit} measured"),
        };
        writeln!(
            out,
            "{bullet}   {}; {}; sequential {} read, {} written; {}",
            figure(m.reads_per_s, "reads/s", m.cost_per_1000_reads, "per 1,000 reads/s"),
            figure(m.streams.map(f64::from), "streams", m.cost_per_stream, "per stream"),
            m.seq_read_mbps.map_or("—".into(), |v| format!("{v:.0} MB/s")),
            m.seq_write_mbps.map_or("—".into(), |v| format!("{v:.0} MB/s")),
            m.cost_per_usable_tb
                .map_or("no price or capacity: no cost per TB".into(), |c| format!("{c:.2} {currency} per usable TB")),
        )?;
        for why in &m.left_out {
            writeln!(out, "{bullet}   left out: {why}")?;
        }
    }
    Ok(())
}
