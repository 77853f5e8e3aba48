//! Raw rds (sd/wd/rd) → phases. vdbench makes one workload generator per wd, sd and host of a run; one
//! generator is a plain phase (one worker with `iodepth` = the sd's threads), several are one phase with parts
//! (`spec::PhaseSpec::parts`): each part has its share of the rd's operations (the wd's `skew`, spread evenly
//! over its sds and hosts as vdbench spreads it; wds without a skew share what the others leave), and the parts
//! on one sd and host share that sd's threads (one queue). The rd's rate, loops and curve apply to the whole.
//! A wd with `iorate=` of its own (`wd_rates.rs`) makes parts with a fixed rate of their own and no share.

use super::super::expand;
use super::raw_loops;
use super::raw_wd::{RawRun, run_phase};
use super::timing::{Rate, RatedPhase, Timing, curve, rated, rd_rate};
use super::words::bytes;
use super::{Mapper, fail, one_number, unsupported_all};
use crate::spec::VdbenchExtras;
use crate::spec::vdbench::VdbError;
use crate::spec::vdbench::model::{Kind, Record};
use crate::spec::vdbench::values::Units;
use crate::spec::{ArrivalSpec, IoAmount, PhaseSpec};
use crate::units::Bytes;
use std::time::Duration;

/// Keywords of a raw rd with no meaning here yet, and why.
const RD_UNSUPPORTED: &[(&str, &str)] = &[
    ("replay", "replaying an I/O trace (replay=)"),
    ("startcmd", "running commands (startcmd=)"),
    ("endcmd", "running commands (endcmd=)"),
    ("mount", "mounting (mount=)"),
];

/// What every phase of a raw rd shares.
struct RawCommon {
    io_size: Option<Bytes>,
    /// maxdata below 100: passes over the luns.
    io_passes: Option<f64>,
    /// maxdataread and maxdatawritten: bytes, or passes below 100.
    io_read: Option<IoAmount>,
    io_written: Option<IoAmount>,
    arrival: ArrivalSpec,
    curve: (Vec<f64>, Option<Duration>),
    timing: Timing,
}

