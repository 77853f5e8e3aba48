//! vdbench's SD concatenation (`concatenatesds=yes`): each wd runs on all its sds as one lun, the sds laid end
//! to end in the order named, with the wd's own `threads=` (or the rd's `threads=`, shared by every wd of the
//! rd) instead of the sds'. In streamcap that is one workload whose files are the sds' luns, each with its own
//! size (`file-sizes`): the worker lays its files end to end, so random offsets (and hot bands, and strides)
//! range over all of them in proportion to their sizes and sequential I/O runs through one after the other.
//!
//! As in vdbench (`WG_entry.calculateContext` on the concatenated sd, whose size is the sum of its sds'), a
//! wd's `range=` or `hotband=` is a part of the whole concatenation, and the sds may not say `range=`,
//! `offset=`, `align=` or `hitarea=` (`SD_entry.readParms`: "SD concatenation: 'range=' parameter may not be
//! used."). A wd on several hosts runs on each over the whole concatenation, its threads spread evenly over the
//! hosts (`RD_entry.spreadSdThreadsAcrossSlaves`), and a sequential one only on its first host
//! (`WhereWhatWork.mustRunOnSingleSlave`).

use super::raw_wd::{RawRun, size_of};
use super::{Mapper, OpenFlags, fail, openflags, whole};
use crate::spec::vdbench::VdbError;
use crate::spec::vdbench::lexer::Param;
use crate::spec::vdbench::model::{Kind, Record};
use crate::units::Bytes;

/// Keywords of an sd that vdbench refuses with concatenation (`ConcatSds.abortIf` in `SD_entry.readParms`).
const SD_REFUSED: &[&str] = &["range", "offset", "align", "hitarea"];

/// Each host's threads when `total` are spread over `hosts`: vdbench first raises the count to a multiple of
/// the hosts ("Workload thread count ... increased ... to make it a multiple of the number of slaves"), then
/// deals them out evenly.
pub(super) fn per_host(total: u32, hosts: u32) -> u32 {
    total.div_ceil(hosts.max(1))
}

