//! fio's per-command I/O priorities: `cmdprio_percentage` (a share of each direction's I/O) or
//! `cmdprio_bssplit` (a share per block size, optionally with its own class and level), with `cmdprio_class`
//! (default 1, realtime: fio's highest class) and `cmdprio` (the level, default 0, the highest).
//!
//! They are options of fio's libaio and io_uring engines (fio refuses them for psync and the others), and so of
//! streamcap's io_uring engine, which puts the priority in each request (the sqe's ioprio); the kernel checks it
//! (the realtime class needs CAP_SYS_ADMIN) and hands it to the I/O scheduler and, with NCQ priority, the drive.
//!
//! Must not: decide which I/O gets the priority (the run draws it, `run::raw`).

use super::engines::EngineUse;
use super::job::fail;
use super::mapping::Job;
use super::options::OptionError;
use super::values::{BadValue, KbBase, PerDirection, parse_percent, parse_size};
use crate::spec::{CmdPrio, EngineChoice, PrioShare};

const CLASS_SHIFT: u16 = 13;

/// The job's priorities, `None` when it sets neither cmdprio_percentage nor cmdprio_bssplit.
pub(super) fn map_cmdprio(job: &Job) -> Result<Option<CmdPrio>, OptionError> {
    let o = &job.options;
    let (percentage, split) = (o.get("cmdprio_percentage"), o.get("cmdprio_bssplit"));
    let Some(said) = percentage.or(split) else { return Ok(None) };
    let name = if percentage.is_some() { "cmdprio_percentage" } else { "cmdprio_bssplit" };
    if percentage.is_some() && split.is_some() {
        return Err(fail(said, name, "cmdprio_percentage and cmdprio_bssplit exclude each other; keep one"));
    }
    if job.engine != EngineUse::Io(EngineChoice::IoUring) {
        let why = "is an option of fio's libaio and io_uring engines, which put a priority in each request: set \
                   ioengine=io_uring (or libaio)";
        return Err(fail(said, name, why));
    }
    let level = |dir: fn(&PerDirection<u64>) -> Option<u64>, option: &str, default: u64, max: u64| {
        let value = o.per_direction(option).and_then(dir).unwrap_or(default);
        match o.get(option) {
            Some(said) if value > max => Err(fail(said, option, format!("'{}' is above {max}", said.raw))),
            _ => Ok(value as u16),
        }
    };
    let mut rules = [Vec::new(), Vec::new()];
    for (d, dir) in [|p: &PerDirection<u64>| p.read, |p: &PerDirection<u64>| p.write].into_iter().enumerate() {
        let class = level(dir, "cmdprio_class", 1, 3)?.max(1);
        let ioprio = class << CLASS_SHIFT | level(dir, "cmdprio", 0, 7)?;
        rules[d] = match percentage {
            Some(_) => {
                vec![PrioShare { bs: None, percent: o.per_direction(name).and_then(dir).unwrap_or(0) as u8, ioprio }]
            }
            None => split_rules(&said.raw, d, ioprio, o.base)
                .map_err(|bad| OptionError::bad_value(&said.at, name, &said.raw, &bad))?,
        };
    }
    let [read, write] = rules;
    Ok(Some(CmdPrio { read, write }))
}

