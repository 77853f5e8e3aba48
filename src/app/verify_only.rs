//! `streamcap run DIR --verify-only ALGO [--from RUNDIR]`: re-read what the most recent kept run under DIR
//! (`--keep --verify`) wrote, and check every block it wrote, without writing anything (fio verify_only). Also
//! the conversion of a run's verification outcome into the result's `verify` section, shared with `run`.
//!
//! Exit codes: 0 when every block is good; 1 when a block is bad or could not be read; 2 when there is nothing
//! to verify (no kept run, a run written with another algorithm); 130 after Ctrl-C.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};

use super::facts::gather;
use super::output::{print_quietly, say};
use crate::cli::RunArgs;
use crate::plan::defaults;
use crate::report::{Summary, render_to_string};
use crate::results::{ErrorSummary, RunResult, RunStatus, VerifyResult, rfc3339, write_result_atomically};
use crate::run::{INTERRUPTED_EXIT, Interrupt, VerifyOutcome, latest_kept_run, load_kept_run};
use crate::spec::VerifyChoice;

pub fn run(args: &RunArgs, choice: VerifyChoice) -> Result<ExitCode> {
    let target = args.target.clone().unwrap_or_else(|| ".".into());
    let run_dir = match &args.from {
        Some(dir) => dir.clone(),
        None => latest_kept_run(&target)?,
    };
    // Its directories stay held open (and registered) until the read-back is over.
    let kept = load_kept_run(&run_dir, defaults::BAD_BLOCKS_KEPT)?;
    let (manifest, verifier, paths) = (&kept.manifest, &kept.verifier, &kept.paths);
    let asked = crate::plan::verify_algorithm(choice);
    anyhow::ensure!(
        asked == manifest.algorithm,
        "{} was written with --verify {}: check it with --verify-only {}",
        run_dir.display(),
        manifest.algorithm,
        manifest.algorithm
    );
    let gathered = gather(&target, false)?;
    let interrupt = Interrupt::install().context("cannot install the Ctrl-C handler")?;
    let config = serde_json::json!({ "verify_only": { "from": run_dir.display().to_string(), "manifest": manifest } });
    let mut result = RunResult::started(gathered.host.clone(), gathered.target_info("directory"), config, Vec::new());

    if !args.output.quiet {
        say(&format!("verifying what {} wrote ({asked}, blocks of {} bytes)…", run_dir.display(), manifest.block_size));
    }
    // Direct I/O where each file's filesystem allows it; never a file outside the kept run's directories.
    let mut outcome = crate::run::read_back(verifier, paths, true, true, &interrupt.flag(), &mut |_, _| {});
    outcome.in_flight = manifest.journaled.then(|| verifier.pending_blocks());
    let verify = verify_result(&outcome, Some(&run_dir));
    result.status = if interrupt.is_set() { RunStatus::Interrupted } else { RunStatus::Completed };
    result.finished_at = Some(rfc3339(std::time::SystemTime::now()));
    result.verify = Some(verify.clone());
    let saved = args.output.json.as_ref().map(|path| write_result_atomically(&result, path));

    let text = render_to_string(&Summary, &verify);
    if args.output.quiet {
        if verify.failed() {
            say(text.trim_end());
        }
    } else {
        print_quietly(&text);
    }
    if let Some(Err(e)) = saved {
        say(&format!("warning: {e}"));
    }
    Ok(if interrupt.is_set() {
        ExitCode::from(INTERRUPTED_EXIT as u8)
    } else if verify.failed() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The result's `verify` section from what verification found. `from`: the kept run checked (`--verify-only`).
pub(super) fn verify_result(outcome: &VerifyOutcome, from: Option<&Path>) -> VerifyResult {
    VerifyResult {
        algorithm: outcome.algorithm.name().into(),
        block_bytes: u64::from(outcome.block),
        blocks_checked: outcome.counts.blocks,
        bytes_checked: outcome.counts.bytes,
        bad_count: outcome.bad.count,
        bad_blocks: outcome.bad.blocks.clone(),
        pass_complete: outcome.pass_complete,
        read_errors: ErrorSummary { count: outcome.read_error_count, records: outcome.read_errors.clone() },
        lost_ranges: outcome.bad.missing.clone(),
        from: from.map(|p| p.display().to_string()),
        manifest: outcome.manifest.as_ref().map(|p| p.display().to_string()),
        in_flight: outcome.in_flight,
    }
}
