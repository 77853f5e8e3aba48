//! Tests of the kept library on disk: kept, found, held, refused while held, removed; damaged or incomplete
//! libraries are not taken for kept ones, and the stale clean-up removes only what nobody holds and is not complete.

use super::*;
use crate::plan::{LibraryKeeping, LibraryUse};

/// A target with a run directory holding `count` titles of `bytes` each, as a run leaves them before its end.
fn written(count: u32, bytes: u64) -> (tempfile::TempDir, OwnedDir, Vec<String>) {
    let root = tempfile::tempdir().unwrap();
    let base = OwnedDir::open_base(root.path()).unwrap();
    let run = base.create_dir("run-test").unwrap();
    let names: Vec<String> = (0..count).map(crate::plan::title_name).collect();
    for name in &names {
        std::fs::write(run.path().join(name), vec![7u8; bytes as usize]).unwrap();
    }
    (root, run, names)
}

fn keeping_of(found: &KeptLibrary, keep: bool) -> LibraryKeeping {
    LibraryKeeping {
        dir: found.dir.clone(),
        titles: found.titles,
        title_bytes: found.title_bytes,
        how: LibraryUse::Reuse { written: found.written },
        keep,
    }
}

#[test]
fn a_kept_library_is_found_held_and_removed_and_never_replaced_while_another_run_reads_it() {
    let (root, run, names) = written(3, 8192);
    let dir = keep(root.path(), &run, &names, 8192).unwrap();
    assert_eq!(dir, root.path().join(".streamcap/library"));
    assert!(run.names().unwrap().is_empty(), "the titles moved out of the run's directory");
    let found = find(root.path()).expect("a complete library");
    assert_eq!((found.titles, found.title_bytes, found.in_use), (3, 8192, false));
    assert!(found.written.is_some());

    let held = hold(&keeping_of(&found, true)).unwrap();
    assert!(find(root.path()).unwrap().in_use, "a run reads it");
    assert!(!remove_kept(root.path()).unwrap(), "not removed under a reader");
    let (_, other_run, other) = written(2, 4096);
    let refused = keep(root.path(), &other_run, &other, 4096).unwrap_err();
    assert!(refused.to_string().contains("another run holds it"), "{refused}");
    assert_eq!(find(root.path()).unwrap().titles, 3, "the kept library is as it was");

    std::fs::remove_dir(run.path()).unwrap();
    assert!(held.remove().unwrap() > 0);
    assert!(!root.path().join(".streamcap").exists(), "nothing stays: {:?}", std::fs::read_dir(root.path()));
}

#[test]
fn a_library_that_is_incomplete_short_or_planned_otherwise_is_not_taken_for_a_kept_one() {
    let (root, run, names) = written(2, 8192);
    keep(root.path(), &run, &names, 8192).unwrap();
    let dir = root.path().join(".streamcap/library");
    let found = find(root.path()).unwrap();
    // Planned from another library (replaced since): refused when the run starts.
    let other = LibraryKeeping { titles: 5, ..keeping_of(&found, true) };
    assert!(hold(&other).err().unwrap().to_string().contains("replaced it since"));
    // A title cut short.
    std::fs::OpenOptions::new().write(true).open(dir.join("title-0001.bin")).unwrap().set_len(100).unwrap();
    assert!(find(root.path()).is_none());
    // A marker without `complete`.
    std::fs::write(dir.join("title-0001.bin"), vec![1u8; 8192]).unwrap();
    assert!(find(root.path()).is_some());
    let marker = std::fs::read_to_string(dir.join(LIBRARY_MARKER)).unwrap();
    std::fs::write(dir.join(LIBRARY_MARKER), marker.replace("complete\n", "")).unwrap();
    assert!(find(root.path()).is_none());
}

#[test]
fn the_stale_clean_up_removes_an_incomplete_library_nobody_holds_and_nothing_else() {
    let (root, run, names) = written(2, 8192);
    keep(root.path(), &run, &names, 8192).unwrap();
    let base = OwnedDir::open_base(root.path()).unwrap();
    assert_eq!(remove_incomplete(&base), None, "a complete library stays");
    let dir = root.path().join(".streamcap/library");
    let marker = std::fs::read_to_string(dir.join(LIBRARY_MARKER)).unwrap();
    std::fs::write(dir.join(LIBRARY_MARKER), marker.replace("complete\n", "")).unwrap();
    std::fs::write(dir.join("notes.txt"), b"the user's").unwrap();
    let held = File::open(dir.join(LIBRARY_MARKER)).unwrap();
    flock(&held, FlockOperation::LockShared).unwrap();
    assert_eq!(remove_incomplete(&base), None, "a run that is moving its titles in holds it");
    drop(held);
    let (removed, freed) = remove_incomplete(&base).unwrap();
    assert_eq!(removed, dir);
    assert!(freed >= 2 * 8192);
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["notes.txt"], "only titles and the marker are removed");
}
