//! Whether a plan fits the machine: the threads and the memory each stage (a phase and the phases running
//! beside it) needs, against what this process may still take (`Facts::limits`). Checked while planning, so a
//! plan that cannot run is refused with the numbers and exit code 2 before anything is created, allocated or
//! spawned — not aborted halfway by a failed allocation or a `thread::spawn` panic.
//!
//! The estimates are floors of what a run really takes (buffers and fixed per-worker state); they do not try
//! to be exact, only to refuse what cannot possibly work.

use super::{FileSetPlan, PhaseKind, PhasePlan, PlanError, ResourceLimits};
use crate::units::Bytes;

/// Threads kept free for everything besides the workers: the main thread's helpers, signal handling, the
/// progress line, and io_uring's own workers (which count against the pids limit as the process's threads).
pub const THREAD_HEADROOM: u64 = 8;
/// Memory a worker holds besides its buffers: recorders with their latency histograms (~38 KiB each, a few per
/// worker), the in-flight table and the interval series.
pub const WORKER_STATE_BYTES: u64 = 1 << 20;
/// Memory the process keeps for itself besides the workers: what it grows by while it runs (the result being
/// built, with interval series capped at 2,048 points per phase, and the observer's samples). What it holds
/// already is counted by the limits themselves (MemAvailable, the cgroup's usage, VmSize). A one-hour soak grew
/// by 5 MiB (docs/reliability.md, "Soak"). It was 64 MiB, which refused every phase, even a dry run of one
/// 4 KiB reader, in a 64 MiB memory cgroup.
pub const PROCESS_RESERVE: Bytes = Bytes::mib(16);
/// Buffers are whole pages (`engine::BufferPool`).
const PAGE: u64 = 4096;

/// What one stage of a plan takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StageNeeds {
    /// Threads started for the stage (workers and coordinators).
    pub threads: u64,
    /// Bytes of buffers and per-worker state.
    pub memory: Bytes,
}

/// Threads and memory of one phase (saturating: a sum past 16 EiB is refused anyway).
fn phase_needs(phase: &PhasePlan) -> StageNeeds {
    let raw = match &phase.kind {
        PhaseKind::Raw(raw) => raw,
        PhaseKind::FileSet(fileset) => return fileset_needs(fileset),
        // A stream phase's scheduler threads and slot buffers are sized by the stream planner
        // (`plan::streams_limits`), not counted here.
        PhaseKind::Streams(_) => return StageNeeds { threads: 0, memory: Bytes(0) },
    };
    let workers = raw.workers.len() as u64;
    let per_worker =
        u64::from(raw.iodepth).saturating_mul(page_round(u64::from(raw.largest_block()))) + WORKER_STATE_BYTES;
    StageNeeds { threads: workers, memory: Bytes(workers.saturating_mul(per_worker)) }
}

/// Threads and memory of a file-set phase: its workloads' threads and buffers, and the trees' state.
fn fileset_needs(fileset: &FileSetPlan) -> StageNeeds {
    let threads: u64 = fileset.workloads.iter().map(|w| u64::from(w.threads)).sum();
    let buffers: u64 = fileset
        .workloads
        .iter()
        .map(|w| u64::from(w.threads).saturating_mul(page_round(u64::from(w.xfer.max())) + WORKER_STATE_BYTES))
        .fold(0, u64::saturating_add);
    // Two bits per file and per directory: which exist, and which a thread is working on.
    let bits: u64 = fileset.trees.iter().map(|t| t.files.saturating_add(t.dirs) / 4).fold(0, u64::saturating_add);
    StageNeeds { threads, memory: Bytes(buffers.saturating_add(bits)) }
}

fn page_round(bytes: u64) -> u64 {
    bytes.max(1).div_ceil(PAGE).saturating_mul(PAGE)
}

