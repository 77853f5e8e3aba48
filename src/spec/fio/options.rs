//! The table of fio options streamcap reads: each name (with fio's aliases) and the kind of value it takes, and
//! the typed values of one job once its `[global]` and section entries are parsed.
//!
//! An option missing from the table is an error that names it, never silently ignored. Options that exist in
//! fio but change nothing in streamcap are in the table with the notice the user gets. What the values *mean*
//! for a phase is `mapping.rs`; values it cannot reproduce (trims, zoned distributions …) are refused there.

use std::collections::HashMap;
use std::time::Duration;

use super::ini::{Entry, Location};
use super::values::{
    BadValue, FioSize, KbBase, PerDirection, TimeUnit, parse_bool, parse_int, parse_percent, parse_range, parse_size,
    parse_size_or_percent, parse_split, parse_time,
};

/// The kind of value an option takes.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// 0 or 1; the bare name means 1.
    Bool,
    Int,
    Percent,
    Size,
    SizeOrPercent,
    /// Sizes per direction (`4k,64k`).
    Sizes,
    /// Whole numbers per direction (`rate_iops=100,50`).
    Ints,
    /// Percentages per direction (`percentage_random=50,20`).
    Percents,
    /// Size ranges per direction (`4k-16k,8k-64k`).
    Ranges,
    /// Weighted block-size splits per direction.
    Splits,
    Time(TimeUnit),
    /// Words read by the mapping (rw, ioengine, filename …).
    Text,
    /// A log-file prefix; the bare name means the job's name (given as an empty text).
    LogName,
    /// Accepted; the notice tells the user it has no effect in streamcap.
    NoEffect(&'static str),
}

/// One entry of the table.
pub struct Opt {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub kind: Kind,
}

const fn opt(name: &'static str, kind: Kind) -> Opt {
    Opt { name, aliases: &[], kind }
}

