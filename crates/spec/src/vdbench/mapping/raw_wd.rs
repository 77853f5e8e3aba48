//! One workload generator of a raw rd — a wd on one sd on one host, as vdbench makes one per combination — and
//! the phase (or part of a phase) it becomes: the sd's lun, size, offset and threads, the wd's transfer sizes,
//! read and seek percentages, and the open flags of sd, wd and rd together.

use std::path::PathBuf;

use super::words::{Seek, bytes, seekpct, xfersize};
use super::{
    DEFAULT_SD_THREADS, Mapper, OpenFlags, fail, items, one_number, openflags, percentage, unsupported_all, whole,
};
use crate::spec::VdbenchExtras;
use crate::spec::vdbench::VdbError;
use crate::spec::vdbench::lexer::unprotect;
use crate::spec::vdbench::model::Record;
use crate::spec::vdbench::values::{Item, Units};
use crate::spec::{BlockSizeSpec, DistributionSpec, PhaseSpec, RwMode, SizeOrPercent, StrideSpec};
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
    /// Under concatenatesds=yes, the luns of the wd's other sds, laid end to end after `lun`.
    pub more_luns: Vec<PathBuf>,
    /// Under concatenatesds=yes, the size of each lun (`lun`, then `more_luns`): `size` and `offset` then address
    /// the luns laid end to end.
    pub lun_sizes: Vec<Bytes>,
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
    /// `seekpct=eof`: sequential, and done at the end of the lun (one pass) instead of starting again.
    pub eof: bool,
    /// `stride=(min,max)`: skip-sequential in place of random seeks.
    pub stride: Option<StrideSpec>,
    /// `hotband=`: random seeks crowd at the start of the range on vdbench's curve.
    pub hotband: bool,
    /// `seekpct=(poisson,midpoint)`: random seeks crowd at the start of the range on an exponential curve (only
    /// where vdbench uses it: not under a hot band, a stride or an sd's `align=`).
    pub poisson: Option<f64>,
    pub threads: u32,
    /// How many hosts share the threads asked (a concatenated wd on several hosts); 1 otherwise.
    pub thread_hosts: u32,
    /// `streams=n`: n sequential streams, each over its own n-th of the lun with threads / n of the threads.
    pub streams: Option<u32>,
    /// Percent of the rd's operations (vdbench skew, shared out over the wd's sds and hosts); 0 with `own_rate`.
    pub share: f64,
    /// The wd's `iorate=`: operations per second of this generator's own (each of the wd's generators has it).
    pub own_rate: Option<f64>,
    /// Under mpirun, the rank of its host (`Hosts::rank_of`).
    pub rank: Option<u32>,
}

/// Keywords of a wd with no meaning here yet, and why.
const WD_UNSUPPORTED: &[(&str, &str)] = &[
    ("threads", "threads per workload without concatenatesds=yes (vdbench allows wd threads= only there)"),
    ("user", "user-written workloads (user=)"),
];

