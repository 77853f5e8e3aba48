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
    Ok(one_number(rec, canonical, Units::Time, "a time such as 60, 90s, 10m or 2h")?
        .map(Duration::from_secs_f64)
        .unwrap_or(default))
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
    Ok(one_number(rd, "stopcurve", Units::Size, "a response time in milliseconds (e.g. 5.0)")?
        .map(|ms| Duration::from_secs_f64(ms / 1000.0)))
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

/// vdbench's simple wildcard: `*` matches any run of characters.
fn wildcard(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, rest)) => {
            let Some(after) = name.strip_prefix(head) else { return false };
            (0..=after.len()).filter(|&i| after.is_char_boundary(i)).any(|i| wildcard(rest, &after[i..]))
        }
    }
}

/// vdbench's `seekpct`: 0/`sequential` → 0, 100/`random` → 100, between: the percentage of random seeks.
fn seekpct(item: &Item) -> Result<u8, String> {
    let expected = "expected 0 or sequential, 100 or random, or a percentage of random seeks";
    match item {
        Item::Num(v) if (0.0..=100.0).contains(v) => Ok(v.round() as u8),
        Item::Word(w) if w.eq_ignore_ascii_case("eof") => {
            Err("seekpct=eof (sequential until the end, then stop) is not supported yet".into())
        }
        Item::Word(w) if !w.is_empty() && "sequential".starts_with(&w.to_ascii_lowercase()) => Ok(0),
        Item::Word(w) if !w.is_empty() && "random".starts_with(&w.to_ascii_lowercase()) => Ok(100),
        _ => Err(format!("'{}': {expected}", item.display())),
    }
}

fn bytes(v: f64) -> Result<Bytes, String> {
    if v.fract() != 0.0 || v <= 0.0 || v > u64::MAX as f64 {
        return Err(format!("{v} is not a whole number of bytes above zero"));
    }
    Ok(Bytes(v as u64))
}

/// `xfersize=4k`, weighted `(4k,50,8k,50)` or `(min,max,align)`.
fn xfersize(items: &[Item], raw: bool) -> Result<(BlockSizeSpec, Option<Bytes>), String> {
    let nums: Vec<f64> = items
        .iter()
        .map(|i| match i {
            Item::Num(v) => Ok(*v),
            other => Err(format!("'{}' is not a transfer size", other.display())),
        })
        .collect::<Result<_, _>>()?;
    match nums.as_slice() {
        [one] => Ok((BlockSizeSpec::Fixed(bytes(*one)?), None)),
        [min, max, align] if raw && *align > 0.0 => {
            if min >= max || align % 512.0 != 0.0 {
                return Err("(min,max,align) needs min below max and align a multiple of 512".into());
            }
            Ok((BlockSizeSpec::Range(bytes(*min)?, bytes(*max)?), Some(bytes(*align)?)))
        }
        pairs if pairs.len() % 2 == 0 => {
            let mut entries = Vec::new();
            for pair in pairs.chunks(2) {
                if pair[1].fract() != 0.0 {
                    return Err(format!("weight {} is not a whole percentage", pair[1]));
                }
                entries.push((bytes(pair[0])?, Some(pair[1] as u32)));
            }
            let total: u32 = entries.iter().filter_map(|e| e.1).sum();
            if total != 100 {
                return Err(format!("the weights add up to {total}; they must add up to 100, as in (4k,50,8k,50)"));
            }
            Ok((BlockSizeSpec::Split(entries), None))
        }
        _ => Err("expected a size (4k), sizes with weights (4k,50,8k,50) or (min,max,align)".into()),
    }
}