const fn alias(name: &'static str, aliases: &'static [&'static str], kind: Kind) -> Opt {
    Opt { name, aliases, kind }
}

/// Every option streamcap reads from a fio job file.
pub static OPTIONS: &[Opt] = &[
    opt("name", Kind::Text),
    opt("description", Kind::Text),
    opt("kb_base", Kind::Text),
    alias("rw", &["readwrite"], Kind::Text),
    opt("rwmixread", Kind::Percent),
    opt("rwmixwrite", Kind::Percent),
    opt("percentage_random", Kind::Percents),
    alias("bs", &["blocksize"], Kind::Sizes),
    alias("bsrange", &["blocksize_range"], Kind::Ranges),
    opt("bssplit", Kind::Splits),
    alias("blockalign", &["ba"], Kind::Sizes),
    opt("size", Kind::SizeOrPercent),
    alias("io_size", &["io_limit"], Kind::Size),
    opt("filesize", Kind::Size),
    opt("offset", Kind::SizeOrPercent),
    opt("offset_increment", Kind::SizeOrPercent),
    opt("number_ios", Kind::Int),
    opt("filename", Kind::Text),
    opt("directory", Kind::Text),
    opt("filename_format", Kind::Text),
    alias("nrfiles", &["nr_files"], Kind::Int),
    alias("openfiles", &["open_files"], Kind::NoEffect("streamcap keeps each worker's files open for the whole phase")),
    opt("file_service_type", Kind::Text),
    opt("create_on_open", Kind::NoEffect("streamcap creates and fills its files before the phase starts")),
    opt("unlink", Kind::NoEffect("streamcap removes its files after the run unless you pass --keep")),
    opt("fallocate", Kind::NoEffect("streamcap lays out its files by writing them")),
    opt("ioengine", Kind::Text),
    opt("iodepth", Kind::Int),
    alias("iodepth_batch", &["iodepth_batch_submit"], Kind::Int),
    alias(
        "iodepth_batch_complete_min",
        &["iodepth_batch_complete"],
        Kind::NoEffect("streamcap reaps completions as they arrive"),
    ),
    opt("iodepth_batch_complete_max", Kind::NoEffect("streamcap reaps completions as they arrive")),
    opt("iodepth_low", Kind::NoEffect("streamcap refills the queue as soon as an operation completes")),
    opt("direct", Kind::Bool),
    opt("buffered", Kind::Bool),
    opt("sync", Kind::Text),
    opt("fsync", Kind::Int),
    opt("fdatasync", Kind::Int),
    opt("end_fsync", Kind::Bool),
    opt("fsync_on_close", Kind::Bool),
    opt("invalidate", Kind::Bool),
    opt("pre_read", Kind::Bool),
    opt("numjobs", Kind::Int),
    opt("thread", Kind::NoEffect("streamcap always runs its workers as threads")),
    alias("runtime", &["timeout"], Kind::Time(TimeUnit::Seconds)),
    opt("time_based", Kind::Bool),
    opt("ramp_time", Kind::Time(TimeUnit::Seconds)),
    opt("startdelay", Kind::Time(TimeUnit::Seconds)),
    opt("loops", Kind::Int),
    opt("randrepeat", Kind::Bool),
    opt("randseed", Kind::Int),
    opt("norandommap", Kind::NoEffect("streamcap keeps no random map (random offsets may repeat, as with it)")),
    opt("fixedbufs", Kind::NoEffect("streamcap's io_uring engine always registers its buffers")),
    opt("registerfiles", Kind::NoEffect("streamcap's io_uring engine always registers its files")),
    opt("random_distribution", Kind::Text),
    opt("rate", Kind::Sizes),
    opt("rate_iops", Kind::Ints),
    opt("rate_min", Kind::Sizes),
    opt("rate_iops_min", Kind::Ints),
    opt("rate_process", Kind::Text),
    opt("thinktime", Kind::Time(TimeUnit::Micros)),
    opt("thinktime_blocks", Kind::Int),
    alias("stonewall", &["wait_for_previous"], Kind::Bool),
    opt("wait_for", Kind::Text),
    opt("new_group", Kind::Bool),
    opt("group_reporting", Kind::Bool),
    opt("clat_percentiles", Kind::Bool),
    opt("lat_percentiles", Kind::Bool),
    opt("percentile_list", Kind::Text),
    opt("write_bw_log", Kind::LogName),
    opt("write_iops_log", Kind::LogName),
    opt("write_lat_log", Kind::LogName),
    opt("log_avg_msec", Kind::Time(TimeUnit::Millis)),
    opt("continue_on_error", Kind::Text),
];

/// Looks an option up by its name or one of its aliases.
pub fn find(name: &str) -> Option<&'static Opt> {
    OPTIONS.iter().find(|o| o.name == name || o.aliases.contains(&name))
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
    /// "option 'bs': '4q' is not a size; expected …"
    pub fn bad_value(at: &Location, option: &str, raw: &str, bad: &BadValue) -> OptionError {
        let article = if bad.what.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
        OptionError {
            at: at.clone(),
            message: format!("option '{option}': '{raw}' is not {article} {}; expected {}", bad.what, bad.expected),
        }
    }
}

/// The options of one job: its `[global]` entries overlaid by its own, the last mention of each winning.
#[derive(Debug, Default)]
pub struct JobOptions {
    values: HashMap<&'static str, Said>,
    /// Options that have no effect in streamcap, with their notice (option name, why).
    pub no_effect: Vec<(&'static str, &'static str)>,
}