impl Mapper<'_> {
    /// Refuses what a wd asks that streamcap cannot do; `threads=` is a wd's only with concatenated sds.
    pub(super) fn check_wd(wd: &Record, concatenated: bool) -> Result<(), VdbError> {
        let unsupported: Vec<(&str, &str)> =
            WD_UNSUPPORTED.iter().copied().filter(|(k, _)| !(concatenated && *k == "threads")).collect();
        unsupported_all(wd, &unsupported)?;
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

    /// An sd's lun as the file gives it, after `--anchor`.
    pub(super) fn lun_of(&mut self, sd: &Record) -> Result<PathBuf, VdbError> {
        let lun = sd.get("lun").ok_or_else(|| {
            VdbError::at(&sd.at, format!("{}: lun= is missing: name the file or block device to test", sd.label()))
        })?;
        let written = unprotect(&lun.value);
        Ok(self.map_path(&written).unwrap_or_else(|| PathBuf::from(&written)))
    }

    /// The generator of `wd` on `sd` (on host `host`), named `name`, with `share` percent of the operations.
    pub(super) fn generator(
        &mut self,
        (rd, wd, sd): (&Record, &Record, &Record),
        name: String,
        queue: String,
        share: f64,
    ) -> Result<RawRun, VdbError> {
        unsupported_all(sd, super::DEDUP_PER_RECORD)?;
        self.sd_notices(sd);
        let lun = self.lun_of(sd)?;
        let mut flags = OpenFlags::default();
        for rec in [sd, wd, rd] {
            openflags(rec, &mut flags)?;
        }
        let rdpct = match (percentage(wd, "rdpct")?, percentage(wd, "wrpct")?) {
            (Some(r), _) => r,
            (None, Some(w)) => 100 - w,
            (None, None) => 100,
        };
        let (seek, poisson) = seek(wd)?;
        let (xfer, align) = match items(wd, "xfersize", Units::Size)? {
            None => (BlockSizeSpec::Fixed(Bytes::kib(4)), None),
            Some((items, p)) => xfersize(&items, true).map_err(|m| fail(wd, p, m))?,
        };
        let (stride, hotband) = (stride(wd)?, wd.get("hotband").is_some());
        self.shape_notices(wd, seek, stride.is_some(), hotband);
        let poisson = self.poisson_used((sd, wd), poisson, stride.is_some() || hotband);
        let threads = whole(sd, "threads", "a number of threads")?.unwrap_or(u64::from(DEFAULT_SD_THREADS));
        let (streams, seek, threads) = self.streams(wd, seek, threads)?;
        let align = align.or(size_of(sd, "align")?);
        let (size, offset, size_percent) = placement((sd, wd), align)?;
        Ok(RawRun {
            name,
            queue,
            lun,
            more_luns: Vec::new(),
            lun_sizes: Vec::new(),
            size,
            offset,
            size_percent,
            flags,
            align,
            xfer,
            rdpct,
            seek: seek.percent,
            eof: seek.eof,
            stride,
            hotband,
            poisson,
            threads: threads.clamp(1, u64::from(u32::MAX)) as u32,
            thread_hosts: 1,
            streams,
            share,
            own_rate: one_number(wd, "iorate", Units::Size, "operations per second, such as 100")?,
            rank: None,
        })
    }
}

impl Mapper<'_> {
    /// What an sd says that has no effect here: a journal directory, a hit area without hits.
    fn sd_notices(&mut self, sd: &Record) {
        if sd.get("journal").is_some() {
            self.notice(super::validate::journal_dir_notice(&sd.label()));
        }
        if sd.get("hitarea").is_some() {
            self.notice(format!("vdbench {}: hitarea= has no effect without rhpct/whpct", sd.label()));
        }
    }

    /// What vdbench ignores of a wd's access shape: a stride under a hot band, either under sequential I/O.
    fn shape_notices(&mut self, wd: &Record, seek: Seek, stride: bool, hotband: bool) {
        if stride && hotband && seek.percent > 0 {
            // WG_entry.calculateNextLba: a hot band's seek is taken in place of the stride.
            self.notice(format!("vdbench {}: stride= has no effect with hotband=, as in vdbench", wd.label()));
        }
        for (said, key) in [(stride, "stride"), (hotband, "hotband")] {
            if said && seek.percent == 0 {
                self.notice(format!("vdbench {}: {key}= has no effect on sequential I/O (seekpct=0)", wd.label()));
            }
        }
    }
}

impl Mapper<'_> {
    /// The Poisson midpoint where vdbench uses it: `WG_entry.calculateNextLba` takes a hot band's seek or a
    /// stride in its place, and `alignBoundarySeek` (an sd's `align=`) draws uniformly.
    fn poisson_used(&mut self, (sd, wd): (&Record, &Record), midpoint: Option<f64>, shaped: bool) -> Option<f64> {
        let why = if shaped {
            "hotband= or stride="
        } else if sd.get("align").is_some() {
            "the sd's align="
        } else {
            return midpoint;
        };
        if midpoint.is_some() {
            self.notice(format!("vdbench {}: seekpct=poisson has no effect with {why}, as in vdbench", wd.label()));
        }
        None
    }
}

