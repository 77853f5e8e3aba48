//! The terminal summary of a `streams` result: the steps (one for `--count`, the curve for `--max`), which device
//! beneath the target did the work at each step (every pool member with its share), the answer in plain words,
//! the estimate beside it, and the flag of a device that says it is rotational yet measured beyond what platters
//! do. Reads only `results` types.

use std::io::{self, Write};

use super::members::{member_notes, member_table, members};
use super::rows::{Column, Rows, num, text};
use crate::results::{RunResult, StreamsResult, StreamsStep, busiest_own};
use crate::units::{format_latency_ns, format_mbps};

/// A latency in its unit ("933 ms", "2.08 s"), "—" when none was measured.
fn ms(ns: Option<u64>) -> String {
    ns.map_or("—".into(), |n| format_latency_ns(n as f64))
}

/// Seconds to two decimals at most, without trailing zeros ("2.21", "10").
fn seconds(s: f64) -> String {
    let text = format!("{s:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The busiest of the target's own devices (a disk beneath, such as a loop device's backing disk, is the host's).
fn busiest(step: &StreamsStep) -> String {
    busiest_own(&step.devices).map_or("—".into(), |d| format!("{:.0}% {}", d.activity.busy_pct, d.activity.name))
}

pub(super) fn write_streams_summary(
    out: &mut dyn Write,
    result: &RunResult,
    streams: &StreamsResult,
) -> io::Result<()> {
    write_header(out, result, streams)?;
    writeln!(out, "{}", step_rows(streams).terminal(comfy_table::presets::NOTHING))?;
    let groups: Vec<_> =
        streams.steps.iter().map(|s| (s.count.to_string(), members(&s.devices, s.duration_s))).collect();
    if let Some(table) = member_table("streams", &groups) {
        writeln!(out)?;
        writeln!(out, "which device did the work at each step (share: of the bytes its layer moved):")?;
        writeln!(out, "{table}")?;
        for line in member_notes(&groups) {
            writeln!(out, "{line}")?;
        }
        writeln!(out)?;
    }
    if let [step] = streams.steps.as_slice() {
        write_single_step(out, streams, step)?;
    }
    write_served(out, streams)?;
    if let Some(answer) = &streams.capacity {
        writeln!(out, "answer: {}", answer.words)?;
    }
    if let Some(household) = &streams.household {
        super::check_household::write_grid(out, household)?;
    }
    for line in super::during::streams_lines(streams) {
        writeln!(out, "{line}")?;
    }
    super::streams_client::write_client(out, result, streams)?;
    if let Some(cluster) = &result.cluster {
        super::cluster::write_cluster_summary(out, cluster)?;
        super::cluster::write_client_steps(out, cluster)?;
    }
    write_estimate(out, streams)?;
    write_ingest_and_errors(out, streams)?;
    for notice in &result.notices {
        writeln!(out, "note: {notice}")?;
    }
    for line in cache_beneath(result) {
        writeln!(out, "{line}")?;
    }
    if let Some(fs) = result.target.filesystem.as_ref().filter(|fs| fs.is_network()) {
        writeln!(
            out,
            "over the network: {} is a {} filesystem ({}), so every chunk crossed the link: these counts measure \
             the link and the server, not a local disk",
            fs.mount_point.display(),
            fs.fs_type,
            fs.source
        )?;
    }
    Ok(())
}

/// The implausibility flag of each device, once, named by the first phase that showed it (the raw-rate phases
/// of the estimate, or the stream phase): a "rotational" disk serving beyond what platters do.
fn cache_beneath(result: &RunResult) -> Vec<String> {
    let mut named: Vec<&str> = Vec::new();
    let mut lines = Vec::new();
    for phase in &result.phases {
        for device in &phase.devices {
            if let Some(flag) = &device.implausible
                && !named.contains(&device.activity.name.as_str())
            {
                named.push(&device.activity.name);
                lines.push(format!("cache beneath: '{}': {flag}", phase.name));
            }
        }
    }
    lines
}

/// The target, the stream's settings and how it was read.
fn write_header(out: &mut dyn Write, result: &RunResult, streams: &StreamsResult) -> io::Result<()> {
    let fs = result.target.filesystem.as_ref().map_or(String::new(), |f| format!(" ({} on {})", f.fs_type, f.source));
    writeln!(out, "streamcap {} · streams · {}{fs}", result.tool.version, result.target.path)?;
    writeln!(
        out,
        "{} · {} · buffer {} s, prebuffer {} s · {} s judged once every buffer is full · files: {} · {}",
        streams.label,
        match streams.delivery.starts_with("playlist") {
            true => "requests of the playlists' segments".to_string(),
            false => format!("chunk {}", crate::units::Bytes(streams.chunk_bytes)),
        },
        seconds(streams.buffer_s),
        seconds(streams.prebuffer_s),
        seconds(streams.watch_s),
        streams.assignment,
        match (result.target.kind.as_str(), streams.direct) {
            ("http", _) => "http range requests",
            (_, true) => "direct I/O",
            (_, false) => "buffered",
        }
    )?;
    if let Some(words) = streams.delivery.strip_prefix("playlist: ") {
        writeln!(out, "delivery: {words}, one request per segment")?;
    } else if streams.delivery != "direct" {
        let segment = streams.delivery.trim_start_matches("hls:");
        writeln!(
            out,
            "delivery: {} — one request per segment of {segment} s ({})",
            streams.delivery,
            crate::units::Bytes(streams.chunk_bytes)
        )?;
    }
    if let Some(pct) = streams.vbr_pct {
        writeln!(out, "variable bitrate: ±{pct} % per GOP of 2 s")?;
    }
    if let Some(library) = &streams.library {
        writeln!(out, "library: {} · {}", library.headline(), library.popularity)?;
        writeln!(out, "  why this size: {}", library.why)?;
        if let Some(kept) = &library.kept {
            writeln!(out, "  kept: {}", kept.words)?;
        }
    }
    Ok(())
}

/// Every column of the step table; the terminal and the page show them all, Markdown what fits a post.
const STEP_COLUMNS: [Column; 14] = [
    num("streams"),
    num("all steady at"),
    num("stalled in playback"),
    num("never started"),
    num("stall ratio"),
    num("start-up p99"),
    num("lateness p50"),
    num("lateness p99"),
    num("own lag p99"),
    num("MB/s"),
    num("req/s"),
    text("busiest device"),
    num("CPU"),
    text("target"),
];

/// Markdown's columns of the step table.
pub(super) const MARKDOWN_STEP_COLUMNS: [&str; 10] = [
    "streams",
    "all steady at",
    "stalled in playback",
    "never started",
    "stall ratio",
    "start-up p99",
    "lateness p99",
    "MB/s",
    "req/s",
    "target",
];

/// One row per step: when every buffer was full, stalls in playback and never-started viewers, start-up and
/// lateness, streamcap's own lag, delivered MB/s, the busiest device, CPU and how the step ended: the one step
/// table of every format.
pub(super) fn step_rows(streams: &StreamsResult) -> Rows {
    let mut rows = Rows::new(&STEP_COLUMNS);
    for step in &streams.steps {
        rows.push(vec![
            step.count.to_string(),
            step.steady_cell(),
            step.streams_stalled.to_string(),
            step.streams_not_started.to_string(),
            format!("{:.4}", step.stall_ratio),
            ms(step.startup.at(99.0)),
            ms(step.lateness.at(50.0)),
            ms(step.lateness.at(99.0)),
            ms(step.issue_lag.at(99.0)),
            format_mbps(step.delivered_mbps),
            requests_per_s(step),
            busiest(step),
            format!("{:.0}%", step.cpu_pct),
            step_result(step, streams),
        ]);
    }
    rows
}

/// Requests (segment GETs with HLS delivery) per second, or "—" in results older than the count.
fn requests_per_s(step: &StreamsStep) -> String {
    match step.requests {
        0 => "—".into(),
        _ if step.requests_per_s >= 100.0 => format!("{:.0}", step.requests_per_s),
        _ => format!("{:.1}", step.requests_per_s),
    }
}

/// How a step ended, in a word: "ok", "missed", "interrupted", or "cache-served" (it passed, but a cache served
/// it, so it does not count toward the capacity).
pub(super) fn step_mark(step: &StreamsStep) -> &'static str {
    match (step.interrupted, step.meets_target, step.counts()) {
        (true, _, _) => "interrupted",
        (_, true, false) => "cache-served",
        (_, true, true) => "ok",
        (_, false, _) => "missed",
    }
}

/// How a step ended, with why it missed: "ok", "missed: 2 never started", "interrupted", "cache-served".
pub(super) fn step_result(step: &StreamsStep, streams: &StreamsResult) -> String {
    match (step_mark(step), step.failure_reason(&streams.target)) {
        ("missed", Some(why)) => format!("missed: {why}"),
        (mark, _) => mark.into(),
    }
}

/// The one step of a `--count` run in words.
fn write_single_step(out: &mut dyn Write, streams: &StreamsResult, step: &StreamsStep) -> io::Result<()> {
    match step.steady_at_s {
        Some(at) => writeln!(
            out,
            "viewers arrived over {:.1} s; every buffer was full at {at:.1} s, then {:.1} s of playback was judged",
            step.arrival_s, step.judged_s
        )?,
        None => writeln!(out, "viewers arrived over {:.1} s; not every buffer was ever full", step.arrival_s)?,
    }
    writeln!(
        out,
        "{} of {} streams played without a stall; during playback {} stalls, {:.1} s stalled of {:.1} s watched; \
         while starting {} stalled, {} never started; peak RSS {} MB",
        step.streams_without_stall,
        step.count,
        step.stalls,
        step.stalled_s,
        step.watched_s,
        step.streams_startup_stalled,
        step.streams_not_started,
        step.peak_rss_bytes / 1_000_000
    )?;
    if step.interrupted {
        writeln!(out, "interrupted: the figures cover the part of the watch that ran")?;
    } else if let Some(why) = step.failure_reason(&streams.target) {
        writeln!(out, "missed the quality target: {why}")?;
    }
    Ok(())
}

/// Whether the devices beneath served each step (`results::served`): every cache-served step in words, and
/// the others in one line (results older than the judgment have no words, and get none).
fn write_served(out: &mut dyn Write, streams: &StreamsResult) -> io::Result<()> {
    let judged: Vec<&StreamsStep> = streams.steps.iter().filter(|s| !s.served_words.is_empty()).collect();
    let (cached, rest): (Vec<&StreamsStep>, Vec<&StreamsStep>) = judged.iter().partition(|s| s.cache_served);
    for step in &cached {
        writeln!(out, "at {} streams, {}", step.count, step.served_words)?;
    }
    match rest.as_slice() {
        [] => {}
        [one] => writeln!(out, "at {} streams, {}", one.count, one.served_words)?,
        [first, ..] if first.device_read_bytes.is_none() => {
            writeln!(out, "{}", first.served_words)?;
        }
        _ => writeln!(
            out,
            "{}: the devices read at least {:.0} % of what the viewers received",
            if cached.is_empty() {
                "every step was served by the devices"
            } else {
                "the other steps were served by the devices"
            },
            (1.0 - crate::results::SERVED_TOLERANCE) * 100.0
        )?,
    }
    Ok(())
}

/// The estimate from raw rates, and how it compares with what the steps measured.
fn write_estimate(out: &mut dyn Write, streams: &StreamsResult) -> io::Result<()> {
    let Some(e) = &streams.estimate else { return Ok(()) };
    writeln!(
        out,
        "estimate: {} streams ({}-bound), the lower of two bounds: random {} reads {:.0}/s ÷ {:.2} chunks/s per \
         stream = {:.1}; sequential {:.1} MB/s ÷ stream rate = {:.1}",
        e.streams,
        e.limited_by,
        crate::units::Bytes(streams.chunk_bytes),
        e.random_chunk_iops,
        e.chunks_per_stream_s,
        e.iops_bound,
        e.sequential_mbps,
        e.bandwidth_bound
    )?;
    if let Some(c) = &e.comparison {
        writeln!(out, "  {c}")?;
    }
    Ok(())
}

/// Ingest writers per step, then the read errors of each step.
fn write_ingest_and_errors(out: &mut dyn Write, streams: &StreamsResult) -> io::Result<()> {
    for step in &streams.steps {
        if let Some(i) = &step.ingest {
            writeln!(
                out,
                "ingest at {} streams: {} writer(s) wrote {:.1} of {:.1} MB/s asked; write latency p50 {}, p99 {} \
                 (from due){}",
                step.count,
                i.writers,
                i.achieved_mbps,
                i.target_mbps,
                ms(i.write_latency.at(50.0)),
                ms(i.write_latency.at(99.0)),
                i.first_error.as_ref().map_or(String::new(), |e| format!("; stopped: {e}"))
            )?;
        }
    }
    for step in &streams.steps {
        if let Some(e) = &step.first_error {
            writeln!(out, "warning: {} read errors at {} streams; the first: {e}", step.errors, step.count)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 10: streams shows the implausibility flag too, once per device however many phases raised it.
    #[test]
    fn the_cache_beneath_flag_is_shown_once_per_device() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/result-v1.json");
        let mut result = crate::results::read_result(&path).unwrap();
        assert!(cache_beneath(&result).is_empty(), "the fixture's run phases are not flagged as read");
        for phase in &mut result.phases {
            for device in &mut phase.devices {
                device.implausible = Some(format!("{} says it is rotational, yet …", device.activity.name));
            }
        }
        let lines = cache_beneath(&result);
        let devices: std::collections::HashSet<&str> =
            result.phases.iter().flat_map(|p| &p.devices).map(|d| d.activity.name.as_str()).collect();
        assert_eq!(lines.len(), devices.len(), "{lines:?}");
        let first = &result.phases[0];
        assert!(lines[0].starts_with(&format!("cache beneath: '{}': ", first.name)), "{lines:?}");
    }

    /// The step table reads the same in every format: Markdown's columns are the model's, with the model's cells.
    #[test]
    fn markdown_shows_the_step_models_columns_and_words() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/streams-v1.json");
        let result = crate::results::read_result(&path).unwrap();
        let streams = result.streams.as_ref().unwrap();
        let rows = step_rows(streams);
        let markdown = rows.only(&MARKDOWN_STEP_COLUMNS);
        assert_eq!(markdown.header(), MARKDOWN_STEP_COLUMNS);
        let missed = rows.rows.iter().position(|r| r[0] == "12").unwrap();
        assert_eq!(rows.rows[missed].last().unwrap(), "missed: 1 took over 2 s to start");
        assert_eq!(markdown.rows[missed].last(), rows.rows[missed].last());
        assert_eq!(rows.rows[missed][5], "2.08 s", "start-up p99 in its unit");
    }
}
