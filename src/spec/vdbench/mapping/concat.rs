//! vdbench's SD concatenation (`concatenatesds=yes`): each wd runs on all its sds as one lun, the sds laid end
//! to end in the order named, with the wd's own `threads=` (or the rd's `threads=`, shared by every wd of the
//! rd) instead of the sds'. In streamcap that is one workload whose files are the sds' luns: the worker lays its
//! files end to end, so random offsets (and hot bands, and strides) range over all of them and sequential I/O
//! runs through one after the other.
//!
//! What is not built yet is refused with the reason: sds of different or unknown sizes (streamcap gives each
//! file of a workload the same size), `range=`, `offset=` and a hot band of part of the concatenation (they
//! would cut across the luns), and wds on several hosts.

use super::raw_wd::{RawRun, size_of};
use super::{Mapper, fail, whole};
use crate::spec::vdbench::VdbError;
use crate::spec::vdbench::model::{Kind, Record};
use crate::units::Bytes;

impl Mapper<'_> {
    /// One generator per wd over its sds (the rd's `sd=` overrides the wd's), as one lun.
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
            let hosts = self.hosts.of(wd)?;
            let [host] = hosts.as_slice() else {
                return Err(VdbError::at(
                    &wd.at,
                    format!("{}: concatenated sds on several hosts are not supported yet", wd.label()),
                ));
            };
            let size = Self::concatenation_size(wd, &sds)?;
            let queue = if shared { "concatenated sds".to_string() } else { format!("{} (concatenated)", wd.name) };
            let first = self.generator((rd, wd, sds[0]), wd.name.clone(), queue, share)?;
            let more_luns = sds[1..].iter().map(|sd| self.lun_of(sd)).collect::<Result<Vec<_>, _>>()?;
            let Some(total) = size.0.checked_mul(sds.len() as u64) else {
                return Err(VdbError::at(
                    &wd.at,
                    format!(
                        "{}: its {} concatenated sds of {size} each hold more than 16 EiB together: give the sds \
                         smaller size=",
                        wd.label(),
                        sds.len()
                    ),
                ));
            };
            runs.push(RawRun {
                size: Some(Bytes(total)),
                more_luns,
                threads: threads.map_or(first.threads, |t| t.clamp(1, u64::from(u32::MAX)) as u32),
                rank: self.hosts.rank_of(host),
                ..first
            });
        }
        Ok(runs)
    }

    /// The size of each of `sds` (all the same, each said), refusing what would cut across the luns.
    fn concatenation_size(wd: &Record, sds: &[&Record]) -> Result<Bytes, VdbError> {
        let mut across = sds.iter().flat_map(|sd| [(*sd, "range"), (*sd, "offset")]).chain([(wd, "range")]);
        if let Some((rec, key)) = across.find(|(rec, key)| rec.get(key).is_some()) {
            return Err(fail(
                rec,
                rec.get(key).expect("just found"),
                format!("{key}= with concatenatesds=yes is not supported yet: it would cut across the luns"),
            ));
        }
        if let Some(p) = wd.get("hotband")
            && !matches!(super::items(wd, "hotband", super::Units::Size)?, Some((ref v, _)) if v.as_slice() == [super::Item::Num(0.0), super::Item::Num(100.0)])
        {
            return Err(fail(
                wd,
                p,
                "a hot band of part of concatenated sds is not supported yet: use hotband=(0,100), the whole \
                 concatenation"
                    .into(),
            ));
        }
        let sizes: Vec<Option<Bytes>> = sds.iter().map(|sd| size_of(sd, "size")).collect::<Result<_, _>>()?;
        match sizes.as_slice() {
            [Some(first), rest @ ..] if rest.iter().all(|s| *s == Some(*first)) => Ok(*first),
            _ => Err(VdbError::at(
                &wd.at,
                format!(
                    "{}: concatenated sds need size= on each sd, the same for all ({}): streamcap gives each file \
                     of a workload the same size",
                    wd.label(),
                    sds.iter()
                        .zip(&sizes)
                        .map(|(sd, s)| format!("{}={}", sd.name, s.map_or("?".into(), |s| s.to_string())))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        }
    }
}
