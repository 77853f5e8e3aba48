//! A file-set tree on disk: its root `ANCHOR/.streamcap/fileset-<name>/` with a marker file, what exists in it
//! (shared bitsets the workers update), and removing it.
//!
//! streamcap only ever creates and deletes inside a root it made: a root without the marker is refused, and
//! `.streamcap` must be a real directory on the anchor's filesystem (the rules of `run::workdir`).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use rustix::fs::OFlags;

use super::super::fuse_release;
use super::super::owned::{OwnedDir, Registration, register};
use super::super::workdir::host_label;

use crate::plan::{TreePlan, TreeShare};
use crate::workload::fileset::{BitSet, TreeShape};

/// The marker file in every tree root.
pub const MARKER: &str = ".streamcap-fileset";

#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error("cannot create {path}: {cause}{}", super::super::owned::full_hint(cause))]
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
    #[error(
        "{root} is in use by another streamcap run ({holder}): two runs on one tree would reformat it under each \
         other; wait for that run to finish, or pass --wait to wait for it"
    )]
    Busy { root: PathBuf, holder: String },
    #[error("interrupted while waiting for {0}")]
    Interrupted(PathBuf),
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
    /// Where sequential I/O under `stopafter` left off in each file, so that the next thread to take the file
    /// goes on from there (vdbench's `FileEntry.last_lba`). Made by the first workload that needs it: 8 bytes a
    /// file, which other runs need not pay.
    pub resume: OnceLock<Box<[AtomicU64]>>,
    /// This rank's files of a tree mpirun's ranks share (`files` and `resume` count only them).
    pub share: Option<TreeShare>,
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
            resume: OnceLock::new(),
            share: plan.share,
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

/// Creates the root and its marker (keeping an existing streamcap root), through the handle of
/// `ANCHOR/.streamcap` (which must be this user's, see `run::owned`). `shared`: another rank may be creating
/// it at the same moment (its root without the marker yet, or `.streamcap` just made), so a failure is tried
/// again for up to 5 s, as vdbench waits for a shared directory another host made (`Directory.createDir`).
pub fn create_root(anchor: &Path, root: &Path, shared: bool) -> Result<(), TreeError> {
    let mut tries = if shared { 500 } else { 1 };
    loop {
        tries -= 1;
        match create_root_once(anchor, root) {
            Err(_) if tries > 0 => std::thread::sleep(std::time::Duration::from_millis(10)),
            done => return done,
        }
    }
}

fn create_root_once(anchor: &Path, root: &Path) -> Result<(), TreeError> {
    let base = OwnedDir::open_base(anchor).map_err(|e| TreeError::Base(e.to_string()))?;
    if exists(root)? {
        // Used only when it is this user's and not writable by others.
        base.open_dir(&root_name(root)).map_err(|e| TreeError::Base(e.to_string()))?;
        return Ok(());
    }
    let err = |path: &Path| {
        let path = path.to_path_buf();
        move |cause| TreeError::Create { path, cause }
    };
    let name = root_name(root);
    let dir = base.create_dir(&name).map_err(|e| {
        let _ = fs::remove_dir(base.path());
        TreeError::Base(e.to_string())
    })?;
    let marker = root.join(MARKER);
    // The marker reaches the disk (file, root, `.streamcap`) before any file of the tree is made; on a failure
    // (a full filesystem) nothing this made is left.
    let made = dir.open_file(Path::new(MARKER), OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL).and_then(|file| {
        writeln!(&file, "streamcap file-set tree\nhost {}\npid {}", host_label(), std::process::id())?;
        file.sync_all()?;
        dir.sync()?;
        base.sync()
    });
    made.map_err(|cause| {
        let _ = dir.remove_file(MARKER);
        let _ = base.remove_dir(&name);
        let _ = fs::remove_dir(base.path());
        err(&marker)(cause)
    })
}

fn root_name(root: &Path) -> String {
    root.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default()
}

/// An exclusive lock on one tree for the life of a run: `ANCHOR/.streamcap/fileset-<name>.lock`, which says who
/// holds it. A second run on the same tree is refused (or waits), instead of reformatting it under the first.
pub struct TreeLock {
    file: File,
    /// Held together with the other ranks of the run (a tree they share), not alone.
    shared: bool,
    /// `ANCHOR/.streamcap`, registered for the run: every file of the tree is opened beneath this handle.
    base: Registration,
    name: String,
}

