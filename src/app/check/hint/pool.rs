//! check's planner line for a target on several devices (a btrfs or md pool): one member drive is inferred from
//! the pool's own raw figures through the planner's model of the pool's current layout
//! (`planning::infer::infer_member`: the member count and profile come from the pool facts check records), then
//! the planner compares the protected layouts of those same drives for the most demanding format the check
//! sustained. The best one is named with its multiple of the current layout's streams (the planner's ratio,
//! applied to the count the check measured), its count and what limits it. Where no member can be inferred (an
//! unknown or unmodelled profile, unequal or missing members, figures no drive of the model gives) the line says
//! why and names the planner command instead of a figure. No I/O, no printing.

use crate::planning::Layout;
use crate::planning::infer::{self, InferError, Measured, RawFigures};
use crate::results::{FormatVerdict, PlannerMember, RunResult};
use crate::units::Bytes;

use super::super::profile::RAW_PHASES;
use super::{Hint, LAYOUTS, answers, compared_format, exact, figure_words, sequential_ceiling};

/// The line (and the inferred member) for a check of a pool of `count` devices; `raw` holds only the check's
/// raw phases.
pub(super) fn pool_hint(raw: &RunResult, verdict: &[FormatVerdict], count: usize) -> Hint {
    let Some((format, name)) = compared_format(verdict) else {
        return without_figure(count, "the check sustained no stream to compare");
    };
    let inferred = infer(raw).and_then(|(measured, drive)| {
        let member = compare(measured, drive, format, name).ok_or(InferError::Unmeasured("stream capacity"))?;
        Ok((measured, member))
    });
    match inferred {
        Ok((measured, member)) => Hint { line: Some(line(&member, measured, format, name)), member: Some(member.0) },
        Err(why) => without_figure(count, &format!("no single drive can be inferred from its measurement: {why}")),
    }
}

/// The line when the planner has no figure to give, and why.
fn without_figure(count: usize, why: &str) -> Hint {
    let line = format!(
        "planner: this target spans {count} devices and {why}; `streamcap plan --drives CATALOGUE --count {count}` \
         compares the layouts {count} such drives can make (docs/planning.md)"
    );
    Hint { line: Some(line), member: None }
}

/// The pool as measured and the member inferred from it.
fn infer(raw: &RunResult) -> Result<(Measured, crate::planning::Drive), InferError> {
    let pool = raw.target.pool.as_ref().ok_or(InferError::UnknownProfile)?;
    let layout = infer::current_layout(pool)?;
    let (capacity, rotational) = infer::alike_members(pool)?;
    let data_set = raw.check.as_ref().map(|c| Bytes(c.data_set_bytes)).filter(|b| b.0 > 0);
    let measured = Measured { layout, members: pool.members.len(), capacity, rotational, data_set };
    let drive = infer::infer_member(measured, figures(raw)?)?;
    Ok((measured, drive))
}

/// The check's four raw figures, by phase name.
fn figures(raw: &RunResult) -> Result<RawFigures, InferError> {
    let phase = |i: usize| raw.phases.iter().find(|p| p.name == RAW_PHASES[i]);
    let read = |i: usize| phase(i).and_then(|p| p.read.as_ref());
    let figure = |value: Option<f64>, what| value.filter(|v| *v > 0.0).ok_or(InferError::Unmeasured(what));
    Ok(RawFigures {
        write_mbps: figure(phase(0).and_then(|p| p.write.as_ref()).map(|o| o.mbps), "sequential write")?,
        read_mbps: figure(read(1).map(|o| o.mbps), "sequential read")?,
        iops_qd1: figure(read(2).map(|o| o.iops), "random reads at depth 1")?,
        iops_qd32: figure(read(3).map(|o| o.iops), "random reads at depth 32")?,
    })
}