impl JobOptions {
    /// Parses entries in order. `kb_base` applies to every size of the job wherever it appears (fio parses it
    /// first).
    pub fn parse<'a>(entries: impl Iterator<Item = &'a Entry> + Clone) -> Result<JobOptions, OptionError> {
        let mut base = KbBase::Binary;
        for entry in entries.clone().filter(|e| e.key == "kb_base") {
            let raw = entry.value.as_deref().unwrap_or("");
            base = KbBase::parse(raw).map_err(|bad| OptionError::bad_value(&entry.at, "kb_base", raw, &bad))?;
        }
        let mut options = JobOptions::default();
        for entry in entries {
            let Some(opt) = find(&entry.key) else {
                return Err(unknown(entry));
            };
            if let Kind::NoEffect(why) = opt.kind {
                if !options.no_effect.iter().any(|(n, _)| *n == opt.name) {
                    options.no_effect.push((opt.name, why));
                }
                continue;
            }
            let value = parse_value(opt, entry, base)?;
            let raw = entry.value.clone().unwrap_or_default();
            options.values.insert(opt.name, Said { value, raw, at: entry.at.clone() });
        }
        Ok(options)
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
        Kind::NoEffect(_) => unreachable!("handled by the caller"),
    })
}

fn unknown(entry: &Entry) -> OptionError {
    let hint = OPTIONS
        .iter()
        .flat_map(|o| std::iter::once(o.name).chain(o.aliases.iter().copied()))
        .map(|n| (edit_distance(n, &entry.key), n))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, n)| format!(" (did you mean '{n}'?)"))
        .unwrap_or_default();
    OptionError {
        at: entry.at.clone(),
        message: format!(
            "unknown option '{}'{hint}: streamcap reads the fio options listed in docs/fio.md; remove it or \
             replace it with one of them",
            entry.key
        ),
    }
}

/// Levenshtein distance, for "did you mean".
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1).min(row[j] + 1).min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

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
            })
            .collect()
    }

    #[test]
    fn aliases_bare_flags_and_last_mention_wins() {
        let list =
            entries(&[("blocksize", Some("8k")), ("bs", Some("16k")), ("time_based", None), ("io_limit", Some("1g"))]);
        let options = JobOptions::parse(list.iter()).unwrap();
        assert_eq!(options.per_direction("bs").unwrap().read, Some(16384));
        assert!(options.flag("time_based"));
        assert_eq!(options.size("io_size"), Some(FioSize::Bytes(1 << 30)));
    }

    #[test]
    fn kb_base_applies_to_the_whole_job() {
        let list = entries(&[("size", Some("1m")), ("kb_base", Some("1000"))]);
        assert_eq!(JobOptions::parse(list.iter()).unwrap().size("size"), Some(FioSize::Bytes(1_000_000)));
    }

    #[test]
    fn no_effect_options_are_collected_once() {
        let list = entries(&[("thread", None), ("norandommap", None), ("thread", Some("1"))]);
        let options = JobOptions::parse(list.iter()).unwrap();
        assert_eq!(options.no_effect.iter().map(|n| n.0).collect::<Vec<_>>(), ["thread", "norandommap"]);
    }

    #[test]
    fn errors_name_line_option_value_and_expectation() {
        let list = entries(&[("rw", Some("read")), ("bs", Some("4q"))]);
        let err = JobOptions::parse(list.iter()).unwrap_err();
        assert_eq!(err.at.line, 2);
        assert!(err.message.starts_with("option 'bs': '4q' is not a size; expected a size such as"), "{err:?}");
        let err = JobOptions::parse(entries(&[("blocksiz", Some("4k"))]).iter()).unwrap_err();
        assert!(err.message.contains("unknown option 'blocksiz'") && err.message.contains("'blocksize'"), "{err:?}");
        let err = JobOptions::parse(entries(&[("size", None)]).iter()).unwrap_err();
        assert!(err.message.contains("needs a value"), "{err:?}");
        let err = JobOptions::parse(entries(&[("runtime", Some("ten"))]).iter()).unwrap_err();
        assert!(err.message.contains("is not a time; expected"), "{err:?}");
    }

    #[test]
    fn every_option_name_is_unique() {
        let mut names: Vec<&str> =
            OPTIONS.iter().flat_map(|o| std::iter::once(o.name).chain(o.aliases.iter().copied())).collect();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count);
    }
}
