//! Before a command measures free space: remove what killed runs of this host left in the directories it is
//! about to write in (work directories with their data files, test media and ingest files; file-set trees), so
//! that a leftover never makes the free-space check fail, and say how much that freed. The rules of what may be
//! removed are `run::remove_stale`'s.

use std::path::Path;

use crate::run::remove_stale;
use crate::units::Bytes;

/// Clears each directory in `dirs` (targets and anchors; anything else is skipped) and prints a note per
/// directory that had leftovers, unless `quiet`.
pub fn clear(dirs: &[&Path], quiet: bool) {
    for dir in dirs {
        if !dir.is_dir() {
            continue;
        }
        let stale = remove_stale(dir);
        if !stale.removed.is_empty() && !quiet {
            let names: Vec<String> = stale.removed.iter().map(|p| p.display().to_string()).collect();
            super::output::say(&format!(
                "note: removed what {} killed earlier run(s) left in {} ({} freed): {}",
                stale.removed.len(),
                dir.display(),
                Bytes(stale.freed),
                names.join(", ")
            ));
        }
    }
}
