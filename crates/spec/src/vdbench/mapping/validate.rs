//! vdbench's Data Validation (`validate=` general parameter, vdbench -v) onto streamcap's verification
//! (docs/reliability.md): every block written carries a header and a checksum, every read checks what it reads,
//! and the run ends by reading back everything written. `validate=yes` is that, on raw (sd/wd) and file-system
//! (fsd/fwd) runs alike; `read_after_write` (vdbench -vr) also re-reads each block right after it is written (a
//! backlog of one write), which streamcap's raw workers do and its file-set threads do not: refused there.

use super::super::lexer::{Param, unprotect};
use super::super::model::Model;
use super::super::values::{Units, parse_items};
use super::super::{VdbError, Where};
use crate::spec::{JournalMode, PhaseSpec, VerifyChoice};

/// What `validate=` asks for: `None` for no (or not said); `Some(backlog)` for yes.
pub(super) fn validation(model: &Model) -> Result<Option<Option<u64>>, VdbError> {
    let Some((_, p)) = model.general.iter().rev().find(|(c, _)| *c == "validate") else { return Ok(None) };
    let words = parse_items(&p.value, Units::Size).map_err(|m| wrong(p, &m))?;
    let mut asked = None;
    for word in words.iter().map(|w| w.display().to_ascii_lowercase()) {
        asked = match word.as_str() {
            "no" | "n" => None,
            "yes" | "y" => Some(asked.flatten()),
            "read_after_write" | "raw" => Some(Some(1)),
            other => {
                return Err(wrong(
                    p,
                    &format!(
                        "validate '{other}' is not supported; expected yes, no or read_after_write (streamcap checks \
                         every read and reads everything back at the end)"
                    ),
                ));
            }
        };
    }
    Ok(asked)
}

/// What `journal=` asks for (vdbench -j, -jn): streamcap's `--journal sync` or `noflush`, which imply
/// validation. vdbench's recovery options are streamcap's `--verify-only`, run as its own command, and refused
/// here with that advice; maponly is `--keep`.
pub(super) fn journal(model: &Model) -> Result<Option<JournalMode>, VdbError> {
    let Some((_, p)) = model.general.iter().rev().find(|(c, _)| *c == "journal") else { return Ok(None) };
    let words = parse_items(&p.value, Units::Size).map_err(|m| wrong(p, &m))?;
    let mut mode = None;
    for word in words.iter().map(|w| w.display().to_ascii_lowercase()) {
        let refused = match word.as_str() {
            "no" | "n" => None,
            "yes" | "y" => {
                mode.get_or_insert(JournalMode::Sync);
                None
            }
            "noflush" => {
                mode = Some(JournalMode::Noflush);
                None
            }
            "maponly" => Some(
                "keeps only the map, saved when the run ends normally: that is validate=yes with --keep (check it \
                 later with --verify-only); remove journal=maponly and pass --keep",
            ),
            "recover" | "only" | "skip_read_all" | "ignore_pending" => Some(
                "journal recovery is its own command in streamcap: `streamcap run DIR --verify-only crc32c` checks \
                 what the journaled run kept under DIR wrote, every block, accepting old or new data where a write \
                 was in flight (as vdbench does); it does not go on writing on top of it. Remove this word",
            ),
            other => Some(if other.is_empty() { "an empty word" } else { "unknown: expected yes, noflush or no" }),
        };
        if let Some(why) = refused {
            return Err(wrong(p, &format!("journal '{word}' is not supported: {why}")));
        }
    }
    Ok(mode)
}

/// The notice for an sd's or fsd's `journal=DIR` (`label`: the record, as notices name it).
pub(super) fn journal_dir_notice(label: &str) -> String {
    format!(
        "vdbench {label}: journal=DIR is not used: streamcap keeps the journal (journal=yes) beside its data, in \
         TARGET/.streamcap/run-…/verify.map"
    )
}

/// Verification on every phase (with its journal, if asked); read_after_write is refused for file-system runs.
pub(super) fn apply(
    (asked, journal): (Option<u64>, Option<JournalMode>),
    phases: &mut [PhaseSpec],
    file_system: bool,
    root: &std::path::Path,
) -> Result<(), VdbError> {
    if file_system && asked.is_some() {
        return Err(VdbError::at(
            &Where::File(root.to_path_buf()),
            "validate=read_after_write re-reads each block right after its write, which streamcap does for raw \
             (sd/wd) runs only; a file-system run checks every read and reads everything back at its end: use \
             validate=yes"
                .to_string(),
        ));
    }
    for phase in phases {
        phase.verify = Some(VerifyChoice::Crc32c);
        phase.verify_backlog = asked;
        phase.journal = journal;
    }
    Ok(())
}

fn wrong(p: &Param, why: &str) -> VdbError {
    VdbError::keyword(&p.at, &p.key, None, format!("'{}': {why}", unprotect(&p.value)))
}
