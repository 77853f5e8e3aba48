//! `streamcap history` (list, show, trend) and `record`, the one call at the end of run, streams, check, cache
//! and sweep that stores a result in the local history. The history never costs a run: when the database
//! cannot be written (corrupt, locked, a newer schema, no home), the result is kept as a JSON file in
//! `pending/` beside the database with a warning, and added the next time a run is stored.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use super::output::print_quietly;
use crate::cli::{HistoryAction, HistoryArgs, HistoryOptions};
use crate::history::{Entry, Filter, History, default_path};
use crate::outfile::OutDir;
use crate::report::{Format, render_to_string};
use crate::results::{RunResult, parse_result};

/// Where the history is, unless it is turned off (`--no-history`, `STREAMCAP_NO_HISTORY`).
pub fn database(options: &HistoryOptions) -> Option<PathBuf> {
    if options.no_history {
        return None;
    }
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    options.history_db.clone().or_else(|| default_path(env("XDG_DATA_HOME").as_deref(), env("HOME").as_deref()))
}

/// Stores a finished result in the history; says so (unless `quiet`), or warns and keeps it for later.
pub fn record(result: &RunResult, options: &HistoryOptions, quiet: bool) {
    let Some(path) = database(options) else { return };
    let stored = History::open(&path).and_then(|mut h| {
        let id = h.store(result)?;
        Ok((h, id))
    });
    match stored {
        Ok((mut history, id)) => {
            if !quiet {
                eprintln!("history: stored as #{id} in {}", path.display());
            }
            import_pending(&mut history, &path);
        }
        Err(e) => {
            let kept = keep_pending(result, &path);
            eprintln!("warning: cannot store this run in the history at {}: {e}; {kept}", path.display());
        }
    }
}

/// The directory beside the database where results wait for it (`pending/`).
const PENDING: &str = "pending";
/// A pending result larger than this is not one streamcap kept (results are a few MiB).
const PENDING_CAP: u64 = crate::limits::MAX_INPUT_FILE_BYTES;

/// Writes the result where the next successful store picks it up; says where, in words. The directory and
/// the file follow the output-file rule (never beside a device, never through a symbolic link).
fn keep_pending(result: &RunResult, database: &Path) -> String {
    let name = format!("{}-{}.json", result.started_at.replace(':', ""), std::process::id());
    let kept = serde_json::to_vec_pretty(result).map_err(|e| e.to_string()).and_then(|mut text| {
        text.push(b'\n');
        let dir = OutDir::beside(database, PENDING, true).map_err(|e| e.to_string())?;
        let dir = dir.ok_or_else(|| "the directory could not be made".to_string())?;
        dir.write(&name, &text).map_err(|e| e.to_string())
    });
    match kept {
        Ok(file) => format!(
            "the result is kept in {} and will be added the next time the history can be written",
            file.display()
        ),
        Err(e) => format!("the result could not be kept beside it either ({e}): keep the --json file"),
    }
}

/// Adds the results left in `pending/` by earlier runs, oldest first, removing each once stored.
fn import_pending(history: &mut History, database: &Path) {
    let Ok(Some(dir)) = OutDir::beside(database, PENDING, false) else { return };
    for name in dir.files(".json") {
        let file = dir.path().join(&name);
        let text = dir.read(&name, PENDING_CAP).ok().and_then(|bytes| String::from_utf8(bytes).ok());
        let Some(result) = text.and_then(|text| parse_result(&file, &text).ok()) else { continue };
        if let Ok(id) = history.store(&result) {
            let _ = dir.remove(&name);
            eprintln!("history: added the pending run {} as #{id}", file.display());
        }
    }
    dir.remove_if_empty();
}

fn open(options: &HistoryOptions) -> Result<(History, PathBuf)> {
    let Some(path) = database(&HistoryOptions { no_history: false, ..options.clone() }) else {
        bail!("no history database: HOME is not set; name one with --history-db PATH");
    };
    if !path.exists() {
        bail!(
            "no history at {}: runs are stored there as they finish (or name another with --history-db)",
            path.display()
        );
    }
    let history = History::open(&path).with_context(|| format!("cannot open the history at {}", path.display()))?;
    Ok((history, path))
}

