//! `streamcap run` as one rank of a multi-host run: rank 0 checks the outputs and reads the job, every rank gets
//! it and plans for its own host (its own work directory and files, every safety rule per rank), the ranks agree
//! that all plans were made and have the same phases, then every rank runs the plan on the one I/O core
//! (`run::execute_in_cluster`). Rank 0 alone prints, and writes the JSON, CSV and HTML; the exit code is rank
//! 0's, on every rank.
//!
//! What it must not do: let one rank leave an agreement that the others enter (every early return below happens
//! on every rank at the same point, since each follows an agreement).

use std::process::ExitCode;

use anyhow::{Result, bail};

use super::{ClusterObserver, Session, kind};
use crate::app::observer::ResultRecorder;
use crate::app::output::{print_quietly, result_skeleton};
use crate::app::run::{build_job_for, check_run_outputs, conclude, plan_here};
use crate::app::verify_only::verify_result;
use crate::cli::RunArgs;
use crate::plan::{PhaseKind, Plan};
use crate::report::CsvSink;
use crate::results::{RankVerify, VerifyResult, merge_ranks};
use crate::run::VerifyOutcome;
use crate::run::cluster::Key;
use crate::run::{ProgressLine, execute_in_cluster};
use crate::spec::SpecOrigin;

/// `streamcap run` on a rank that has joined the others.
pub(super) fn run_joined(session: &Session, args: &RunArgs) -> Result<ExitCode> {
    let job = session.share(|| {
        check_run_outputs(args)?;
        if args.verify_only.is_some() {
            bail!(
                "--verify-only reads back one host's kept run: run it on each host without mpirun \
                 (`streamcap run --verify-only DIR`)"
            );
        }
        build_job_for(args, Some(session.cluster.size()))
    })?;
    let (gathered, plan) = session.agree(0, plan_here(args, &job, Some(&session.cluster)))?;
    session.agree_shape(&plan)?;
    session.agree(2, ranks_exist(&plan, session.cluster.size()))?;
    session.agree_space(&gathered.canonical, super::space::free_in(&gathered.facts.target), &plan)?;
    if args.output.dry_run {
        if session.is_root() {
            print_quietly(&plan.to_string());
        }
        return Ok(session.finish(ExitCode::SUCCESS, None));
    }
    let interrupt = session.install_interrupt()?;
    let skeleton = result_skeleton(&plan, &gathered);
    let mut hosts = session.hosts(&gathered.host, &skeleton.target);
    if let SpecOrigin::Vdbench { ranks, .. } = &plan.origin {
        // Which hd each rank was, for the ranks line and the JSON.
        hosts.hosts.iter_mut().for_each(|h| h.role = ranks.get(h.rank as usize).map(|hd| format!("hd={hd}")));
    }
    let local = ResultRecorder::new(&plan, skeleton.clone(), None, None, ProgressLine::silent());
    let main = session.is_root().then(|| {
        // Created with its first row: a set-up failure leaves no empty file behind.
        let csv = args.csv.as_deref().map(CsvSink::new);
        let progress = ProgressLine::new(!args.output.quiet);
        for notice in &plan.notices {
            progress.notice(&format!("note: {notice}"));
        }
        let mut result = skeleton;
        result.cluster = Some(hosts);
        let mut recorder = ResultRecorder::new(&plan, result, args.output.json.clone(), csv, progress);
        recorder.vdbench_lines &= !args.output.quiet;
        recorder
    });
    let mut observer = ClusterObserver::new(session, gathered.host.clone(), local, main);
    let mut outcome = execute_in_cluster(&plan, &interrupt, args.keep, Some(&session.cluster), &mut observer);
    // A failure of the run is agreed by every rank (run::cluster), so every rank returns here alike.
    let cleanup = outcome.as_ref().ok().and_then(|o| o.cleanup_error.clone());
    let verified = outcome.as_mut().ok().and_then(|o| merge_verify(session, o.verify.take()));
    let code = match observer.into_main() {
        Some(mut main) => {
            if let Some((all, ranks)) = verified {
                main.result.verify = Some(all);
                main.result.cluster.iter_mut().for_each(|c| c.verify = ranks.clone());
            }
            conclude(args, &plan, &mut main, outcome)?
        }
        None => outcome.map(|_| ExitCode::SUCCESS)?,
    };
    let cleanup = cleanup.filter(|_| !session.is_root());
    Ok(session.finish(code, cleanup.as_deref()))
}

/// Every rank's `--verify` section merged, with each rank's own figures (on every rank; `None` without
/// `--verify`). Collective.
fn merge_verify(session: &Session, mine: Option<VerifyOutcome>) -> Option<(VerifyResult, Vec<RankVerify>)> {
    let mine = mine.map(|v| verify_result(&v, None));
    let bytes = serde_json::to_vec(&mine).expect("plain data");
    let all = session.cluster.exchange(Key::new(kind::VERIFY, 0, 0), &bytes);
    let hosts = session.cluster.hosts();
    let each: Vec<(u32, String, Option<VerifyResult>)> = (all.iter().enumerate())
        .map(|(rank, b)| {
            let host = hosts.get(rank).cloned().unwrap_or_default();
            (rank as u32, host, serde_json::from_slice(b).ok().flatten())
        })
        .collect();
    merge_ranks(&each)
}

/// Every worker or file-set workload that belongs to one rank (a part's or workload's `rank`: vdbench's hds)
/// belongs to one that exists, or no rank would run it.
fn ranks_exist(plan: &Plan, size: u32) -> Result<()> {
    for phase in &plan.phases {
        let ranks: Vec<u32> = match &phase.kind {
            PhaseKind::Raw(raw) => raw.workers.iter().filter_map(|w| w.mixed.as_ref()?.rank).collect(),
            PhaseKind::FileSet(fileset) => fileset.workloads.iter().filter_map(|w| w.rank).collect(),
            PhaseKind::Streams(_) => Vec::new(),
        };
        if let Some(rank) = ranks.into_iter().find(|&r| r >= size) {
            bail!(
                "phase '{}' has a part for rank {rank}, but the run has {size} ranks (0 to {})",
                phase.name,
                size - 1
            );
        }
    }
    Ok(())
}
