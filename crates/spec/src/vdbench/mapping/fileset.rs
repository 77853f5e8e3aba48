//! File-system workloads (fsd/fwd/rd) → file-set phases: trees from the fsds, workloads from the fwds, the
//! rd's fwdrate, format, loops and curve.

use std::path::{Path, PathBuf};

use super::super::expand;
use super::fileset_loops::apply;
use super::timing::{Rate, RatedPhase, Timing, curve, rated, rd_rate};
use super::words::*;
use super::*;
use crate::spec::SpecKind;
use crate::spec::VdbenchExtras;
use crate::spec::fileset::{
    FileIo, FileOp, FilePlacement, FileSelect, FileSetPhaseSpec, FileSizeSpec, FileTreeSpec, FileWorkloadSpec,
    FormatMode, OpRateSpec, StopAfter,
};
use crate::units::Bytes;
impl<'a> Mapper<'a> {
    pub(super) fn tree(&mut self, fsd: &Record) -> Result<FileTreeSpec, VdbError> {
        unsupported_all(
            fsd,
            &[
                ("host", "hosts on an fsd (vdbench refuses it too; put host= on the fwd)"),
                ("wss", "working sets (workingsetsize=)"),
                ("cleanup", "cleanup= (obsolete in vdbench too)"),
                ("log", "read/write logs (log=)"),
            ],
        )?;
        unsupported_all(fsd, super::DEDUP_PER_RECORD)?;
        let shared = shared_fsd(fsd)?;
        if fsd.get("journal").is_some() {
            self.notice(super::validate::journal_dir_notice(&fsd.label()));
        }
        let dir = self.anchor_dir(fsd)?;
        if self.target.is_none() {
            self.target = Some(dir.clone());
        }
        let count = |k: &str, default: u64| -> Result<u64, VdbError> {
            Ok(whole(fsd, k, "a whole number")?.unwrap_or(default))
        };
        let size = match items(fsd, "sizes", Units::Size)? {
            None => FileSizeSpec::Fixed(Bytes::kib(4)),
            Some((items, p)) => file_sizes(&items).map_err(|m| fail(fsd, p, m))?,
        };
        let placement = placement(fsd)?;
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
            shared: shared.then_some(true),
        })
    }

    /// The fsd's anchor on this machine: mapped with --anchor, or an absolute path that is a directory here.
    fn anchor_dir(&mut self, fsd: &Record) -> Result<PathBuf, VdbError> {
        let anchor = fsd.get("anchor").ok_or_else(|| {
            VdbError::at(&fsd.at, format!("{}: anchor= is missing: name the directory the files go in", fsd.label()))
        })?;
        let written = crate::spec::vdbench::lexer::unprotect(&anchor.value);
        match self.map_path(&written) {
            Some(dir) => Ok(dir),
            None if Path::new(&written).is_absolute() && Path::new(&written).is_dir() => Ok(PathBuf::from(&written)),
            None => {
                let name = written.split(['\\', '/']).next().filter(|n| !n.is_empty()).unwrap_or(&written);
                Err(fail(
                    fsd,
                    anchor,
                    format!(
                        "anchor '{written}' is not a directory on this machine: map it with --anchor {name}=DIR \
                         (e.g. --anchor {name}=/srv/pool)"
                    ),
                ))
            }
        }
    }

    pub(super) fn workload(
        &mut self,
        fwd: &Record,
        trees: &mut Vec<FileTreeSpec>,
    ) -> Result<Vec<FileWorkloadSpec>, VdbError> {
        unsupported_all(fwd, &[("target", "copy/move targets (target=)")])?;
        let names = self.hosts.of(fwd)?;
        let hosts = names.len() as u32;
        let fsds = self.named(fwd, "fsd", Kind::Fsd)?;
        refuse_hosts_on_unshared(fwd, &fsds, hosts)?;
        let mut flags = OpenFlags::default();
        openflags(fwd, &mut flags)?;
        for fsd in &fsds {
            if !trees.iter().any(|t| t.name == fsd.name) {
                let tree = self.tree(fsd)?;
                trees.push(tree);
            }
            if flags.direct {
                trees.iter_mut().filter(|t| t.name == fsd.name).for_each(|t| t.direct = Some(true));
            }
        }
        let operation = operation(fwd)?;
        let xfersize = match items(fwd, "xfersize", Units::Size)? {
            None => None,
            Some((items, p)) => Some(xfersize(&items, false).map_err(|m| fail(fwd, p, m))?.0),
        };
        let fileselect = match words(fwd, "fileselect")? {
            // vdbench picks files sequentially unless told otherwise; streamcap's default is random.
            None => FileSelect::Sequential,
            Some((w, p)) => file_select(&w).map_err(|m| fail(fwd, p, m))?,
        };
        // Under mpirun each host is a rank of its own, whose threads share files only among themselves.
        let local_hosts = if self.hosts.ranked { 1 } else { hosts };
        let (fileio, option) = fwd_file_io(fwd, fileselect, local_hosts)?;
        let (threads, skew) =
            (threads(fwd)?, one_number(fwd, "skew", Units::Size, "a percentage")?.filter(|s| *s != 0.0));
        let one = FileWorkloadSpec {
            name: Some(fwd.name.clone()),
            tree: None,
            operation,
            rdpct: percentage(fwd, "rdpct")?,
            xfersize,
            fileselect: Some(fileselect),
            fileio,
            threads,
            skew,
            dirs: None,
            shared: (option == FileIoOption::Shared).then_some(true),
            rank: None,
            stopafter: stop_after(fwd)?,
            // Only sequential writes delete first (vdbench's FwgThread.openForWrite); others leave it aside.
            delete_first: (option == FileIoOption::Delete).then_some(true),
        };
        if !self.hosts.ranked {
            return Ok(spread(one, &fsds, hosts));
        }
        // Under mpirun each host is a rank: the fwd runs once per host, with its own threads, on that rank.
        Ok(names.iter().flat_map(|host| on_rank(&one, &fsds, host, self.hosts.rank_of(host), hosts > 1)).collect())
    }

    pub(super) fn fileset_phases(&mut self, rd: &Record, timing: Timing) -> Result<Vec<PhaseSpec>, VdbError> {
        self.refuse_in_fileset_rd(rd)?;
        let fwds = super::fileset_format::without_format(self.named(rd, "fwd", Kind::Fwd)?);
        let format_with = self.format_with()?;
        let mut trees = Vec::new();
        let mut workloads = Vec::new();
        for &fwd in &fwds {
            workloads.extend(self.workload(fwd, &mut trees)?);
        }
        if self.hosts.ranked {
            self.one_rank_per_fsd(rd, &workloads)?;
        }
        let workloads = rd_operations(rd, workloads)?;
        let mut flags = OpenFlags::default();
        openflags(rd, &mut flags)?;
        if flags.direct {
            trees.iter_mut().for_each(|t| t.direct = Some(true));
        }
        let (format, only) = super::fileset_format::format_words(rd)?;
        // `(restart,only)`: what is missing is created, and the phase ends without its workload.
        let workloads = if only { Vec::new() } else { workloads };
        self.refuse_format_on_shared(rd, &fwds, format)?;
        let rate = rd_rate(rd, "fwdrate")?;
        let points = curve(rd)?;
        let loops = expand::loops(rd)?;
        let mut phases = Vec::new();
        for combination in expand::combinations(&loops, rd)? {
            let (mut trees, mut workloads, mut rate) = (trees.clone(), workloads.clone(), rate);
            apply(&loops, &combination, rd, (&mut trees, &mut workloads), &mut rate)?;
            let name = expand::phase_name(rd, &loops, &combination, true);
            let rate = rate.expect("a single rate or a rate loop, checked by rd_rate");
            let fileset = FileSetPhaseSpec { trees, workloads, rate: None, format: Some(format), format_with };
            let data = super::data::loop_compression(&loops, &combination, rd)?;
            let rated = rated(name, rate, &points, "fwdrate");
            let phase = |point| PhaseSpec { data: data.clone(), ..point_phase(point, &fileset, timing) };
            phases.extend(rated.into_iter().map(phase));
        }
        Ok(phases)
    }

    /// vdbench refuses format=yes (also only, once, directories) on an rd whose fwds use a shared fsd
    /// (`RD_entry.createFormatList`): one host still deleting the old tree could delete what another has just
    /// created. It formats such an fsd in two steps, clean and then restart.
    fn refuse_format_on_shared(&self, rd: &Record, fwds: &[&Record], format: FormatMode) -> Result<(), VdbError> {
        if matches!(format, FormatMode::No | FormatMode::Restart | FormatMode::Clean) {
            return Ok(());
        }
        for fwd in fwds {
            for fsd in self.named(fwd, "fsd", Kind::Fsd)? {
                if shared_fsd(fsd)? {
                    let p = rd.get("format").expect("format= was given, as it is not no");
                    return Err(fail(
                        rd,
                        p,
                        format!(
                            "format={format} is not allowed on fsd={}, which is shared (shared=yes), as in vdbench: \
                             format it in two steps, an rd with format=clean and then one with format=restart",
                            fsd.name
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Under mpirun, an fsd without shared=yes is one rank's: vdbench lets several hosts use one fsd only with
    /// shared=yes, each host then taking its every n-th file of the one tree (`plan::TreeShare`).
    fn one_rank_per_fsd(&self, rd: &Record, workloads: &[FileWorkloadSpec]) -> Result<(), VdbError> {
        for fsd in self.model.of(Kind::Fsd) {
            let mut ranks: Vec<u32> =
                workloads.iter().filter(|w| w.tree.as_deref() == Some(&fsd.name)).filter_map(|w| w.rank).collect();
            ranks.sort_unstable();
            ranks.dedup();
            if ranks.len() < 2 || shared_fsd(fsd)? {
                continue;
            }
            let why = "vdbench runs several hosts on one fsd only with shared=yes on the fsd (each host then uses \
                       its every n-th file): add shared=yes to the fsd, or give each hd an fsd of its own and its \
                       own fwd with host=";
            let ranks: Vec<String> = ranks.iter().map(u32::to_string).collect();
            return Err(VdbError::at(
                &rd.at,
                format!(
                    "{}: fsd={} is used by ranks {} (their hds' fwds): {why}",
                    rd.label(),
                    fsd.name,
                    ranks.join(", ")
                ),
            ));
        }
        Ok(())
    }

    /// What an rd that runs fwds cannot take: raw-I/O keywords, and what streamcap does not do yet.
    fn refuse_in_fileset_rd(&self, rd: &Record) -> Result<(), VdbError> {
        Self::refuse_keywords(rd, &["wd", "sd", "iorate"], "this is a raw-I/O keyword, but this rd runs fwds")?;
        unsupported_all(
            rd,
            &[
                ("fsd", "choosing fsds per rd (rd fsd=)"),
                ("maxdata", "stopping after an amount of data (maxdata=) in file-system runs"),
                ("maxdataread", "maxdataread="),
                ("maxdatawritten", "maxdatawritten="),
                ("distribution", "arrival distributions in file-system runs"),
                ("replay", "replay="),
                ("startcmd", "running commands (startcmd=)"),
                ("endcmd", "running commands (endcmd=)"),
                ("mount", "mounting (mount=)"),
            ],
        )?;
        Ok(())
    }
}

/// One point of an rd's curve (or its one rate) as a file-set phase.
fn point_phase(point: RatedPhase, fileset: &FileSetPhaseSpec, timing: Timing) -> PhaseSpec {
    let rate = match (point.rate, point.percent) {
        (_, Some(pct)) => OpRateSpec::PercentOfMax(pct),
        (Some(Rate::PerSecond(v)), None) => OpRateSpec::PerSecond(v),
        _ => OpRateSpec::Max,
    };
    PhaseSpec {
        name: Some(point.name),
        runtime: Some(timing.runtime),
        ramp: Some(timing.ramp),
        vdbench: VdbenchExtras { curve_stop_latency: point.stop, ..VdbenchExtras::default() },
        kind: Some(SpecKind::FileSet(Box::new(FileSetPhaseSpec { rate: Some(rate), ..fileset.clone() }))),
        ..PhaseSpec::default()
    }
}

/// vdbench runs several hosts on one fsd only with shared=yes (`RD_entry`: "Multiple hosts may only be requested
/// for an FSD when 'shared=yes' is specified").
fn refuse_hosts_on_unshared(fwd: &Record, fsds: &[&Record], hosts: u32) -> Result<(), VdbError> {
    if hosts < 2 {
        return Ok(());
    }
    for fsd in fsds {
        if !shared_fsd(fsd)? {
            return Err(VdbError::at(
                &fwd.at,
                format!(
                    "{}: {hosts} hosts on fsd={}, which is not shared: vdbench runs several hosts on one fsd only \
                     with shared=yes on the fsd (each host then uses its own part of the files)",
                    fwd.label(),
                    fsd.name
                ),
            ));
        }
    }
    Ok(())
}

/// An fwd's fileio= (random or sequential; `None` when not given) and whether its threads share files.
fn fwd_file_io(fwd: &Record, select: FileSelect, hosts: u32) -> Result<(Option<FileIo>, FileIoOption), VdbError> {
    let Some((w, p)) = words(fwd, "fileio")? else { return Ok((None, FileIoOption::Plain)) };
    let (io, option) = file_io(&w).map_err(|m| fail(fwd, p, m))?;
    match option {
        FileIoOption::Shared => shared_file_io(fwd, p, select, hosts)?,
        // vdbench's FwdEntry.checkParameters: "'rdpct=' and 'delete' parameters are mutually exclusive".
        FileIoOption::Delete if fwd.get("rdpct").is_some() => {
            let message = "fileio=(sequential,delete) and rdpct= are mutually exclusive, as in vdbench";
            return Err(fail(fwd, p, message.into()));
        }
        _ => {}
    }
    Ok((Some(io), option))
}

/// An fsd's `shared=` (yes or no, by first letter as vdbench reads it). vdbench's shared=yes lets several hosts
/// (slaves) use one fsd, each its every n-th file (`FileAnchor.createFileList`), and so do mpirun's ranks (the
/// tree's `shared`). Hosts on this machine run as threads of one run on one tree, where each thread claims the
/// file it works on, so no two hosts use a file at once here either; with one host shared=yes changes nothing.
fn shared_fsd(fsd: &Record) -> Result<bool, VdbError> {
    let Some((w, p)) = words(fsd, "shared")? else { return Ok(false) };
    match w.as_slice() {
        [one] if one.to_ascii_lowercase().starts_with('y') => Ok(true),
        [one] if one.to_ascii_lowercase().starts_with('n') => Ok(false),
        _ => Err(fail(fsd, p, "expected shared=yes or shared=no".into())),
    }
}

/// What vdbench 5.04 allows with fileio=(random,shared), which lets the threads of an fwd do random I/O to one
/// file at once (`FwdEntry`, `FileEntry.setFileBusy`): it needs the files taken in turn (fileselect=random is
/// refused, "mutually exclusive"); vdbench does not require fsd shared=yes for it. `hosts`: the hosts on this
/// machine, whose threads would share files with each other's (not built: streamcap runs all of them as one
/// workload); mpirun's ranks, each a host of its own, share files among their own threads, as vdbench's hosts.
fn shared_file_io(fwd: &Record, p: &Param, select: FileSelect, hosts: u32) -> Result<(), VdbError> {
    if matches!(select, FileSelect::Random | FileSelect::Skewed(_) | FileSelect::Poisson(_)) {
        return Err(fail(
            fwd,
            p,
            "fileio=(random,shared) and fileselect=random are mutually exclusive, as in vdbench: use \
             fileselect=sequential (vdbench's default), so that the threads take the files in turn"
                .into(),
        ));
    }
    if hosts > 1 {
        return Err(fail(
            fwd,
            p,
            format!(
                "fileio=(random,shared) on {hosts} hosts of this machine is not supported yet: vdbench shares a \
                 file among the threads of one host only, and streamcap runs every host's threads here as one \
                 workload; run the file under mpirun (one rank per hd, docs/vdbench.md) or on one hd"
            ),
        ));
    }
    Ok(())
}

/// An fsd's distribution= (where the files go: the bottom directories, or all).
fn placement(fsd: &Record) -> Result<Option<FilePlacement>, VdbError> {
    let Some((w, p)) = words(fsd, "distribution")? else { return Ok(None) };
    match w.first().map(|w| w.to_ascii_lowercase()).as_deref() {
        Some("bottom") if w.len() == 1 => Ok(Some(FilePlacement::Bottom)),
        Some("all") if w.len() == 1 => Ok(Some(FilePlacement::All)),
        _ => Err(fail(fsd, p, "expected bottom or all".into())),
    }
}

/// An fwd's one operation=.
fn operation(fwd: &Record) -> Result<Option<FileOp>, VdbError> {
    let Some((w, p)) = words(fwd, "operation")? else { return Ok(None) };
    match w.as_slice() {
        [one] => Ok(Some(one.parse::<FileOp>().map_err(|e| fail(fwd, p, e.to_string()))?)),
        _ => Err(fail(fwd, p, "an fwd takes one operation; use one fwd per operation".into())),
    }
}

/// An fwd's threads=, 1 to 4096.
fn threads(fwd: &Record) -> Result<Option<u32>, VdbError> {
    let threads = whole(fwd, "threads", "a number of threads")?;
    if threads.is_some_and(|t| t == 0 || t > 4096) {
        let p = fwd.get("threads").expect("just read");
        return Err(fail(fwd, p, "expected a thread count from 1 to 4096".into()));
    }
    Ok(threads.map(|t| t as u32))
}

/// An fwd as run by one host that is mpirun's rank `rank`, on each of its fsds with its own threads; named after
/// the host when the fwd runs on `several`.
fn on_rank(
    one: &FileWorkloadSpec,
    fsds: &[&Record],
    host: &str,
    rank: Option<u32>,
    several: bool,
) -> Vec<FileWorkloadSpec> {
    let parts = spread(FileWorkloadSpec { rank, ..one.clone() }, fsds, 1);
    parts
        .into_iter()
        .map(|w| FileWorkloadSpec {
            name: w.name.as_ref().map(|n| if several { format!("{n} on {host}") } else { n.clone() }),
            ..w
        })
        .collect()
}

/// An fwd on each of its fsds and hosts, as vdbench runs it: each host runs the fwd with its own threads, and
/// an fwd over several fsds gives each fsd an even part of its threads, rounded up (vdbench's
/// `fwd_thread_adjust`; an fwd has one thread unless it says more), and of its skew.
fn spread(one: FileWorkloadSpec, fsds: &[&Record], hosts: u32) -> Vec<FileWorkloadSpec> {
    let n = fsds.len() as u32;
    let threads = match (one.threads, n > 1 || hosts > 1) {
        (t, true) => Some((t.unwrap_or(1) * hosts).div_ceil(n)),
        (t, false) => t,
    };
    fsds.iter()
        .map(|fsd| FileWorkloadSpec {
            name: one.name.as_ref().map(|name| if n > 1 { format!("{name} on {}", fsd.name) } else { name.clone() }),
            tree: Some(fsd.name.clone()),
            threads,
            skew: one.skew.map(|s| s / f64::from(n)),
            ..one.clone()
        })
        .collect()
}

/// fwd `stopafter=nn` (transfers) or `stopafter=nn%` (of the file's size). vdbench takes `stopafter=0` as no
/// limit at all (ActiveFile sets neither count): the thread stays on its file.
fn stop_after(fwd: &Record) -> Result<Option<StopAfter>, VdbError> {
    let Some((items, p)) = items(fwd, "stopafter", Units::Size)? else { return Ok(None) };
    match items.as_slice() {
        [Item::Num(v)] if *v == 0.0 => Ok(Some(StopAfter::Transfers(u64::MAX))),
        [Item::Num(v)] if v.fract() == 0.0 && *v > 0.0 && *v < u64::MAX as f64 => {
            Ok(Some(StopAfter::Transfers(*v as u64)))
        }
        [Item::Percent(pct)] if *pct > 0.0 && pct.is_finite() => Ok(Some(StopAfter::Percent(*pct))),
        _ => Err(fail(
            fwd,
            p,
            "expected a number of blocks (stopafter=100) or a percentage of the file size (stopafter=10%)".into(),
        )),
    }
}

/// rd `operations=(read,getattr)`, which "overrides the `fwd=xxx,operations=` parameter" (vdbench's user guide):
/// as vdbench 5.04.06's `RD_entry.createFwgListForOneRd`, each workload of the rd runs once per operation, all
/// at once, each with an even part of its threads (rounded down, at least one) and the workload's skew; an fwd
/// with `rdpct=` takes only one operation, read or write; `foroperations=` with it is refused, as in vdbench.
fn rd_operations(rd: &Record, workloads: Vec<FileWorkloadSpec>) -> Result<Vec<FileWorkloadSpec>, VdbError> {
    let Some((words, p)) = words(rd, "operations")? else { return Ok(workloads) };
    if rd.get("foroperations").is_some() {
        let message = "operations= and foroperations= are mutually exclusive, as in vdbench: keep one";
        return Err(fail(rd, p, message.into()));
    }
    let ops = words.iter().map(|w| w.parse::<FileOp>()).collect::<Result<Vec<_>, _>>();
    let ops = ops.map_err(|e| fail(rd, p, e.to_string()))?;
    let n = ops.len() as u32;
    let mut out = Vec::with_capacity(workloads.len() * ops.len());
    for w in workloads {
        if w.rdpct.is_some() && (n > 1 || !matches!(ops[0], FileOp::Read | FileOp::Write)) {
            let name = w.name.as_deref().unwrap_or("an fwd");
            let message = format!(
                "{name} has rdpct=, which takes one operation, read or write (as in vdbench): list only read or \
                 write, or remove rdpct= from the fwd"
            );
            return Err(fail(rd, p, message));
        }
        for &op in &ops {
            out.push(FileWorkloadSpec {
                name: w.name.as_ref().map(|name| if n > 1 { format!("{name} {op}") } else { name.clone() }),
                operation: Some(op),
                threads: Some((w.threads.unwrap_or(1) / n).max(1)),
                ..w.clone()
            });
        }
    }
    Ok(out)
}
