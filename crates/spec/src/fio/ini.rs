//! The hand-written reader for fio's job-file syntax: `[section]` headers, `key=value` lines and bare flags,
//! whole-line and trailing comments, `include FILE`, and the substitutions fio performs in values (`${VAR}`
//! from the environment, `$ncpus`, `$mb_memory`, `$pagesize`).
//!
//! It only splits text into sections and entries, each remembering its file and line; it knows no option
//! names (that is `options.rs`) and does not decide which `[global]` applies to which job (`mapping.rs`). A line
//! it cannot read does not stop it: the problem is kept and reading goes on, so that one pass finds them all. A
//! value it cannot substitute (an unset `${VAR}`) stays on its entry with the problem, for the job that uses it
//! to report (a job refused for its engine never does).

use std::path::{Path, PathBuf};

/// Where a line came from; every message names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub file: PathBuf,
    pub line: usize,
}

/// `key=value`, or a bare `key` (fio's flags such as `thread`, `time_based`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub key: String,
    pub value: Option<String>,
    pub at: Location,
    /// Why the value could not be substituted (`value` is then what was written).
    pub problem: Option<String>,
    /// A keyword of fio's (`$ncpus`, `$mb_memory`, `$pagesize`) was put into the value: fio then hands the whole
    /// value to bc (options.c `fio_keyword_replace`), so its arithmetic is evaluated whole, parentheses or not.
    pub calculated: bool,
}

/// A `[name]` section with its entries in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub name: String,
    pub at: Location,
    pub entries: Vec<Entry>,
}

impl Section {
    pub fn is_global(&self) -> bool {
        self.name == "global"
    }
}

/// A line that cannot be read, with where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IniError {
    pub at: Location,
    pub message: String,
}

/// What the reader needs from the world: the environment, host figures for `$ncpus` and friends, and included
/// files. The real one is [`SystemHost`]; tests pass their own.
pub trait Host {
    fn var(&self, name: &str) -> Option<String>;
    fn ncpus(&self) -> u64;
    fn mb_memory(&self) -> u64;
    fn pagesize(&self) -> u64;
    fn read(&self, path: &Path) -> std::io::Result<String>;
}

/// This machine and its environment.
pub struct SystemHost;

impl Host for SystemHost {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
    fn ncpus(&self) -> u64 {
        std::thread::available_parallelism().map_or(1, |n| n.get() as u64)
    }
    fn mb_memory(&self) -> u64 {
        let info = rustix::system::sysinfo();
        info.totalram.saturating_mul(u64::from(info.mem_unit)) >> 20
    }
    fn pagesize(&self) -> u64 {
        rustix::param::page_size() as u64
    }
    fn read(&self, path: &Path) -> std::io::Result<String> {
        crate::limits::read_text_file(path, crate::limits::MAX_INPUT_FILE_BYTES).map_err(|e| match e {
            crate::limits::ReadLimitError::Io(e) => e,
            other => std::io::Error::other(other),
        })
    }
}

/// Reads `text` (the contents of `path`) into sections, following includes (within the depth, count and size
/// caps of `crate::limits`), with every line that could not be read.
pub fn read_sections(path: &Path, text: &str, host: &dyn Host) -> (Vec<Section>, Vec<IniError>) {
    let mut reader = Reader {
        host,
        sections: Vec::new(),
        errors: Vec::new(),
        skipping: false,
        budget: crate::limits::IncludeBudget::default(),
        over_budget: false,
        too_many: false,
    };
    reader.read(path, text, 0);
    (reader.sections, reader.errors)
}

struct Reader<'a> {
    host: &'a dyn Host,
    sections: Vec<Section>,
    errors: Vec<IniError>,
    /// After a header that could not be read, its entries are skipped: they belong to no section anyone named.
    skipping: bool,
    /// What the includes read so far have cost.
    budget: crate::limits::IncludeBudget,
    /// The includes went over a cap: no further include is read (reading on could cost millions of reads).
    over_budget: bool,
    /// More sections than a job may have phases: said once, the rest skipped.
    too_many: bool,
}