/// Size, offset and percent of the lun a generator addresses: the sd's `size=` and `offset=`, narrowed by the
/// wd's `range=` (or `hotband=`), else the sd's: a wd's range replaces its sd's, as in vdbench. With a known size
/// the range is in bytes, rounded down to whole 4 KiB (or the transfer alignment); without one it is a percentage
/// of the lun, as vdbench gives it.
type Placement = (Option<Bytes>, Option<SizeOrPercent>, Option<f64>);

fn placement((sd, wd): (&Record, &Record), align: Option<Bytes>) -> Result<Placement, VdbError> {
    let (size, offset) = (size_of(sd, "size")?, size_of(sd, "offset")?);
    let Some((a, b)) = chosen(range(sd, "range")?, wd_range(wd)?) else {
        return Ok((size, offset.map(SizeOrPercent::Bytes), None));
    };
    let (rec, p) = match wd.get("range").or_else(|| wd.get("hotband")) {
        Some(p) => (wd, p),
        None => (sd, sd.get("range").expect("a range came from the sd")),
    };
    match size {
        Some(s) => {
            let grain = align.map_or(4096, |a| a.0.max(4096));
            let round = |v: f64| (v / grain as f64).floor() as u64 * grain;
            // Both ends rounded down, as vdbench rounds seek_low and seek_high (WG_entry.calculateContext): a
            // range that ends at 100 % ends at the end of the lun.
            let start = round(s.0 as f64 * a / 100.0);
            let len = round(s.0 as f64 * b / 100.0).saturating_sub(start);
            if len == 0 {
                return Err(fail(rec, p, format!("range ({a}%–{b}% of {s}) holds no whole {} block", Bytes(grain))));
            }
            let Some(at) = offset.map_or(0, |o| o.0).checked_add(start) else {
                return Err(fail(rec, p, format!("offset= and range= reach past 16 EiB (the lun is {s})")));
            };
            Ok((Some(Bytes(len)), Some(SizeOrPercent::Bytes(Bytes(at))), None))
        }
        None if offset.is_some() => {
            Err(fail(rec, p, "range= with an sd offset= needs the sd's size=: give the size of the lun's part".into()))
        }
        None => Ok((None, Some(SizeOrPercent::Percent(a)), Some(b - a))),
    }
}

/// A wd's `range=`, or its `hotband=`, which vdbench reads as the wd's range (`WD_entry`: both set `lowrange`
/// and `highrange`); the band's skew is the phase's distribution.
fn wd_range(wd: &Record) -> Result<Option<(f64, f64)>, VdbError> {
    match (range(wd, "range")?, range(wd, "hotband")?) {
        (Some(_), Some(_)) => Err(fail(
            wd,
            wd.get("hotband").expect("just read"),
            "hotband= is the wd's range with a skew: give hotband= or range=, not both".into(),
        )),
        (one, other) => Ok(one.or(other)),
    }
}

/// `range=(min,max)` (or `hotband=`, `key`): percentages of the sd, as vdbench reads them.
fn range(rec: &Record, key: &str) -> Result<Option<(f64, f64)>, VdbError> {
    let Some((items, p)) = items(rec, key, Units::Size)? else { return Ok(None) };
    match items.as_slice() {
        [Item::Num(a), Item::Num(b)] if 0.0 <= *a && a < b && *b <= 100.0 => Ok(Some((*a, *b))),
        _ => Err(fail(rec, p, format!("expected {key}=(min,max), percentages of the sd from 0 to 100, min below max"))),
    }
}

