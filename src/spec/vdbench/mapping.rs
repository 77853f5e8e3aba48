//! vdbench records → `JobSpec`: one phase per rd and for-loop combination (two or more for `iorate=curve` and
//! `fwdrate=curve`: the maximum first, then one phase per curve point).
//!
//! Choices, each to reproduce what vdbench does rather than what streamcap would do by default:
//! - sd `threads=N` is vdbench's number of outstanding I/Os on the sd, issued by N threads that share one
//!   sequential position. One worker with `iodepth=N` reproduces that pattern exactly (one sequential stream, N
//!   in flight; `N` workers would each take their own slice) and is fio's `iodepth=N` too, so the same job in
//!   fio, flags and vdbench compares like with like. `rate_iops` is per worker, so it stays vdbench's total.
//! - vdbench does buffered I/O unless `openflags=o_direct`: raw phases say `direct=false` then, with a notice.
//! - vdbench's `elapsed` includes its warm-up; without `warmup=` the first interval is the warm-up and is left
//!   out of the totals. So `ramp` = warmup or one interval, and `runtime` = elapsed − ramp.
//! - vdbench paces `iorate=N` with exponential inter-arrival times: `rate_process = poisson`.
//! - vdbench's file-system defaults differ from streamcap's where it matters: `format=no`, `fileselect=
//!   sequential`; these are written out.
//! - Several wds in one rd (vdbench shares the sd's threads between them by `skew`) cannot be reproduced yet and
//!   are refused; several fwds in one rd map to the file-set workloads, with their `skew`.

mod fileset;
mod raw;
mod words;

use words::wildcard;

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::expand::{self, Loop};
use super::model::{Kind, Model, Record};
use super::values::{Item, Units, parse_items, short_number};
use super::{VdbError, Where};
use crate::spec::ReadOptions;
use crate::spec::fileset::{
    FileIo, FileOp, FilePlacement, FileSelect, FileSetPhaseSpec, FileSizeSpec, FileTreeSpec, FileWorkloadSpec,
    FormatMode, OpRateSpec,
};
use crate::spec::values::{ArrivalSpec, BlockSizeSpec, RwMode};
use crate::spec::{JobSpec, PhaseSpec, SpecOrigin};
use crate::units::Bytes;

/// vdbench's defaults (RD_entry, SD_entry, FsdEntry).
const DEFAULT_ELAPSED: Duration = Duration::from_secs(30);
const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);
const DEFAULT_SD_THREADS: u32 = 8;
const DEFAULT_CURVE: [f64; 6] = [10.0, 50.0, 70.0, 80.0, 90.0, 100.0];

/// Keywords parsed and then found to carry nothing streamcap does: refused with this reason.
fn unsupported(rec: &Record, canonical: &str, why: &str) -> Result<(), VdbError> {
    match rec.get(canonical) {
        Some(p) => Err(fail(rec, p, format!("{why} is not supported yet; remove {}= to run the rest", p.key))),
        None => Ok(()),
    }
}

fn fail(rec: &Record, p: &super::lexer::Param, message: String) -> VdbError {
    VdbError::keyword(&p.at, &p.key, Some(rec.label()), message)
}

fn items<'r>(
    rec: &'r Record,
    canonical: &str,
    units: Units,
) -> Result<Option<(Vec<Item>, &'r super::lexer::Param)>, VdbError> {
    let Some(p) = rec.get(canonical) else { return Ok(None) };
    let items = parse_items(&p.value, units).map_err(|m| fail(rec, p, m))?;
    Ok(Some((items, p)))
}