impl Reader<'_> {
    fn read(&mut self, path: &Path, text: &str, depth: usize) {
        for (i, raw) in text.lines().enumerate() {
            let at = Location { file: path.to_path_buf(), line: i + 1 };
            let line = strip_comment(raw).trim();
            if line.is_empty() {
                continue;
            }
            if let Err(message) = self.line(path, line, &at, depth) {
                self.errors.push(IniError { at, message });
            }
        }
    }

    fn line(&mut self, path: &Path, line: &str, at: &Location, depth: usize) -> Result<(), String> {
        if let Some(rest) = line.strip_prefix("include").filter(|r| r.starts_with([' ', '\t'])) {
            return self.include(path, rest, depth);
        }
        if let Some(header) = line.strip_prefix('[') {
            let name = header.strip_suffix(']').map(str::trim).filter(|n| !n.is_empty() && !n.contains(['[', ']']));
            self.skipping = name.is_none();
            let name = name.ok_or_else(|| format!("'{line}' is not a section header: write it as [jobname]"))?;
            if self.sections.len() > crate::limits::MAX_PHASES {
                // Every job is a phase ([global] aside): refused once, and the rest of the file is skipped.
                self.skipping = true;
                let first = !std::mem::replace(&mut self.too_many, true);
                return if first { Err(crate::limits::too_many_phases(self.sections.len())) } else { Ok(()) };
            }
            self.sections.push(Section { name: name.to_string(), at: at.clone(), entries: Vec::new() });
            return Ok(());
        }
        let (key, value, problem, calculated) = match line.split_once('=') {
            Some((k, v)) => match substitute(v.trim(), self.host) {
                Ok((v, calculated)) => (k.trim(), Some(v), None, calculated),
                Err(problem) => (k.trim(), Some(v.trim().to_string()), Some(problem), false),
            },
            None => (line, None, None, false),
        };
        if key.is_empty() || key.contains(char::is_whitespace) {
            return Err(format!("'{line}' is not an option: write option=value, or a bare flag such as thread"));
        }
        if self.skipping {
            return Ok(());
        }
        let Some(section) = self.sections.last_mut() else {
            return Err(format!(
                "option '{key}' comes before any section: put it under [global] or under a [job] header"
            ));
        };
        let key = key.to_ascii_lowercase();
        section.entries.push(Entry { key, value, at: at.clone(), problem, calculated });
        Ok(())
    }

    fn include(&mut self, path: &Path, rest: &str, depth: usize) -> Result<(), String> {
        if self.over_budget {
            return Ok(());
        }
        let (name, _) = substitute(rest.trim(), self.host)?;
        if depth >= crate::limits::MAX_INCLUDE_DEPTH {
            self.over_budget = true;
            return Err(format!(
                "include '{name}' is nested more than {} deep (a loop?)",
                crate::limits::MAX_INCLUDE_DEPTH
            ));
        }
        let included = match path.parent() {
            Some(dir) if Path::new(&name).is_relative() => dir.join(&name),
            _ => PathBuf::from(&name),
        };
        let body = self.host.read(&included).map_err(|e| {
            format!("cannot read the included file {}: {e}; check the name after 'include'", included.display())
        })?;
        if let Err(why) = self.budget.charge(depth + 1, body.len() as u64) {
            self.over_budget = true;
            return Err(why);
        }
        self.read(&included, &body, depth + 1);
        Ok(())
    }
}

/// Removes a `;` or `#` comment: a whole line, or a trailing one after whitespace (so `filename=a#b` keeps its
/// `#`, as in fio).
fn strip_comment(line: &str) -> &str {
    let trimmed = line.trim_start();
    if trimmed.starts_with(';') || trimmed.starts_with('#') {
        return "";
    }
    let bytes = line.as_bytes();
    for i in 1..bytes.len() {
        if (bytes[i] == b';' || bytes[i] == b'#') && bytes[i - 1].is_ascii_whitespace() {
            return &line[..i];
        }
    }
    line
}

