//! The `scrub` background load on btrfs (`--during scrub`, shape in `streams::background`): the kernel's own
//! scrub, started for each step as `btrfs scrub start -B -R PATH` and cancelled when the step ends (`btrfs scrub
//! cancel PATH`, only while the scrub streamcap started still runs: a scrub someone else started is never
//! touched), its bytes read from `btrfs scrub status -R PATH` (`data_bytes_scrubbed` + `tree_bytes_scrubbed`,
//! every copy counted: the bytes the members read) over the step's wall time. The scrub reads and verifies; it
//! writes only to repair a copy whose checksum is wrong, as any scrub of the pool would.
//!
//! On a filesystem other than btrfs the load is a reader of the I/O core over the device (`background.rs`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use ::streams::BackgroundFigures;

/// The tool.
const BTRFS: &str = "btrfs";

/// A btrfs scrub streamcap started for one step, and which of the phase's loads it is.
pub struct BtrfsScrub {
    /// The load's place in the phase's `during`.
    pub load: usize,
    child: Option<Child>,
    path: PathBuf,
    started: Instant,
    /// Why it could not start, if it did not.
    failed: Option<String>,
}

impl BtrfsScrub {
    /// Starts `btrfs scrub start -B -R path` in the background (it runs until the scrub ends or is cancelled).
    pub fn start(load: usize, path: &Path) -> BtrfsScrub {
        let spawned = Command::new(BTRFS)
            .args(["scrub", "start", "-B", "-R"])
            .arg(path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn();
        let (child, failed) = match spawned {
            Ok(child) => (Some(child), None),
            Err(e) => (None, Some(format!("cannot run '{BTRFS} scrub start': {e}"))),
        };
        BtrfsScrub { load, child, path: path.to_path_buf(), started: Instant::now(), failed }
    }

    /// Cancels the scrub if it still runs, waits for it, and reads what it did. A scrub that could not start,
    /// or ended with an error (another scrub already running), counts one error and no bytes.
    pub fn stop(mut self) -> BackgroundFigures {
        let mut figures = BackgroundFigures { load: "scrub".into(), ..BackgroundFigures::default() };
        if let Some(mut child) = self.child.take() {
            // Still running: ours, so cancelled; ended on its own: finished, or refused (a scrub already ran).
            let cancelled = matches!(child.try_wait(), Ok(None));
            if cancelled {
                let _ = Command::new(BTRFS)
                    .args(["scrub", "cancel"])
                    .arg(&self.path)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
            figures.seconds = self.started.elapsed().as_secs_f64();
            match child.wait_with_output() {
                Ok(out) if cancelled || out.status.success() => {}
                Ok(out) => self.failed = Some(String::from_utf8_lossy(&out.stderr).trim().to_string()),
                Err(e) => self.failed = Some(e.to_string()),
            }
        }
        if self.failed.is_some() {
            figures.errors = 1;
            return figures;
        }
        match status_bytes(&self.path) {
            Some(bytes) => figures.read_bytes = bytes,
            None => figures.errors = 1,
        }
        figures
    }
}

/// The bytes the last scrub of the filesystem at `path` read: `btrfs scrub status -R`'s data and tree bytes.
fn status_bytes(path: &Path) -> Option<u64> {
    let out = Command::new(BTRFS).args(["scrub", "status", "-R"]).arg(path).stderr(Stdio::null()).output().ok()?;
    out.status.success().then(|| scrubbed_bytes(&String::from_utf8_lossy(&out.stdout)))?
}

/// `data_bytes_scrubbed` + `tree_bytes_scrubbed` of `btrfs scrub status -R`'s output.
fn scrubbed_bytes(text: &str) -> Option<u64> {
    let field = |name: &str| {
        text.lines().find_map(|l| l.trim().strip_prefix(name)?.trim().strip_prefix(':')?.trim().parse::<u64>().ok())
    };
    Some(field("data_bytes_scrubbed")? + field("tree_bytes_scrubbed").unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// btrfs-progs 6.2's `btrfs scrub status -R` of a raid1 with 150 MiB of data (both copies counted).
    #[test]
    fn the_bytes_are_the_data_and_tree_bytes_scrubbed() {
        let text = "UUID:             41b7b4ba-775b-454e-8da9-a43e59fcc9b3\nScrub started:    Sat Nov 28 13:39:53 \
                    2026\nStatus:           aborted\nDuration:         0:00:02\n\tdata_extents_scrubbed: 4800\n\t\
                    tree_extents_scrubbed: 40\n\tdata_bytes_scrubbed: 314572800\n\ttree_bytes_scrubbed: 655360\n\t\
                    read_errors: 0\n\tlast_physical: 293601280\n";
        assert_eq!(scrubbed_bytes(text), Some(314_572_800 + 655_360));
        assert_eq!(scrubbed_bytes("no stats available\n"), None);
    }

    #[test]
    fn a_scrub_that_cannot_start_counts_one_error() {
        let scrub = BtrfsScrub {
            load: 0,
            child: None,
            path: PathBuf::from("/nonexistent"),
            started: Instant::now(),
            failed: Some("cannot run".into()),
        };
        let figures = scrub.stop();
        assert_eq!((figures.errors, figures.read_bytes, figures.load.as_str()), (1, 0, "scrub"));
    }
}