/// fsd `sizes=16k`, weighted `(16k,80,1m,20)` or a range `(min,max,0)`.
fn file_sizes(items: &[Item]) -> Result<FileSizeSpec, String> {
    let nums: Vec<f64> = items
        .iter()
        .map(|i| match i {
            Item::Num(v) => Ok(*v),
            other => Err(format!("'{}' is not a file size", other.display())),
        })
        .collect::<Result<_, _>>()?;
    match nums.as_slice() {
        [one] => Ok(FileSizeSpec::Fixed(bytes(*one)?)),
        [_, zero] if *zero == 0.0 => {
            Err("sizes=(n,0) (random sizes around an average) is not supported yet; use (min,max,0)".into())
        }
        [min, max, zero] if *zero == 0.0 => {
            if min > max {
                return Err("(min,max,0) needs min below max".into());
            }
            Ok(FileSizeSpec::Range(bytes(*min)?, bytes(*max)?))
        }
        pairs if pairs.len() % 2 == 0 => {
            let entries: Vec<(Bytes, f64)> =
                pairs.chunks(2).map(|p| Ok((bytes(p[0])?, p[1]))).collect::<Result<_, String>>()?;
            let total: f64 = entries.iter().map(|e| e.1).sum();
            if (total - 100.0).abs() > 0.01 {
                return Err(format!("the weights add up to {total}; they must add up to 100, as in (16k,80,1m,20)"));
            }
            Ok(FileSizeSpec::Weighted(entries))
        }
        _ => Err("expected a size (16k), sizes with weights (16k,80,1m,20) or a range (min,max,0)".into()),
    }
}

fn file_io(words: &[String]) -> Result<FileIo, String> {
    match words {
        [one] if !one.is_empty() && "random".starts_with(&one.to_ascii_lowercase()) => Ok(FileIo::Random),
        [one] if !one.is_empty() && "sequential".starts_with(&one.to_ascii_lowercase()) => Ok(FileIo::Sequential),
        [_, second] => Err(format!("fileio with '{second}' (shared files, delete before write) is not supported yet")),
        _ => Err("expected random or sequential".into()),
    }
}

fn file_select(words: &[String]) -> Result<FileSelect, String> {
    let (mut random, mut once) = (false, false);
    for w in words {
        let w = w.to_ascii_lowercase();
        match w.as_str() {
            "once" => once = true,
            "skewed" | "poisson" => {
                return Err(format!(
                    "fileselect={w} (vdbench's Poisson-skewed choice) is not supported yet: streamcap's skew is a \
                     Zipf distribution, which would change the result"
                ));
            }
            _ if !w.is_empty() && "random".starts_with(&w) => random = true,
            _ if !w.is_empty() && "sequential".starts_with(&w) => random = false,
            _ => return Err(format!("'{w}': expected random, sequential or (sequential,once)")),
        }
    }
    match (random, once) {
        (true, true) => Err("fileselect=(random,once) is not supported yet; use (sequential,once)".into()),
        (_, true) => Ok(FileSelect::Once),
        (true, false) => Ok(FileSelect::Random),
        (false, false) => Ok(FileSelect::Sequential),
    }
}

fn loop_num(l: &Loop, item: &Item, rd: &Record) -> Result<f64, VdbError> {
    match item {
        Item::Num(v) => Ok(*v),
        other => Err(VdbError::keyword(
            &l.at,
            &l.written,
            Some(rd.label()),
            format!("'{}' is not a number", other.display()),
        )),
    }
}

fn loop_err(l: &Loop, rd: &Record, message: String) -> VdbError {
    VdbError::keyword(&l.at, &l.written, Some(rd.label()), message)
}

/// What one raw run asks, once the loop values of its combination are in.
#[derive(Debug, Clone)]
struct RawRun {
    xfer: BlockSizeSpec,
    align: Option<Bytes>,
    rdpct: u8,
    seek: u8,
    threads: u32,
    rate: Option<Rate>,
}

/// What every run of a raw rd shares.
#[derive(Debug, Clone)]
struct RawCommon {
    size: Option<Bytes>,
    offset: Option<Bytes>,
    flags: OpenFlags,
    io_size: Option<Bytes>,
    arrival: ArrivalSpec,
    curve: Vec<f64>,
    stop: Option<Duration>,
    timing: Timing,
}

