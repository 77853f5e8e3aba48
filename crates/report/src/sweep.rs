//! The summary of a `sweep` result, for the terminal and for Markdown: one table of every size × record × mode
//! (MB/s of each pass, the writes without and with their closing fsync, the first write's fsync time in its own
//! column), then the cliff in words (or the fall the RAM cannot explain, and why), why the sizes stop
//! where they do, and the warnings (errors; not the cache flag of the buffered passes, which is the point of
//! the sweep and is what the cliff line explains; a cache beneath the OS once per device). Reads only `results`
//! types, so `streamcap report r.json` prints the same thing again. The table's rows are built once here
//! (`sweep_rows`); the HTML page (`html/sweep.rs`) draws the same rows and lines, with the curves.

use std::io::{self, Write};

use super::markdown::cell;
use super::rows::{Column, Rows, num, text};
use super::terminal::{STYLE, write_warnings};
use crate::results::{RunResult, SweepPoint, SweepSummary};
use crate::units::{Bytes, format_mbps};

pub(super) fn write_sweep_summary(out: &mut dyn Write, result: &RunResult, sweep: &SweepSummary) -> io::Result<()> {
    let fs = result.target.filesystem.as_ref().map_or(String::new(), |f| format!(" ({} on {})", f.fs_type, f.source));
    writeln!(out, "streamcap {} · sweep · {}{fs}", result.tool.version, result.target.path)?;
    writeln!(out, "{}", settings_line(sweep))?;
    writeln!(out)?;
    writeln!(out, "{}", sweep_rows(sweep).terminal(STYLE))?;
    writeln!(out)?;
    for line in closing_lines(sweep) {
        writeln!(out, "{line}")?;
    }
    write_warnings(out, &judged(result))
}

/// The columns of the sweep table, in every format: each write without its closing fsync (iozone's write) and
/// with it (`+flush`, iozone's `-e`), and the fsync's time (`flush`).
const COLUMNS: [Column; 11] = [
    text("size"),
    text("record"),
    text("I/O"),
    num("write"),
    num("+flush"),
    num("flush"),
    num("re-write"),
    num("+flush"),
    num("read"),
    num("re-read"),
    num("random read"),
];

/// The sweep table, one row per size × record × mode: the one table of the sweep in every format.
pub(super) fn sweep_rows(sweep: &SweepSummary) -> Rows {
    let mut rows = Rows::new(&COLUMNS);
    for p in &sweep.points {
        rows.push(row(p));
    }
    rows
}

/// The lines under the table: the cliff in words, why the sizes stop where they do, and a partial sweep.
pub(super) fn closing_lines(sweep: &SweepSummary) -> Vec<String> {
    let mut lines = vec![sweep.words.clone()];
    if let Some(bound) = &sweep.bound {
        // The budget's sentence carries its own hint.
        let hint = if sweep.budget_stopped {
            ""
        } else {
            "; run with --memory SIZE to see the cliff within the space you have"
        };
        lines.push(format!("note: {bound}{hint}"));
    }
    if sweep.partial {
        lines.push("partial: the sweep stopped before the end; the rows above are what it measured".into());
    }
    lines
}

/// The line above the table: the effective RAM and the cgroup it came from.
pub(super) fn settings_line(sweep: &SweepSummary) -> String {
    let limit = sweep.memory_limit_bytes.map_or(String::new(), |m| format!(" · inside a {} memory cgroup", Bytes(m)));
    format!(
        "effective RAM {}{limit} · MB/s per pass; write and re-write without their closing fsync (iozone's \
         write), +flush with it (iozone -e)",
        Bytes(sweep.effective_ram_bytes)
    )
}

/// The Markdown form: the settings, the table of every size × record × mode, the cliff and the notes.
pub fn sweep_markdown(out: &mut dyn Write, sweep: &SweepSummary) -> io::Result<()> {
    writeln!(out, "{}.", cell(&settings_line(sweep)))?;
    writeln!(out)?;
    sweep_rows(sweep).markdown(out)?;
    for line in closing_lines(sweep) {
        writeln!(out, "{}", cell(&line))?;
        writeln!(out)?;
    }
    Ok(())
}

/// The result as its warnings should see it: buffered passes are cache-affected on purpose (no flag), and a
/// device that looks like a cache beneath the OS is said once, by the first direct pass that showed it.
pub(super) fn judged(result: &RunResult) -> RunResult {
    let mut judged = result.clone();
    let mut said: Vec<String> = Vec::new();
    for phase in &mut judged.phases {
        if !phase.direct {
            phase.cache_affected = false;
        }
        for device in &mut phase.devices {
            let name = device.activity.name.clone();
            if !phase.direct || said.contains(&name) {
                device.implausible = None;
            } else if device.implausible.is_some() {
                said.push(name);
            }
        }
    }
    judged
}

fn row(p: &SweepPoint) -> Vec<String> {
    let mbps = |v: Option<f64>| v.map_or_else(|| "-".to_string(), format_mbps);
    let flush = p.write_flush_s.map_or_else(|| "-".to_string(), |s| format!("{:.0} ms", s * 1e3));
    vec![
        Bytes(p.size_bytes).to_string(),
        Bytes(p.record_bytes).to_string(),
        if p.direct { "direct" } else { "buffered" }.to_string(),
        mbps(p.write_no_flush_mbps),
        mbps(p.write_mbps),
        flush,
        mbps(p.rewrite_no_flush_mbps),
        mbps(p.rewrite_mbps),
        mbps(p.read_mbps),
        mbps(p.reread_mbps),
        mbps(p.random_read_mbps),
    ]
}