impl Mapper<'_> {
    pub(super) fn raw_phases(&mut self, rd: &Record, timing: Timing) -> Result<Vec<PhaseSpec>, VdbError> {
        Self::refuse_keywords(
            rd,
            &["fsd", "fwd", "fwdrate", "format", "operations"],
            "this is a file-system keyword, but this rd runs a raw workload (wd=)",
        )?;
        unsupported_all(rd, RD_UNSUPPORTED)?;
        let (generators, skew_said) = self.generators(rd)?;
        let (io_size, io_passes) = maxdata(rd)?;
        let (io_read, io_written) = (amount(rd, "maxdataread")?, amount(rd, "maxdatawritten")?);
        let common =
            RawCommon { io_size, io_passes, io_read, io_written, arrival: arrival(rd)?, curve: curve(rd)?, timing };
        let base_rate = rd_rate(rd, "iorate")?;
        let loops = expand::loops(rd)?;
        let mut phases = Vec::new();
        for combination in expand::combinations(&loops, rd)? {
            let (mut runs, mut rate) = (generators.clone(), base_rate);
            raw_loops::apply(&loops, &combination, rd, &mut runs, &mut rate)?;
            check_eof(rd, &runs)?;
            let name = expand::phase_name(rd, &loops, &combination, false);
            let rate = rate.expect("a single rate or a rate loop, checked by rd_rate");
            let data = super::data::loop_compression(&loops, &combination, rd)?;
            for point in rated(name, rate, &common.curve, "iorate") {
                let phase = rd_phase(point, &runs, &common);
                // vdbench's controlled max only when a wd said its skew, rate or priority (its waiter runs then).
                let hold_shares = phase.parts.is_some().then_some(skew_said);
                phases.push(PhaseSpec {
                    data: data.clone(),
                    vdbench: VdbenchExtras { hold_shares, ..phase.vdbench.clone() },
                    ..phase
                });
            }
        }
        Ok(phases)
    }

    /// Every generator of the rd: each wd on each of its sds (the rd's `sd=` overrides the wd's) and hosts; and
    /// whether a wd said its skew, its own rate or a priority.
    fn generators(&mut self, rd: &Record) -> Result<(Vec<RawRun>, bool), VdbError> {
        let default_wd = self.default_wd(rd);
        let wds = match &default_wd {
            Some(wd) => vec![wd],
            None => self.named(rd, "wd", Kind::Wd)?,
        };
        let rates = self.wd_rates(rd, &wds)?;
        let shares = wd_shares(rd, &wds, &rates.own)?;
        let skew_said = rates.said || wds.iter().any(|wd| wd.get("skew").is_some());
        let runs =
            if self.concatenate { self.concatenated(rd, &wds, &shares)? } else { self.separate(rd, &wds, &shares)? };
        if let Some(streamed) = runs.iter().find(|r| r.streams.is_some())
            && runs.len() > 1
            && (wds.len() > 1 || self.hosts.several())
        {
            let p = rd.get("wd").or_else(|| rd.get("sd")).expect("the rd names its wds or its sds");
            let why = if wds.len() > 1 {
                "only one wd may run in an rd with streams= (vdbench refuses it too): run the others in rds of \
                 their own"
                    .to_string()
            } else {
                format!(
                    "{} has streams= on several hosts, which is not supported yet: vdbench spreads one sd's streams \
                     over the hosts, streamcap would run them all on each; run it on one host",
                    streamed.name
                )
            };
            return Err(fail(rd, p, why));
        }
        if runs.iter().any(|r| r.flags.direct != runs[0].flags.direct) {
            let p = rd.get("wd").or_else(|| rd.get("sd")).expect("the rd names its wds or its sds");
            return Err(fail(
                rd,
                p,
                "some of this rd's sds use openflags=o_direct and some do not: streamcap runs \
                                    one rd with or without the page cache; give every sd the same openflags"
                    .into(),
            ));
        }
        if !runs.is_empty() && !runs[0].flags.direct {
            self.notice(
                "vdbench reads and writes through the page cache unless openflags=o_direct; this job does the same \
                 (add openflags=o_direct to the sd to bypass the cache)"
                    .into(),
            );
        }
        Ok((runs, skew_said))
    }

    /// One generator per wd, sd and host, as vdbench makes them without concatenation.
    fn separate(&mut self, rd: &Record, wds: &[&Record], shares: &[f64]) -> Result<Vec<RawRun>, VdbError> {
        let mut plan: Vec<(&Record, &Record, String)> = Vec::new();
        for &wd in wds {
            Self::check_wd(wd, false)?;
            let sds =
                if rd.get("sd").is_some() { self.named(rd, "sd", Kind::Sd)? } else { self.named(wd, "sd", Kind::Sd)? };
            let wd_hosts = self.hosts.of(wd)?;
            for sd in sds {
                for host in self.hosts.of(sd)?.into_iter().filter(|h| wd_hosts.contains(h)) {
                    plan.push((wd, sd, host));
                }
            }
        }
        let several = plan.len() > 1;
        let mut runs: Vec<(&Record, &Record, RawRun)> = Vec::with_capacity(plan.len());
        for (wd, sd, host) in &plan {
            let on_host = if self.hosts.several() { format!(" on {host}") } else { String::new() };
            let name = if several { format!("{} on {}{on_host}", wd.name, sd.name) } else { wd.name.clone() };
            let queue = format!("{}{on_host}", sd.name);
            let run = self.generator((rd, wd, sd), name, queue, 0.0)?;
            // A 100 % sequential wd runs on one slave, the first given it (vdbench's
            // WhereWhatWork.mustRunOnSingleSlave): two hosts would read the same blocks in step. Not a wd with
            // streams=, which vdbench runs on several (refused below).
            let taken = runs.iter().any(|(w, s, _)| std::ptr::eq(*w, *wd) && std::ptr::eq(*s, *sd));
            if run.seek == 0 && run.streams.is_none() && taken {
                continue;
            }
            runs.push((wd, sd, RawRun { rank: self.hosts.rank_of(host), ..run }));
        }
        let spread = |wd: &Record| runs.iter().filter(|(w, _, _)| std::ptr::eq(*w, wd)).count() as f64;
        let shared: Vec<f64> = runs
            .iter()
            .map(|(wd, _, _)| {
                shares[wds.iter().position(|w| std::ptr::eq(*w, *wd)).expect("a wd of the rd")] / spread(wd)
            })
            .collect();
        Ok(runs.into_iter().zip(shared).map(|((_, _, run), share)| RawRun { share, ..run }).collect())
    }

    /// The workload of an rd that names sds but no wd: vdbench runs a copy of the latest `wd=default` (or of its
    /// built-in defaults) on the rd's sds (`RD_entry.selectWhichWdsToUse`), and so does streamcap, with a notice.
    fn default_wd(&mut self, rd: &Record) -> Option<Record> {
        if rd.get("wd").is_some() || rd.get("sd").is_none() {
            return None;
        }
        self.notice("an rd that names sds but no wd runs the latest wd=default on them, as vdbench does".into());
        let params = self.model.wd_default.clone();
        Some(Record { kind: Kind::Wd, name: "default".into(), at: rd.at.clone(), params })
    }
}