/// The needs of each stage: a phase and the `concurrent` phases after it run at the same time, each with a
/// coordinator thread of its own when there are several.
pub fn stage_needs(phases: &[PhasePlan]) -> Vec<(usize, StageNeeds)> {
    let mut stages: Vec<(usize, StageNeeds, u64)> = Vec::new();
    for (index, phase) in phases.iter().enumerate() {
        let needs = phase_needs(phase);
        match stages.last_mut() {
            Some((_, stage, members)) if phase.raw().is_some_and(|r| r.concurrent) => {
                stage.threads = stage.threads.saturating_add(needs.threads);
                stage.memory = Bytes(stage.memory.0.saturating_add(needs.memory.0));
                *members += 1;
            }
            _ => stages.push((index, needs, 1)),
        }
    }
    stages
        .into_iter()
        .map(|(first, mut needs, members)| {
            if members > 1 {
                needs.threads = needs.threads.saturating_add(members);
            }
            (first, needs)
        })
        .collect()
}

/// What a raw or file-set stage's memory is made of, for the refusal.
const MEMORY_OF: &str = "buffers (jobs × iodepth × block size) and per-worker state";

/// What some part of a plan needs of memory, for [`check_memory`].
pub struct Demand<'a> {
    /// Who needs it: "phase 'x'", "1000 viewers".
    pub who: &'a str,
    /// Bytes it needs at least.
    pub memory: Bytes,
    /// What those bytes are made of.
    pub of: &'a str,
    /// Threads it starts (their stacks count against `ulimit -v`).
    pub threads: u64,
}

/// Refuses a demand that, with the memory streamcap keeps for itself, exceeds what this process may take; the
/// message gives each figure and the sum set against the limit, and names the limit (the caller adds what to do).
/// One check for every kind of phase, so every refusal reads alike.
pub fn check_memory(limits: &ResourceLimits, demand: Demand<'_>) -> Result<(), String> {
    let Some(available) = limits.memory else { return Ok(()) };
    let threads = match limits.memory_bound {
        crate::limits::MemoryBound::AddressSpace => thread_address_space(demand.threads, limits.malloc_arenas),
        _ => 0,
    };
    let total = demand.memory.0.saturating_add(threads).saturating_add(PROCESS_RESERVE.0);
    if total <= available.0 {
        return Ok(());
    }
    let stacks = if threads > 0 {
        format!(", {} of address space for its {} threads (stacks and malloc arenas)", Bytes(threads), demand.threads)
    } else {
        String::new()
    };
    Err(format!(
        "{} needs {} of memory: at least {} for its {}{stacks}, and {PROCESS_RESERVE} that streamcap keeps for \
         itself; only {available} is available here ({})",
        demand.who,
        Bytes(total),
        demand.memory,
        demand.of,
        limits.memory_bound.words()
    ))
}

/// Address space `threads` new threads take under `ulimit -v`: a stack each, and a malloc arena each while the
/// process may still make arenas.
fn thread_address_space(threads: u64, arenas: u64) -> u64 {
    use crate::limits::{MALLOC_ARENA_BYTES, THREAD_STACK_BYTES};
    threads.saturating_mul(THREAD_STACK_BYTES).saturating_add(threads.min(arenas).saturating_mul(MALLOC_ARENA_BYTES))
}

