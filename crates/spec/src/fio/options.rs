//! The typed values of one job once its `[global]` and section entries are parsed against the option table
//! (`table.rs`), and the collector of problems that lets one pass report every error of a file.
//!
//! An option missing from the table is an error that names it, never silently ignored. Options that change
//! nothing in streamcap become notices; options streamcap refuses become errors with the reason. What the values
//! *mean* for a phase is `mapping.rs` and friends.

use std::collections::HashMap;
use std::time::Duration;

use super::expr::looks_like_arithmetic;
use super::ini::{Entry, Location};
use super::table::{Kind, Opt, closest, find};
use super::values::{
    BadValue, FioSize, KbBase, PerDirection, parse_bool, parse_int, parse_percent, parse_range, parse_size,
    parse_size_or_percent, parse_split, parse_time,
};

/// At most this many problems are shown; the rest are counted.
pub const MAX_SHOWN: usize = 20;

/// Every problem found in a file, in the order found, without repeats (a `[global]` line used by several jobs
/// is reported once).
#[derive(Debug, Default)]
pub struct Problems {
    pub list: Vec<OptionError>,
    /// The unknown options among them, by where they are and what they are called: their "did you mean" is left
    /// to [`Problems::message`], since that search is the costly part and only the problems shown need it.
    unknown: Vec<(Location, String)>,
}

impl Problems {
    pub fn push(&mut self, error: OptionError) {
        if !self.list.contains(&error) {
            self.list.push(error);
        }
    }

    /// The value, or `None` after recording the error.
    pub fn take<T>(&mut self, result: Result<T, OptionError>) -> Option<T> {
        result.map_err(|e| self.push(e)).ok()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Records an option streamcap does not know, once: a `[global]` entry is read again for every job.
    fn push_unknown(&mut self, entry: &Entry) {
        if self.unknown.iter().any(|(at, _)| *at == entry.at) {
            return;
        }
        self.unknown.push((entry.at.clone(), entry.key.clone()));
        self.list.push(OptionError {
            at: entry.at.clone(),
            message: format!(
                "{UNKNOWN} '{}': streamcap reads the fio options listed in docs/fio.md; remove it or replace it \
                 with one of them",
                entry.key
            ),
        });
    }

    /// The problem's message as shown: an unknown option's gains the known name it is closest to, if any.
    pub fn message(&self, error: &OptionError) -> String {
        let key = self.unknown.iter().find(|(at, _)| *at == error.at).map(|(_, key)| key);
        match key.filter(|_| error.message.starts_with(UNKNOWN)).and_then(|key| Some((key, closest(key)?))) {
            // The first quoted name in the message is the option itself (push_unknown wrote it so).
            Some((key, near)) => {
                error.message.replacen(&format!("'{key}'"), &format!("'{key}' (did you mean '{near}'?)"), 1)
            }
            None => error.message.clone(),
        }
    }
}

/// A parsed value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Bool(bool),
    Int(u64),
    Size(FioSize),
    Sizes(PerDirection<u64>),
    Ranges(PerDirection<(u64, u64)>),
    Splits(PerDirection<Vec<(u64, Option<u32>)>>),
    Time(Duration),
    Text(String),
}

/// A value with the entry it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Said {
    pub value: Value,
    pub raw: String,
    pub at: Location,
}

/// An option or value streamcap cannot read, with where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionError {
    pub at: Location,
    pub message: String,
}

impl OptionError {
    /// "option 'bs': '4q' is not a size; expected …". A long value is shortened to its start and its length: a
    /// 400 KB value made a 400 KB message.
    pub fn bad_value(at: &Location, option: &str, raw: &str, bad: &BadValue) -> OptionError {
        let article = if bad.what.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
        let shown = match raw.char_indices().nth(60) {
            Some((end, _)) => format!("{}… ({} characters)", &raw[..end], raw.chars().count()),
            None => raw.to_string(),
        };
        OptionError {
            at: at.clone(),
            message: format!("option '{option}': '{shown}' is not {article} {}; expected {}", bad.what, bad.expected),
        }
    }
}

