//! What every fuzz target does with a job once a reader accepted it: check it and build its plan against a few
//! made-up targets (a directory, an existing file, a block device), print the plan as `--dry-run` does, and turn
//! it into JSON as the result skeleton does. Any panic on the way is a bug: bad input must be an error.
//! Every anchor a file-set tree names is a made-up directory with room to spare, as `streamcap run` finds the
//! directories it names, so that planning goes past the anchors to the trees and workloads.

use std::path::PathBuf;

use streamcap::plan::{AnchorFacts, AnchorState, Facts, ResourceLimits, RunOptions, TargetFacts, build_plan};
use streamcap::spec::JobSpec;
use streamcap::units::Bytes;

fn facts(target: TargetFacts, job: &JobSpec) -> Facts {
    Facts {
        target,
        ram: Bytes::gib(16),
        io_uring: Ok(()),
        memory_backed: None,
        anchors: anchors(job),
        cpus: 4,
        media_libraries: Vec::new(),
        // A machine like the one the tests run on, so that the resource checks are exercised too.
        limits: ResourceLimits { memory: Some(Bytes::gib(16)), threads: Some(10_000), ..Default::default() },
    }
}

/// Every anchor the job's trees name, as an existing directory of 4 TiB free (the target's own free space). Without
/// them every vdbench fsd (each names its anchor) stopped planning at "anchor … does not exist".
fn anchors(job: &JobSpec) -> Vec<AnchorFacts> {
    let mut anchors: Vec<AnchorFacts> = Vec::new();
    let trees = job.phases.iter().filter_map(|p| p.fileset.as_deref()).flat_map(|f| &f.trees);
    for path in trees.filter_map(|t| t.anchor.as_ref()) {
        if anchors.iter().all(|a| &a.path != path) {
            let state = AnchorState::Directory { canonical: path.clone(), free: Some(Bytes::gib(1 << 12)) };
            anchors.push(AnchorFacts { path: path.clone(), state });
        }
    }
    anchors
}

/// The targets a plan is built for.
fn targets() -> [TargetFacts; 3] {
    [
        TargetFacts::Directory { path: PathBuf::from("/srv"), free: Some(Bytes::gib(1 << 12)), dio_align: Some(512) },
        TargetFacts::File { path: PathBuf::from("/srv/movie.mkv"), size: Bytes::gib(4) },
        TargetFacts::BlockDevice {
            path: PathBuf::from("/dev/sdz"),
            size: Bytes::gib(1 << 10),
            logical_block: 4096,
            mounted_at: Vec::new(),
            in_use_by: Vec::new(),
            signature: None,
        },
    ]
}

/// Jobs with more files than this (files × clones over all phases) are checked but not planned. Planning is
/// linear in the file count and a 25,600-file example (fio-small-files.fio) and its mutations took half a second
/// each, which held the fio_job target under 100 executions/s; the per-file planning is the same code for 26
/// files as for 25,600, so a small count reaches every branch of it.
const MOST_FILES_PLANNED: u64 = 4096;

/// Files × clones over all phases of `job`, the planner's work for it.
fn files_to_plan(job: &JobSpec) -> u64 {
    job.phases
        .iter()
        .map(|p| u64::from(p.files.unwrap_or(1)).saturating_mul(u64::from(p.jobs.unwrap_or(1))))
        .fold(0, u64::saturating_add)
}

/// Most ranks of a multi-host job planned (each rank's plan is the same code with another rank's share).
const MOST_RANKS_PLANNED: u32 = 4;

/// Checks and plans `job` for every made-up target, as one host; errors are fine, panics are not.
pub fn plan_job(job: &JobSpec) {
    let _ = job.check();
    if files_to_plan(job) > MOST_FILES_PLANNED {
        return;
    }
    for target in targets() {
        plan_and_print(job, &facts(target, job), &options());
    }
}

/// Plans `job` (read for a run of `ranks` mpirun ranks) as each of its first ranks on the directory target, as
/// `mpirun -np RANKS streamcap run --dry-run` plans on every rank.
pub fn plan_ranks(job: &JobSpec, ranks: u32) {
    if files_to_plan(job) > MOST_FILES_PLANNED {
        return;
    }
    let [directory, ..] = targets();
    let facts = facts(directory, job);
    for rank in 0..ranks.min(MOST_RANKS_PLANNED) {
        plan_and_print(job, &facts, &RunOptions { rank: Some(rank), ..options() });
    }
}

fn options() -> RunOptions {
    RunOptions { run_id: "run-fuzz".into(), allow_device_writes: true, ..Default::default() }
}

fn plan_and_print(job: &JobSpec, facts: &Facts, options: &RunOptions) {
    if let Ok(plan) = build_plan(job, facts, options) {
        let _ = plan.to_string();
        let _ = serde_json::to_value(&plan);
    }
}
