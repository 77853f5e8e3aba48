//! A file-set tree on disk: its root `ANCHOR/.streamcap/fileset-<name>/` with a marker file, what exists in it
//! (shared bitsets the workers update), and removing it.
//!
//! streamcap only ever creates and deletes inside a root it made: a root without the marker is refused, and
//! `.streamcap` must be a real directory on the anchor's filesystem (the rules of `run::workdir`).

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::plan::TreePlan;
use crate::workload::fileset::{BitSet, TreeShape};

/// The marker file in every tree root.
pub const MARKER: &str = ".streamcap-fileset";

#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error("cannot create {path}: {cause}")]
    Create { path: PathBuf, cause: io::Error },
    #[error("cannot remove {path}: {cause}")]
    Remove { path: PathBuf, cause: io::Error },
    #[error(
        "{0} exists but was not made by streamcap (no {MARKER} marker): streamcap will not touch it; remove it or \
         rename the tree"
    )]
    Foreign(PathBuf),
    #[error("{0} does not exist: format = \"no\" needs a tree made earlier (in this run, or kept with --keep)")]
    Missing(PathBuf),
    #[error("{0}")]
    Base(String),
}

/// What the run knows about one tree: which files and directories exist. Shared by the workers of a phase and
/// kept between phases.
pub struct TreeState {
    pub root: PathBuf,
    pub shape: TreeShape,
    pub files: Arc<BitSet>,
    pub dirs: Arc<BitSet>,
    /// Formatted (or cleaned) in this run, for format = once.
    pub formatted: bool,
    /// Files are opened with O_DIRECT (the plan's choice, unless the filesystem refused it and the plan allowed
    /// falling back).
    pub direct: bool,
}

impl TreeState {
    /// A state that says nothing exists yet.
    pub fn empty(plan: &TreePlan) -> TreeState {
        TreeState {
            root: plan.root.clone(),
            shape: plan.shape,
            files: Arc::new(BitSet::new(plan.files, false)),
            dirs: Arc::new(BitSet::new(plan.dirs, false)),
            formatted: false,
            direct: plan.direct,
        }
    }
}

/// Whether a streamcap tree root exists at `root` (with its marker); an error if something else is there.
pub fn exists(root: &Path) -> Result<bool, TreeError> {
    match fs::symlink_metadata(root) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(cause) => Err(TreeError::Create { path: root.to_path_buf(), cause }),
        Ok(m) if m.is_dir() && root.join(MARKER).is_file() => Ok(true),
        Ok(_) => Err(TreeError::Foreign(root.to_path_buf())),
    }
}

/// Creates the root and its marker (keeping an existing streamcap root).
pub fn create_root(anchor: &Path, root: &Path) -> Result<(), TreeError> {
    let base = root.parent().expect("a tree root sits in ANCHOR/.streamcap");
    super::super::workdir::prepare_base(anchor, base).map_err(|e| TreeError::Base(e.to_string()))?;
    if exists(root)? {
        return Ok(());
    }
    let err = |path: &Path| {
        let path = path.to_path_buf();
        move |cause| TreeError::Create { path, cause }
    };
    fs::create_dir(root).map_err(err(root))?;
    let marker = root.join(MARKER);
    let mut file = OpenOptions::new().write(true).create_new(true).open(&marker).map_err(err(&marker))?;
    writeln!(file, "streamcap file-set tree\npid {}", std::process::id()).map_err(err(&marker))
}

/// Removes a streamcap tree root and everything in it (and `.streamcap` when that is left empty). A root that is
/// missing is fine; one without the marker is left alone.
pub fn remove(root: &Path) -> Result<(), TreeError> {
    if !exists(root)? {
        return Ok(());
    }
    fs::remove_dir_all(root).map_err(|cause| TreeError::Remove { path: root.to_path_buf(), cause })?;
    if let Some(base) = root.parent() {
        let _ = fs::remove_dir(base);
    }
    Ok(())
}

/// Marks a root as kept (`--keep`), for whoever finds it later.
pub fn mark_kept(root: &Path) {
    if let Ok(mut marker) = OpenOptions::new().append(true).open(root.join(MARKER)) {
        let _ = writeln!(marker, "kept");
    }
}
