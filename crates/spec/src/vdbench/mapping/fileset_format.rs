//! vdbench's `fwd=format`: an fwd of that name is no workload but the settings of every format step of the
//! run. The user guide (RD parameters for file system testing, 'format='): "Defaults for this workload are
//! `threads=8,xfersize=128k`. To override this, add `fwd=format,threads=nn,xfersize=nn`. You can also specify
//! `openflags=xxx`. All other parameters used in `fwd=format` will be ignored." vdbench 5.04.06 (`FwdEntry`)
//! takes its `threads=`, `openflags=` and first `xfersize=`, and leaves it out of the fwds an rd runs.
//!
//! Also here: an rd's `format=` words, the list form with `only` included.
//!
//! Must not: run it as a workload, or give it to rds that name it (`fwd=*` skips it, as in vdbench).

use super::{Mapper, fail, items, whole, words};
use crate::spec::vdbench::VdbError;
use crate::spec::vdbench::model::{Kind, Record};
use crate::spec::vdbench::values::{Item, Units};
use crate::spec::{FormatMode, FormatWorkloadSpec};
use crate::units::Bytes;

/// The name vdbench reserves for the format step's settings.
pub(super) const FORMAT_FWD: &str = "format";

impl Mapper<'_> {
    /// The format step's settings from `fwd=format`, if the file has one.
    pub(super) fn format_with(&mut self) -> Result<Option<FormatWorkloadSpec>, VdbError> {
        let Some(fwd) = self.model.of(Kind::Fwd).find(|f| f.name == FORMAT_FWD) else { return Ok(None) };
        if let Some(p) = fwd.get("openflags") {
            return Err(fail(
                fwd,
                p,
                "openflags= on fwd=format (flags for the format step alone) is not supported yet: give openflags= \
                 on the fsd, where it applies to the format and the workloads"
                    .into(),
            ));
        }
        let threads = whole(fwd, "threads", "a number of threads")?;
        if let Some(t) = threads.filter(|t| *t == 0 || *t > 4096) {
            let p = fwd.get("threads").expect("just read");
            return Err(fail(fwd, p, format!("{t} threads: give 1 to 4096")));
        }
        let ignored: Vec<&str> = (fwd.params.iter().map(|(c, _)| *c))
            .filter(|c| !matches!(*c, "fwd" | "threads" | "xfersize" | "host"))
            .collect();
        if !ignored.is_empty() {
            self.notice(format!(
                "vdbench fwd=format uses only threads= and xfersize=; {} ignored, as vdbench ignores them",
                ignored.iter().map(|c| format!("{c}=")).collect::<Vec<_>>().join(", ")
            ));
        }
        Ok(Some(FormatWorkloadSpec { threads: threads.map(|t| t as u32), xfersize: first_xfersize(fwd)? }))
    }
}

/// The first transfer size of `fwd`'s `xfersize=` (vdbench uses only the first).
fn first_xfersize(fwd: &Record) -> Result<Option<Bytes>, VdbError> {
    let Some((items, p)) = items(fwd, "xfersize", Units::Size)? else { return Ok(None) };
    match items.first() {
        Some(Item::Num(v)) if *v >= 1.0 && v.fract() == 0.0 => Ok(Some(Bytes(*v as u64))),
        _ => Err(fail(fwd, p, "expected a transfer size such as 128k".into())),
    }
}

/// The fwds an rd runs: those it names, but never `fwd=format`.
pub(super) fn without_format(fwds: Vec<&Record>) -> Vec<&Record> {
    fwds.into_iter().filter(|f| f.name != FORMAT_FWD).collect()
}

/// An rd's `format=`: one word, or the list form the user guide's examples use, a mode with `only` ("terminate
/// after the format"): `(yes,only)` is only, `(clean,only)` is clean (which ends the phase anyway) and
/// `(restart,only)` creates what is missing and ends the phase. Says whether the phase ends after the format.
pub(super) fn format_words(rd: &Record) -> Result<(FormatMode, bool), VdbError> {
    let Some((w, p)) = words(rd, "format")? else {
        // vdbench does not create the files unless asked; streamcap's default is to create them.
        return Ok((FormatMode::No, false));
    };
    let parse = |word: &String| word.parse::<FormatMode>().map_err(|e| fail(rd, p, e.to_string()));
    let expected = "format takes one of yes, no, restart, only, once, clean, directories, or a list of one of \
                    yes, restart, clean with only: (restart,only)";
    let words: Vec<&str> = w.iter().map(String::as_str).collect();
    match words.as_slice() {
        [_] => Ok((parse(&w[0])?, false)),
        [mode, "only"] | ["only", mode] => match parse(&(*mode).to_string())? {
            FormatMode::Yes | FormatMode::Only => Ok((FormatMode::Only, false)),
            FormatMode::Clean => Ok((FormatMode::Clean, false)),
            FormatMode::Restart => Ok((FormatMode::Restart, true)),
            _ => Err(fail(rd, p, expected.into())),
        },
        _ => Err(fail(rd, p, expected.into())),
    }
}
