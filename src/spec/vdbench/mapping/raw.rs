//! Raw workloads (sd/wd/rd) → phases: one target (the sd's lun), one worker with `iodepth` = the sd's threads,
//! rw from rdpct and seekpct, and the rd's rate, loops and curve.

use super::words::*;
use super::*;
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
pub(super) fn rated<T>(
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
    pub(super) fn refuse_keywords(rd: &Record, keywords: &[&str], why: &str) -> Result<(), VdbError> {
        for k in keywords {
            if let Some(p) = rd.get(k) {
                return Err(fail(rd, p, why.to_string()));
            }
        }
        Ok(())
    }

    pub(super) fn local_host(&self, rec: &Record) -> Result<(), VdbError> {
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

    pub(super) fn raw_phases(&mut self, rd: &Record, timing: Timing) -> Result<Vec<PhaseSpec>, VdbError> {
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
        let written = crate::spec::vdbench::lexer::unprotect(&lun.value);
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
