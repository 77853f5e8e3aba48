//! Where a fio job's I/O goes: `filename` (`:` lists, a `/dev/…` device, absolute paths), `directory`,
//! `filename_format`, `nrfiles` and `file_service_type` become the target, the phase's file names and whether
//! the job's clones share their files. fio's default name `jobname.jobnum.filenum` gives each clone its own
//! files, written with streamcap's `{worker}` for `jobnum`.

use std::path::{Component, Path, PathBuf};

use super::job::fail;
use super::mapping::Job;
use super::options::{OptionError, Said};
use crate::spec::{FileService, PhaseSpec};

/// More files than this per job clone are refused here, before any list of names is made.
const MAX_FILES: u64 = 1 << 20;

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
        phase.file_service = Some(service);
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
    let mut list = Vec::new();
    for filenum in 0..nrfiles {
        let name = expand_format(format, &job.name, filenum).map_err(|why| match o.get("filename_format") {
            Some(said) => fail(said, "filename_format", why),
            // fio's own format fails only on the job's name ("[/data]", "[../x]").
            None => OptionError {
                at: job.at.clone(),
                message: format!(
                    "job '{0}' cannot name its files: fio names them '{0}.0.0' and so on ($jobname.$jobnum.$filenum), \
                     which is not a file name inside the target directory; rename the job or give filename=",
                    job.name
                ),
            },
        })?;
        list.push(name);
    }
    let total_files = if per_worker { nrfiles.saturating_mul(jobs) } else { nrfiles };
    phase.files = Some(u32::try_from(total_files).unwrap_or(u32::MAX));
    phase.file_names = Some(list);
    Ok(Files { target, target_is_device: false, per_clone_files: nrfiles, shared: !per_worker })
}

/// `filename`: a `:` list of names (absolute ones give the target directory), one device, or /dev/null.
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
        if names.len() > 1 {
            return Err(fail(
                said,
                "filename",
                format!("'{}': several devices in one job are not supported; give one device", said.raw),
            ));
        }
        let device = Some(PathBuf::from(names[0]));
        return Ok(Files { target: device, target_is_device: true, per_clone_files: 1, shared: true });
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

/// fio's `$jobname`, `$jobnum` and `$filenum` in filename_format; `$jobnum` becomes streamcap's `{worker}`.
fn expand_format(format: &str, job: &str, filenum: u64) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = format;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        let word_len = after.find(|c: char| !c.is_ascii_alphanumeric() && c != '_').unwrap_or(after.len());
        match &after[..word_len] {
            "jobname" => out.push_str(job),
            "jobnum" => out.push_str("{worker}"),
            "filenum" => out.push_str(&filenum.to_string()),
            other => {
                return Err(format!("'{format}': ${other} is not supported; expected $jobname, $jobnum and $filenum"));
            }
        }
        rest = &after[word_len..];
    }
    out.push_str(rest);
    let outside = Path::new(&out).components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir));
    if out.is_empty() || outside {
        return Err(format!("'{format}' gives '{out}', which is not a file name inside the target directory"));
    }
    Ok(out)
}