/// The range a generator uses: the wd's (`range=` or `hotband=`) if it has one, else the sd's — vdbench 5.04.06's
/// `WG_entry.calculateContext`: "Determine which range= to use. WD overrides SD". The whole lun is no range.
fn chosen(sd: Option<(f64, f64)>, wd: Option<(f64, f64)>) -> Option<(f64, f64)> {
    wd.or(sd).filter(|&r| r != (0.0, 100.0))
}

/// `seekpct=`: random (100) unless said, and the Poisson midpoint if any. Read as vdbench's
/// `WD_entry.parseSeekpct` reads it, value by value: `poisson` is random with midpoint 3, a number after it is
/// the midpoint, and a later word or number before it sets the seek percentage.
fn seek(wd: &Record) -> Result<(Seek, Option<f64>), VdbError> {
    let (mut seek, mut midpoint) = (Seek { percent: 100, eof: false }, None);
    let Some((items, p)) = items(wd, "seekpct", Units::Size)? else { return Ok((seek, midpoint)) };
    for item in &items {
        match item {
            Item::Word(w) if !w.is_empty() && "poisson".starts_with(&w.to_ascii_lowercase()) => {
                (seek, midpoint) = (Seek { percent: 100, eof: false }, Some(3.0));
            }
            Item::Num(v) if midpoint.is_some() => {
                if !(v.is_finite() && *v > 0.0) {
                    let why = format!("'{v}': the Poisson midpoint after poisson must be above 0, such as (poisson,3)");
                    return Err(fail(wd, p, why));
                }
                midpoint = Some(*v);
            }
            other => seek = seekpct(other).map_err(|m| fail(wd, p, m))?,
        }
    }
    Ok((seek, midpoint.filter(|_| seek.percent > 0)))
}

/// `stride=(min,max)`: two sizes, max not below min (vdbench's `WD_entry.parseStride`).
fn stride(wd: &Record) -> Result<Option<StrideSpec>, VdbError> {
    let Some((items, p)) = items(wd, "stride", Units::Size)? else { return Ok(None) };
    let sizes = match items.as_slice() {
        [Item::Num(min), Item::Num(max)] if max >= min && *min >= 0.0 => (*min, *max),
        _ => {
            return Err(fail(wd, p, "expected stride=(min,max): two sizes such as (8k,64k), max not below min".into()));
        }
    };
    let whole = |v: f64| if v == 0.0 { Ok(Bytes(0)) } else { bytes(v) };
    let (min, max) = (whole(sizes.0).map_err(|m| fail(wd, p, m))?, whole(sizes.1).map_err(|m| fail(wd, p, m))?);
    Ok(Some(StrideSpec { min, max }))
}

pub(super) fn size_of(rec: &Record, k: &str) -> Result<Option<Bytes>, VdbError> {
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
        jobs: Some(run.streams.unwrap_or(1)),
        // The threads are a multiple of the streams (`wd_streams`), but a concatenation's wd threads= come later.
        iodepth: Some(run.threads.div_ceil(run.streams.unwrap_or(1))),
        direct: Some(run.flags.direct),
        sync_writes: run.flags.sync.then_some(true),
        end_fsync: run.flags.fsync.then_some(true),
        percentage_random: (run.seek > 0 && run.seek < 100).then_some(run.seek),
        file_names: Some(
            std::iter::once(&run.lun).chain(&run.more_luns).map(|l| l.to_string_lossy().into_owned()).collect(),
        ),
        file_sizes: (!run.lun_sizes.is_empty()).then(|| run.lun_sizes.clone()),
        io_passes: run.eof.then_some(1.0),
        vdbench: VdbenchExtras {
            stride: run.stride.filter(|_| run.seek > 0 && !run.hotband),
            ..VdbenchExtras::default()
        },
        distribution: match (run.hotband, run.poisson) {
            _ if run.seek == 0 => None,
            (true, _) => Some(DistributionSpec::Hotband),
            (false, midpoint) => midpoint.map(DistributionSpec::Poisson),
        },
        ..PhaseSpec::default()
    }
}