fn one_number(rec: &Record, canonical: &str, units: Units, expected: &str) -> Result<Option<f64>, VdbError> {
    match items(rec, canonical, units)? {
        None => Ok(None),
        Some((items, p)) => match items.as_slice() {
            [Item::Num(v)] => Ok(Some(*v)),
            _ => Err(fail(rec, p, format!("'{}' is not {expected}", super::lexer::unprotect(&p.value)))),
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

/// A time in seconds (`scale` 1e-3 for milliseconds), refused with the value when no Duration holds it: a float
/// past about 584 billion years, or below zero, would panic in `Duration::from_secs_f64`.
fn seconds(
    rec: &Record,
    canonical: &str,
    units: Units,
    scale: f64,
    expected: &str,
) -> Result<Option<Duration>, VdbError> {
    let Some(value) = one_number(rec, canonical, units, expected)? else { return Ok(None) };
    Duration::try_from_secs_f64(value * scale).map(Some).map_err(|_| {
        let p = rec.get(canonical).expect("just read");
        fail(rec, p, format!("'{}' is out of range: expected {expected}", p.value))
    })
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

fn words<'r>(rec: &'r Record, canonical: &str) -> Result<Option<(Vec<String>, &'r super::lexer::Param)>, VdbError> {
    Ok(items(rec, canonical, Units::Size)?.map(|(items, p)| (items.iter().map(Item::display).collect(), p)))
}

fn duration(
    rec: Option<&Record>,
    canonical: &str,
    over: Option<Duration>,
    default: Duration,
) -> Result<Duration, VdbError> {
    if let Some(d) = over {
        return Ok(d);
    }
    let Some(rec) = rec else { return Ok(default) };
    Ok(seconds(rec, canonical, Units::Time, 1.0, "a time such as 60, 90s, 10m or 2h")?.unwrap_or(default))
}

/// Run length of an rd, after the command line's overrides.
#[derive(Debug, Clone, Copy)]
struct Timing {
    runtime: Duration,
    ramp: Duration,
    interval: Duration,
}

fn timing(rd: &Record, options: &ReadOptions) -> Result<Timing, VdbError> {
    let elapsed = duration(Some(rd), "elapsed", options.elapsed, DEFAULT_ELAPSED)?;
    let interval = duration(Some(rd), "interval", options.interval, DEFAULT_INTERVAL)?;
    let warmup = duration(Some(rd), "warmup", options.warmup, Duration::ZERO)?;
    let problem = if interval.is_zero() {
        Some("interval must be above zero".to_string())
    } else if elapsed < interval * 2 {
        Some(format!(
            "elapsed ({}s) must be at least twice the interval ({}s): vdbench leaves the first interval out as warm-up",
            elapsed.as_secs_f64(),
            interval.as_secs_f64()
        ))
    } else if warmup >= elapsed {
        Some(format!("warmup ({}s) must be shorter than elapsed ({}s)", warmup.as_secs_f64(), elapsed.as_secs_f64()))
    } else {
        None
    };
    if let Some(message) = problem {
        return Err(VdbError::at(&rd.at, format!("{}: {message}", rd.label())));
    }
    // No warmup: vdbench excludes the first interval from the run's totals.
    let ramp = if warmup.is_zero() { interval } else { warmup };
    Ok(Timing { runtime: elapsed - ramp, ramp, interval })
}

/// `openflags=`: what streamcap can honour.
#[derive(Debug, Default, Clone, Copy)]
struct OpenFlags {
    direct: bool,
    sync: bool,
}

fn openflags(rec: &Record, into: &mut OpenFlags) -> Result<(), VdbError> {
    let Some((flags, p)) = words(rec, "openflags")? else { return Ok(()) };
    for flag in flags {
        match flag.to_ascii_lowercase().as_str() {
            "o_direct" | "directio" => into.direct = true,
            "o_sync" | "o_dsync" => into.sync = true,
            other => {
                return Err(fail(
                    rec,
                    p,
                    format!("openflags '{other}' is not supported; expected o_direct (or directio), o_sync or o_dsync"),
                ));
            }
        }
    }
    Ok(())
}

/// A rate: `max`, `curve` or operations per second.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Rate {
    Max,
    Curve,
    PerSecond(f64),
}

fn rate_of(item: &Item) -> Option<Rate> {
    match item {
        Item::Word(w) if w.eq_ignore_ascii_case("max") => Some(Rate::Max),
        Item::Word(w) if w.eq_ignore_ascii_case("curve") => Some(Rate::Curve),
        Item::Num(v) if *v > 0.0 => Some(Rate::PerSecond(*v)),
        _ => None,
    }
}

/// The rd's rate keyword (`iorate` or `fwdrate`) as a single value, or `None` when a loop carries it.
fn rd_rate(rd: &Record, canonical: &str) -> Result<Option<Rate>, VdbError> {
    let Some((items, p)) = items(rd, canonical, Units::Size)? else {
        let example = if canonical == "iorate" { "iorate=max" } else { "fwdrate=max" };
        return Err(VdbError::at(&rd.at, format!("{}: {canonical}= is missing; add {example}", rd.label())));
    };
    if items.len() > 1 {
        return Ok(None);
    }
    rate_of(&items[0])
        .map(Some)
        .ok_or_else(|| fail(rd, p, "expected max, curve or operations per second (e.g. 500)".into()))
}

fn curve(rd: &Record) -> Result<Vec<f64>, VdbError> {
    let Some((points, p)) = items(rd, "curve", Units::Size)? else { return Ok(DEFAULT_CURVE.to_vec()) };
    points
        .iter()
        .map(|i| match i {
            Item::Num(v) if *v > 0.0 && *v <= 100.0 => Ok(*v),
            _ => Err(fail(rd, p, "expected percentages of the maximum rate, as in curve=(10,50,90)".into())),
        })
        .collect()
}

fn stopcurve(rd: &Record) -> Result<Option<Duration>, VdbError> {
    seconds(rd, "stopcurve", Units::Size, 1e-3, "a response time in milliseconds (e.g. 5.0)")
}

struct Mapper<'a> {
    model: &'a Model,
    options: &'a ReadOptions,
    notices: Vec<String>,
    target: Option<(PathBuf, Where)>,
}

pub(super) fn map(model: &Model, options: &ReadOptions, root: &Path) -> Result<JobSpec, VdbError> {
    let mut m = Mapper { model, options, notices: Vec::new(), target: None };
    m.general()?;
    m.hosts()?;
    let rds: Vec<&Record> = model.of(Kind::Rd).collect();
    if rds.is_empty() {
        return Err(VdbError::at(
            &Where::File(root.to_path_buf()),
            "there is no rd= record, so vdbench would run nothing: add one, as in rd=rd1,wd=wd1,iorate=max,elapsed=60"
                .into(),
        ));
    }
    let file_system = model.of(Kind::Fsd).next().is_some() || model.of(Kind::Fwd).next().is_some();
    if file_system && (model.of(Kind::Sd).next().is_some() || model.of(Kind::Wd).next().is_some()) {
        return Err(VdbError::at(
            &Where::File(root.to_path_buf()),
            "the file has both raw (sd/wd) and file-system (fsd/fwd) records; vdbench runs one kind per file: split \
             it in two"
                .into(),
        ));
    }
    let mut phases = Vec::new();
    let mut interval = None;
    for rd in rds {
        let timing = timing(rd, options)?;
        interval.get_or_insert(timing.interval);
        if file_system {
            phases.extend(m.fileset_phases(rd, timing)?);
        } else {
            phases.extend(m.raw_phases(rd, timing)?);
        }
    }
    Ok(JobSpec {
        origin: SpecOrigin::Vdbench { path: root.to_path_buf() },
        target: m.target.map(|t| t.0),
        interval,
        phases,
        notices: m.notices,
    })
}

impl<'a> Mapper<'a> {
    /// General parameters: harmless ones become notices, ones that would change the meaning are refused.
    fn general(&mut self) -> Result<(), VdbError> {
        for (canonical, p) in &self.model.general {
            let value = super::lexer::unprotect(&p.value);
            let fails = |why: &str| {
                Err(VdbError::keyword(&p.at, &p.key, None, format!("{why} is not supported yet; remove the line")))
            };
            match *canonical {
                "validate" if value.eq_ignore_ascii_case("no") => {}
                "validate" => return fails("data validation (validate=)"),
                "concatenatesds" if value.eq_ignore_ascii_case("no") => {}
                "concatenatesds" => return fails("concatenating sds (concatenatesds=yes)"),
                "journal" => return fails("journaling (journal=)"),
                c if c.starts_with("dedup") => return fails("deduplicable data (dedup…=)"),
                "loop" => return fails("repeating the whole run (loop=)"),
                "startcmd" | "endcmd" => return fails("running commands from the parameter file (startcmd/endcmd)"),
                "compratio" => self.notices.push(format!(
                    "vdbench compratio={value} has no effect: streamcap does not shape its data for compression"
                )),
                other => self.notices.push(format!("vdbench {other}={value} has no effect in streamcap")),
            }
        }
        Ok(())
    }

    /// Only this host: `hd=localhost`, or hds without a remote `system=`.
    fn hosts(&mut self) -> Result<(), VdbError> {
        let hosts: Vec<&Record> = self.model.of(Kind::Hd).collect();
        for hd in &hosts {
            let local = |s: &str| matches!(s.to_ascii_lowercase().as_str(), "localhost" | "127.0.0.1" | "::1");
            if let Some(p) = hd.get("system")
                && !local(&super::lexer::unprotect(&p.value))
            {
                return Err(fail(
                    hd,
                    p,
                    "multi-host runs are not supported yet; remove the hd= records for other hosts".into(),
                ));
            }
            unsupported(hd, "clients", "several clients per host (clients=)")?;
            unsupported(hd, "mount", "mounting (mount=)")?;
            for keyword in ["vdbench", "user", "shell", "jvms"] {
                if hd.get(keyword).is_some() {
                    self.notices.push(format!("vdbench {}: {keyword}= has no effect in streamcap", hd.label()));
                }
            }
        }
        if hosts.len() > 1 {
            let second = hosts[1];
            return Err(VdbError::at(&second.at, format!("{}: multi-host runs are not supported yet", second.label())));
        }
        Ok(())
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

    fn set_target(&mut self, path: PathBuf, at: &Where, rec: &Record, key: &str) -> Result<(), VdbError> {
        match &self.target {
            Some((existing, _)) if *existing != path => Err(VdbError::keyword(
                at,
                key,
                Some(rec.label()),
                format!(
                    "this run uses {} but an earlier one uses {}: streamcap runs one target per job for now; put \
                     each target in its own parameter file",
                    path.display(),
                    existing.display()
                ),
            )),
            Some(_) => Ok(()),
            None => {
                self.target = Some((path, at.clone()));
                Ok(())
            }
        }
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
}
