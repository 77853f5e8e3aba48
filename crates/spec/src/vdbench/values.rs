//! vdbench parameter values: numbers with k/m/g/t suffixes (powers of 1024; `m` is minutes for times), `h`
//! hours, `%` percentages, lists `(a,b,c)`, ranges `(1-8,1)` (from-to,step), doubling `(4k-1m,d)` (also
//! downwards, `(64k-1k,d)`) and name ranges `(sd1-sd4)`, as vdbench's `Vdb_scan` and `Var_parms` read them.
//!
//! Values are the user's words; what a keyword accepts is decided in `mapping`.

use super::lexer::unprotect;

/// One element of a value.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Item {
    Num(f64),
    /// `70%`.
    Percent(f64),
    Word(String),
}

impl Item {
    /// The text for a phase name: sizes in k/m/g when they are whole multiples.
    pub fn display(&self) -> String {
        match self {
            Item::Num(v) => short_number(*v),
            Item::Percent(p) => format!("{p}%"),
            Item::Word(w) => w.clone(),
        }
    }
}

pub(super) fn short_number(v: f64) -> String {
    for (unit, size) in [("t", 1u64 << 40), ("g", 1 << 30), ("m", 1 << 20), ("k", 1 << 10)] {
        let size = size as f64;
        if v >= size && (v / size).fract() == 0.0 {
            return format!("{}{unit}", v / size);
        }
    }
    format!("{v}")
}

/// How suffixes read: sizes (`m` = MiB) or times (`m` = minutes, `s` seconds, `h` hours).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Units {
    Size,
    Time,
}

/// More values than this from one range is surely a mistake (and would make a run of months).
const MAX_VALUES: usize = 10_000;

/// Parses a value into its elements.
pub(super) fn parse_items(raw: &str, units: Units) -> Result<Vec<Item>, String> {
    let Some(inner) = raw.strip_prefix('(') else {
        return Ok(vec![item(raw, units)]);
    };
    let inner = inner
        .strip_suffix(')')
        .filter(|i| !i.contains(['(', ')']))
        .ok_or_else(|| format!("'{}': expected one list in parentheses, such as (4k,8k)", unprotect(raw)))?;
    let elements: Vec<&str> = inner.split(',').map(str::trim).filter(|e| !e.is_empty()).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < elements.len() {
        let element = elements[i];
        i += 1;
        let Some((from, to)) = element.split_once('-') else {
            out.push(item(element, units));
            continue;
        };
        let (from_item, to_item) = (item(from, units), item(to, units));
        match (from_item, to_item) {
            (Item::Num(a), Item::Num(b)) => {
                let step = elements.get(i).copied();
                i += 1;
                match step.map(|s| (s, item(s, units))) {
                    Some((s, _)) if s.eq_ignore_ascii_case("d") => doubling(a, b, &mut out)?,
                    Some((_, Item::Num(step))) => stepping(a, b, step, &mut out)?,
                    _ => {
                        return Err(format!(
                            "'{element}' is a range: follow it with a step, as in ({element},1), or with d for \
                             doubling, as in ({element},d)"
                        ));
                    }
                }
            }
            (Item::Word(a), Item::Word(b)) => name_range(&a, &b, &mut out)?,
            _ => return Err(format!("'{}' is not a range of numbers (4k-64k) or of names (sd1-sd8)", element)),
        }
        if out.len() > MAX_VALUES {
            return Err(format!("the list gives more than {MAX_VALUES} values"));
        }
    }
    if out.is_empty() {
        return Err("the list in parentheses is empty".into());
    }
    Ok(out)
}

/// `(10-100,10)` counts up, `(100-0,10)` counts down (vdbench's For_loop steps either way by the step's size).
fn stepping(from: f64, to: f64, step: f64, out: &mut Vec<Item>) -> Result<(), String> {
    if step <= 0.0 {
        return Err(format!("the step of a range must be above zero, not {step}"));
    }
    if (to - from).abs() / step > MAX_VALUES as f64 {
        return Err(format!("the range gives more than {MAX_VALUES} values"));
    }
    // Counted in whole steps, so that 0.1 steps do not drift past the end.
    let steps = ((to - from).abs() / step + 1e-9).floor() as u64;
    let sign = if to < from { -1.0 } else { 1.0 };
    out.extend((0..=steps).map(|i| Item::Num(from + sign * step * i as f64)));
    Ok(())
}

fn doubling(from: f64, to: f64, out: &mut Vec<Item>) -> Result<(), String> {
    if from <= 0.0 || to <= 0.0 {
        return Err("a doubling range (a-b,d) needs both ends above zero".into());
    }
    let mut v = from;
    if from <= to {
        while v <= to {
            out.push(Item::Num(v));
            v *= 2.0;
        }
    } else {
        while v >= to {
            out.push(Item::Num(v));
            v /= 2.0;
        }
    }
    Ok(())
}

/// `sd1-sd4` → sd1, sd2, sd3, sd4.
fn name_range(from: &str, to: &str, out: &mut Vec<Item>) -> Result<(), String> {
    let split = |s: &str| {
        let digits = s.len() - s.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let (prefix, number) = s.split_at(s.len() - digits);
        number.parse::<u64>().ok().map(|n| (prefix.to_string(), n))
    };
    let expected = || format!("'{from}-{to}': a name range needs the same name with rising numbers, as in sd1-sd8");
    let ((p1, a), (p2, b)) = (split(from).ok_or_else(expected)?, split(to).ok_or_else(expected)?);
    if p1 != p2 || a >= b || b - a > MAX_VALUES as u64 {
        return Err(expected());
    }
    out.extend((a..=b).map(|n| Item::Word(format!("{p1}{n}"))));
    Ok(())
}

