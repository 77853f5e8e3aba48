//! The server's other work in every report: for `streams --during`, the capacity beside the loads set against
//! the capacity alone, and each load's own rate; for `check --thorough`/`--during`, the "what breaks first"
//! table (each format alone and beside each load) with the load that hurts most. One row model
//! (`breaks_rows`) and one set of sentences (`streams_lines`) drawn by the terminal, Markdown and HTML alike.

use std::io::{self, Write};

use super::rows::{Column, Rows, num, text};
use super::terminal::STYLE;
use crate::results::{BreaksFirst, CheckSummary, StreamsResult};

/// Every load has a column; a table shows the loads it measured (`Rows::only`).
/// Every background load's column (the loads of `crates/run/src/streams/during`): a load a check ran and this
/// table had no column for would be measured and never shown.
const COLUMNS: [Column; 7] = [
    text("format"),
    num("alone"),
    num("library-scan"),
    num("thumbnails"),
    num("transcode"),
    num("recording"),
    num("scrub"),
];

/// The sentences of a stream phase that ran beside loads (none without them): both capacities, then what
/// each load did over the phase.
pub(super) fn streams_lines(streams: &StreamsResult) -> Vec<String> {
    if streams.during.is_empty() {
        return Vec::new();
    }
    let loads = streams.during.join(", ");
    let mut lines = Vec::new();
    if let Some(answer) = &streams.capacity {
        let with = answer.streams;
        lines.push(match streams.alone {
            Some(alone) if alone > 0 => format!(
                "capacity alone: {alone} streams; beside {loads}: {with} ({:+.0} %)",
                (f64::from(with) - f64::from(alone)) * 100.0 / f64::from(alone)
            ),
            Some(alone) => format!("capacity alone: {alone} streams; beside {loads}: {with}"),
            None => format!("capacity beside {loads}: {with} streams (no search ran without them)"),
        });
    } else {
        lines.push(format!("the viewers ran beside {loads}"));
    }
    for load in &streams.background {
        let errors = if load.errors > 0 { format!(", {} operation(s) failed", load.errors) } else { String::new() };
        lines.push(format!("  {} over {:.0} s of steps{errors}", load.words(), load.seconds));
    }
    lines
}

/// The table: one row per format, its capacity alone and beside each load ("—": not measured).
pub(super) fn breaks_rows(b: &BreaksFirst) -> Rows {
    let mut rows = Rows::new(&COLUMNS);
    let count = |n: Option<u32>| n.map_or_else(|| "—".to_string(), |n| n.to_string());
    for r in &b.rows {
        let mut cells = vec![String::new(); COLUMNS.len()];
        cells[0] = r.label.clone();
        cells[1] = count(r.alone);
        for (load, with) in b.loads.iter().zip(&r.with) {
            if let Some(i) = COLUMNS.iter().position(|c| c.name == load.as_str()) {
                cells[i] = match (r.alone, with) {
                    (Some(a), Some(w)) if a > 0 && *w < a => {
                        format!("{w} ({:+.0} %)", (f64::from(*w) - f64::from(a)) * 100.0 / f64::from(a))
                    }
                    _ => count(*with),
                };
            }
        }
        rows.push(cells);
    }
    let mut shown = vec!["format", "alone"];
    shown.extend(b.loads.iter().map(String::as_str));
    rows.only(&shown)
}

/// What each load did, in a line each.
fn rate_lines(b: &BreaksFirst) -> Vec<String> {
    b.rates.iter().map(|r| format!("{} (over all its searches)", r.words())).collect()
}

const TITLE: &str = "What breaks first: streams alone and beside the server's other work";

/// The terminal section, after the verdict.
pub(super) fn write_breaks(out: &mut dyn Write, check: &CheckSummary) -> io::Result<()> {
    let Some(b) = &check.breaks_first else { return Ok(()) };
    writeln!(out)?;
    writeln!(out, "{TITLE}")?;
    writeln!(out, "{}", breaks_rows(b).terminal(STYLE))?;
    for line in rate_lines(b) {
        writeln!(out, "  {line}")?;
    }
    writeln!(out, "{}", b.words)
}