impl TreeLock {
    /// Takes the lock of `root`'s tree; when another run holds it, refuses naming that run, or with `wait`
    /// waits until it is free (checking `stop` every 100 ms). `shared`: a tree mpirun's ranks share, whose lock
    /// every rank of the run holds at once (any other run, which takes it alone, is kept out all the same).
    pub fn take(
        anchor: &Path,
        root: &Path,
        shared: bool,
        (wait, stop): (bool, &AtomicBool),
    ) -> Result<TreeLock, TreeError> {
        let name = format!("{}.lock", root_name(root));
        let path = anchor.join(".streamcap").join(&name);
        let err = |cause: io::Error| TreeError::Create { path: path.clone(), cause };
        loop {
            // Opened again on every try: the run we waited for removes `.streamcap` when it leaves it empty.
            let base = register(OwnedDir::open_base(anchor).map_err(|e| TreeError::Base(e.to_string()))?, None);
            // On a failure (a full filesystem) `.streamcap` goes again when this left it empty.
            let remove_base = |e| {
                let _ = fs::remove_dir(base.dir().path());
                e
            };
            let file = base
                .dir()
                .open_file(Path::new(&name), OFlags::RDWR | OFlags::CREATE)
                .map_err(err)
                .map_err(remove_base)?;
            let how = if shared {
                rustix::fs::FlockOperation::NonBlockingLockShared
            } else {
                rustix::fs::FlockOperation::NonBlockingLockExclusive
            };
            match rustix::fs::flock(&file, how) {
                Ok(()) => {}
                Err(rustix::io::Errno::WOULDBLOCK) if wait => {
                    if stop.load(Ordering::Relaxed) {
                        return Err(TreeError::Interrupted(root.to_path_buf()));
                    }
                    std::thread::sleep(std::time::Duration::from_millis(100));
                    continue;
                }
                Err(rustix::io::Errno::WOULDBLOCK) => {
                    let holder = fs::read_to_string(&path).unwrap_or_default();
                    return Err(TreeError::Busy { root: root.to_path_buf(), holder: holder_of(&holder) });
                }
                Err(e) => return Err(err(e.into())),
            }
            // The holder before us may have removed the lock file as it finished: a lock on a file that is no
            // longer at the path locks nothing, so take the one that is there now.
            let mine = rustix::fs::fstat(&file).map_err(|e| err(e.into()))?;
            if base.dir().identity_of(&name) == Some((mine.st_dev, mine.st_ino)) {
                if let Err(cause) = write_holder(&file, shared) {
                    // Still locked: removed as its holder would, and `.streamcap` with it when that is left empty.
                    if !shared {
                        let _ = base.dir().remove_file(&name);
                    }
                    return Err(remove_base(err(cause)));
                }
                return Ok(TreeLock { file, shared, base, name });
            }
        }
    }

    /// Lets go of a lock held with other ranks and says whether this rank was the last to hold it: then it
    /// holds it alone (the others have let go, after removing their files) and must remove what is left of the
    /// tree, then `release`. flock converts a shared lock by dropping it and then trying anew, under the
    /// inode's lock: of two ranks converting at once, the second finds the first's hold gone, so one always
    /// succeeds once every other rank has let go. A lock held alone is the last already.
    pub fn last_of_shared(self) -> Option<TreeLock> {
        if !self.shared {
            return Some(self);
        }
        rustix::fs::flock(&self.file, rustix::fs::FlockOperation::NonBlockingLockExclusive).ok().map(|()| self)
    }

    /// Removes the lock file while still holding the lock (the last thing a run does with its tree), and
    /// `.streamcap` when that leaves it empty.
    pub fn release(self) {
        let _ = self.base.dir().remove_file(&self.name);
        drop(self.file);
        // Only succeeds when empty, which is exactly when it should go. On sshfs the lock file, removed while
        // open, is `.fuse_hidden…` until FUSE's release of it arrives, after the close: waited out.
        let _ = fuse_release::remove_dir(self.base.dir().path());
    }
}