/// The planner's comparison of the layouts `measured.members` such drives can make, as the result records it,
/// the best answer's limit in words, and the ratio of its streams to the current layout's (of the model's
/// unrounded bounds).
fn compare(
    measured: Measured,
    drive: crate::planning::Drive,
    format: &FormatVerdict,
    label: &str,
) -> Option<(PlannerMember, String, f64)> {
    let mut layouts = vec![measured.layout];
    layouts.extend(LAYOUTS.iter().filter(|l| **l != measured.layout && l.refuses(measured.members).is_none()));
    let answers = answers(vec![drive.clone(); measured.members], layouts, format, label)?;
    let current = answers.iter().find(|a| a.layout == measured.layout.name())?;
    let top = answers.first().filter(|a| a.healthy.streams > current.healthy.streams).unwrap_or(current);
    let ratio = if exact(current) > 0.0 { exact(top) / exact(current) } else { 0.0 };
    let limit = top.healthy.per_format.first().map_or_else(|| top.healthy.streams_limit.clone(), |f| f.limit.clone());
    let f = infer::predict(Layout::Single, std::slice::from_ref(&drive), None);
    let member = PlannerMember {
        layout: measured.layout.name().into(),
        members: measured.members as u32,
        capacity_bytes: measured.capacity.0,
        rotational: measured.rotational,
        read_mbps: f.read_mbps,
        write_mbps: f.write_mbps,
        random_read_iops: drive.random_read_iops(),
        random_read_iops_qd1: f.iops_qd1,
        format: format.name.clone(),
        current_streams: current.healthy.streams,
        best_layout: top.layout.clone(),
        best_streams: top.healthy.streams,
    };
    Some((member, limit, ratio))
}

/// The sentence: the best layout with its multiple, its count and its limit, then the member it assumed.
fn line(member: &(PlannerMember, String, f64), measured: Measured, format: &FormatVerdict, name: &str) -> String {
    let (m, limit, ratio) = member;
    let n = m.members;
    let drive = format!(
        "each drive inferred from this {} pool: {:.0} MB/s, {:.0} random reads/s; check.planner_member in the JSON",
        m.layout, m.read_mbps, m.random_read_iops
    );
    if m.best_streams == 0 {
        // The model of drives inferred from figures a busy host lowered (a check beside other work) can carry
        // none of a format the pool played: it ranks nothing then, and says why rather than "about 0".
        return format!(
            "planner: in the planner's model these {n} drives serve no {name} stream in any layout, where {} played \
             here: the drive it inferred from this pool's figures is slower than what the viewers got, so it ranks \
             no layout ({drive})",
            format.streams
        );
    }
    if m.current_streams == 0 {
        return format!(
            "planner: these {n} drives as {} would serve about {} {name} streams in the planner's model, which \
             gives this {} none ({limit}) ({drive})",
            m.best_layout, m.best_streams, m.layout
        );
    }
    if m.best_layout == measured.layout.name() {
        return format!(
            "planner: of the layouts these {n} drives can make, this {} serves the most {name} streams \
             ({} here; {limit}) ({drive})",
            m.layout, format.streams
        );
    }
    let ceiling = sequential_ceiling(m.read_mbps * 1e6, n as usize, format);
    let ratio = ratio.min(f64::from(n));
    format!(
        "planner: these {n} drives as {} would serve about {ratio:.1}× the {name} streams ({}; {limit}) ({drive}); \
         `streamcap plan --drives CATALOGUE --count {n}` compares every layout",
        m.best_layout,
        figure_words(ratio, format.streams, ceiling, n as usize)
    )
}

#[cfg(test)]
mod tests {
    use super::super::planner_hint;
    use super::*;

