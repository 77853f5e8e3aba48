//! vdbench records → `JobSpec`: one phase per rd and for-loop combination (two or more for `iorate=curve` and
//! `fwdrate=curve`: the maximum first, then one phase per curve point).
//!
//! Choices, each to reproduce what vdbench does rather than what streamcap would do by default:
//! - sd `threads=N` is vdbench's number of outstanding I/Os on the sd, issued by N threads that share one
//!   sequential position. One worker with `iodepth=N` reproduces that pattern exactly (one sequential stream, N
//!   in flight; `N` workers would each take their own slice) and is fio's `iodepth=N` too, so the same job in
//!   fio, flags and vdbench compares like with like.
//! - Several wds, sds or hosts in one rd become one phase with parts (`raw`): one part per host, wd and sd (vdbench's
//!   workload generators), each with its share of the run's skew, on workers as vdbench's threads are shared.
//! - vdbench does buffered I/O unless `openflags=o_direct`: raw phases say `direct=false` then, with a notice.
//! - vdbench measures whole intervals. With `warmup=` the warm-up runs before `elapsed` (`ramp` = warmup in whole
//!   intervals, at least one; `runtime` = elapsed); without it the first interval of `elapsed` is the warm-up, left
//!   out of the totals (`ramp` = one interval, `runtime` = elapsed − one interval).
//! - vdbench paces `iorate=N` with exponential inter-arrival times: `rate_process = poisson`.
//! - vdbench's file-system defaults differ from streamcap's where it matters: `format=no`, `fileselect=
//!   sequential`; these are written out.
//! - `pause=` after a run delays the next phase's start (`start-delay`), as vdbench sleeps between runs.

mod concat;
mod data;
mod fileset;
mod fileset_format;
mod fileset_loops;
mod format;
mod hosts;
mod luns;
mod raw;
mod raw_loops;
mod raw_wd;
mod timing;
mod validate;
mod wd_rates;
mod wd_streams;
mod words;

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::lexer::{Param, unprotect};
use super::model::{Kind, Model, Record};
use super::values::{Item, Units, parse_items};
use super::{Problems, VdbError, Where};
use crate::spec::ReadOptions;
use crate::spec::{JobSpec, PhaseSpec, SpecOrigin};
use hosts::Hosts;
use words::wildcard;

/// vdbench's defaults (RD_entry, SD_entry, FsdEntry).
const DEFAULT_ELAPSED: Duration = Duration::from_secs(30);
const DEFAULT_SD_THREADS: u32 = 8;

/// Keywords parsed and then found to carry nothing streamcap does: refused with this reason.
fn unsupported(rec: &Record, canonical: &str, why: &str) -> Result<(), VdbError> {
    match rec.get(canonical) {
        Some(p) => Err(fail(rec, p, format!("{why} is not supported; remove {}= to run the rest", p.key))),
        None => Ok(()),
    }
}

/// Dedup keywords an sd or fsd may carry in vdbench (a Dedup of its own, `Dedup.parseDedupParms` from
/// `SD_entry`/`FsdEntry`): streamcap reads them as general parameters only.
const DEDUP_PER_RECORD: &[(&str, &str)] = &[
    ("dedupratio", "a dedup ratio of an sd's or fsd's own (give dedupratio= as a general parameter)"),
    ("dedupsets", "dedup sets of an sd's or fsd's own (give dedupsets= as a general parameter)"),
    ("deduphotsets", "hot dedup sets (deduphotsets=)"),
    ("dedupflipflop", "dedup flip-flop (dedupflipflop=)"),
];

/// [`unsupported`] for a list of keywords and reasons.
fn unsupported_all(rec: &Record, list: &[(&str, &str)]) -> Result<(), VdbError> {
    list.iter().try_for_each(|(k, why)| unsupported(rec, k, why))
}

