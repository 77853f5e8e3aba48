//! What every command does with its output: print to stdout without failing on a closed pipe (to stderr when an
//! output file is `-`, so stdout holds only that file), start a `RunResult` from a plan and the gathered facts,
//! and end a measuring command (`end_command`: the one path from a finished run to its files, its summary and
//! its exit code). Output paths are checked in `outputs.rs`.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use super::facts::Gathered;
use super::observer::ResultRecorder;
use crate::cli::{HistoryOptions, OutputArgs};
use crate::plan::{Plan, TargetKind};
use crate::results::RunResult;

/// How a measuring command's run ended, and where its files go.
pub struct Ending<'a> {
    /// The run was stopped by Ctrl-C or a signal (the status says so, and the exit code is 130).
    pub interrupted: bool,
    /// Where the HTML report goes (`--html`, or check's default beside the JSON), if anywhere.
    pub html: Option<&'a Path>,
    /// Where the result is stored in the history (`--history-db`, `--no-history`).
    pub history: &'a HistoryOptions,
    /// What the run's clean-up could not remove.
    pub cleanup_error: Option<&'a str>,
    /// `--quiet`: the history's "stored as #N" is not said (a warning still is).
    pub quiet: bool,
}

impl<'a> Ending<'a> {
    /// The end a run's outcome and the shared output flags say; a command changes a field where it knows
    /// better (check's default HTML, sweep's stop by its budget).
    pub fn of(outcome: &'a crate::run::RunOutcome, output: &'a OutputArgs) -> Ending<'a> {
        Ending {
            interrupted: outcome.interrupted,
            html: output.html.as_deref(),
            history: &output.history,
            cleanup_error: outcome.cleanup_error.as_deref(),
            quiet: output.quiet,
        }
    }
}

/// The one end of every measuring command (`run`, `streams`, `check`, `cache`, `sweep`, and rank 0 of a
/// multi-host run): the final status and the last save of the JSON, the HTML report (both through `outfile`,
/// the one output-file rule; a file that cannot be written is a warning, the measurements stand), the history
/// row, then `print` (the command's summary on stdout, or what it prints instead), then the exit code: a file
/// that could not be written is said as a warning, and data files the clean-up left behind make it 2 whatever
/// was measured; else it is `exit` of the result.
pub fn end_command(
    recorder: &mut ResultRecorder<'_>,
    ending: Ending<'_>,
    print: impl FnOnce(&RunResult),
    exit: impl FnOnce(&RunResult) -> ExitCode,
) -> ExitCode {
    recorder.conclude(ending.interrupted);
    super::report::html_after_run(&recorder.result, ending.html);
    super::history::record(&recorder.result, ending.history, ending.quiet);
    print(&recorder.result);
    if let Some(code) = recorder.report_problems(ending.cleanup_error) {
        return code;
    }
    exit(&recorder.result)
}

/// The outcome of a run that ended, or its error once the recorder has said so in its file (`Failed`, when a
/// phase had started; a set-up failure before any phase leaves no file behind: `ResultRecorder::failed`). The
/// progress line is cleared either way. Every measuring command's end starts here.
pub fn ended(
    recorder: &mut ResultRecorder<'_>,
    outcome: Result<crate::run::RunOutcome, crate::run::RunError>,
) -> Result<crate::run::RunOutcome, crate::run::RunError> {
    recorder.progress.clear();
    outcome.inspect_err(|_| recorder.failed())
}

/// Prints what `write` writes (a summary writer of `report`), as [`print_quietly`] does.
pub fn print_written(write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) {
    let mut text = Vec::new();
    write(&mut text).expect("writing to a Vec cannot fail");
    print_quietly(&String::from_utf8_lossy(&text));
}

