//! A comparison as Markdown: the runs as a list, warnings, the side-by-side table and the noise rule.

use std::io::{self, Write};

use super::Comparison;
use super::terminal::{NOTHING_IN_COMMON, RULE, UNJUDGED};
use crate::report::markdown::{cell, table};
use crate::report::{Markdown, Renderer};

impl Renderer<Comparison> for Markdown {
    fn render(&self, c: &Comparison, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "### streamcap compare")?;
        writeln!(out)?;
        for line in c.legend() {
            writeln!(out, "- {}", cell(&line))?;
        }
        for w in &c.warnings {
            writeln!(out, "- **warning:** {}", cell(w))?;
        }
        writeln!(out)?;
        if c.rows.is_empty() {
            return writeln!(out, "_{NOTHING_IN_COMMON}_");
        }
        let (header, rows) = c.table();
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        let align: Vec<bool> = (0..header.len()).map(|i| i >= 2 && i + 1 < header.len()).collect();
        table(out, &header, &align, &rows)?;
        writeln!(out, "_{RULE}_")?;
        if c.unjudged() {
            writeln!(out)?;
            writeln!(out, "_{UNJUDGED}_")?;
        }
        Ok(())
    }
}
