//! The library of titles kept between runs (`TARGET/.streamcap/library/`), planned. A run that generates a
//! library reads the one an earlier run kept, when it holds at least three quarters of what this run would write
//! in titles no shorter than this run's viewers read in a step, so that checks of one target read the same titles and
//! compare: on a btrfs raid1 of four members a library written afresh lies on other members each time, and two
//! quick checks found 80 and 121 1080p streams, where three checks reading one library found 134, 136 and 137
//! (docs/streams.md, "A kept library"). Otherwise it writes its own in its work directory, replacing the kept
//! one (whose space it may take: the kept one goes before the new one is written), and keeps it for the next
//! run unless told not to. Pure: the kept library comes in the facts, as the run crate found it.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::library::{Generated, title_name};
use crate::units::Bytes;

/// The directory under `TARGET/.streamcap` that holds the kept library.
pub const KEPT_LIBRARY_DIR: &str = "library";

/// The least share of what this run would write that a kept library must hold to be read again. Not all of it:
/// a library sized to half the free space is seldom sized alike twice. On a btrfs raid1 of four 2 GiB members a
/// quick check wrote 1.55 GiB, and the next, which counted that library's space as free, would have written
/// 1.71 GiB (btrfs's free-space estimate moves with its chunks: the first run's deleted data left its chunk
/// allocated), so it replaced the library and its capacity moved from 80 to 104 1080p streams. A quarter less
/// still exceeds the same caches by the same measure; a quick check's 2 GiB for a default check's 8 GiB does not.
const SERVES_SHARE: f64 = 0.75;

/// A library an earlier run kept (`Facts::kept_library`), complete: its marker says so, and every title is
/// there and at least `title_bytes` long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptLibrary {
    /// `TARGET/.streamcap/library`.
    pub dir: PathBuf,
    pub titles: u32,
    pub title_bytes: u64,
    /// When it was written (unix seconds), as its marker says.
    pub written: Option<u64>,
    /// Another run holds it right now (reads it): this run may read it too, not replace it.
    pub in_use: bool,
}

impl KeptLibrary {
    pub fn bytes(&self) -> u64 {
        u64::from(self.titles) * self.title_bytes
    }

    /// Whether its titles serve a job that would write `wanted`: at least `SERVES_SHARE` of its bytes, titles at
    /// least as long as one viewer reads in a step, and the count of titles a phase asks for, if it asks.
    fn serves(&self, wanted: &Generated) -> bool {
        self.title_bytes >= wanted.floor
            && self.bytes() as f64 >= SERVES_SHARE * wanted.bytes() as f64
            && wanted.fixed.is_none_or(|n| n == self.titles)
    }
}

/// What a command asks of the kept library (`RunOptions::library`). The default (a job file's `run`): read a
/// kept library that serves, keep nothing new.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LibraryChoice {
    /// Keep the library this run writes for the next run (`check` and `streams`, unless `--remove-library`).
    pub keep: bool,
    /// Write a new library even where the kept one would serve (`--fresh-library`).
    pub fresh: bool,
    /// Remove the library after the run, the kept one too when this run read it (`--remove-library`).
    pub remove: bool,
}

/// Where the run's titles come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "how")]
pub enum LibraryUse {
    /// The titles kept there, as an earlier run wrote them (at these unix seconds, when known): read, never
    /// written.
    Reuse { written: Option<u64> },
    /// This run writes its titles in its work directory; `replace`: the kept library is removed first.
    Write { replace: bool },
}

/// What the run does with the kept library (`TargetPlan::library`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LibraryKeeping {
    /// `TARGET/.streamcap/library`.
    pub dir: PathBuf,
    pub titles: u32,
    pub title_bytes: u64,
    #[serde(rename = "use")]
    pub how: LibraryUse,
    /// After the run the library stays there for the next run (this run's titles moved in from its work
    /// directory); `false`: it is removed (one this run read included).
    pub keep: bool,
}

impl LibraryKeeping {
    pub fn reused(&self) -> bool {
        matches!(self.how, LibraryUse::Reuse { .. })
    }

    /// The path of title `n` as this run reads it.
    pub fn title_path(&self, n: u32) -> PathBuf {
        self.dir.join(title_name(n))
    }

