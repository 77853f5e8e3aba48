//! The check's "what breaks first" table (`--thorough`, `--during`): each format's capacity alone (the
//! verdict's) and beside each background load (the search named `profile::during_phase_name`), with what each
//! load did meanwhile, derived from the phases every time the result is saved (`results::breaks_first` judges
//! which load hurts most).

use crate::plan::{Load, Plan};
use crate::results::{BreaksFirst, BreaksRow, FormatVerdict, PhaseResult, StreamsResult, breaks_first};
use crate::streams::BackgroundFigures;

use super::profile::{FORMATS, during_phase_name};

/// The loads the plan runs beside the formats' searches, in the order they run.
pub fn loads(plan: &Plan) -> Vec<Load> {
    let mut loads = Vec::new();
    for load in plan.phases.iter().filter_map(|p| p.streams()).flat_map(|s| s.during.iter().map(|d| d.load)) {
        if !loads.contains(&load) {
            loads.push(load);
        }
    }
    loads
}

/// The table so far; `None` without loads. `running`: the stream phase under way (not yet in `phases`).
pub fn table(
    loads: &[Load],
    phases: &[PhaseResult],
    running: Option<&StreamsResult>,
    verdict: &[FormatVerdict],
) -> Option<BreaksFirst> {
    if loads.is_empty() {
        return None;
    }
    let finished = |name: &str| phases.iter().find(|p| p.name == name).and_then(|p| p.streams.as_ref());
    let mut rates: Vec<BackgroundFigures> = Vec::new();
    let mut rows = Vec::new();
    for name in FORMATS {
        let alone = verdict.iter().find(|v| v.name == name);
        let mut with = Vec::new();
        for &load in loads {
            let phase = finished(&during_phase_name(name, load));
            let current =
                running.filter(|r| r.during == [load.name()] && r.formats.first().is_some_and(|f| f.name == name));
            let search = phase.or(current);
            for figures in search.map_or(&[][..], |s| &s.background) {
                match rates.iter_mut().find(|r| r.load == figures.load) {
                    Some(r) => r.add(figures),
                    None => rates.push(figures.clone()),
                }
            }
            // Only a finished search has an answer; an unfinished one is not measured yet.
            with.push(phase.and_then(|s| s.capacity.as_ref()).filter(|c| c.not_measured.is_none()).map(|c| c.streams));
        }
        let measured = alone.filter(|v| v.capacity.not_measured.is_none() && !v.steps.is_empty());
        rows.push(BreaksRow {
            format: name.into(),
            label: alone.map_or_else(|| name.to_string(), |v| v.label.clone()),
            alone: measured.map(|v| v.streams),
            with,
        });
    }
    let order = |f: &BackgroundFigures| loads.iter().position(|l| l.name() == f.load);
    rates.sort_by_key(order);
    Some(breaks_first(loads.iter().map(|l| l.name().to_string()).collect(), rows, rates))
}