fn fail(rec: &Record, p: &Param, message: String) -> VdbError {
    VdbError::keyword(&p.at, &p.key, Some(rec.label()), message)
}

fn items<'r>(rec: &'r Record, canonical: &str, units: Units) -> Result<Option<(Vec<Item>, &'r Param)>, VdbError> {
    let Some(p) = rec.get(canonical) else { return Ok(None) };
    let items = parse_items(&p.value, units).map_err(|m| fail(rec, p, m))?;
    Ok(Some((items, p)))
}

fn one_number(rec: &Record, canonical: &str, units: Units, expected: &str) -> Result<Option<f64>, VdbError> {
    match items(rec, canonical, units)? {
        None => Ok(None),
        Some((items, p)) => match items.as_slice() {
            [Item::Num(v)] => Ok(Some(*v)),
            _ => Err(fail(rec, p, format!("'{}' is not {expected}", unprotect(&p.value)))),
        },
    }
}

fn whole(rec: &Record, canonical: &str, expected: &str) -> Result<Option<u64>, VdbError> {
    let value = one_number(rec, canonical, Units::Size, expected)?;
    match value {
        Some(v) if v.fract() != 0.0 || v > u32::MAX as f64 * 1024.0 => {
            let p = rec.get(canonical).expect("just read");
            Err(fail(rec, p, format!("'{}' is not {expected}", p.value)))
        }
        other => Ok(other.map(|v| v as u64)),
    }
}

fn percentage(rec: &Record, canonical: &str) -> Result<Option<u8>, VdbError> {
    match one_number(rec, canonical, Units::Size, "a percentage from 0 to 100")? {
        Some(v) if !(0.0..=100.0).contains(&v) => {
            let p = rec.get(canonical).expect("just read");
            Err(fail(rec, p, format!("{v} is not a percentage from 0 to 100")))
        }
        other => Ok(other.map(|v| v.round() as u8)),
    }
}

fn words<'r>(rec: &'r Record, canonical: &str) -> Result<Option<(Vec<String>, &'r Param)>, VdbError> {
    Ok(items(rec, canonical, Units::Size)?.map(|(items, p)| (items.iter().map(Item::display).collect(), p)))
}

/// `openflags=`: what streamcap can honour.
#[derive(Debug, Default, Clone, Copy)]
struct OpenFlags {
    direct: bool,
    sync: bool,
    /// fsync before each file is closed (vdbench `fsync`): for raw runs, an fsync of each written file at the
    /// end of the run.
    fsync: bool,
}

fn openflags(rec: &Record, into: &mut OpenFlags) -> Result<(), VdbError> {
    let Some((flags, p)) = words(rec, "openflags")? else { return Ok(()) };
    for flag in flags {
        match flag.to_ascii_lowercase().as_str() {
            "o_direct" | "directio" => into.direct = true,
            "o_sync" | "o_dsync" | "o_rsync" => into.sync = true,
            "fsync" => into.fsync = true,
            other => {
                return Err(fail(
                    rec,
                    p,
                    format!(
                        "openflags '{other}' is not supported; expected o_direct (or directio), o_sync, o_dsync, \
                         o_rsync or fsync"
                    ),
                ));
            }
        }
    }
    Ok(())
}

struct Mapper<'a> {
    model: &'a Model,
    options: &'a ReadOptions,
    notices: Vec<String>,
    hosts: Hosts,
    /// The target of a file-system job (the first anchor).
    target: Option<PathBuf>,
    /// `concatenatesds=yes`: each wd runs on its sds as one lun (`concat`).
    concatenate: bool,
    /// Where each sd starts in the concatenations it is in (vdbench allows only one place).
    concat_starts: Vec<(String, u64)>,
    /// `formatsds=yes`, where said: a format phase before the first rd (`format`).
    format_sds: Option<Param>,
    /// `abort_failed_skew=`: percentage points a workload's share may be off its skew before the run fails.
    skew_limit: Option<f64>,
}

