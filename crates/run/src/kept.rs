//! Kept runs and verification: a `--keep --verify` run leaves a manifest and a block map in its work directory
//! (`crate::verify::Manifest`), and `--verify-only` finds the most recent such run under a target and loads it.
//!
//! Only reads here, apart from writing the two files into this run's own work directory: a kept run is never
//! changed by the run that checks it. Nothing in a kept run is read through a symbolic link, and nothing but a
//! regular file is opened (a FIFO put there would hang the read): its marker, manifest and map are opened with
//! O_NOFOLLOW, and its directories are held open and registered (`owned.rs`), so that the read-back opens its
//! data files only beneath them, following no link.

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use super::owned::{OwnedDir, Registration, register};
use super::workdir::{KEPT_LINE, MARKER};
use crate::verify::{MANIFEST_FILE, MAP_FILE, Manifest, ManifestError, Verifier};

/// Manifest files larger than this are not a manifest streamcap wrote (a verified file set of the most files the
/// plan allows, 1,000,000, lists each in about 60 bytes).
const MANIFEST_CAP: u64 = 128 << 20;

#[derive(Debug, thiserror::Error)]
pub enum KeptError {
    #[error(
        "no kept run to verify under {0}: run `streamcap run DIR --rw write --verify ALGO --keep` first, or name one \
         with --from"
    )]
    NoneFound(PathBuf),
    #[error("{dir} is not a kept run streamcap can verify: {why}")]
    NotKept { dir: PathBuf, why: String },
    #[error("{dir}: {cause}")]
    Manifest { dir: PathBuf, cause: ManifestError },
    #[error("cannot read {path}: {cause}")]
    Read { path: PathBuf, cause: io::Error },
}

/// Writes the manifest and block map of `verifier`'s run into its work directory `dir`; returns the manifest's
/// path. `trees`: each verified file-set tree's root and first file number. `journaled`: the run keeps the map
/// as its journal (`run/journal.rs`), which made both files when it started and is now brought up to date;
/// otherwise both files are new (never an existing file).
pub fn write_manifest(
    dir: &Path,
    verifier: &Verifier,
    trees: &[(PathBuf, u32)],
    journaled: bool,
) -> io::Result<PathBuf> {
    let trees: Vec<(&Path, u32)> = trees.iter().map(|(root, first)| (root.as_path(), *first)).collect();
    let (mut manifest, map) = Manifest::of(verifier, &trees);
    manifest.journaled = journaled;
    let create = |name: &str, bytes: &[u8]| -> io::Result<PathBuf> {
        let path = dir.join(name);
        let mut options = fs::OpenOptions::new();
        // A journal's files are rewritten in place, never truncated first: they keep their length (the same
        // files, the same blocks), so a run killed while it rewrites them leaves a whole map.
        match journaled {
            true => options.write(true).create(true).truncate(false),
            false => options.write(true).create_new(true),
        };
        let mut file = options.open(&path)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        Ok(path)
    };
    create(MAP_FILE, &map)?;
    create(MANIFEST_FILE, manifest.to_json().as_bytes())
}

/// The most recently started kept run under `target` that holds a manifest.
pub fn latest_kept_run(target: &Path) -> Result<PathBuf, KeptError> {
    let base = target.join(".streamcap");
    let entries = fs::read_dir(&base).map_err(|_| KeptError::NoneFound(target.to_path_buf()))?;
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|dir| kept_run_problem(dir).is_none())
        .max_by_key(|dir| (started_secs(dir), dir.clone()))
        .ok_or_else(|| KeptError::NoneFound(target.to_path_buf()))
}