/// Refuses a plan whose largest stage needs more threads or memory than this process may take.
pub(super) fn check_resources(phases: &[PhasePlan], limits: &ResourceLimits) -> Result<(), PlanError> {
    for (first, needs) in stage_needs(phases) {
        let name = &phases[first].name;
        if let Some(available) = limits.threads
            && needs.threads.saturating_add(THREAD_HEADROOM) > available
        {
            return Err(PlanError(format!(
                "phase '{name}' needs {} threads, but this process may start only {available} more (the pids \
                 cgroup limit, threads-max or ulimit -u, less {THREAD_HEADROOM} kept free): use fewer jobs \
                 (threads) and a deeper iodepth, or raise the limit",
                needs.threads
            )));
        }
        check_memory(
            limits,
            Demand { who: &format!("phase '{name}'"), memory: needs.memory, of: MEMORY_OF, threads: needs.threads },
        )
        .map_err(|why| PlanError(format!("{why}: use fewer jobs, a smaller iodepth or smaller blocks")))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Facts, RunOptions, build_plan};
    use crate::spec::{BlockSizeSpec, JobSpec, PhaseSpec, RwMode, SpecOrigin};

    fn facts(limits: ResourceLimits) -> Facts {
        Facts { limits, ..Facts::directory(Some(Bytes::gib(50))) }
    }

    fn phase(jobs: u32, concurrent: bool) -> PhaseSpec {
        PhaseSpec {
            rw: Some(RwMode::RandRead),
            jobs: Some(jobs),
            iodepth: Some(8),
            bs: Some(BlockSizeSpec::Fixed(Bytes::kib(64))),
            size: Some(Bytes::mib(64)),
            concurrent: Some(concurrent),
            ..Default::default()
        }
    }

    fn job(phases: Vec<PhaseSpec>) -> JobSpec {
        JobSpec { origin: SpecOrigin::Flags, target: None, interval: None, phases, notices: Vec::new() }
    }

    fn options() -> RunOptions {
        RunOptions { run_id: "run-test".into(), ..Default::default() }
    }

    #[test]
    fn concurrent_phases_add_up_with_a_coordinator_each() {
        let plan = build_plan(
            &job(vec![phase(4, false), phase(3, true), phase(2, false)]),
            &facts(Default::default()),
            &options(),
        )
        .unwrap();
        let stages = stage_needs(&plan.phases);
        let per_worker = 8 * 65536 + WORKER_STATE_BYTES;
        assert_eq!(stages[0], (0, StageNeeds { threads: 4 + 3 + 2, memory: Bytes(7 * per_worker) }));
        assert_eq!(stages[1], (2, StageNeeds { threads: 2, memory: Bytes(2 * per_worker) }));
    }

    #[test]
    fn plans_past_the_thread_or_memory_limit_are_refused_with_the_numbers() {
        let tight = ResourceLimits { threads: Some(50), ..Default::default() };
        let err = build_plan(&job(vec![phase(300, false)]), &facts(tight), &options()).unwrap_err();
        assert!(err.0.contains("needs 300 threads") && err.0.contains("only 50 more"), "{err}");
        build_plan(&job(vec![phase(40, false)]), &facts(tight), &options()).unwrap();
        let small = ResourceLimits { memory: Some(Bytes::mib(100)), ..Default::default() };
        let err = build_plan(&job(vec![phase(64, false)]), &facts(small), &options()).unwrap_err();
        assert!(err.0.contains("needs 112 MiB of memory: at least 96 MiB for its buffers"), "{err}");
        assert!(err.0.contains("only 100 MiB is available here (MemAvailable"), "{err}");
        build_plan(&job(vec![phase(48, false)]), &facts(small), &options()).unwrap();
    }

    #[test]
    fn a_refusal_sets_the_sum_against_the_limit_and_names_the_limit() {
        // Guards issue 25: "needs 1.06 MiB … but only 63.75 MiB is available (less 64 MiB kept…)" read as if 1 MiB
        // did not fit in 63 MiB; the message now gives the sum that is compared, and which limit it met.
        let limits = ResourceLimits {
            memory: Some(Bytes(15 * (1 << 20) + 3 * (1 << 18))),
            memory_bound: crate::limits::MemoryBound::Cgroup,
            ..Default::default()
        };
        let demand = Demand { who: "phase 'p'", memory: Bytes(1 << 20), of: MEMORY_OF, threads: 1 };
        let err = check_memory(&limits, demand).unwrap_err();
        assert!(err.starts_with("phase 'p' needs 17 MiB of memory: at least 1 MiB for its buffers"), "{err}");
        assert!(err.contains("and 16 MiB that streamcap keeps for itself; only 15.75 MiB is available"), "{err}");
        assert!(err.contains("memory cgroup's limit"), "{err}");
        let space =
            ResourceLimits { memory_bound: crate::limits::MemoryBound::AddressSpace, malloc_arenas: 2, ..limits };
        let demand = Demand { who: "phase 'p'", memory: Bytes(1 << 20), of: MEMORY_OF, threads: 4 };
        let err = check_memory(&space, demand).unwrap_err();
        assert!(err.contains("136 MiB of address space for its 4 threads (stacks and malloc arenas)"), "{err}");
        assert!(err.contains("ulimit -v"), "{err}");
        let roomy = ResourceLimits { memory: Some(Bytes::mib(18)), ..limits };
        check_memory(&roomy, Demand { who: "p", memory: Bytes(1 << 20), of: MEMORY_OF, threads: 1 }).unwrap();
    }
}
