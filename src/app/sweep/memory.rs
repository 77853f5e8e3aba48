//! `sweep --memory SIZE`: this process moves into a memory cgroup of its own, limited to SIZE, so the page cache
//! its files fill is capped there — the effect of a smaller RAM without another machine. The group is a child of
//! the process's own memory cgroup (`streamcap-PID`), v1 `memory.limit_in_bytes` or v2 `memory.max`, whichever
//! the host offers. The guard moves the process back and removes the group when dropped: at the end, after an
//! error and after Ctrl-C (the first signal ends the run normally). Groups left by a killed run (a second
//! Ctrl-C, SIGKILL) are removed by the next `sweep --memory` when their process is gone.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::sysinfo::own_memory_cgroup;
use crate::units::Bytes;

const PREFIX: &str = "streamcap-";

/// This process inside its own limited memory cgroup, until dropped.
#[derive(Debug)]
pub struct MemoryGroup {
    dir: PathBuf,
    home: PathBuf,
}

impl MemoryGroup {
    /// Creates the group, sets its limit and moves this process (all its threads) into it.
    pub fn enter(limit: Bytes) -> Result<MemoryGroup> {
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
        let group = MemoryGroup { dir, home: own.dir };
        let file = if own.v2 { "memory.max" } else { "memory.limit_in_bytes" };
        write(&group.dir.join(file), &limit.0.to_string())?;
        write(&group.dir.join("cgroup.procs"), &std::process::id().to_string())?;
        Ok(group)
    }
}

impl Drop for MemoryGroup {
    fn drop(&mut self) {
        let home = self.home.join("cgroup.procs");
        if let Err(e) = write(&home, &std::process::id().to_string()) {
            eprintln!("warning: {e:#}");
        }
        if let Err(e) = std::fs::remove_dir(&self.dir) {
            eprintln!("warning: cannot remove the memory cgroup {} ({e}); remove it with rmdir", self.dir.display());
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
