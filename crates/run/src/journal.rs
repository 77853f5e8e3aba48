//! The journal of a verified run (`--journal`, vdbench journal=): the block map (`verify.map`) kept current in
//! the run's work directory while the run writes, with the manifest (`verify.json`) written before the first
//! write, so that `--verify-only` can check the data even after the run was killed or the machine lost power.
//!
//! What goes into the journal and when is the verifier's (`verify/map/journal.rs`): each write's blocks in
//! flight before it is issued, written after it completed. This file only puts those records into the map file,
//! each at its block's place (`pwrite`), and with `sync` waits for them to be durable (`fdatasync`) before the
//! worker goes on — the cost vdbench's journal=yes has too, two synchronous journal writes per write. A journal
//! run keeps its data and its trees (as `--keep`) from its start, so that nothing removes them if it is killed.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::verify::{JournalSink, MAP_FILE, Verifier};

/// The journal file and what went wrong writing it.
pub struct FileJournal {
    file: File,
    sync: bool,
    failures: AtomicU64,
    first_failure: Mutex<Option<String>>,
}

impl FileJournal {
    /// Records that failed, and the first failure's words.
    pub fn failures(&self) -> (u64, Option<String>) {
        let first = self.first_failure.lock().unwrap_or_else(|p| p.into_inner()).clone();
        (self.failures.load(Ordering::Relaxed), first)
    }

    #[cold]
    fn failed(&self, e: &io::Error) {
        if self.failures.fetch_add(1, Ordering::Relaxed) == 0 {
            *self.first_failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
        }
    }
}

/// The verifier's handle on the journal (the run keeps another, to report failures).
struct Sink(Arc<FileJournal>);

impl JournalSink for Sink {
    fn record(&self, at: u64, keys: &[u8]) {
        let journal = &self.0;
        let written = journal
            .file
            .write_all_at(keys, at)
            .and_then(|()| if journal.sync { journal.file.sync_data() } else { Ok(()) });
        if let Err(e) = written {
            journal.failed(&e);
        }
    }
}

/// Starts the journal of a run in its work directory `dir`: the manifest and an all-zero map (made durable),
/// then every write of `verifier` journaled into that map. `trees`: each verified tree's root and first file.
pub fn start(
    dir: &Path,
    verifier: &mut Verifier,
    trees: &[(std::path::PathBuf, u32)],
    sync: bool,
) -> io::Result<Arc<FileJournal>> {
    super::kept::write_manifest(dir, verifier, trees, true)?;
    let file = std::fs::OpenOptions::new().write(true).open(dir.join(MAP_FILE))?;
    let journal = Arc::new(FileJournal { file, sync, failures: AtomicU64::new(0), first_failure: Mutex::new(None) });
    verifier.set_journal(Box::new(Sink(journal.clone())));
    Ok(journal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::{Algorithm, Manifest};

    #[test]
    fn the_map_file_follows_every_write_and_reads_back_as_a_journaled_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let files = vec![(dir.path().join("data.0").display().to_string(), 16384)];
        let mut v = Verifier::new(Algorithm::Crc32c, 4096, 9, files, 5);
        let journal = start(dir.path(), &mut v, &[], true).unwrap();
        assert_eq!(std::fs::read(dir.path().join(MAP_FILE)).unwrap(), vec![0; 4]);
        let mut buf = vec![0u8; 8192];
        assert!(v.begin_write(0, 4096, &mut buf));
        assert_eq!(std::fs::read(dir.path().join(MAP_FILE)).unwrap(), vec![0, 0x81, 0x81, 0], "in flight");
        v.end_write(0, 4096, 8192, true);
        assert_eq!(std::fs::read(dir.path().join(MAP_FILE)).unwrap(), vec![0, 1, 1, 0]);
        let text = std::fs::read_to_string(dir.path().join(crate::verify::MANIFEST_FILE)).unwrap();
        assert!(Manifest::from_json(&text).unwrap().journaled);
        assert_eq!(journal.failures(), (0, None));
    }
}
