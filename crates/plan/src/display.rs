//! The human-readable form of a plan, printed by `--dry-run`: what will be created, and per phase what runs, how
//! long, and how the work is split.

use std::fmt;

use super::{DirectMode, PhaseKind, PhasePlan, Plan, RawPlan, TargetKind};
use crate::units::{Bytes, Share, format_duration, format_latency_ns};
use crate::workload::{Access, BlockSizes, Distribution, ZoneSize};

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = &self.target;
        let kind = match t.kind {
            TargetKind::Directory => "directory",
            TargetKind::File => "existing file (read only)",
            TargetKind::BlockDevice => "block device",
            TargetKind::Remote => "remote media (read only)",
        };
        writeln!(f, "target: {} ({kind})", t.path.display())?;
        write_data(f, t)?;
        writeln!(f, "interval: {}", format_duration(self.interval))?;
        if let Some(v) = &self.verify {
            let backlog = v.backlog.map(|n| format!(", reading back every {n} writes")).unwrap_or_default();
            writeln!(
                f,
                "verify: {} over blocks of {}{backlog}; every read checks what it reads, and the run ends by \
                 reading back everything written",
                v.algorithm,
                Bytes(u64::from(v.block))
            )?;
            if let Some(journal) = v.journal {
                let flushed = if journal == crate::spec::JournalMode::Sync { ", each record flushed" } else { "" };
                writeln!(
                    f,
                    "journal ({journal}): every write recorded before and after it{flushed}, in the work directory's \
                     verify.map; the data is kept for --verify-only"
                )?;
            }
        }
        for notice in &self.notices {
            writeln!(f, "note: {notice}")?;
        }
        for (i, phase) in self.phases.iter().enumerate() {
            writeln!(f)?;
            write_phase(f, i, phase, &self.target)?;
        }
        Ok(())
    }
}

/// What the run's data is: the files created in the work directory, or the file or device(s) used as they are.
fn write_data(f: &mut fmt::Formatter<'_>, t: &super::TargetPlan) -> fmt::Result {
    if let Some(dir) = &t.work_dir {
        let created: Vec<_> = t.files.iter().filter(|f| f.created).collect();
        let total: u64 = created.iter().map(|f| f.size.0).sum();
        // A verified file-set run has a work directory for its manifest and no data files in it.
        let sizes = match created.first() {
            Some(first) if created.iter().all(|f| f.size == first.size) => {
                format!("{} × {}", created.len(), first.size)
            }
            _ => format!("{} files", created.len()),
        };
        writeln!(
            f,
            "data files: {sizes} = {} in {} (created for the run, removed after it)",
            Bytes(total),
            dir.display()
        )?;
    } else if t.kind == TargetKind::BlockDevice {
        // Several devices (a fio file's jobs on their own devices): each, in the file table's order.
        let each: Vec<String> =
            t.files.iter().map(|file| format!("{} of {}", file.size, file.path.display())).collect();
        writeln!(f, "data: {}", each.join("; "))?;
    } else if let Some(file) = t.files.first() {
        writeln!(f, "data: {} of {}", file.size, file.path.display())?;
    }
    Ok(())
}

fn write_phase(f: &mut fmt::Formatter<'_>, index: usize, p: &PhasePlan, target: &super::TargetPlan) -> fmt::Result {
    writeln!(f, "phase {}: {}", index + 1, p.name)?;
    let r = match &p.kind {
        PhaseKind::Raw(raw) => raw,
        PhaseKind::FileSet(fs) => return write_fileset(f, p, fs),
        PhaseKind::Streams(streams) => return super::display_streams::write_streams(f, streams, target),
    };
    if r.concurrent {
        writeln!(f, "  runs at the same time as the phase before it")?;
    }
    if let Some(group) = &p.group {
        writeln!(f, "  reporting group {group}")?;
    }
    if target.kind == TargetKind::BlockDevice && target.files.len() > 1 {
        let on: Vec<String> = r.files.iter().map(|&i| target.files[i as usize].path.display().to_string()).collect();
        writeln!(f, "  on {}", on.join(", "))?;
    }
    write_io(f, r)?;
    write_length(f, p, r)?;
    write_pacing(f, r)?;
    if let Some(t) = p.fio.as_ref().and_then(|fio| fio.latency_target.as_ref()) {
        let (target, window) = (format_latency_ns(t.target.as_nanos() as f64), format_duration(t.window));
        let end = if t.keep_adjusting { "adjusting it until the end" } else { "stopping once it holds" };
        writeln!(
            f,
            "  latency target: searches queue depths 1 to {} for the deepest at which {} % of the I/O takes at \
             most {target} over each {window} window, {end}",
            r.iodepth, t.percentile
        )?;
    }
    write_sync_and_cache(f, r)?;
    writeln!(f, "  on error: {}", if p.continue_on_error { "record and continue" } else { "stop the phase" })?;
    writeln!(f, "  seed {:#x}", p.seed)
}

