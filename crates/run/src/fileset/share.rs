//! A tree that mpirun's ranks share, on disk (vdbench fsd `shared=yes`): each rank removes only its own files
//! (the clean format step, and the end of the run), then tries the directories deepest first, which the rank
//! that empties one last removes; the root and its marker go with the last rank to let go of the tree's lock
//! (`TreeLock::last_of_shared`). It never removes another rank's file.
//!
//! vdbench's format=clean on a shared fsd has every host delete what it finds, a failure being no error there
//! ("FILE_DELETE_SHARED", "DIR_DELETE_SHARED" in `FileAnchor.readDirsAndDelete`); here a rank leaves the other
//! ranks' files to them, which they remove in the same step.

use std::io;

use super::tree::{TreeError, TreeState};

/// Removes this rank's files of a shared tree (those that are not there are fine), then every directory that
/// is empty by then, deepest first. Returns the files removed.
pub fn remove_own_part(state: &TreeState) -> Result<u64, TreeError> {
    let Some(share) = state.share else { return Ok(0) };
    let root = state.root.to_string_lossy().into_owned();
    let mut path = String::with_capacity(root.len() + 64);
    let mut removed = 0;
    for own in 0..state.files.len() {
        path.clear();
        path.push_str(&root);
        path.push('/');
        state.shape.push_file(share.file(own), &mut path);
        match std::fs::remove_file(&path) {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(cause) => return Err(TreeError::Remove { path: path.into(), cause }),
        }
        state.files.set(own, false);
    }
    for dir in (0..state.shape.dirs()).rev() {
        let (level, index) = state.shape.dir_level(dir);
        path.clear();
        path.push_str(&root);
        path.push('/');
        state.shape.push_dir(level, index, &mut path);
        // Not empty yet (another rank's files are still in it), or already gone: that rank removes it.
        if std::fs::remove_dir(&path).is_ok() {
            state.dirs.set(dir, false);
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::atomic::AtomicBool;

    use super::super::tree::{TreeLock, create_root, exists, remove};
    use super::*;
    use crate::plan::TreeShare;
    use crate::workload::fileset::{BitSet, Placement, TreeShape};

    /// Rank `rank` of 2's state of a tree of 2 directories × 2 files under `root`, all its files made.
    fn state(root: &Path, rank: u32) -> TreeState {
        let shape = TreeShape::new(1, 2, 2, Placement::Bottom).expect("a shape");
        let share = TreeShare { rank, ranks: 2 };
        TreeState {
            root: root.to_path_buf(),
            shape,
            files: std::sync::Arc::new(BitSet::new(share.count(shape.files()), true)),
            dirs: std::sync::Arc::new(BitSet::new(shape.dirs(), true)),
            formatted: true,
            direct: false,
            resume: Default::default(),
            share: Some(share),
        }
    }

    /// The paths of the tree's files, relative to `root`, that exist.
    fn files_left(root: &Path, shape: TreeShape) -> Vec<String> {
        let mut left = Vec::new();
        for file in 0..shape.files() {
            let mut name = String::new();
            shape.push_file(file, &mut name);
            if root.join(&name).exists() {
                left.push(name);
            }
        }
        left
    }

    /// Two ranks on one tree: rank 0 removing its part leaves rank 1's files and their directories; rank 1's
    /// then leaves no file and no directory, and only the last to let go of the lock (held by both together,
    /// which keeps a run that wants it alone out) removes the root.
    #[test]
    fn each_rank_removes_its_own_files_and_the_last_one_the_tree() {
        let anchor = tempfile::tempdir().expect("temp dir");
        let root = anchor.path().join(".streamcap/fileset-t");
        let stop = AtomicBool::new(false);
        let take = |shared| TreeLock::take(anchor.path(), &root, shared, (false, &stop));
        let (lock0, lock1) = (take(true).expect("rank 0 holds it"), take(true).expect("rank 1 with it"));
        assert!(take(false).is_err(), "another run is kept out");
        create_root(anchor.path(), &root, true).expect("made");
        create_root(anchor.path(), &root, true).expect("made already: fine for a shared tree");
        let (rank0, rank1) = (state(&root, 0), state(&root, 1));
        for dir in 0..rank0.shape.dirs() {
            let (level, index) = rank0.shape.dir_level(dir);
            let mut name = String::new();
            rank0.shape.push_dir(level, index, &mut name);
            std::fs::create_dir(root.join(name)).expect("a directory");
        }
        for file in 0..rank0.shape.files() {
            let mut name = String::new();
            rank0.shape.push_file(file, &mut name);
            std::fs::write(root.join(name), b"x").expect("a file");
        }
        assert_eq!(remove_own_part(&rank0).expect("rank 0's part"), 2);
        let left = files_left(&root, rank0.shape);
        assert_eq!(left.len(), 2, "rank 1's files stay: {left:?}");
        assert!(left.iter().all(|f| f.ends_with("vdb_f0002.file")), "{left:?}");
        assert_eq!(remove_own_part(&rank1).expect("rank 1's part"), 2);
        assert!(files_left(&root, rank0.shape).is_empty());
        let names: Vec<_> = std::fs::read_dir(&root).expect("the root").flatten().map(|e| e.file_name()).collect();
        assert_eq!(names, [std::ffi::OsString::from(crate::run::fileset::tree::MARKER)], "no directory left");
        assert!(lock0.last_of_shared().is_none(), "rank 1 still holds it");
        assert!(exists(&root).expect("a tree"), "rank 0 does not remove the tree");
        let last = lock1.last_of_shared().expect("rank 1 is the last");
        remove(&root).expect("removed");
        last.release();
        assert!(!anchor.path().join(".streamcap").exists(), "nothing is left in the anchor");
    }
}
