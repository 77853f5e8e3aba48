//! One workload generator of a raw rd — a wd on one sd on one host, as vdbench makes one per combination — and
//! the phase (or part of a phase) it becomes: the sd's lun, size, offset and threads, the wd's transfer sizes,
//! read and seek percentages, and the open flags of sd, wd and rd together.

use std::path::PathBuf;

use super::words::{bytes, seekpct, xfersize};
use super::{
    DEFAULT_SD_THREADS, Mapper, OpenFlags, fail, items, one_number, openflags, percentage, unsupported_all, whole,
};
use crate::spec::vdbench::VdbError;
use crate::spec::vdbench::lexer::unprotect;
use crate::spec::vdbench::model::Record;
use crate::spec::vdbench::values::{Item, Units};
use crate::spec::{BlockSizeSpec, PhaseSpec, RwMode, SizeOrPercent};
use crate::units::Bytes;

/// What one workload generator asks, once the loop values of its combination are in.
#[derive(Debug, Clone)]
pub(super) struct RawRun {
    /// `wd1`, or `wd1 on sd2` (and `on hd1`) when the rd has several generators.
    pub name: String,
    /// The threads it runs on: its sd's (on its host).
    pub queue: String,
    /// The sd's lun as the file gives it (after `--anchor`); `luns::settle` turns luns into the job's target.
    pub lun: PathBuf,
    /// Bytes addressed (the sd's size, narrowed by `range=`).
    pub size: Option<Bytes>,
    /// Where they start (the sd's offset, moved by `range=`).
    pub offset: Option<SizeOrPercent>,
    /// Percent of the lun addressed, when `range=` narrows a lun of unknown size.
    pub size_percent: Option<f64>,
    pub flags: OpenFlags,
    pub xfer: BlockSizeSpec,
    pub align: Option<Bytes>,
    pub rdpct: u8,
    pub seek: u8,
    pub threads: u32,
    /// Percent of the rd's operations (vdbench skew, shared out over the wd's sds and hosts).
    pub share: f64,
    /// Under mpirun, the rank of its host (`Hosts::rank_of`).
    pub rank: Option<u32>,
}

/// Keywords of a wd with no meaning here yet, and why.
const WD_UNSUPPORTED: &[(&str, &str)] = &[
    ("hotband", "hot bands (hotband=)"),
    ("stride", "strides (stride=)"),
    ("priority", "workload priorities (priority=)"),
    ("iorate", "a workload's own rate (wd iorate=)"),
    ("threads", "threads per workload (wd threads=, with concatenatesds)"),
    ("streams", "sequential streams (streams=)"),
    ("user", "user-written workloads (user=)"),
];

/// Keywords of an sd with no meaning here yet, and why.
const SD_UNSUPPORTED: &[(&str, &str)] = &[("count", "repeated sds (count=)")];

impl Mapper<'_> {
    /// Refuses what a wd asks that streamcap cannot do.
    pub(super) fn check_wd(wd: &Record) -> Result<(), VdbError> {
        unsupported_all(wd, WD_UNSUPPORTED)?;
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
        Ok(())
    }

    /// The generator of `wd` on `sd` (on host `host`), named `name`, with `share` percent of the operations.
    pub(super) fn generator(
        &mut self,
        (rd, wd, sd): (&Record, &Record, &Record),
        name: String,
        queue: String,
        share: f64,
    ) -> Result<RawRun, VdbError> {
        unsupported_all(sd, SD_UNSUPPORTED)?;
        if sd.get("journal").is_some() {
            self.notice(super::validate::journal_dir_notice(&sd.label()));
        }
        if sd.get("hitarea").is_some() {
            self.notice(format!("vdbench {}: hitarea= has no effect without rhpct/whpct", sd.label()));
        }
        let lun = sd.get("lun").ok_or_else(|| {
            VdbError::at(&sd.at, format!("{}: lun= is missing: name the file or block device to test", sd.label()))
        })?;
        let written = unprotect(&lun.value);
        let lun = self.map_path(&written).unwrap_or_else(|| PathBuf::from(&written));
        let mut flags = OpenFlags::default();
        for rec in [sd, wd, rd] {
            openflags(rec, &mut flags)?;
        }
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
        let threads = whole(sd, "threads", "a number of threads")?.unwrap_or(u64::from(DEFAULT_SD_THREADS));
        let align = align.or(size_of(sd, "align")?);
        let (size, offset, size_percent) = placement((sd, wd), align)?;
        Ok(RawRun {
            name,
            queue,
            lun,
            size,
            offset,
            size_percent,
            flags,
            align,
            xfer,
            rdpct,
            seek,
            threads: threads.clamp(1, u64::from(u32::MAX)) as u32,
            share,
            rank: None,
        })
    }
}

