//! The terminal renderer: picks the check, streams or run summary by what the result holds (a check result also
//! holds phases, so the check part wins, then the streams part). The summaries themselves live in `check`,
//! `streams` and `terminal`; this file only chooses.

use std::io::{self, Write};

use super::Renderer;
use crate::results::RunResult;

/// The terminal summary.
pub struct Summary;

impl Renderer for Summary {
    fn render(&self, result: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        if let Some(check) = &result.check {
            super::write_check_summary(out, result, check)
        } else if let Some(streams) = &result.streams {
            super::write_streams_summary(out, result, streams)
        } else {
            super::write_summary(out, result)
        }
    }
}
