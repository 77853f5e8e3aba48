//! `streamcap compare A.json B.json [C.json …]`: loads the results (files, or history ids such as #12), lets `report::compare` match and judge them
//! (unlike workloads are refused with exit code 2 unless --allow-different), and prints the terminal or Markdown
//! table; writes the HTML page when asked.

use std::process::ExitCode;

use anyhow::{Context, Result};

use super::output::print_quietly;
use super::report::write_page;
use crate::cli::{CompareArgs, parse_run_id};
use crate::report::compare::{Comparison, Run, run_key};
use crate::report::{Format, Html, render_to_string};
use crate::results::read_result;

pub fn run(args: &CompareArgs) -> Result<ExitCode> {
    let inputs: Vec<&std::path::Path> = args.results.iter().map(std::path::Path::new).collect();
    super::outputs::check(&[("--html", args.html.as_deref())], &inputs, None)?;
    let mut runs = Vec::new();
    for (n, source) in args.results.iter().enumerate() {
        // A file that exists is a file; otherwise a number (or #number) is a run in the history.
        let path = std::path::Path::new(source);
        let (result, label) = match parse_run_id(source) {
            Ok(id) if !path.exists() => (super::history::load(&args.history, id)?, format!("history #{id}")),
            _ => (read_result(path).with_context(|| format!("cannot compare {source}"))?, source.clone()),
        };
        runs.push(Run { key: run_key(n), source: label, result });
    }
    let comparison = Comparison::build(runs, args.allow_different)?;
    let format = if args.markdown { Format::Markdown } else { Format::from(args.format) };
    let renderer = format.comparison_renderer().expect("the terminal and Markdown formats render comparisons");
    print_quietly(&render_to_string(renderer, &comparison));
    if let Some(path) = &args.html {
        write_page(&render_to_string(&Html, &comparison), path)?;
        super::report::say_written(path);
    }
    Ok(ExitCode::SUCCESS)
}
