//! The files a command is told to write (`--json`, `--csv`, `--html`, fio logs, the history database), checked
//! before anything runs, for every command alike: a run of an hour must not end by losing its result because the
//! path was a directory or a missing or read-only directory, and no command may write over a device, a pipe, a
//! symbolic link's target, a file in /dev, the same file twice or its own input. The rule itself, and the writes
//! that apply it again, are `crate::outfile`. Only looks; creates nothing.

use std::path::Path;

use anyhow::Result;

use crate::cli::HistoryOptions;
use crate::outfile::{self, Named};

/// Refuses outputs the output-file rule refuses (exit 2 through `main`, before anything is created); `inputs`
/// (job files, catalogues, results, the target) are remembered, so that no write replaces one; `history`: the
/// command stores its result in the history database, whose place is checked too.
pub fn check(
    outputs: &[(&'static str, Option<&Path>)],
    inputs: &[&Path],
    history: Option<&HistoryOptions>,
) -> Result<()> {
    let named: Vec<Named<'_>> = outputs.iter().filter_map(|&(flag, path)| Some(Named { flag, path: path? })).collect();
    outfile::check(&named, inputs)?;
    if let Some(path) = history.and_then(super::history::database) {
        outfile::check_database(&path)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_devices_missing_parents_and_duplicates_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("r.json");
        let err = |outputs: &[(&'static str, Option<&Path>)], inputs: &[&Path]| {
            check(outputs, inputs, None).unwrap_err().to_string()
        };
        assert!(err(&[("--json", Some(dir.path()))], &[]).contains("is a directory"));
        assert!(err(&[("--json", Some(Path::new("/dev/null")))], &[]).contains("not a regular file"));
        assert!(err(&[("--csv", Some(Path::new("/dev/null")))], &[]).contains("not a regular file"));
        assert!(err(&[("--json", Some(&dir.path().join("no/r.json")))], &[]).contains("does not exist"));
        let twice = err(&[("--json", Some(&file)), ("--csv", Some(&dir.path().join("./r.json")))], &[]);
        assert!(twice.contains("name the same file"), "{twice}");
        std::fs::write(&file, "[j]\n").unwrap();
        assert!(err(&[("--json", Some(&file))], &[&file]).contains("is an input"));
        let csv = dir.path().join("r.csv");
        check(&[("--json", Some(&dir.path().join("s.json"))), ("--csv", Some(&csv)), ("--html", None)], &[], None)
            .unwrap();
        assert!(!csv.exists(), "checking creates nothing");
    }

    #[test]
    fn a_history_database_on_a_device_is_refused() {
        let options = HistoryOptions { history_db: Some("/dev/null".into()), no_history: false };
        let err = check(&[], &[], Some(&options)).unwrap_err().to_string();
        assert!(err.contains("--history-db /dev/null is a device"), "{err}");
        let off = HistoryOptions { history_db: Some("/dev/null".into()), no_history: true };
        check(&[], &[], Some(&off)).unwrap();
    }
}