/// What each operation is: the mix of reads and writes, the block sizes, the engine and the data set.
fn write_io(f: &mut fmt::Formatter<'_>, r: &RawPlan) -> fmt::Result {
    let access = match &r.access {
        Access::Sequential => "sequential".to_string(),
        Access::Random { distribution } => format!("random, {}", describe_distribution(distribution)),
    };
    writeln!(f, "  rw {} ({access}), reads {}%", r.rw, r.read_percent)?;
    write_parts(f, &r.parts)?;
    if r.workers.iter().any(|w| w.mixed.as_ref().is_some_and(|m| m.held.is_some())) {
        writeln!(f, "  {HELD}")?;
    }
    if let Some(limit) = r.skew_limit_pct.filter(|_| !r.parts.is_empty()) {
        writeln!(
            f,
            "  fails the run when a worker's share is off its skew by more than {limit} points (abort_failed_skew)"
        )?;
    }
    match &r.write_block_sizes {
        Some(writes) => writeln!(
            f,
            "  block size {} for reads, {} for writes",
            describe_sizes(&r.block_sizes),
            describe_sizes(writes)
        )?,
        None => writeln!(f, "  block size {}", describe_sizes(&r.block_sizes))?,
    }
    let direct = match r.direct {
        DirectMode::Required => "direct I/O (required)",
        DirectMode::Preferred => "direct I/O (buffered if the filesystem refuses it)",
        DirectMode::Off => "buffered I/O",
    };
    writeln!(f, "  engine {}, iodepth {}, jobs {}, {direct}", r.engine.name(), r.iodepth, r.jobs)?;
    writeln!(
        f,
        "  data set {} over {} file(s), offsets aligned to {}",
        r.data_set,
        r.files.len(),
        Bytes(u64::from(r.workers.first().map_or(r.align, |w| w.workload.align)))
    )
}

/// How long the phase measures, and the warm-up before it.
fn write_length(f: &mut fmt::Formatter<'_>, p: &PhasePlan, r: &RawPlan) -> fmt::Result {
    let mut bounds = Vec::new();
    if let Some(runtime) = p.runtime {
        bounds.push(format!("for {}", format_duration(runtime)));
    }
    if let Some(bytes) = r.planned_bytes() {
        bounds.push(format!("until {bytes} of I/O"));
    }
    if let Some(read) = r.io_by_direction.read {
        bounds.push(format!("until {} read", Bytes(read)));
    }
    if let Some(written) = r.io_by_direction.written {
        bounds.push(format!("until {} written", Bytes(written)));
    }
    writeln!(f, "  measures {}{}", bounds.join(" or "), warm_up(p))
}

/// ", after a 2 s warm-up that is not measured", or nothing without a ramp.
fn warm_up(p: &PhasePlan) -> String {
    if p.ramp.is_zero() {
        String::new()
    } else {
        format!(", after a {} warm-up that is not measured", format_duration(p.ramp))
    }
}

/// When the jobs issue their operations: pacing, a count of operations, pauses, a late start, a rate floor.
fn write_pacing(f: &mut fmt::Formatter<'_>, r: &RawPlan) -> fmt::Result {
    if let Some(pacing) = r.pacing {
        let rate = match pacing.bytes_per_sec {
            Some(b) => format!("{:.1} MB/s ({:.1} ops/s)", b / 1e6, pacing.ops_per_sec),
            None => format!("{:.1} ops/s", pacing.ops_per_sec),
        };
        let arrivals = match pacing.arrivals {
            super::Arrivals::Linear => "evenly spaced",
            super::Arrivals::Poisson => "Poisson",
        };
        // A phase of parts (vdbench's wds in one rd) shares its rate among its jobs by their shares.
        let per = if r.workers.first().is_some_and(|w| w.mixed.is_some()) { "for the phase" } else { "per job" };
        writeln!(f, "  paced at {rate} {per}, {arrivals} arrivals")?;
    }
    if let Some(percent) = r.curve.rate_percent_of_max {
        writeln!(f, "  paced at {percent}% of the rate the last unpaced phase reached")?;
    }
    if let Some(ops) = r.workers.first().and_then(|w| w.io_ops) {
        writeln!(f, "  each job stops after {ops} operations")?;
    }
    if let Some(think) = r.thinktime {
        writeln!(f, "  pauses {} after every {} operations", format_duration(think.pause), think.every)?;
    }
    if !r.start_delay.is_zero() {
        writeln!(f, "  starts {} late", format_duration(r.start_delay))?;
    }
    if let Some(floor) = r.rate_floor {
        let mut limits = Vec::new();
        if let Some(b) = floor.bytes_per_sec {
            limits.push(format!("{:.1} MB/s", b / 1e6));
        }
        if let Some(o) = floor.ops_per_sec {
            limits.push(format!("{o:.0} IOPS"));
        }
        writeln!(f, "  fails if a job falls below {} over an interval", limits.join(" or "))?;
    }
    if let Some(s) = r.steady_state {
        let skip = if s.skip > 0 { format!(", after the first {} rounds", s.skip) } else { String::new() };
        writeln!(f, "  ends once steady ({}) over {} rounds of the interval{skip}", s.rule.label(), s.window)?;
    }
    Ok(())
}

