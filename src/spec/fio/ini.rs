//! The hand-written reader for fio's job-file syntax: `[section]` headers, `key=value` lines and bare flags,
//! whole-line and trailing comments, `include FILE`, and the substitutions fio performs in values (`${VAR}`
//! from the environment, `$ncpus`, `$mb_memory`, `$pagesize`).
//!
//! It only splits text into sections and entries, each remembering its file and line; it knows no option
//! names (that is `options.rs`) and does not decide which `[global]` applies to which job (`mapping.rs`).

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
/// caps of `crate::limits`).
pub fn read_sections(path: &Path, text: &str, host: &dyn Host) -> Result<Vec<Section>, IniError> {
    let mut sections = Vec::new();
    let mut reading = Reading { host, budget: crate::limits::IncludeBudget::default() };
    read_into(path, text, &mut reading, 0, &mut sections)?;
    Ok(sections)
}

/// The host and what the includes read so far have cost.
struct Reading<'a> {
    host: &'a dyn Host,
    budget: crate::limits::IncludeBudget,
}

fn read_into(
    path: &Path,
    text: &str,
    reading: &mut Reading<'_>,
    depth: usize,
    sections: &mut Vec<Section>,
) -> Result<(), IniError> {
    let host = reading.host;
    for (i, raw) in text.lines().enumerate() {
        let at = Location { file: path.to_path_buf(), line: i + 1 };
        let fail = |message: String| IniError { at: at.clone(), message };
        let line = strip_comment(raw).trim();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("include").filter(|r| r.starts_with([' ', '\t'])) {
            let name = substitute(rest.trim(), host).map_err(fail)?;
            if depth >= crate::limits::MAX_INCLUDE_DEPTH {
                return Err(fail(format!(
                    "include '{name}' is nested more than {} deep (a loop?)",
                    crate::limits::MAX_INCLUDE_DEPTH
                )));
            }
            let included = match path.parent() {
                Some(dir) if Path::new(&name).is_relative() => dir.join(&name),
                _ => PathBuf::from(&name),
            };
            let body = host.read(&included).map_err(|e| {
                fail(format!(
                    "cannot read the included file {}: {e}; check the name after 'include'",
                    included.display()
                ))
            })?;
            reading.budget.charge(depth + 1, body.len() as u64).map_err(fail)?;
            read_into(&included, &body, reading, depth + 1, sections)?;
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            let name = header
                .strip_suffix(']')
                .map(str::trim)
                .filter(|n| !n.is_empty() && !n.contains(['[', ']']))
                .ok_or_else(|| fail(format!("'{line}' is not a section header: write it as [jobname]")))?;
            sections.push(Section { name: name.to_string(), at: at.clone(), entries: Vec::new() });
            continue;
        }
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim(), Some(substitute(v.trim(), host).map_err(fail)?)),
            None => (line, None),
        };
        if key.is_empty() || key.contains(char::is_whitespace) {
            return Err(fail(format!("'{line}' is not an option: write option=value, or a bare flag such as thread")));
        }
        let Some(section) = sections.last_mut() else {
            return Err(fail(format!(
                "option '{key}' comes before any section: put it under [global] or under a [job] header"
            )));
        };
        section.entries.push(Entry { key: key.to_ascii_lowercase(), value, at });
    }
    Ok(())
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
/// `$word` is kept for the option to read.
fn substitute(value: &str, host: &dyn Host) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
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
        rest = &after[keyword.len()..];
    }
    out.push_str(rest);
    Ok(out)
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

    fn read(text: &str) -> Result<Vec<Section>, IniError> {
        read_sections(Path::new("/jobs/t.fio"), text, &FakeHost::default())
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
        let sections = read_sections(Path::new("t.fio"), text, &host).unwrap();
        let values: Vec<String> = sections[0].entries.iter().filter_map(|e| e.value.clone()).collect();
        assert_eq!(values, ["2g", "8", "4096", "m16384.dat"]);
        let err = read("[j]\nsize=${NOPE}\n").unwrap_err();
        assert!(err.message.contains("NOPE") && err.at.line == 2, "{err:?}");
        let kept = read("[j]\nfilename_format=$jobname.$jobnum\n").unwrap();
        assert_eq!(kept[0].entries[0].value.as_deref(), Some("$jobname.$jobnum"));
        assert!(read("[j]\nsize=${OPEN\n").is_err());
    }

    #[test]
    fn includes_are_read_relative_to_the_including_file() {
        let mut host = FakeHost::default();
        host.files.insert(PathBuf::from("/jobs/common.fio"), "[global]\nbs=4k\nbogus line\n".into());
        let sections = read_sections(Path::new("/jobs/t.fio"), "include common.fio\n[j]\nrw=read\n", &host);
        // The error names the included file and its line.
        let err = sections.unwrap_err();
        assert_eq!(err.at, Location { file: PathBuf::from("/jobs/common.fio"), line: 3 });
        host.files.insert(PathBuf::from("/jobs/common.fio"), "[global]\nbs=4k\n".into());
        let sections = read_sections(Path::new("/jobs/t.fio"), "include common.fio\n[j]\nrw=read\n", &host).unwrap();
        assert_eq!(sections.len(), 2);
        assert_eq!(sections[0].entries[0].at.file, PathBuf::from("/jobs/common.fio"));
        let missing = read("include nothere.fio\n").unwrap_err();
        assert!(missing.message.contains("/jobs/nothere.fio"), "{missing:?}");
    }

    #[test]
    fn include_loops_are_stopped() {
        let mut host = FakeHost::default();
        host.files.insert(PathBuf::from("/jobs/loop.fio"), "include loop.fio\n".into());
        let err = read_sections(Path::new("/jobs/loop.fio"), "include loop.fio\n", &host).unwrap_err();
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
        let err = read_sections(Path::new("/jobs/t.fio"), &"include l0.fio\n".repeat(10), &host).unwrap_err();
        assert!(err.message.contains("more than 64 files"), "{err:?}");
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
}
