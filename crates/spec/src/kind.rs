//! The kind of a phase in the spec: raw I/O (no kind said), a file set or stream viewers. The reader that knows
//! it says it once — a TOML phase's `[phase.fileset]` or `[phase.streams]` table (`kind_from_tables`), vdbench's
//! fwds, fio's file operations, the `streams`, `check` and `trial` commands — and `plan` matches on it. Also
//! here: which of `run`'s flags belong to raw I/O, so that a flag is never laid over a phase of another kind.

use serde::{Deserialize, Serialize};

use super::fileset::FileSetPhaseSpec;
use super::job::PhaseSpec;
use super::streams::StreamsSpec;

/// A phase's kind when it is not raw I/O, with what was asked of that kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SpecKind {
    /// A file-set workload (many files in a directory tree: vdbench fsd/fwd, fio's file operations).
    FileSet(Box<FileSetPhaseSpec>),
    /// Paced stream viewers (a count, or the capacity search).
    Streams(Box<StreamsSpec>),
}

impl PhaseSpec {
    /// What was asked of a file-set phase; `None` for the other kinds.
    pub fn fileset(&self) -> Option<&FileSetPhaseSpec> {
        match &self.kind {
            Some(SpecKind::FileSet(fileset)) => Some(fileset),
            Some(SpecKind::Streams(_)) | None => None,
        }
    }

    /// What was asked of a stream phase; `None` for the other kinds.
    pub fn streams(&self) -> Option<&StreamsSpec> {
        match &self.kind {
            Some(SpecKind::Streams(streams)) => Some(streams),
            Some(SpecKind::FileSet(_)) | None => None,
        }
    }

    /// What was asked of a file-set phase, to change; `None` for the other kinds.
    pub fn fileset_mut(&mut self) -> Option<&mut FileSetPhaseSpec> {
        match &mut self.kind {
            Some(SpecKind::FileSet(fileset)) => Some(fileset),
            Some(SpecKind::Streams(_)) | None => None,
        }
    }

    /// What was asked of a stream phase, to change; `None` for the other kinds.
    pub fn streams_mut(&mut self) -> Option<&mut StreamsSpec> {
        match &mut self.kind {
            Some(SpecKind::Streams(streams)) => Some(streams),
            Some(SpecKind::FileSet(_)) | None => None,
        }
    }

    /// The TOML reader's step from tables to a kind: a `[phase.fileset]` or `[phase.streams]` table read makes the
    /// phase of that kind (and each part's table, which `check` then refuses in a part); both are refused.
    pub(super) fn kind_from_tables(&mut self) -> Result<(), String> {
        if self.kind.is_some() {
            // The key exists for jobs streamcap passes on (to other ranks, into a journal), not for job files.
            return Err(
                "unknown key `kind`: a phase's kind is said by its [phase.fileset] or [phase.streams] table".into()
            );
        }
        let kind = match (self.fileset_table.take(), self.streams_table.take()) {
            (Some(_), Some(_)) => {
                return Err("a phase is either a file-set phase or a streams phase, not both".into());
            }
            (Some(fileset), None) => Some(SpecKind::FileSet(fileset)),
            (None, Some(streams)) => Some(SpecKind::Streams(streams)),
            (None, None) => None,
        };
        self.kind = kind;
        self.parts.iter_mut().flatten().try_for_each(PhaseSpec::kind_from_tables)
    }
}

impl PhaseSpec {
    /// The raw-I/O settings of `run`'s flags that this spec says, by flag name: what a file-set or stream phase
    /// cannot take from the command line.
    pub(super) fn raw_flags_said(&self) -> Vec<&'static str> {
        let said = [
            ("rw", self.rw.is_some()),
            ("rdpct", self.rdpct.is_some()),
            ("bs", self.bs.is_some()),
            ("size", self.size.is_some()),
            ("files", self.files.is_some()),
            ("distribution", self.distribution.is_some()),
            ("jobs", self.jobs.is_some()),
            ("iodepth", self.iodepth.is_some()),
            ("iodepth-batch", self.iodepth_batch.is_some()),
            ("io-size", self.io_size.is_some()),
            ("rate", self.rate.is_some()),
            ("rate-iops", self.rate_iops.is_some()),
            ("rate-process", self.rate_process.is_some()),
            ("invalidate", self.invalidate.is_some()),
            ("pre-read", self.pre_read.is_some()),
            ("fsync-every", self.fsync_every.is_some()),
            ("end-fsync", self.end_fsync.is_some()),
        ];
        said.into_iter().filter_map(|(flag, said)| said.then_some(flag)).collect()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::spec::{JobSpec, SpecOrigin};

    fn job(kind: Option<SpecKind>) -> JobSpec {
        let phase = PhaseSpec { name: Some("viewers".into()), kind, ..PhaseSpec::default() };
        JobSpec { origin: SpecOrigin::Flags, target: None, interval: None, phases: vec![phase], notices: Vec::new() }
    }

    #[test]
    fn a_raw_flag_is_refused_on_a_phase_of_another_kind_and_a_common_one_is_laid_over_it() {
        let streams = || Some(SpecKind::Streams(Box::default()));
        let depth = PhaseSpec { iodepth: Some(8), runtime: Some(Duration::from_secs(2)), ..PhaseSpec::default() };
        let err = job(streams()).with_overrides(&depth).unwrap_err();
        assert!(err.contains("--iodepth sets raw I/O, but phase 1 ('viewers') of the job is a streams phase"), "{err}");
        let fileset =
            FileSetPhaseSpec { trees: vec![], workloads: vec![], rate: None, format: None, format_with: None };
        let err = job(Some(SpecKind::FileSet(Box::new(fileset)))).with_overrides(&depth).unwrap_err();
        assert!(err.contains("file-set phase"), "{err}");
        let runtime = PhaseSpec { runtime: Some(Duration::from_secs(2)), ..PhaseSpec::default() };
        let laid = job(streams()).with_overrides(&runtime).unwrap();
        assert_eq!(laid.phases[0].runtime, Some(Duration::from_secs(2)));
        assert!(laid.phases[0].streams().is_some(), "the kind stays the phase's");
        assert_eq!(job(None).with_overrides(&depth).unwrap().phases[0].iodepth, Some(8), "a raw phase takes it");
    }
}