/// What reaches the disk when, and what the page cache holds: syncs, O_SYNC, pre-reading, filling first.
fn write_sync_and_cache(f: &mut fmt::Formatter<'_>, r: &RawPlan) -> fmt::Result {
    if let Some(n) = r.fdatasync_every {
        writeln!(f, "  fdatasync after every {n} writes")?;
    }
    if r.sync_writes {
        writeln!(f, "  writes are synchronous (O_SYNC)")?;
    }
    if r.pre_read {
        writeln!(f, "  files are read into the page cache first")?;
    }
    if !r.invalidate {
        writeln!(f, "  the page cache is not dropped before the phase")?;
    }
    if !r.access_hint {
        writeln!(f, "  the kernel is not told the access pattern (read-ahead as it sees fit)")?;
    }
    if let Some(n) = r.fsync_every {
        writeln!(f, "  fsync after every {n} writes")?;
    }
    if r.end_fsync {
        writeln!(f, "  fsync every written file at the end")?;
    }
    if r.needs_data {
        writeln!(f, "  reads written data: files not yet written are filled first (not measured)")?;
    }
    if let Some(z) = &r.strided {
        let every = Bytes(z.stride());
        writeln!(f, "  strided zones: {} at the start of every {every}, one zone after another", z.size)?;
    }
    if let Some(s) = r.workers.first().and_then(|w| w.workload.offsets.stride) {
        let (min, max) = (Bytes(s.min), Bytes(s.max));
        writeln!(f, "  stride: each random offset is a skip of {min} to {max} past the last operation's end")?;
    }
    if let Some(data) = &r.data {
        writeln!(f, "  {}", data.describe())?;
    }
    Ok(())
}

fn write_fileset(f: &mut fmt::Formatter<'_>, p: &PhasePlan, fs: &super::FileSetPlan) -> fmt::Result {
    writeln!(f, "  file set, format {}, rate {:?}", fs.format, fs.rate)?;
    if let Some(with) = fs.trees.first().map(|t| t.format_with).filter(|w| *w != Default::default()) {
        let threads = with.threads.unwrap_or(super::defaults::FORMAT_THREADS);
        let xfer = with.xfersize.unwrap_or(super::defaults::FORMAT_CHUNK);
        writeln!(f, "  the format step writes with {threads} threads, in transfers of {xfer} (whole 4 KiB)")?;
    }
    for t in &fs.trees {
        writeln!(
            f,
            "  tree {}: depth {}, width {}, {} files per directory → {} directories, {} files, {} in {}{}{}",
            t.name,
            t.shape.depth,
            t.shape.width,
            t.shape.files_per_dir,
            t.dirs,
            t.files,
            t.bytes,
            t.root.display(),
            if t.direct { " (direct I/O)" } else { "" },
            t.share.map_or(String::new(), |s| {
                let (r, n) = (u64::from(s.rank), u64::from(s.ranks));
                format!(
                    "; shared by {n} ranks: the file count is rank {r}'s (files {r}, {}, {}, …), the size all ranks'",
                    r + n,
                    r + 2 * n
                )
            })
        )?;
    }
    for w in &fs.workloads {
        writeln!(
            f,
            "  workload {}: {} on {}, rdpct {}, xfersize {}, fileselect {:?}, fileio {}, {} threads{}{}",
            w.name,
            w.operation,
            fs.trees[w.tree].name,
            w.read_percent,
            w.xfer_label,
            w.select,
            w.fileio,
            w.threads,
            w.stop_after.map(|n| format!(", stopafter {n}")).unwrap_or_default(),
            if w.delete_first { ", each file deleted and created again before it is written" } else { "" }
        )?;
    }
    if fs.held {
        writeln!(f, "  {HELD}")?;
    }
    if let Some(data) = &fs.data {
        writeln!(f, "  {}", data.describe())?;
    }
    if let Some(runtime) = p.runtime {
        // With the warm-up: a vdbench rd's warmup= runs before its elapsed time.
        writeln!(f, "  measures for {}{}", format_duration(runtime), warm_up(p))?;
    }
    writeln!(f, "  seed {:#x}", p.seed)
}

