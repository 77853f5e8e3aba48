//! The vdbench parameter-file reader: `parse_vdbench_job` turns a vdbench 5.04 parameter file (raw sd/wd/rd or
//! file-system fsd/fwd/rd) into a `JobSpec`, faithfully or not at all: every keyword it cannot reproduce is an
//! error naming the file, the line, the keyword and what would be accepted, never silently ignored.
//!
//! Stages, one file each: `lexer` (lines → parameters), `values` (numbers, lists, ranges), `model` (records,
//! abbreviations, defaults, `--set`), `expand` (rd for-loops), `mapping` (records → phases). This module only
//! wires them and formats errors; it does no I/O besides reading `include=` files.

mod expand;
mod lexer;
mod mapping;
mod model;
mod values;

use std::fmt;
use std::path::{Path, PathBuf};

use super::{JobSpec, ReadOptions, SpecError};

/// Where a parameter came from.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Where {
    /// A line of a parameter file (the file itself or an include).
    Line(PathBuf, usize),
    /// A command-line option such as `--set files=200`.
    Option(String),
    /// The file as a whole.
    File(PathBuf),
}

impl fmt::Display for Where {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Where::Line(path, line) => write!(f, "{}:{line}", path.display()),
            Where::Option(option) => f.write_str(option),
            Where::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// A problem with the parameter file, before it is formatted into a `SpecError`.
#[derive(Debug, Clone)]
pub(super) struct VdbError {
    pub at: Where,
    pub keyword: Option<String>,
    /// The record the keyword is in, as `wd=wd1`.
    pub record: Option<String>,
    pub message: String,
}

impl VdbError {
    fn at(at: &Where, message: String) -> VdbError {
        VdbError { at: at.clone(), keyword: None, record: None, message }
    }

    fn keyword(at: &Where, keyword: &str, record: Option<String>, message: String) -> VdbError {
        VdbError { at: at.clone(), keyword: Some(keyword.to_string()), record, message }
    }

    /// `line 3: keyword 'xfersiz' (in wd=wd1): unknown keyword; expected one of …`, with the file as the path.
    fn into_spec(self, root: &Path) -> SpecError {
        let mut context = match (&self.keyword, &self.record) {
            (Some(k), Some(r)) => format!("keyword '{k}' (in {r}): "),
            (Some(k), None) => format!("keyword '{k}': "),
            (None, Some(r)) => format!("{r}: "),
            (None, None) => String::new(),
        };
        let path = match self.at {
            Where::Line(path, line) => {
                context = format!("line {line}: {context}");
                path
            }
            Where::Option(option) => {
                context = format!("{option}: {context}");
                root.to_path_buf()
            }
            Where::File(path) => path,
        };
        SpecError::Syntax { path, message: format!("{context}{}", self.message) }
    }
}

/// Reads a vdbench parameter file. `path` is used to find `include=` files and in messages; `options` carries
/// the command line's anchors (`--anchor H:=/srv/pool`), `--set key=value` overrides and variables, and the
/// `--elapsed`/`--interval`/`--warmup` overrides of every rd.
pub fn parse_vdbench_job(path: &Path, text: &str, options: &ReadOptions) -> Result<JobSpec, SpecError> {
    read(path, text, options).map_err(|e| e.into_spec(path))
}

fn read(path: &Path, text: &str, options: &ReadOptions) -> Result<JobSpec, VdbError> {
    let lexed = lexer::lex(path, text, &options.sets)?;
    let mut model = model::group(&lexed)?;
    for (key, value) in &options.sets {
        if !model::apply_set(&mut model, key, value) && !lexed.used_vars.contains(key) {
            return Err(VdbError::at(
                &Where::Option(format!("--set {key}={value}")),
                format!(
                    "no record in {} has a keyword '{key}' and the file uses no ${key}: check the spelling",
                    path.display()
                ),
            ));
        }
    }
    mapping::map(&model, options, path)
}

#[cfg(test)]
mod tests;