/// The options of one job: its `[global]` entries overlaid by its own, the last mention of each winning.
#[derive(Debug, Default)]
pub struct JobOptions {
    values: HashMap<&'static str, Said>,
    /// Options that have no effect in streamcap, with their notice (option name, why).
    pub no_effect: Vec<(&'static str, &'static str)>,
    /// Values with arithmetic outside parentheses and without fio's keywords (option, value): fio evaluates
    /// only parenthesised expressions there (and those it hands to bc after putting a keyword in), and reads
    /// such a value as the number before the first operator.
    pub unparenthesized: Vec<(&'static str, String)>,
    /// The job's kb_base, for values the mapping reads itself (zoned_abs sizes, rw=write:4k).
    pub base: KbBase,
}

/// Options that take one number, where arithmetic may appear (lists, ranges and splits use the operators' signs
/// as separators).
fn is_numeric(kind: Kind) -> bool {
    matches!(kind, Kind::Int | Kind::Size | Kind::SizeOrPercent | Kind::Time(_))
}

impl JobOptions {
    /// Parses entries in order, recording every problem. `kb_base` applies to every size of the job wherever it
    /// appears (fio parses it first).
    pub fn parse<'a>(entries: impl Iterator<Item = &'a Entry> + Clone, problems: &mut Problems) -> JobOptions {
        let mut base = KbBase::Binary;
        for entry in entries.clone().filter(|e| e.key == "kb_base") {
            let raw = entry.value.as_deref().unwrap_or("");
            match KbBase::parse(raw) {
                Ok(b) => base = b,
                Err(bad) => problems.push(OptionError::bad_value(&entry.at, "kb_base", raw, &bad)),
            }
        }
        let mut options = JobOptions { base, ..JobOptions::default() };
        for entry in entries {
            if let Some(problem) = &entry.problem {
                problems.push(OptionError { at: entry.at.clone(), message: problem.clone() });
                continue;
            }
            let Some(opt) = find(&entry.key) else {
                problems.push_unknown(entry);
                continue;
            };
            match opt.kind {
                Kind::NoEffect(why) => {
                    if !options.no_effect.iter().any(|(n, _)| *n == opt.name) {
                        options.no_effect.push((opt.name, why));
                    }
                    continue;
                }
                Kind::Refused(why) => {
                    problems
                        .push(OptionError { at: entry.at.clone(), message: format!("option '{}': {why}", entry.key) });
                    continue;
                }
                _ => {}
            }
            let Some(value) = problems.take(parse_value(opt, entry, base)) else { continue };
            let raw = entry.value.clone().unwrap_or_default();
            // fio evaluates a parenthesised value, and (through bc) one its keywords were put into.
            let fio_evaluates = raw.trim_start().starts_with('(') || entry.calculated;
            if looks_like_arithmetic(&raw) && !fio_evaluates && is_numeric(opt.kind) {
                options.unparenthesized.push((opt.name, raw.clone()));
            }
            options.values.insert(opt.name, Said { value, raw, at: entry.at.clone() });
        }
        options
    }

    pub fn get(&self, name: &str) -> Option<&Said> {
        self.values.get(name)
    }

    pub fn flag(&self, name: &str) -> bool {
        matches!(self.get(name).map(|s| &s.value), Some(Value::Bool(true)))
    }

