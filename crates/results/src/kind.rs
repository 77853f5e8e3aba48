//! The kind of a measured phase, as a type to match on: raw I/O, a file set or stream viewers. A result says
//! its kind by the section it carries (`file_ops` for a file set, `streams` for viewers; a result file has no
//! other field for it, and old files must still read), so this is the one place that reads the sections as a
//! kind; the rest match on [`PhaseResultKind`].
//!
//! Must not: summarize or judge anything.

use super::{FileOpsResult, PhaseResult, StreamsResult};

/// What kind of phase a result is, with its kind's own section.
#[derive(Debug, Clone, Copy)]
pub enum PhaseResultKind<'a> {
    /// Raw I/O on files or a device.
    Raw,
    /// A file-set workload: its per-operation figures.
    FileSet(&'a FileOpsResult),
    /// Paced stream viewers: their steps and answer.
    Streams(&'a StreamsResult),
}

impl PhaseResult {
    /// The phase's kind, by the section it carries (a stream phase's result has no `file_ops`, and a file-set
    /// phase's no `streams`: `build` writes one at most).
    pub fn kind(&self) -> PhaseResultKind<'_> {
        match (&self.streams, &self.file_ops) {
            (Some(streams), _) => PhaseResultKind::Streams(streams),
            (None, Some(file_ops)) => PhaseResultKind::FileSet(file_ops),
            (None, None) => PhaseResultKind::Raw,
        }
    }
}
