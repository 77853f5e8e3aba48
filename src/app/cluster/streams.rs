//! `streamcap streams` as one rank of a multi-host run: every rank plans the same flags for its own host (its own
//! work directory and test media, named by host and process, every safety rule per rank), the ranks agree that
//! all plans were made and have the same phases, then every rank runs the plan on the one I/O core
//! (`run::execute_in_cluster`), which spreads each step's viewers over the ranks and merges the step on every rank
//! (`run::cluster::merge_step`: stall counts, start-up times and lateness over every viewer, histograms added),
//! so that `--max` takes the same next count everywhere. Rank 0 alone prints the summary (with each client's
//! share and whether a client rather than the storage was the limit) and writes the JSON and HTML; the exit
//! code is rank 0's, on every rank.
//!
//! What it must not do: let one rank leave an agreement that the others enter (every early return below happens
//! on every rank at the same point, since each follows an agreement).

use std::process::ExitCode;

use anyhow::Result;

use super::{ClusterObserver, Session};
use crate::app::observer::ResultRecorder;
use crate::app::output::print_quietly;
use crate::app::streams::{answer_expectation, check_outputs, conclude, plan_streams};
use crate::cli::StreamsArgs;
use crate::run::{ProgressLine, execute_in_cluster};

/// `streamcap streams` on a rank that has joined the others.
pub(super) fn streams_joined(session: &Session, args: &StreamsArgs) -> Result<ExitCode> {
    // A unit would travel as JSON null, which reads back as "no value": share a flag.
    session.share(|| check_outputs(args).map(|()| true))?;
    let (site, plan) = session.agree(0, plan_streams(args))?;
    session.agree_shape(&plan)?;
    session.agree_space(args.target(), site.free(), &plan)?;
    if args.output.dry_run {
        if session.is_root() {
            print_quietly(&plan.to_string());
        }
        return Ok(session.finish(ExitCode::SUCCESS, None));
    }
    let interrupt = session.install_interrupt()?;
    let mut skeleton = site.skeleton(&plan);
    skeleton.notices.extend(site.remote_notice());
    let hosts = session.hosts(&site.host, &skeleton.target);
    let local = ResultRecorder::new(&plan, skeleton.clone(), None, None, ProgressLine::silent());
    let main = session.is_root().then(|| {
        let progress = ProgressLine::new(!args.output.quiet);
        for notice in &skeleton.notices {
            progress.notice(&format!("note: {notice}"));
        }
        let mut result = skeleton;
        result.cluster = Some(hosts);
        let mut main = ResultRecorder::new(&plan, result, args.output.json.clone(), None, progress);
        answer_expectation(args, &mut main);
        main
    });
    let mut observer = ClusterObserver::new(session, site.host.clone(), local, main);
    let outcome = execute_in_cluster(&plan, &interrupt, args.keep, Some(&session.cluster), &mut observer);
    // A failure of the run is agreed by every rank (run::cluster), so every rank returns here alike.
    let cleanup = outcome.as_ref().ok().and_then(|o| o.cleanup_error.clone());
    let code = match (observer.into_main(), outcome) {
        (Some(mut main), Ok(outcome)) => {
            main.progress.clear();
            conclude(&mut main, &outcome, args, &plan)
        }
        (Some(mut main), Err(error)) => {
            main.progress.clear();
            main.failed();
            return Err(error.into());
        }
        (None, outcome) => outcome.map(|_| ExitCode::SUCCESS)?,
    };
    let cleanup = cleanup.filter(|_| !session.is_root());
    Ok(session.finish(code, cleanup.as_deref()))
}