    /// The value of a boolean option that was said.
    pub fn bool(&self, name: &str) -> Option<bool> {
        match self.get(name)?.value {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    pub fn int(&self, name: &str) -> Option<u64> {
        match self.get(name)?.value {
            Value::Int(n) => Some(n),
            _ => None,
        }
    }

    pub fn time(&self, name: &str) -> Option<Duration> {
        match self.get(name)?.value {
            Value::Time(t) => Some(t),
            _ => None,
        }
    }

    pub fn size(&self, name: &str) -> Option<FioSize> {
        match self.get(name)?.value {
            Value::Size(s) => Some(s),
            _ => None,
        }
    }

    pub fn text(&self, name: &str) -> Option<&str> {
        match &self.get(name)?.value {
            Value::Text(t) => Some(t),
            _ => None,
        }
    }

    /// A per-direction value of sizes, whole numbers or percentages.
    pub fn per_direction(&self, name: &str) -> Option<&PerDirection<u64>> {
        match &self.get(name)?.value {
            Value::Sizes(s) => Some(s),
            _ => None,
        }
    }
}

fn parse_value(opt: &Opt, entry: &Entry, base: KbBase) -> Result<Value, OptionError> {
    let name = entry.key.as_str();
    let Some(raw) = entry.value.as_deref() else {
        return match opt.kind {
            Kind::Bool => Ok(Value::Bool(true)),
            Kind::LogName => Ok(Value::Text(String::new())),
            _ => Err(OptionError {
                at: entry.at.clone(),
                message: format!("option '{name}' needs a value: write {name}=…"),
            }),
        };
    };
    let fail = |bad: BadValue| OptionError::bad_value(&entry.at, name, raw, &bad);
    let size = |t: &str| parse_size(t, base);
    let int = |t: &str| parse_int(t, base);
    Ok(match opt.kind {
        Kind::Bool => Value::Bool(parse_bool(raw).map_err(fail)?),
        Kind::Int => Value::Int(int(raw).map_err(fail)?),
        Kind::Percent => Value::Int(u64::from(parse_percent(raw).map_err(fail)?)),
        Kind::Size => Value::Size(FioSize::Bytes(size(raw).map_err(fail)?)),
        Kind::SizeOrPercent => Value::Size(parse_size_or_percent(raw, base, true).map_err(fail)?),
        Kind::Sizes => Value::Sizes(PerDirection::parse(raw, size).map_err(fail)?),
        Kind::Ints => Value::Sizes(PerDirection::parse(raw, int).map_err(fail)?),
        Kind::Percents => Value::Sizes(PerDirection::parse(raw, |t| parse_percent(t).map(u64::from)).map_err(fail)?),
        Kind::Ranges => Value::Ranges(PerDirection::parse(raw, |t| parse_range(t, base)).map_err(fail)?),
        Kind::Splits => Value::Splits(PerDirection::parse(raw, |t| parse_split(t, base)).map_err(fail)?),
        Kind::Time(unit) => Value::Time(parse_time(raw, unit).map_err(fail)?),
        Kind::Text | Kind::LogName => Value::Text(raw.to_string()),
        Kind::NoEffect(_) | Kind::Refused(_) => unreachable!("handled by the caller"),
    })
}

/// How the message of an option streamcap does not know begins.
const UNKNOWN: &str = "unknown option";

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn entries(pairs: &[(&str, Option<&str>)]) -> Vec<Entry> {
        pairs
            .iter()
            .enumerate()
            .map(|(i, (k, v))| Entry {
                key: k.to_string(),
                value: v.map(str::to_string),
                at: Location { file: PathBuf::from("j.fio"), line: i + 1 },
                problem: None,
                calculated: false,
            })
            .collect()
    }

    fn parse(pairs: &[(&str, Option<&str>)]) -> (JobOptions, Vec<OptionError>) {
        let list = entries(pairs);
        let mut problems = Problems::default();
        let options = JobOptions::parse(list.iter(), &mut problems);
        let shown = problems.list.iter().map(|e| OptionError { at: e.at.clone(), message: problems.message(e) });
        (options, shown.collect())
    }

    #[test]
    fn aliases_bare_flags_and_last_mention_wins() {
        let (options, errors) =
            parse(&[("blocksize", Some("8k")), ("bs", Some("16k")), ("time_based", None), ("io_limit", Some("1g"))]);
        assert!(errors.is_empty());
        assert_eq!(options.per_direction("bs").unwrap().read, Some(16384));
        assert!(options.flag("time_based"));
        assert_eq!(options.size("io_size"), Some(FioSize::Bytes(1 << 30)));
        assert_eq!(parse(&[("ratemin", Some("1k"))]).0.per_direction("rate_min").unwrap().read, Some(1024));
    }

    #[test]
    fn kb_base_applies_to_the_whole_job() {
        let (options, _) = parse(&[("size", Some("1m")), ("kb_base", Some("1000"))]);
        assert_eq!(options.size("size"), Some(FioSize::Bytes(1_000_000)));
    }

    #[test]
    fn no_effect_options_are_collected_once() {
        let (options, _) = parse(&[("thread", None), ("norandommap", None), ("thread", Some("1")), ("threads", None)]);
        assert_eq!(options.no_effect.iter().map(|n| n.0).collect::<Vec<_>>(), ["thread", "norandommap", "threads"]);
    }

    #[test]
    fn every_problem_is_kept_with_its_line_option_value_and_expectation() {
        let (_, errors) = parse(&[
            ("rw", Some("read")),
            ("bs", Some("4q")),
            ("blocksiz", Some("4k")),
            ("size", None),
            ("runtime", Some("ten")),
            ("zonecapacity", Some("256m")),
        ]);
        let lines: Vec<usize> = errors.iter().map(|e| e.at.line).collect();
        assert_eq!(lines, [2, 3, 4, 5, 6]);
        assert!(errors[0].message.starts_with("option 'bs': '4q' is not a size; expected a size such as"));
        assert!(errors[1].message.contains("unknown option 'blocksiz'") && errors[1].message.contains("'blocksize'"));
        assert!(errors[2].message.contains("needs a value"));
        assert!(errors[3].message.contains("is not a time; expected"));
        assert!(errors[4].message.contains("zone"), "{}", errors[4].message);
    }

    #[test]
    fn arithmetic_outside_parentheses_is_noted() {
        let (options, errors) = parse(&[("size", Some("4*1024m")), ("bs", Some("(2*2)k"))]);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(options.size("size"), Some(FioSize::Bytes(4 << 30)));
        assert_eq!(options.unparenthesized, [("size", "4*1024m".to_string())]);
    }
}
