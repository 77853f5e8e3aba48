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
        library: None,
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

#[test]
fn a_file_named_streamcap_is_refused() {
    let root = tempfile::tempdir().unwrap();
    fs::write(root.path().join(".streamcap"), b"not a directory").unwrap();
    let err = WorkDir::create(&target(root.path()), false).err().expect("refused");
    assert!(err.to_string().contains("not a directory"), "{err}");
}