/// What the dry run says of a phase whose workers hold their skew at the maximum rate.
const HELD: &str =
    "the workers hold their shares: one ahead of its share waits for the others (vdbench's controlled max)";

/// The parts of a phase with parts: one line each, with its share of the operations and the worker it runs on.
fn write_parts(f: &mut fmt::Formatter<'_>, parts: &[super::PartPlan]) -> fmt::Result {
    for part in parts {
        writeln!(
            f,
            "  part {}: {}, {} ({}% reads), block size {}, {} on {}",
            part.name,
            match part.own_rate_iops {
                Some(rate) => format!("{rate} operations/s of its own"),
                None => format!(
                    "{}% of operations",
                    format!("{:.2}", part.share_percent).trim_end_matches('0').trim_end_matches('.')
                ),
            },
            part.rw,
            part.read_percent,
            part.bs_label,
            part.data_set,
            match part.own_rate_iops {
                Some(_) => format!("a worker of its own ({})", part.queue),
                None => format!("worker {}", part.queue),
            }
        )?;
    }
    Ok(())
}

fn describe_sizes(sizes: &BlockSizes) -> String {
    match sizes {
        BlockSizes::Fixed { size } => Bytes(u64::from(*size)).to_string(),
        BlockSizes::Range { min, max, step } => {
            format!("{} to {} in steps of {}", Bytes(u64::from(*min)), Bytes(u64::from(*max)), Bytes(u64::from(*step)))
        }
        BlockSizes::Split { entries } => {
            // Weights are relative (whole percentages, or hundredths of one): each is shown as its share.
            let total: u64 = entries.iter().map(|e| u64::from(e.1)).sum::<u64>().max(1);
            let share = |weight: u32| Share((u64::from(weight) * 10_000 / total) as u32);
            entries
                .iter()
                .map(|(size, weight)| format!("{} {}%", Bytes(u64::from(*size)), share(*weight)))
                .collect::<Vec<_>>()
                .join(", ")
        }
    }
}

fn describe_distribution(d: &Distribution) -> String {
    match d {
        Distribution::Uniform => "uniform".into(),
        Distribution::Zipf { theta } => format!("zipf θ={theta}"),
        Distribution::Pareto { h } => format!("pareto h={h}"),
        Distribution::Normal { sigma_percent } => format!("normal σ={sigma_percent}%"),
        Distribution::Hotband => "vdbench hot band".into(),
        Distribution::Poisson { midpoint } => format!("vdbench poisson, midpoint {midpoint}"),
        Distribution::Zoned { zones } => {
            let parts: Vec<String> = zones
                .iter()
                .map(|z| match z.size {
                    ZoneSize::Percent(p) => format!("{}% of accesses to {p}%", z.access_percent),
                    ZoneSize::Bytes(b) => format!("{}% of accesses to {}", z.access_percent, Bytes(b)),
                })
                .collect();
            format!("zoned from the start of each file: {}", parts.join(", then "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_sizes_show_each_weight_as_its_share_of_the_whole() {
        let shown = |entries: Vec<(u32, u32)>| describe_sizes(&BlockSizes::Split { entries });
        assert_eq!(shown(vec![(4096, 60), (65536, 40)]), "4 KiB 60%, 64 KiB 40%");
        assert_eq!(shown(vec![(4096, 450), (8192, 9550)]), "4 KiB 4.5%, 8 KiB 95.5%");
        assert_eq!(shown(vec![(4096, 1), (8192, 1)]), "4 KiB 50%, 8 KiB 50%", "relative weights (plan::mix)");
    }

    /// A verified file-set run has a work directory (for its manifest) and no data files: its dry run looked at
    /// the first of none and panicked.
    #[test]
    fn a_verified_file_set_plan_prints_without_data_files() {
        let text = "[[phase]]\nverify = \"crc32c\"\n[phase.fileset]\n[[phase.fileset.tree]]\nname = \"t\"\n\
                    depth = 1\nwidth = 2\nfiles = 2\nsize = \"64k\"\n[[phase.fileset.workload]]\noperation = \"read\"\n";
        let job = crate::spec::parse_toml_job(std::path::Path::new("job.toml"), text).expect("a TOML job");
        let facts = crate::plan::Facts::directory(Some(Bytes::gib(1)));
        let options = crate::plan::RunOptions { run_id: "run-1".into(), ..Default::default() };
        let plan = crate::plan::build_plan(&job, &facts, &options).expect("planned");
        assert!(plan.to_string().contains("data files: 0 files = 0 B in /srv/.streamcap/run-1"), "{plan}");
    }
}
