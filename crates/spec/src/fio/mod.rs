//! fio job files: read a `.fio` file into a `JobSpec`, one phase per job section.
//!
//! `ini` splits the text (sections, comments, includes, `${VAR}`), `values` and `expr` know fio's number, unit
//! and arithmetic rules, `table` lists the options streamcap knows and `options` parses a job's values against
//! it, `engines` sorts fio's engines, and `mapping`, `job`, `rw`, `files`, `durability` and `fileops` turn a
//! job's options into a `PhaseSpec`. Every problem of a file is collected in one pass and reported together (at
//! most `MAX_SHOWN`), each naming the file, the line, the option and what to do; nothing is silently ignored.

mod cmdprio;
mod control;
mod data;
mod devices;
mod devices_onto;
mod durability;
mod engines;
mod expr;
mod fileops;
mod files;
mod ini;
mod job;
mod latency;
mod mapping;
mod options;
mod rw;
mod steady;
mod table;
mod values;
mod verify;
mod zones;

use std::path::Path;

pub use devices::Targets;
pub use ini::{Host, SystemHost};
use options::{MAX_SHOWN, OptionError, Problems};
pub(super) use steady::parse_steady_criterion;

use super::SpecError;
use super::job::JobSpec;

/// Reads a fio job file; `path` is used for includes, messages and the origin.
pub fn parse_fio_job(path: &Path, text: &str) -> Result<JobSpec, SpecError> {
    parse_fio_job_with(path, text, &SystemHost)
}

/// [`parse_fio_job`] with the environment, host figures and included files taken from `host`.
pub fn parse_fio_job_with(path: &Path, text: &str, host: &dyn Host) -> Result<JobSpec, SpecError> {
    parse_fio_job_on(path, text, host, &Targets::default())
}

/// [`parse_fio_job_with`] for a run on the `targets` of the command line: with one TARGET, the jobs of a file
/// that name different devices or files (fio runs each on its own) all run on it, with a notice; with
/// `--device` mappings, each job runs on the devices it names, mapped (see `devices`). Without either, a file
/// naming two targets is refused.
pub fn parse_fio_job_on(path: &Path, text: &str, host: &dyn Host, targets: &Targets) -> Result<JobSpec, SpecError> {
    let (sections, ini_errors) = ini::read_sections(path, text, host);
    let mut problems = Problems::default();
    for e in ini_errors {
        problems.push(OptionError { at: e.at, message: e.message });
    }
    let spec = mapping::map_sections(path, &sections, targets, &mut problems);
    match spec {
        Some(mut spec) if problems.is_empty() => {
            spec.phases = fileops::merge_concurrent(spec.phases);
            Ok(spec)
        }
        _ => Err(report(path, &problems)),
    }
}

/// Every problem, in file order, each on its own line: `FILE: line N: …` (the first line's file is the error's
/// own), at most `MAX_SHOWN` of them.
fn report(path: &Path, problems: &Problems) -> SpecError {
    let mut list: Vec<&OptionError> = problems.list.iter().collect();
    list.sort_by(|a, b| (a.at.file != path, &a.at.file, a.at.line).cmp(&(b.at.file != path, &b.at.file, b.at.line)));
    let mut lines: Vec<String> = list
        .iter()
        .take(MAX_SHOWN)
        .enumerate()
        .map(|(i, e)| {
            let file = if i == 0 { String::new() } else { format!("{}: ", e.at.file.display()) };
            let line = format!("{file}line {}: {}", e.at.line, problems.message(e));
            crate::limits::shorten(&line, crate::limits::MAX_MESSAGE_LINE).into_owned()
        })
        .collect();
    if list.len() > MAX_SHOWN {
        lines.push(format!("… and {} more problems; fix these and read the file again", list.len() - MAX_SHOWN));
    }
    let first = list.first().map_or(path, |e| e.at.file.as_path());
    SpecError::Syntax { path: first.to_path_buf(), message: lines.join("\n") }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_real_files;
#[cfg(test)]
mod tests_refusals;
