//! The terminal summary of a `check` result, in sections: host and devices; the headline figures (sequential
//! MB/s, 4 KiB random reads at queue depth 1 and 32 with p99 latency, small-file rates); the cache; which device
//! did the work; the verdict table (format | bitrate | streams | range | plan for | limited by | sequential
//! ceiling). The headline figures and the verdict are row models built here (`figure_rows`, `verdict_rows`) that
//! the Markdown and HTML reports draw too, so the one capacity and every label read the same everywhere. Reads
//! only `results` types, so `streamcap report r.json` prints the same thing again.

use std::io::{self, Write};

use super::members::{member_notes, member_table, summed};
use super::rows::{Column, Rows, num, text};
use super::terminal::{STYLE, write_warnings};
use crate::results::{CheckSummary, FormatVerdict, PlateauKind, RunResult, throttle_words};
use crate::units::{Bytes, format_latency_ns, format_mbps, format_rate};

pub(super) fn write_check_summary(out: &mut dyn Write, result: &RunResult, check: &CheckSummary) -> io::Result<()> {
    writeln!(
        out,
        "streamcap {} · check ({}, {:.0} s) · {}",
        result.tool.version, check.profile, check.elapsed_s, result.target.path
    )?;
    write_host(out, result, check)?;
    write_figures(out, check)?;
    write_cache(out, check)?;
    write_members(out, result)?;
    write_verdict(out, check)?;
    super::check_household::write_household(out, check)?;
    super::during::write_breaks(out, check)?;
    super::check_hint::write_planner_hint(out, check)?;
    if let Some(cluster) = &result.cluster {
        writeln!(out)?;
        super::cluster::write_cluster_summary(out, cluster)?;
        super::cluster::write_client_steps(out, cluster)?;
    }
    if check.partial {
        writeln!(out)?;
        writeln!(out, "partial: the check stopped before the end; the sections above are what it measured")?;
    }
    write_warnings(out, &measured(result))
}

/// The phases that measured something: a phase that only built the small-file tree measured no operations, so
/// its cache flag and its device activity say nothing. The page-cache plateau reads from RAM on purpose, so its
/// cache flag is dropped too; and a cache beneath the OS is said once per device, by the first phase that showed
/// it (as `streams` says it), not once per phase.
fn measured(result: &RunResult) -> RunResult {
    let mut measured = result.clone();
    measured.phases.retain(|p| {
        let ops = p.read.as_ref().map_or(0, |r| r.ops) + p.write.as_ref().map_or(0, |w| w.ops);
        let file_ops = p.file_ops.as_ref().map_or(0, |f| f.requested.ops);
        ops + file_ops + p.errors.count > 0 || p.failure.is_some()
    });
    let plateaus = result.check.as_ref().and_then(|c| c.cache.as_ref()).map_or(&[][..], |c| &c.plateaus[..]);
    for phase in &mut measured.phases {
        if plateaus.iter().any(|p| p.kind == PlateauKind::PageCache && p.phase == phase.name) {
            phase.cache_affected = false;
        }
    }
    let mut said: Vec<String> = Vec::new();
    for device in measured.phases.iter_mut().flat_map(|p| &mut p.devices) {
        if device.implausible.is_some() && said.contains(&device.activity.name) {
            device.implausible = None;
        } else if device.implausible.is_some() {
            said.push(device.activity.name.clone());
        }
    }
    measured
}

/// Host, filesystem and devices, and the data set.
fn write_host(out: &mut dyn Write, result: &RunResult, check: &CheckSummary) -> io::Result<()> {
    writeln!(out)?;
    writeln!(out, "Host & devices")?;
    let h = &result.host;
    writeln!(out, "  {} · {} × {} · {} RAM · Linux {}", h.hostname, h.cpu_count, h.cpu_model, h.ram, h.kernel)?;
    if let Some(fs) = &result.target.filesystem {
        writeln!(
            out,
            "  {} on {} at {} · {} free of {}",
            fs.fs_type,
            fs.source,
            fs.mount_point.display(),
            fs.free,
            fs.total
        )?;
    }
    for d in &result.target.devices {
        writeln!(
            out,
            "  {} ({}): {} · {} · {} · scheduler {}",
            d.name,
            d.role,
            d.model.as_deref().unwrap_or("unknown model"),
            d.size,
            if d.rotational { "rotational" } else { "non-rotational" },
            d.scheduler.as_deref().unwrap_or("none")
        )?;
    }
    for line in throttle_words(&result.target.throttles) {
        writeln!(out, "  limit: {line}")?;
    }
    writeln!(out, "  data set {} · direct I/O where the filesystem allows it", Bytes(check.data_set_bytes))?;
    if let Some(library) = &check.library {
        writeln!(out, "  media library: {} · {}", library.headline(), library.popularity)?;
        writeln!(out, "    why this size: {}", library.why)?;
        if let Some(kept) = &library.kept {
            writeln!(out, "    kept: {}", kept.words)?;
        }
    }
    Ok(())
}