/// Size, offset and percent of the lun a generator addresses: the sd's `size=` and `offset=`, narrowed by the
/// sd's `range=` and then the wd's within it. With a known size the range is in bytes, rounded down to whole
/// 4 KiB (or the transfer alignment); without one it is a percentage of the lun, as vdbench gives it.
type Placement = (Option<Bytes>, Option<SizeOrPercent>, Option<f64>);

fn placement((sd, wd): (&Record, &Record), align: Option<Bytes>) -> Result<Placement, VdbError> {
    let (size, offset) = (size_of(sd, "size")?, size_of(sd, "offset")?);
    let Some((a, b)) = within(range(sd)?, range(wd)?) else {
        return Ok((size, offset.map(SizeOrPercent::Bytes), None));
    };
    let (rec, p) = match wd.get("range") {
        Some(p) => (wd, p),
        None => (sd, sd.get("range").expect("a range came from the sd")),
    };
    match size {
        Some(s) => {
            let grain = align.map_or(4096, |a| a.0.max(4096));
            let round = |v: f64| (v / grain as f64).floor() as u64 * grain;
            let (start, len) = (round(s.0 as f64 * a / 100.0), round(s.0 as f64 * (b - a) / 100.0));
            if len == 0 {
                return Err(fail(rec, p, format!("range ({a}%–{b}% of {s}) holds no whole {} block", Bytes(grain))));
            }
            Ok((Some(Bytes(len)), Some(SizeOrPercent::Bytes(Bytes(offset.map_or(0, |o| o.0) + start))), None))
        }
        None if offset.is_some() => {
            Err(fail(rec, p, "range= with an sd offset= needs the sd's size=: give the size of the lun's part".into()))
        }
        None => Ok((None, Some(SizeOrPercent::Percent(a)), Some(b - a))),
    }
}

/// `range=(min,max)`: percentages of the sd, as vdbench reads them.
fn range(rec: &Record) -> Result<Option<(f64, f64)>, VdbError> {
    let Some((items, p)) = items(rec, "range", Units::Size)? else { return Ok(None) };
    match items.as_slice() {
        [Item::Num(a), Item::Num(b)] if 0.0 <= *a && a < b && *b <= 100.0 => Ok(Some((*a, *b))),
        _ => Err(fail(rec, p, "expected range=(min,max), percentages of the sd from 0 to 100, min below max".into())),
    }
}

/// A wd's range within its sd's range (vdbench applies the wd's to the part of the lun the sd gives it); the
/// whole lun is no range.
fn within(sd: Option<(f64, f64)>, wd: Option<(f64, f64)>) -> Option<(f64, f64)> {
    let both = match (sd, wd) {
        (Some((a, b)), Some((c, d))) => Some((a + (b - a) * c / 100.0, a + (b - a) * d / 100.0)),
        (one, None) | (None, one) => one,
    };
    both.filter(|&r| r != (0.0, 100.0))
}

fn size_of(rec: &Record, k: &str) -> Result<Option<Bytes>, VdbError> {
    match one_number(rec, k, Units::Size, "a size such as 1g")? {
        None => Ok(None),
        Some(v) => bytes(v).map(Some).map_err(|m| fail(rec, rec.get(k).expect("just read"), m)),
    }
}

/// The phase keys of one generator: alone, the phase itself; with others, one part of the phase. Its files are
/// its lun, until `luns::settle` makes the luns the job's target.
pub(super) fn run_phase(run: &RawRun) -> PhaseSpec {
    let rw = match (run.seek, run.rdpct) {
        (0, 100) => RwMode::Read,
        (0, 0) => RwMode::Write,
        (0, _) => RwMode::ReadWrite,
        (_, 100) => RwMode::RandRead,
        (_, 0) => RwMode::RandWrite,
        _ => RwMode::RandRw,
    };
    PhaseSpec {
        name: Some(run.name.clone()),
        rw: Some(rw),
        rdpct: rw.is_mixed().then_some(run.rdpct),
        bs: Some(run.xfer.clone()),
        align: run.align,
        size: run.size,
        offset: run.offset,
        size_percent: run.size_percent,
        jobs: Some(1),
        iodepth: Some(run.threads),
        direct: Some(run.flags.direct),
        sync_writes: run.flags.sync.then_some(true),
        end_fsync: run.flags.fsync.then_some(true),
        percentage_random: (run.seek > 0 && run.seek < 100).then_some(run.seek),
        file_names: Some(vec![run.lun.to_string_lossy().into_owned()]),
        ..PhaseSpec::default()
    }
}