/// The rules of one direction (`d`: 0 reads, 1 writes) of a cmdprio_bssplit value: `bs/percent` entries (with
/// the default `ioprio`) or `bs/percent/class/level`, `:` between entries, `,` between directions.
fn split_rules(raw: &str, d: usize, ioprio: u16, base: KbBase) -> Result<Vec<PrioShare>, BadValue> {
    let expected = "block sizes with percentages, optionally with a class and level: 64k/25:1m/10 or \
                    64k/25/1/0:1m/10/3/0, reads,writes";
    let invalid = || BadValue { what: "cmdprio split", expected };
    let parts: Vec<&str> = raw.split(',').map(str::trim).collect();
    let part = parts.get(d).or(parts.first()).copied().unwrap_or("");
    let mut rules = Vec::new();
    for entry in part.split(':').map(str::trim).filter(|e| !e.is_empty()) {
        let fields: Vec<&str> = entry.split('/').map(str::trim).collect();
        let bs = parse_size(fields[0], base).ok().and_then(|b| u32::try_from(b).ok()).ok_or_else(invalid)?;
        let percent = fields.get(1).and_then(|p| parse_percent(p).ok()).ok_or_else(invalid)?;
        let ioprio = match fields[..] {
            [_, _] => ioprio,
            [_, _, class, level] => match (class.parse::<u16>(), level.parse::<u16>()) {
                (Ok(c @ 1..=3), Ok(l @ 0..=7)) => c << CLASS_SHIFT | l,
                _ => return Err(invalid()),
            },
            _ => return Err(invalid()),
        };
        rules.push(PrioShare { bs: Some(bs), percent, ioprio });
    }
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use crate::spec::fio::parse_fio_job;
    use crate::spec::{CmdPrio, PrioShare};
    use std::path::Path;

    fn cmdprio(text: &str) -> Result<Vec<Option<CmdPrio>>, String> {
        let spec = parse_fio_job(Path::new("j.fio"), text).map_err(|e| e.to_string())?;
        Ok(spec.phases.iter().map(|p| p.fio.info.as_ref().and_then(|f| f.cmdprio.clone())).collect())
    }

    #[test]
    fn a_percentage_takes_the_class_and_level_or_fio_s_defaults() {
        let got =
            cmdprio("[a]\nsize=1m\nrw=randrw\nioengine=libaio\ncmdprio_percentage=20,30\ncmdprio_class=3\n").unwrap();
        let rule = |percent| vec![PrioShare { bs: None, percent, ioprio: 3 << 13 }];
        assert_eq!(got, [Some(CmdPrio { read: rule(20), write: rule(30) })]);
        let got = cmdprio("[a]\nsize=1m\nrw=randread\nioengine=io_uring\ncmdprio_percentage=5\ncmdprio=4\n").unwrap();
        assert_eq!(got[0].as_ref().unwrap().read[0].ioprio, 1 << 13 | 4);
    }

    #[test]
    fn a_split_gives_each_block_size_its_share_and_priority() {
        let text = "[a]\nsize=1m\nrw=randrw\nbssplit=64k/40:1m/60,1m/100\nioengine=libaio\n\
                    cmdprio_bssplit=64k/25/1/1:64k/75/3/2:1024k/0,1024k/0\ncmdprio_class=2\n";
        let got = cmdprio(text).unwrap().pop().flatten().unwrap();
        let share = |bs: u32, percent, ioprio| PrioShare { bs: Some(bs), percent, ioprio };
        assert_eq!(
            got.read,
            [share(65536, 25, 1 << 13 | 1), share(65536, 75, 3 << 13 | 2), share(1 << 20, 0, 2 << 13)]
        );
        assert_eq!(got.write, [share(1 << 20, 0, 2 << 13)]);
    }

    #[test]
    fn the_sync_engine_and_bad_values_are_refused_with_what_to_do() {
        let err = cmdprio("[a]\nsize=1m\nrw=read\ncmdprio_percentage=20\n").unwrap_err();
        assert!(err.contains("option 'cmdprio_percentage': is an option of fio's libaio and io_uring"), "{err}");
        let err = cmdprio("[a]\nsize=1m\nrw=read\nioengine=libaio\ncmdprio_bssplit=64k/25/9/1\n").unwrap_err();
        assert!(err.contains("option 'cmdprio_bssplit': '64k/25/9/1' is not a cmdprio split"), "{err}");
        let err = cmdprio("[a]\nsize=1m\nrw=read\nioengine=libaio\ncmdprio_percentage=5\ncmdprio=8\n").unwrap_err();
        assert!(err.contains("option 'cmdprio': '8' is above 7"), "{err}");
    }
}