/// Sequential MB/s, random reads per queue depth, small-file rates: the headline figures.
fn write_figures(out: &mut dyn Write, check: &CheckSummary) -> io::Result<()> {
    let figures = figure_rows(check);
    if !figures.is_empty() {
        writeln!(out)?;
        writeln!(out, "Headline figures")?;
        writeln!(out, "{}", figures.terminal(STYLE))?;
    }
    Ok(())
}

/// The headline figures, one row per measurement with its result, in words a home user reads ("queue depth",
/// not "QD"): the one table of them in every format.
pub(super) fn figure_rows(check: &CheckSummary) -> Rows {
    let mut rows = Rows::new(&[text("measurement"), num("result")]);
    if let Some(s) = &check.sequential {
        rows.push(vec!["sequential 1 MiB writes, queue depth 8".into(), format!("{} MB/s", format_mbps(s.write_mbps))]);
        rows.push(vec!["sequential 1 MiB reads, queue depth 8".into(), format!("{} MB/s", format_mbps(s.read_mbps))]);
    }
    for r in &check.random_reads {
        let p99 = format_latency_ns(r.p99_ns as f64);
        rows.push(vec![
            format!("random 4 KiB reads, queue depth {}", r.queue_depth),
            format!("{} IOPS · p99 {p99}", format_rate(r.iops)),
        ]);
    }
    if let Some(f) = &check.small_files {
        let rates = format!(
            "create {}/s · stat {}/s · read {}/s",
            format_rate(f.create_per_s),
            format_rate(f.stat_per_s),
            format_rate(f.read_per_s)
        );
        let io = if f.direct { "direct I/O" } else { "buffered" };
        rows.push(vec![format!("small files: {} files of {}, {io}", f.files, Bytes(f.file_bytes)), rates]);
    }
    rows
}

/// Page cache versus device and the access time, as `streamcap cache` shows them, and the flag.
fn write_cache(out: &mut dyn Write, check: &CheckSummary) -> io::Result<()> {
    let Some(cache) = &check.cache else { return Ok(()) };
    writeln!(out)?;
    writeln!(
        out,
        "Cache versus device (bounds for {} Mbit/s streams in {} chunks)",
        cache.bitrate_bps as f64 / 1e6,
        Bytes(cache.chunk_bytes)
    )?;
    writeln!(out, "{}", super::cache::plateau_table(&cache.plateaus))?;
    if cache.implausible.is_some() {
        writeln!(
            out,
            "  the device's figures are beyond what it says it is: a cache beneath the OS served them (see 'cache \
             beneath' below)"
        )?;
    }
    Ok(())
}

/// Every device beneath the target over the measured phases together.
fn write_members(out: &mut dyn Write, result: &RunResult) -> io::Result<()> {
    let members = summed(&measured(result).phases);
    let Some(table) = member_table("", &[(String::new(), members.clone())]) else { return Ok(()) };
    writeln!(out)?;
    writeln!(out, "Which device did the work (all phases; share: of the bytes its layer moved)")?;
    writeln!(out, "{table}")?;
    for line in member_notes(&[(String::new(), members)]) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// The verdict table and each format's answer in words.
fn write_verdict(out: &mut dyn Write, check: &CheckSummary) -> io::Result<()> {
    if check.verdict.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "Verdict: {}", check.verdict_title())?;
    writeln!(out, "{}", verdict_rows(check).terminal(STYLE))?;
    for line in verdict_legend(check) {
        writeln!(out, "{line}")?;
    }
    for v in &check.verdict {
        writeln!(out, "  {}", v.capacity.words)?;
    }
    if let Some(words) = check.cache.as_ref().and_then(|c| c.served_words.as_ref()) {
        writeln!(out, "served from {words}")?;
    }
    Ok(())
}

/// The verdict table's columns, the same in every report.
const VERDICT_COLUMNS: [Column; 7] = [
    text("format"),
    num("bitrate"),
    num("streams"),
    num("range"),
    num("plan for"),
    text("limited by"),
    num("sequential ceiling (a bound)"),
];

/// The verdict table, one row per format: the one verdict of every report.
pub(super) fn verdict_rows(check: &CheckSummary) -> Rows {
    let mut rows = Rows::new(&VERDICT_COLUMNS);
    for v in &check.verdict {
        rows.push(verdict_cells(v).to_vec());
    }
    rows
}

