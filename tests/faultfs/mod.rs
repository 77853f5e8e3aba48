//! A FUSE filesystem for tests that passes through to a backing directory and injects faults by rule: errors
//! (EIO, ENOSPC…) at chosen offsets or after N operations, short reads and writes, latency spikes, silent bit
//! flips, lost writes and misdirected writes, failed removals (see `rules.rs`); and, when asked, hides files
//! removed while open as libfuse's high-level API does.
//!
//! [`FaultMount::new`] mounts it in this process, served by a background thread, at a fresh mount point over a
//! fresh backing directory; dropping the guard unmounts it (lazily if something still holds it) and removes
//! both directories, so a panicking test leaves nothing mounted. The program under test runs as a child
//! process: the kernel then sits between it and this filesystem exactly as it would with any other. Mounting
//! needs root and /dev/fuse; without them the test says `SKIPPED` and returns.

#![allow(dead_code)]

mod passthrough;
mod rules;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub use rules::{Fault, Injected, Op, Rule, Rules};

/// A mounted fault-injecting filesystem; unmounted on drop.
pub struct FaultMount {
    /// Where the filesystem is mounted: run the program under test against this.
    pub point: PathBuf,
    /// What it passes through to: inspect or corrupt the stored data here.
    pub backing: PathBuf,
    rules: Arc<Mutex<Rules>>,
    session: Option<fuser::BackgroundSession>,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

impl FaultMount {
    /// Mounts a fresh filesystem, or says `SKIPPED <test>: why` and returns `None` where FUSE cannot be used.
    pub fn new(test: &str) -> Option<FaultMount> {
        if !rustix::process::geteuid().is_root() {
            crate::common::skip(&format!("{test}: mounting a FUSE filesystem needs root"));
            return None;
        }
        if !Path::new("/dev/fuse").exists() {
            crate::common::skip(&format!("{test}: /dev/fuse is missing (no FUSE in this kernel or container)"));
            return None;
        }
        let point_dir = tempfile::tempdir().expect("create the mount point");
        let backing_dir = tempfile::tempdir().expect("create the backing directory");
        let rules = Arc::new(Mutex::new(Rules::default()));
        let fs = passthrough::FaultFs::new(backing_dir.path().to_path_buf(), rules.clone());
        let mut config = fuser::Config::default();
        config.mount_options =
            vec![fuser::MountOption::FSName("streamcap-faultfs".into()), fuser::MountOption::Subtype("faultfs".into())];
        let session = fuser::spawn_mount(fs, point_dir.path(), &config)
            .unwrap_or_else(|e| panic!("mount the FUSE test filesystem at {}: {e}", point_dir.path().display()));
        Some(FaultMount {
            point: point_dir.path().to_path_buf(),
            backing: backing_dir.path().to_path_buf(),
            rules,
            session: Some(session),
            _dirs: (point_dir, backing_dir),
        })
    }

    pub fn add(&self, rule: Rule) {
        self.rules().add(rule);
    }

    /// From now on, hides files removed while open instead of removing them, as sshfs does (see
    /// `Rules::hide_open_removed`).
    pub fn hide_open_removed(&self) {
        self.rules().hide_open_removed = true;
    }

    /// Removes every rule (the log of injected faults stays).
    pub fn clear(&self) {
        self.rules().clear();
    }

    /// Every fault injected so far, in order.
    pub fn injected(&self) -> Vec<Injected> {
        self.rules().injected.clone()
    }

    /// (reads, writes) served so far.
    pub fn counts(&self) -> (u64, u64) {
        let rules = self.rules();
        (rules.reads, rules.writes)
    }

    /// Every path under the backing directory, relative to it (for "nothing left behind").
    pub fn leftovers(&self) -> Vec<String> {
        fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).expect("list the backing directory").flatten() {
                let path = entry.path();
                out.push(path.strip_prefix(root).expect("under the root").display().to_string());
                if path.is_dir() {
                    walk(root, &path, out);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.backing, &self.backing, &mut out);
        out.sort();
        out
    }

    fn rules(&self) -> std::sync::MutexGuard<'_, Rules> {
        self.rules.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for FaultMount {
    fn drop(&mut self) {
        let Some(session) = self.session.take() else { return };
        if session.umount_and_join().is_err() {
            // Still busy (a child that outlived a failed assertion): detach it, so nothing stays mounted here.
            let _ = std::process::Command::new("umount").arg("-l").arg(&self.point).status();
        }
    }
}