impl<'a> Mapper<'a> {
    fn new(model: &'a Model, options: &'a ReadOptions, notices: Vec<String>, hosts: Hosts) -> Self {
        let (target, concatenate, concat_starts, format_sds, skew_limit) = (None, false, Vec::new(), None, None);
        Mapper { model, options, notices, hosts, target, concatenate, concat_starts, format_sds, skew_limit }
    }
}

/// Maps the records into a job; every problem goes to `problems` (one per record or rd), and `None` comes back
/// when there was any.
pub(super) fn map(model: &Model, options: &ReadOptions, root: &Path, problems: &mut Problems) -> Option<JobSpec> {
    let file_level = |m: &str| VdbError::at(&Where::File(root.to_path_buf()), m.to_string());
    // A refused hd still names a host, so that `host=` naming it is not refused too.
    let mut hosts = problems.take(hosts::resolve(model, options)).unwrap_or_else(|| Hosts::named(model));
    let notices = std::mem::take(&mut hosts.notices);
    let mut m = Mapper::new(model, options, notices, hosts);
    m.general(problems);
    let rds: Vec<&Record> = model.of(Kind::Rd).collect();
    if rds.is_empty() {
        problems.push(file_level(
            "there is no rd= record, so vdbench would run nothing: add one, as in rd=rd1,wd=wd1,iorate=max,elapsed=60",
        ));
        return None;
    }
    let file_system = match file_kind(model) {
        Ok(file_system) => file_system,
        Err(why) => {
            problems.push(file_level(why));
            return None;
        }
    };
    let mut phases: Vec<PhaseSpec> = Vec::new();
    let mut interval = None;
    // vdbench sleeps `pause=` seconds after each run of an rd, before the next run (of any rd).
    let mut pending: Option<Duration> = None;
    for &rd in &rds {
        let Some(timing) = problems.take(timing::timing(rd, options)) else { continue };
        interval.get_or_insert(timing.interval);
        let mapped = if file_system { m.fileset_phases(rd, timing) } else { m.raw_phases(rd, timing) };
        let Some(mapped) = problems.take(mapped) else { continue };
        if phases.len() + mapped.len() > crate::limits::MAX_PHASES {
            problems.push(file_level(&crate::limits::too_many_phases(phases.len() + mapped.len())));
            return None;
        }
        for phase in mapped {
            let start_delay = if phases.is_empty() { None } else { pending };
            phases.push(PhaseSpec { start_delay, ..phase });
            pending = timing.pause;
        }
    }
    m.insert_format(&rds, file_system, &mut phases, problems);
    validation(model, m.concatenate, &mut phases, file_system, root, problems);
    m.skew_limit(&mut phases, file_system);
    if let Some(general) = problems.take(data::data_shape(model)) {
        phases.iter_mut().for_each(|p| p.data = data::merge(general.as_ref(), p.data.take()));
    }
    let target = if file_system {
        m.target.take()
    } else {
        problems.take(luns::settle(&mut phases, &mut m.notices, root, options.target.as_deref()))?
    };
    Some(JobSpec {
        origin: SpecOrigin::Vdbench { path: root.to_path_buf(), ranks: m.hosts.ranks() },
        target,
        interval,
        phases,
        notices: m.notices,
    })
}

/// vdbench's Data Validation (`validate=`) and journals (`journal=`, which turn validation on too) on the
/// phases; refused with `concatenatesds=yes`, as vdbench refuses them.
fn validation(
    model: &Model,
    concatenate: bool,
    phases: &mut [PhaseSpec],
    file_system: bool,
    root: &Path,
    problems: &mut Problems,
) {
    let journal = problems.take(validate::journal(model)).flatten();
    let backlog = problems.take(validate::validation(model)).flatten();
    if concatenate && (backlog.is_some() || journal.is_some()) {
        problems.push(VdbError::at(
            &Where::File(root.to_path_buf()),
            "vdbench refuses Data Validation (validate=) with concatenatesds=yes, and so does streamcap: remove one"
                .to_string(),
        ));
    }
    if backlog.is_some() || journal.is_some() {
        problems.take(validate::apply((backlog.flatten(), journal), phases, file_system, root));
    }
}

