//! Where a fio job's I/O goes: `filename` (`:` lists, a `/dev/…` device, absolute paths), `directory`,
//! `filename_format`, `nrfiles` and `file_service_type` become the target, the phase's file names and whether
//! the job's clones share their files. fio's default name `jobname.jobnum.filenum` gives each clone its own
//! files, written with streamcap's `{worker}` for `jobnum`.

use std::path::{Component, Path, PathBuf};

use super::engines::EngineUse;
use super::job::fail;
use super::mapping::Job;
use super::options::{OptionError, Said};
use crate::spec::{FileService, PhaseSpec};

/// More files than this per job clone are refused here, before any list of names is made; the jobs of one file
/// together may name no more either (see [`within_file_budget`]).
const MAX_FILES: u64 = 1 << 20;

/// Adds the job's files to the names the file's jobs have made so far, or says why there are too many: every
/// name is planned and opened, so a file of many jobs must not make millions of them between itself.
pub(super) fn within_file_budget(job: &Job, named: &mut u64) -> Result<(), OptionError> {
    if matches!(job.engine, EngineUse::FileOps(_)) {
        return Ok(()); // a file-set tree names its files as it makes them
    }
    *named = named.saturating_add(job.options.int("nrfiles").unwrap_or(1));
    if *named <= MAX_FILES {
        return Ok(());
    }
    Err(OptionError {
        at: job.at.clone(),
        message: format!(
            "job '{}': the jobs up to here name {} files together (nrfiles adds up across jobs), more than the \
             {MAX_FILES} streamcap plans from one file; use fewer files, or a file engine for many small files",
            job.name, *named
        ),
    })
}

pub(super) struct Files {
    pub target: Option<PathBuf>,
    pub target_is_device: bool,
    /// Files each clone works on.
    pub per_clone_files: u64,
    /// All clones use the same files.
    pub shared: bool,
}

/// filename / directory / filename_format / nrfiles / file_service_type → target, file names and sharing.
pub(super) fn map_files(job: &Job, single: bool, phase: &mut PhaseSpec) -> Result<Files, OptionError> {
    let o = &job.options;
    let mut target = None;
    if let Some(said) = o.get("directory") {
        if said.raw.contains(':') {
            return Err(fail(
                said,
                "directory",
                format!("'{}': several directories are not supported; give one", said.raw),
            ));
        }
        target = Some(PathBuf::from(said.raw.trim()));
    }
    let nrfiles = o.int("nrfiles").unwrap_or(1);
    if nrfiles == 0 || nrfiles > MAX_FILES {
        return Err(fail(
            o.get("nrfiles").expect("said"),
            "nrfiles",
            format!("'{nrfiles}' is not allowed; expected 1 to {MAX_FILES} (many small files: use a file engine)"),
        ));
    }
    if let Some(said) = o.get("file_service_type") {
        let kind = said.raw.split(':').next().unwrap_or("");
        let service: FileService = kind.parse().map_err(|_| {
            fail(
                said,
                "file_service_type",
                format!("'{}' is not supported; expected random, roundrobin or sequential", said.raw),
            )
        })?;
        phase.fio.file_service = Some(service);
    }
    if let Some(said) = o.get("filename") {
        return named_files(said, target, phase);
    }
    let format = o.text("filename_format").unwrap_or("$jobname.$jobnum.$filenum");
    let per_worker = format.contains("$jobnum");
    let jobs = o.int("numjobs").unwrap_or(1);
    // One job, one clone, one file: exactly streamcap's own data file, so say nothing.
    if single && nrfiles == 1 && jobs == 1 && o.get("filename_format").is_none() {
        return Ok(Files { target, target_is_device: false, per_clone_files: 1, shared: false });
    }
    let list = expand_names(job, format, nrfiles)?;
    let total_files = if per_worker { nrfiles.saturating_mul(jobs) } else { nrfiles };
    phase.files = Some(u32::try_from(total_files).unwrap_or(u32::MAX));
    phase.file_names = Some(list);
    Ok(Files { target, target_is_device: false, per_clone_files: nrfiles, shared: !per_worker })
}

