//! Unit tests of the work directory (`workdir.rs`), in a file of their own so that it stays under 500 lines.

use super::*;
use crate::plan::{FilePlan, TargetKind};
use crate::units::Bytes;

fn target(root: &Path) -> TargetPlan {
    let dir = root.join(".streamcap").join("run-test");
    TargetPlan {
        kind: TargetKind::Directory,
        path: root.to_path_buf(),
        work_dir: Some(dir.clone()),
        files: (0..2)
            .map(|i| FilePlan { path: dir.join(format!("data.{i}")), size: Bytes::mib(1), created: true })
            .collect(),
        writes_allowed: true,
        memory_backed: None,
    }
}

#[test]
fn creates_sized_files_and_removes_everything() {
    let root = tempfile::tempdir().unwrap();
    let mut work = WorkDir::create(&target(root.path()), false).unwrap();
    assert_eq!(fs::metadata(work.path().join("data.1")).unwrap().len(), 1 << 20);
    work.remove().unwrap();
    assert_eq!(fs::read_dir(root.path()).unwrap().count(), 0, "nothing left behind");
}

#[test]
fn removal_waits_for_fuse_to_release_its_hidden_files_and_never_deletes_them() {
    // Regression: over sshfs the run ended with "Directory not empty": libfuse had renamed a just-closed,
    // unlinked file to `.fuse_hidden…`, since the kernel's RELEASE of it came after close(). A thread stands
    // in for libfuse here and unlinks its hidden file a moment later.
    let root = tempfile::tempdir().unwrap();
    let mut work = WorkDir::create(&target(root.path()), false).unwrap();
    let hidden = work.path().join(".fuse_hidden0000000300000001");
    fs::write(&hidden, b"x").unwrap();
    let libfuse = std::thread::spawn({
        let hidden = hidden.clone();
        move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            fs::remove_file(&hidden)
        }
    });
    work.remove().unwrap();
    libfuse.join().unwrap().expect("the hidden file was still there for libfuse to remove: not deleted by us");
    assert_eq!(fs::read_dir(root.path()).unwrap().count(), 0, "nothing left behind");
}

#[test]
fn a_file_streamcap_did_not_create_keeps_the_directory_at_once() {
    let root = tempfile::tempdir().unwrap();
    let mut work = WorkDir::create(&target(root.path()), false).unwrap();
    fs::write(work.path().join("notes.txt"), b"mine").unwrap();
    let err = work.remove().unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::DirectoryNotEmpty, "{err}");
    assert!(err.to_string().ends_with("; left in it: notes.txt"), "the error names what stayed: {err}");
    assert_eq!(fs::read(work.path().join("notes.txt")).unwrap(), b"mine");
}

#[test]
fn run_ids_name_the_host_and_the_process() {
    let id = run_id();
    let (host, pid) = parse_run_id(&id).unwrap();
    assert_eq!((host, pid), (host_label().as_str(), std::process::id()));
}

#[test]
fn never_reuses_an_existing_directory() {
    let root = tempfile::tempdir().unwrap();
    let _first = WorkDir::create(&target(root.path()), true).unwrap();
    assert!(WorkDir::create(&target(root.path()), false).is_err());
}

/// A work directory as a killed run leaves it.
fn abandoned(base: &Path, name: &str, kept: bool) -> PathBuf {
    let dir = base.join(name);
    fs::create_dir_all(&dir).unwrap();
    let marker = if kept { "streamcap work directory\nhost h\npid 1\nkept\n" } else { "streamcap work directory\n" };
    fs::write(dir.join(MARKER), marker).unwrap();
    fs::write(dir.join("data.0"), b"x").unwrap();
    dir
}

