//! Removing what streamcap made on a FUSE filesystem served by libfuse's high-level API (sshfs), where a file
//! unlinked while the daemon still counts it open is renamed to `.fuse_hidden…` instead of removed, and the
//! kernel sends the RELEASE of a closed file asynchronously, after close() has returned. So a directory whose
//! last file was just closed and unlinked can hold a hidden file for a moment, and rmdir fails with ENOTEMPTY;
//! libfuse unlinks the hidden file itself once the release arrives. While every file left beneath a directory is
//! such a hidden file, its removal is tried again for a bounded time. The hidden files are never deleted here:
//! their names do not say which file they were (streamcap never unlinks a file it cannot prove it created), and
//! libfuse removes them anyway. Everywhere else the first ENOTEMPTY is final, as with `std::fs`.

use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

/// The prefix libfuse's high-level API gives a removed file that is still open.
pub(crate) const FUSE_HIDDEN: &str = ".fuse_hidden";
/// How long a removal waits for FUSE to let go of hidden removed files: its releases come after close(), and a
/// busy machine delays them, as does a slow link: sshfs sends the close behind every request already queued on
/// its one channel (a check's last viewers can leave megabytes of reads queued on a 25 MB/s link), and 5 s was
/// once too short in CI (the file-set lock's release came later, and `.streamcap` stayed). Only waited while
/// nothing but hidden files is left.
pub(crate) const FUSE_RELEASE_WAIT: Duration = Duration::from_secs(30);
/// Pause between tries while hidden files are left.
const RETRY_PAUSE: Duration = Duration::from_millis(20);

/// `std::fs::remove_dir`, waiting out FUSE's hidden files (see the module header).
pub(crate) fn remove_dir(path: &Path) -> io::Result<()> {
    retry_while_hidden(path, || std::fs::remove_dir(path))
}

/// `std::fs::remove_dir_all`, waiting out FUSE's hidden files (see the module header).
pub(crate) fn remove_dir_all(path: &Path) -> io::Result<()> {
    retry_while_hidden(path, || std::fs::remove_dir_all(path))
}

/// Runs `remove` until it succeeds, fails otherwise than "not empty", finds something beneath `path` that is
/// not a FUSE hidden file, or `FUSE_RELEASE_WAIT` has passed.
pub(crate) fn retry_while_hidden(path: &Path, mut remove: impl FnMut() -> io::Result<()>) -> io::Result<()> {
    let deadline = Instant::now() + FUSE_RELEASE_WAIT;
    loop {
        match remove() {
            Err(e)
                if e.raw_os_error() == Some(libc::ENOTEMPTY)
                    && Instant::now() < deadline
                    && only_fuse_hidden_beneath(path) =>
            {
                std::thread::sleep(RETRY_PAUSE);
            }
            other => return other,
        }
    }
}

/// At least one file beneath `dir` (at any depth, not following symlinks), and every file there a FUSE hidden
/// file: directories alone do not count either way.
pub(crate) fn only_fuse_hidden_beneath(dir: &Path) -> bool {
    let mut pending = vec![dir.to_path_buf()];
    let mut hidden = 0;
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { return false };
        for entry in entries {
            let Ok(entry) = entry else { return false };
            let Ok(kind) = entry.file_type() else { return false };
            if kind.is_dir() {
                pending.push(entry.path());
            } else if entry.file_name().to_string_lossy().starts_with(FUSE_HIDDEN) {
                hidden += 1;
            } else {
                return false;
            }
        }
    }
    hidden > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hidden_files_at_any_depth_count_as_waiting_for_fuse() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!only_fuse_hidden_beneath(dir.path()), "an empty directory waits for nothing");
        std::fs::create_dir(dir.path().join("d1")).unwrap();
        std::fs::write(dir.path().join("d1/.fuse_hidden0000000a00000001"), b"").unwrap();
        assert!(only_fuse_hidden_beneath(dir.path()));
        std::fs::write(dir.path().join("d1/f1"), b"").unwrap();
        assert!(!only_fuse_hidden_beneath(dir.path()), "a file of anyone's is not waited for");
    }

    #[test]
    fn a_directory_with_a_real_file_fails_at_once_and_a_hidden_file_is_waited_for_then_given_up() {
        let dir = tempfile::tempdir().unwrap();
        let busy = dir.path().join("busy");
        std::fs::create_dir(&busy).unwrap();
        std::fs::write(busy.join("data.0"), b"x").unwrap();
        let started = Instant::now();
        let err = remove_dir(&busy).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOTEMPTY));
        assert!(started.elapsed() < FUSE_RELEASE_WAIT, "no wait for a file that is not FUSE's");
        // A hidden file that goes away (as libfuse removes it on release) lets the removal succeed.
        std::fs::remove_file(busy.join("data.0")).unwrap();
        let hidden = busy.join(".fuse_hidden0000000b00000002");
        std::fs::write(&hidden, b"").unwrap();
        let remover = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            std::fs::remove_file(hidden).unwrap();
        });
        remove_dir(&busy).expect("removed once the hidden file went");
        remover.join().unwrap();
        assert!(!busy.exists());
    }
}