fn raw_phase(name: String, run: &RawRun, c: &RawCommon) -> PhaseSpec {
    let rw = match (run.seek, run.rdpct) {
        (0, 100) => RwMode::Read,
        (0, 0) => RwMode::Write,
        (0, _) => RwMode::ReadWrite,
        (_, 100) => RwMode::RandRead,
        (_, 0) => RwMode::RandWrite,
        _ => RwMode::RandRw,
    };
    PhaseSpec {
        name: Some(name),
        rw: Some(rw),
        rdpct: rw.is_mixed().then_some(run.rdpct),
        bs: Some(run.xfer.clone()),
        align: run.align,
        size: c.size,
        offset: c.offset.map(crate::spec::SizeOrPercent::Bytes),
        jobs: Some(1),
        iodepth: Some(run.threads),
        runtime: Some(c.timing.runtime),
        ramp: Some(c.timing.ramp),
        io_size: c.io_size,
        direct: Some(c.flags.direct),
        sync_writes: c.flags.sync.then_some(true),
        percentage_random: (run.seek > 0 && run.seek < 100).then_some(run.seek),
        ..PhaseSpec::default()
    }
}

/// One phase, or a curve's phases: the maximum first, then one per point.
fn rated<T>(
    name: String,
    rate: Rate,
    c_curve: &[f64],
    stop: Option<Duration>,
    label: &str,
    mut make: impl FnMut(String, Option<Rate>, Option<f64>) -> T,
    with_stop: impl Fn(&mut T, Option<Duration>),
) -> Vec<T> {
    match rate {
        Rate::Curve => {
            let mut phases = vec![make(format!("{name} {label}=max"), Some(Rate::Max), None)];
            for &pct in c_curve {
                let mut phase = make(format!("{name} {label}={}%", short_number(pct)), None, Some(pct));
                with_stop(&mut phase, stop);
                phases.push(phase);
            }
            phases
        }
        other => vec![make(name, Some(other), None)],
    }
}

impl<'a> Mapper<'a> {
    fn refuse_keywords(rd: &Record, keywords: &[&str], why: &str) -> Result<(), VdbError> {
        for k in keywords {
            if let Some(p) = rd.get(k) {
                return Err(fail(rd, p, why.to_string()));
            }
        }
        Ok(())
    }

    fn local_host(&self, rec: &Record) -> Result<(), VdbError> {
        let Some((names, p)) = words(rec, "host")? else { return Ok(()) };
        for name in names {
            let known = name == "*"
                || name.eq_ignore_ascii_case("localhost")
                || self.model.of(Kind::Hd).any(|h| wildcard(&name, &h.name));
            if !known {
                return Err(fail(rec, p, format!("there is no hd={name}; multi-host runs are not supported yet")));
            }
        }
        Ok(())
    }