/// The start time (unix seconds) in a work directory's name `run-<host>-<pid>-<secs>`.
fn started_secs(dir: &Path) -> u64 {
    let name = dir.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    name.rsplit('-').next().and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// Why `dir` is not a kept, verifiable run (a real directory, not a symlink, with a kept marker and a manifest).
fn kept_run_problem(dir: &Path) -> Option<String> {
    let Ok(meta) = fs::symlink_metadata(dir) else { return Some("it does not exist".into()) };
    if !meta.is_dir() {
        return Some("it is not a directory (a symbolic link is never followed)".into());
    }
    for name in [MARKER, MANIFEST_FILE] {
        if fs::symlink_metadata(dir.join(name)).is_ok_and(|m| !m.is_file()) {
            return Some(format!(
                "its {name} is not a regular file (a symbolic link, pipe or device, which --verify-only never opens)"
            ));
        }
    }
    let marker = read_plain(&dir.join(MARKER), MARKER_CAP).ok().and_then(|b| String::from_utf8(b).ok());
    let marker = marker.unwrap_or_default();
    if !marker.starts_with("streamcap work directory") {
        return Some("it has no streamcap marker (.streamcap-run)".into());
    }
    if !marker.lines().any(|l| l == KEPT_LINE) {
        return Some("it was not kept (run with --keep), or its run is still going".into());
    }
    if still_running(&dir.join(MARKER)) {
        return Some("its run is still going (a journaled run is kept from its start): wait for it to end".into());
    }
    if !fs::symlink_metadata(dir.join(MANIFEST_FILE)).is_ok_and(|m| m.is_file()) {
        return Some(format!("it has no {MANIFEST_FILE}: the run that left it did not use --verify"));
    }
    None
}

/// Whether the run of a work directory still holds the lock on its marker (a live run locks it exclusively).
fn still_running(marker: &Path) -> bool {
    use rustix::fs::{FlockOperation, flock};
    let Ok(file) = open_plain(marker) else { return false };
    flock(&file, FlockOperation::NonBlockingLockShared).is_err()
}

/// A marker lists the files its run created; one larger than this is not a marker streamcap wrote.
const MARKER_CAP: u64 = 16 << 20;

/// Opens `path` for reading: not through a symbolic link in its last component, and only a regular file (opened
/// without blocking, so a FIFO in its place cannot hang the open).
fn open_plain(path: &Path) -> io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other("it is not a regular file"));
    }
    Ok(file)
}

