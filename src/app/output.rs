//! What every command does with its output: print to stdout without failing on a closed pipe, check that a
//! result file can be written before the run, and start a `RunResult` from a plan and the gathered facts.

use std::io::Write;

use anyhow::Result;

use super::facts::Gathered;
use crate::plan::{Plan, TargetKind};
use crate::results::RunResult;

pub fn check_writable_parent(path: &std::path::Path) -> Result<()> {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    anyhow::ensure!(
        parent.is_dir(),
        "cannot write the result to {}: the directory {} does not exist",
        path.display(),
        parent.display()
    );
    Ok(())
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

/// Prints to stdout; a closed pipe (`streamcap … | head`) ends the output quietly.
pub fn print_quietly(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}