    fn raw_phases(&mut self, rd: &Record, timing: Timing) -> Result<Vec<PhaseSpec>, VdbError> {
        Self::refuse_keywords(
            rd,
            &["fsd", "fwd", "fwdrate", "format", "operations"],
            "this is a file-system keyword, but this rd runs a raw workload (wd=)",
        )?;
        for (k, why) in [
            ("maxdataread", "stopping after an amount read (maxdataread=)"),
            ("maxdatawritten", "stopping after an amount written (maxdatawritten=)"),
            ("replay", "replaying an I/O trace (replay=)"),
            ("pause", "pausing after a run (pause=)"),
            ("startcmd", "running commands (startcmd=)"),
            ("endcmd", "running commands (endcmd=)"),
            ("mount", "mounting (mount=)"),
        ] {
            unsupported(rd, k, why)?;
        }
        let wds = self.named(rd, "wd", Kind::Wd)?;
        if wds.len() > 1 {
            let p = rd.get("wd").expect("named() read it");
            let names: Vec<&str> = wds.iter().map(|w| w.name.as_str()).collect();
            return Err(fail(
                rd,
                p,
                format!(
                    "this rd runs {} workloads together ({}): streamcap cannot yet share an sd's threads and \
                     operations between workloads as vdbench does (skew); give each workload its own rd",
                    wds.len(),
                    names.join(", ")
                ),
            ));
        }
        let wd = wds[0];
        for (k, why) in [
            ("range", "a part of the sd (range=)"),
            ("hotband", "hot bands (hotband=)"),
            ("stride", "strides (stride=)"),
            ("priority", "workload priorities (priority=)"),
            ("iorate", "a workload's own rate (wd iorate=)"),
            ("threads", "threads per workload (wd threads=, with concatenatesds)"),
            ("streams", "sequential streams (streams=)"),
            ("user", "user-written workloads (user=)"),
        ] {
            unsupported(wd, k, why)?;
        }
        for k in ["rhpct", "whpct"] {
            if percentage(wd, k)?.is_some_and(|v| v > 0) {
                let p = wd.get(k).expect("just read");
                return Err(fail(
                    wd,
                    p,
                    "cache hit percentages (rhpct/whpct) are not supported yet; remove them".into(),
                ));
            }
        }
        if let Some(skew) = one_number(wd, "skew", Units::Size, "a percentage")?
            && skew != 100.0
        {
            let p = wd.get("skew").expect("just read");
            return Err(fail(wd, p, "with one workload in the rd, skew can only be 100".into()));
        }
        self.local_host(wd)?;
        let sds =
            if rd.get("sd").is_some() { self.named(rd, "sd", Kind::Sd)? } else { self.named(wd, "sd", Kind::Sd)? };
        if sds.len() > 1 {
            let second = sds[1];
            let at = second.get("lun").map_or(&second.at, |p| &p.at);
            let names: Vec<&str> = sds.iter().map(|s| s.name.as_str()).collect();
            return Err(VdbError::keyword(
                at,
                "lun",
                Some(second.label()),
                format!(
                    "{} uses several sds ({}): streamcap runs one target per job for now; give the run one sd",
                    wd.label(),
                    names.join(", ")
                ),
            ));
        }
        let sd = sds[0];
        for (k, why) in [
            ("count", "repeated sds (count=)"),
            ("journal", "journaling (journal=)"),
            ("range", "a part of the lun (range=)"),
        ] {
            unsupported(sd, k, why)?;
        }
        if sd.get("hitarea").is_some() {
            self.notices.push(format!("vdbench {}: hitarea= has no effect without rhpct/whpct", sd.label()));
        }
        self.local_host(sd)?;
        let lun = sd.get("lun").ok_or_else(|| {
            VdbError::at(&sd.at, format!("{}: lun= is missing: name the file or block device to test", sd.label()))
        })?;
        let written = super::lexer::unprotect(&lun.value);
        let path = self.map_path(&written).unwrap_or_else(|| PathBuf::from(&written));
        self.set_target(path, &lun.at, sd, &lun.key)?;

        let size_of = |rec: &Record, k: &str| -> Result<Option<Bytes>, VdbError> {
            match one_number(rec, k, Units::Size, "a size such as 1g")? {
                None => Ok(None),
                Some(v) => bytes(v).map(Some).map_err(|m| fail(rec, rec.get(k).expect("just read"), m)),
            }
        };
        let mut flags = OpenFlags::default();
        for rec in [sd, wd, rd] {
            openflags(rec, &mut flags)?;
        }
        if !flags.direct {
            let notice = "vdbench reads and writes through the page cache unless openflags=o_direct; this job does \
                          the same (add openflags=o_direct to the sd to bypass the cache)"
                .to_string();
            if !self.notices.contains(&notice) {
                self.notices.push(notice);
            }
        }
        let threads = whole(sd, "threads", "a number of threads")?.unwrap_or(DEFAULT_SD_THREADS as u64);
        let rdpct = match (percentage(wd, "rdpct")?, percentage(wd, "wrpct")?) {
            (Some(r), _) => r,
            (None, Some(w)) => 100 - w,
            (None, None) => 100,
        };
        let seek = match items(wd, "seekpct", Units::Size)? {
            None => 100,
            Some((items, p)) => match items.as_slice() {
                [one] => seekpct(one).map_err(|m| fail(wd, p, m))?,
                _ => return Err(fail(wd, p, "poisson seek distributions are not supported yet".into())),
            },
        };
        let (xfer, align) = match items(wd, "xfersize", Units::Size)? {
            None => (BlockSizeSpec::Fixed(Bytes::kib(4)), None),
            Some((items, p)) => xfersize(&items, true).map_err(|m| fail(wd, p, m))?,
        };
        let align = align.or(size_of(sd, "align")?);
        let arrival = match words(rd, "distribution")? {
            None => ArrivalSpec::Poisson,
            Some((w, p)) => match w.first().map(|w| w.to_ascii_lowercase()).as_deref() {
                Some("exponential") if w.len() == 1 => ArrivalSpec::Poisson,
                Some("deterministic") if w.len() == 1 => ArrivalSpec::Linear,
                _ => {
                    return Err(fail(
                        rd,
                        p,
                        "expected exponential or deterministic (uniform and variable arrivals are not supported yet)"
                            .into(),
                    ));
                }
            },
        };
        let io_size = match one_number(rd, "maxdata", Units::Size, "an amount such as 100g")? {
            Some(v) if v < 100.0 => {
                let p = rd.get("maxdata").expect("just read");
                return Err(fail(rd, p, "maxdata below 100 (a multiple of the lun size) is not supported yet".into()));
            }
            Some(v) => Some(bytes(v).map_err(|m| fail(rd, rd.get("maxdata").expect("just read"), m))?),
            None => None,
        };
        let common = RawCommon {
            size: size_of(sd, "size")?,
            offset: size_of(sd, "offset")?,
            flags,
            io_size,
            arrival,
            curve: curve(rd)?,
            stop: stopcurve(rd)?,
            timing,
        };
        let base = RawRun { xfer, align, rdpct, seek, threads: threads as u32, rate: rd_rate(rd, "iorate")? };

        let loops = expand::loops(rd)?;
        let mut phases = Vec::new();
        for combination in expand::combinations(&loops, rd)? {
            let mut run = base.clone();
            for (l, item) in loops.iter().zip(&combination) {
                match l.keyword {
                    "forxfersize" => {
                        run.xfer = BlockSizeSpec::Fixed(bytes(loop_num(l, item, rd)?).map_err(|m| loop_err(l, rd, m))?);
                        run.align = None;
                    }
                    "forthreads" => {
                        let v = loop_num(l, item, rd)?;
                        if v < 1.0 || v.fract() != 0.0 || v > 4096.0 {
                            return Err(loop_err(l, rd, format!("{v} is not a thread count from 1 to 4096")));
                        }
                        run.threads = v as u32;
                    }
                    "forrdpct" => {
                        let v = loop_num(l, item, rd)?;
                        if !(0.0..=100.0).contains(&v) {
                            return Err(loop_err(l, rd, format!("{v} is not a percentage")));
                        }
                        run.rdpct = v.round() as u8;
                    }
                    "forseekpct" => run.seek = seekpct(item).map_err(|m| loop_err(l, rd, m))?,
                    "foriorate" => {
                        run.rate = Some(rate_of(item).ok_or_else(|| {
                            loop_err(l, rd, format!("'{}': expected max, curve or a rate", item.display()))
                        })?)
                    }
                    other => {
                        return Err(loop_err(
                            l,
                            rd,
                            format!("{other} does not apply to a raw workload or is not supported yet"),
                        ));
                    }
                }
            }
            let name = expand::phase_name(rd, &loops, &combination, false);
            let rate = run.rate.expect("a single rate or a rate loop, checked by rd_rate");
            phases.extend(rated(
                name,
                rate,
                &common.curve,
                common.stop,
                "iorate",
                |name, rate, pct| {
                    let mut phase = raw_phase(name, &run, &common);
                    if let Some(Rate::PerSecond(v)) = rate {
                        phase.rate_iops = Some((v.round() as u64).max(1));
                    }
                    phase.rate_percent_of_max = pct;
                    if phase.rate_iops.is_some() || pct.is_some() {
                        phase.rate_process = Some(common.arrival);
                    }
                    phase
                },
                |phase, stop| phase.curve_stop_latency = stop,
            ));
        }
        Ok(phases)
    }
}

