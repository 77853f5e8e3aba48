//! What the user asked for: the `JobSpec` boundary type and the readers that produce it (command-line values,
//! native TOML job files; fio and vdbench files are detected). Imports only `units`.

#![deny(unsafe_code)]

// The crates below this one that its code names as `crate::NAME::…` (docs/architecture.md, "Layers").
pub(crate) use ::limits;
pub(crate) use ::units;
// This crate, as `crate::spec::…` names it.
use crate as spec;

mod amount;
mod data;
mod delivery;
mod detect;
mod distribution;
mod during;
mod extras;
mod file_sizes;
mod fileset;
mod fio;
mod fio_info;
mod formats;
mod job;
mod job_check;
mod journal;
mod kind;
mod parts;
pub mod players;
mod steady;
mod streams;
mod strided;
mod toml;
mod values;
mod vdbench;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use amount::IoAmount;
pub use data::{DataSpec, MAX_PATTERN};
pub use delivery::{DEFAULT_SEGMENT, Delivery, MAX_SEGMENT};
pub use detect::{Dialect, detect_dialect};
pub use distribution::{DistributionSpec, ZoneExtent, ZoneSpec};
pub use during::{During, Load};
pub use extras::{FioExtras, VdbenchExtras};
pub use fileset::{
    FileIo, FileOp, FilePlacement, FileSelect, FileSetPhaseSpec, FileSizeSpec, FileTreeSpec, FileWorkloadSpec,
    FormatMode, FormatWorkloadSpec, OpRateSpec, StopAfter,
};
pub use fio::{Host as FioHost, parse_fio_job, parse_fio_job_with};
pub use fio_info::{CmdPrio, ExitWhat, FioJobInfo, FlowSpec, LatencyTarget, PrioShare};
pub use formats::{Expectation, FORMATS, Format, Household, Mix};
pub use job::{JobSpec, MAX_PERCENT_OF_MAX, PhaseSpec, SpecOrigin};
pub use journal::JournalMode;
pub use kind::SpecKind;
pub use steady::{SteadyCriterion, SteadyOn, SteadyStateSpec, SteadyWindow};
pub use streams::{Assignment, ChunkSize, IngestSpec, MAX_VIEWERS, StreamsSpec};
pub use strided::{StrideSpec, StridedSpec};
pub use toml::parse_toml_job;
pub use values::{
    ArrivalSpec, BlockSizeSpec, ByteStep, EngineChoice, FileService, RwMode, Sequencer, Sharing, SizeOrPercent,
    ValueError, VerifyChoice,
};
pub use vdbench::parse_vdbench_job;

/// The built-in first look that `streamcap run` performs with no workload flags.
pub const DEFAULT_JOB_TOML: &str = include_str!("../../../examples/jobs/default.toml");

#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("cannot read job file {path}: {cause}")]
    Read { path: PathBuf, cause: crate::limits::ReadLimitError },
    #[error("{path}: {message}")]
    Syntax { path: PathBuf, message: String },
    #[error("{0}")]
    Invalid(String),
}

/// What the command line adds to reading a job file (vdbench's anchors, `--set` and `-e/-i/-w` overrides).
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// vdbench anchors and drive names mapped to local directories: `("H:", "/srv/pool")` from
    /// `--anchor H:=/srv/pool`.
    pub anchors: Vec<(String, PathBuf)>,
    /// `--set key=value`: overrides that keyword wherever the file can say it, and defines `$key`.
    pub sets: Vec<(String, String)>,
    /// Overrides every run's length (vdbench `-e`; for vdbench files, warm-up included).
    pub elapsed: Option<Duration>,
    /// Overrides every run's reporting interval (vdbench `-i`).
    pub interval: Option<Duration>,
    /// Overrides every run's warm-up (vdbench `-w`).
    pub warmup: Option<Duration>,
    /// The number of ranks of a multi-host run (mpirun), when above one: vdbench's hds then map onto the ranks.
    pub ranks: Option<u32>,
    /// The target named on the command line (`streamcap run TARGET`): a vdbench file's luns on several devices
    /// or in several directories become files of their names in it, when it is a directory.
    pub target: Option<PathBuf>,
    /// fio files: the devices the file names mapped onto this machine's, `("/dev/sdb", "/dev/loop3")` from
    /// `--device /dev/sdb=/dev/loop3`; each job then runs on its own device(s).
    pub devices: Vec<(String, PathBuf)>,
    /// fio files: several TARGETs (`streamcap run DEV1 DEV2 --job FILE`), taking the devices the file names in
    /// the order its jobs first name them.
    pub ordered_devices: Vec<PathBuf>,
}

/// Reads a job file in any supported dialect.
pub fn read_job_file(path: &Path, options: &ReadOptions) -> Result<JobSpec, SpecError> {
    let text = crate::limits::read_text_file(path, crate::limits::MAX_INPUT_FILE_BYTES)
        .map_err(|cause| SpecError::Read { path: path.to_path_buf(), cause })?;
    match detect_dialect(path, &text) {
        Dialect::Fio => {
            let (given, devices) = (options.target.as_deref(), &options.devices);
            let targets = fio::Targets { given, devices, ordered: &options.ordered_devices };
            fio::parse_fio_job_on(path, &text, &fio::SystemHost, &targets)
        }
        _ if !options.devices.is_empty() || !options.ordered_devices.is_empty() => Err(SpecError::Invalid(format!(
            "--device (or several TARGETs) maps the devices a fio job file names, and {} is not a fio file: give \
             one TARGET (a vdbench file's anchors map with --anchor)",
            path.display()
        ))),
        Dialect::Toml => parse_toml_job(path, &text),
        Dialect::Vdbench => parse_vdbench_job(path, &text, options),
    }
}

/// The built-in default job.
pub fn default_job() -> JobSpec {
    let mut job = parse_toml_job(Path::new("<built-in default>"), DEFAULT_JOB_TOML)
        .expect("the embedded default job is valid TOML (checked by a test)");
    job.origin = SpecOrigin::Default;
    job
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_job_parses_and_checks() {
        let job = default_job();
        assert!(job.phases.len() >= 6);
        job.check().unwrap();
    }

    #[test]
    fn device_mappings_are_for_fio_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.toml");
        std::fs::write(&path, "[[phase]]\nrw = \"read\"\n").unwrap();
        let devices = vec![("/dev/sdb".to_string(), PathBuf::from("/dev/loop3"))];
        let err = read_job_file(&path, &ReadOptions { devices, ..Default::default() }).unwrap_err().to_string();
        assert!(err.contains("is not a fio file: give one TARGET"), "{err}");
        let ordered_devices = vec![PathBuf::from("/dev/loop3"), PathBuf::from("/dev/loop4")];
        assert!(read_job_file(&path, &ReadOptions { ordered_devices, ..Default::default() }).is_err());
        assert!(read_job_file(&path, &ReadOptions::default()).is_ok());
    }
}
