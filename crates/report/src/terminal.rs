//! The terminal summary of a `RunResult`: one table of the numbers a person needs (IOPS, MB/s, latency
//! percentiles, CPU per operation), one of what each device beneath the target did (every pool member, with
//! its share of its layer's bytes), then warnings in words. Under the first table, the queue depth a latency
//! target's search found (`latency_target`). Both tables are the row models of `phases`, drawn here with the
//! columns a terminal has room for. Reads only the result, so a saved JSON renders exactly like a live run (`streamcap report r.json`).

use std::io::{self, Write};

use comfy_table::{LineStyle, TableStyle};

use super::Renderer;

use crate::results::Profile::Single;
use crate::results::{RunResult, RunStatus};
use crate::units::Bytes;

/// A rule under the header and nothing else: the figures are the point, not the grid.
pub(super) const STYLE: TableStyle = TableStyle::new().header_separator(LineStyle::none().fill('─').junction('─'));

/// The terminal summary of a run's phases (what `Summary` shows for a result that holds nothing else; `run`
/// shows it even when a job's stream phase left a streams section).
pub struct RunSummary;

impl Renderer for RunSummary {
    fn render(&self, result: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        write_run(out, result)
    }
}

fn write_run(out: &mut dyn Write, result: &RunResult) -> io::Result<()> {
    let fs = result.target.filesystem.as_ref().map_or(String::new(), |f| format!(" ({} on {})", f.fs_type, f.source));
    writeln!(out, "streamcap {} · {}{fs}", result.tool.version, result.target.path)?;
    writeln!(
        out,
        "host: {} · {} × {} · {} · Linux {}",
        result.host.hostname,
        result.host.cpu_count,
        result.host.cpu_model,
        super::inspect::ram_words(&result.host),
        result.host.kernel
    )?;
    if let Some(pool) = result.target.pool.as_ref().filter(|p| p.members.len() > 1 || p.profile != Some(Single)) {
        writeln!(out, "pool: {}", super::inspect::pool_words(pool))?;
    }
    writeln!(out)?;
    // The file-set phases' own operations are in the file-set table below.
    let phases = super::phases::phase_rows(&result.phases, false);
    writeln!(out, "{}", phases.only(&super::phases::TERMINAL_COLUMNS).terminal(STYLE))?;
    // A fio file's jobs on devices of their own (run --device): where each ran.
    for line in super::phases::on_lines(&result.phases) {
        writeln!(out, "{line}")?;
    }
    for line in super::latency_target::lines(&result.phases) {
        writeln!(out, "{line}")?;
    }
    super::steady::write_steady_summary(out, &result.phases)?;
    if let Some(file_sets) = super::vdbench_fs::summary(&result.phases) {
        writeln!(out)?;
        writeln!(out, "{file_sets}")?;
    }
    if let Some(devices) = super::phases::device_rows(&result.phases) {
        writeln!(out)?;
        writeln!(out, "device activity during each phase:")?;
        writeln!(out, "{}", devices.terminal(STYLE))?;
    }
    if let Some(cluster) = &result.cluster {
        writeln!(out)?;
        super::cluster::write_cluster_summary(out, cluster)?;
    }
    if let Some(verify) = &result.verify {
        writeln!(out)?;
        super::verify::write_verify(out, verify)?;
    }
    write_warnings(out, result)
}

