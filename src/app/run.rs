//! `streamcap run`: flags and job file → JobSpec → facts → Plan → run → RunResult → summary, JSON, CSV.
//!
//! Exit codes: 0 when every phase completed without a failed operation; 1 when the run finished but operations
//! failed (an I/O error stopped a phase, or was recorded under --continue-on-error) or a workload's observed
//! share was off its skew by more than vdbench's abort_failed_skew; 2 for bad input or a set-up
//! failure (bad input is refused before anything is written; a failure during the run keeps the partial result);
//! 130 after Ctrl-C (the partial result is kept).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

use super::facts::{Gathered, anchor_facts, check_mapped_device, gather, gather_devices};
use super::observer::ResultRecorder;
use super::output::{
    Ending, end_command, ended, print_display_quietly, print_quietly, print_written, result_skeleton, say,
};
use super::outputs::check;
use crate::cli::{OutputFormat, RunArgs};
use crate::plan::{Plan, RunOptions, build_plan};
use crate::report::{
    CsvSink, HistLog, LogPrefixes, Renderer, RunSummary, Summary, fio_log_paths, render_to_string, write_fio_logs,
};
use crate::results::RunResult;
use crate::run::{Cluster, Interrupt, ProgressLine, RunError, RunOutcome, execute, run_id};
use crate::spec::{JobSpec, ReadOptions, SpecOrigin, default_job, read_job_file};

pub fn run(args: RunArgs) -> Result<ExitCode> {
    // clap's `requires` on --from does not hold when --verify-only would conflict with another flag given (--rw,
    // --dry-run): the run then went on and --from was ignored without a word.
    if let (Some(from), None) = (&args.from, args.verify_only) {
        anyhow::bail!(
            "--from {} names the kept run that --verify-only checks, and no --verify-only was given: add \
             --verify-only ALGO (the algorithm that run was written with), or leave out --from",
            from.display()
        );
    }
    if let Some(launcher) = super::cluster::launched_by() {
        // One rank of a multi-host run under mpirun or srun (docs/multi-host.md).
        return super::cluster::run_ranks(super::cluster::RankCommand::Run(&args), launcher);
    }
    check_run_outputs(&args)?;
    if let Some(algorithm) = args.verify_only {
        return super::verify_only::run(&args, algorithm);
    }
    let job = build_job(&args)?;
    let (gathered, plan) = plan_here(&args, &job, None)?;

    if args.output.dry_run {
        print_display_quietly(&plan);
        return Ok(ExitCode::SUCCESS);
    }
    super::output::say_plan(&args.output, &plan);
    // Created with its first row: a set-up failure leaves no empty file behind.
    let csv = args.csv.as_deref().map(CsvSink::new);
    let interrupt = Interrupt::install().context("cannot install the Ctrl-C handler")?;
    let progress = ProgressLine::new(!args.output.quiet);
    for notice in &plan.notices {
        progress.notice(&format!("note: {notice}"));
    }
    let skeleton = result_skeleton(&plan, &gathered);
    let mut recorder = ResultRecorder::new(&plan, skeleton, args.output.json.clone(), csv, progress);
    recorder.vdbench_lines &= !args.output.quiet;

    let outcome = execute(&plan, &interrupt, args.keep, &mut recorder);
    conclude(&args, &plan, &mut recorder, outcome)
}

/// After the run: the final status, the JSON, logs, HTML and history, the summary (or fio JSON), and the exit
/// code. A multi-host run's rank 0 ends this way too, with the merged result.
pub(super) fn conclude(
    args: &RunArgs,
    plan: &Plan,
    recorder: &mut ResultRecorder<'_>,
    outcome: Result<RunOutcome, RunError>,
) -> Result<ExitCode> {
    let outcome = ended(recorder, outcome)?;
    // Set before the last save, which the end makes (a multi-host run's rank 0 has set every rank's already).
    if let Some(verify) = &outcome.verify {
        recorder.result.verify = Some(super::verify_only::verify_result(verify, None));
    }
    let ending = Ending::of(&outcome, &args.output);
    let print = |result: &RunResult| {
        write_logs(plan, result);
        print_outputs(args, result);
    };
    Ok(end_command(recorder, ending, print, super::output::exit_code))
}

