//! The "will it work" grid of `check --expect` (and of `streams --expect 2x2160p`, for its one format) in every
//! report: one row per format of the household (asked,
//! capacity, plan for, the answer for that format alone) and the answer for all of it together, in words. One
//! row model (`household_rows`) drawn by the terminal, Markdown and HTML reports alike.

use std::io::{self, Write};

use super::rows::{Column, Rows, num, text};
use super::terminal::STYLE;
use crate::results::{Answer, CheckSummary, HouseholdAnswer};

const COLUMNS: [Column; 5] = [text("format"), num("asked"), num("streams"), num("plan for"), text("alone")];

/// The household's rows, when `--expect` asked.
pub(super) fn household_rows(household: &HouseholdAnswer) -> Rows {
    let mut rows = Rows::new(&COLUMNS);
    for r in &household.rows {
        let measured =
            |n: u32| if r.capacity == 0 && r.alone == Answer::NotMeasured { "—".into() } else { n.to_string() };
        rows.push(vec![
            r.label.clone(),
            r.wanted.to_string(),
            measured(r.capacity),
            measured(r.plan_for),
            r.alone.words().into(),
        ]);
    }
    rows
}

/// The title line of the section.
pub(super) fn title(household: &HouseholdAnswer) -> String {
    format!("Will it work: {} (margin {:.0} %)", household.expect, household.margin_pct)
}

/// The terminal section, after the verdict.
pub(super) fn write_household(out: &mut dyn Write, check: &CheckSummary) -> io::Result<()> {
    let Some(household) = &check.household else { return Ok(()) };
    writeln!(out)?;
    write_grid(out, household)
}

/// The grid in the terminal: `check`'s section, and `streams --expect 2x2160p` after its answer.
pub(super) fn write_grid(out: &mut dyn Write, household: &HouseholdAnswer) -> io::Result<()> {
    writeln!(out, "{}", title(household))?;
    writeln!(out, "{}", household_rows(household).terminal(STYLE))?;
    writeln!(out, "together: {}", household.words)
}

/// The Markdown section.
pub(super) fn write_markdown(out: &mut dyn Write, check: &CheckSummary) -> io::Result<()> {
    let Some(household) = &check.household else { return Ok(()) };
    write_markdown_grid(out, household)
}

/// The grid in Markdown: `check`'s section, and `streams --expect 2x2160p` after its answer.
pub(super) fn write_markdown_grid(out: &mut dyn Write, household: &HouseholdAnswer) -> io::Result<()> {
    writeln!(out, "{}:", title(household))?;
    writeln!(out)?;
    household_rows(household).markdown(out)?;
    writeln!(out, "**Together: {}**", household.words)?;
    writeln!(out)
}

/// The HTML section's body.
pub(super) fn html_body(household: &HouseholdAnswer) -> String {
    format!(
        "{}<p class=\"words\"><strong>Together: {}</strong></p>",
        household_rows(household).html(),
        crate::report::html::esc(&household.words)
    )
}
