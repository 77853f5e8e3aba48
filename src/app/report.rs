//! `streamcap report RESULT.json`: reads a saved result and renders it again in the chosen format. The format
//! picks the renderer; nothing here knows what a format looks like.

use std::process::ExitCode;

use anyhow::Result;

use super::run_cmd::print_quietly;
use crate::cli::ReportArgs;
use crate::report::{Format, render_to_string};
use crate::results::read_result;

pub fn run(args: &ReportArgs) -> Result<ExitCode> {
    let result = read_result(&args.result)?;
    print_quietly(&render_to_string(Format::from(args.format).renderer(), &result));
    Ok(ExitCode::SUCCESS)
}