    /// What happens to the library, in words, for the plan and the summary.
    pub fn words(&self) -> String {
        let dir = self.dir.display();
        let (written, after) = match (self.how, self.keep) {
            (LibraryUse::Reuse { .. }, true) => {
                ("", "it stays for the next run (--fresh-library writes a new one, --remove-library removes it)")
            }
            (LibraryUse::Reuse { .. }, false) => ("", "then removed (--remove-library)"),
            (LibraryUse::Write { .. }, true) => (
                "written by this run",
                "kept there for the next run, which reads it again (--remove-library removes it)",
            ),
            (LibraryUse::Write { .. }, false) => ("written by this run", "removed after the run (--remove-library)"),
        };
        match self.how {
            LibraryUse::Reuse { written } => format!(
                "kept by an earlier run{} in {dir} and read as it is, so that runs on this target read the same \
                 titles and compare; {after}",
                written.map(|w| format!(" (written {})", crate::units::utc_minutes(w))).unwrap_or_default()
            ),
            LibraryUse::Write { replace: true } => format!(
                "{written} in place of the one kept in {dir} (removed before this run writes: it does not serve \
                 this run, or --fresh-library asks for a new one), {after}"
            ),
            LibraryUse::Write { replace: false } => format!("{written} in {dir} and {after}"),
        }
    }
}

/// The library the job's stream phases share and what becomes of the kept one.
pub(super) struct Chosen {
    /// The titles the phases read: the kept library's, or the ones this run writes.
    pub library: Generated,
    /// `None`: a library of this run alone, written in its work directory and removed with it (under mpirun,
    /// where every rank writes its own; or a run that keeps nothing and found nothing kept).
    pub keeping: Option<LibraryKeeping>,
    pub notice: Option<String>,
}

