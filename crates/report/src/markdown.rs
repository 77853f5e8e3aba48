//! Markdown: the tables a person pastes into a forum post or an issue — a heading with the tool, target and host,
//! then the phase table (run, with the depth a latency target's search found), the step table and the answer
//! (streams), the headline figures and the verdict table (check), the plateaus (cache) or the size × record table
//! and the cliff (sweep), then notices and cache flags as a list. GitHub-flavoured tables, numbers right-aligned,
//! no HTML. Every table is its subject's row model (`report::rows`), drawn by `table` here; this file builds no
//! rows of its own. Reads only `results` types.

use std::io::{self, Write};

use super::Renderer;
use crate::results::{CheckSummary, OpResult, PhaseResult, RunResult, RunStatus, StreamsResult};
use crate::units::Bytes;

/// Markdown tables.
pub struct Markdown;

impl Renderer for Markdown {
    fn render(&self, result: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        heading(out, result)?;
        if let Some(cache) = &result.cache {
            super::cache::cache_markdown(out, cache)?;
            // The page-cache plateaus are buffered on purpose: no cache warning for them.
            return notes(out, &super::cache::judged(result, cache));
        } else if let Some(sweep) = &result.sweep {
            super::sweep::sweep_markdown(out, sweep)?;
            // The buffered passes are cache-affected on purpose: the cliff line explains them.
            return notes(out, &super::sweep::judged(result));
        } else if let Some(check) = &result.check {
            check_tables(out, check)?;
        } else if let Some(streams) = &result.streams {
            streams_table(out, result, streams)?;
        } else {
            super::phases::phase_rows(&result.phases, true).only(&super::phases::MARKDOWN_COLUMNS).markdown(out)?;
            // A fio file's jobs on devices of their own (run --device): where each ran.
            let on = super::phases::on_lines(&result.phases);
            for line in &on {
                writeln!(out, "- {}", cell(line))?;
            }
            if !on.is_empty() {
                writeln!(out)?;
            }
            for line in super::latency_target::lines(&result.phases) {
                writeln!(out, "\n{line}")?;
            }
        }
        if let Some(cluster) = &result.cluster {
            super::cluster::cluster_markdown(out, cluster)?;
        }
        notes(out, result)
    }
}

/// A table cell: pipes would end the cell, line breaks the row.
pub(super) fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// Writes one table: `align` has one entry per column, true for right-aligned (numbers).
pub(super) fn table(out: &mut dyn Write, header: &[&str], align: &[bool], rows: &[Vec<String>]) -> io::Result<()> {
    writeln!(out, "| {} |", header.iter().map(|h| cell(h)).collect::<Vec<_>>().join(" | "))?;
    let rule: Vec<&str> = align.iter().map(|&right| if right { "--:" } else { "---" }).collect();
    writeln!(out, "|{}|", rule.join("|"))?;
    for row in rows {
        writeln!(out, "| {} |", row.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | "))?;
    }
    writeln!(out)
}

pub(super) fn command_name(result: &RunResult) -> &'static str {
    if result.cache.is_some() {
        "cache"
    } else if result.sweep.is_some() {
        "sweep"
    } else if result.check.is_some() {
        "check"
    } else if result.streams.is_some() {
        "streams"
    } else {
        "run"
    }
}

fn heading(out: &mut dyn Write, result: &RunResult) -> io::Result<()> {
    let fs = result.target.filesystem.as_ref().map_or(String::new(), |f| format!(" ({} on {})", f.fs_type, f.source));
    writeln!(out, "### streamcap {} · {}{fs}", command_name(result), cell(&result.target.path))?;
    writeln!(out)?;
    let h = &result.host;
    writeln!(
        out,
        "{} · {} × {} · {} RAM · Linux {} · streamcap {} · {}",
        cell(&h.hostname),
        h.cpu_count,
        cell(&h.cpu_model),
        h.ram,
        cell(&h.kernel),
        result.tool.version,
        result.started_at
    )?;
    writeln!(out)?;
    for d in &result.target.devices {
        writeln!(
            out,
            "- `{}` ({}): {} · {} · {}",
            d.name,
            cell(&d.role),
            cell(d.model.as_deref().unwrap_or("unknown model")),
            d.size,
            if d.rotational { "rotational" } else { "non-rotational" }
        )?;
    }
    for line in crate::results::throttle_words(&result.target.throttles) {
        writeln!(out, "- limit: {}", cell(&line))?;
    }
    writeln!(out)
}

