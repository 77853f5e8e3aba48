//! Whether this process is one rank of an MPI job, and how a command starts as one: with the `mpi` feature, MPI
//! is started (`crate::mpi::MpiTransport`) and the command runs as a rank; without it, a job of several ranks is
//! refused, since each process would run alone and they would write over one another's results.
//!
//! What it must not do: start MPI in a process that no launcher started (a plain `streamcap run` needs nothing).

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::{CheckArgs, RunArgs, StreamsArgs};

/// Environment variables that MPI launchers set in every process they start: Open MPI's mpirun, PMI (MPICH's
/// hydra, Slurm's srun --mpi=pmi2) and PMIx (srun --mpi=pmix, Open MPI 5).
const LAUNCHER_VARIABLES: [&str; 4] = ["OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"];
/// Variables that hold the job's number of ranks.
const SIZE_VARIABLES: [&str; 3] = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"];

/// The launcher variable that says this process is a rank of an MPI job to run as one. Without the `mpi`
/// feature only a job of more than one rank counts (`mpirun -np 1 streamcap …` simply runs).
pub fn launched_by() -> Option<&'static str> {
    let variable = LAUNCHER_VARIABLES.into_iter().find(|v| std::env::var_os(v).is_some())?;
    (cfg!(feature = "mpi") || ranks_said() > 1).then_some(variable)
}

/// The number of ranks the launcher says the job has (1 when it does not say).
fn ranks_said() -> u32 {
    SIZE_VARIABLES.into_iter().find_map(|v| std::env::var(v).ok()?.trim().parse().ok()).unwrap_or(1)
}

/// A command that does not run across ranks yet refuses to be one of several, rather than have each rank run
/// alone and write over the others' result.
pub fn alone(command: &str) -> Result<()> {
    let ranks = ranks_said();
    if ranks > 1 {
        anyhow::bail!(
            "`streamcap {command}` does not run across ranks yet (only `run`, `streams` and `check` do; docs/multi-host.md): \
             run it without mpirun, or with one rank (`mpirun -np 1`)"
        );
    }
    Ok(())
}

/// A command that runs across ranks, with its arguments.
pub enum RankCommand<'a> {
    Run(&'a RunArgs),
    Streams(&'a StreamsArgs),
    Check(&'a CheckArgs),
}

/// `command` as one rank of the job that `launcher` (a variable's name) revealed.
pub fn run_ranks(command: RankCommand<'_>, launcher: &str) -> Result<ExitCode> {
    #[cfg(feature = "mpi")]
    {
        let transport = crate::mpi::MpiTransport::start()
            .map_err(|e| anyhow::anyhow!("{e} (this process was started by an MPI launcher: {launcher} is set)"))?;
        super::joined(Box::new(transport), |session| match command {
            RankCommand::Run(args) => super::run::run_joined(session, args),
            RankCommand::Streams(args) => super::streams::streams_joined(session, args),
            RankCommand::Check(args) => super::check::check_joined(session, args),
        })
    }
    #[cfg(not(feature = "mpi"))]
    {
        let _ = command;
        anyhow::bail!(
            "started by an MPI launcher as one of {} ranks ({launcher} is set), but this streamcap was built without \
             the `mpi` feature, so every rank would run alone; build it with `cargo build --release --features mpi` \
             (needs openmpi-bin, libopenmpi-dev and libclang-dev) or run it without mpirun",
            ranks_said()
        )
    }
}
