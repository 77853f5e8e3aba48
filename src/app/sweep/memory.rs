//! `sweep --memory SIZE`: the sweep runs in a child process inside a memory cgroup of its own, limited to SIZE,
//! so the page cache its files fill is capped there — the effect of a smaller RAM without another machine. The
//! group is a child of this process's own memory cgroup (`streamcap-PID`), v1 `memory.limit_in_bytes` or v2
//! `memory.max`, whichever the host offers.
//!
//! This process stays outside the group and only supervises: it refuses a SIZE below what the sweep can run in
//! (with the figure), creates the group, starts itself again as the child (which joins the group first thing,
//! `join_if_child`), passes Ctrl-C, SIGTERM and SIGHUP on to it, and removes the group once the child has exited —
//! however it exited, the kernel's OOM killer included, which it then names. (The sweep used to move this process
//! itself into the group: below 64 KiB it was OOM-killed without a word and the group stayed.) Groups left by a
//! killed supervisor are removed by the next `sweep --memory` when their process is gone.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::plan::PROCESS_RESERVE;
use crate::sysinfo::own_memory_cgroup;
use crate::units::Bytes;

const PREFIX: &str = "streamcap-";
/// Names the group a child process joins first thing (set by the supervisor; a path under the memory cgroup
/// hierarchy named `streamcap-PID`).
const CHILD_ENV: &str = "STREAMCAP_SWEEP_MEMORY_GROUP";
/// Memory the child is charged for before its first phase. It joins the group right after parsing its command
/// line, and what it allocated before stays charged where it was (a cgroup does not take a process's charges
/// with it), so this is the host facts and the plan: the plan's check found 768 KiB of a 1 MiB group left (a debug
/// build, one 1 MiB file with 4 KiB records), 256 KiB charged; 1 MiB is kept for it.
pub const STARTUP_BYTES: Bytes = Bytes::mib(1);

/// The least `--memory` a sweep whose largest record is `record` can run in, in whole MiB: what it takes to
/// start, its reserve for results, and one worker's buffer and state (the sweep's phases run one worker at
/// depth 1).
pub fn floor(record: Bytes) -> Bytes {
    let buffer = record.0.max(1).div_ceil(4096) * 4096 + crate::plan::WORKER_STATE_BYTES;
    Bytes((STARTUP_BYTES.0 + PROCESS_RESERVE.0 + buffer).div_ceil(1 << 20) << 20)
}

/// In the child (`CHILD_ENV` set by its supervisor): joins the group, so everything it allocates from here on
/// counts against SIZE. Returns whether this process is the child.
pub fn join_if_child() -> Result<bool> {
    let Some(dir) = std::env::var_os(CHILD_ENV).map(PathBuf::from) else { return Ok(false) };
    let own = own_memory_cgroup().context("--memory: this process is in no memory cgroup")?;
    let ours = dir.parent() == Some(own.dir.as_path())
        && dir.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(PREFIX));
    if !ours {
        bail!("{CHILD_ENV}={} is not a streamcap memory cgroup under {}: unset it", dir.display(), own.dir.display());
    }
    write(&dir.join("cgroup.procs"), &std::process::id().to_string())?;
    Ok(true)
}

/// Refuses a `limit` below [`floor`] (also for `--dry-run`: the value is wrong whatever runs).
pub fn check_floor(limit: Bytes, largest_record: Bytes) -> Result<()> {
    let least = floor(largest_record);
    if limit < least {
        bail!(
            "--memory {limit} is less than the sweep can run in: it needs at least {least} ({STARTUP_BYTES} for \
             streamcap as it starts, {PROCESS_RESERVE} it keeps for the results, and the buffer and state of its \
             largest record, {largest_record}); give --memory {} or more",
            least.exact()
        );
    }
    Ok(())
}

/// What the supervisor tidies after a child that was killed: its files in `dir`, and its `json` result.
pub struct Child<'a> {
    pub dir: &'a Path,
    pub json: Option<&'a Path>,
    pub quiet: bool,
}

/// In the supervisor (the limit checked by [`check_floor`]): creates the group, runs the sweep in a child inside
/// it, and returns the child's exit code once it has exited and the group is removed. A child killed by a
/// signal (the OOM killer, SIGKILL) could not remove its files nor finish its result: both are done here.
pub fn supervise(limit: Bytes, tidy: &Child<'_>) -> Result<ExitCode> {
    let group = MemoryGroup::create(limit)?;
    let signals = Forwarded::install()?;
    let mut child = std::process::Command::new(std::env::current_exe().context("cannot find streamcap's binary")?)
        .args(std::env::args_os().skip(1))
        .env(CHILD_ENV, &group.dir)
        // A process group of its own: Ctrl-C at the terminal reaches only this process, which passes it on
        // once. Otherwise the child would see it twice, and a second Ctrl-C means "exit at once".
        .process_group(0)
        .spawn()
        .context("cannot start the sweep inside its memory cgroup")?;
    let status = signals.wait(&mut child)?;
    let oom_kills = group.oom_kills();
    drop(group);
    if status.code().is_none() {
        super::super::stale::clear(&[tidy.dir], tidy.quiet);
    }
    if status.code().is_none() && oom_kills > 0 {
        let why = format!(
            "the sweep was killed by the kernel's out-of-memory killer inside its --memory cgroup of {limit}: what \
             it holds besides the page cache did not fit; give a larger --memory"
        );
        if let Some(json) = tidy.json {
            mark_failed(json, &why);
        }
        bail!(why);
    }
    Ok(match (status.code(), std::os::unix::process::ExitStatusExt::signal(&status)) {
        (Some(code), _) => ExitCode::from(u8::try_from(code).unwrap_or(2)),
        (None, Some(signal)) => ExitCode::from(128u8.saturating_add(u8::try_from(signal).unwrap_or(0))),
        (None, None) => ExitCode::from(2),
    })
}

