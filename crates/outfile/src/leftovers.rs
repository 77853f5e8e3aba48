//! Temporary files a killed write left behind. Every output is written to `.NAME.tmp-PID-N` beside it and renamed
//! into place (`write.rs`); a process killed with SIGKILL between the two (mpirun's second after SIGTERM, the OOM
//! killer) cannot remove its temporary, which then stays beside the result for good. The next write of the same
//! name removes those of processes that are gone; a live process's are its own business and are left alone.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

use rustix::fs::{AtFlags, FileType};

use super::place::Place;

/// The start of every temporary's name for `place`: `.NAME.tmp-` (a long name cut at 200 bytes, NAME_MAX being
/// 255).
pub(crate) fn temp_prefix(place: &Place) -> OsString {
    let name = place.name.as_bytes();
    let mut prefix = OsString::from(".");
    prefix.push(std::ffi::OsStr::from_bytes(&name[..name.len().min(200)]));
    prefix.push(".tmp-");
    prefix
}

/// Removes the regular files named `.NAME.tmp-PID-N` beside `place` whose process is gone. Best effort: a
/// directory that cannot be listed, or a file that cannot be removed, is left as it is.
pub(crate) fn remove(place: &Place) {
    let prefix = temp_prefix(place);
    let Ok(dir) = rustix::fs::Dir::read_from(&place.dir) else { return };
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_bytes().strip_prefix(prefix.as_bytes()).and_then(writer_pid) else { continue };
        let regular = rustix::fs::statat(&place.dir, name, AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::RegularFile);
        if regular && pid != std::process::id() && gone(pid) {
            let _ = rustix::fs::unlinkat(&place.dir, name, AtFlags::empty());
        }
    }
}

/// The writer's pid in a temporary's `PID-N` tail, if that is what it is.
fn writer_pid(tail: &[u8]) -> Option<u32> {
    let tail = std::str::from_utf8(tail).ok()?;
    let (pid, number) = tail.split_once('-')?;
    number.parse::<u32>().ok()?;
    pid.parse().ok()
}

/// Whether no process has `pid` (a pid taken again since is a live process: its name is kept).
fn gone(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) else { return false };
    rustix::process::test_kill_process(pid) == Err(rustix::io::Errno::SRCH)
}

#[cfg(test)]
mod tests {
    use super::super::write;

    /// The pid of a child that has ended and been reaped.
    fn ended_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        child.wait().unwrap();
        child.id()
    }

    #[test]
    fn a_write_removes_its_names_temporaries_of_ended_processes_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut live = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let (ended, alive) = (ended_pid(), live.id());
        let killed = dir.path().join(format!(".r.json.tmp-{ended}-3"));
        let running = dir.path().join(format!(".r.json.tmp-{alive}-0"));
        let other_name = dir.path().join(format!(".s.json.tmp-{ended}-0"));
        let not_ours = dir.path().join(format!(".r.json.tmp-{ended}-x"));
        for path in [&killed, &running, &other_name, &not_ours] {
            std::fs::write(path, "partial").unwrap();
        }
        write(&dir.path().join("r.json"), b"{}").unwrap();
        let _ = live.kill();
        let _ = live.wait();
        assert!(!killed.exists(), "a killed writer's temporary is removed");
        for kept in [&running, &other_name, &not_ours] {
            assert!(kept.exists(), "{} is kept", kept.display());
        }
        assert_eq!(std::fs::read(dir.path().join("r.json")).unwrap(), b"{}");
    }
}
