//! vdbench records: the parameter stream grouped into general parameters and hd/sd/wd/fsd/fwd/rd records, each
//! keyword resolved to its full name the way vdbench does it (any prefix of at least two characters, the first
//! keyword in vdbench's own order winning: `xf` is xfersize, `th` threads, `el` elapsed, `fo` forxfersize, `form`
//! format), `xx=default` records applied to the records that follow them, and `--set` overrides.
//!
//! Values stay text here; `mapping` parses them per keyword.

use std::collections::HashMap;

use super::keywords::{Entry, FSD, FWD, GENERAL, HD, Match, RD, SD, WD};
use super::lexer::{Lexed, Param, unprotect};
use super::{Problems, VdbError, Where};

/// The kinds of record, in the order vdbench expects them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Kind {
    General,
    Hd,
    Sd,
    Wd,
    Fsd,
    Fwd,
    Rd,
}

impl Kind {
    fn table(self) -> &'static [Entry] {
        match self {
            Kind::General => GENERAL,
            Kind::Hd => HD,
            Kind::Sd => SD,
            Kind::Wd => WD,
            Kind::Fsd => FSD,
            Kind::Fwd => FWD,
            Kind::Rd => RD,
        }
    }

    pub fn keyword(self) -> &'static str {
        match self {
            Kind::General => "general",
            Kind::Hd => "hd",
            Kind::Sd => "sd",
            Kind::Wd => "wd",
            Kind::Fsd => "fsd",
            Kind::Fwd => "fwd",
            Kind::Rd => "rd",
        }
    }

    fn of_record_keyword(key: &str) -> Option<Kind> {
        Some(match key {
            "hd" => Kind::Hd,
            "sd" => Kind::Sd,
            "wd" => Kind::Wd,
            "fsd" => Kind::Fsd,
            "fwd" => Kind::Fwd,
            "rd" => Kind::Rd,
            _ => return None,
        })
    }

    /// Resolves a keyword as vdbench does; `None` when this kind of record has no such keyword.
    pub fn resolve(self, key: &str) -> Option<(&'static str, bool)> {
        self.table().iter().find_map(|&(pattern, canonical, how)| {
            let hit = match how {
                Match::Exact => key == pattern,
                Match::Prefix | Match::LoopAlias => key.len() >= 2 && pattern.starts_with(key),
            };
            hit.then_some((canonical, how != Match::LoopAlias))
        })
    }

    /// The keywords to suggest in an error.
    pub fn expected(self) -> String {
        let mut names: Vec<&str> = Vec::new();
        for &(pattern, _, _) in self.table().iter().skip(usize::from(self != Kind::General)) {
            if !names.contains(&pattern) {
                names.push(pattern);
            }
        }
        names.join(", ")
    }
}

/// One record (`sd=sd1,lun=…`) with its keywords resolved; `xx=default` values come first, so the last value
/// of a keyword wins.
#[derive(Debug, Clone)]
pub(super) struct Record {
    pub kind: Kind,
    pub name: String,
    pub at: Where,
    pub params: Vec<(&'static str, Param)>,
}

impl Record {
    pub fn get(&self, canonical: &str) -> Option<&Param> {
        self.params.iter().rev().find(|(c, _)| *c == canonical).map(|(_, p)| p)
    }