/// The library of a job with generated titles (`None`: no phase reads one), given the free space, the kept
/// library (if any) and what the command asks; `generated` sizes a new library for a free space (the job's
/// other data files already counted).
pub(super) fn choose(
    free: Option<Bytes>,
    kept: Option<&KeptLibrary>,
    choice: LibraryChoice,
    base: &Path,
    generated: impl Fn(Option<Bytes>) -> Result<Option<Generated>, String>,
) -> Result<Option<Chosen>, String> {
    let dir = base.join(KEPT_LIBRARY_DIR);
    let keeping = |library: &Generated, how, keep| LibraryKeeping {
        dir: dir.clone(),
        titles: library.titles,
        title_bytes: library.title_bytes,
        how,
        keep,
    };
    let Some(kept) = kept else {
        let Some(library) = generated(free)? else { return Ok(None) };
        let keeping =
            (choice.keep && !choice.remove).then(|| keeping(&library, LibraryUse::Write { replace: false }, true));
        return Ok(Some(Chosen { library, keeping, notice: None }));
    };
    // The kept library's space is this run's to take when it replaces it.
    let Some(wanted) = generated(free.map(|f| Bytes(f.0.saturating_add(kept.bytes()))))? else { return Ok(None) };
    if !choice.fresh && kept.serves(&wanted) {
        let library = Generated { titles: kept.titles, title_bytes: kept.title_bytes, ..wanted };
        let how = LibraryUse::Reuse { written: kept.written };
        let keeping = keeping(&library, how, !choice.remove);
        return Ok(Some(Chosen { library, keeping: Some(keeping), notice: None }));
    }
    if !kept.in_use {
        let keeping = keeping(&wanted, LibraryUse::Write { replace: true }, !choice.remove);
        return Ok(Some(Chosen { library: wanted, keeping: Some(keeping), notice: None }));
    }
    let Some(library) = generated(free)? else { return Ok(None) };
    let notice = format!(
        "the library kept in {} is being read by another run, and {}: this run writes its own and does not keep it",
        dir.display(),
        match choice.fresh {
            true => "--fresh-library asks for a new one".to_string(),
            false => format!(
                "it does not serve this run ({} in titles of {}; this run needs {} in titles of at least {})",
                Bytes(kept.bytes()),
                Bytes(kept.title_bytes),
                Bytes(library.bytes()),
                Bytes(library.floor)
            ),
        }
    );
    Ok(Some(Chosen { library, keeping: None, notice: Some(notice) }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::MIB;

    fn wanted(free: Option<Bytes>) -> Result<Option<Generated>, String> {
        // 8 GiB asked, shrunk to half the free space; titles of 256 MiB, at least 200 MiB each.
        let size = free.map_or(8 << 30, |f| (f.0 / 2).min(8 << 30));
        let titles = (size / (256 * MIB)) as u32;
        Ok(Some(Generated { titles, title_bytes: 256 * MIB, asked: 8 << 30, floor: 200 * MIB, fixed: None }))
    }

    fn kept(titles: u32, title_mib: u64, in_use: bool) -> KeptLibrary {
        let dir = PathBuf::from("/t/.streamcap/library");
        KeptLibrary { dir, titles, title_bytes: title_mib * MIB, written: Some(1_795_000_000), in_use }
    }

    fn choose_with(kept: Option<&KeptLibrary>, choice: LibraryChoice, free: u64) -> Chosen {
        choose(Some(Bytes(free)), kept, choice, Path::new("/t/.streamcap"), wanted).unwrap().unwrap()
    }

    #[test]
    fn a_kept_library_that_serves_is_read_again_and_one_that_does_not_is_replaced_in_its_own_space() {
        let keep = LibraryChoice { keep: true, ..LibraryChoice::default() };
        // Nothing kept: written, kept for the next run.
        let first = choose_with(None, keep, 20 << 30);
        let keeping = first.keeping.unwrap();
        assert_eq!((keeping.how, keeping.keep, keeping.titles), (LibraryUse::Write { replace: false }, true, 32));
        // Kept, 8 GiB of 256 MiB titles, with 12 GiB free beside it: read again, as it is.
        let again = choose_with(Some(&kept(32, 256, false)), keep, 12 << 30);
        let keeping = again.keeping.unwrap();
        assert_eq!(keeping.how, LibraryUse::Reuse { written: Some(1_795_000_000) });
        assert!(keeping.keep && keeping.words().contains("written 2026-11-18"), "{}", keeping.words());
        // A little smaller than this run would write serves (7 GiB of 8); a quarter of it does not.
        assert!(choose_with(Some(&kept(28, 256, false)), keep, 12 << 30).keeping.unwrap().reused());
        assert!(!choose_with(Some(&kept(8, 256, false)), keep, 12 << 30).keeping.unwrap().reused());
        // Larger than asked serves too; titles shorter than a viewer reads in a step do not.
        assert!(choose_with(Some(&kept(64, 256, false)), keep, 4 << 30).keeping.unwrap().reused());
        let short = choose_with(Some(&kept(64, 128, false)), keep, 4 << 30);
        assert_eq!(short.keeping.unwrap().how, LibraryUse::Write { replace: true });
        // Smaller than this run would write, with 12 GiB free: replaced, sized with the kept one's space.
        let small = choose_with(Some(&kept(8, 256, false)), keep, 12 << 30);
        assert_eq!((small.library.titles, small.keeping.unwrap().how), (28, LibraryUse::Write { replace: true }));
    }

    #[test]
    fn fresh_and_remove_are_obeyed_and_a_library_another_run_reads_is_never_replaced() {
        let remove = LibraryChoice { keep: true, remove: true, ..LibraryChoice::default() };
        let read_then_removed = choose_with(Some(&kept(32, 256, false)), remove, 12 << 30).keeping.unwrap();
        assert!(read_then_removed.reused() && !read_then_removed.keep);
        assert!(choose_with(None, remove, 20 << 30).keeping.is_none(), "written and removed with the work directory");
        let fresh = LibraryChoice { keep: true, fresh: true, ..LibraryChoice::default() };
        let replaced = choose_with(Some(&kept(32, 256, false)), fresh, 12 << 30).keeping.unwrap();
        assert_eq!((replaced.how, replaced.keep), (LibraryUse::Write { replace: true }, true));
        let busy = choose_with(Some(&kept(32, 256, true)), fresh, 12 << 30);
        assert!(busy.keeping.is_none(), "written in the work directory, not kept");
        assert_eq!(busy.library.titles, 24, "sized without the kept one's space: it stays");
        assert!(busy.notice.unwrap().contains("being read by another run"));
        // A job file's run (nothing asked): reads a kept library that serves, keeps nothing it writes.
        let plain = LibraryChoice::default();
        assert!(choose_with(Some(&kept(32, 256, false)), plain, 12 << 30).keeping.unwrap().keep);
        assert!(choose_with(None, plain, 20 << 30).keeping.is_none());
    }
}