impl<'a> Mapper<'a> {
    fn tree(&mut self, fsd: &Record) -> Result<FileTreeSpec, VdbError> {
        for (k, why) in [
            ("journal", "journaling (journal=)"),
            ("host", "hosts on an fsd (vdbench refuses it too; put host= on the fwd)"),
            ("wss", "working sets (workingsetsize=)"),
            ("cleanup", "cleanup= (obsolete in vdbench too)"),
            ("log", "read/write logs (log=)"),
            ("count", "repeated fsds (count=)"),
        ] {
            unsupported(fsd, k, why)?;
        }
        if let Some((w, p)) = words(fsd, "shared")?
            && w.iter().any(|w| w.to_ascii_lowercase().starts_with('y'))
        {
            return Err(fail(fsd, p, "fsds shared between hosts (shared=yes) are not supported yet".into()));
        }
        let anchor = fsd.get("anchor").ok_or_else(|| {
            VdbError::at(&fsd.at, format!("{}: anchor= is missing: name the directory the files go in", fsd.label()))
        })?;
        let written = super::lexer::unprotect(&anchor.value);
        let dir = match self.map_path(&written) {
            Some(dir) => dir,
            None if Path::new(&written).is_absolute() && Path::new(&written).is_dir() => PathBuf::from(&written),
            None => {
                let name = written.split(['\\', '/']).next().filter(|n| !n.is_empty()).unwrap_or(&written);
                return Err(fail(
                    fsd,
                    anchor,
                    format!(
                        "anchor '{written}' is not a directory on this machine: map it with --anchor {name}=DIR \
                         (e.g. --anchor {name}=/srv/pool)"
                    ),
                ));
            }
        };
        if self.target.is_none() {
            self.target = Some((dir.clone(), anchor.at.clone()));
        }
        let count = |k: &str, default: u64| -> Result<u64, VdbError> {
            Ok(whole(fsd, k, "a whole number")?.unwrap_or(default))
        };
        let size = match items(fsd, "sizes", Units::Size)? {
            None => FileSizeSpec::Fixed(Bytes::kib(4)),
            Some((items, p)) => file_sizes(&items).map_err(|m| fail(fsd, p, m))?,
        };
        let placement = match words(fsd, "distribution")? {
            None => None,
            Some((w, p)) => Some(match w.first().map(|w| w.to_ascii_lowercase()).as_deref() {
                Some("bottom") if w.len() == 1 => FilePlacement::Bottom,
                Some("all") if w.len() == 1 => FilePlacement::All,
                _ => return Err(fail(fsd, p, "expected bottom or all".into())),
            }),
        };
        let total_size = match items(fsd, "totalsize", Units::Size)? {
            None => None,
            Some((items, p)) => match items.as_slice() {
                [Item::Num(v)] => Some(bytes(*v).map_err(|m| fail(fsd, p, m))?),
                _ => return Err(fail(fsd, p, "expected one size such as 100g".into())),
            },
        };
        let mut flags = OpenFlags::default();
        openflags(fsd, &mut flags)?;
        Ok(FileTreeSpec {
            name: fsd.name.clone(),
            anchor: Some(dir),
            depth: count("depth", 1)? as u32,
            width: count("width", 1)? as u32,
            files: count("files", 10)?,
            size,
            placement,
            total_size,
            direct: flags.direct.then_some(true),
        })
    }

