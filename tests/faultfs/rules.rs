//! Fault rules: which read or write of the FUSE test filesystem goes wrong, and how; and the log of every fault
//! that was injected, so a test can compare what streamcap reported with what really happened.
//!
//! A rule matches an operation by kind, file name and byte range, lets the first `skip` matching operations
//! through ("fail after N operations"), then fires at most `times` times. Rules never decide anything from the
//! clock or from chance: the same run meets the same faults.

use std::time::Duration;

/// Which operations a rule applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
    /// Removing a file or directory (unlink, rmdir): only `Fault::Errno` applies; offset and length are 0.
    Unlink,
}

/// What happens to a matching operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Fails with this errno (EIO, ENOSPC…); nothing is transferred.
    Errno(i32),
    /// Transfers only the first this many bytes and says so (a short read or write).
    Short(u32),
    /// Waits this long, then does the operation normally (a latency spike).
    Delay(Duration),
    /// Flips one bit at this byte of the request, silently: a write stores it flipped, a read returns it flipped.
    FlipBit { byte: u32, bit: u8 },
    /// Writes only: says the write succeeded and stores nothing.
    Lose,
    /// Writes only: says the write succeeded and stores the data at `offset + delta` instead.
    Misdirect { delta: i64 },
}

/// One rule. Build with [`Rule::new`] and the chained setters.
#[derive(Debug, Clone)]
pub struct Rule {
    pub op: Op,
    pub fault: Fault,
    /// Only files whose name (last path component) is this; a trailing `*` matches any name that starts with
    /// what precedes it (`run-*`: a work directory whatever its pid).
    pub file: Option<String>,
    /// Only operations that touch a byte in `[start, end)`.
    pub range: Option<(u64, u64)>,
    /// Only requests of exactly this many bytes (to leave out the large writes that fill files before a phase).
    pub len: Option<u64>,
    /// Matching operations let through before the rule fires.
    pub skip: u64,
    /// How often the rule fires at most; `None`: every time.
    pub times: Option<u64>,
    /// Matching operations seen so far.
    seen: u64,
    fired: u64,
}

impl Rule {
    pub fn new(op: Op, fault: Fault) -> Rule {
        Rule { op, fault, file: None, range: None, len: None, skip: 0, times: None, seen: 0, fired: 0 }
    }

    pub fn file(mut self, name: &str) -> Rule {
        self.file = Some(name.to_string());
        self
    }

    /// Only operations overlapping `[start, end)`.
    pub fn range(mut self, start: u64, end: u64) -> Rule {
        self.range = Some((start, end));
        self
    }

    /// Only operations that touch byte `offset`.
    pub fn at(self, offset: u64) -> Rule {
        self.range(offset, offset + 1)
    }

    pub fn len(mut self, len: u64) -> Rule {
        self.len = Some(len);
        self
    }

    pub fn skip(mut self, n: u64) -> Rule {
        self.skip = n;
        self
    }

    pub fn times(mut self, n: u64) -> Rule {
        self.times = Some(n);
        self
    }

    /// Whether the rule fires for this operation (and counts it).
    fn fires(&mut self, op: Op, name: &str, offset: u64, len: u64) -> bool {
        let overlaps = self.range.is_none_or(|(start, end)| offset < end && offset + len.max(1) > start);
        let sized = self.len.is_none_or(|l| l == len);
        let named = |f: &str| f.strip_suffix('*').map_or(f == name, |prefix| name.starts_with(prefix));
        if op != self.op || self.file.as_deref().is_some_and(|f| !named(f)) || !overlaps || !sized {
            return false;
        }
        self.seen += 1;
        if self.seen <= self.skip || self.times.is_some_and(|t| self.fired >= t) {
            return false;
        }
        self.fired += 1;
        true
    }
}

/// One fault that was injected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Injected {
    pub op: Op,
    /// Path relative to the filesystem's root.
    pub path: String,
    pub offset: u64,
    pub len: u64,
    pub fault: Fault,
}

/// The rules in force and the log of what they did.
#[derive(Debug, Default)]
pub struct Rules {
    rules: Vec<Rule>,
    pub injected: Vec<Injected>,
    /// Reads and writes served, faulty or not.
    pub reads: u64,
    pub writes: u64,
    /// A file removed while it is open is renamed to `.fuse_hidden…` and removed when its last handle is
    /// released, as libfuse's high-level API (sshfs) does, instead of being removed at once.
    pub hide_open_removed: bool,
}

impl Rules {
    pub fn add(&mut self, rule: Rule) {
        self.rules.push(rule);
    }

    pub fn clear(&mut self) {
        self.rules.clear();
    }

    /// The faults for one operation, in rule order (a delay and a flip may both apply); logged as injected.
    pub fn faults_for(&mut self, op: Op, path: &str, offset: u64, len: u64) -> Vec<Fault> {
        match op {
            Op::Read => self.reads += 1,
            Op::Write => self.writes += 1,
            Op::Unlink => {}
        }
        let name = path.rsplit('/').next().unwrap_or(path);
        let mut faults = Vec::new();
        for rule in &mut self.rules {
            if rule.fires(op, name, offset, len) {
                faults.push(rule.fault);
                self.injected.push(Injected { op, path: path.to_string(), offset, len, fault: rule.fault });
            }
        }
        faults
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_times_range_and_file_select_operations() {
        let mut rules = Rules::default();
        rules.add(Rule::new(Op::Write, Fault::Errno(5)).file("data.0").range(4096, 8192).skip(1).times(1));
        assert!(rules.faults_for(Op::Write, "a/data.0", 0, 4096).is_empty(), "outside the range");
        assert!(rules.faults_for(Op::Read, "a/data.0", 4096, 4096).is_empty(), "a read");
        assert!(rules.faults_for(Op::Write, "a/data.1", 4096, 4096).is_empty(), "another file");
        assert!(rules.faults_for(Op::Write, "a/data.0", 4096, 4096).is_empty(), "skipped once");
        assert_eq!(rules.faults_for(Op::Write, "a/data.0", 0, 8192), vec![Fault::Errno(5)]);
        assert!(rules.faults_for(Op::Write, "a/data.0", 4096, 4096).is_empty(), "fired its one time");
        assert_eq!(rules.injected.len(), 1);
        assert_eq!((rules.injected[0].offset, rules.injected[0].len), (0, 8192));
        assert_eq!(rules.writes, 5);
    }
}