fn streams_table(out: &mut dyn Write, result: &RunResult, streams: &StreamsResult) -> io::Result<()> {
    writeln!(
        out,
        "{} · chunk {} · buffer {} s · {} s judged once every buffer is full · {}",
        cell(&streams.label),
        Bytes(streams.chunk_bytes),
        format!("{:.2}", streams.buffer_s).trim_end_matches('0').trim_end_matches('.'),
        streams.watch_s,
        if streams.direct { "direct I/O" } else { "buffered" }
    )?;
    writeln!(out)?;
    super::streams::step_rows(streams).only(&super::streams::MARKDOWN_STEP_COLUMNS).markdown(out)?;
    if let Some(answer) = &streams.capacity {
        writeln!(out, "**{}**", cell(&answer.words))?;
        writeln!(out)?;
    }
    if let Some(household) = &streams.household {
        super::check_household::write_markdown_grid(out, household)?;
    }
    let during = super::during::streams_lines(streams);
    for line in &during {
        writeln!(out, "- {}", cell(line.trim_start()))?;
    }
    if !during.is_empty() {
        writeln!(out)?;
    }
    let client = super::streams_client::client_lines(result, streams);
    for line in &client {
        writeln!(out, "- {}", cell(line.trim_start()))?;
    }
    if !client.is_empty() {
        writeln!(out)?;
    }
    if let Some(e) = &streams.estimate {
        writeln!(
            out,
            "Estimate from raw rates: {} streams ({}-bound; random reads allow {:.1}, sequential reads {:.1}).",
            e.streams, e.limited_by, e.iops_bound, e.bandwidth_bound
        )?;
        writeln!(out)?;
    }
    Ok(())
}

/// A check as Markdown, in the HTML page's order (issue 30: the figures came before the verdict and the caveats
/// were left out): the verdict and what it means, the caveats, then the headline figures.
fn check_tables(out: &mut dyn Write, check: &CheckSummary) -> io::Result<()> {
    writeln!(
        out,
        "Check profile {}, {:.0} s, data set {}.",
        check.profile,
        check.elapsed_s,
        Bytes(check.data_set_bytes)
    )?;
    if let Some(library) = &check.library {
        writeln!(out)?;
        writeln!(out, "Viewers read a media library: {} ({}).", library.headline(), library.popularity)?;
    }
    writeln!(out)?;
    if check.partial {
        writeln!(out, "_Partial: the check stopped before the end._")?;
        writeln!(out)?;
    }
    if !check.verdict.is_empty() {
        let title = check.verdict_title();
        writeln!(out, "{}{}:", title[..1].to_uppercase(), &title[1..])?;
        writeln!(out)?;
        super::check::verdict_rows(check).markdown(out)?;
        for v in &check.verdict {
            writeln!(out, "- {}", cell(&v.capacity.words))?;
        }
        writeln!(out)?;
        for line in super::check::verdict_legend(check) {
            writeln!(out, "_{}_", cell(&line))?;
            writeln!(out)?;
        }
    }
    super::check_household::write_markdown(out, check)?;
    super::during::write_markdown(out, check)?;
    check_caveats(out, check)?;
    super::check::figure_rows(check).markdown(out)?;
    super::check_hint::write_markdown(out, check)
}

