//! `streamcap check` as one rank of a multi-host run: every rank checks the storage under its DIR with the same
//! profile, planned for its own host (its own work directory and small-file tree, named by rank; a data set
//! sized from its share of the free space when several ranks write into one filesystem), the ranks agree that
//! all plans were made, have the same phases and fit together, then every rank runs the plan on the one I/O core
//! (`run::execute_in_cluster`): raw and file-set phases start together and are merged, each stream search
//! spreads its viewers over the ranks and counts them all. Rank 0 alone prints the check's sections and summary
//! and writes the JSON and HTML; the exit code is rank 0's, on every rank.
//!
//! What it must not do: let one rank leave an agreement that the others enter (every early return below happens
//! on every rank at the same point, since each follows an agreement).

use std::process::ExitCode;
use std::time::Instant;

use anyhow::Result;

use super::{ClusterObserver, Session, free_in};
use crate::app::check::{Share, check_dir, finish, prepare};
use crate::app::observer::ResultRecorder;
use crate::app::output::print_quietly;
use crate::cli::CheckArgs;
use crate::run::{ProgressLine, execute_in_cluster};

/// `streamcap check` on a rank that has joined the others.
pub(super) fn check_joined(session: &Session, args: &CheckArgs) -> Result<ExitCode> {
    let started = Instant::now();
    let dir = check_dir(args);
    let share = Share { sharers: session.sharers(&dir), rank: Some(session.cluster.rank()) };
    let prepared = session.agree(0, prepare(args, &share))?;
    let plan = &prepared.plan;
    session.agree_shape(plan)?;
    session.agree_space(&prepared.gathered.canonical, free_in(&prepared.gathered.facts.target), plan)?;
    if args.output.dry_run {
        if session.is_root() {
            print_quietly(&plan.to_string());
        }
        return Ok(session.finish(ExitCode::SUCCESS, None));
    }
    let interrupt = session.install_interrupt()?;
    let skeleton = prepared.skeleton();
    let hosts = session.hosts(&prepared.gathered.host, &skeleton.target);
    let local = ResultRecorder::new(plan, skeleton.clone(), None, None, ProgressLine::silent());
    let main = session.is_root().then(|| {
        let mut result = skeleton;
        result.cluster = Some(hosts);
        prepared.recorder(args, result, started)
    });
    let mut observer = ClusterObserver::new(session, prepared.gathered.host.clone(), local, main);
    let outcome = execute_in_cluster(plan, &interrupt, false, Some(&session.cluster), &mut observer);
    // A failure of the run is agreed by every rank (run::cluster), so every rank returns here alike.
    let cleanup = outcome.as_ref().ok().and_then(|o| o.cleanup_error.clone());
    let code = match observer.into_main() {
        Some(main) => finish(main, outcome, args)?,
        None => outcome.map(|_| ExitCode::SUCCESS)?,
    };
    let cleanup = cleanup.filter(|_| !session.is_root());
    Ok(session.finish(code, cleanup.as_deref()))
}
