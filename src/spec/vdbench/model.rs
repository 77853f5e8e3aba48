//! vdbench records: the parameter stream grouped into general parameters and hd/sd/wd/fsd/fwd/rd records, each
//! keyword resolved to its full name the way vdbench does it (any prefix of at least two characters, the first
//! keyword in vdbench's own order winning: `xf` is xfersize, `th` threads, `el` elapsed, `fo` forxfersize, `form`
//! format), `xx=default` records applied to the records that follow them, and `--set` overrides.
//!
//! Values stay text here; `mapping` parses them per keyword.

use std::collections::HashMap;

use super::lexer::{Lexed, Param, unprotect};
use super::{VdbError, Where};

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

/// How a table entry matches a keyword.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Match {
    /// Any prefix of at least two characters.
    Prefix,
    /// Only the whole word.
    Exact,
    /// A prefix of a plain keyword on an rd, meaning the for-loop (`xfersize=` on an rd is `forxfersize=`).
    LoopAlias,
}

use Match::{Exact, LoopAlias, Prefix};

type Entry = (&'static str, &'static str, Match);

const GENERAL: &[Entry] = &[
    ("data_errors", "data_errors", Prefix),
    ("messagescan", "messagescan", Prefix),
    ("compratio", "compratio", Prefix),
    ("validate", "validate", Prefix),
    ("debug", "debug", Prefix),
    ("journal", "journal", Prefix),
    ("dedupratio", "dedupratio", Prefix),
    ("dedupunit", "dedupunit", Prefix),
    ("dedupsets", "dedupsets", Prefix),
    ("deduphotsets", "deduphotsets", Prefix),
    ("dedupflipflop", "dedupflipflop", Prefix),
    ("concatenatesds", "concatenatesds", Prefix),
    ("create_anchors", "create_anchors", Prefix),
    ("fwd_thread_adjust", "fwd_thread_adjust", Prefix),
    ("histogram", "histogram", Prefix),
    ("report", "report", Prefix),
    ("formatxfersize", "formatxfersize", Prefix),
    ("formatthreads", "formatthreads", Prefix),
    ("startcmd", "startcmd", Prefix),
    ("start_cmd", "startcmd", Prefix),
    ("endcmd", "endcmd", Prefix),
    ("end_cmd", "endcmd", Prefix),
    ("showlba", "showlba", Prefix),
    ("port", "port", Prefix),
    ("monitor", "monitor", Prefix),
    ("timeout", "timeout", Prefix),
    ("loop", "loop", Prefix),
    ("patterns", "patterns", Prefix),
    ("abort_failed_skew", "abort_failed_skew", Prefix),
];

const HD: &[Entry] = &[
    ("hd", "hd", Exact),
    ("system", "system", Prefix),
    ("vdbench", "vdbench", Prefix),
    ("user", "user", Prefix),
    ("shell", "shell", Prefix),
    ("jvms", "jvms", Prefix),
    ("clients", "clients", Prefix),
    ("mount", "mount", Prefix),
];

const SD: &[Entry] = &[
    ("sd", "sd", Exact),
    ("host", "host", Prefix),
    ("hd", "host", Exact),
    ("lun", "lun", Prefix),
    ("size", "size", Prefix),
    ("threads", "threads", Prefix),
    ("openflags", "openflags", Prefix),
    ("offset", "offset", Prefix),
    ("align", "align", Prefix),
    ("hitarea", "hitarea", Prefix),
    ("count", "count", Prefix),
    ("journal", "journal", Prefix),
    ("range", "range", Prefix),
];

const WD: &[Entry] = &[
    ("wd", "wd", Exact),
    ("sd", "sd", Exact),
    ("skew", "skew", Prefix),
    ("xfersize", "xfersize", Prefix),
    ("readpct", "rdpct", Prefix),
    ("rdpct", "rdpct", Prefix),
    ("writepct", "wrpct", Prefix),
    ("wrpct", "wrpct", Prefix),
    ("range", "range", Prefix),
    ("hotband", "hotband", Prefix),
    ("seekpct", "seekpct", Prefix),
    ("stride", "stride", Prefix),
    ("priority", "priority", Prefix),
    ("iorate", "iorate", Prefix),
    ("rhpct", "rhpct", Prefix),
    ("whpct", "whpct", Prefix),
    ("host", "host", Prefix),
    ("hd", "host", Exact),
    ("openflags", "openflags", Prefix),
    ("user", "user", Exact),
    ("threads", "threads", Prefix),
    ("streams", "streams", Prefix),
];