pub(super) fn write_warnings(out: &mut dyn Write, result: &RunResult) -> io::Result<()> {
    let mut lines = Vec::new();
    for notice in &result.notices {
        lines.push(format!("note: {notice}"));
    }
    for phase in &result.phases {
        // A memory-backed target is explained by its notice; this is the buffered case.
        if phase.cache_affected && !phase.direct {
            let m = &phase.memory;
            let ram = match m.effective_ram_bytes {
                0 => format!("{} of RAM", Bytes(m.ram_bytes)),
                e if e < m.ram_bytes => format!("{} of RAM (the memory cgroup's limit)", Bytes(e)),
                e => format!("{} of RAM", Bytes(e)),
            };
            lines.push(format!(
                "cache: '{}' used buffered I/O on a data set of {} with {ram}; the page cache may have served \
                 part of it, so treat its figures as an upper bound (use a data set over twice the RAM, or direct I/O)",
                phase.name,
                Bytes(phase.data_set_bytes),
            ));
        }
        lines.extend(cache_beneath(phase));
        if phase.errors.count > 0 {
            let plural = if phase.errors.count == 1 { "" } else { "s" };
            lines.push(format!("errors: '{}' had {} failed operation{plural}:", phase.name, phase.errors.count));
            for e in phase.errors.records.iter().take(5) {
                lines.push(format!("  {} {} at offset {} ({} bytes): {}", e.op, e.path, e.offset, e.len, e.message));
            }
            if phase.errors.records.iter().any(|e| e.errno == libc::ENOSPC) {
                lines.push("  the filesystem is full (ENOSPC): free space on it, or use a smaller --size".into());
            }
        }
        if let Some(failure) = &phase.failure {
            lines.push(format!("failed: '{}': {failure}", phase.name));
        }
        if let Some(skew) = phase.skew.as_ref().and_then(|s| s.message().map(|m| (s.failed, m))) {
            lines.push(format!("{}: '{}': {}", if skew.0 { "failed" } else { "skew" }, phase.name, skew.1));
        }
    }
    match result.status {
        RunStatus::Interrupted => lines.push("interrupted: the figures above cover the part that ran".into()),
        RunStatus::IoError => lines.push("stopped by an I/O error (use --continue-on-error to go on)".into()),
        _ => {}
    }
    if !lines.is_empty() {
        writeln!(out)?;
        for line in lines {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// The "cache beneath" warning of a phase: one line, however many devices of a pool showed it (issue 30: a
/// sweep of a seven-member pool said it seven times), naming them and quoting the first device's figures.
pub(crate) fn cache_beneath(phase: &crate::results::PhaseResult) -> Option<String> {
    let flagged: Vec<(&str, &String)> =
        phase.devices.iter().filter_map(|d| d.implausible.as_ref().map(|f| (d.activity.name.as_str(), f))).collect();
    match flagged.as_slice() {
        [] => None,
        [(_, flag)] => Some(format!("cache beneath: '{}': {flag}", phase.name)),
        [(_, first), ..] => {
            let names: Vec<&str> = flagged.iter().map(|(n, _)| *n).collect();
            Some(format!(
                "cache beneath: '{}': {} devices ({}) measured beyond what they say they are; the first: {first}",
                phase.name,
                names.len(),
                names.join(", ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (issue 30): a pool of seven members said "cache beneath" seven times.
    #[test]
    fn cache_beneath_is_said_once_for_a_whole_pool() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/result-v1.json");
        let mut phase = crate::results::read_result(std::path::Path::new(path)).unwrap().phases.remove(0);
        let device = phase.devices.first().cloned().expect("the fixture has a device");
        phase.devices = (0..7)
            .map(|i| {
                let mut d = device.clone();
                d.activity.name = format!("loop{i}");
                d.implausible = Some(format!("loop{i} says it is rotational, yet measured {} MB/s", 600 + i));
                d
            })
            .collect();
        let line = cache_beneath(&phase).expect("flagged");
        assert!(line.contains("7 devices (loop0, loop1, loop2, loop3, loop4, loop5, loop6)"), "{line}");
        assert!(line.ends_with("the first: loop0 says it is rotational, yet measured 600 MB/s"), "{line}");
        phase.devices.truncate(1);
        assert_eq!(
            cache_beneath(&phase).unwrap(),
            format!("cache beneath: '{}': loop0 says it is rotational, yet measured 600 MB/s", phase.name)
        );
        phase.devices[0].implausible = None;
        assert_eq!(cache_beneath(&phase), None);
    }
}