/// Says in the lock file who holds it. The ranks sharing it each write their line over the first: a run kept
/// out names one of them.
fn write_holder(file: &File, shared: bool) -> io::Result<()> {
    let holder = format!("host {}\npid {}\n", host_label(), std::process::id());
    if !shared {
        file.set_len(0)?;
    }
    std::os::unix::fs::FileExt::write_all_at(file, holder.as_bytes(), 0)
}

/// "pid 4242 on host nas1" from a lock file's text.
fn holder_of(text: &str) -> String {
    let field = |key: &str| text.lines().find_map(|l| l.strip_prefix(key)).map(str::trim).unwrap_or("?");
    format!("pid {} on host {}", field("pid "), field("host "))
}

/// Removes a streamcap tree root and everything in it (and `.streamcap` when that is left empty). A root that is
/// missing is fine; one without the marker is left alone.
pub fn remove(root: &Path) -> Result<(), TreeError> {
    if !exists(root)? {
        return Ok(());
    }
    fuse_release::remove_dir_all(root).map_err(|cause| TreeError::Remove { path: root.to_path_buf(), cause })?;
    if let Some(base) = root.parent() {
        let _ = fuse_release::remove_dir(base);
    }
    Ok(())
}

/// Marks a root as kept (`--keep`), for whoever finds it later.
pub fn mark_kept(root: &Path) {
    if let Ok(mut marker) = OpenOptions::new().append(true).open(root.join(MARKER)) {
        let _ = writeln!(marker, "kept");
    }
}

/// Removes `ANCHOR/.streamcap/<name>` when it is a tree a killed run of this host left: its marker names this
/// host and is not kept, and nobody holds its lock. Returns the bytes freed (`None`: in use, kept, another
/// host's); a tree whose marker is empty or damaged (a crash before it reached the disk) is not removed, since
/// it may be another host's, and the error says what to remove by hand.
pub fn remove_abandoned_tree(base: &OwnedDir, name: &str) -> Result<Option<u64>, String> {
    let Ok(dir) = base.open_dir(name) else { return Ok(None) };
    let Ok(marker) = dir.open_file(Path::new(MARKER), OFlags::RDONLY) else { return Ok(None) };
    let mut text = String::new();
    let read = io::Read::read_to_string(&mut io::Read::take(&marker, 1 << 20), &mut text);
    let this_host = format!("host {}", host_label());
    let damaged = read.is_err() || !text.starts_with("streamcap file-set tree");
    if !damaged && (!text.lines().any(|l| l == this_host) || text.contains("\nkept")) {
        return Ok(None);
    }
    let lock_name = format!("{name}.lock");
    let Ok(lock) = base.open_file(Path::new(&lock_name), OFlags::RDWR | OFlags::CREATE) else { return Ok(None) };
    if rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
        return Ok(None);
    }
    if damaged {
        let _ = base.remove_file(&lock_name);
        return Err(format!(
            "{} is a file-set tree whose marker is empty or damaged (a crash before it reached the disk); if no \
             run on another host uses it, remove it by hand: rm -r {}",
            dir.path().display(),
            dir.path().display()
        ));
    }
    let freed = allocated_beneath(dir.path());
    // remove_dir_all never follows a symlink inside the tree; on sshfs its hidden files are waited out, as a
    // run's own removal does.
    if fuse_release::remove_dir_all(dir.path()).is_err() {
        return Ok(None);
    }
    let _ = base.remove_file(&lock_name);
    Ok(Some(freed))
}

/// Bytes allocated to the files beneath `root` (not following symlinks).
fn allocated_beneath(root: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).into_iter().flatten().flatten() {
            match entry.metadata() {
                Ok(m) if m.is_dir() => pending.push(entry.path()),
                Ok(m) => total += m.blocks() * 512,
                Err(_) => {}
            }
        }
    }
    total
}

/// Removes `ANCHOR/.streamcap/<name>` when it is the lock file of a tree that no longer exists and nobody holds
/// it (a run killed after removing its tree). Returns whether it went.
pub fn remove_orphan_lock(base: &OwnedDir, name: &str) -> bool {
    let Some(tree) = name.strip_suffix(".lock") else { return false };
    if base.identity_of(tree).is_some() {
        return false;
    }
    let Ok(lock) = base.open_file(Path::new(name), OFlags::RDWR) else { return false };
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_ok()
        && base.remove_file(name).is_ok()
}
