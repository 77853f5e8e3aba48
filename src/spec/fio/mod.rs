//! fio job files: read a `.fio` file into a `JobSpec`, one phase per job section.
//!
//! `ini` splits the text (sections, comments, includes, `${VAR}`), `values` knows fio's number and unit rules,
//! `options` is the table of options streamcap reads, and `mapping` turns a job's options into a `PhaseSpec`.
//! Every problem is a `SpecError::Syntax` naming the file, the line, the option and what is expected; nothing
//! is silently ignored.

mod files;
mod ini;
mod mapping;
mod options;
mod values;

use std::path::Path;

pub use ini::{Host, SystemHost};

use super::SpecError;
use super::job::JobSpec;

/// Reads a fio job file; `path` is used for includes, messages and the origin.
pub fn parse_fio_job(path: &Path, text: &str) -> Result<JobSpec, SpecError> {
    parse_fio_job_with(path, text, &SystemHost)
}

/// [`parse_fio_job`] with the environment, host figures and included files taken from `host`.
pub fn parse_fio_job_with(path: &Path, text: &str, host: &dyn Host) -> Result<JobSpec, SpecError> {
    let syntax = |file: &Path, line: usize, message: String| SpecError::Syntax {
        path: file.to_path_buf(),
        message: format!("line {line}: {message}"),
    };
    let sections = ini::read_sections(path, text, host).map_err(|e| syntax(&e.at.file, e.at.line, e.message))?;
    mapping::map_sections(path, &sections).map_err(|e| syntax(&e.at.file, e.at.line, e.message))
}

#[cfg(test)]
mod tests;