/// One element: a number (with its suffix), a percentage or a word.
fn item(text: &str, units: Units) -> Item {
    let text = text.trim();
    number(text, units).unwrap_or_else(|| Item::Word(unprotect(text)))
}

fn number(text: &str, units: Units) -> Option<Item> {
    let plain = |t: &str| {
        t.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0 && t.starts_with(|c: char| c.is_ascii_digit() || c == '.'))
    };
    if let Some(v) = plain(text) {
        return Some(Item::Num(v));
    }
    let lower = text.to_ascii_lowercase();
    // vdbench also accepts kb, mb, gb, tb.
    let trimmed = if lower.len() > 2 && lower.ends_with('b') { &lower[..lower.len() - 1] } else { lower.as_str() };
    let unit = trimmed.chars().last()?;
    let front = &trimmed[..trimmed.len() - unit.len_utf8()];
    let value = plain(front)?;
    let multiplier = match (unit, units) {
        ('%', _) => return Some(Item::Percent(value)),
        ('k', _) => 1024.0,
        ('m', Units::Time) => 60.0,
        ('m', Units::Size) => 1024.0 * 1024.0,
        ('g', _) => 1024.0 * 1024.0 * 1024.0,
        ('t', _) => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        ('h', Units::Time) => 3600.0,
        ('s', Units::Time) => 1.0,
        _ => return None,
    };
    Some(Item::Num(value * multiplier))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nums(raw: &str) -> Vec<f64> {
        parse_items(raw, Units::Size)
            .unwrap()
            .into_iter()
            .map(|i| match i {
                Item::Num(v) => v,
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn suffixes_are_powers_of_1024_and_times_read_minutes() {
        assert_eq!(nums("4k"), [4096.0]);
        assert_eq!(nums("1m"), [1048576.0]);
        assert_eq!(nums("5G"), [5.0 * (1u64 << 30) as f64]);
        assert_eq!(nums("2tb"), [2.0 * (1u64 << 40) as f64]);
        assert_eq!(nums("1.5k"), [1536.0]);
        assert_eq!(parse_items("10m", Units::Time).unwrap(), [Item::Num(600.0)]);
        assert_eq!(parse_items("10h", Units::Time).unwrap(), [Item::Num(36000.0)]);
        assert_eq!(parse_items("30s", Units::Time).unwrap(), [Item::Num(30.0)]);
        assert_eq!(parse_items("70%", Units::Size).unwrap(), [Item::Percent(70.0)]);
        assert_eq!(parse_items("max", Units::Size).unwrap(), [Item::Word("max".into())]);
        assert_eq!(parse_items("10h", Units::Size).unwrap(), [Item::Word("10h".into())]);
    }

    #[test]
    fn lists_ranges_and_doubling() {
        assert_eq!(nums("(4k,8k,16k)"), [4096.0, 8192.0, 16384.0]);
        assert_eq!(nums("(1-8,1)"), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
        assert_eq!(nums("(10-30,10)"), [10.0, 20.0, 30.0]);
        assert_eq!(nums("(4k-32k,d)"), [4096.0, 8192.0, 16384.0, 32768.0]);
        assert_eq!(nums("(64k-16k,d)"), [65536.0, 32768.0, 16384.0]);
        assert_eq!(nums("(1,4-6,1,9)"), [1.0, 4.0, 5.0, 6.0, 9.0]);
        // Regression (issue 13): a range that counts down was read as an empty list.
        assert_eq!(nums("(100-0,25)"), [100.0, 75.0, 50.0, 25.0, 0.0]);
        assert_eq!(nums("(64-1,d)"), [64.0, 32.0, 16.0, 8.0, 4.0, 2.0, 1.0]);
        assert_eq!(nums("(0-1,0.25)"), [0.0, 0.25, 0.5, 0.75, 1.0]);
        let names = parse_items("(sd1-sd3)", Units::Size).unwrap();
        assert_eq!(names, ["sd1", "sd2", "sd3"].map(|s| Item::Word(s.into())));
    }

    #[test]
    fn bad_lists_say_what_is_expected() {
        assert!(parse_items("(1-8)", Units::Size).unwrap_err().contains("step"));
        assert!(parse_items("(1-8,0)", Units::Size).unwrap_err().contains("above zero"));
        assert!(parse_items("(0-8,d)", Units::Size).unwrap_err().contains("above zero"));
        assert!(parse_items("(1-100000000,1)", Units::Size).unwrap_err().contains("more than"));
        assert!(parse_items("(sd3-sd1)", Units::Size).unwrap_err().contains("rising"));
        assert!(parse_items("()", Units::Size).unwrap_err().contains("empty"));
    }

    #[test]
    fn short_numbers_for_names() {
        assert_eq!(short_number(4096.0), "4k");
        assert_eq!(short_number(1048576.0), "1m");
        assert_eq!(short_number(1536.0), "1536");
        assert_eq!(short_number(8.0), "8");
    }
}