impl Mapper<'_> {
    /// One generator per wd over its sds (the rd's `sd=` overrides the wd's), as one lun, on each of its hosts.
    pub(super) fn concatenated(
        &mut self,
        rd: &Record,
        wds: &[&Record],
        shares: &[f64],
    ) -> Result<Vec<RawRun>, VdbError> {
        // rd threads= reads as forthreads: with concatenation it is the threads all the rd's wds share.
        let shared = rd.get("forthreads").is_some();
        let mut runs = Vec::with_capacity(wds.len());
        for (&wd, &share) in wds.iter().zip(shares) {
            Self::check_wd(wd, true)?;
            let sds =
                if rd.get("sd").is_some() { self.named(rd, "sd", Kind::Sd)? } else { self.named(wd, "sd", Kind::Sd)? };
            let threads = whole(wd, "threads", "a number of threads")?;
            if threads.is_none() && !shared {
                return Err(VdbError::at(
                    &wd.at,
                    format!(
                        "{}: with concatenatesds=yes each wd needs threads= (its threads on the concatenated sds), \
                         unless the rd gives threads= or forthreads=, as vdbench requires",
                        wd.label()
                    ),
                ));
            }
            let sizes = self.concatenation_sizes(wd, &sds)?;
            let Some(total) = sizes.iter().try_fold(0u64, |sum, s| sum.checked_add(s.0)).map(Bytes) else {
                let why = format!(
                    "{}: its concatenated sds hold more than 16 EiB together: give them smaller size=",
                    wd.label()
                );
                return Err(VdbError::at(&wd.at, why));
            };
            self.check_starts(wd, &sds, &sizes)?;
            // The first sd as large as the whole: its range is the wd's range over the concatenation.
            let mut whole_sd = sds[0].clone();
            let at = sds[0].at.clone();
            whole_sd.params.push(("size", Param { key: "size".into(), value: total.0.to_string(), at }));
            let first = self.generator((rd, wd, &whole_sd), wd.name.clone(), String::new(), share)?;
            Self::check_flags((rd, wd), &sds, first.flags)?;
            let more_luns = sds[1..].iter().map(|sd| self.lun_of(sd)).collect::<Result<Vec<_>, _>>()?;
            let one = RawRun {
                more_luns,
                lun_sizes: sizes,
                threads: threads.map_or(first.threads, |t| t.clamp(1, u64::from(u32::MAX)) as u32),
                ..first
            };
            runs.extend(self.on_hosts(wd, one, shared)?);
        }
        Ok(runs)
    }

    /// The concatenated wd `one` on each of `wd`'s hosts (a sequential one on the first only), each with its
    /// part of the threads and of the skew, in a queue of its host.
    fn on_hosts(&mut self, wd: &Record, one: RawRun, shared: bool) -> Result<Vec<RawRun>, VdbError> {
        let mut hosts = self.hosts.of(wd)?;
        if one.seek == 0 {
            // 100 % sequential (seekpct=0 or eof) runs on one slave, the first that is given the work.
            hosts.truncate(1);
        }
        let n = hosts.len() as u32;
        let several = self.hosts.several();
        Ok(hosts
            .iter()
            .map(|host| {
                let on_host = if several { format!(" on {host}") } else { String::new() };
                let queue = if shared { "concatenated sds".to_string() } else { format!("{} (concatenated)", wd.name) };
                RawRun {
                    name: format!("{}{on_host}", wd.name),
                    queue: format!("{queue}{on_host}"),
                    threads: per_host(one.threads, n),
                    thread_hosts: n,
                    share: one.share / f64::from(n),
                    rank: self.hosts.rank_of(host),
                    ..one.clone()
                }
            })
            .collect())
    }

    /// The sds of one concatenation open their luns alike: streamcap's one workload opens all its files with the
    /// first sd's `openflags=` (with the wd's and rd's), so another sd saying otherwise is refused, not ignored.
    fn check_flags((rd, wd): (&Record, &Record), sds: &[&Record], first: OpenFlags) -> Result<(), VdbError> {
        for sd in &sds[1..] {
            let mut flags = OpenFlags::default();
            for rec in [*sd, wd, rd] {
                openflags(rec, &mut flags)?;
            }
            if (flags.direct, flags.sync, flags.fsync) != (first.direct, first.sync, first.fsync) {
                return Err(VdbError::at(
                    &sd.at,
                    format!(
                        "{} and {} are concatenated by {} but their openflags= differ: streamcap runs one \
                         concatenation as one workload, opened one way; give its sds the same openflags",
                        sds[0].label(),
                        sd.label(),
                        wd.label()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// An sd starts at one place in every concatenation it is in (`ConcatSds.calculateLbaRanges`: "If we have
    /// set an offset before, it better be the same").
    fn check_starts(&mut self, wd: &Record, sds: &[&Record], sizes: &[Bytes]) -> Result<(), VdbError> {
        let mut start = 0;
        for (sd, size) in sds.iter().zip(sizes) {
            match self.concat_starts.iter().find(|(name, _)| *name == sd.name) {
                Some((_, was)) if *was != start => {
                    return Err(VdbError::at(
                        &wd.at,
                        format!(
                            "{}: vdbench refuses this (\"SD concatenation: an SD ({}) may not be reused in a \
                             non-matching concatenation.\"), and so does streamcap: {} starts at {} here and at {} \
                             in an earlier concatenation; name the sds in the same order",
                            wd.label(),
                            sd.name,
                            sd.label(),
                            Bytes(start),
                            Bytes(*was)
                        ),
                    ));
                }
                Some(_) => {}
                None => self.concat_starts.push((sd.name.clone(), start)),
            }
            start += size.0;
        }
        Ok(())
    }

    /// The size of each of `sds`: its `size=`, or the size of its lun when that is an existing file; refusing
    /// what vdbench refuses on a concatenated sd.
    fn concatenation_sizes(&mut self, wd: &Record, sds: &[&Record]) -> Result<Vec<Bytes>, VdbError> {
        let mut sizes = Vec::with_capacity(sds.len());
        for sd in sds {
            // A concatenation's sds are one workload and never reach `generator`, which refuses these elsewhere.
            super::unsupported_all(sd, super::DEDUP_PER_RECORD)?;
            if let Some((key, p)) = SD_REFUSED.iter().find_map(|k| sd.get(k).map(|p| (k, p))) {
                return Err(fail(
                    sd,
                    p,
                    format!(
                        "vdbench refuses this with concatenatesds=yes (\"SD concatenation: '{key}=' parameter may not \
                         be used.\"), and so does streamcap: remove it, and give the wd range= or hotband= to use a \
                         part of the concatenated sds"
                    ),
                ));
            }
            let lun = self.lun_of(sd)?;
            let size = match size_of(sd, "size")? {
                Some(size) => size,
                None => match std::fs::metadata(&lun) {
                    Ok(meta) if meta.is_file() && meta.len() > 0 => Bytes(meta.len()),
                    _ => {
                        return Err(VdbError::at(
                            &sd.at,
                            format!(
                                "{} (in the concatenation of {}): give size=, the size of the lun {} (it is not an \
                                 existing file whose size streamcap could take)",
                                sd.label(),
                                wd.label(),
                                lun.display()
                            ),
                        ));
                    }
                },
            };
            sizes.push(size);
        }
        Ok(sizes)
    }
}