/// One verdict row: the one capacity, its range over the runs
/// of the edge, the comfortable count, the limit, and the sequential ceiling as the bound it is.
pub(super) fn verdict_cells(v: &FormatVerdict) -> [String; 7] {
    let a = &v.capacity;
    let measured = a.measured();
    let streams = match (measured, a.at_limit) {
        (false, _) => "not measured".to_string(),
        (true, true) => format!("≥ {}", v.streams),
        (true, false) => v.streams.to_string(),
    };
    let range = match a.range() {
        _ if !measured => "—".to_string(),
        None if a.derived_failing.is_some() => "one step".to_string(),
        Some((low, high)) if low == high => format!("{low} ({} runs agree)", a.edges.len()),
        Some((low, high)) => format!("{low}–{high} ({} runs)", a.edges.len()),
        None if a.edges.len() == 1 => "one run".to_string(),
        None => "—".to_string(),
    };
    let plan_for = if measured && !a.edges.is_empty() { a.plan_for.to_string() } else { "—".to_string() };
    let ceiling = match (v.bandwidth_ceiling, v.headroom_pct) {
        (0, _) => "—".to_string(),
        // Results from before the flag kept a negative headroom instead.
        (c, pct) if v.beyond_ceiling || pct.is_some_and(|p| p < 0.0) => format!("{c} · exceeded: cache-served?"),
        (c, _) if v.ceiling_understated => format!("{c} · exceeded, device-served"),
        (c, Some(pct)) if pct < 0.5 => format!("{c} · at the ceiling"),
        (c, Some(pct)) => format!("{c} · {pct:.0} % unused"),
        (c, None) => c.to_string(),
    };
    [
        v.label.clone(),
        format!("{} Mbit/s", v.bitrate_bps as f64 / 1e6),
        streams,
        range,
        plan_for,
        v.limited_by.clone(),
        ceiling,
    ]
}

/// What the columns mean, under the table (the margin rule and the ceiling's nature).
pub(super) fn verdict_legend(check: &CheckSummary) -> Vec<String> {
    let read = check.sequential.map_or(String::new(), |s| format!(" ({} MB/s)", format_mbps(s.read_mbps)));
    let mut legend: Vec<String> = check.player.iter().map(|p| format!("player: {}", p.described)).collect();
    legend.extend([
        "streams: the capacity, the median of the runs of the edge (each run: the largest count that passed \
         beside the next that failed); range: the lowest and highest run"
            .to_string(),
        format!(
            "plan for: {:.0} % below the capacity, or the lowest run if lower: a healthy margin for what a short \
             check does not see (library scans, recordings, a busier evening)",
            ::streams::capacity::MARGIN * 100.0
        ),
        format!(
            "sequential ceiling: a bound, not a capacity: streams the sequential reads{read} would carry at 100 %; \
             a capacity beyond it was served by a cache"
        ),
    ]);
    if check.verdict.iter().any(|v| v.ceiling_understated) {
        legend.push(
            "device-served: the pool's members read every byte the viewers received at that capacity, so no cache \
             served them: the sequential reads understated the disks for this library (the sequential phase's small \
             data set can lie on fewer members than the library's titles)"
                .to_string(),
        );
    }
    if let Some(v) = check.verdict.iter().find(|v| v.capacity.derived_failing.is_some()) {
        legend.push(format!(
            "one step (--quick): the count shown passed, run once (the earlier edge scaled, or the step 10 % above \
             it); the count that fails is derived from {}'s edge, scaled by bitrate, and not measured",
            v.capacity.derived_from.as_deref().unwrap_or("an earlier format")
        ));
    }
    legend
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 10: check says that a cache beneath the OS served a device's figures once per device, as streams
    /// does, not once for every phase that measured it.
    #[test]
    fn the_cache_beneath_line_is_printed_once_per_device() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/check-v1.json");
        let mut result = crate::results::read_result(&path).unwrap();
        for device in result.phases.iter_mut().flat_map(|p| &mut p.devices) {
            device.implausible = Some(format!("{} says it is rotational, yet …", device.activity.name));
        }
        let check = result.check.clone().unwrap();
        let mut out = Vec::new();
        write_check_summary(&mut out, &result, &check).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("cache beneath:")).collect();
        let flagged = result.phases.iter().filter(|p| !p.devices.is_empty()).count();
        let devices: std::collections::HashSet<&str> =
            result.phases.iter().flat_map(|p| &p.devices).map(|d| d.activity.name.as_str()).collect();
        assert!(flagged > devices.len(), "the fixture flags one device in several phases");
        assert_eq!(lines.len(), devices.len(), "{text}");
        assert!(lines[0].contains(": vda says it is rotational"), "{lines:?}");
    }
}