/// The Markdown section.
pub(super) fn write_markdown(out: &mut dyn Write, check: &CheckSummary) -> io::Result<()> {
    let Some(b) = &check.breaks_first else { return Ok(()) };
    writeln!(out, "{TITLE}:")?;
    writeln!(out)?;
    breaks_rows(b).markdown(out)?;
    for line in rate_lines(b) {
        writeln!(out, "- {line}")?;
    }
    writeln!(out)?;
    writeln!(out, "**{}**", b.words)?;
    writeln!(out)
}

/// The HTML section: its title and body.
pub(super) fn html_section(b: &BreaksFirst) -> (&'static str, String) {
    let esc = crate::report::html::esc;
    let mut body = breaks_rows(b).html();
    for line in rate_lines(b) {
        body.push_str(&format!("<p>{}</p>", esc(&line)));
    }
    body.push_str(&format!("<p class=\"words\"><strong>{}</strong></p>", esc(&b.words)));
    (TITLE, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{BreaksRow, breaks_first};
    use ::streams::BackgroundFigures;

    /// A result written before `--during` existed loads and says nothing of loads; one beside a scan says both
    /// capacities and the scan's rate.
    #[test]
    fn a_streams_result_says_both_capacities_and_each_loads_rate() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/streams-v1.json");
        let result = crate::results::read_result(&path).unwrap();
        let mut streams = result.streams.unwrap();
        assert!(streams.during.is_empty() && streams_lines(&streams).is_empty());
        let found = streams.capacity.as_ref().unwrap().streams;
        streams.during = vec!["library-scan".into()];
        streams.alone = Some(found * 2);
        streams.background = vec![BackgroundFigures {
            load: "library-scan".into(),
            files: 120,
            read_bytes: 120 << 20,
            seconds: 60.0,
            ..Default::default()
        }];
        let lines = streams_lines(&streams);
        assert_eq!(lines[0], format!("capacity alone: {} streams; beside library-scan: {found} (-50 %)", found * 2));
        assert_eq!(lines[1], "  library-scan 2.0 files/s, 2.1 MB/s over 60 s of steps");
    }

    #[test]
    fn the_table_shows_each_measured_load_with_its_cost() {
        let rows = vec![
            BreaksRow {
                format: "2160p-remux".into(),
                label: "2160p remux".into(),
                alone: Some(10),
                with: vec![Some(6), None, Some(0)],
            },
            BreaksRow { format: "1080p".into(), label: "1080p".into(), alone: None, with: vec![None, None, None] },
        ];
        let scan = BackgroundFigures {
            load: "library-scan".into(),
            files: 30,
            read_bytes: 30 << 20,
            seconds: 3.0,
            ..Default::default()
        };
        let b = breaks_first(vec!["library-scan".into(), "transcode".into(), "scrub".into()], rows, vec![scan]);
        let table = breaks_rows(&b);
        // The scrub's column too: a check's scrub was measured and left out of the terminal's table once.
        assert_eq!(table.header(), vec!["format", "alone", "library-scan", "transcode", "scrub"]);
        assert_eq!(table.rows[0], vec!["2160p remux", "10", "6 (-40 %)", "—", "0 (-100 %)"]);
        assert_eq!(table.rows[1], vec!["1080p", "—", "—", "—", "—"]);
        let mut text = Vec::new();
        let check_words = rate_lines(&b);
        assert_eq!(check_words, vec!["library-scan 10.0 files/s, 10.5 MB/s (over all its searches)"]);
        breaks_rows(&b).markdown(&mut text).unwrap();
        assert!(String::from_utf8(text).unwrap().contains("| 2160p remux | 10 | 6 (-40 %) | — | 0 (-100 %) |"));
    }
}
