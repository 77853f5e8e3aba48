//! Rendering results for people and for other programs. Every output format is one small type behind one trait,
//! `Renderer`, in its own file (like hyperfine's exporters): the terminal summary (`summary`, which picks the
//! inspect, cache, sweep, check, streams or run summary; `RunSummary` is the run's alone), fio's JSON
//! (`fio_json`), the result JSON itself (`json`), Markdown (`markdown`) and the self-contained HTML page (`html`); `Summary` also renders a trial,
//! a verification and a ranked plan, and `Markdown` the plan too. A renderer reads only `results` types and
//! writes bytes; it never opens files, never decides where output goes and never looks at the command line — the
//! app picks a renderer and hands it a writer. Tables are built once per subject as a row model (`rows::Rows`,
//! in the module that owns the subject: `phases`, `cache`, `sweep`, `inspect`, `planning`, `trial` …) and only
//! drawn by each format, so their words cannot drift apart. The interval CSV and the fio logs are written as a
//! run goes, so they are sinks rather than renderers. `compare` renders several results side by side through the
//! same trait.

#![deny(unsafe_code)]

// The crates below this one that its code names as `crate::NAME::…` (docs/architecture.md, "Layers").
pub(crate) use ::escape;
pub(crate) use ::metrics;
pub(crate) use ::outfile;
pub(crate) use ::results;
pub(crate) use ::units;
// This crate, as `crate::report::…` names it.
use crate as report;

mod cache;
pub(crate) mod check;
mod check_hint;
mod check_household;
mod cluster;
pub mod compare;
mod csv;
mod during;
mod fio_json;
mod fio_logs;
pub mod html;
mod inspect;
mod json;
mod latency_target;
mod markdown;
mod members;
mod phases;
mod planning;
mod rows;
mod steady;
mod streams;
mod streams_client;
mod summary;
mod sweep;
mod terminal;
mod trial;
pub mod vdbench_fs;
mod vdbench_raw;
mod verify;

use std::io::{self, Write};

use crate::results::RunResult;

pub use compare::Comparison;
pub use csv::CsvSink;
pub use fio_json::{FioJson, FioJsonPlus, fio_json};
pub use fio_logs::{HistLog, LogPrefixes, fio_log_paths, write_fio_logs};
pub use html::Html;
pub use json::Json;
pub use markdown::Markdown;
pub use planning::Ranked;
pub use summary::Summary;
pub use terminal::RunSummary;
pub use vdbench_raw::{vdbench_raw_average, vdbench_raw_header, vdbench_raw_line};

/// One output format. `T` is what it renders: a `RunResult`, or a `Comparison` of several.
pub trait Renderer<T: ?Sized = RunResult> {
    /// Writes the whole document for `subject` to `out`.
    fn render(&self, subject: &T, out: &mut dyn Write) -> io::Result<()>;
}

/// The output formats, a closed choice; the app maps its command-line value onto this once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The terminal summary (run, streams or check, by what the result holds).
    Summary,
    /// fio's JSON (`fio --output-format=json`).
    FioJson,
    /// fio's json+ (`fio --output-format=json+`): with the latency bins.
    FioJsonPlus,
    /// Markdown tables for a forum post or an issue.
    Markdown,
    /// One self-contained HTML page with SVG charts.
    Html,
    /// The result JSON itself, as `--json FILE` writes it.
    Json,
}

impl Format {
    /// The renderer of a single result in this format.
    pub fn renderer(self) -> &'static dyn Renderer {
        match self {
            Format::Summary => &Summary,
            Format::FioJson => &FioJson,
            Format::FioJsonPlus => &FioJsonPlus,
            Format::Markdown => &Markdown,
            Format::Html => &Html,
            Format::Json => &Json,
        }
    }

    /// The renderer of a comparison in this format; fio's JSON has no way to say "side by side".
    pub fn comparison_renderer(self) -> Option<&'static dyn Renderer<Comparison>> {
        match self {
            Format::Summary => Some(&Summary),
            Format::FioJson | Format::FioJsonPlus | Format::Json => None,
            Format::Markdown => Some(&Markdown),
            Format::Html => Some(&Html),
        }
    }
}

/// Renders into a string (for the app, which prints or writes it, and for tests).
pub fn render_to_string<T: ?Sized>(renderer: &dyn Renderer<T>, subject: &T) -> String {
    let mut out = Vec::new();
    renderer.render(subject, &mut out).expect("writing to a Vec cannot fail");
    String::from_utf8(out).expect("renderers write UTF-8")
}
