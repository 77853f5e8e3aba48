//! sd and fsd `count=(start,n)`: one record standing for n, as vdbench 5.04.06 clones them before anything else
//! reads them (`SD_entry.handleFileCount`, `FsdEntry.handleFsdCount`). An sd's name and each `lun=` become
//! numbered by `createCountingName`: a printf mask (`%d`, `%04d`) takes the number, else a `*` is replaced by it,
//! else it is appended (`sd=sd,lun=/dir/file,count=(0,8)`: sd0…sd7 on /dir/file0…/dir/file7). An fsd's name and
//! `anchor=` get the number appended. The copies take the record's place, in order (vdbench appends them to the
//! end of its list, which changes only the order wildcards such as `sd=*` list them in); names that then
//! occur twice are refused, as vdbench refuses them.
//!
//! Must not: map the records (that is `mapping`); it only rewrites the model.

use super::lexer::unprotect;
use super::model::{Kind, Model, Record};
use super::values::{Item, Units, parse_items};
use super::{Problems, VdbError};

/// More copies than this of one record are refused: a typo such as count=(0,100000000) would otherwise build
/// that many records.
const MOST_COPIES: u64 = 100_000;

/// Replaces every sd and fsd with `count=` by its numbered copies; problems go to `problems`.
pub(super) fn expand(model: &mut Model, problems: &mut Problems) {
    let records = std::mem::take(&mut model.records);
    for record in records {
        if !matches!(record.kind, Kind::Sd | Kind::Fsd) || record.get("count").is_none() {
            model.records.push(record);
            continue;
        }
        match copies(&record) {
            Ok(copies) => model.records.extend(copies),
            Err(e) => {
                problems.push(e);
                model.records.push(Record { params: without_count(&record), ..record });
            }
        }
    }
    for kind in [Kind::Sd, Kind::Fsd] {
        let mut seen: Vec<&str> = Vec::new();
        for record in model.of(kind) {
            if seen.contains(&record.name.as_str()) {
                problems.push(VdbError::at(
                    &record.at,
                    format!(
                        "{} is defined twice once count= has numbered the records (vdbench refuses duplicate \
                         names too): rename one, or change its count=",
                        record.label()
                    ),
                ));
            }
            seen.push(&record.name);
        }
    }
}

fn without_count(record: &Record) -> Vec<(&'static str, super::lexer::Param)> {
    record.params.iter().filter(|(c, _)| *c != "count").cloned().collect()
}

/// The numbered copies of `record` (which has `count=`).
fn copies(record: &Record) -> Result<Vec<Record>, VdbError> {
    let p = record.get("count").expect("checked by the caller");
    let fail = |why: &str| VdbError::keyword(&p.at, &p.key, Some(record.label()), why.to_string());
    let expected = "expected count=(start,n): two whole numbers, n above zero, as in count=(0,8)";
    let items = parse_items(&p.value, Units::Size).map_err(|m| fail(&m))?;
    let (start, n) = match items.as_slice() {
        [Item::Num(s), Item::Num(n)] if s.fract() == 0.0 && n.fract() == 0.0 && *s >= 0.0 && *n >= 1.0 => {
            (*s as u64, *n as u64)
        }
        _ => return Err(fail(expected)),
    };
    if n > MOST_COPIES {
        return Err(fail(&format!("count=({start},{n}) asks for more than {MOST_COPIES} copies: use fewer")));
    }
    let path_key = if record.kind == Kind::Sd { "lun" } else { "anchor" };
    let mut out = Vec::with_capacity(n as usize);
    for number in start..start + n {
        let numbered = |text: &str| match record.kind {
            Kind::Sd => counting_name(text, number),
            _ => Ok(format!("{text}{number}")),
        };
        let name = numbered(&record.name).map_err(|m| fail(&m))?;
        let mut params = without_count(record);
        for (canonical, param) in &mut params {
            if *canonical == path_key {
                param.value = numbered(&param.value).map_err(|m| fail(&m))?;
            }
        }
        out.push(Record { kind: record.kind, name, at: record.at.clone(), params });
    }
    Ok(out)
}

/// vdbench's `createCountingName`: a printf mask (`%d`, `%5d`, `%05d`) takes the number, else the first `*`
/// (vdbench replaces every one), else the number is appended.
fn counting_name(text: &str, number: u64) -> Result<String, String> {
    if let Some(at) = text.find('%') {
        let rest = &text[at + 1..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if !rest[digits.len()..].starts_with('d') || text[at + 1 + digits.len() + 1..].contains('%') {
            return Err(format!(
                "'{}' has a printf mask streamcap does not read: use one %d, %4d or %04d for the number",
                unprotect(text)
            ));
        }
        let width: usize = digits.parse().unwrap_or(0);
        let formatted = if digits.starts_with('0') { format!("{number:0width$}") } else { format!("{number:width$}") };
        return Ok(format!("{}{formatted}{}", &text[..at], &text[at + 1 + digits.len() + 1..]));
    }
    if text.contains('*') {
        return Ok(text.replace('*', &number.to_string()));
    }
    Ok(format!("{text}{number}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counting_names_follow_vdbench() {
        assert_eq!(counting_name("/dir/file", 7).unwrap(), "/dir/file7");
        assert_eq!(counting_name("/dir/file%04d", 2).unwrap(), "/dir/file0002");
        assert_eq!(counting_name("/dir/f%d.dat", 12).unwrap(), "/dir/f12.dat");
        assert_eq!(counting_name("/dir/f%3d", 5).unwrap(), "/dir/f  5");
        assert_eq!(counting_name("/dev/sd*1", 3).unwrap(), "/dev/sd31");
        assert!(counting_name("/dir/%s", 1).unwrap_err().contains("printf mask"));
        assert!(counting_name("/dir/%d%d", 1).unwrap_err().contains("printf mask"));
    }
}