pub fn result_skeleton(plan: &Plan, gathered: &Gathered) -> RunResult {
    let kind = match plan.target.kind {
        TargetKind::Directory => "directory",
        TargetKind::File => "file",
        TargetKind::BlockDevice => "block_device",
        TargetKind::Remote => "http",
    };
    RunResult::started(
        gathered.host.clone(),
        gathered.target_info(kind),
        serde_json::to_value(plan).unwrap_or_default(),
        plan.notices.clone(),
    )
}

/// `-v`: the expanded plan (what `--dry-run` prints on stdout) on stderr, before a measuring command starts.
pub fn say_plan(output: &OutputArgs, plan: &dyn std::fmt::Display) {
    if output.verbose {
        say(plan.to_string().trim_end());
    }
}

/// Prints a line to stderr with control characters (from job files and results) escaped.
pub fn say(text: &str) {
    eprintln!("{}", crate::escape::for_terminal(text));
}

/// Prints to stdout; a closed pipe (`streamcap … | head`) ends the output quietly. Any other failure (a full disk
/// or `ulimit -f` under a redirection) is said on stderr, since the output is then cut short. Control characters
/// (from job files and results) are escaped, so nothing printed can drive the terminal; JSON stays valid JSON. When
/// an output file is `-` (`--json -`), stdout is that file's and this goes to stderr.
pub fn print_quietly(text: &str) {
    print_display_quietly(&text);
}

/// As [`print_quietly`], writing `value` as it is formatted, piece by piece, instead of building its whole text
/// first (a `--dry-run` plan of thousands of phases is tens of MB of text, and its escaped copy as much again).
/// Escaping is per character, so escaping the pieces is escaping the whole.
pub fn print_display_quietly(value: &dyn std::fmt::Display) {
    struct Escaped<W: Write> {
        out: W,
        error: Option<std::io::Error>,
    }
    impl<W: Write> std::fmt::Write for Escaped<W> {
        fn write_str(&mut self, piece: &str) -> std::fmt::Result {
            self.out.write_all(crate::escape::for_terminal(piece).as_bytes()).map_err(|e| {
                self.error = Some(e);
                std::fmt::Error
            })
        }
    }
    let out: Box<dyn Write> = if crate::outfile::stdout_claimed() {
        Box::new(std::io::BufWriter::new(std::io::stderr().lock()))
    } else {
        Box::new(std::io::BufWriter::new(std::io::stdout().lock()))
    };
    let mut out = Escaped { out, error: None };
    let written = std::fmt::write(&mut out, format_args!("{value}"));
    let flushed = out.out.flush();
    let error = match (written, flushed) {
        (Err(_), _) => out.error.take(),
        (Ok(()), Err(e)) => Some(e),
        (Ok(()), Ok(())) => None,
    };
    if let Some(e) = error.filter(|e| e.kind() != std::io::ErrorKind::BrokenPipe) {
        eprintln!("warning: the output is incomplete: cannot write to standard output: {}", crate::limits::explain(&e));
    }
}

/// The exit code of a finished result: 130 interrupted, 2 failed, 1 for I/O errors or any failed operation (a
/// bad block `--verify` found, or could not read back, is one too; with --continue-on-error a phase completes
/// despite them, and so is a workload off its skew by more than vdbench's abort_failed_skew), else 0.
pub fn exit_code(result: &RunResult) -> std::process::ExitCode {
    use crate::results::RunStatus;
    use std::process::ExitCode;
    let failed_ops = result.phases.iter().any(|p| p.errors.count > 0 || p.skew.as_ref().is_some_and(|s| s.failed))
        || result.verify.as_ref().is_some_and(|v| v.failed());
    match result.status {
        RunStatus::Interrupted => ExitCode::from(crate::run::INTERRUPTED_EXIT as u8),
        RunStatus::Failed => ExitCode::from(2),
        RunStatus::IoError => ExitCode::from(1),
        RunStatus::Completed | RunStatus::Running if failed_ops => ExitCode::from(1),
        RunStatus::Completed | RunStatus::Running => ExitCode::SUCCESS,
    }
}
