//! What every command does with its output: print to stdout without failing on a closed pipe (to stderr when an
//! output file is `-`, so stdout holds only that file), and start a `RunResult` from a plan and the gathered
//! facts. Output paths are checked in `outputs.rs`.

use std::io::Write;

use super::facts::Gathered;
use crate::plan::{Plan, TargetKind};
use crate::results::RunResult;

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