/// A stored result, for `compare` and `history show`.
pub fn load(options: &HistoryOptions, id: i64) -> Result<RunResult> {
    let (history, path) = open(options)?;
    let text = history.json(id)?;
    Ok(parse_result(&path.join(format!("#{id}")), &text)?)
}

pub fn run(args: &HistoryArgs) -> Result<ExitCode> {
    let (history, _) = open(&args.db)?;
    let filter = Filter {
        host: args.host.clone(),
        target: args.target.clone(),
        command: args.command.clone(),
        limit: args.limit,
    };
    let text = match &args.action {
        None => list(&history.list(&filter)?),
        Some(HistoryAction::Show { id, json: true }) => history.json(*id)?,
        Some(HistoryAction::Show { id, json: false }) => {
            render_to_string(Format::Summary.renderer(), &load(&args.db, *id)?)
        }
        Some(HistoryAction::Trend { figure: None }) => {
            let names = history.figure_names(&filter)?;
            let mut out =
                String::from("figures (runs that have them); follow one with `streamcap history trend NAME`:\n");
            for (name, runs) in names {
                out.push_str(&format!("  {name} ({runs})\n"));
            }
            out
        }
        Some(HistoryAction::Trend { figure: Some(name) }) => trend(name, &history.trend(name, &filter)?)?,
    };
    print_quietly(&text);
    Ok(ExitCode::SUCCESS)
}

fn list(entries: &[Entry]) -> String {
    let mut table = comfy_table::Table::new();
    table.load_style(comfy_table::presets::NOTHING);
    table.set_header(["id", "date (UTC)", "host", "target", "command", "headline"]);
    for e in entries {
        let date = e.started_at.replace('T', " ").trim_end_matches('Z').to_string();
        let status = if e.status == "completed" { String::new() } else { format!(" ({})", e.status) };
        table.add_row([
            format!("#{}", e.id),
            date,
            e.host.clone(),
            e.target.clone(),
            e.command.clone(),
            format!("{}{status}", e.headline),
        ]);
    }
    if entries.is_empty() { "no runs match\n".into() } else { format!("{table}\n") }
}

/// One figure over time: a line per run with the change from the first, and a spark line.
fn trend(name: &str, points: &[(Entry, f64, String)]) -> Result<String> {
    let Some((_, first, unit)) = points.first() else {
        bail!("no run has the figure '{name}'; `streamcap history trend` lists the figures there are");
    };
    let mut table = comfy_table::Table::new();
    table.load_style(comfy_table::presets::NOTHING);
    table.set_header(["id", "date (UTC)", "host", "target", unit.as_str(), "vs first"]);
    for (e, v, _) in points {
        let change = if *first != 0.0 { format!("{:+.1} %", (v / first - 1.0) * 100.0) } else { "—".into() };
        table.add_row([
            format!("#{}", e.id),
            e.started_at.replace('T', " "),
            e.host.clone(),
            e.target.clone(),
            format!("{v:.2}"),
            change,
        ]);
    }
    let values: Vec<f64> = points.iter().map(|p| p.1).collect();
    Ok(format!("{name}\n{table}\n{}\n", spark(&values)))
}

/// ▁▂▃▄▅▆▇█ scaled between the smallest and largest value.
fn spark(values: &[f64]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let (lo, hi) = values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
    values
        .iter()
        .map(|v| if hi > lo { BARS[(((v - lo) / (hi - lo)) * 7.0).round() as usize] } else { BARS[3] })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spark_lines_scale_between_the_extremes() {
        assert_eq!(spark(&[1.0, 2.0, 3.0]), "▁▅█");
        assert_eq!(spark(&[5.0, 5.0]), "▄▄");
    }

    #[test]
    fn history_is_off_when_asked_and_follows_the_named_path() {
        let off = HistoryOptions { no_history: true, history_db: Some("/x/h.db".into()) };
        assert_eq!(database(&off), None);
        let named = HistoryOptions { no_history: false, history_db: Some("/x/h.db".into()) };
        assert_eq!(database(&named), Some(PathBuf::from("/x/h.db")));
    }
}
