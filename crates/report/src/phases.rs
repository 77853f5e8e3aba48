//! The run summary's two tables as row models (`rows::Rows`), built once here and drawn by the terminal
//! summary, the Markdown and the HTML report: the phase table (per phase and operation class: IOPS, MB/s,
//! latency percentiles, CPU per operation, the workload and the I/O mode) and the device activity table (what
//! each device beneath the target did during each phase, with its share of its layer's bytes). The label of a
//! phase — its name, how it ended, the cache flag — is made here too. Reads only `results` types.

use super::rows::{Column, Rows, num, text};
use crate::results::{DeviceResult, FileOpResult, OpResult, PhaseResult, RunStatus};
use crate::units::{format_latency_ns, format_mbps, format_rate};

/// Every column of the phase table; a format shows the ones it has room for.
const PHASE_COLUMNS: [Column; 13] = [
    text("phase"),
    text("op"),
    num("IOPS"),
    num("MB/s"),
    num("mean"),
    num("p50"),
    num("p99"),
    num("p99.9"),
    num("max"),
    num("CPU/op"),
    num("CPU"),
    text("workload"),
    text("I/O"),
];

/// The terminal's columns (the workload is in the job the user just ran).
pub const TERMINAL_COLUMNS: [&str; 11] =
    ["phase", "op", "IOPS", "MB/s", "mean", "p50", "p99", "p99.9", "max", "CPU/op", "CPU"];

/// Markdown's columns: what fits a forum post.
pub const MARKDOWN_COLUMNS: [&str; 8] = ["phase", "op", "IOPS", "MB/s", "p50", "p99", "p99.9", "max"];

