//! `streamcap inspect TARGET`: the facts beneath a target (filesystem, pool, members, capacity, read policy,
//! devices, free space, effective RAM) gathered from sysfs, /proc and statvfs, printed, and with `--json`
//! written as a `RunResult` without phases. It runs no I/O on the target and creates nothing there.

use std::process::ExitCode;

use anyhow::{Result, bail};

use super::facts::gather;
use super::output::print_quietly;
use crate::cli::InspectArgs;
use crate::plan::TargetFacts;
use crate::report::{Summary, render_to_string};
use crate::results::{RunResult, RunStatus, rfc3339, write_result_atomically};

/// The `config` of an inspect result: there is no plan, only the command.
/// The configuration's command of an inspect result; `report::Summary` recognises inspect results by it.
const CONFIG_COMMAND: &str = "inspect";

pub fn run(args: &InspectArgs) -> Result<ExitCode> {
    if std::fs::symlink_metadata(&args.target).is_err() {
        bail!("{} does not exist: give an existing directory, file or block device to inspect", args.target.display());
    }
    super::outputs::check(&[("--json", args.json.as_deref())], &[args.target.as_path()], None)?;
    // Reading only: a block device's content is not probed (that is what `writes = true` would do).
    let gathered = gather(&args.target, false)?;
    let kind = match gathered.facts.target {
        TargetFacts::Directory { .. } => "directory",
        TargetFacts::File { .. } => "file",
        TargetFacts::BlockDevice { .. } => "block_device",
        TargetFacts::Remote { .. } => "http",
    };
    let config = serde_json::json!({ "command": CONFIG_COMMAND });
    let mut result = RunResult::started(gathered.host.clone(), gathered.target_info(kind), config, Vec::new());
    result.status = RunStatus::Completed;
    result.finished_at = Some(rfc3339(std::time::SystemTime::now()));
    if let Some(path) = &args.json {
        write_result_atomically(&result, path)?;
    }
    print_quietly(&render_to_string(&Summary, &result));
    Ok(ExitCode::SUCCESS)
}