/// Whether the file is a file-system one (fsd/fwd) rather than raw (sd/wd); why it can be neither.
fn file_kind(model: &Model) -> Result<bool, &'static str> {
    let file_system = model.of(Kind::Fsd).next().is_some() || model.of(Kind::Fwd).next().is_some();
    if file_system && (model.of(Kind::Sd).next().is_some() || model.of(Kind::Wd).next().is_some()) {
        return Err("the file has both raw (sd/wd) and file-system (fsd/fwd) records; vdbench runs one kind per \
                    file: split it in two");
    }
    Ok(file_system)
}

impl<'a> Mapper<'a> {
    /// General parameters: harmless ones become notices, ones that would change the meaning are refused.
    fn general(&mut self, problems: &mut Problems) {
        for (canonical, p) in &self.model.general {
            let value = unprotect(&p.value);
            let refuse = |why: &str| VdbError::keyword(&p.at, &p.key, None, format!("{why}; remove the line"));
            let yes = value.to_ascii_lowercase().starts_with('y');
            match *canonical {
                "concatenatesds" | "formatsds" if value.to_ascii_lowercase().starts_with('n') => {}
                // Read by `validate::validation` and `validate::journal` once the phases are known.
                "validate" | "journal" => {}
                "concatenatesds" if yes => self.concatenate = true,
                "concatenatesds" => problems.push(refuse("concatenatesds takes yes or no, as in vdbench")),
                "formatsds" if yes => self.format_sds = Some(p.clone()),
                "formatsds" => problems.push(refuse("formatsds takes yes or no, as in vdbench")),
                // Read by `format` when formatsds=yes.
                "formatxfersize" => {}
                // Read by `data::data_shape` once the phases are known.
                c if data::is_shape_key(c) => {}
                // vdbench's default (Dedup.java: dedup_across = true): sets shared by every sd, as streamcap's are.
                "dedupacross" if yes => {}
                c if c.starts_with("dedup") => problems.push(refuse(
                    "hot dedup sets, flip-flop, dedupacross=no and dedupmaxkey= are not supported yet; \
                     dedupratio, dedupunit, dedupsets and dedupacross=yes are",
                )),
                "loop" => problems.push(refuse("repeating the whole run (loop=) is not supported")),
                "startcmd" | "endcmd" => {
                    problems.push(refuse("running commands from the parameter file (startcmd/endcmd) is not supported"))
                }
                "patterns" => problems.push(refuse(
                    "data patterns from a file (pattern=) are not supported: streamcap writes its own (see \
                     compratio and dedupratio)",
                )),
                "abort_failed_skew" => match value.parse::<f64>() {
                    Ok(limit) if limit.is_finite() && limit >= 0.0 => self.skew_limit = Some(limit),
                    _ => problems.push(VdbError::keyword(
                        &p.at,
                        &p.key,
                        None,
                        format!(
                            "abort_failed_skew={value} is not a number of percent: give one, as in abort_failed_skew=2"
                        ),
                    )),
                },
                "create_anchors" if yes => self.notices.push(
                    "vdbench create_anchors=yes: streamcap creates only its own directory inside an anchor, which \
                     must exist"
                        .into(),
                ),
                other => self.notices.push(format!("vdbench {other}={value} has no effect in streamcap")),
            }
        }
    }

