//! vdbench's `formatsds=yes` (general parameter): before the first rd, one run that writes every sd the rds use
//! from start to end once, as vdbench 5.04.06 inserts it (`CreateSdFile.insertFormatsIfNeeded`): an rd named
//! `SD_format` at iorate=max with no elapsed time, and per sd a wd of sequential writes to the end of the lun
//! (`seekpct=-1`, `rdpct=0`) on 2 threads, in transfers of 128 KiB (512 bytes when the smallest sd is below
//! 128 KiB) or `formatxfersize=`. Here it is one phase whose generators are those wds, each a pass of its lun
//! (the seekpct=eof path), with no warm-up and no runtime: it ends when every sd is written.
//!
//! Must not: decide for the rds (their phases are the rds' own) or format file-system runs' fsds (vdbench formats
//! sds only; an fsd's format is the rd's `format=`).

use super::super::lexer::Param;
use super::super::model::{Kind, Record};
use super::raw::eof_phase;
use super::raw_wd::{RawRun, size_of};
use super::{Mapper, fail, whole};
use crate::spec::PhaseSpec;
use crate::spec::vdbench::VdbError;
use crate::units::Bytes;

/// vdbench's name for the inserted run (`SD_entry.SD_FORMAT_NAME`).
pub(super) const FORMAT_NAME: &str = "SD_format";
/// vdbench formats with 2 threads per sd (`forthreads=2` on the inserted rd).
const FORMAT_THREADS: u32 = 2;
const FORMAT_XFERSIZE: u64 = 128 * 1024;

impl<'a> Mapper<'a> {
    /// The format phase of `formatsds=yes` (said at `said`), over every sd the rds use, each once.
    pub(super) fn format_phase(&mut self, rds: &[&Record], said: &Param) -> Result<PhaseSpec, VdbError> {
        if self.concatenate {
            return Err(VdbError::keyword(
                &said.at,
                &said.key,
                None,
                "vdbench refuses formatsds= with concatenatesds=yes (\"mutually exclusive\"), and so does streamcap: \
                 remove one"
                    .into(),
            ));
        }
        let sds = self.sds_used(rds);
        let xfersize = self.format_xfersize(&sds)?;
        let rd = synthetic(Kind::Rd, FORMAT_NAME, said, &[]);
        let mut runs: Vec<RawRun> = Vec::new();
        for sd in &sds {
            let name = format!("{FORMAT_NAME}_{}", sd.name);
            let wd = synthetic(Kind::Wd, &name, said, &[("seekpct", "-1"), ("rdpct", "0"), ("xfersize", &xfersize)]);
            for host in self.hosts.of(sd)? {
                let on_host = if self.hosts.several() { format!(" on {host}") } else { String::new() };
                let run =
                    self.generator((&rd, &wd, sd), format!("{name}{on_host}"), format!("{}{on_host}", sd.name), 0.0)?;
                runs.push(RawRun { rank: self.hosts.rank_of(&host), threads: FORMAT_THREADS, ..run });
            }
        }
        let even = 100.0 / runs.len().max(1) as f64;
        runs.iter_mut().for_each(|r| r.share = even);
        self.notice(format!(
            "vdbench formatsds=yes: {FORMAT_NAME} writes each of the {} sds the rds use once, start to end, in {} \
             transfers, before the first rd",
            sds.len(),
            Bytes(xfersize.parse().expect("written from a number"))
        ));
        Ok(eof_phase(FORMAT_NAME.to_string(), &runs))
    }

    /// Every sd an rd names (its `sd=`, else its wds' `sd=`), each once, in the order first named. Names that do
    /// not resolve are left to the rd's own mapping to report.
    fn sds_used(&self, rds: &[&Record]) -> Vec<&'a Record> {
        let mut out: Vec<&'a Record> = Vec::new();
        for rd in rds {
            let sds = if rd.get("sd").is_some() {
                self.named(rd, "sd", Kind::Sd).unwrap_or_default()
            } else {
                let wds = self.named(rd, "wd", Kind::Wd).unwrap_or_default();
                wds.iter().flat_map(|wd| self.named(wd, "sd", Kind::Sd).unwrap_or_default()).collect()
            };
            for sd in sds {
                if !out.iter().any(|o| std::ptr::eq(*o, sd)) {
                    out.push(sd);
                }
            }
        }
        out
    }

    /// `formatxfersize=`, or vdbench's 128 KiB (512 bytes when the smallest sd of known size is below that).
    fn format_xfersize(&self, sds: &[&Record]) -> Result<String, VdbError> {
        let general = self.model.general.iter().rev().find(|(c, _)| *c == "formatxfersize");
        if let Some((_, p)) = general {
            let rec = synthetic(Kind::Rd, "general", p, &[("formatxfersize", &p.value)]);
            return match whole(&rec, "formatxfersize", "a transfer size such as 1m")? {
                Some(v) if v > 0 && v % 512 == 0 => Ok(v.to_string()),
                _ => Err(fail(&rec, p, "expected a transfer size such as 1m, a multiple of 512 bytes".into())),
            };
        }
        let sizes: Vec<Bytes> = sds.iter().map(|sd| size_of(sd, "size")).filter_map(|s| s.ok().flatten()).collect();
        let small = sizes.iter().any(|s| s.0 < FORMAT_XFERSIZE);
        Ok(if small { "512" } else { "131072" }.to_string())
    }
}

/// A record streamcap makes for vdbench's inserted run, placed where `formatsds=` was said (for messages).
fn synthetic(kind: Kind, name: &str, said: &Param, params: &[(&'static str, &str)]) -> Record {
    let params = params
        .iter()
        .map(|(k, v)| (*k, Param { key: k.to_string(), value: v.to_string(), at: said.at.clone() }))
        .collect();
    Record { kind, name: name.to_string(), at: said.at.clone(), params }
}