const FSD: &[Entry] = &[
    ("fsd", "fsd", Exact),
    ("anchor", "anchor", Prefix),
    ("journal", "journal", Prefix),
    ("host", "host", Prefix),
    ("hd", "host", Exact),
    ("width", "width", Prefix),
    ("depth", "depth", Prefix),
    ("sizes", "sizes", Prefix),
    ("shared", "shared", Prefix),
    ("wss", "wss", Prefix),
    ("workingsetsize", "wss", Prefix),
    ("total_size", "totalsize", Prefix),
    ("totalsize", "totalsize", Prefix),
    ("files", "files", Prefix),
    ("distribution", "distribution", Prefix),
    ("cleanup", "cleanup", Prefix),
    ("openflags", "openflags", Prefix),
    ("log", "log", Exact),
    ("count", "count", Prefix),
];

const FWD: &[Entry] = &[
    ("fwd", "fwd", Exact),
    ("fsd", "fsd", Exact),
    ("readpct", "rdpct", Prefix),
    ("rdpct", "rdpct", Prefix),
    ("stopafter", "stopafter", Prefix),
    ("operation", "operation", Prefix),
    ("operations", "operation", Exact),
    ("fileselect", "fileselect", Prefix),
    ("fileio", "fileio", Exact),
    ("xfersizes", "xfersize", Prefix),
    ("skew", "skew", Prefix),
    ("threads", "threads", Prefix),
    ("target", "target", Prefix),
    ("host", "host", Prefix),
    ("hd", "host", Exact),
    ("openflags", "openflags", Prefix),
];