    /// formatsds=yes: vdbench's format run before the first rd (raw files; a notice on file-system ones), and
    /// formatxfersize= without it, which sizes only vdbench's own file creation.
    fn insert_format(
        &mut self,
        rds: &[&Record],
        file_system: bool,
        phases: &mut Vec<PhaseSpec>,
        problems: &mut Problems,
    ) {
        let sizes = self.model.general.iter().any(|(c, _)| *c == "formatxfersize");
        match self.format_sds.take() {
            Some(_) if file_system => self.notice(
                "vdbench formatsds=yes formats sds only and has no effect on file-system runs: the rd's format= \
                 formats fsds"
                    .into(),
            ),
            Some(said) => {
                if let Some(format) = problems.take(self.format_phase(rds, &said)) {
                    phases.insert(0, PhaseSpec { start_delay: None, ..format });
                }
            }
            None if sizes => self.notice(
                "vdbench formatxfersize= has no effect without formatsds=yes: streamcap lays out the files it \
                 creates itself"
                    .into(),
            ),
            None => {}
        }
    }

    /// `abort_failed_skew=` on every raw phase (the skew check after each run of an rd, `results::skew`); the
    /// check of fwds' skew is not built yet, so a file-system file gets a notice that it has no effect.
    fn skew_limit(&mut self, phases: &mut [PhaseSpec], file_system: bool) {
        let Some(limit) = self.skew_limit else { return };
        if file_system {
            self.notices.push(format!(
                "vdbench abort_failed_skew={limit} has no effect on fwds in streamcap yet: their observed skew is \
                 not checked"
            ));
            return;
        }
        phases.iter_mut().for_each(|phase| phase.vdbench.skew_limit = Some(limit));
    }

    /// `H:` → the directory given with `--anchor H:=DIR`; a Windows path below it keeps its tail.
    fn map_path(&mut self, written: &str) -> Option<PathBuf> {
        let norm = |s: &str| s.trim_end_matches(':').to_ascii_lowercase();
        for (name, dir) in &self.options.anchors {
            let name_len = name.trim_end_matches(':').len();
            let Some(head) = written.get(..name_len) else { continue };
            if norm(head) != norm(name) {
                continue;
            }
            let tail = written[name_len..].trim_start_matches(':');
            if !(tail.is_empty() || tail.starts_with(['\\', '/'])) {
                continue;
            }
            let tail = tail.replace('\\', "/");
            let mapped = dir.join(tail.trim_start_matches('/'));
            let notice = format!("vdbench anchor {written} is {} (--anchor)", mapped.display());
            if !self.notices.contains(&notice) {
                self.notices.push(notice);
            }
            return Some(mapped);
        }
        None
    }

    /// Records of `kind` named by the rd's or a workload's `keyword=` (lists, name ranges, `*` wildcards).
    fn named(&self, rec: &Record, keyword: &str, kind: Kind) -> Result<Vec<&'a Record>, VdbError> {
        let Some((names, p)) = words(rec, keyword)? else {
            return Err(VdbError::at(
                &rec.at,
                format!("{}: {keyword}= is missing: say which {keyword} to use", rec.label()),
            ));
        };
        let model: &'a Model = self.model;
        let mut out: Vec<&Record> = Vec::new();
        for name in &names {
            let found: Vec<&Record> = model.of(kind).filter(|r| wildcard(name, &r.name)).collect();
            if found.is_empty() {
                return Err(fail(rec, p, format!("there is no {keyword}={name}")));
            }
            for r in found {
                if !out.iter().any(|o| std::ptr::eq(*o, r)) {
                    out.push(r);
                }
            }
        }
        Ok(out)
    }

    /// Refuses the first of `keywords` that `rec` has, with `why`.
    fn refuse_keywords(rec: &Record, keywords: &[&str], why: &str) -> Result<(), VdbError> {
        match keywords.iter().find_map(|k| rec.get(k)) {
            Some(p) => Err(fail(rec, p, why.to_string())),
            None => Ok(()),
        }
    }

    fn notice(&mut self, text: String) {
        if !self.notices.contains(&text) {
            self.notices.push(text);
        }
    }
}
