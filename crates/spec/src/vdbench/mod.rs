//! The vdbench parameter-file reader: `parse_vdbench_job` turns a vdbench 5.04 parameter file (raw sd/wd/rd or
//! file-system fsd/fwd/rd) into a `JobSpec`, faithfully or not at all: every keyword it cannot reproduce is an
//! error naming the file, the line, the keyword and what would be accepted, never silently ignored.
//!
//! Stages, one file each: `lexer` (lines → parameters), `values` (numbers, lists, ranges), `model` (records,
//! abbreviations, defaults, `--set`), `expand` (rd for-loops), `mapping` (records → phases). Each stage records
//! what is wrong in [`Problems`] and goes on, so that one try shows every problem of a file. This module only
//! wires them and formats errors; it does no I/O besides reading `include=` files and looking up the luns a
//! file names (see `mapping::luns`).

mod counted;
mod expand;
mod keywords;
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

    /// The file the problem is in (the parameter file itself for command-line options).
    fn path(&self, root: &Path) -> PathBuf {
        match &self.at {
            Where::Line(path, _) | Where::File(path) => path.clone(),
            Where::Option(_) => root.to_path_buf(),
        }
    }

    /// `line 3: keyword 'xfersiz' (in wd=wd1): unknown keyword; expected one of …` (the file is said apart).
    fn line(&self) -> String {
        let context = match (&self.keyword, &self.record) {
            (Some(k), Some(r)) => format!("keyword '{k}' (in {r}): "),
            (Some(k), None) => format!("keyword '{k}': "),
            (None, Some(r)) => format!("{r}: "),
            (None, None) => String::new(),
        };
        match &self.at {
            Where::Line(_, line) => format!("line {line}: {context}{}", self.message),
            Where::Option(option) => format!("{option}: {context}{}", self.message),
            Where::File(_) => format!("{context}{}", self.message),
        }
    }
}

/// At most this many problems of a file are shown at once.
const MAX_SHOWN: usize = 20;

/// Every problem found in a file, so that one try shows them all (up to [`MAX_SHOWN`]).
#[derive(Debug, Default)]
pub(super) struct Problems {
    list: Vec<VdbError>,
}

impl Problems {
    /// Adds a problem, once: a record used by several runs reports its problem one time.
    pub fn push(&mut self, e: VdbError) {
        let same = |x: &VdbError| x.at == e.at && x.keyword == e.keyword && x.message == e.message;
        if !self.list.iter().any(same) {
            self.list.push(e);
        }
    }

    /// The value, or `None` with its problem recorded.
    pub fn take<T>(&mut self, result: Result<T, VdbError>) -> Option<T> {
        result.map_err(|e| self.push(e)).ok()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// For tests: the first problem found.
    #[cfg(test)]
    pub fn into_first(self) -> Option<VdbError> {
        self.list.into_iter().next()
    }

    /// Every problem in file order (the file itself first, then its includes, then the command line), one per
    /// line: the first as `FILE: line N: …` through the error's own path, the others with their file.
    fn into_spec(self, root: &Path) -> SpecError {
        let order = |e: &VdbError| match &e.at {
            Where::Line(file, line) => (u8::from(file != root), file.clone(), *line),
            Where::File(file) => (u8::from(file != root), file.clone(), 0),
            Where::Option(_) => (2, PathBuf::new(), 0),
        };
        let mut list = self.list;
        list.sort_by_key(order);
        let total = list.len();
        let first_path = list.first().map_or(root.to_path_buf(), |e| e.path(root));
        let mut lines: Vec<String> = Vec::new();
        for (i, e) in list.into_iter().take(MAX_SHOWN).enumerate() {
            let message = e.line();
            let line = if i == 0 { message } else { format!("{}: {message}", e.path(root).display()) };
            lines.push(crate::limits::shorten(&line, crate::limits::MAX_MESSAGE_LINE).into_owned());
        }
        if total > MAX_SHOWN {
            lines.push(format!("… and {} more problems; fix these and read the file again", total - MAX_SHOWN));
        }
        SpecError::Syntax { path: first_path, message: lines.join("\n") }
    }
}

/// Reads a vdbench parameter file. `path` is used to find `include=` files and in messages; `options` carries
/// the command line's anchors (`--anchor H:=/srv/pool`), `--set key=value` overrides and variables, and the
/// `--elapsed`/`--interval`/`--warmup` overrides of every rd. Every problem of the file is reported at once (at
/// most 20), each with the file, the line, the keyword and what to do.
pub fn parse_vdbench_job(path: &Path, text: &str, options: &ReadOptions) -> Result<JobSpec, SpecError> {
    let mut problems = Problems::default();
    let job = read(path, text, options, &mut problems);
    match job {
        Some(job) if problems.is_empty() => Ok(job),
        _ => Err(problems.into_spec(path)),
    }
}

fn read(path: &Path, text: &str, options: &ReadOptions, problems: &mut Problems) -> Option<JobSpec> {
    let lexed = lexer::lex(path, text, &options.sets, problems);
    let mut model = model::group(&lexed, problems);
    for (key, value) in &options.sets {
        if !model::apply_set(&mut model, key, value) && !lexed.used_vars.contains(key) {
            problems.push(VdbError::at(
                &Where::Option(format!("--set {key}={value}")),
                format!(
                    "no record in {} has a keyword '{key}' and the file uses no ${key}: check the spelling",
                    path.display()
                ),
            ));
        }
    }
    counted::expand(&mut model, problems);
    let mut job = mapping::map(&model, options, path, problems)?;
    if let Some(at) = &lexed.text_after_rds {
        job.notices.push(format!(
            "{at}: free text after the last rd (as in vdbench's example files); the file is read up to it"
        ));
    }
    Some(job)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_extras;
#[cfg(test)]
mod tests_fs;
#[cfg(test)]
mod tests_mix;
#[cfg(test)]
mod tests_rates;
#[cfg(test)]
mod tests_shapes;
#[cfg(test)]
mod tests_shared;