/// The summary, fio's JSON or the result JSON on stdout; with `--quiet` or a JSON only why the run failed, on stderr.
fn print_outputs(args: &RunArgs, result: &RunResult) {
    let fio_output = args.format.machine();
    if let Some(format) = fio_output {
        // Machine output replaces the summary, as `fio --output-format=json` does; notes went to stderr.
        print_quietly(&crate::report::render_to_string(format.renderer(), result));
    }
    if args.output.quiet || fio_output.is_some() {
        // No summary, but why a run failed is never kept quiet.
        for phase in &result.phases {
            if let Some(failure) = &phase.failure {
                say(&format!("error: phase '{}' failed: {failure}", phase.name));
            }
            if let Some(said) = phase.skew.as_ref().filter(|s| s.failed).and_then(|s| s.message()) {
                say(&format!("error: phase '{}': {said}", phase.name));
            }
            if let Some(first) = phase.errors.records.first() {
                say(&format!(
                    "error: phase '{}' had {} failed operations; the first: {} {} at offset {}: {}",
                    phase.name, phase.errors.count, first.op, first.path, first.offset, first.message
                ));
            }
        }
        if let Some(v) = result.verify.as_ref().filter(|v| v.failed()) {
            say(render_to_string(&Summary, v).trim_end());
        }
    } else {
        print_written(|out| RunSummary.render(result, out));
    }
}

/// The output files named on the command line (and the history database) must be writable under the output-file
/// rule, and none may be an input: the job file, or the target when it is a file.
pub(super) fn check_run_outputs(args: &RunArgs) -> Result<()> {
    let [json, html] = args.output.files();
    let outputs = [json, ("--csv", args.csv.as_deref()), html];
    if args.format != OutputFormat::Summary
        && let Some((flag, _)) = outputs.iter().find(|(_, p)| p.is_some_and(crate::outfile::is_stdout))
    {
        let format = args.format.name();
        anyhow::bail!("--format {format} prints to standard output, and so would {flag} -: give {flag} a file");
    }
    let mapped = args.device.iter().map(|(_, onto)| onto);
    let targets = args.target.iter().chain(&args.more_targets).chain(mapped);
    let inputs: Vec<&std::path::Path> = args.job.iter().chain(targets).map(PathBuf::as_path).collect();
    let history = args.verify_only.is_none().then_some(&args.output.history);
    check(&outputs, &inputs, history)
}

/// The fio-style logs the job asks for (write_bw_log …) are outputs too: checked once the plan names them.
fn check_log_outputs(plan: &Plan) -> Result<()> {
    let mut paths = Vec::new();
    // Only raw phases write fio's logs.
    for (index, raw) in plan.phases.iter().enumerate().filter_map(|(i, p)| Some((i, p.raw()?))) {
        let prefixes = log_prefixes(&raw.logs);
        paths.extend(fio_log_paths(std::path::Path::new("."), index + 1, prefixes));
    }
    let named: Vec<(&'static str, Option<&std::path::Path>)> =
        paths.iter().map(|(kind, path)| (log_flag(kind), Some(path.as_path()))).collect();
    check(&named, &[], None)
}

fn log_flag(kind: &str) -> &'static str {
    match kind {
        "bw" => "write_bw_log",
        "iops" => "write_iops_log",
        "clat_hist" => "write_hist_log",
        _ => "write_lat_log",
    }
}

/// The logs a raw phase's plan asks for.
fn log_prefixes(logs: &crate::plan::FioLogs) -> LogPrefixes<'_> {
    LogPrefixes {
        bw: logs.bw.as_deref(),
        iops: logs.iops.as_deref(),
        lat: logs.lat.as_deref(),
        hist: logs.hist.as_deref().map(|prefix| HistLog {
            prefix,
            every: logs.hist_every,
            coarseness: logs.hist_coarseness,
        }),
    }
}

