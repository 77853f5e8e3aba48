//! Before a command measures free space: remove what earlier runs of this host left in the directories it is
//! about to write in — killed, crashed, or whose clean-up failed (work directories with their data files, test
//! media and ingest files; file-set trees) — so that a leftover never makes the free-space check fail, and say
//! how much that freed, what it removed beyond the ordinary and what it left (and what to remove by hand). The
//! rules of what may be removed are `run::remove_stale`'s.

use std::path::Path;

use crate::run::remove_stale;
use crate::units::Bytes;

/// Clears each directory in `dirs` (targets and anchors; anything else is skipped) and prints a note per
/// directory that had leftovers, and each of the clean-up's own notes, unless `quiet`.
pub fn clear(dirs: &[&Path], quiet: bool) {
    for dir in dirs {
        if !dir.is_dir() {
            continue;
        }
        let stale = remove_stale(dir);
        if quiet {
            continue;
        }
        for line in lines(dir, &stale) {
            super::output::say(&line);
        }
    }
}

/// What to tell of one directory's clean-up: one line for what went, one per note.
fn lines(dir: &Path, stale: &crate::run::Stale) -> Vec<String> {
    let mut out = Vec::new();
    if !stale.removed.is_empty() {
        let names: Vec<String> = stale.removed.iter().map(|p| p.display().to_string()).collect();
        out.push(format!(
            "note: removed what {} earlier run(s) (killed, crashed, or whose clean-up failed) left in {} ({} \
             freed): {}",
            stale.removed.len(),
            dir.display(),
            Bytes(stale.freed),
            names.join(", ")
        ));
    }
    out.extend(stale.notes.iter().map(|n| format!("note: {n}")));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_note_is_said_also_without_a_removed_directory() {
        let stale = crate::run::Stale {
            removed: vec!["/srv/.streamcap/run-h-1-1".into()],
            freed: 64 << 20,
            notes: vec!["/srv/.streamcap/run-h-1-1 had an empty or damaged marker …: removed data.0".into()],
        };
        let said = lines(Path::new("/srv"), &stale);
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(said[0].contains("removed what 1 earlier run(s)") && said[0].contains("64 MiB freed"), "{said:?}");
        assert!(said[1].starts_with("note: /srv/.streamcap/run-h-1-1 had an empty"), "{said:?}");
        let only_notes = crate::run::Stale { notes: vec!["x left".into()], ..Default::default() };
        assert_eq!(lines(Path::new("/srv"), &only_notes), ["note: x left"]);
    }
}
