//! What earlier runs of this host left under a target, found and removed before a command measures free space:
//! work directories of runs that were killed, crashed or whose clean-up failed, and abandoned file-set trees.
//!
//! A work directory is abandoned exactly when its marker's lock can be taken (see `workdir`). What is removed is
//! exactly what streamcap made there: the files its marker lists and the names streamcap gives its files
//! (`data.N`, `media-….bin`, `title-….bin`, `ingest-….bin`, the verification manifest), the marker last. A crash can leave a
//! marker that is empty or missing (one written before markers were flushed to the disk, or lost by fsck):
//! such a directory is still in streamcap's own layout (`.streamcap/run-<this host>-<pid>-<secs>/`, this user's,
//! not writable by others), so its files of those names are removed too, and named. An empty run directory (a
//! clean-up that failed after the marker went) is removed. Anything else is left where it is, and the note says
//! what stays and what to remove by hand. Every removal is said, with what it freed.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use rustix::fs::OFlags;

use super::owned::{OwnedDir, OwnedError};
use super::workdir::{
    KEPT_LINE, MARKER, WorkDirError, host_label, listed_files, parse_run_id, prepare_base,
    remove_dir_after_fuse_releases,
};
use crate::units::Bytes;

/// What the stale clean-up found and did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Stale {
    /// Work directories and trees removed.
    pub removed: Vec<PathBuf>,
    /// Bytes they held (allocated blocks).
    pub freed: u64,
    /// What else to tell: files removed from a directory with a damaged or missing marker (named), a directory
    /// left empty by a failed clean-up, and what was left and why, with what to remove by hand.
    pub notes: Vec<String>,
}

/// Names streamcap gave its files before markers listed them: `data.N`, `media-…​.bin`, `ingest-…​.bin`, `during-…​.bin`; and the
/// verification manifest of a `--keep --verify` run killed between writing it and marking the directory kept.
fn is_own_name(name: &str) -> bool {
    name == crate::verify::MANIFEST_FILE
        || name == crate::verify::MAP_FILE
        || name.strip_prefix("data.").is_some_and(|n| n.parse::<u32>().is_ok())
        || (["media-", "title-", "ingest-", "during-"].iter().any(|p| name.starts_with(p)) && name.ends_with(".bin"))
}

/// Removes what this host's earlier streamcap runs left under `target` and nobody holds: work directories (not
/// kept ones, not other hosts', not another user's) and file-set trees.
pub fn remove_stale(target: &Path) -> Stale {
    let mut stale = Stale::default();
    let Ok(base) = existing_base(target) else { return stale };
    for name in base.names().unwrap_or_default() {
        if name.starts_with(crate::plan::TREE_DIR_PREFIX) && name.ends_with(".lock") {
            super::fileset::remove_orphan_lock(&base, &name);
            continue;
        }
        if name.starts_with(crate::plan::TREE_DIR_PREFIX) {
            match super::fileset::remove_abandoned_tree(&base, &name) {
                Ok(Some(freed)) => {
                    stale.removed.push(base.path().join(&name));
                    stale.freed += freed;
                }
                Ok(None) => {}
                Err(note) => stale.notes.push(note),
            }
            continue;
        }
        if name == crate::plan::KEPT_LIBRARY_DIR {
            if let Some((dir, freed)) = super::library_store::remove_incomplete(&base) {
                stale.removed.push(dir);
                stale.freed += freed;
            }
            continue;
        }
        let Some((host, _pid)) = parse_run_id(&name) else { continue };
        if host != host_label() {
            continue;
        }
        let Ok(dir) = base.open_dir(&name) else { continue };
        let found = remove_abandoned(&base, &dir, &name);
        stale.freed += found.freed;
        if found.gone {
            stale.removed.push(dir.path().to_path_buf());
        }
        stale.notes.extend(found.note);
    }
    let _ = super::fuse_release::remove_dir(base.path());
    stale
}

/// `TARGET/.streamcap` when it exists and passes the checks of `owned` (never created here).
fn existing_base(target: &Path) -> Result<OwnedDir, WorkDirError> {
    let meta = std::fs::symlink_metadata(target.join(".streamcap"))
        .map_err(|cause| WorkDirError::Create { path: target.join(".streamcap"), cause })?;
    if !meta.is_dir() {
        return Err(WorkDirError::Owned(OwnedError::Unsafe {
            path: target.join(".streamcap"),
            why: "is not a directory".into(),
            fix: "remove it",
        }));
    }
    prepare_base(target)
}

/// What became of one work directory.
#[derive(Debug, Default)]
struct Found {
    /// The directory is gone.
    gone: bool,
    freed: u64,
    note: Option<String>,
}

/// How a directory's marker reads.
enum Marker {
    /// A whole marker, not kept: the files it lists.
    Listed(Vec<String>),
    /// Empty or unreadable as a marker: a crash before it reached the disk.
    Damaged,
    /// None at all.
    Missing,
}