/// Reads at most `cap` bytes of the regular file `path` (see [`open_plain`]).
fn read_plain(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open_plain(path)?.take(cap).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// A kept run, loaded for `--verify-only`.
pub struct KeptRun {
    pub manifest: Manifest,
    /// Holds the run's block map.
    pub verifier: Verifier,
    /// Every file's path, in the verifier's order.
    pub paths: Vec<PathBuf>,
    /// The run's work directory and its trees' roots, held open and registered while this lives: the read-back
    /// opens every file beneath them. A tree whose root cannot be opened is not registered, and its files are
    /// then reported missing.
    pub held: Vec<Registration>,
}

/// The kept run in `dir`: its manifest, a verifier holding its block map, the paths of its files, and its
/// directories held open (see [`KeptRun`]).
pub fn load_kept_run(dir: &Path, keep_bad: usize) -> Result<KeptRun, KeptError> {
    if let Some(why) = kept_run_problem(dir) {
        return Err(KeptError::NotKept { dir: dir.to_path_buf(), why });
    }
    let not_kept = |why: String| KeptError::NotKept { dir: dir.to_path_buf(), why };
    let work = OwnedDir::open_existing(dir).map_err(|e| not_kept(e.to_string()))?;
    let manifest_path = dir.join(MANIFEST_FILE);
    let text = read_plain(&manifest_path, MANIFEST_CAP.saturating_add(1))
        .map_err(|e| not_kept(format!("{MANIFEST_FILE}: {e}")))
        .and_then(|bytes| match bytes.len() as u64 > MANIFEST_CAP {
            true => Err(not_kept(format!("{MANIFEST_FILE} is larger than a manifest streamcap writes"))),
            false => String::from_utf8(bytes).map_err(|_| not_kept(format!("{MANIFEST_FILE} is not text"))),
        })?;
    let manifest = Manifest::from_json(&text).map_err(|cause| KeptError::Manifest { dir: dir.to_path_buf(), cause })?;
    let map = read_capped(&dir.join(MAP_FILE), manifest.blocks().saturating_add(1))?;
    let paths: Vec<PathBuf> = manifest.paths(dir).into_iter().map(|(path, _)| path).collect();
    let names = paths.iter().map(|p| p.display().to_string()).collect();
    let verifier = manifest
        .verifier(names, &map, keep_bad)
        .map_err(|cause| KeptError::Manifest { dir: dir.to_path_buf(), cause })?;
    let mut held = vec![register(work, None)];
    let roots = manifest.trees.iter().filter_map(|t| OwnedDir::open_existing(Path::new(&t.root)).ok());
    held.extend(roots.map(|root| register(root, None)));
    Ok(KeptRun { manifest, verifier, paths, held })
}

/// Reads at most `cap` bytes of `path` (a longer file is cut there, which the caller's checks then refuse).
fn read_capped(path: &Path, cap: u64) -> Result<Vec<u8>, KeptError> {
    let err = |cause| KeptError::Read { path: path.to_path_buf(), cause };
    let mut bytes = Vec::new();
    open_plain(path).map_err(err)?.take(cap).read_to_end(&mut bytes).map_err(err)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::Algorithm;

    fn kept_run(base: &Path, name: &str, kept: bool, with_manifest: bool) -> PathBuf {
        let dir = base.join(".streamcap").join(name);
        fs::create_dir_all(&dir).unwrap();
        let marker = if kept { "streamcap work directory\nkept\n" } else { "streamcap work directory\n" };
        fs::write(dir.join(MARKER), marker).unwrap();
        fs::write(dir.join("data.0"), vec![0u8; 8192]).unwrap();
        if with_manifest {
            let v =
                Verifier::new(Algorithm::Crc32c, 4096, 1, vec![(dir.join("data.0").display().to_string(), 8192)], 5);
            write_manifest(&dir, &v, &[], false).unwrap();
        }
        dir
    }

    #[test]
    fn the_most_recent_kept_run_with_a_manifest_is_chosen() {
        let root = tempfile::tempdir().unwrap();
        let older = kept_run(root.path(), "run-h-1-100", true, true);
        let newer = kept_run(root.path(), "run-h-2-200", true, true);
        kept_run(root.path(), "run-h-3-300", false, true);
        kept_run(root.path(), "run-h-4-400", true, false);
        assert_eq!(latest_kept_run(root.path()).unwrap(), newer);
        let kept = load_kept_run(&older, 10).unwrap();
        assert_eq!((kept.manifest.block_size, kept.verifier.generations(0)), (4096, vec![0, 0]));
        assert_eq!(kept.paths, vec![older.join("data.0")]);
        let err = load_kept_run(&root.path().join(".streamcap/run-h-3-300"), 10).err().expect("not kept");
        assert!(err.to_string().contains("--keep"), "{err}");
    }

    /// Guards issue 25 (item 5): a kept run's files were read through symlinks; a FIFO would hang the read.
    #[test]
    fn a_marker_or_manifest_that_is_not_a_regular_file_is_never_opened() {
        let root = tempfile::tempdir().unwrap();
        let dir = kept_run(root.path(), "run-h-1-100", true, true);
        fs::remove_file(dir.join(MARKER)).unwrap();
        rustix::fs::mknodat(rustix::fs::CWD, dir.join(MARKER), rustix::fs::FileType::Fifo, 0o600.into(), 0).unwrap();
        let why = load_kept_run(&dir, 10).err().expect("refused").to_string();
        assert!(why.contains(".streamcap-run is not a regular file"), "{why}");
        fs::remove_file(dir.join(MARKER)).unwrap();
        fs::write(dir.join(MARKER), "streamcap work directory\nkept\n").unwrap();
        let manifest = root.path().join("elsewhere.json");
        fs::rename(dir.join(MANIFEST_FILE), &manifest).unwrap();
        std::os::unix::fs::symlink(&manifest, dir.join(MANIFEST_FILE)).unwrap();
        let why = load_kept_run(&dir, 10).err().expect("refused").to_string();
        assert!(why.contains("verify.json is not a regular file"), "{why}");
        assert!(latest_kept_run(root.path()).is_err(), "not a candidate either");
    }

    #[test]
    fn no_kept_run_says_how_to_make_one() {
        let root = tempfile::tempdir().unwrap();
        let err = latest_kept_run(root.path()).unwrap_err().to_string();
        assert!(err.contains("--verify ALGO --keep"), "{err}");
    }
}