#[test]
fn stale_directories_of_dead_processes_are_removed() {
    let root = tempfile::tempdir().unwrap();
    let base = root.path().join(".streamcap");
    let stale = abandoned(&base, &format!("run-{}-999999999-1", host_label()), false);
    fs::write(stale.join(crate::verify::MANIFEST_FILE), b"{}").unwrap();
    fs::write(stale.join(crate::verify::MAP_FILE), b"\x01").unwrap();
    // Broke: a check killed while it created its library left title files the marker did not list yet, which
    // the next run took for the user's and kept, with the whole directory.
    fs::write(stale.join("title-0007.bin"), b"t").unwrap();
    let other_host = abandoned(&base, "run-elsewhere.example-999999999-1", false);
    let removed = remove_stale(root.path());
    assert_eq!(removed.removed, vec![stale.clone()]);
    assert!(removed.freed > 0, "the bytes of data.0 were counted");
    assert!(!stale.exists() && other_host.exists(), "only this host's dead runs go");
}

#[test]
fn a_live_run_is_never_taken_for_a_dead_one() {
    // Regression: liveness was judged by process id and name, so a renamed binary (or a run in another pid
    // namespace) looked dead and its directory was deleted under it. The marker's lock decides now.
    let root = tempfile::tempdir().unwrap();
    let live = WorkDir::create(&target(root.path()), false).unwrap();
    let renamed = root.path().join(".streamcap").join(format!("run-{}-999999998-1", host_label()));
    fs::rename(live.path(), &renamed).unwrap();
    assert!(remove_stale(root.path()).removed.is_empty());
    assert!(renamed.join("data.0").exists());
}

#[test]
fn kept_and_unmarked_directories_and_foreign_files_survive() {
    // Regression: --keep data was deleted by the next run as "an earlier, killed run".
    let root = tempfile::tempdir().unwrap();
    let base = root.path().join(".streamcap");
    let kept = abandoned(&base, &format!("run-{}-999999991-1", host_label()), true);
    let unmarked = base.join(format!("run-{}-999999992-1", host_label()));
    fs::create_dir_all(&unmarked).unwrap();
    let with_user_file = abandoned(&base, &format!("run-{}-999999993-1", host_label()), false);
    fs::write(with_user_file.join("notes.txt"), b"mine").unwrap();
    assert!(remove_stale(root.path()).removed.is_empty());
    assert!(kept.join("data.0").exists() && unmarked.exists());
    assert!(with_user_file.join("notes.txt").exists(), "a file streamcap does not know is never deleted");
}

#[test]
fn keep_marks_the_directory_so_no_later_run_removes_it() {
    let root = tempfile::tempdir().unwrap();
    let mut work = WorkDir::create(&target(root.path()), true).unwrap();
    work.remove().unwrap();
    let marker = fs::read_to_string(work.path().join(MARKER)).unwrap();
    assert!(marker.lines().any(|l| l == KEPT_LINE));
    let path = work.path().to_path_buf();
    drop(work);
    assert!(remove_stale(root.path()).removed.is_empty());
    assert!(path.join("data.0").exists());
}

#[test]
fn a_symlinked_streamcap_directory_is_neither_used_nor_cleaned() {
    // Regression: `.streamcap -> /elsewhere` put the data files (and stale-directory deletions) outside the
    // target, on another device, while every figure described the target's device.
    let root = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let victim = abandoned(elsewhere.path(), &format!("run-{}-999999999-1", host_label()), false);
    std::os::unix::fs::symlink(elsewhere.path(), root.path().join(".streamcap")).unwrap();
    let err = WorkDir::create(&target(root.path()), false).err().expect("refused");
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert!(remove_stale(root.path()).removed.is_empty());
    assert!(victim.join("data.0").exists());
}

#[test]
fn a_file_named_streamcap_is_refused() {
    let root = tempfile::tempdir().unwrap();
    fs::write(root.path().join(".streamcap"), b"not a directory").unwrap();
    let err = WorkDir::create(&target(root.path()), false).err().expect("refused");
    assert!(err.to_string().contains("not a directory"), "{err}");
}