    fn workload(&mut self, fwd: &Record, trees: &mut Vec<FileTreeSpec>) -> Result<FileWorkloadSpec, VdbError> {
        for (k, why) in [
            ("stopafter", "stopping a file after some operations (stopafter=)"),
            ("target", "copy/move targets (target=)"),
        ] {
            unsupported(fwd, k, why)?;
        }
        self.local_host(fwd)?;
        let fsds = self.named(fwd, "fsd", Kind::Fsd)?;
        if fsds.len() > 1 {
            let p = fwd.get("fsd").expect("named() read it");
            return Err(fail(fwd, p, "an fwd on several fsds is not supported yet; give each fsd its own fwd".into()));
        }
        let fsd = fsds[0];
        if !trees.iter().any(|t| t.name == fsd.name) {
            let tree = self.tree(fsd)?;
            trees.push(tree);
        }
        let mut flags = OpenFlags::default();
        openflags(fwd, &mut flags)?;
        if flags.direct {
            trees.iter_mut().filter(|t| t.name == fsd.name).for_each(|t| t.direct = Some(true));
        }
        let operation = match words(fwd, "operation")? {
            None => None,
            Some((w, p)) => match w.as_slice() {
                [one] => Some(one.parse::<FileOp>().map_err(|e| fail(fwd, p, e.to_string()))?),
                _ => return Err(fail(fwd, p, "an fwd takes one operation; use one fwd per operation".into())),
            },
        };
        let xfersize = match items(fwd, "xfersize", Units::Size)? {
            None => None,
            Some((items, p)) => Some(xfersize(&items, false).map_err(|m| fail(fwd, p, m))?.0),
        };
        let fileselect = match words(fwd, "fileselect")? {
            // vdbench picks files sequentially unless told otherwise; streamcap's default is random.
            None => FileSelect::Sequential,
            Some((w, p)) => file_select(&w).map_err(|m| fail(fwd, p, m))?,
        };
        let fileio = match words(fwd, "fileio")? {
            None => None,
            Some((w, p)) => Some(file_io(&w).map_err(|m| fail(fwd, p, m))?),
        };
        let threads = whole(fwd, "threads", "a number of threads")?;
        if threads.is_some_and(|t| t == 0 || t > 4096) {
            let p = fwd.get("threads").expect("just read");
            return Err(fail(fwd, p, "expected a thread count from 1 to 4096".into()));
        }
        let skew = one_number(fwd, "skew", Units::Size, "a percentage")?.filter(|s| *s != 0.0);
        Ok(FileWorkloadSpec {
            name: Some(fwd.name.clone()),
            tree: Some(fsd.name.clone()),
            operation,
            rdpct: percentage(fwd, "rdpct")?,
            xfersize,
            fileselect: Some(fileselect),
            fileio,
            threads: threads.map(|t| t as u32),
            skew,
        })
    }

