//! The planner's one line at the end of a check summary (`CheckSummary::planner_hint`, set by `app::check`
//! from the planning model): printed as it was stored, after the verdict. Reads only `results` types.

use std::io::{self, Write};

use crate::results::CheckSummary;

/// Writes the planner's line, if the check has one, after a blank line.
pub fn write_planner_hint(out: &mut dyn Write, check: &CheckSummary) -> io::Result<()> {
    match &check.planner_hint {
        Some(hint) => {
            writeln!(out)?;
            writeln!(out, "{hint}")
        }
        None => Ok(()),
    }
}
