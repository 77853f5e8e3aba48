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
        Some(HistoryAction::Trend { figure: None }) => groups(&history.figure_names(&filter)?),
        Some(HistoryAction::Trend { figure: Some(name) }) => match history.trend(name, &filter)? {
            points if points.is_empty() => group(name, &history.figure_names(&filter)?)?,
            points => trend(name, &points)?,
        },
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

/// The groups of figures (a phase, a check, a cache's plateaus: the first part of a figure's name), one line
/// each with how many runs and figures it has and one figure to start from; a few runs make hundreds of figures,
/// too many to list (issue 30: about 400 names after 8 runs).
fn groups(names: &[(String, u32)]) -> String {
    if names.is_empty() {
        return "no run has any figure yet\n".into();
    }
    let mut groups: Vec<(&str, u32, Vec<&str>)> = Vec::new();
    for (name, runs) in names {
        let head = name.split('/').next().unwrap_or(name);
        match groups.iter_mut().find(|g| g.0 == head) {
            Some(g) => {
                g.1 = g.1.max(*runs);
                g.2.push(name);
            }
            None => groups.push((head, *runs, vec![name])),
        }
    }
    let mut table = comfy_table::Table::new();
    table.load_style(comfy_table::presets::NOTHING);
    table.set_header(["group", "runs", "figures", "for example"]);
    for (head, runs, figures) in &groups {
        let main = ["/streams", "/mbps", "/iops", "/rate"];
        let example = main.iter().find_map(|m| figures.iter().find(|f| f.ends_with(m))).unwrap_or(&figures[0]);
        table.add_row([head.to_string(), runs.to_string(), figures.len().to_string(), example.to_string()]);
    }
    format!(
        "{table}\n`streamcap history trend GROUP` lists a group's figures; `streamcap history trend NAME` follows one\n"
    )
}

/// The figures of one group (`history trend GROUP`), or the refusal of a name that is neither.
fn group(name: &str, names: &[(String, u32)]) -> Result<String> {
    let prefix = format!("{}/", name.trim_end_matches('/'));
    let figures: Vec<&(String, u32)> = names.iter().filter(|(n, _)| n.starts_with(&prefix)).collect();
    if figures.is_empty() {
        bail!("no run has the figure or group '{name}'; `streamcap history trend` lists the groups there are");
    }
    let mut out = format!("figures of {name} (runs that have them); follow one with `streamcap history trend NAME`:\n");
    for (figure, runs) in figures {
        out.push_str(&format!("  {figure} ({runs})\n"));
    }
    Ok(out)
}

/// A figure's values as they are said: whole counts whole ("256", not "256.00"), others to about three
/// significant figures.
fn shown(values: &[f64]) -> impl Fn(f64) -> String {
    let whole = values.iter().all(|v| v.fract() == 0.0);
    move |v: f64| match v.abs() {
        _ if whole => format!("{v:.0}"),
        a if a >= 100.0 => format!("{v:.0}"),
        a if a >= 10.0 => format!("{v:.1}"),
        _ => format!("{v:.2}"),
    }
}

/// One figure over time: a line per run with the change from the first, and a spark line.
fn trend(name: &str, points: &[(Entry, f64, String)]) -> Result<String> {
    let Some((_, first, unit)) = points.first() else {
        bail!("no run has the figure '{name}'; `streamcap history trend` lists the figures there are");
    };
    let values: Vec<f64> = points.iter().map(|p| p.1).collect();
    let show = shown(&values);
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
            show(*v),
            change,
        ]);
    }
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

    /// Regression (issue 30): a trend showed "256.00" streams, and `history trend` about 400 names.
    #[test]
    fn whole_counts_are_whole_and_figures_are_listed_by_group() {
        let show = shown(&[256.0, 300.0]);
        assert_eq!((show(256.0), show(300.0)), ("256".to_string(), "300".to_string()));
        let show = shown(&[1225.4, 3.456, 12.34]);
        assert_eq!((show(1225.4), show(3.456), show(12.34)), ("1225".into(), "3.46".into(), "12.3".into()));
        let names: Vec<(String, u32)> = [
            ("check/1080p-h264/streams", 8),
            ("check/2160p-hevc/streams", 8),
            ("seq-read-1m-qd8/read/iops", 3),
            ("seq-read-1m-qd8/read/mbps", 3),
            ("seq-read-1m-qd8/read/p99-ms", 3),
        ]
        .iter()
        .map(|(n, r)| (n.to_string(), *r))
        .collect();
        let text = groups(&names);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "a header, two groups and the hint:\n{text}");
        assert!(lines[1].contains("check") && lines[1].contains("check/1080p-h264/streams"), "{text}");
        assert!(lines[2].contains("seq-read-1m-qd8/read/mbps") && lines[2].contains(" 3 "), "{text}");
        let listed = group("seq-read-1m-qd8", &names).unwrap();
        assert_eq!(listed.lines().count(), 4, "{listed}");
        assert!(group("nothing", &names).unwrap_err().to_string().contains("lists the groups"));
    }

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