    fn fileset_phases(&mut self, rd: &Record, timing: Timing) -> Result<Vec<PhaseSpec>, VdbError> {
        Self::refuse_keywords(rd, &["wd", "sd", "iorate"], "this is a raw-I/O keyword, but this rd runs fwds")?;
        for (k, why) in [
            ("fsd", "choosing fsds per rd (rd fsd=)"),
            ("maxdata", "stopping after an amount of data (maxdata=) in file-system runs"),
            ("maxdataread", "maxdataread="),
            ("maxdatawritten", "maxdatawritten="),
            ("operations", "overriding the fwds' operations (rd operations=); use foroperations="),
            ("distribution", "arrival distributions in file-system runs"),
            ("replay", "replay="),
            ("pause", "pausing after a run (pause=)"),
            ("startcmd", "running commands (startcmd=)"),
            ("endcmd", "running commands (endcmd=)"),
            ("mount", "mounting (mount=)"),
        ] {
            unsupported(rd, k, why)?;
        }
        if let Some(format) = self.model.of(Kind::Fwd).find(|f| f.name == "format") {
            return Err(VdbError::at(
                &format.at,
                "fwd=format (settings for the format step) is not supported yet".into(),
            ));
        }
        let fwds = self.named(rd, "fwd", Kind::Fwd)?;
        let mut trees = Vec::new();
        let mut workloads = Vec::new();
        for fwd in fwds {
            workloads.push(self.workload(fwd, &mut trees)?);
        }
        let mut flags = OpenFlags::default();
        openflags(rd, &mut flags)?;
        if flags.direct {
            trees.iter_mut().for_each(|t| t.direct = Some(true));
        }
        let format = match words(rd, "format")? {
            // vdbench does not create the files unless asked; streamcap's default is to create them.
            None => FormatMode::No,
            Some((w, p)) => match w.as_slice() {
                [one] => one.parse::<FormatMode>().map_err(|e| fail(rd, p, e.to_string()))?,
                _ => return Err(fail(rd, p, "format takes one of yes, no, restart, only, once, clean".into())),
            },
        };
        let rate = rd_rate(rd, "fwdrate")?;
        let (points, stop) = (curve(rd)?, stopcurve(rd)?);
        let loops = expand::loops(rd)?;
        let mut phases = Vec::new();
        for combination in expand::combinations(&loops, rd)? {
            let (mut trees, mut workloads, mut rate) = (trees.clone(), workloads.clone(), rate);
            for (l, item) in loops.iter().zip(&combination) {
                let num = || loop_num(l, item, rd);
                let word = || item.display();
                let count = |v: f64| -> Result<u64, VdbError> {
                    if v.fract() != 0.0 || v > u32::MAX as f64 {
                        return Err(loop_err(l, rd, format!("{v} is not a whole number")));
                    }
                    Ok(v as u64)
                };
                match l.keyword {
                    "forxfersize" => {
                        let b = bytes(num()?).map_err(|m| loop_err(l, rd, m))?;
                        workloads.iter_mut().for_each(|w| w.xfersize = Some(BlockSizeSpec::Fixed(b)));
                    }
                    "forthreads" => {
                        let t = count(num()?)?;
                        if t == 0 || t > 4096 {
                            return Err(loop_err(l, rd, format!("{t} is not a thread count from 1 to 4096")));
                        }
                        workloads.iter_mut().for_each(|w| w.threads = Some(t as u32));
                    }
                    "forrdpct" => {
                        let v = num()?;
                        if !(0.0..=100.0).contains(&v) {
                            return Err(loop_err(l, rd, format!("{v} is not a percentage")));
                        }
                        workloads.iter_mut().for_each(|w| w.rdpct = Some(v.round() as u8));
                    }
                    "foroperations" => {
                        let op = word().parse::<FileOp>().map_err(|e| loop_err(l, rd, e.to_string()))?;
                        workloads.iter_mut().for_each(|w| w.operation = Some(op));
                    }
                    "forfileio" => {
                        let io = file_io(&[word()]).map_err(|m| loop_err(l, rd, m))?;
                        workloads.iter_mut().for_each(|w| w.fileio = Some(io));
                    }
                    "forfileselect" => {
                        let select = file_select(&[word()]).map_err(|m| loop_err(l, rd, m))?;
                        workloads.iter_mut().for_each(|w| w.fileselect = Some(select));
                    }
                    "fordepth" => {
                        let v = count(num()?)? as u32;
                        trees.iter_mut().for_each(|t| t.depth = v);
                    }
                    "forwidth" => {
                        let v = count(num()?)? as u32;
                        trees.iter_mut().for_each(|t| t.width = v);
                    }
                    "forfiles" => {
                        let v = count(num()?)?;
                        trees.iter_mut().for_each(|t| t.files = v);
                    }
                    "forsizes" => {
                        let b = bytes(num()?).map_err(|m| loop_err(l, rd, m))?;
                        trees.iter_mut().for_each(|t| t.size = FileSizeSpec::Fixed(b));
                    }
                    "fortotalsize" => {
                        let b = bytes(num()?).map_err(|m| loop_err(l, rd, m))?;
                        trees.iter_mut().for_each(|t| t.total_size = Some(b));
                    }
                    "foriorate" => {
                        rate = Some(rate_of(item).ok_or_else(|| {
                            loop_err(l, rd, format!("'{}': expected max, curve or a rate", item.display()))
                        })?)
                    }
                    other => {
                        return Err(loop_err(
                            l,
                            rd,
                            format!("{other} does not apply to a file-system workload or is not supported yet"),
                        ));
                    }
                }
            }
            let name = expand::phase_name(rd, &loops, &combination, true);
            let rate = rate.expect("a single rate or a rate loop, checked by rd_rate");
            phases.extend(rated(
                name,
                rate,
                &points,
                stop,
                "fwdrate",
                |name, rate, pct| {
                    let rate = match (rate, pct) {
                        (_, Some(pct)) => OpRateSpec::PercentOfMax(pct),
                        (Some(Rate::PerSecond(v)), None) => OpRateSpec::PerSecond(v),
                        _ => OpRateSpec::Max,
                    };
                    PhaseSpec {
                        name: Some(name),
                        runtime: Some(timing.runtime),
                        ramp: Some(timing.ramp),
                        fileset: Some(Box::new(FileSetPhaseSpec {
                            trees: trees.clone(),
                            workloads: workloads.clone(),
                            rate: Some(rate),
                            format: Some(format),
                        })),
                        ..PhaseSpec::default()
                    }
                },
                |phase, stop| phase.curve_stop_latency = stop,
            ));
        }
        Ok(phases)
    }
}
