//! The summary of a `cache` result, for the terminal and for Markdown: the plateau table (plateau, MB/s,
//! latency, what it means for serving), the device-cache regions with where that cache ends, then the flags
//! (a rotational device measured beyond what platters do) and notices. The plateau rows are built once here
//! (`plateau_rows`) and drawn by the terminal, Markdown and HTML (`html/cache.rs`) alike. Reads only `results`
//! types, so `streamcap report r.json` prints the same thing again.

use std::io::{self, Write};

use comfy_table::Table;

use super::markdown::cell;
use super::rows::{Rows, num, text};
use super::terminal::{STYLE, write_warnings};
use crate::results::{CacheSummary, Plateau, PlateauKind, RunResult};
use crate::units::{Bytes, format_latency_ns, format_mbps};

/// The plateau's name in the table: the level, its region for the device cache, and "+ load" under load.
pub fn plateau_label(p: &Plateau) -> String {
    let mut label = p.kind.label().to_string();
    if p.kind == PlateauKind::DeviceCache
        && let Some(region) = p.phase.strip_prefix("device cache ")
    {
        label = format!("{label} ({})", region.trim_end_matches(" + load"));
    }
    if p.under_load {
        label.push_str(" + load");
    }
    label
}

/// Latency as the table shows it, each figure named (issue 30: a p50 beside a mean read as the same kind): the
/// mean for the access time (that is the figure), else the median per read.
pub fn latency_words(p: &Plateau) -> String {
    match p.kind {
        PlateauKind::AccessTime => format!("mean {}", format_latency_ns(p.latency_mean_ns)),
        _ => format!("p50 {} per {}", format_latency_ns(p.latency_p50_ns as f64), Bytes(p.block_bytes)),
    }
}

/// The lines above the table: what was read, the load, the stream the bounds are for.
fn settings_line(cache: &CacheSummary) -> String {
    format!(
        "region {} · page-cache region {} · load: {} · bounds for {} Mbit/s streams in {} chunks",
        Bytes(cache.region_bytes),
        Bytes(cache.page_cache_region_bytes),
        cache.load.as_deref().unwrap_or("none"),
        cache.bitrate_bps as f64 / 1e6,
        Bytes(cache.chunk_bytes)
    )
}

/// The device-cache regions in one line: "1 MiB 2100 · 4 MiB 2050 · … MB/s".
fn steps_line(cache: &CacheSummary) -> Option<String> {
    if cache.device_cache_steps.is_empty() {
        return None;
    }
    let steps: Vec<String> = cache
        .device_cache_steps
        .iter()
        .map(|s| format!("{} {}{}", Bytes(s.region_bytes), format_mbps(s.mbps), if s.cached { "*" } else { "" }))
        .collect();
    Some(format!("device cache by region (MB/s, * from a cache): {}", steps.join(" · ")))
}

/// Plateau, MB/s, latency and what it means for serving, one row per plateau: the one table of the plateaus in
/// every format (also check's cache section).
pub fn plateau_rows(plateaus: &[Plateau]) -> Rows {
    let mut rows = Rows::new(&[text("plateau"), num("MB/s"), num("latency"), text("what it means for serving")]);
    for p in plateaus {
        rows.push(vec![plateau_label(p), format_mbps(p.mbps), latency_words(p), p.meaning.clone()]);
    }
    rows
}

/// The plateau table for the terminal.
pub(super) fn plateau_table(plateaus: &[Plateau]) -> Table {
    plateau_rows(plateaus).terminal(STYLE)
}

pub(super) fn write_cache_summary(out: &mut dyn Write, result: &RunResult, cache: &CacheSummary) -> io::Result<()> {
    let fs = result.target.filesystem.as_ref().map_or(String::new(), |f| format!(" ({} on {})", f.fs_type, f.source));
    writeln!(out, "streamcap {} · cache · {}{fs}", result.tool.version, result.target.path)?;
    writeln!(out, "{}", settings_line(cache))?;
    writeln!(out)?;
    writeln!(out, "{}", plateau_table(&cache.plateaus))?;
    if let Some(line) = steps_line(cache) {
        writeln!(out)?;
        writeln!(out, "{line}")?;
    }
    if let Some(end) = &cache.device_cache_end {
        writeln!(out, "  {}", end.words)?;
    }
    if cache.partial {
        writeln!(out)?;
        writeln!(out, "partial: the run stopped before the end; the plateaus above are what it measured")?;
    }
    write_warnings(out, &judged(result, cache))
}

/// The result as its warnings should see it: the page-cache plateau is buffered on purpose (no cache warning),
/// and only the media and access-time plateaus measured alone speak for the media (a fast device cache is what it
/// is, and the same flag under load would only repeat itself), through the flag the summary kept for them.
pub(super) fn judged(result: &RunResult, cache: &CacheSummary) -> RunResult {
    let mut judged = result.clone();
    let flag = |name: &str| {
        cache
            .plateaus
            .iter()
            .find(|p| {
                p.phase == name && !p.under_load && matches!(p.kind, PlateauKind::Media | PlateauKind::AccessTime)
            })
            .and_then(|p| p.implausible.clone())
    };
    for phase in &mut judged.phases {
        if !phase.direct && phase.name.starts_with("page cache") {
            phase.cache_affected = false;
        }
        // Only the flag the plateau kept (a device that speaks for the target) is shown.
        let kept = flag(&phase.name);
        for device in &mut phase.devices {
            if device.implausible != kept {
                device.implausible = None;
            }
        }
    }
    judged
}

/// The Markdown form: the settings, the plateau table, the regions and where the cache ends.
pub fn cache_markdown(out: &mut dyn Write, cache: &CacheSummary) -> io::Result<()> {
    writeln!(out, "{}.", cell(&settings_line(cache)))?;
    writeln!(out)?;
    plateau_rows(&cache.plateaus).markdown(out)?;
    if let Some(line) = steps_line(cache) {
        writeln!(out, "{}", cell(&line))?;
        writeln!(out)?;
    }
    if let Some(end) = &cache.device_cache_end {
        writeln!(out, "{}.", cell(&end.words))?;
        writeln!(out)?;
    }
    for p in cache.plateaus.iter().filter_map(|p| p.implausible.as_ref()) {
        writeln!(out, "- cache beneath: {}", cell(p))?;
    }
    Ok(())
}