/// The job's `nrfiles` names from `format`; fio's own format fails only on the job's name.
fn expand_names(job: &Job, format: &str, nrfiles: u64) -> Result<Vec<String>, OptionError> {
    let pieces = split_format(format, &job.name).map_err(|why| match job.options.get("filename_format") {
        Some(said) => fail(said, "filename_format", why),
        None => OptionError {
            at: job.at.clone(),
            message: format!(
                "job '{0}' cannot name its files: fio names them '{0}.0.0' and so on ($jobname.$jobnum.$filenum), \
                 which is not a file name inside the target directory; rename the job or give filename=",
                job.name
            ),
        },
    })?;
    Ok((0..nrfiles).map(|filenum| pieces.join(&filenum.to_string())).collect())
}

/// `filename`: a `:` list of names (absolute ones give the target directory), of devices, or /dev/null.
fn named_files(said: &Said, mut target: Option<PathBuf>, phase: &mut PhaseSpec) -> Result<Files, OptionError> {
    let names: Vec<&str> = said.raw.split(':').map(str::trim).filter(|n| !n.is_empty()).collect();
    if names.is_empty() {
        return Err(fail(said, "filename", "needs at least one name"));
    }
    if matches!(names.as_slice(), ["/dev/null" | "/dev/zero"]) {
        // Nothing is stored there: the job runs on the null engine (see durability.rs) over streamcap's own
        // (never written) data files, and names no target.
        return Ok(Files { target, target_is_device: false, per_clone_files: 1, shared: true });
    }
    if names.iter().any(|n| n.starts_with("/dev/")) {
        if let Some(file) = names.iter().find(|n| !n.starts_with("/dev/")) {
            return Err(fail(
                said,
                "filename",
                format!(
                    "'{}': {file} is not a device, and the others are; give a job devices or files, not both",
                    said.raw
                ),
            ));
        }
        // The names as the file gives them: `devices` maps them onto this machine's (or onto the TARGET given).
        phase.fio.devices = Some(names.iter().map(PathBuf::from).collect());
        let device = Some(PathBuf::from(names[0]));
        let per_clone_files = names.len() as u64;
        return Ok(Files { target: device, target_is_device: true, per_clone_files, shared: true });
    }
    let mut list = Vec::new();
    for name in &names {
        let path = Path::new(name);
        if !path.is_absolute() {
            list.push(name.to_string());
            continue;
        }
        let parent = path.parent().map(Path::to_path_buf).unwrap_or_default();
        if target.as_ref().is_some_and(|t| *t != parent) {
            return Err(fail(
                said,
                "filename",
                format!(
                    "'{}': files in different directories are not supported; streamcap works in one target directory",
                    said.raw
                ),
            ));
        }
        target = Some(parent);
        list.push(path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default());
    }
    phase.files = Some(list.len() as u32);
    phase.file_names = Some(list);
    Ok(Files { target, target_is_device: false, per_clone_files: names.len() as u64, shared: true })
}

/// fio's `$jobname`, `$jobnum` and `$filenum` in filename_format: the format with `$jobname` and `$jobnum`
/// (streamcap's `{worker}`) replaced, in pieces that `$filenum` goes between. Checked once, with file number 0:
/// a path component holding a number is never "." or "..", so no number makes a name good or bad.
fn split_format(format: &str, job: &str) -> Result<Vec<String>, String> {
    let mut pieces = vec![String::new()];
    let mut rest = format;
    while let Some(pos) = rest.find('$') {
        let piece = pieces.last_mut().expect("never empty");
        piece.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        let word_len = after.find(|c: char| !c.is_ascii_alphanumeric() && c != '_').unwrap_or(after.len());
        match &after[..word_len] {
            "jobname" => piece.push_str(job),
            "jobnum" => piece.push_str("{worker}"),
            "filenum" => pieces.push(String::new()),
            other => {
                return Err(format!("'{format}': ${other} is not supported; expected $jobname, $jobnum and $filenum"));
            }
        }
        rest = &after[word_len..];
    }
    pieces.last_mut().expect("never empty").push_str(rest);
    let first = pieces.join("0");
    let outside = Path::new(&first).components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir));
    if first.is_empty() || outside {
        return Err(format!("'{format}' gives '{first}', which is not a file name inside the target directory"));
    }
    Ok(pieces)
}
