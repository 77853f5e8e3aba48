//! The one rule for every file streamcap writes *about* a run — the result JSON, the interval CSV, HTML pages,
//! fio-style logs, plan and trial results, the history database with its journal and `pending/` directory: it
//! is a regular file or absent, never reached through a symbolic link, never a file the command is reading, never
//! in /dev, /proc, /sys or another kernel filesystem; it is written to a temporary file in the same directory and
//! renamed over the path only when what is there is a regular file it may replace. `-` means standard output.
//!
//! Every path is judged through a handle on its directory (`place.rs`): the last component is looked at with
//! `AT_SYMLINK_NOFOLLOW`, the temporary file is created there with `O_CREAT|O_EXCL|O_NOFOLLOW` and renamed with
//! `renameat` on the same handle, so nothing swapped in between the check and the write is ever written through:
//! a rename replaces a name, never what a symbolic link points to, and a device, pipe or directory found at the
//! last moment is refused. Commands call [`check`] before they do anything (a bad path is exit 2 with nothing
//! created); each write judges the path again. A temporary that a killed writer left (SIGKILL gives it no chance
//! to remove it) is removed by the next write of the same name, once its process is gone (`leftovers.rs`).
//!
//! Layer 0: imports nothing from streamcap. It must not open anything it is asked to write other than through
//! the directory handle, and must not follow a symbolic link in the last component of any path it writes.

#![deny(unsafe_code)]

mod leftovers;
mod place;
mod write;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

pub use place::{check_database, create_parent_dirs, database};
pub use write::{OutDir, Stream, create_stream, write};

/// The name that means standard output.
pub const STDOUT: &str = "-";

/// Whether `path` means standard output (`-`).
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == STDOUT
}

/// Why an output path is refused, or could not be written. Every message names the path and says what to do.
#[derive(Debug, thiserror::Error)]
pub enum OutFileError {
    #[error("{label} does not name a file: give a file name, e.g. result.json, or - for standard output")]
    NoName { label: String },
    #[error("{label} is {what}: {fix}")]
    Refused { label: String, what: String, fix: String },
    #[error("cannot write {label}: the directory {dir} does not exist; create it first")]
    NoDirectory { label: String, dir: PathBuf },
    #[error("cannot write {label}: {dir} is not a directory")]
    NotDirectory { label: String, dir: PathBuf },
    #[error("cannot write {label}: the directory {dir} is not writable ({cause})")]
    NotWritable { label: String, dir: PathBuf, cause: std::io::Error },
    #[error("cannot write {label}: the file is not writable ({cause})")]
    FileNotWritable { label: String, cause: std::io::Error },
    #[error("cannot write {label}: it is in {dir}, {kind}, where streamcap never writes; give a path elsewhere")]
    SystemDirectory { label: String, dir: PathBuf, kind: &'static str },
    #[error("{label} is an input of this command: it would be overwritten; write the result elsewhere")]
    Input { label: String },
    #[error("{label} and {other} name the same file: each output needs a file of its own (e.g. r.json and r.csv)")]
    Same { label: String, other: String },
    #[error("{label} and {other} both write to standard output (-): give one of them a file name")]
    StdoutTwice { label: String, other: String },
    #[error("cannot write {label}: {cause}")]
    Io { label: String, cause: std::io::Error },
}

/// One output as the user named it: the flag (for messages) and the path.
#[derive(Debug, Clone, Copy)]
pub struct Named<'a> {
    pub flag: &'a str,
    pub path: &'a Path,
}

/// Every file the command reads (job files, catalogues, results, targets), with its (device, inode) when it was
/// named: no write may replace one. A process runs one command, so the list is the process's.
static INPUTS: Mutex<Vec<(PathBuf, (u64, u64))>> = Mutex::new(Vec::new());
/// An output is `-`: what the command prints for people goes to standard error instead.
static STDOUT_CLAIMED: AtomicBool = AtomicBool::new(false);

