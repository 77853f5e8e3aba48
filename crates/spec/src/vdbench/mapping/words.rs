//! Values of single vdbench keywords, parsed into streamcap's words: `seekpct`, `xfersize`, fsd `sizes`,
//! `fileio`, `fileselect`, name wildcards. Pure functions returning a sentence on error; the caller adds the
//! file, line and keyword.

use super::super::expand::Loop;
use super::*;
use crate::spec::file_sizes::SMALLEST_AVERAGE;
use crate::spec::fileset::{FileIo, FileSelect, FileSizeSpec};
use crate::spec::values::BlockSizeSpec;
use crate::units::{Bytes, Share};
/// vdbench's simple wildcard: `*` matches any run of characters. The classic two-cursor match: on a mismatch
/// it retries from the last `*` one character further, so time is at most pattern × name. (It was recursive,
/// and a name with twenty `*` took longer than the fuzzer's 15 s limit.)
pub(super) fn wildcard(pattern: &str, name: &str) -> bool {
    // Most names are plain: no characters to collect for those.
    if !pattern.contains('*') {
        return pattern == name;
    }
    let (pattern, name): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut p, mut n) = (0, 0);
    // The position after the last `*` seen, and where in `name` that star's run began to be tried.
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        if p < pattern.len() && pattern[p] == '*' {
            star = Some((p + 1, n));
            p += 1;
        } else if p < pattern.len() && pattern[p] == name[n] {
            (p, n) = (p + 1, n + 1);
        } else if let Some((after, tried)) = star {
            (p, n) = (after, tried + 1);
            star = Some((after, tried + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

/// A wd's `seekpct`: the percentage of random seeks, and whether a sequential workload stops at the end of its
/// lun instead of starting again (`seekpct=eof` or `-1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Seek {
    pub percent: u8,
    pub eof: bool,
}

/// vdbench's `seekpct`: 0/`sequential` → 0, 100/`random` → 100, between: the percentage of random seeks;
/// `eof`/`-1`: sequential, ending at the end of the lun (vdbench's `WD_entry.parseSeekpct` reads both as -1).
pub(super) fn seekpct(item: &Item) -> Result<Seek, String> {
    let expected = "expected 0 or sequential, 100 or random, eof or -1, or a percentage of random seeks";
    let percent = |percent: u8| Ok(Seek { percent, eof: false });
    match item {
        Item::Num(v) if (0.0..=100.0).contains(v) => percent(v.round() as u8),
        Item::Num(v) if *v == -1.0 => Ok(Seek { percent: 0, eof: true }),
        // The value reader keeps `-1` a word (a `-` is its range mark).
        Item::Word(w) if w.eq_ignore_ascii_case("eof") || w == "-1" => Ok(Seek { percent: 0, eof: true }),
        Item::Word(w) if !w.is_empty() && "sequential".starts_with(&w.to_ascii_lowercase()) => percent(0),
        Item::Word(w) if !w.is_empty() && "random".starts_with(&w.to_ascii_lowercase()) => percent(100),
        _ => Err(format!("'{}': {expected}", item.display())),
    }
}

pub(super) fn bytes(v: f64) -> Result<Bytes, String> {
    if v.fract() != 0.0 || v <= 0.0 || v > u64::MAX as f64 {
        return Err(format!("{v} is not a whole number of bytes above zero"));
    }
    Ok(Bytes(v as u64))
}

/// `xfersize=4k`, weighted `(4k,50,8k,50)` or `(min,max,align)`.
pub(super) fn xfersize(items: &[Item], raw: bool) -> Result<(BlockSizeSpec, Option<Bytes>), String> {
    let nums: Vec<f64> = items
        .iter()
        .map(|i| match i {
            Item::Num(v) => Ok(*v),
            other => Err(format!("'{}' is not a transfer size", other.display())),
        })
        .collect::<Result<_, _>>()?;
    match nums.as_slice() {
        [one] => Ok((BlockSizeSpec::Fixed(bytes(*one)?), None)),
        [min, max, align] if raw && *align > 0.0 => {
            if min >= max || align % 512.0 != 0.0 {
                return Err("(min,max,align) needs min below max and align a multiple of 512".into());
            }
            Ok((BlockSizeSpec::Range(bytes(*min)?, bytes(*max)?), Some(bytes(*align)?)))
        }
        pairs if pairs.len() % 2 == 0 => {
            let mut entries = Vec::new();
            for pair in pairs.chunks(2) {
                let weight = Share::from_percent(pair[1])
                    .ok_or_else(|| format!("weight {} is not a percentage from 0 to 100", pair[1]))?;
                entries.push((bytes(pair[0])?, weight));
            }
            // vdbench's own check (WD_entry.parseXfersize): the weights, fractions allowed, round to 100.
            let total: f64 = pairs.chunks(2).map(|pair| pair[1]).sum();
            if total.round() != 100.0 {
                return Err(format!("the weights add up to {total}; they must add up to 100, as in (4k,50,8k,50)"));
            }
            Ok((BlockSizeSpec::Split(as_drawn(entries)), None))
        }
        _ => Err("expected a size (4k), sizes with weights (4k,50,8k,50) or (min,max,align)".into()),
    }
}

/// The weights as vdbench draws from them (`WG_entry.wg_dist_xfersize`): a draw below 100 against their running
/// sum, the last size when the draw passes them all. So weights that only round to 100 mean that the last size
/// takes what they leave of 100 %, or that what lies past 100 % is never drawn.
fn as_drawn(entries: Vec<(Bytes, Share)>) -> Vec<(Bytes, Option<Share>)> {
    let (last, mut used) = (entries.len().saturating_sub(1), 0);
    let mut drawn = Vec::with_capacity(entries.len());
    for (i, (size, weight)) in entries.into_iter().enumerate() {
        let left = Share::WHOLE.0 - used;
        let take = if i == last { left } else { weight.0.min(left) };
        used += take;
        drawn.push((size, Some(Share(take))));
    }
    drawn
}

/// fsd `sizes=16k`, weighted `(16k,80,1m,20)`, a range `(min,max,0)` or an average `(n,0)`.
pub(super) fn file_sizes(items: &[Item]) -> Result<FileSizeSpec, String> {
    let nums: Vec<f64> = items
        .iter()
        .map(|i| match i {
            Item::Num(v) => Ok(*v),
            other => Err(format!("'{}' is not a file size", other.display())),
        })
        .collect::<Result<_, _>>()?;
    match nums.as_slice() {
        [one] => Ok(FileSizeSpec::Fixed(bytes(*one)?)),
        // vdbench's average: sizes drawn evenly between n/2 and 3n/2, rounded (FileAnchor.calculateVarSize).
        [mean, zero] if *zero == 0.0 => match bytes(*mean)? {
            small if small < SMALLEST_AVERAGE => {
                Err("sizes=(n,0) needs an average of at least 1k: vdbench's rounding makes smaller files empty".into())
            }
            mean => Ok(FileSizeSpec::Around(mean)),
        },
        [min, max, zero] if *zero == 0.0 => {
            if min > max {
                return Err("(min,max,0) needs min below max".into());
            }
            Ok(FileSizeSpec::Range(bytes(*min)?, bytes(*max)?))
        }
        pairs if pairs.len() % 2 == 0 => {
            let entries: Vec<(Bytes, f64)> =
                pairs.chunks(2).map(|p| Ok((bytes(p[0])?, p[1]))).collect::<Result<_, String>>()?;
            let total: f64 = entries.iter().map(|e| e.1).sum();
            if (total - 100.0).abs() > 0.01 {
                return Err(format!("the weights add up to {total}; they must add up to 100, as in (16k,80,1m,20)"));
            }
            Ok(FileSizeSpec::Weighted(entries))
        }
        _ => Err("expected a size (16k), sizes with weights (16k,80,1m,20) or a range (min,max,0)".into()),
    }
}

/// What an fwd's `fileio=` adds to random or sequential.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FileIoOption {
    Plain,
    /// `(random,shared)`: threads may share a file.
    Shared,
    /// `(sequential,delete)`: a file is deleted before it is written.
    Delete,
}

/// An fwd's `fileio=`: random or sequential, and its option. As vdbench 5.04's `FwdEntry.fileIoParameters`:
/// `shared` only after `random` (`(sequential,shared)` is an invalid fileio there), `delete` only after
/// `sequential`, each word as a prefix.
pub(super) fn file_io(words: &[String]) -> Result<(FileIo, FileIoOption), String> {
    let is = |word: &str, full: &str| !word.is_empty() && full.starts_with(&word.to_ascii_lowercase());
    match words {
        [one] if is(one, "random") => Ok((FileIo::Random, FileIoOption::Plain)),
        [one] if is(one, "sequential") => Ok((FileIo::Sequential, FileIoOption::Plain)),
        [one, two] if is(one, "random") && is(two, "shared") => Ok((FileIo::Random, FileIoOption::Shared)),
        [one, two] if is(one, "sequential") && is(two, "delete") => Ok((FileIo::Sequential, FileIoOption::Delete)),
        [one, two] if is(one, "sequential") && is(two, "shared") => Err(
            "vdbench shares files only for random I/O: fileio=(random,shared); (sequential,shared) is not a fileio \
             vdbench accepts"
                .into(),
        ),
        [_, two] => Err(format!("'{two}' is not a fileio option: expected (random,shared) or (sequential,delete)")),
        _ => Err("expected random, sequential or (random,shared)".into()),
    }
}

/// fwd `fileselect=`, as vdbench 5.04.06's `FwdEntry.parseFileSelect` reads it: `random`, `sequential`, `once`;
/// `poisson` (or its first name, `skewed`) is random with the Poisson skew, midpoint 3; a number is the midpoint
/// and makes a random selection Poisson-skewed (`(poisson,5)`, `(random,5)`).
pub(super) fn file_select(words: &[String]) -> Result<FileSelect, String> {
    let (mut random, mut once, mut midpoint) = (false, false, None);
    for w in words {
        let w = w.to_ascii_lowercase();
        match w.as_str() {
            "once" => once = true,
            "skewed" | "poisson" => {
                random = true;
                midpoint.get_or_insert(3.0);
            }
            _ if w.parse::<f64>().is_ok_and(|m| m.is_finite() && m > 0.0) => midpoint = w.parse().ok(),
            _ if !w.is_empty() && "random".starts_with(&w) => random = true,
            _ if !w.is_empty() && "sequential".starts_with(&w) => random = false,
            _ => return Err(format!("'{w}': expected random, sequential, poisson or (sequential,once)")),
        }
    }
    match (random, once, midpoint) {
        // vdbench never uses the Poisson skew with once (FileAnchor.getFile): (poisson,once) is (random,once).
        (true, true, _) => Ok(FileSelect::RandomOnce),
        (_, true, _) => Ok(FileSelect::Once),
        (true, false, Some(m)) => Ok(FileSelect::Poisson(m)),
        (true, false, None) => Ok(FileSelect::Random),
        (false, false, _) => Ok(FileSelect::Sequential),
    }
}

pub(super) fn loop_num(l: &Loop, item: &Item, rd: &Record) -> Result<f64, VdbError> {
    match item {
        Item::Num(v) => Ok(*v),
        other => Err(VdbError::keyword(
            &l.at,
            &l.written,
            Some(rd.label()),
            format!("'{}' is not a number", other.display()),
        )),
    }
}

pub(super) fn loop_err(l: &Loop, rd: &Record, message: String) -> VdbError {
    VdbError::keyword(&l.at, &l.written, Some(rd.label()), message)
}

#[cfg(test)]
mod tests {
    use super::wildcard;

    #[test]
    fn wildcards_match_as_vdbench_s_and_many_stars_stay_fast() {
        let cases = [
            ("sd*", "sd1", true),
            ("sd*", "sd", true),
            ("*", "", true),
            ("", "", true),
            ("", "a", false),
            ("sd*x", "sd1x", true),
            ("sd*x", "sd1y", false),
            ("a*b*c", "aXbYc", true),
            ("a*b*c", "acb", false),
            ("a*a", "aaa", true),
            ("fsd1", "fsd1", true),
            ("fsd1", "fsd10", false),
        ];
        for (pattern, name, matches) in cases {
            assert_eq!(wildcard(pattern, name), matches, "{pattern} against {name}");
        }
        // Found by the vdbench_job fuzz target: twenty stars took over 15 s with the recursive match.
        let stars = format!("fwd{}", "*".repeat(20));
        assert!(wildcard(&stars, "fwd1"));
        assert!(!wildcard(&format!("{stars}z"), &format!("fwd{}", "a".repeat(2000))));
    }
}