/// What changes how a check's verdict reads, as the HTML page's glance says it: a cache beneath the OS, a
/// capacity beyond the sequential ceiling, a format not measured.
fn check_caveats(out: &mut dyn Write, check: &CheckSummary) -> io::Result<()> {
    let mut lines = Vec::new();
    if let Some(flag) = check.cache.as_ref().and_then(|c| c.implausible.as_ref()) {
        lines.push(format!("**Cache beneath:** the device's figures are beyond what it says it is: {flag}"));
    }
    for v in check.verdict.iter().filter(|v| v.beyond_ceiling) {
        lines.push(format!(
            "**{}:** {} streams is beyond the {} the sequential reads would carry: a cache served some viewers",
            v.label, v.streams, v.bandwidth_ceiling
        ));
    }
    for v in &check.verdict {
        if let Some(why) = &v.capacity.not_measured {
            lines.push(format!("**{}:** not measured: {why}", v.label));
        }
    }
    for line in &lines {
        writeln!(out, "- {}", cell(line))?;
    }
    if !lines.is_empty() {
        writeln!(out)?;
    }
    Ok(())
}

fn notes(out: &mut dyn Write, result: &RunResult) -> io::Result<()> {
    let mut lines: Vec<String> = result.notices.iter().map(|n| format!("note: {n}")).collect();
    // A phase that only built a file tree measured nothing, so its cache flag says nothing.
    let measured = |p: &&PhaseResult| {
        let ops = |o: &Option<OpResult>| o.as_ref().map_or(0, |o| o.ops);
        ops(&p.read) + ops(&p.write) + p.file_ops.as_ref().map_or(0, |f| f.requested.ops) > 0
    };
    for phase in result.phases.iter().filter(measured).filter(|p| p.cache_affected && !p.direct) {
        lines.push(format!(
            "cache: '{}' used buffered I/O on {} with {} of RAM: treat its figures as an upper bound",
            phase.name,
            Bytes(phase.data_set_bytes),
            Bytes(phase.memory.ram_bytes)
        ));
    }
    // A cache beneath the OS, once per device (by the first phase that showed it), as the summary says it.
    let mut said: Vec<&str> = Vec::new();
    for phase in result.phases.iter().filter(measured) {
        for device in &phase.devices {
            if let Some(flag) = device.implausible.as_ref().filter(|_| !said.contains(&device.activity.name.as_str())) {
                said.push(&device.activity.name);
                lines.push(format!("cache beneath: '{}': {flag}", phase.name));
            }
        }
    }
    for phase in result.phases.iter().filter(|p| p.errors.count > 0) {
        lines.push(format!("errors: '{}' had {} failed operations", phase.name, phase.errors.count));
    }
    for phase in &result.phases {
        if let Some(steady) = &phase.steady_state {
            lines.push(format!("steady state: '{}': {}", phase.name, super::steady::steady_words(steady)));
        }
    }
    if result.status == RunStatus::Interrupted {
        lines.push("interrupted: the figures cover the part that ran".into());
    }
    for line in lines {
        writeln!(out, "- {}", cell(&line))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_cannot_break_the_table() {
        assert_eq!(cell("a|b\nc"), "a\\|b c");
    }

    #[test]
    fn tables_have_one_rule_entry_per_column() {
        let mut out = Vec::new();
        table(&mut out, &["a", "b"], &[false, true], &[vec!["x".into(), "1".into()]]).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "| a | b |\n|---|--:|\n| x | 1 |\n\n");
    }

    /// Regression (issue 30): Markdown put the figures before the verdict and dropped the cache-beneath caveat
    /// the HTML page and the terminal show.
    #[test]
    fn a_check_in_markdown_opens_on_the_verdict_and_keeps_the_caveats() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/check-v2.json");
        let result = crate::results::read_result(&path).unwrap();
        let text = crate::render_to_string(&Markdown, &result);
        let verdict = text.find("| format | bitrate | streams").expect("the verdict table");
        let figures = text.find("| measurement | result |").expect("the figures");
        assert!(verdict < figures, "{text}");
        let caveat = text.find("**Cache beneath:**").expect("the caveat");
        assert!(verdict < caveat && caveat < figures, "{text}");
        assert!(text.contains("cache beneath: 'seq-write 1M qd8': vda says"), "{text}");
    }
}
