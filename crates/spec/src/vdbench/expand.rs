//! rd for-loops: `forxfersize=(4k,8k)`, `forthreads=(1-32,d)`, their plain-name forms on an rd
//! (`xfersize=(4k,8k)`), and `iorate=`/`fwdrate=` lists, expanded into one combination per run.
//!
//! vdbench's order (`For_loop`): loops nest in the order they are written, the first one outermost; a loop
//! written again replaces the earlier one (and moves to its place in the order); an `iorate=` list becomes the
//! innermost loop, after every other; an `fwdrate=` list stays where it is written. This file decides only the
//! combinations and their names; what each value means is `mapping`'s.

use super::model::Record;
use super::values::{Item, Units, parse_items};
use super::{VdbError, Where};

/// One loop: the for-keyword (`forxfersize`; `foriorate` for rate lists) and its values.
#[derive(Debug, Clone)]
pub(super) struct Loop {
    pub keyword: &'static str,
    pub items: Vec<Item>,
    pub at: Where,
    /// The keyword as written, for messages.
    pub written: String,
}

impl Loop {
    /// The name shown in phase names: `xfersize`, `threads`, `iorate`/`fwdrate`.
    pub fn label(&self, file_system: bool) -> &'static str {
        match self.keyword {
            "foriorate" if file_system => "fwdrate",
            other => other.strip_prefix("for").unwrap_or(other),
        }
    }
}

/// More runs than this from one rd is surely a mistake.
const MAX_COMBINATIONS: usize = 10_000;

/// The loops of an rd, outermost first.
pub(super) fn loops(rd: &Record) -> Result<Vec<Loop>, VdbError> {
    let mut loops: Vec<Loop> = Vec::new();
    let mut iorate_list: Option<Loop> = None;
    for (canonical, param) in &rd.params {
        let keyword: &'static str = match *canonical {
            c if c.starts_with("for") && c != "format" => c,
            "iorate" | "fwdrate" => "foriorate",
            _ => continue,
        };
        let items = parse_items(&param.value, Units::Size)
            .map_err(|m| VdbError::keyword(&param.at, &param.key, Some(rd.label()), m))?;
        let is_rate = keyword == "foriorate";
        let this = Loop { keyword, items, at: param.at.clone(), written: param.key.clone() };
        if is_rate {
            // A single rate is a plain value of the rd, not a loop; a later single value cancels a list.
            loops.retain(|l| l.keyword != "foriorate");
            iorate_list = None;
            if this.items.len() < 2 {
                continue;
            }
            if *canonical == "iorate" {
                iorate_list = Some(this);
                continue;
            }
        }
        loops.retain(|l| l.keyword != keyword);
        loops.push(this);
    }
    loops.extend(iorate_list);
    Ok(loops)
}

/// Every combination of loop values, the first loop outermost. Each combination holds one value per loop, in
/// the order of `loops`. No loops: one empty combination.
pub(super) fn combinations(loops: &[Loop], rd: &Record) -> Result<Vec<Vec<Item>>, VdbError> {
    let total = loops.iter().try_fold(1usize, |n, l| n.checked_mul(l.items.len()).filter(|&n| n <= MAX_COMBINATIONS));
    if total.is_none() {
        return Err(VdbError::at(
            &rd.at,
            format!("{}: the for-loops give more than {MAX_COMBINATIONS} runs; use fewer values", rd.label()),
        ));
    }
    let mut out: Vec<Vec<Item>> = vec![Vec::new()];
    for l in loops {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                l.items.iter().map(move |item| {
                    let mut next = prefix.clone();
                    next.push(item.clone());
                    next
                })
            })
            .collect();
    }
    Ok(out)
}

/// `rd1 xfersize=4k threads=8`.
pub(super) fn phase_name(rd: &Record, loops: &[Loop], combination: &[Item], file_system: bool) -> String {
    let mut name = rd.name.clone();
    for (l, item) in loops.iter().zip(combination) {
        name.push_str(&format!(" {}={}", l.label(file_system), item.display()));
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::vdbench::lexer::try_lex as lex;
    use crate::spec::vdbench::model::{Kind, group};
    use std::path::Path;

    fn rd(text: &str) -> Record {
        let mut problems = crate::spec::vdbench::Problems::default();
        let model = group(&lex(Path::new("t"), text, &[]).unwrap(), &mut problems);
        assert!(problems.is_empty());
        model.of(Kind::Rd).next().unwrap().clone()
    }

    fn names(text: &str) -> Vec<String> {
        let rd = rd(text);
        let loops = loops(&rd).unwrap();
        combinations(&loops, &rd).unwrap().iter().map(|c| phase_name(&rd, &loops, c, false)).collect()
    }

    #[test]
    fn the_first_loop_is_the_outermost() {
        assert_eq!(
            names("rd=rd1,wd=wd1,iorate=max,forxfersize=(4k,8k),forthreads=(1,2)"),
            [
                "rd1 xfersize=4k threads=1",
                "rd1 xfersize=4k threads=2",
                "rd1 xfersize=8k threads=1",
                "rd1 xfersize=8k threads=2"
            ]
        );
    }

    #[test]
    fn plain_names_loop_and_an_iorate_list_is_innermost() {
        assert_eq!(
            names("rd=rd1,wd=wd1,iorate=(100,200),th=(1-2,1),xf=4k"),
            [
                "rd1 threads=1 xfersize=4k iorate=100",
                "rd1 threads=1 xfersize=4k iorate=200",
                "rd1 threads=2 xfersize=4k iorate=100",
                "rd1 threads=2 xfersize=4k iorate=200"
            ]
        );
    }

    #[test]
    fn a_loop_written_again_replaces_the_first_and_moves_last() {
        assert_eq!(
            names("rd=rd1,wd=wd1,forthreads=(1,2),forrdpct=(0,100),threads=4"),
            ["rd1 rdpct=0 threads=4", "rd1 rdpct=100 threads=4"]
        );
    }

    #[test]
    fn no_loops_give_one_run_named_after_the_rd() {
        assert_eq!(names("rd=rd1,wd=wd1,iorate=max"), ["rd1"]);
    }

    #[test]
    fn too_many_runs_are_refused() {
        let rd = rd("rd=rd1,wd=wd1,forxfersize=(1-1000,1),forthreads=(1-1000,1)");
        let loops = loops(&rd).unwrap();
        assert!(combinations(&loops, &rd).unwrap_err().message.contains("more than"));
    }
}
