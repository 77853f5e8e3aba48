//! A comparison in the terminal: which run is which, warnings, then one table of every figure side by side with
//! ratios to the baseline and the verdicts, and the noise rule in one line.

use std::io::{self, Write};

use comfy_table::{CellAlignment, Table};

use super::Comparison;
use crate::report::{Renderer, Summary};

/// How each row's verdict is made; said under the table, as a reading aid and not as a verdict of its own.
pub const RULE: &str = "how each row is judged: a difference no larger than the runs' own interval-to-interval variation \
                        (the larger standard deviation; for a stream step, the stream-to-stream variation; for a \
                        capacity, the search's step) is no clear difference: a ratio within 1 ± that variation over the \
                        baseline";

/// Said once under the table when some row could not be judged (issue 30: every phase row of two checks said
/// "too few intervals to judge", and nothing said why or what to do).
pub const UNJUDGED: &str = "cannot judge: a run measured that figure in under two intervals, so how much it moves by \
                            itself is unknown (a --quick check's phases last 0.5 s); judge them with longer phases \
                            (a default check, or `run` with a shorter --interval), or read the formats' rows";

/// What stands instead of a table when the runs share no figure (compared anyway, with --allow-different).
pub const NOTHING_IN_COMMON: &str = "nothing to set side by side: these runs share no phase, stream count or format \
                                     (the warnings above say how they differ)";

impl Renderer<Comparison> for Summary {
    fn render(&self, c: &Comparison, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "streamcap compare")?;
        for line in c.legend() {
            writeln!(out, "  {line}")?;
        }
        for w in &c.warnings {
            writeln!(out, "warning: {w}")?;
        }
        writeln!(out)?;
        if c.rows.is_empty() {
            return writeln!(out, "{NOTHING_IN_COMMON}");
        }
        let (header, rows) = c.table();
        let mut table = Table::new();
        table.load_style(crate::report::terminal::STYLE);
        table.set_header(header.clone());
        for row in rows {
            table.add_row(row);
        }
        for column in 2..header.len() - 1 {
            if let Some(col) = table.column_mut(column) {
                col.set_cell_alignment(CellAlignment::Right);
            }
        }
        writeln!(out, "{table}")?;
        writeln!(out, "{RULE}")?;
        if c.unjudged() {
            writeln!(out, "{UNJUDGED}")?;
        }
        Ok(())
    }
}