/// A phase's name, how it ended when it did not complete, and "[cache]" when the page cache may have served it.
pub fn phase_label(phase: &PhaseResult) -> String {
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

/// Where each phase ran, when the run's phases ran on devices of their own (a fio file's jobs mapped with
/// `run --device`): `'a' ran on /dev/loop3`, one line per such phase; none when every phase ran on the one
/// target. The terminal, the Markdown and the HTML report each print these under the phase table.
pub fn on_lines(phases: &[PhaseResult]) -> Vec<String> {
    phases.iter().filter(|p| !p.on.is_empty()).map(|p| format!("'{}' ran on {}", p.name, p.on.join(", "))).collect()
}

/// A latency percentile in words, "—" when the histogram is empty.
fn at(latency: &crate::metrics::LatencySummary, p: f64) -> String {
    latency.at(p).map_or("—".into(), |ns| format_latency_ns(ns as f64))
}

/// One row per operation class of each phase (read, write, sync), then — with `file_ops` — one per file-system
/// operation of a file-set phase (create, stat …; the terminal lists those in its own file-set table instead).
/// The phase's label, CPU, workload and I/O mode are on its first row; a phase that completed nothing says so.
pub fn phase_rows(phases: &[PhaseResult], file_ops: bool) -> Rows {
    let mut rows = Rows::new(&PHASE_COLUMNS);
    for phase in phases {
        let before = rows.rows.len();
        for (name, op) in [("read", &phase.read), ("write", &phase.write), ("sync", &phase.sync)] {
            let Some(op) = op else { continue };
            let first = rows.rows.len() == before;
            rows.push(op_row(phase, name, op, first));
        }
        let files = phase.file_ops.as_ref().filter(|_| file_ops);
        for op in files.iter().flat_map(|f| &f.ops).filter(|o| o.op != "read" && o.op != "write") {
            let first = rows.rows.len() == before;
            rows.push(file_op_row(phase, op, first));
        }
        if rows.rows.len() == before {
            rows.push(vec![phase_label(phase), "—".into(), nothing_measured(phase)]);
        }
    }
    rows
}

/// What a phase with no operation row did: a file-set phase that only built its tree says how fast it created
/// the files (issue 30: "files create — no operations completed" beside a headline of 11.8k creates/s).
fn nothing_measured(phase: &PhaseResult) -> String {
    match phase.file_ops.as_ref().filter(|f| f.formatted_files > 0 && f.format_s > 0.0) {
        Some(f) => format!(
            "built the tree: {} files created in {:.1} s ({}/s)",
            f.formatted_files,
            f.format_s,
            crate::units::format_rate(f.formatted_files as f64 / f.format_s)
        ),
        None => "no operations completed".into(),
    }
}

fn op_row(phase: &PhaseResult, name: &str, op: &OpResult, first: bool) -> Vec<String> {
    let on_first = |cell: String| if first { cell } else { String::new() };
    vec![
        on_first(phase_label(phase)),
        if op.errors > 0 { format!("{name} ({} err)", op.errors) } else { name.to_string() },
        format_rate(op.iops),
        format_mbps(op.mbps),
        format_latency_ns(op.latency.mean_ns),
        at(&op.latency, 50.0),
        at(&op.latency, 99.0),
        at(&op.latency, 99.9),
        format_latency_ns(op.latency.max_ns as f64),
        on_first(format!("{:.1} µs", phase.cpu.per_op_us)),
        on_first(format!("{:.0}%", phase.cpu.process_pct)),
        on_first(format!("{} · QD {} × {} · {}", phase.bs, phase.iodepth, phase.jobs, phase.rw)),
        on_first(if phase.direct { "direct" } else { "buffered" }.into()),
    ]
}

fn file_op_row(phase: &PhaseResult, op: &FileOpResult, first: bool) -> Vec<String> {
    vec![
        if first { phase_label(phase) } else { String::new() },
        op.op.clone(),
        format!("{}/s", format_rate(op.rate)),
        "—".into(),
        format_latency_ns(op.latency.mean_ns),
        at(&op.latency, 50.0),
        at(&op.latency, 99.0),
        at(&op.latency, 99.9),
        format_latency_ns(op.latency.max_ns as f64),
    ]
}

/// What each device beneath the target did during each phase; `None` when no phase saw a device.
pub fn device_rows(phases: &[PhaseResult]) -> Option<Rows> {
    let mut rows = Rows::new(&[
        text("phase"),
        text("device"),
        text("role"),
        num("read MB/s"),
        num("write MB/s"),
        num("reads/s"),
        num("writes/s"),
        num("busy"),
        num("queue"),
        num("share"),
    ]);
    for phase in phases {
        for (i, device) in phase.devices.iter().enumerate() {
            let a = &device.activity;
            let share = share_of_layer(device, &phase.devices).map_or("—".into(), |s| format!("{:.0}%", s * 100.0));
            rows.push(vec![
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
    (!rows.is_empty()).then_some(rows)
}

/// A device's share of the bytes moved by the devices listed with the same role (the members of one pool, the
/// disks under one layer), 0–1; `None` when that layer moved nothing.
fn share_of_layer(device: &DeviceResult, all: &[DeviceResult]) -> Option<f64> {
    let moved = |d: &DeviceResult| (d.activity.read_bytes.0 + d.activity.write_bytes.0) as f64;
    let total: f64 = all.iter().filter(|d| d.role == device.role).map(moved).sum();
    (total > 0.0).then(|| moved(device) / total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> crate::results::RunResult {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/result-v1.json");
        crate::results::read_result(std::path::Path::new(path)).unwrap()
    }

    /// Regression (issue 30): the check's tree-building phase read "no operations completed".
    #[test]
    fn a_phase_that_built_a_tree_says_how_fast() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/check-v2.json");
        let result = crate::results::read_result(std::path::Path::new(path)).unwrap();
        let create: Vec<_> = result.phases.iter().filter(|p| p.name == "files create").cloned().collect();
        let rows = phase_rows(&create, true);
        assert_eq!(rows.rows.len(), 1);
        assert_eq!(rows.rows[0][2], "built the tree: 2000 files created in 0.6 s (3449/s)");
    }

    /// Issue 29: where each phase of a fio file on devices of its own ran was in the summary and the JSON, not
    /// in the Markdown and HTML reports.
    #[test]
    fn every_report_says_where_each_phase_ran_when_phases_ran_on_devices_of_their_own() {
        use crate::report::Renderer;
        let mut result = fixture();
        assert!(on_lines(&result.phases).is_empty(), "one target: nothing to say");
        result.phases[0].on = vec!["/dev/loop3".into()];
        result.phases[1].on = vec!["/dev/loop3".into(), "/dev/loop4".into()];
        let name = |i: usize| result.phases[i].name.clone();
        let want = [format!("'{}' ran on /dev/loop3", name(0)), format!("'{}' ran on /dev/loop3, /dev/loop4", name(1))];
        assert_eq!(on_lines(&result.phases), want);
        let render = |r: &dyn Renderer| {
            let mut out = Vec::new();
            r.render(&result, &mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        let (markdown, html) = (render(&crate::report::Markdown), render(&crate::report::Html));
        for line in &want {
            assert!(markdown.contains(&format!("- {line}\n")), "{markdown}");
            let escaped = line.replace('\'', "&#39;");
            assert!(html.contains(&format!("<p class=\"words\">{escaped}</p>")), "{line} not in the HTML");
        }
    }

    #[test]
    fn every_format_picks_columns_the_model_has() {
        let rows = phase_rows(&fixture().phases, true);
        assert_eq!(rows.only(&TERMINAL_COLUMNS).header(), TERMINAL_COLUMNS);
        assert_eq!(rows.only(&MARKDOWN_COLUMNS).header(), MARKDOWN_COLUMNS);
    }

    #[test]
    fn the_phase_label_cpu_and_workload_are_on_the_first_row_of_a_phase() {
        let mut result = fixture();
        result.phases[1].write = result.phases[1].read.clone();
        let rows = phase_rows(&result.phases, true);
        assert_eq!(rows.rows.len(), 3, "{rows:?}");
        assert_eq!(rows.rows[1][0], "random 4k reads [cache]");
        assert_eq!((rows.rows[1][1].as_str(), rows.rows[2][1].as_str()), ("read (1 err)", "write (1 err)"));
        assert!(!rows.rows[1][10].is_empty() && !rows.rows[1][11].is_empty());
        assert!(rows.rows[2][0].is_empty() && rows.rows[2][10].is_empty() && rows.rows[2][11].is_empty());
    }

    #[test]
    fn a_phase_that_completed_nothing_says_so() {
        let mut result = fixture();
        result.phases[0].write = None;
        let rows = phase_rows(&result.phases[..1], true);
        assert_eq!(
            rows.rows,
            [{
                let mut r = vec!["write the data set".to_string(), "—".into(), "no operations completed".into()];
                r.resize(13, String::new());
                r
            }]
        );
    }
}