    fn read(path: &str) -> RunResult {
        let text = std::fs::read_to_string(format!("{}/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR")))
            .expect("the fixture exists");
        serde_json::from_str(&text).expect("the fixture parses")
    }

    /// The check fixture's figures, as if measured on the btrfs raid5 pool of three loop devices of the inspect
    /// fixture.
    fn check_of_a_raid5() -> RunResult {
        let mut result = read("check-v1.json");
        let pool = read("inspect-raid5.json").target.pool.expect("the fixture has a pool");
        result.target.devices = pool.members.clone();
        result.target.pool = Some(pool);
        result
    }

    fn verdict(result: &RunResult) -> Vec<FormatVerdict> {
        result.check.as_ref().expect("a check").verdict.clone()
    }

    #[test]
    fn a_pool_gets_a_layout_and_a_figure_from_its_inferred_member() {
        let result = check_of_a_raid5();
        let hint = planner_hint(&result, &verdict(&result));
        let (line, member) = (hint.line.unwrap(), hint.member.unwrap());
        assert_eq!((member.layout.as_str(), member.members, member.format.as_str()), ("btrfs-raid5", 3, "2160p-remux"));
        // The inferred drive, three times as btrfs raid5 holding the check's data set, predicts what was measured.
        let figures = figures(&result).unwrap();
        let drive = infer::drive_with(
            "m",
            Bytes(member.capacity_bytes),
            member.rotational,
            RawFigures {
                read_mbps: member.read_mbps,
                write_mbps: member.write_mbps,
                iops_qd1: member.random_read_iops_qd1,
                iops_qd32: member.random_read_iops,
            },
        );
        let predicted = infer::predict(Layout::BtrfsRaid5, &vec![drive; 3], Some(256.0 * 1048576.0));
        assert!((predicted.read_mbps / figures.read_mbps - 1.0).abs() < 0.01, "{predicted:?} {figures:?}");
        assert!((predicted.iops_qd32 / figures.iops_qd32 - 1.0).abs() < 0.01, "{predicted:?} {figures:?}");
        // Three drives make btrfs raid5, raid5, btrfs-raid1 and a mirror… the line names the best and its figure.
        assert!(line.contains(&member.best_layout) && line.contains("2160p remux"), "{line}");
        if member.best_streams > member.current_streams {
            let ratio = f64::from(member.best_streams) / f64::from(member.current_streams);
            assert!(line.contains(&format!("≈ {:.0} against 33 here", ratio * 33.0)), "{line}");
        } else {
            assert!(line.contains("serves the most") && line.contains("33 here"), "{line}");
        }
    }

    #[test]
    fn members_that_differ_get_the_reason_and_no_figure() {
        let mut result = check_of_a_raid5();
        let pool = result.target.pool.as_mut().unwrap();
        pool.members[1].size = Bytes(4 << 30);
        let hint = planner_hint(&result, &verdict(&result));
        let line = hint.line.unwrap();
        assert!(line.contains("no single drive can be inferred") && line.contains("loop1 is 4 GiB"), "{line}");
        assert!(line.contains("--count 3") && hint.member.is_none(), "{line}");
        result.target.pool.as_mut().unwrap().profile = None;
        let line = planner_hint(&result, &verdict(&result)).line.unwrap();
        assert!(line.contains("profile is unknown"), "{line}");
    }

    #[test]
    fn a_raid1_pool_of_four_names_the_layout_that_serves_more() {
        // Four alike drives as btrfs raid1: the planner compares raid10, raid5, raid6 and the btrfs profiles.
        let mut result = check_of_a_raid5();
        let pool = result.target.pool.as_mut().unwrap();
        pool.profile = Some(crate::results::Profile::Raid1);
        let mut fourth = pool.members[0].clone();
        fourth.name = "loop3".into();
        pool.members.push(fourth);
        let hint = planner_hint(&result, &verdict(&result));
        let member = hint.member.unwrap();
        assert_eq!((member.layout.as_str(), member.members), ("btrfs-raid1", 4));
        let best = member.best_layout.parse::<Layout>().unwrap();
        assert!(best.refuses(4).is_none() && member.best_streams >= member.current_streams, "{member:?}");
        eprintln!("{}", hint.line.unwrap());
    }

    #[test]
    fn a_layout_that_serves_more_is_named_with_its_multiple_and_count() {
        // On these fixtures every layout of the same drives ties, so the comparison the planner made is changed
        // here to one where another layout serves twice the streams: the sentence's other branch.
        let result = check_of_a_raid5();
        let (measured, drive) = infer(&result).unwrap();
        let verdict = verdict(&result);
        let (format, name) = compared_format(&verdict).unwrap();
        let (mut member, limit, _) = compare(measured, drive, format, name).unwrap();
        member.best_layout = "raid6".into();
        member.best_streams = 2 * member.current_streams;
        let line = line(&(member, limit, 2.0), measured, format, name);
        assert!(
            line.starts_with("planner: these 3 drives as raid6 would serve about 2.0× the 2160p remux streams"),
            "{line}"
        );
        assert!(line.contains("(≈ 66 against 33 here;") && line.contains("--count 3"), "{line}");
    }

    #[test]
    fn a_model_that_carries_none_anywhere_ranks_no_layout() {
        // Drives inferred from figures a loaded host lowered: the model carries no stream of the format in any
        // layout, although 33 played. Not "about 0", not "serves the most".
        let result = check_of_a_raid5();
        let (measured, drive) = infer(&result).unwrap();
        let verdict = verdict(&result);
        let (format, name) = compared_format(&verdict).unwrap();
        let (mut member, limit, _) = compare(measured, drive, format, name).unwrap();
        (member.current_streams, member.best_streams) = (0, 0);
        member.best_layout = member.layout.clone();
        let line = line(&(member, limit, 0.0), measured, format, name);
        assert!(line.contains("serve no 2160p remux stream in any layout, where 33 played here"), "{line}");
        assert!(line.contains("ranks no layout") && !line.contains("about 0"), "{line}");
    }
}