/// Each wd's percent of the rd's operations: its `skew`, or an even part of what the skews said leave; a wd with
/// a rate of its own (`own`) has none and leaves the skews to the others (vdbench's `RD_entry`).
fn wd_shares(rd: &Record, wds: &[&Record], own: &[Option<f64>]) -> Result<Vec<f64>, VdbError> {
    let said: Vec<Option<f64>> =
        wds.iter().map(|wd| one_number(wd, "skew", Units::Size, "a percentage")).collect::<Result<_, _>>()?;
    let total: f64 = said.iter().flatten().sum();
    let unsaid = said.iter().zip(own).filter(|(s, o)| s.is_none() && o.is_none()).count();
    let all_own = own.iter().all(Option::is_some);
    let bad = said.iter().flatten().any(|s| !(0.0..=100.0).contains(s))
        || total > 100.0001
        || (unsaid == 0 && !all_own && (total - 100.0).abs() > 0.0001);
    if bad {
        let p = rd.get("wd").or_else(|| rd.get("sd")).expect("the rd names its wds or its sds");
        let list: Vec<String> =
            wds.iter().zip(&said).map(|(w, s)| format!("{}={}", w.name, s.unwrap_or(0.0))).collect();
        return Err(fail(
            rd,
            p,
            format!(
                "the skews of this rd's wds ({}) add up to {total}: they must add up to 100 (wds without skew= \
                 share what the others leave)",
                list.join(", ")
            ),
        ));
    }
    let rest = if unsaid > 0 { (100.0 - total) / unsaid as f64 } else { 0.0 };
    Ok(said.into_iter().zip(own).map(|(s, o)| if o.is_some() { 0.0 } else { s.unwrap_or(rest) }).collect())
}

/// One phase of the rd: a generator alone, or the generators as parts (also one alone that belongs to one of
/// mpirun's ranks: only a part says its rank).
fn rd_phase(point: RatedPhase, runs: &[RawRun], c: &RawCommon) -> PhaseSpec {
    let mut phase = match runs {
        [one] if one.rank.is_none() && one.own_rate.is_none() => run_phase(one),
        many => PhaseSpec {
            direct: many.first().map(|r| r.flags.direct),
            parts: Some(
                many.iter()
                    .map(|run| PhaseSpec {
                        // A wd's own iorate= is a part's own rate, paced as the rd paces (distribution=).
                        skew: run.own_rate.is_none().then_some(run.share),
                        rate_iops: run.own_rate.map(|r| (r.round() as u64).max(1)),
                        rate_process: run.own_rate.map(|_| c.arrival),
                        queue: Some(run.queue.clone()),
                        rank: run.rank,
                        ..run_phase(run)
                    })
                    .collect(),
            ),
            ..PhaseSpec::default()
        },
    };
    phase.name = Some(point.name);
    phase.runtime = Some(c.timing.runtime);
    phase.ramp = Some(c.timing.ramp);
    if runs.iter().all(|r| r.eof) {
        // vdbench's pass includes its warm-up interval: no warm-up here, so the pass is exactly one, all measured.
        phase.runtime = Some(c.timing.runtime + c.timing.ramp);
        phase.ramp = Some(Duration::ZERO);
    }
    phase.io_size = c.io_size;
    (phase.vdbench.io_read, phase.vdbench.io_written) = (c.io_read, c.io_written);
    // seekpct=eof ends a generator after one pass of its lun (sooner with maxdata= below one pass).
    let eof_passes = Some(c.io_passes.map_or(1.0, |p| p.min(1.0)));
    phase.io_passes = if matches!(runs, [one] if one.eof && one.rank.is_none()) { eof_passes } else { c.io_passes };
    for (part, run) in phase.parts.iter_mut().flatten().zip(runs) {
        part.io_passes = if run.eof { eof_passes } else { None };
    }
    if let Some(Rate::PerSecond(v)) = point.rate {
        phase.rate_iops = Some((v.round() as u64).max(1));
    }
    phase.vdbench.rate_percent_of_max = point.percent;
    phase.vdbench.curve_stop_latency = point.stop;
    if phase.rate_iops.is_some() || point.percent.is_some() {
        phase.rate_process = Some(c.arrival);
    }
    phase
}