const RD: &[Entry] = &[
    ("rd", "rd", Exact),
    ("wd", "wd", Exact),
    ("sd", "sd", Exact),
    ("fsd", "fsd", Exact),
    ("iorate", "iorate", Prefix),
    ("maxdata", "maxdata", Exact),
    ("maxdataread", "maxdataread", Exact),
    ("maxdatawritten", "maxdatawritten", Exact),
    ("curve", "curve", Prefix),
    ("stopcurve", "stopcurve", Prefix),
    ("elapsed", "elapsed", Prefix),
    ("interval", "interval", Prefix),
    ("warmup", "warmup", Prefix),
    ("replay", "replay", Exact),
    ("pause", "pause", Prefix),
    ("forxfersize", "forxfersize", Prefix),
    ("forthreads", "forthreads", Prefix),
    ("forrdpct", "forrdpct", Prefix),
    ("forrhpct", "forrhpct", Prefix),
    ("forwhpct", "forwhpct", Prefix),
    ("forseekpct", "forseekpct", Prefix),
    ("forhitarea", "forhitarea", Prefix),
    ("forcompratio", "forcompratio", Prefix),
    ("forcompression", "forcompratio", Prefix),
    ("fordepth", "fordepth", Prefix),
    ("forwidth", "forwidth", Prefix),
    ("forfiles", "forfiles", Prefix),
    ("forsizes", "forsizes", Prefix),
    ("fortotalsize", "fortotalsize", Prefix),
    ("forwss", "forwss", Prefix),
    ("forworkingsetsize", "forwss", Prefix),
    ("foroperations", "foroperations", Prefix),
    ("forfileio", "forfileio", Prefix),
    ("forfileselect", "forfileselect", Prefix),
    ("xfersize", "forxfersize", LoopAlias),
    ("threads", "forthreads", LoopAlias),
    ("rdpct", "forrdpct", LoopAlias),
    ("rhpct", "forrhpct", LoopAlias),
    ("whpct", "forwhpct", LoopAlias),
    ("seekpct", "forseekpct", LoopAlias),
    ("hitarea", "forhitarea", LoopAlias),
    ("compratio", "forcompratio", LoopAlias),
    ("compression", "forcompratio", LoopAlias),
    ("depth", "fordepth", LoopAlias),
    ("width", "forwidth", LoopAlias),
    ("files", "forfiles", LoopAlias),
    ("sizes", "forsizes", LoopAlias),
    ("totalsize", "fortotalsize", LoopAlias),
    ("wss", "forwss", LoopAlias),
    ("workingsetsize", "forwss", LoopAlias),
    ("fileio", "forfileio", Exact),
    ("fileselect", "forfileselect", Exact),
    ("distribution", "distribution", Prefix),
    ("startcmd", "startcmd", Prefix),
    ("start_cmd", "startcmd", Prefix),
    ("endcmd", "endcmd", Prefix),
    ("end_cmd", "endcmd", Prefix),
    ("fwd", "fwd", Exact),
    ("fwdrate", "fwdrate", Prefix),
    ("operations", "operations", Prefix),
    ("format", "format", Prefix),
    ("openflags", "openflags", Prefix),
    ("mount", "mount", Prefix),
];

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
                Exact => key == pattern,
                Prefix | LoopAlias => key.len() >= 2 && pattern.starts_with(key),
            };
            hit.then_some((canonical, how != LoopAlias))
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
#[derive(Debug)]
pub(super) struct Model {
    pub general: Vec<(&'static str, Param)>,
    pub records: Vec<Record>,
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
/// the current record takes it as a parameter.
pub(super) fn group(lexed: &Lexed) -> Result<Model, VdbError> {
    let mut general = Vec::new();
    let mut records: Vec<Record> = Vec::new();
    let mut defaults: HashMap<Kind, Vec<(&'static str, Param)>> = HashMap::new();
    let mut current: Option<(Record, bool)> = None;

    let finish = |current: Option<(Record, bool)>,
                  records: &mut Vec<Record>,
                  defaults: &mut HashMap<Kind, Vec<(&'static str, Param)>>|
     -> Result<(), VdbError> {
        let Some((record, is_default)) = current else { return Ok(()) };
        if is_default {
            defaults.entry(record.kind).or_default().extend(record.params);
            return Ok(());
        }
        if let Some(other) = records.iter().find(|r| r.kind == record.kind && r.name == record.name) {
            return Err(VdbError::keyword(
                &record.at,
                record.kind.keyword(),
                None,
                format!("{} is defined twice (first at {}); give each a different name", record.label(), other.at),
            ));
        }
        records.push(record);
        Ok(())
    };

    for param in &lexed.params {
        let key = param.key.as_str();
        if let Some(kind) = Kind::of_record_keyword(key) {
            let starts = match &current {
                None => true,
                Some((record, _)) => record.kind == kind || !is_param_of(record.kind, key),
            };
            if starts {
                finish(current.take(), &mut records, &mut defaults)?;
                let name = unprotect(&param.value);
                if name.contains(['(', ')', ',']) || name.trim().is_empty() {
                    return Err(VdbError::keyword(
                        &param.at,
                        key,
                        None,
                        format!("'{name}' is not a name: a {key}= record starts with one name, as in {key}={key}1"),
                    ));
                }
                let is_default = name == "default";
                let mut params = if is_default { Vec::new() } else { defaults.get(&kind).cloned().unwrap_or_default() };
                // The record keyword itself is kept so that `--set` and messages can find it.
                params.push((kind.keyword(), param.clone()));
                let record = Record { kind, name, at: param.at.clone(), params };
                current = Some((record, is_default));
                continue;
            }
        }
        match &mut current {
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
                general.push((canonical, param.clone()));
            }
            Some((record, _)) => {
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
    }
    finish(current.take(), &mut records, &mut defaults)?;
    Ok(Model { general, records })
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
            Some(&(_, canonical, how)) => (canonical, how != LoopAlias || record.get(canonical).is_some()),
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
    use crate::spec::vdbench::lexer::lex;
    use std::path::Path;

    fn model(text: &str) -> Result<Model, VdbError> {
        group(&lex(Path::new("t.vdb"), text, &[]).unwrap())
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
