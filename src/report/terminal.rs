//! The terminal summary of a `RunResult`: one table of the numbers a person needs (IOPS, MB/s, latency
//! percentiles, CPU per operation), one of what each device beneath the target did (every pool member, with
//! its share of its layer's bytes), then warnings in words. Under the first table, the queue depth a latency
//! target's search found (`latency_target`).
//! Reads only the result, so a saved JSON renders exactly like a live run (`streamcap report r.json`).

use std::io::{self, Write};

use comfy_table::{CellAlignment, LineStyle, Table, TableStyle};

use crate::results::Profile::Single;
use crate::results::{DeviceResult, OpResult, PhaseResult, RunResult, RunStatus};
use crate::units::{Bytes, format_latency_ns, format_mbps, format_rate};

/// A rule under the header and nothing else: the figures are the point, not the grid.
pub(super) const STYLE: TableStyle = TableStyle::new().header_separator(LineStyle::none().fill('─').junction('─'));

pub fn write_summary(out: &mut dyn Write, result: &RunResult) -> io::Result<()> {
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
    writeln!(out, "{}", performance_table(&result.phases))?;
    for line in super::latency_target::lines(&result.phases) {
        writeln!(out, "{line}")?;
    }
    super::steady::write_steady_summary(out, &result.phases)?;
    if let Some(file_sets) = super::vdbench_fs::summary(&result.phases) {
        writeln!(out)?;
        writeln!(out, "{file_sets}")?;
    }
    let devices = device_table(&result.phases);
    if let Some(table) = devices {
        writeln!(out)?;
        writeln!(out, "device activity during each phase:")?;
        writeln!(out, "{table}")?;
    }
    if let Some(cluster) = &result.cluster {
        writeln!(out)?;
        super::cluster::write_cluster_summary(out, cluster)?;
    }
    if let Some(verify) = &result.verify {
        writeln!(out)?;
        super::verify::write_verify_summary(out, verify)?;
    }
    write_warnings(out, result)
}

fn performance_table(phases: &[PhaseResult]) -> Table {
    let mut table = Table::new();
    table.load_style(STYLE);
    table.set_header(["phase", "op", "IOPS", "MB/s", "mean", "p50", "p99", "p99.9", "max", "CPU/op", "CPU"]);
    for phase in phases {
        let mut first = true;
        for (name, op) in [("read", &phase.read), ("write", &phase.write), ("sync", &phase.sync)] {
            let Some(op) = op else { continue };
            let label = if first { phase_label(phase) } else { String::new() };
            let (cpu_op, cpu) = if first {
                (format!("{:.1} µs", phase.cpu.per_op_us), format!("{:.0}%", phase.cpu.process_pct))
            } else {
                (String::new(), String::new())
            };
            first = false;
            table.add_row(row(label, name, op, cpu_op, cpu));
        }
        if first {
            table.add_row(vec![phase_label(phase), "—".into(), "no operations completed".into()]);
        }
    }
    for column in 2..=10 {
        if let Some(c) = table.column_mut(column) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    table
}

fn row(label: String, name: &str, op: &OpResult, cpu_op: String, cpu: String) -> Vec<String> {
    let lat = |p: f64| op.latency.at(p).map_or("—".into(), |ns| format_latency_ns(ns as f64));
    vec![
        label,
        if op.errors > 0 { format!("{name} ({} err)", op.errors) } else { name.to_string() },
        format_rate(op.iops),
        format_mbps(op.mbps),
        format_latency_ns(op.latency.mean_ns),
        lat(50.0),
        lat(99.0),
        lat(99.9),
        format_latency_ns(op.latency.max_ns as f64),
        cpu_op,
        cpu,
    ]
}

fn phase_label(phase: &PhaseResult) -> String {
    let mut label = phase.name.clone();
    match phase.status {
        RunStatus::Interrupted => label.push_str(" (interrupted)"),
        RunStatus::IoError => label.push_str(" (stopped: I/O error)"),
        RunStatus::Failed => label.push_str(" (failed)"),
        RunStatus::Running | RunStatus::Completed => {}
    }
    if phase.cache_affected {
        label.push_str(" [cache]");
    }
    label
}

fn device_table(phases: &[PhaseResult]) -> Option<Table> {
    if phases.iter().all(|p| p.devices.is_empty()) {
        return None;
    }
    let mut table = Table::new();
    table.load_style(STYLE);
    table.set_header(["phase", "device", "role", "read MB/s", "write MB/s", "r/s", "w/s", "busy", "queue", "share"]);
    for phase in phases {
        for (i, device) in phase.devices.iter().enumerate() {
            let a = &device.activity;
            let share = share_of_layer(device, &phase.devices).map_or("—".into(), |s| format!("{:.0}%", s * 100.0));
            table.add_row(vec![
                if i == 0 { phase.name.clone() } else { String::new() },
                a.name.clone(),
                device.role.clone(),
                format_mbps(a.read_mbps),
                format_mbps(a.write_mbps),
                format_rate(a.read_iops),
                format_rate(a.write_iops),
                format!("{:.0}%", a.busy_pct),
                format!("{:.1}", a.avg_queue),
                share,
            ]);
        }
    }
    for column in 3..=9 {
        if let Some(c) = table.column_mut(column) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    Some(table)
}

/// A device's share of the bytes moved by the devices listed with the same role (the members of one pool, the
/// disks under one layer), 0–1; `None` when that layer moved nothing.
fn share_of_layer(device: &DeviceResult, all: &[DeviceResult]) -> Option<f64> {
    let moved = |d: &DeviceResult| (d.activity.read_bytes.0 + d.activity.write_bytes.0) as f64;
    let total: f64 = all.iter().filter(|d| d.role == device.role).map(moved).sum();
    (total > 0.0).then(|| moved(device) / total)
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
        for flag in phase.devices.iter().filter_map(|d| d.implausible.as_ref()) {
            lines.push(format!("cache beneath: '{}': {flag}", phase.name));
        }
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