/// This host's facts and plan for `job` (as a rank of `cluster`, under mpirun), after clearing what killed runs
/// of this host left in its directories; the fio-style logs the plan names are checked as outputs.
pub(super) fn plan_here(args: &RunArgs, job: &JobSpec, cluster: Option<&Cluster>) -> Result<(Gathered, Plan)> {
    let target = args.target.clone().or_else(|| job.target.clone()).unwrap_or_else(|| PathBuf::from("."));
    if !args.output.dry_run {
        let anchors = job.phases.iter().filter_map(|p| p.fileset()).flat_map(|f| &f.trees);
        let dirs: Vec<&std::path::Path> =
            std::iter::once(target.as_path()).chain(anchors.filter_map(|t| t.anchor.as_deref())).collect();
        super::stale::clear(&dirs, args.output.quiet);
    }
    let devices = crate::plan::job_devices(job);
    devices.iter().try_for_each(|d| check_mapped_device(d))?;
    let mut gathered = gather(&target, job.writes())?;
    gather_devices(&mut gathered, &devices, job.writes())?;
    gathered.facts.anchors = anchor_facts(job);
    let options = RunOptions {
        run_id: run_id(),
        allow_device_writes: args.allow_device_writes,
        force: args.force,
        wait: args.wait,
        rank: cluster.map(Cluster::rank),
        ranks: cluster.map_or(1, Cluster::size),
        depth_flag: args.workload.iodepth.is_some(),
        library: Default::default(),
    };
    let plan = build_plan(job, &gathered.facts, &options)?;
    // Rank 0 writes the fio-style logs.
    if cluster.is_none_or(|c| c.rank() == 0) {
        check_log_outputs(&plan)?;
    }
    Ok((gathered, plan))
}

/// The job: a job file, the flags alone (when they name an rw), or the built-in first look; flags override.
pub(super) fn build_job(args: &RunArgs) -> Result<JobSpec> {
    build_job_for(args, None)
}

/// [`build_job`] for a run of `ranks` MPI ranks (vdbench's hds map onto them).
pub(super) fn build_job_for(args: &RunArgs, ranks: Option<u32>) -> Result<JobSpec> {
    let overrides = args.workload.to_phase_spec();
    let mut job = match &args.job {
        Some(path) => read_job_file(path, &ReadOptions { ranks, ..args.read_options() })?,
        None if overrides.rw.is_some() => JobSpec {
            origin: SpecOrigin::Flags,
            target: None,
            interval: None,
            phases: vec![Default::default()],
            notices: Vec::new(),
        },
        None => default_job(),
    };
    job = job.with_overrides(&overrides).map_err(anyhow::Error::msg)?;
    // The histogram log's lines need intervals no longer than they are.
    let hist = args.workload.log_hist_msec.filter(|&ms| ms > 0);
    if let Some(interval) = args.interval.or(args.log_avg_msec.or(hist).map(std::time::Duration::from_millis)) {
        job.interval = Some(interval);
    }
    Ok(job)
}

/// fio-format logs asked for by the job (write_bw_log …), written in the working directory as fio does. A log
/// that cannot be written is a warning: the measurements stand.
fn write_logs(plan: &Plan, result: &RunResult) {
    for phase in &result.phases {
        let Some(logs) = plan.phases[phase.index].raw().map(|raw| &raw.logs) else { continue };
        let prefixes = log_prefixes(logs);
        if !prefixes.any() {
            continue;
        }
        match write_fio_logs(std::path::Path::new("."), phase, phase.index + 1, prefixes) {
            Ok(files) => {
                let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
                eprintln!("note: wrote fio logs {}", names.join(", "));
            }
            Err(e) => eprintln!("warning: cannot write the fio logs of phase '{}': {e}", phase.name),
        }
    }
}
