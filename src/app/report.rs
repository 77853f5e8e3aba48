//! `streamcap report RESULT.json`: reads a saved result and renders it again in the chosen format, and writes
//! the HTML report to a file when asked. The format picks the renderer; nothing here knows what a format looks
//! like. `write_html` is also what run, streams and check call for their `--html FILE`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};

use super::output::print_quietly;
use crate::cli::ReportArgs;
use crate::report::{Format, Html, render_to_string};
use crate::results::{RunResult, read_result};

pub fn run(args: &ReportArgs) -> Result<ExitCode> {
    super::outputs::check(&[("--html", args.html.as_deref())], &[args.result.as_path()], None)?;
    let result = read_result(&args.result)?;
    print_quietly(&render_to_string(Format::from(args.format).renderer(), &result));
    if let Some(path) = &args.html {
        write_html(&result, path)?;
        say_written(path);
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the HTML report of `result` to `path` (replacing it: the user named it).
pub fn write_html(result: &RunResult, path: &Path) -> Result<()> {
    write_page(&render_to_string(&Html, result), path)
}

/// Writes a rendered page to `path` under the output-file rule (`crate::outfile`; `-` is stdout).
pub fn write_page(page: &str, path: &Path) -> Result<()> {
    // On a terminal, text from results must not drive it (as everything printed, `output::print_quietly`).
    let page = if crate::outfile::is_stdout(path) { crate::escape::for_terminal(page) } else { page.into() };
    crate::outfile::write(path, page.as_bytes()).context("cannot write the HTML report")
}

/// Says where the HTML report went (nothing when it went to standard output).
pub fn say_written(path: &Path) {
    if !crate::outfile::is_stdout(path) {
        eprintln!("HTML report: {}", path.display());
    }
}

/// The end of run, streams and check: writes the HTML report when one is wanted and says where; a report that
/// cannot be written is a warning, since the measurements and the JSON stand.
pub fn html_after_run(result: &RunResult, path: Option<&Path>) {
    let Some(path) = path else { return };
    match write_html(result, path) {
        Ok(()) => say_written(path),
        Err(e) => eprintln!("warning: {e:#}"),
    }
}

/// Where `check` writes its HTML report: `--html FILE`; else beside the JSON (NAME.html; not for `--json -`); else
/// a new file in the current directory named after the host and the time (never an existing file).
pub fn check_html_path(args: &crate::cli::CheckArgs) -> Option<PathBuf> {
    if args.no_html {
        return None;
    }
    let beside_json =
        args.output.json.as_ref().filter(|j| !crate::outfile::is_stdout(j)).map(|j| j.with_extension("html"));
    if let Some(path) = args.output.html.clone().or(beside_json) {
        return Some(path);
    }
    let host = crate::sysinfo::HostFacts::gather().hostname;
    let stamp = crate::results::rfc3339(std::time::SystemTime::now()).replace([':', '-'], "").replace('T', "-");
    let stem = format!("streamcap-check-{host}-{}", stamp.trim_end_matches('Z'));
    (1..100)
        .map(|n| if n == 1 { PathBuf::from(format!("{stem}.html")) } else { PathBuf::from(format!("{stem}-{n}.html")) })
        .find(|p| !p.exists())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn check_args(args: &[&str]) -> crate::cli::CheckArgs {
        let cli = Cli::parse_from(["streamcap", "check"].iter().chain(args));
        let Command::Check(args) = cli.command else { panic!() };
        *args
    }

    #[test]
    fn check_writes_its_report_beside_the_json_or_as_a_new_file_here() {
        assert_eq!(check_html_path(&check_args(&["--json", "out/r.json"])), Some(PathBuf::from("out/r.html")));
        assert_eq!(
            check_html_path(&check_args(&["--json", "r.json", "--html", "x.html"])),
            Some(PathBuf::from("x.html"))
        );
        assert_eq!(check_html_path(&check_args(&["--json", "r.json", "--no-html"])), None);
        let here = check_html_path(&check_args(&[])).unwrap();
        let name = here.to_str().unwrap();
        assert!(name.starts_with("streamcap-check-") && name.ends_with(".html") && !here.exists(), "{name}");
    }
}