use std::os::unix::process::CommandExt as _;

/// The result a killed child left with status `running`, marked failed with `why` (when it left one).
fn mark_failed(json: &Path, why: &str) {
    let Ok(mut result) = crate::results::read_result(json) else { return };
    result.status = crate::results::RunStatus::Failed;
    result.finished_at = Some(crate::results::rfc3339(std::time::SystemTime::now()));
    result.notices.push(why.to_string());
    if let Err(e) = crate::results::write_result_atomically(&result, json) {
        eprintln!("warning: {e}");
    }
}

/// The supervisor's Ctrl-C, SIGTERM and SIGHUP: each is passed on to the child, which stops as it would.
struct Forwarded {
    flags: Vec<(rustix::process::Signal, Arc<AtomicBool>)>,
}

impl Forwarded {
    fn install() -> Result<Forwarded> {
        use rustix::process::Signal;
        let mut flags = Vec::new();
        for (number, signal) in [
            (signal_hook::consts::SIGINT, Signal::INT),
            (signal_hook::consts::SIGTERM, Signal::TERM),
            (signal_hook::consts::SIGHUP, Signal::HUP),
        ] {
            let flag = Arc::new(AtomicBool::new(false));
            signal_hook::flag::register(number, flag.clone()).context("cannot install the signal handlers")?;
            flags.push((signal, flag));
        }
        Ok(Forwarded { flags })
    }

    /// Waits for the child, passing on every signal that arrives meanwhile.
    fn wait(&self, child: &mut std::process::Child) -> Result<std::process::ExitStatus> {
        let pid = rustix::process::Pid::from_child(child);
        loop {
            if let Some(status) = child.try_wait().context("cannot wait for the sweep")? {
                return Ok(status);
            }
            for (signal, flag) in &self.flags {
                if flag.swap(false, Ordering::Relaxed) {
                    let _ = rustix::process::kill_process(pid, *signal);
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The limited group, removed when dropped (its process has exited by then).
#[derive(Debug)]
struct MemoryGroup {
    dir: PathBuf,
    v2: bool,
}

impl MemoryGroup {
    fn create(limit: Bytes) -> Result<MemoryGroup> {
        let Some(own) = own_memory_cgroup() else {
            bail!(
                "--memory needs the memory cgroup controller (cgroup v1 memory or v2 with memory enabled), and this \
                 host offers neither to this process: run without --memory, or give the sweep sizes past twice the RAM"
            );
        };
        remove_abandoned(&own.dir);
        let dir = own.dir.join(format!("{PREFIX}{}", std::process::id()));
        std::fs::create_dir(&dir).with_context(|| {
            format!(
                "cannot create the memory cgroup {} for --memory (it takes root, or a cgroup delegated to you): run \
                 as root or without --memory",
                dir.display()
            )
        })?;
        let group = MemoryGroup { dir, v2: own.v2 };
        let file = if own.v2 { "memory.max" } else { "memory.limit_in_bytes" };
        write(&group.dir.join(file), &limit.0.to_string())?;
        Ok(group)
    }

    /// How many processes the kernel's OOM killer killed in the group (v1 `memory.oom_control`, v2
    /// `memory.events`: `oom_kill N`).
    fn oom_kills(&self) -> u64 {
        let file = if self.v2 { "memory.events" } else { "memory.oom_control" };
        let text = std::fs::read_to_string(self.dir.join(file)).unwrap_or_default();
        text.lines().find_map(|l| l.strip_prefix("oom_kill ")).and_then(|n| n.trim().parse().ok()).unwrap_or(0)
    }
}

impl Drop for MemoryGroup {
    fn drop(&mut self) {
        // The child has exited, but the kernel may take a moment to let go of the group.
        for attempt in 0..50 {
            match std::fs::remove_dir(&self.dir) {
                Ok(()) => return,
                Err(_) if attempt < 49 => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => eprintln!(
                    "warning: cannot remove the memory cgroup {} ({e}); remove it with rmdir",
                    self.dir.display()
                ),
            }
        }
    }
}

fn write(path: &Path, value: &str) -> Result<()> {
    std::fs::write(path, value).with_context(|| format!("cannot write {value} to {}", path.display()))
}

/// Removes `streamcap-PID` groups under `dir` whose process is gone (rmdir refuses a group still in use).
fn remove_abandoned(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(PREFIX)).and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !Path::new("/proc").join(pid.to_string()).exists() {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_covers_start_up_the_reserve_and_the_largest_record() {
        // 1 MiB to start, 16 MiB of reserve, 4 KiB of buffer and 1 MiB of state: 18 MiB and a bit, so 19.
        assert_eq!(floor(Bytes::kib(4)), Bytes::mib(19));
        assert_eq!(floor(Bytes::mib(16)), Bytes::mib(34));
    }
}