/// A phase of seekpct=eof generators bounded by their passes alone, with no warm-up (vdbench's inserted format
/// run, which has no elapsed time): each writes its lun once and the phase ends when all have.
pub(super) fn eof_phase(name: String, runs: &[RawRun]) -> PhaseSpec {
    let point = RatedPhase { name, rate: Some(Rate::Max), percent: None, stop: None };
    let timing =
        Timing { runtime: Duration::ZERO, ramp: Duration::ZERO, interval: Duration::from_secs(1), pause: None };
    let (io_read, io_written, curve) = (None, None, (Vec::new(), None));
    let common =
        RawCommon { io_size: None, io_passes: None, io_read, io_written, arrival: ArrivalSpec::Poisson, curve, timing };
    let phase = rd_phase(point, runs, &common);
    // No skew said: each sd's worker goes as fast as it can (vdbench's uncontrolled max).
    let hold_shares = phase.parts.is_some().then_some(false);
    PhaseSpec {
        runtime: None,
        ramp: Some(Duration::ZERO),
        vdbench: VdbenchExtras { hold_shares, ..phase.vdbench.clone() },
        ..phase
    }
}

/// `seekpct=eof` where streamcap can end each generator at the end of its lun as vdbench does: vdbench ends the
/// run once every eof workload is done, so every generator of the rd must be one (the others would run on to
/// `elapsed=` here), each alone on its sd (streamcap mixes the workloads of one sd on one worker, and counts
/// their operations together).
fn check_eof(rd: &Record, runs: &[RawRun]) -> Result<(), VdbError> {
    let Some(eof) = runs.iter().find(|r| r.eof) else { return Ok(()) };
    let p = rd.get("wd").or_else(|| rd.get("sd")).expect("the rd names its wds or its sds");
    if let Some(other) = runs.iter().find(|r| !r.eof) {
        return Err(fail(
            rd,
            p,
            format!(
                "{} has seekpct=eof and {} does not: vdbench ends the run when every eof workload reaches the end \
                 of its lun, which streamcap does only when all of the rd's workloads have seekpct=eof; run the \
                 others in an rd of their own",
                eof.name, other.name
            ),
        ));
    }
    if let Some(shared) = runs.iter().find(|r| runs.iter().filter(|o| o.queue == r.queue).count() > 1) {
        return Err(fail(
            rd,
            p,
            format!(
                "several seekpct=eof workloads on sd {}: streamcap ends a pass per sd, not per workload sharing \
                 one; give each workload its own sd, or run them in rds of their own",
                shared.queue
            ),
        ));
    }
    Ok(())
}

fn arrival(rd: &Record) -> Result<ArrivalSpec, VdbError> {
    let Some((w, p)) = super::words(rd, "distribution")? else { return Ok(ArrivalSpec::Poisson) };
    match w.first().map(|w| w.to_ascii_lowercase()).as_deref() {
        Some("exponential") if w.len() == 1 => Ok(ArrivalSpec::Poisson),
        Some("deterministic") if w.len() == 1 => Ok(ArrivalSpec::Linear),
        _ => Err(fail(
            rd,
            p,
            "expected exponential or deterministic (uniform and variable arrivals are not supported yet)".into(),
        )),
    }
}

/// vdbench's maxdata: bytes, or below 100 a multiple of the luns' size (maxdata=1: one pass, to fill them).
fn maxdata(rd: &Record) -> Result<(Option<Bytes>, Option<f64>), VdbError> {
    Ok(match amount(rd, "maxdata")? {
        Some(IoAmount::Bytes(b)) => (Some(b), None),
        Some(IoAmount::Passes(p)) => (None, Some(p)),
        None => (None, None),
    })
}

/// `maxdata=`, `maxdataread=` or `maxdatawritten=` (`key`): bytes, or below 100 a multiple of the total size of
/// the rd's sds (vdbench's `CollectSlaveStats.getLimit`), counted after the warm-up.
fn amount(rd: &Record, key: &str) -> Result<Option<IoAmount>, VdbError> {
    let expected = "an amount such as 100g, or passes below 100 such as 1";
    match one_number(rd, key, Units::Size, expected)? {
        Some(v) if v <= 0.0 => {
            Err(fail(rd, rd.get(key).expect("just read"), format!("{key} must be above 0: {expected}")))
        }
        Some(v) if v < 100.0 => Ok(Some(IoAmount::Passes(v))),
        Some(v) => Ok(Some(IoAmount::Bytes(bytes(v).map_err(|m| fail(rd, rd.get(key).expect("just read"), m))?))),
        None => Ok(None),
    }
}