/// Remembers `inputs` (those that exist), so that no later write replaces one of them, even by another name.
pub fn protect(inputs: &[&Path]) {
    let mut known = INPUTS.lock().unwrap_or_else(|e| e.into_inner());
    for input in inputs {
        if let Ok(stat) = rustix::fs::stat(*input) {
            known.push((input.to_path_buf(), (stat.st_dev, stat.st_ino)));
        }
    }
}

/// Whether the file (device, inode) is one the command reads: an input that is still that file (an input
/// removed since, whose inode number a new file may reuse, is not).
fn is_input(identity: (u64, u64)) -> bool {
    let known = INPUTS.lock().unwrap_or_else(|e| e.into_inner());
    known
        .iter()
        .any(|(path, id)| *id == identity && rustix::fs::stat(path).is_ok_and(|s| (s.st_dev, s.st_ino) == identity))
}

/// Whether an output writes to standard output, so that summaries and notes meant for people go to standard
/// error and standard output holds only the machine-readable output.
pub fn stdout_claimed() -> bool {
    STDOUT_CLAIMED.load(Ordering::Relaxed)
}

/// Checks every output before the command does anything, and remembers `inputs` for every later write: each
/// output must be `-` (at most one) or a path [`place`] accepts, no two may name the same file, none may be an
/// input. Creates nothing.
pub fn check(outputs: &[Named<'_>], inputs: &[&Path]) -> Result<(), OutFileError> {
    protect(inputs);
    let mut seen: Vec<(String, Option<place::Identity>)> = Vec::new();
    for output in outputs {
        let label = format!("{} {}", output.flag, output.path.display());
        if is_stdout(output.path) {
            if let Some((other, _)) = seen.iter().find(|(_, id)| id.is_none()) {
                return Err(OutFileError::StdoutTwice { label, other: other.clone() });
            }
            seen.push((label, None));
            continue;
        }
        let place = place::Place::judge(label.clone(), output.path)?;
        let identity = place.identity();
        if let Some((other, _)) = seen.iter().find(|(_, id)| id.as_ref().is_some_and(|id| id.same_as(&identity))) {
            return Err(OutFileError::Same { label, other: other.clone() });
        }
        seen.push((label, Some(identity)));
    }
    if seen.iter().any(|(_, id)| id.is_none()) {
        STDOUT_CLAIMED.store(true, Ordering::Relaxed);
    }
    Ok(())
}

/// Checks one output (see [`check`]).
pub fn check_one(flag: &str, path: &Path, inputs: &[&Path]) -> Result<(), OutFileError> {
    check(&[Named { flag, path }], inputs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_outputs_to_one_file_or_both_to_stdout_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("r.json");
        let again = dir.path().join(".").join("r.json");
        let err = check(&[Named { flag: "--json", path: &a }, Named { flag: "--csv", path: &again }], &[]);
        assert!(matches!(err, Err(OutFileError::Same { .. })), "{err:?}");
        std::fs::write(&a, "x").unwrap();
        let link = dir.path().join("hard.json");
        std::fs::hard_link(&a, &link).unwrap();
        let err = check(&[Named { flag: "--json", path: &a }, Named { flag: "--html", path: &link }], &[]);
        assert!(matches!(err, Err(OutFileError::Same { .. })), "a hard link is the same file: {err:?}");
        let dash = Path::new("-");
        let err = check(&[Named { flag: "--json", path: dash }, Named { flag: "--csv", path: dash }], &[]);
        assert!(err.unwrap_err().to_string().contains("both write to standard output"));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "checking creates nothing");
    }

    #[test]
    fn an_input_is_never_an_output_whatever_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let job = dir.path().join("c.toml");
        std::fs::write(&job, "[drive]\n").unwrap();
        let other_name = dir.path().join("alias.toml");
        std::fs::hard_link(&job, &other_name).unwrap();
        let err = check_one("--json", &other_name, &[&job]).unwrap_err();
        assert!(err.to_string().contains("is an input of this command"), "{err}");
        let err = write(&job, b"{}").unwrap_err();
        assert!(matches!(err, OutFileError::Input { .. }), "a later write refuses it too: {err}");
        assert_eq!(std::fs::read_to_string(&job).unwrap(), "[drive]\n");
    }
}