    /// `sd=sd1` → "sd=sd1", for messages.
    pub fn label(&self) -> String {
        format!("{}={}", self.kind.keyword(), self.name)
    }
}

/// A whole parameter file, grouped.
#[derive(Debug, Default)]
pub(super) struct Model {
    pub general: Vec<(&'static str, Param)>,
    pub records: Vec<Record>,
    /// Every `wd=default` value of the file, in order (vdbench's "latest wd=default"): the workload of an rd
    /// that names sds but no wd.
    pub wd_default: Vec<(&'static str, Param)>,
    /// Every `hd=default` value: with no hd= record, vdbench's one host (localhost) takes them
    /// (`HostParms.readParms`: "Make sure we have at least one host defined (localhost)", a clone of the default).
    pub hd_default: Vec<(&'static str, Param)>,
}

impl Model {
    pub fn of(&self, kind: Kind) -> impl Iterator<Item = &Record> {
        self.records.iter().filter(move |r| r.kind == kind)
    }
}

/// Whether `key` inside a record of `kind` is a parameter rather than the start of a new record (`sd=` in a wd,
/// `fsd=` in an fwd, `wd=`/`sd=`/`fsd=`/`fwd=` in an rd, `hd=` in an sd, wd or fwd).
fn is_param_of(kind: Kind, key: &str) -> bool {
    match kind {
        Kind::General | Kind::Hd => false,
        Kind::Sd => key == "hd",
        Kind::Fsd => key == "hd",
        Kind::Wd => matches!(key, "sd" | "hd"),
        Kind::Fwd => matches!(key, "fsd" | "hd"),
        Kind::Rd => matches!(key, "wd" | "sd" | "fsd" | "fwd"),
    }
}

/// Groups the parameter stream into records the way vdbench reads it: a record keyword starts a new record unless
/// the current record takes it as a parameter. An unknown keyword or a bad record name is recorded in `problems`
/// and left out; the rest is grouped.
pub(super) fn group(lexed: &Lexed, problems: &mut Problems) -> Model {
    let mut g = Grouper::default();
    for param in &lexed.params {
        if let Err(e) = g.param(param) {
            problems.push(e);
        }
    }
    if let Err(e) = g.finish() {
        problems.push(e);
    }
    g.model.wd_default = g.defaults.remove(&Kind::Wd).unwrap_or_default();
    g.model.hd_default = g.defaults.remove(&Kind::Hd).unwrap_or_default();
    g.model
}

/// The state of grouping: the records so far, `xx=default` values by kind, and the record being read (with
/// whether it is a default record, and whether its name was refused).
#[derive(Default)]
struct Grouper {
    model: Model,
    defaults: HashMap<Kind, Vec<(&'static str, Param)>>,
    current: Option<(Record, bool, bool)>,
}

impl Grouper {
    fn param(&mut self, param: &Param) -> Result<(), VdbError> {
        let key = param.key.as_str();
        if let Some(kind) = Kind::of_record_keyword(key) {
            let starts = match &self.current {
                None => true,
                Some((record, _, _)) => record.kind == kind || !is_param_of(record.kind, key),
            };
            if starts {
                let finished = self.finish();
                self.start(kind, param)?;
                return finished;
            }
        }
        match &mut self.current {
            None => {
                let canonical = Kind::General.resolve(key).map(|c| c.0).ok_or_else(|| {
                    VdbError::keyword(
                        &param.at,
                        key,
                        None,
                        format!(
                            "unknown general parameter; expected a record (hd=, sd=, wd=, fsd=, fwd=, rd=) or one of {}",
                            Kind::General.expected()
                        ),
                    )
                })?;
                self.model.general.push((canonical, param.clone()));
            }
            Some((record, _, _)) => {
                let canonical = record.kind.resolve(key).map(|c| c.0).ok_or_else(|| {
                    VdbError::keyword(
                        &param.at,
                        key,
                        Some(record.label()),
                        format!("unknown keyword; expected one of {}", record.kind.expected()),
                    )
                })?;
                record.params.push((canonical, param.clone()));
            }
        }
        Ok(())
    }

    /// Starts a record; a name that is not one still starts it (so its parameters are not read as general
    /// ones), but it is left out.
    fn start(&mut self, kind: Kind, param: &Param) -> Result<(), VdbError> {
        let name = unprotect(&param.value);
        let is_default = name == "default";
        let mut params = if is_default { Vec::new() } else { self.defaults.get(&kind).cloned().unwrap_or_default() };
        // The record keyword itself is kept so that `--set` and messages can find it.
        params.push((kind.keyword(), param.clone()));
        let bad = name.contains(['(', ')', ',']) || name.trim().is_empty();
        self.current = Some((Record { kind, name: name.clone(), at: param.at.clone(), params }, is_default, bad));
        if bad {
            let key = kind.keyword();
            return Err(VdbError::keyword(
                &param.at,
                key,
                None,
                format!("'{name}' is not a name: a {key}= record starts with one name, as in {key}={key}1"),
            ));
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), VdbError> {
        let Some((record, is_default, bad)) = self.current.take() else { return Ok(()) };
        if bad {
            return Ok(());
        }
        if is_default {
            self.defaults.entry(record.kind).or_default().extend(record.params);
            return Ok(());
        }
        if let Some(other) = self.model.records.iter().find(|r| r.kind == record.kind && r.name == record.name) {
            return Err(VdbError::keyword(
                &record.at,
                record.kind.keyword(),
                None,
                format!("{} is defined twice (first at {}); give each a different name", record.label(), other.at),
            ));
        }
        self.model.records.push(record);
        Ok(())
    }
}

/// Applies `--set key=value`: the keyword is replaced in every record whose kind has it, spelled out, as its own
/// keyword (not an rd's loop form), and in every record that already says it (so `size` reaches an fsd's
/// `sizes=` but `files` does not become an fwd's `fileselect`). Returns whether any record took it.
pub(super) fn apply_set(model: &mut Model, key: &str, value: &str) -> bool {
    let key = key.trim().to_ascii_lowercase();
    let at = Where::Option(format!("--set {key}={value}"));
    let mut taken = false;
    for record in &mut model.records {
        let spelled_out = record.kind.table().iter().find(|e| e.0 == key);
        let (canonical, take) = match spelled_out {
            Some(&(_, canonical, how)) => (canonical, how != Match::LoopAlias || record.get(canonical).is_some()),
            // An abbreviation or a near name (`size` for `sizes`) only where the record says it the same way.
            None => match record.kind.resolve(&key) {
                Some((canonical, _)) => (canonical, record.params.iter().any(|(c, p)| *c == canonical && p.key == key)),
                None => continue,
            },
        };
        // --set never renames a record, and skips keywords a kind only has for setups streamcap refuses (a
        // wd's own threads= and iorate=), so that `--set threads=16` reaches the sd and `--set iorate=500` the rd.
        let refused = record.kind == Kind::Wd && matches!(canonical, "threads" | "iorate");
        if canonical == record.kind.keyword() || refused {
            continue;
        }
        if take {
            record.params.push((canonical, Param { key: key.clone(), value: value.to_string(), at: at.clone() }));
            taken = true;
        }
    }
    taken
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::vdbench::lexer::try_lex as lex;
    use std::path::Path;

    fn model(text: &str) -> Result<Model, VdbError> {
        let mut problems = Problems::default();
        let model = group(&lex(Path::new("t.vdb"), text, &[]).unwrap(), &mut problems);
        problems.into_first().map_or(Ok(model), Err)
    }

    #[test]
    fn abbreviations_resolve_in_vdbench_order() {
        assert_eq!(Kind::Wd.resolve("xf"), Some(("xfersize", true)));
        assert_eq!(Kind::Wd.resolve("re"), Some(("rdpct", true)));
        assert_eq!(Kind::Wd.resolve("se"), Some(("seekpct", true)));
        assert_eq!(Kind::Sd.resolve("th"), Some(("threads", true)));
        assert_eq!(Kind::Rd.resolve("el"), Some(("elapsed", true)));
        assert_eq!(Kind::Rd.resolve("in"), Some(("interval", true)));
        assert_eq!(Kind::Rd.resolve("wa"), Some(("warmup", true)));
        assert_eq!(Kind::Rd.resolve("fo"), Some(("forxfersize", true)));
        assert_eq!(Kind::Rd.resolve("form"), Some(("format", true)));
        assert_eq!(Kind::Rd.resolve("th"), Some(("forthreads", false)));
        assert_eq!(Kind::Rd.resolve("fwd"), Some(("fwd", true)));
        assert_eq!(Kind::Rd.resolve("fw"), Some(("fwdrate", true)));
        assert_eq!(Kind::Fsd.resolve("size"), Some(("sizes", true)));
        assert_eq!(Kind::Fwd.resolve("fileio"), Some(("fileio", true)));
        assert_eq!(Kind::Fwd.resolve("filei"), None);
        assert_eq!(Kind::Wd.resolve("x"), None, "one letter is never enough");
        assert_eq!(Kind::Wd.resolve("xfersiz"), Some(("xfersize", true)));
        assert_eq!(Kind::Wd.resolve("xfersizes"), None);
    }

    #[test]
    fn records_take_their_parameters_and_defaults_apply_to_later_records() {
        let m = model(
            "data_errors=1\nsd=default,threads=4\nsd=sd1,lun=/a\nwd=wd1,sd=sd1,xf=8k\nrd=rd1,wd=wd1,iorate=max\n",
        )
        .unwrap();
        assert_eq!(m.general.len(), 1);
        let sd = m.of(Kind::Sd).next().unwrap();
        assert_eq!(sd.get("threads").unwrap().value, "4");
        let wd = m.of(Kind::Wd).next().unwrap();
        assert_eq!(wd.get("sd").unwrap().value, "sd1");
        assert_eq!(wd.get("xfersize").unwrap().value, "8k");
        assert_eq!(m.of(Kind::Rd).next().unwrap().get("wd").unwrap().value, "wd1");
    }

    #[test]
    fn a_line_without_a_record_keyword_continues_the_record() {
        let m = model("sd=sd1,lun=/a\n threads=8\nsd=sd2,lun=/b\n").unwrap();
        let sds: Vec<&Record> = m.of(Kind::Sd).collect();
        assert_eq!(sds.len(), 2);
        assert_eq!(sds[0].get("threads").unwrap().value, "8");
        assert!(sds[1].get("threads").is_none());
    }

    #[test]
    fn unknown_keywords_name_the_line_the_record_and_the_choices() {
        let err = model("sd=sd1,lun=/a\nwd=wd1,sd=sd1,\n xfersiz=4k,bogus=1\n").unwrap_err();
        assert_eq!(err.keyword.as_deref(), Some("bogus"));
        assert_eq!(err.record.as_deref(), Some("wd=wd1"));
        assert!(err.message.contains("expected one of") && err.message.contains("xfersize"), "{}", err.message);
        assert_eq!(err.at, Where::Line("t.vdb".into(), 3));
        let err = model("sd=sd1,lun=/a\nsd=sd1,lun=/b\n").unwrap_err();
        assert!(err.message.contains("twice"), "{}", err.message);
    }

    #[test]
    fn set_overrides_native_keywords_and_what_an_rd_already_says() {
        let mut m = model(
            "fsd=fsd1,anchor=/a,files=20,size=5g\nfwd=fwd1,fsd=fsd1,threads=4\nrd=rd1,fwd=fwd1,fwdrate=max,threads=(1,2)\n",
        )
        .unwrap();
        assert!(apply_set(&mut m, "files", "200"));
        assert!(apply_set(&mut m, "size", "64m"));
        assert!(apply_set(&mut m, "threads", "8"));
        assert!(!apply_set(&mut m, "lun", "/x"));
        let fsd = m.of(Kind::Fsd).next().unwrap();
        assert_eq!(fsd.get("files").unwrap().value, "200");
        assert_eq!(fsd.get("sizes").unwrap().value, "64m");
        assert_eq!(m.of(Kind::Fwd).next().unwrap().get("threads").unwrap().value, "8");
        let rd = m.of(Kind::Rd).next().unwrap();
        assert_eq!(rd.get("forthreads").unwrap().value, "8");
        assert!(rd.get("forfiles").is_none(), "files is an fsd keyword; the rd did not loop over it");
    }
}
