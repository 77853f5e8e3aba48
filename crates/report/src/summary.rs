//! The terminal renderer: picks the inspect, cache, sweep, check, streams or run summary by what the result holds (a check
//! result also holds phases, so the check part wins, then the streams part). The summaries themselves live in
//! `inspect`, `check`, `streams` and `terminal`; this file only chooses.

use std::io::{self, Write};

use super::Renderer;
use super::terminal::RunSummary;
use crate::results::RunResult;

/// The terminal summary.
pub struct Summary;

impl Renderer for Summary {
    fn render(&self, result: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        if is_inspect(result) {
            super::inspect::write_inspect(out, result)
        } else if let Some(cache) = &result.cache {
            super::cache::write_cache_summary(out, result, cache)
        } else if let Some(sweep) = &result.sweep {
            super::sweep::write_sweep_summary(out, result, sweep)
        } else if let Some(check) = &result.check {
            super::check::write_check_summary(out, result, check)
        } else if let Some(streams) = &result.streams {
            super::streams::write_streams_summary(out, result, streams)
        } else {
            RunSummary.render(result, out)
        }
    }
}

/// What `streamcap inspect` saves: no phases, and "inspect" as the configuration's command.
fn is_inspect(result: &RunResult) -> bool {
    result.phases.is_empty() && result.config.get("command").and_then(|c| c.as_str()) == Some("inspect")
}
