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
