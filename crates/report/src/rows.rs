//! The one row model of the report's tables, as hyperfine's exporters have it: a subject's table — its columns
//! and its rows, each cell already in its words and units — is built once, by the module that owns the subject
//! (`phases`, `cache`, `sweep`, `planning`, `trial`, `cluster` …), and every format only draws it: a comfy-table
//! for the terminal, a GitHub table for Markdown, an HTML table for the page. So a label cannot read one way in
//! one format and another way in the next. A format may show fewer columns than the model holds (`only`: the
//! terminal is narrow), never other words. This module knows nothing of results; it only draws.

use std::io::{self, Write};

use comfy_table::{CellAlignment, Table, TableStyle};

/// One column: its heading, and whether it holds numbers (right-aligned in every format).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    /// The heading, the same in every format.
    pub name: &'static str,
    /// Numbers: right-aligned.
    pub numeric: bool,
}

/// A column of words.
pub const fn text(name: &'static str) -> Column {
    Column { name, numeric: false }
}

/// A column of numbers.
pub const fn num(name: &'static str) -> Column {
    Column { name, numeric: true }
}

/// A table made once from a result: columns, and rows of cells in words and units.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rows {
    /// The columns, in order.
    pub columns: Vec<Column>,
    /// One entry per row, one cell per column.
    pub rows: Vec<Vec<String>>,
}

impl Rows {
    /// An empty table with these columns.
    pub fn new(columns: &[Column]) -> Rows {
        Rows { columns: columns.to_vec(), rows: Vec::new() }
    }

    /// Adds a row; a short row (a phase that completed nothing) is filled with empty cells.
    pub fn push(&mut self, mut cells: Vec<String>) {
        cells.resize(self.columns.len(), String::new());
        self.rows.push(cells);
    }

    /// No rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The same rows with only the named columns, in the order named (a name the table lacks is skipped).
    pub fn only(&self, names: &[&str]) -> Rows {
        let picked: Vec<usize> = names.iter().filter_map(|n| self.columns.iter().position(|c| c.name == *n)).collect();
        Rows {
            columns: picked.iter().map(|&i| self.columns[i]).collect(),
            rows: self.rows.iter().map(|row| picked.iter().map(|&i| row[i].clone()).collect()).collect(),
        }
    }

    /// The headings.
    pub fn header(&self) -> Vec<&'static str> {
        self.columns.iter().map(|c| c.name).collect()
    }

    /// Which columns hold numbers.
    pub fn numeric(&self) -> Vec<bool> {
        self.columns.iter().map(|c| c.numeric).collect()
    }

    /// The terminal's table in `style`, numbers right-aligned.
    pub fn terminal(&self, style: TableStyle) -> Table {
        let mut table = Table::new();
        table.load_style(style);
        table.set_header(self.header());
        for row in &self.rows {
            table.add_row(row.clone());
        }
        for (i, column) in self.columns.iter().enumerate() {
            if let Some(c) = table.column_mut(i).filter(|_| column.numeric) {
                c.set_cell_alignment(CellAlignment::Right);
            }
        }
        table
    }

    /// A GitHub-flavoured Markdown table, then a blank line.
    pub fn markdown(&self, out: &mut dyn Write) -> io::Result<()> {
        super::markdown::table(out, &self.header(), &self.numeric(), &self.rows)
    }

    /// An HTML table, every cell escaped.
    pub fn html(&self) -> String {
        super::html::table(&self.header(), &self.numeric(), &self.rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Rows {
        let mut rows = Rows::new(&[text("what"), num("MB/s"), text("note")]);
        rows.push(vec!["a|b".into(), "12".into(), "<x>".into()]);
        rows.push(vec!["short".into()]);
        rows
    }

    #[test]
    fn every_format_draws_the_same_cells() {
        let rows = sample();
        let mut md = Vec::new();
        rows.markdown(&mut md).unwrap();
        let md = String::from_utf8(md).unwrap();
        assert_eq!(md, "| what | MB/s | note |\n|---|--:|---|\n| a\\|b | 12 | <x> |\n| short |  |  |\n\n");
        let html = rows.html();
        assert!(html.contains("<th class=\"num\">MB/s</th>") && html.contains("<td>&lt;x&gt;</td>"), "{html}");
        let term = rows.terminal(comfy_table::presets::NOTHING).to_string();
        assert!(term.contains("a|b") && term.contains("<x>") && term.contains("short"), "{term}");
    }

    #[test]
    fn only_keeps_the_named_columns_in_order() {
        let picked = sample().only(&["note", "what", "no such column"]);
        assert_eq!(picked.header(), ["note", "what"]);
        assert_eq!(picked.rows[0], ["<x>", "a|b"]);
        assert_eq!(picked.numeric(), [false, false]);
    }
}
