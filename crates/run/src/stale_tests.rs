//! Unit tests of the stale clean-up (`stale.rs`).

use std::fs;

use super::*;
use crate::plan::{FilePlan, TargetKind, TargetPlan};
use crate::run::WorkDir;

fn target(root: &Path) -> TargetPlan {
    target_named(root, "run-test")
}

fn target_named(root: &Path, name: &str) -> TargetPlan {
    let dir = root.join(".streamcap").join(name);
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
fn kept_directories_and_foreign_files_survive_and_the_note_says_what_to_remove() {
    // Regression: --keep data was deleted by the next run as "an earlier, killed run".
    let root = tempfile::tempdir().unwrap();
    let base = root.path().join(".streamcap");
    let kept = abandoned(&base, &format!("run-{}-999999991-1", host_label()), true);
    let unmarked = base.join(format!("run-{}-999999992-1", host_label()));
    fs::create_dir_all(&unmarked).unwrap();
    fs::write(unmarked.join("photo.jpg"), b"mine").unwrap();
    let with_user_file = abandoned(&base, &format!("run-{}-999999993-1", host_label()), false);
    fs::write(with_user_file.join("notes.txt"), b"mine").unwrap();
    let stale = remove_stale(root.path());
    assert!(stale.removed.is_empty(), "{stale:?}");
    assert!(kept.join("data.0").exists() && unmarked.join("photo.jpg").exists());
    assert!(with_user_file.join("notes.txt").exists(), "a file streamcap does not know is never deleted");
    assert!(!with_user_file.join("data.0").exists(), "its own file went");
    let note = stale.notes.iter().find(|n| n.contains("999999993")).expect("a note about the directory that stays");
    assert!(note.contains("removed data.0") && note.contains("left notes.txt") && note.contains("rm -r"), "{note}");
    let note = stale.notes.iter().find(|n| n.contains("999999992")).expect("a note about the unmarked directory");
    assert!(note.contains("without its marker") && note.contains("left photo.jpg"), "{note}");
    assert_eq!(stale.notes.len(), 2, "nothing about the kept one: {:?}", stale.notes);
}

#[test]
fn data_files_beside_an_empty_or_missing_marker_are_named_and_removed() {
    // Regression (audit item 7): a crash 3 s into a run left a 0-byte marker (never flushed) and a 64 MiB
    // data file; later runs neither removed nor mentioned it, and failed "not enough free space".
    let root = tempfile::tempdir().unwrap();
    let base = root.path().join(".streamcap");
    let empty = base.join(format!("run-{}-999999981-1", host_label()));
    fs::create_dir_all(&empty).unwrap();
    fs::write(empty.join(MARKER), b"").unwrap();
    fs::write(empty.join("data.0"), vec![1u8; 65536]).unwrap();
    let zeros = base.join(format!("run-{}-999999982-1", host_label()));
    fs::create_dir_all(&zeros).unwrap();
    fs::write(zeros.join(MARKER), vec![0u8; 4096]).unwrap();
    fs::write(zeros.join("media-0.bin"), b"x").unwrap();
    let missing = base.join(format!("run-{}-999999983-1", host_label()));
    fs::create_dir_all(&missing).unwrap();
    fs::write(missing.join("data.3"), b"x").unwrap();
    let stale = remove_stale(root.path());
    assert_eq!(stale.removed.len(), 3, "{stale:?}");
    assert!(stale.freed >= 65536, "{stale:?}");
    assert!(!base.exists(), "nothing left: {:?}", fs::read_dir(&base).map(|d| d.count()));
    let note = |id: &str| stale.notes.iter().find(|n| n.contains(id)).cloned().unwrap_or_default();
    assert!(note("999999981").contains("empty or damaged marker") && note("999999981").contains("data.0"), "{stale:?}");
    assert!(note("999999982").contains("media-0.bin"), "{stale:?}");
    assert!(note("999999983").contains("lost its marker") && note("999999983").contains("data.3"), "{stale:?}");
}

#[test]
fn an_empty_run_directory_left_by_a_failed_clean_up_is_removed_and_said() {
    // Regression (audit item 8): after a clean-up failed, the next run removed the files without its note and
    // left the empty run directory for good.
    let root = tempfile::tempdir().unwrap();
    let base = root.path().join(".streamcap");
    let empty = base.join(format!("run-{}-999999971-1", host_label()));
    fs::create_dir_all(&empty).unwrap();
    let stale = remove_stale(root.path());
    assert_eq!(stale.removed, vec![empty.clone()]);
    assert!(stale.notes.iter().any(|n| n.contains("was left empty") && n.contains("999999971")), "{stale:?}");
    assert!(!root.path().join(".streamcap").exists());
}

#[test]
fn a_run_whose_directory_is_taken_for_a_crashed_one_while_it_is_made_makes_it_again() {
    // The moment between making the directory and locking the marker: another run's clean-up sees an empty
    // directory (or an empty, unlocked marker) and removes it. The new run notices and starts over.
    let root = tempfile::tempdir().unwrap();
    let plan = target_named(root.path(), &format!("run-{}-999999960-1", host_label()));
    for _ in 0..20 {
        let cleaner = {
            let root = root.path().to_path_buf();
            std::thread::spawn(move || {
                for _ in 0..50 {
                    let _ = remove_stale(&root);
                }
            })
        };
        let mut work = WorkDir::create(&plan, false).expect("made, however often it was removed");
        assert!(work.path().join("data.1").exists() && work.path().join(MARKER).exists());
        cleaner.join().unwrap();
        assert!(work.path().join("data.1").exists(), "a live run's files are never removed");
        work.remove().unwrap();
    }
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