/// Removes an abandoned work directory (its marker unlocked and not kept, damaged or missing) as far as it holds
/// only what streamcap made; says what it removed beyond the ordinary and what stays.
fn remove_abandoned(base: &OwnedDir, dir: &OwnedDir, name: &str) -> Found {
    let path = dir.path().display().to_string();
    let Some((marker, lock)) = read_marker(dir) else { return Found::default() };
    let Ok(entries) = dir.names() else { return Found::default() };
    let mut found = Found::default();
    let (mut removed, mut failed, mut unknown) = (Vec::new(), Vec::new(), Vec::new());
    for entry in entries.into_iter().filter(|e| e != MARKER) {
        let known = match &marker {
            Marker::Listed(listed) => listed.contains(&entry) || is_own_name(&entry),
            Marker::Damaged | Marker::Missing => is_own_name(&entry),
        };
        if !known {
            unknown.push(entry);
            continue;
        }
        let bytes = dir.allocated(&entry);
        match dir.remove_file(&entry) {
            Ok(()) => {
                found.freed += bytes;
                removed.push(entry);
            }
            Err(e) => failed.push(format!("{entry} ({e})")),
        }
    }
    if !unknown.is_empty() || !failed.is_empty() {
        found.note = Some(left_note(&path, &marker, &removed, &failed, &unknown));
        return found;
    }
    // Removed while still locked, so that a run making this directory right now (its marker empty, its lock
    // not yet taken) finds its marker gone once it has the lock, and starts over. FUSE (sshfs) hides a file
    // removed while open as `.fuse_hidden…` until it is closed: the directory's removal waits for that.
    let removal = match &marker {
        // There was none when the directory was read: a marker there now is a new run's, making the directory.
        Marker::Missing => base.remove_dir(name),
        _ => match dir.remove_file(MARKER) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => {
                drop(lock);
                remove_dir_after_fuse_releases(base, name)
            }
        },
    };
    if let Err(e) = removal {
        if matches!(marker, Marker::Missing) && removed.is_empty() {
            // A run is making it (or someone put something there since): not ours to speak of.
            return found;
        }
        let what = if removed.is_empty() { String::new() } else { format!("removed {}, but ", removed.join(", ")) };
        found.note = Some(format!("{path}: {what}cannot remove the directory ({e}); remove it by hand: rm -r {path}"));
        return found;
    }
    found.gone = true;
    found.note = gone_note(&path, &marker, &removed, found.freed);
    found
}

/// The directory's marker, locked (`None` in the second place when it has none): `None` when a live run holds
/// it, it was kept, or it cannot be read at all.
fn read_marker(dir: &OwnedDir) -> Option<(Marker, Option<std::fs::File>)> {
    match dir.open_file(Path::new(MARKER), OFlags::RDONLY) {
        Ok(file) => {
            rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).ok()?;
            let mut text = String::new();
            let read = (&file).take(1 << 20).read_to_string(&mut text);
            if read.is_ok() && text.starts_with("streamcap work directory") {
                if text.lines().any(|l| l == KEPT_LINE) {
                    return None;
                }
                Some((Marker::Listed(listed_files(&text)), Some(file)))
            } else {
                Some((Marker::Damaged, Some(file)))
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Some((Marker::Missing, None)),
        Err(_) => None,
    }
}

/// What to say of a directory that is gone, beyond the ordinary (a whole marker's files): what a damaged or
/// missing marker left, or that it was empty.
fn gone_note(path: &str, marker: &Marker, removed: &[String], freed: u64) -> Option<String> {
    match marker {
        Marker::Listed(_) => None,
        Marker::Damaged if removed.is_empty() => None,
        Marker::Damaged => Some(format!(
            "{path} had an empty or damaged marker (its run crashed before the marker reached the disk): removed {} \
             ({})",
            removed.join(", "),
            Bytes(freed)
        )),
        Marker::Missing if removed.is_empty() => {
            Some(format!("{path} was left empty (its run's clean-up failed): removed it"))
        }
        Marker::Missing => Some(format!(
            "{path} had lost its marker (a crash, or a clean-up that failed): removed {} ({})",
            removed.join(", "),
            Bytes(freed)
        )),
    }
}

/// Why a directory stays, what of it went, and what to remove by hand.
fn left_note(path: &str, marker: &Marker, removed: &[String], failed: &[String], unknown: &[String]) -> String {
    let mut parts = Vec::new();
    if !removed.is_empty() {
        parts.push(format!("removed {}", removed.join(", ")));
    }
    if !failed.is_empty() {
        parts.push(format!("could not remove {}", failed.join(", ")));
    }
    if !unknown.is_empty() {
        parts.push(format!("left {}, which streamcap did not make", unknown.join(", ")));
    }
    let whose = match marker {
        Marker::Listed(_) => "an earlier run's work directory",
        Marker::Damaged => "an earlier run's work directory (its marker is empty or damaged)",
        Marker::Missing => "a work directory without its marker",
    };
    format!("{path} is {whose}: {}; if nothing in it is yours, remove it by hand: rm -r {path}", parts.join("; "))
}

#[cfg(test)]
#[path = "stale_tests.rs"]
mod tests;