/// Expands `${VAR}` from the environment and fio's keywords `$ncpus`, `$mb_memory` and `$pagesize`; any other
/// `$word` is kept for the option to read. Also says whether a keyword was put in (fio then evaluates the value's
/// arithmetic whole).
fn substitute(value: &str, host: &dyn Host) -> Result<(String, bool), String> {
    let mut out = String::with_capacity(value.len());
    let mut calculated = false;
    let mut rest = value;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(braced) = after.strip_prefix('{') {
            let end = braced
                .find('}')
                .ok_or_else(|| format!("'${{' without a closing '}}' in '{value}': write ${{NAME}}"))?;
            let name = &braced[..end];
            let expanded = host.var(name).ok_or_else(|| {
                format!("the environment variable {name} (used as ${{{name}}}) is not set: export it or edit the file")
            })?;
            out.push_str(&expanded);
            rest = &braced[end + 1..];
            continue;
        }
        let keyword = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(after, |e| &after[..e]);
        let number = match keyword {
            "ncpus" => host.ncpus(),
            "mb_memory" => host.mb_memory(),
            "pagesize" => host.pagesize(),
            // Left for the option to read: filename_format's $jobname, $jobnum, $filenum.
            _ => {
                out.push('$');
                rest = after;
                continue;
            }
        };
        out.push_str(&number.to_string());
        calculated = true;
        rest = &after[keyword.len()..];
    }
    out.push_str(rest);
    Ok((out, calculated))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A made-up host: fixed figures, a small environment and in-memory files.
    #[derive(Default)]
    pub struct FakeHost {
        pub vars: HashMap<String, String>,
        pub files: HashMap<PathBuf, String>,
    }

    impl Host for FakeHost {
        fn var(&self, name: &str) -> Option<String> {
            self.vars.get(name).cloned()
        }
        fn ncpus(&self) -> u64 {
            8
        }
        fn mb_memory(&self) -> u64 {
            16384
        }
        fn pagesize(&self) -> u64 {
            4096
        }
        fn read(&self, path: &Path) -> std::io::Result<String> {
            self.files.get(path).cloned().ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))
        }
    }

    /// The sections, or the first problem.
    fn read(text: &str) -> Result<Vec<Section>, IniError> {
        first_error(read_sections(Path::new("/jobs/t.fio"), text, &FakeHost::default()))
    }

    fn first_error((sections, errors): (Vec<Section>, Vec<IniError>)) -> Result<Vec<Section>, IniError> {
        match errors.into_iter().next() {
            Some(e) => Err(e),
            None => Ok(sections),
        }
    }

    fn pairs(section: &Section) -> Vec<(String, Option<String>)> {
        section.entries.iter().map(|e| (e.key.clone(), e.value.clone())).collect()
    }

    #[test]
    fn sections_entries_and_bare_flags() {
        let sections = read("[global]\nioengine=libaio\nthread\n\n[job1]\n  rw = randread \ntime_based\n").unwrap();
        assert_eq!(sections.len(), 2);
        assert!(sections[0].is_global());
        assert_eq!(pairs(&sections[0]), [("ioengine".into(), Some("libaio".into())), ("thread".into(), None)]);
        assert_eq!(sections[1].name, "job1");
        assert_eq!(pairs(&sections[1]), [("rw".into(), Some("randread".into())), ("time_based".into(), None)]);
        assert_eq!(sections[1].entries[1].at.line, 7);
    }

    #[test]
    fn comments_whole_line_and_trailing_after_whitespace() {
        let text = "; top\n# also\n[j]\nbs=4k ; four k\nsize=1g\t# one g\nfilename=a#b\ndirectory=/x;y\n";
        let sections = read(text).unwrap();
        assert_eq!(
            pairs(&sections[0]),
            [
                ("bs".into(), Some("4k".into())),
                ("size".into(), Some("1g".into())),
                ("filename".into(), Some("a#b".into())),
                ("directory".into(), Some("/x;y".into())),
            ]
        );
    }

    #[test]
    fn global_may_appear_midway_and_sections_repeat() {
        let sections = read("[a]\nrw=read\n[global]\nbs=1m\n[b]\nrw=write\n[a]\nrw=randread\n").unwrap();
        let names: Vec<&str> = sections.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "global", "b", "a"]);
    }

    #[test]
    fn substitutions_from_environment_and_host() {
        let mut host = FakeHost::default();
        host.vars.insert("SIZE".into(), "2g".into());
        let text = "[j]\nsize=${SIZE}\nnumjobs=$ncpus\niodepth=$pagesize\nfilename=m$mb_memory.dat\n";
        let sections = first_error(read_sections(Path::new("t.fio"), text, &host)).unwrap();
        let values: Vec<String> = sections[0].entries.iter().filter_map(|e| e.value.clone()).collect();
        assert_eq!(values, ["2g", "8", "4096", "m16384.dat"]);
        // An unset variable is the entry's problem, for the job that uses it to report.
        let unset = read("[j]\nsize=${NOPE}\n").unwrap();
        let problem = unset[0].entries[0].problem.as_deref().unwrap();
        assert!(problem.contains("NOPE") && unset[0].entries[0].at.line == 2, "{problem}");
        let kept = read("[j]\nfilename_format=$jobname.$jobnum\n").unwrap();
        assert_eq!(kept[0].entries[0].value.as_deref(), Some("$jobname.$jobnum"));
        assert!(read("[j]\nsize=${OPEN\n").unwrap()[0].entries[0].problem.is_some());
    }

    #[test]
    fn includes_are_read_relative_to_the_including_file() {
        let mut host = FakeHost::default();
        host.files.insert(PathBuf::from("/jobs/common.fio"), "[global]\nbs=4k\nbogus line\n".into());
        let (sections, errors) = read_sections(Path::new("/jobs/t.fio"), "include common.fio\n[j]\nrw=read\n", &host);
        // The error names the included file and its line, and reading went on after it.
        assert_eq!(errors[0].at, Location { file: PathBuf::from("/jobs/common.fio"), line: 3 });
        assert_eq!(sections.len(), 2);
        host.files.insert(PathBuf::from("/jobs/common.fio"), "[global]\nbs=4k\n".into());
        let sections =
            first_error(read_sections(Path::new("/jobs/t.fio"), "include common.fio\n[j]\nrw=read\n", &host)).unwrap();
        assert_eq!(sections.len(), 2);
        assert_eq!(sections[0].entries[0].at.file, PathBuf::from("/jobs/common.fio"));
        let missing = read("include nothere.fio\n").unwrap_err();
        assert!(missing.message.contains("/jobs/nothere.fio"), "{missing:?}");
    }

    #[test]
    fn include_loops_are_stopped() {
        let mut host = FakeHost::default();
        host.files.insert(PathBuf::from("/jobs/loop.fio"), "include loop.fio\n".into());
        let err = first_error(read_sections(Path::new("/jobs/loop.fio"), "include loop.fio\n", &host)).unwrap_err();
        assert!(err.message.contains("nested"), "{err:?}");
    }

    #[test]
    fn include_fan_out_is_capped() {
        // Guards issue 9: 10 includes per file over 9 levels ran on (10^9 reads); now at most 64 are read, and
        // even a chain within the depth cap (7 levels, 10^7 reads) stops there.
        let mut host = FakeHost::default();
        for level in 0..7 {
            let body = format!("include l{}.fio\n", level + 1).repeat(10);
            host.files.insert(PathBuf::from(format!("/jobs/l{level}.fio")), body);
        }
        host.files.insert(PathBuf::from("/jobs/l7.fio"), "[j]\nrw=read\n".into());
        let (_, errors) = read_sections(Path::new("/jobs/t.fio"), &"include l0.fio\n".repeat(10), &host);
        assert_eq!(errors.len(), 1, "one error, and no include read after it: {errors:?}");
        assert!(errors[0].message.contains("more than 64 files"), "{errors:?}");
    }

    #[test]
    fn malformed_lines_are_reported_with_their_line() {
        let err = read("bs=4k\n").unwrap_err();
        assert!(err.message.contains("before any section") && err.at.line == 1);
        let err = read("[j]\n[broken\n").unwrap_err();
        assert_eq!(err.at.line, 2);
        let err = read("[j]\nrw read\n").unwrap_err();
        assert!(err.message.contains("not an option"), "{err:?}");
        assert!(read("[]\n").is_err());
    }

    #[test]
    fn every_bad_line_is_found_in_one_pass_and_a_bad_header_hides_its_entries() {
        let (sections, errors) = read_sections(
            Path::new("/jobs/t.fio"),
            "bs=4k\n[j]\nrw read\nsize=1m\n[broken\nbs=8k\n[k]\nbad line here\n",
            &FakeHost::default(),
        );
        let lines: Vec<usize> = errors.iter().map(|e| e.at.line).collect();
        assert_eq!(lines, [1, 3, 5, 8]);
        assert_eq!(sections.len(), 2);
        assert_eq!(sections[0].entries.len(), 1, "size=1m is kept; bs=8k under the broken header is not");
        assert!(sections[1].entries.is_empty());
    }
}
