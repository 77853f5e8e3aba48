//! The files a command is told to write (`--json`, `--csv`), checked before anything runs: a run of an hour
//! must not end by losing its result because the path was a directory, a missing or read-only directory, a
//! device, the job file itself, or the same file as another output. Only looks; creates nothing.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

/// One output as the user named it: the flag (for messages) and the path.
pub struct Output<'a> {
    pub flag: &'static str,
    pub path: &'a Path,
    /// Written into in place (the CSV, so `--csv /dev/stdout` works); otherwise written beside and renamed over
    /// the path (the JSON), which must then be a plain file or nothing.
    pub in_place: bool,
}

/// Refuses outputs that could not be written, that are not plain files, that name the same file twice, or that
/// would overwrite one of `inputs` (the job file). Exit code 2 through `main`, before anything is created.
pub fn check_outputs(outputs: &[Output<'_>], inputs: &[&Path]) -> Result<()> {
    let mut seen: Vec<(&'static str, PathBuf)> = Vec::new();
    for output in outputs {
        let identity = check_one(output)?;
        if let Some((flag, _)) = seen.iter().find(|(_, other)| *other == identity) {
            bail!(
                "{} {} and {flag} name the same file: each output needs a file of its own (e.g. r.json and r.csv)",
                output.flag,
                output.path.display()
            );
        }
        if inputs.iter().any(|input| identity_of(input).is_some_and(|i| i == identity)) {
            bail!(
                "{} {} is an input of this run (the job file): it would be overwritten; write the result elsewhere",
                output.flag,
                output.path.display()
            );
        }
        seen.push((output.flag, identity));
    }
    Ok(())
}

/// Checks one output and returns the file it names (canonical directory + file name), for duplicate checks.
fn check_one(output: &Output<'_>) -> Result<PathBuf> {
    let (flag, path) = (output.flag, output.path);
    if path.is_dir() {
        bail!("{flag} {} is a directory: give a file name, e.g. {flag} {}", path.display(), example(path, flag));
    }
    // A result is written to a temporary file and renamed into place: over a device node, a pipe or a symlink
    // that would replace the node or the link itself (as root, /dev/null or /dev/stdout included).
    if let Ok(meta) = std::fs::symlink_metadata(path)
        && !output.in_place
        && !meta.is_file()
    {
        bail!(
            "{flag} {} is not a regular file (a device, pipe, socket or symlink), and the result replaces the file \
             it names: give the name of a plain file",
            path.display()
        );
    }
    let Some(name) = path.file_name() else {
        bail!("{flag} {} does not name a file: give a file name, e.g. {flag} result.json", path.display());
    };
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let dir = match std::fs::canonicalize(parent) {
        Ok(dir) if dir.is_dir() => dir,
        Ok(_) => bail!("cannot write {flag} {}: {} is not a directory", path.display(), parent.display()),
        Err(_) => bail!(
            "cannot write {flag} {}: the directory {} does not exist; create it first",
            path.display(),
            parent.display()
        ),
    };
    // access(2) answers for this user, root included, and says EROFS on a read-only filesystem.
    if let Err(e) = rustix::fs::access(&dir, rustix::fs::Access::WRITE_OK) {
        bail!("cannot write {flag} {}: the directory {} is not writable ({e})", path.display(), dir.display());
    }
    if path.exists()
        && let Err(e) = rustix::fs::access(path, rustix::fs::Access::WRITE_OK)
    {
        bail!("cannot write {flag} {}: the file is not writable ({e})", path.display());
    }
    Ok(identity_of(path).unwrap_or_else(|| dir.join(name)))
}

/// The file a path names, as canonical as can be told before it exists: the canonical directory plus the file
/// name, or the canonical path of an existing file (which sees through links to the same file).
fn identity_of(path: &Path) -> Option<PathBuf> {
    if let Ok(canonical) = std::fs::canonicalize(path) {
        return Some(canonical);
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    Some(std::fs::canonicalize(parent).ok()?.join(path.file_name()?))
}

fn example(dir: &Path, flag: &str) -> String {
    let name = if flag == "--csv" { "intervals.csv" } else { "result.json" };
    dir.join(name).display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out<'a>(flag: &'static str, path: &'a Path) -> Output<'a> {
        Output { flag, path, in_place: flag == "--csv" }
    }

    #[test]
    fn directories_devices_missing_parents_and_duplicates_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("r.json");
        let err = |outputs: &[Output<'_>], inputs: &[&Path]| check_outputs(outputs, inputs).unwrap_err().to_string();
        assert!(err(&[out("--json", dir.path())], &[]).contains("is a directory"));
        assert!(err(&[out("--json", Path::new("/dev/null"))], &[]).contains("not a regular file"));
        check_outputs(&[out("--csv", Path::new("/dev/null"))], &[]).unwrap();
        assert!(err(&[out("--json", &dir.path().join("no/r.json"))], &[]).contains("does not exist"));
        let twice = err(&[out("--json", &file), out("--csv", &dir.path().join("./r.json"))], &[]);
        assert!(twice.contains("name the same file"), "{twice}");
        std::fs::write(&file, "[j]\n").unwrap();
        assert!(err(&[out("--json", &file)], &[&file]).contains("is an input"));
        check_outputs(&[out("--json", &file), out("--csv", &dir.path().join("r.csv"))], &[]).unwrap();
        assert!(!dir.path().join("r.csv").exists(), "checking creates nothing");
    }
}
